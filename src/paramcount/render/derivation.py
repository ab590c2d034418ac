"""``paramcount explain``: a derivation as text, Markdown or LaTeX, in English or Chinese.

The Chinese wording follows the seed articles (词嵌入, 位置嵌入, 句子/段嵌入, 层归一化, 池化层,
参数量); the layout follows them too: the embeddings, one layer and its product with the number
of layers, the pooler, the output head, the total, checked against the count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..derive import Derivation, Line, Section
from ..formula import ClosedForm, expression, parse, render, symbol_key
from .doc import Cell, Code, Doc, Mark, Math, Num, cell, write

WORDS = {
    "en": {
        "params": "parameters",
        "symbols": "Symbols",
        "module": "module",
        "formula": "formula",
        "numbers": "numbers",
        "subtotal": "subtotal",
        "one_layer": "one layer",
        "layer": "one layer",
        "layers_title": "One layer of {path}, layers {first}–{last}",
        "layer_title": "Layer {path}.{first}",
        "times": "× {n} layers",
        "total": "Total",
        "checked": "equals the count of the model",
        "closed": "Closed form",
        "expanded": "expanded",
        "approx": "Approximations",
        "approx_error": " ({error:+.2%} against the exact count)",
        "tied": "tied to {target}: 0 new parameters ({n} shared)",
        "active": "{k} of {n} active per token",
        "tied_section": "tied: 0 new parameters",
        "with_ties": "Counting every tied tensor again would give {n}.",
        "inside": (
            "The backbone {backbone}, inside {cls} ({total} parameters with its head); "
            "--class {cls} derives the whole class."
        ),
        "active_total": "Active per token (routed experts): {n}.",
        "unsymbolic": "No symbols: the lines are read from the tensors' names and shapes ({why}).",
        "note": "Note: ",
        "sections": {
            "embeddings": "Embeddings",
            "norms": "Norm",
            "final_norm": "Final norm",
            "pooler": "Pooler",
            "output_head": "Output head",
            "attention": "Attention",
            "recurrent": "Recurrent mixer (SSM, linear attention)",
            "feed_forward": "Feed-forward",
            "experts": "Experts",
            "router": "Router",
            "other": "Other",
        },
        "roles": {
            "token_embedding": "token embedding",
            "position_embedding": "position embedding",
            "segment_embedding": "segment embedding",
            "embedding": "embedding",
            "layernorm": "LayerNorm",
            "rmsnorm": "RMSNorm",
            "q": "W_Q (query)",
            "k": "W_K (key)",
            "v": "W_V (value)",
            "o": "W_O (attention output)",
            "qkv": "W_Q, W_K, W_V fused",
            "q_down": "Q down-projection (MLA)",
            "q_up": "Q up-projection (MLA)",
            "kv_down": "KV down-projection (MLA)",
            "kv_up": "KV up-projection (MLA)",
            "relative_bias": "relative position bias",
            "ffn_gate": "FFN gate",
            "ffn_up": "FFN up",
            "ffn_down": "FFN down",
            "ffn_gate_up": "FFN gate and up, fused",
            "router": "router",
            "pooler": "pooler dense",
            "lm_head": "output projection",
            "classifier": "classifier",
            "output_bias": "output bias",
            "experts": "routed experts",
        },
    },
    "zh": {
        "params": "参数量",
        "symbols": "符号",
        "module": "模块",
        "formula": "公式",
        "numbers": "代入数值",
        "subtotal": "小计",
        "one_layer": "单层合计",
        "layer": "单层",
        "layers_title": "单个 Transformer 层（{path}，第 {first}–{last} 层）",
        "layer_title": "Transformer 层（{path}.{first}）",
        "times": "× {n} 层",
        "total": "总参数量",
        "checked": "与模型实际参数个数一致",
        "closed": "闭式公式",
        "expanded": "展开",
        "approx": "近似估算",
        "approx_error": "（相对精确值误差 {error:+.2%}）",
        "tied": "与 {target} 共享权重：0 个新参数（共享 {n}）",
        "active": "每个 token 激活 {n} 个中的 {k} 个",
        "tied_section": "共享权重：0 个新参数",
        "with_ties": "若把共享（tied）的权重再算一遍，会得到 {n}。",
        "inside": "这是 {cls}（含输出头共 {total} 个参数）内部的主干模型 {backbone}；用 --class {cls} 推导整个模型。",
        "active_total": "每个 token 实际激活的参数量（路由专家）：{n}。",
        "unsymbolic": "没有符号：各行取自张量的名称和形状（{why}）。",
        "note": "注：",
        "sections": {
            "embeddings": "嵌入层",
            "norms": "归一化层",
            "final_norm": "最后的归一化层",
            "pooler": "池化层",
            "output_head": "输出层",
            "attention": "注意力层",
            "recurrent": "循环层（状态空间、线性注意力）",
            "feed_forward": "前馈层",
            "experts": "专家层",
            "router": "路由器",
            "other": "其他",
        },
        "roles": {
            "token_embedding": "词嵌入 (token embedding)",
            "position_embedding": "位置嵌入 (position embedding)",
            "segment_embedding": "句子/段嵌入 (segment embedding)",
            "embedding": "嵌入",
            "layernorm": "层归一化 (LayerNorm)",
            "rmsnorm": "RMS 归一化 (RMSNorm)",
            "q": "W_Q 查询 (query)",
            "k": "W_K 键 (key)",
            "v": "W_V 值 (value)",
            "o": "W_O 输出投影",
            "qkv": "W_Q、W_K、W_V 合并",
            "q_down": "Q 低秩降维 (MLA)",
            "q_up": "Q 低秩升维 (MLA)",
            "kv_down": "KV 低秩降维 (MLA)",
            "kv_up": "KV 低秩升维 (MLA)",
            "relative_bias": "相对位置偏置",
            "ffn_gate": "前馈门控 (gate)",
            "ffn_up": "前馈升维",
            "ffn_down": "前馈降维",
            "ffn_gate_up": "前馈门控与升维（合并）",
            "router": "路由器 (router)",
            "pooler": "池化层 dense",
            "lm_head": "输出投影 (lm_head)",
            "classifier": "分类器",
            "output_bias": "输出偏置",
            "experts": "路由专家",
        },
    },
}


def words(lang: str) -> dict:
    return WORDS[lang]


# ---- one line --------------------------------------------------------------------------------


def simplest(dim: int) -> str:
    """A dimension's expression, simplified when that leaves fewer symbols (``a·h/a`` is h)."""
    text = expression(dim)
    try:
        poly = parse(text)
    except (ValueError, ZeroDivisionError):
        return text
    short = render(poly)
    atoms = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    fewer = len(atoms.findall(short)) < len(atoms.findall(text))
    return short if len(poly.terms) == 1 and fewer else text


def _factor(dim: int, many: bool) -> str:
    text = simplest(dim)
    compound = not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*|\d+", text)
    return f"({text})" if compound and many else text


def _product(shape: Sequence[int]) -> tuple[str, str]:
    """(symbols, numbers) of one tensor: ``(a_kv·d_head)·h`` and ``1024·4096``; a scalar is 1."""
    if not shape:  # a 0-d parameter (CLIP's logit_scale) holds one number
        return "1", "1"
    many = len(shape) > 1
    return "·".join(_factor(d, many) for d in shape), "·".join(str(int(d)) for d in shape)


def _terms(line: Line, tied: bool) -> tuple[str, str]:
    """The line's tensors as a sum, equal terms merged (LayerNorm: ``2·h``)."""
    merged: dict[tuple[str, str], int] = {}
    for p in line.params:
        if bool(p.tied_to) == tied:
            key = _product(p.shape)
            merged[key] = merged.get(key, 0) + 1
    sym = " + ".join(f"{n}·{s}" if n > 1 else s for (s, _), n in merged.items())
    num = " + ".join(f"{n}·{v}" if n > 1 else v for (_, v), n in merged.items())
    return sym, num


def _repeat(line: Line, sym: str, num: str) -> tuple[str, str]:
    if not line.repeat:
        return sym, num
    rs = " × ".join(_factor(r, True) for r in line.repeat)
    rn = " × ".join(str(int(r)) for r in line.repeat)
    wrap = " + " in sym
    return f"{rs} × ({sym})" if wrap else f"{rs} × {sym}", f"{rn} × ({num})" if wrap else f"{rn} × {num}"


def label(line: Line, lang: str) -> str:
    return words(lang)["roles"].get(line.role) or line.path.rpartition(".")[2]


def _relative(path: str, base: str) -> str:
    return path[len(base) + 1 :] if base and path.startswith(base + ".") else path


def line_formula(line: Line) -> tuple[str, str]:
    """(symbols, numbers) of a line: ``h·h + h`` and ``768·768 + 768`` (a tied line: its target's)."""
    untied = any(not p.tied_to for p in line.params)
    return _repeat(line, *_terms(line, tied=not untied))


def line_row(line: Line, base: str, lang: str) -> tuple[Cell, ...]:
    w = words(lang)
    sym, num = line_formula(line)
    notes: list = []
    tied = [p for p in line.params if p.tied_to]
    if tied:
        targets = ", ".join(p.tied_to for p in tied)
        notes.append(w["tied"].format(target=targets, n=f"{sum(p.size for p in tied):,}"))
    if line.active:
        notes.append(w["active"].format(k=line.active[0], n=line.active[1]))
    return (
        cell(label(line, lang)),
        cell(Code(_relative(line.path, base))),
        cell(Math(sym)),
        cell(Math(num)),
        cell(Num(line.value)),
        cell("; ".join(notes)),
    )


# ---- sections --------------------------------------------------------------------------------


def title(section: Section, previous: Section | None, lang: str) -> str:
    w = words(lang)
    if section.kind == "layers":
        if section.copies == 1:
            return w["layer_title"].format(path=section.path, first=section.first)
        return w["layers_title"].format(path=section.path, first=section.first, last=section.last)
    name = short(section, previous, lang)
    if not section.path:
        return name
    return f"{name}（{section.path}）" if lang == "zh" else f"{name} ({section.path})"


def section_rows(section: Section, lang: str) -> tuple[list[tuple[Cell, ...]], list[int]]:
    """The section's table rows and which of them are bold (subtotals)."""
    w = words(lang)
    rows = [line_row(line, section.path, lang) for line in section.lines]
    if section.kind != "layers":
        if len(section.lines) > 1:
            rows.append((cell(w["subtotal"]), (), (), (), cell(Num(section.total))))
            return rows, [len(rows) - 1]
        return rows, []
    if section.copies == 1 and expression(section.repeat) == "1":  # a run of one layer (T5's block 0)
        rows.append((cell(w["subtotal"]), (), (), (), cell(Num(section.total))))
        return rows, [len(rows) - 1]
    rows.append((cell(w["one_layer"]), (), (), (), cell(Num(section.each))))
    n = _factor(section.repeat, True)
    times = w["times"].format(n=n if n.isdigit() else f"{n} = {section.copies}")
    product = f"{section.copies} × {section.each:,}"
    rows.append((cell(times), (), (), cell(Math(product)), cell(Num(section.total))))
    return rows, [len(rows) - 1]


def header(lang: str) -> tuple[Cell, ...]:
    w = words(lang)
    return ((), cell(w["module"]), cell(w["formula"]), cell(w["numbers"]), cell(w["params"]), ())


# ---- the whole document -------------------------------------------------------------------------


def legend(closed: ClosedForm, lang: str) -> list:
    pieces: list = [words(lang)["symbols"] + (": " if lang == "en" else "：")]
    for i, sym in enumerate(sorted(closed.values, key=symbol_key)):
        value = closed.values[sym]
        field = closed.fields.get(sym)
        pieces += [", " if i else "", Math(f"{sym} = {value:,}")]
        pieces += [" (", Code(field), ")"] if field and field != sym else []
    return pieces


def document(d: Derivation, lang: str = "en") -> Doc:
    w = words(lang)
    doc = Doc(lang)
    doc.title(f"{d.class_name}: ", Num(d.total), f" {w['params']}" if lang == "en" else " 个参数")
    doc.para(Code(d.name))
    if d.inside:
        cls, total = d.inside
        doc.para(w["inside"].format(backbone=d.class_name, cls=cls, total=f"{total:,}"))
    doc.para(w["unsymbolic"].format(why=d.unsymbolic)) if d.unsymbolic else doc.para(*legend(d.closed, lang))
    previous = None
    for i, section in enumerate(d.sections, 1):
        doc.heading(f"{i}. {title(section, previous, lang)}")
        rows, strong = section_rows(section, lang)
        doc.table(header(lang), rows, right=(4,), strong=strong)
        previous = section
    _total(doc, d, lang)
    _closed(doc, d.closed, lang)
    _extras(doc, d, lang)
    return doc


def short(section: Section, previous: Section | None, lang: str) -> str:
    """A section's name in the sum of the total: ``embeddings``, ``12 × one layer``."""
    w = words(lang)
    if section.kind == "layers":
        one = section.copies == 1 and expression(section.repeat) == "1"
        return w["layer"] if one else f"{section.copies} × {w['layer']}"
    kind = "final_norm" if section.kind == "norms" and previous and previous.kind == "layers" else section.kind
    return w["sections"].get(kind, kind)


def _total(doc: Doc, d: Derivation, lang: str) -> None:
    w = words(lang)
    doc.heading(w["total"])
    names = [short(s, d.sections[i - 1] if i else None, lang) for i, s in enumerate(d.sections)]
    doc.para(f"{w['total']} = " + " + ".join(names))
    terms = " + ".join(f"{s.total:,}" for s in d.sections)
    text = f"N = {terms} = {d.total:,}" if len(d.sections) > 1 else f"N = {d.total:,}"
    doc.para(Math(text), "  ", Mark(), " ", w["checked"])


def _closed(doc: Doc, closed: ClosedForm, lang: str) -> None:
    w = words(lang)
    colon = "：" if lang == "zh" else ": "
    doc.heading(w["closed"])
    doc.para(Math(f"N = {closed.text}"))
    if closed.expanded != closed.text:
        doc.para(w["expanded"] + colon, Math(f"N = {closed.expanded}"))
    for where, formula in closed.with_4h:
        if lang == "zh":
            doc.para("当 ", Math("I = 4h"), " 时，", Code(where), " 为 ", Math(formula))
        else:
            doc.para("With ", Math("I = 4h"), ", ", Code(where), " is ", Math(formula))
    if closed.approximations:
        doc.heading(w["approx"])
        for a in closed.approximations:
            doc.para(Math(f"{a.name} = {a.value:,}"), w["approx_error"].format(error=a.error))


def _extras(doc: Doc, d: Derivation, lang: str) -> None:
    w = words(lang)
    if d.total_with_ties != d.total:
        doc.para(w["with_ties"].format(n=f"{d.total_with_ties:,}"))
    if d.active_total != d.total:
        doc.para(w["active_total"].format(n=f"{d.active_total:,}"))
    for note in d.notes:
        doc.para(w["note"] + note)


def render_derivation(d: Derivation, fmt: str = "text", lang: str = "en", columns: int | None = None) -> str:
    """The derivation written out (text, md or tex; en or zh)."""
    return write(document(d, lang), fmt, columns)
