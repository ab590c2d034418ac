"""A small document model written out as plain text, Markdown or LaTeX.

Derivations, check reports and comparisons are built once as blocks of typed pieces (math,
code, numbers, text) and each format writes the pieces its own way: ``V·h`` stays Unicode in a
terminal and in Markdown and becomes ``V \\cdot h`` in LaTeX; numbers get thousands separators
(``16{,}226{,}304`` in LaTeX). Chinese text is padded by display width in the terminal and set
with CJKutf8 in LaTeX, so the document compiles with pdflatex.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

FORMATS = ("text", "md", "tex")
LANGS = ("en", "zh")


@dataclass(frozen=True)
class Math:
    """A formula in our notation: ``L·(4h² + 2h·I)``, ``12 × 7,087,872``."""

    text: str


@dataclass(frozen=True)
class Code:
    """A module path or config field name."""

    text: str


@dataclass(frozen=True)
class Num:
    """An integer written with thousands separators."""

    value: int


@dataclass(frozen=True)
class Mark:
    """A check mark (✓): the sum equals the count."""


Piece = str | Math | Code | Num | Mark
Cell = tuple[Piece, ...]


@dataclass(frozen=True)
class Block:
    kind: str  # title, heading, para, table
    cells: tuple[Cell, ...] = ()
    rows: tuple[tuple[Cell, ...], ...] = ()
    right: tuple[int, ...] = ()  # right-aligned columns of a table
    strong: tuple[int, ...] = ()  # rows set in bold (subtotals)


@dataclass
class Doc:
    lang: str = "en"
    blocks: list[Block] = field(default_factory=list)

    def title(self, *pieces: Piece) -> None:
        self.blocks.append(Block("title", (tuple(pieces),)))

    def heading(self, *pieces: Piece) -> None:
        self.blocks.append(Block("heading", (tuple(pieces),)))

    def para(self, *pieces: Piece) -> None:
        self.blocks.append(Block("para", (tuple(pieces),)))

    def table(
        self,
        header: Sequence[Cell],
        rows: Sequence[Sequence[Cell]],
        right: Sequence[int] = (),
        strong: Sequence[int] = (),
    ) -> None:
        cols = len(header)
        while cols > 1 and empty(header[cols - 1]) and all(len(r) < cols or empty(r[cols - 1]) for r in rows):
            cols -= 1  # an empty last column (a notes column with no notes)
        rows = [tuple(r[:cols]) for r in rows]
        block = Block("table", tuple(header[:cols]), tuple(rows), tuple(right), tuple(strong))
        self.blocks.append(block)


def empty(c: Cell) -> bool:
    return all(p == "" for p in c)


def cell(*pieces: Piece) -> Cell:
    return tuple(pieces)


def write(doc: Doc, fmt: str, columns: int | None = None) -> str:
    """The document in ``fmt`` (text, md or tex); plain text laid out for ``columns`` if given."""
    return _text(doc, columns) if fmt == "text" else {"md": _markdown, "tex": _latex}[fmt](doc)


# ---- plain text ------------------------------------------------------------------------------


def width(s: str) -> int:
    """Display columns: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in s)


def _plain(cell_: Cell) -> str:
    return "".join(_plain_piece(p) for p in cell_)


def _plain_piece(p: Piece) -> str:
    if isinstance(p, Num):
        return f"{p.value:,}"
    if isinstance(p, Mark):
        return "✓"
    return p if isinstance(p, str) else p.text


def _pad(s: str, n: int, right: bool) -> str:
    fill = " " * (n - width(s))
    return fill + s if right else s + fill


def _text_table(block: Block) -> list[str]:
    rows = [[_plain(c) for c in row] for row in (block.cells, *block.rows)]
    cols = max(len(r) for r in rows)
    rows = [r + [""] * (cols - len(r)) for r in rows]
    widths = [max(width(r[i]) for r in rows) for i in range(cols)]
    out = []
    for row in rows:
        line = "  ".join(_pad(v, widths[i], i in block.right) for i, v in enumerate(row))
        out.append(("   " + line).rstrip())
    out.insert(1, "   " + "  ".join("-" * w for w in widths))
    return out


def _text(doc: Doc, columns: int | None = None) -> str:
    """Plain text; for ``columns``, prose wrapped between words and a table too wide stacked, one
    row to a block, so no number or word is cut by the terminal."""
    lines: list[str] = []
    for b in doc.blocks:
        if b.kind == "table":
            table = _text_table(b)
            fits = columns is None or max(width(line) for line in table) <= columns
            lines += table if fits else _stacked_table(b, columns)
        elif b.kind == "heading":
            lines += ["", *_wrap(_plain(b.cells[0]), columns)]
        else:
            lines += _wrap(_plain(b.cells[0]), columns)
    return "\n".join(lines) + "\n"


def _wrap(line: str, columns: int | None) -> list[str]:
    """``line`` in lines of at most ``columns`` display columns, broken only between words."""
    if columns is None or width(line) <= columns:
        return [line]
    out, now = [], ""
    for word in line.split(" "):
        if now and width(now) + 1 + width(word) > columns:
            out.append(now)
            now = word
        else:
            now = f"{now} {word}" if now else word
    return [*out, now]


def _stacked_table(block: Block, columns: int | None) -> list[str]:
    """Each row as its first cell, then ``header: value`` for each other non-empty cell."""
    heads = [_plain(c) for c in block.cells]
    room = max(8, (columns or 80) - 5)
    out = []
    for row in block.rows:
        cells = [_plain(c) for c in row]
        out += ["   " + line for line in _wrap(cells[0] if cells else "", room + 2)]
        for h, v in zip(heads[1:], cells[1:], strict=False):
            if v:
                out += ["     " + line for line in _wrap(f"{h}: {v}" if h else v, room)]
    return out


# ---- Markdown --------------------------------------------------------------------------------


# Characters of text from input (a printout's module names) that Markdown would read as a
# table cell's end, emphasis, raw HTML (``<img onerror=…>``) or an entity: each backslash-escaped.
_MD_SPECIAL = re.compile(r"([\\|*<>&])")


def _md_text(s: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", s)


def _md_code(s: str) -> str:
    """A code span no backtick inside can close early (CommonMark: a longer fence)."""
    fence = "`" * (max(map(len, re.findall("`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    body = s.replace("|", "\\|")  # a table cell ends at | even inside code (GFM)
    return f"{fence}{pad}{body}{pad}{fence}"


def _md_piece(p: Piece) -> str:
    if isinstance(p, Code):
        return _md_code(p.text)
    if isinstance(p, str):
        return _md_text(p)
    return _md_text(_plain_piece(p))


def _md(cell_: Cell) -> str:
    return "".join(_md_piece(p) for p in cell_)


def _md_table(b: Block) -> list[str]:
    def row(cells, bold: bool) -> str:
        texts = [_md(c) for c in cells]
        texts = [f"**{t}**" if bold and t else t for t in texts]
        return "| " + " | ".join(texts) + " |"

    rule = "|" + "|".join("---:" if i in b.right else "---" for i in range(len(b.cells))) + "|"
    return [row(b.cells, False), rule, *(row(r, i in b.strong) for i, r in enumerate(b.rows))]


def _markdown(doc: Doc) -> str:
    out: list[str] = []
    for b in doc.blocks:
        if b.kind == "title":
            out += [f"# {_md(b.cells[0])}", ""]
        elif b.kind == "heading":
            out += [f"## {_md(b.cells[0])}", ""]
        elif b.kind == "table":
            out += [*_md_table(b), ""]
        else:
            out += [_md(b.cells[0]), ""]
    return "\n".join(out).rstrip() + "\n"


# ---- LaTeX -----------------------------------------------------------------------------------

_TEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "–": "--",
    "—": "---",
    "≈": r"$\approx$",
    "×": r"$\times$",
    "→": r"$\to$",
    "·": r"$\cdot$",
    "−": "-",
    "✓": r"$\checkmark$",
}
_SUPER = {ch: str(i) for i, ch in enumerate("⁰¹²³⁴⁵⁶⁷⁸⁹")}


def tex_escape(s: str) -> str:
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in s)


def _tex_symbol(name: str) -> str:
    """``h`` → h, ``a_kv`` → a_{\\mathrm{kv}}, ``first_k_dense_replace`` → \\mathit{…}."""
    base, _, sub = name.partition("_")
    if len(base) == 1 and sub and "_" not in sub:
        return f"{base}_{{\\mathrm{{{sub}}}}}"
    if len(name) == 1:
        return name
    return r"\mathit{" + name.replace("_", r"\_") + "}"


def tex_math(formula: str) -> str:
    """Our formula notation as LaTeX math."""
    out = []
    for tok in re.findall(r"\[[^\]]*\]|[A-Za-z_][A-Za-z0-9_]*|\d[\d,]*|[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+|.", formula):
        if tok.startswith("["):
            out.append(r"\mathrm{[" + tex_escape(tok[1:-1]) + "]}")
        elif tok[0].isalpha() or tok[0] == "_":
            out.append(_tex_symbol(tok))
        elif tok[0] in _SUPER or tok[0] == "⁻":  # before digits: "²".isdigit() is true
            out.append("^{" + "".join(_SUPER.get(c, "-") for c in tok) + "}")
        elif tok[0].isdigit():
            out.append(tok.replace(",", "{,}"))
        else:
            out.append({"·": r" \cdot ", "×": r" \times ", "−": "-", "→": r" \to ", "≈": r" \approx "}.get(tok, tok))
    return "".join(out)


def _tex_piece(p: Piece) -> str:
    if isinstance(p, Math):
        return f"${tex_math(p.text)}$"
    if isinstance(p, Code):
        return r"\texttt{" + tex_escape(p.text) + "}"
    if isinstance(p, Num):
        return f"{p.value:,}".replace(",", "{,}")
    if isinstance(p, Mark):
        return r"$\checkmark$"
    return tex_escape(p)


def _tex(cell_: Cell) -> str:
    return "".join(_tex_piece(p) for p in cell_)


def _tex_table(b: Block) -> list[str]:
    spec = "".join("r" if i in b.right else "l" for i in range(len(b.cells)))
    head = " & ".join(r"\textbf{" + _tex(c) + "}" if _tex(c) else "" for c in b.cells)
    out = [r"\par\noindent{\footnotesize\begin{tabular}{" + spec + "}", r"\hline", head + r" \\", r"\hline"]
    for i, row in enumerate(b.rows):
        cells = [_tex(c) for c in row] + [""] * (len(b.cells) - len(row))
        if i in b.strong:
            cells = [r"\textbf{" + c + "}" if c else c for c in cells]
        out.append(" & ".join(cells) + r" \\")
    return [*out, r"\hline", r"\end{tabular}}\par\medskip"]


def _latex(doc: Doc) -> str:
    zh = doc.lang == "zh"
    out = [
        r"\documentclass[10pt]{article}",
        r"\usepackage[T1]{fontenc}",
        r"\usepackage[margin=1.5cm,landscape]{geometry}",
        r"\usepackage{amsmath,amssymb}",
        *([r"\usepackage{CJKutf8}"] if zh else []),
        r"\setlength{\parindent}{0pt}",
        r"\setlength{\tabcolsep}{4pt}",
        r"\begin{document}",
        *([r"\begin{CJK}{UTF8}{gbsn}"] if zh else []),
    ]
    for b in doc.blocks:
        if b.kind == "title":
            out.append(r"\section*{" + _tex(b.cells[0]) + "}")
        elif b.kind == "heading":
            out.append(r"\subsection*{" + _tex(b.cells[0]) + "}")
        elif b.kind == "table":
            out += _tex_table(b)
        else:
            out.append(_tex(b.cells[0]) + r"\par\smallskip")
    out += [*([r"\end{CJK}"] if zh else []), r"\end{document}"]
    return "\n".join(out) + "\n"
