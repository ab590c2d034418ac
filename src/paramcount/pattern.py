"""Regular expressions from users, matched in time linear in the text (no backtracking).

Python's ``re`` backtracks: ``(.|.)*Z`` takes exponential time on a long name, and holds the GIL
while it does, so one ``-ot`` pattern posted to the page would freeze the server. This module
parses the ECMAScript syntax of C++'s ``std::regex`` (the default grammar, which llama.cpp's
``-ot`` uses through ``std::regex_search`` in ``llama_model_loader::create_tensor``), compiles it
to a Thompson NFA and runs it as a lazily built DFA over the text's UTF-8 bytes, as
``std::regex`` over ``std::string`` sees them. Work is bounded by (text length) × (NFA states),
and the NFA is bounded by :data:`MAX_STATES` after counted repetition is expanded.

Accepted: literals; ``.`` (any byte but ``\\n`` and ``\\r``); ``\\d \\D \\w \\W \\s \\S`` (ASCII, as in
the C locale); ``\\f \\n \\r \\t \\v \\0 \\xHH \\uHHHH`` (ASCII); ``\\`` before punctuation; classes
``[...]``/``[^...]`` with ranges, class escapes and ``[:alpha:]``-style names; groups ``( )`` and
``(?: )``; ``|``; ``* + ? {n} {n,} {n,m}`` and their lazy forms (the same yes/no answer); ``^ $``
(the text's ends; no multiline) and ``\\b \\B``. Refused, with the reason: what ECMAScript
rejects (Python's ``(?P<..>)``, ``(?s:..)``, ``(?i)``, a stray ``(``, ``{`` or quantifier), what
the C++ libraries read differently (``\\A``, ``\\z``: libstdc++ takes a letter escape as the
letter, libc++ refuses it; ``\\cX``; ``[[.a.]]``) and what no linear-time matcher can do
(backreferences ``\\1``, lookahead ``(?=``, ``(?!``). The scanner follows libstdc++'s
(bits/regex_scanner.tcc: ``_M_scan_normal`` takes a lone ``]`` or ``}`` as a character,
``_M_scan_in_bracket`` ends ``[]`` at once, ``_M_eat_escape_ecma`` reads ``\\0`` as NUL).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

MAX_STATES = 2_000  # NFA states after counted repetition is expanded: a{4294967296} is refused
MAX_DEPTH = 32  # groups inside groups
MAX_CELLS = 1 << 13  # the DFA cache of one pattern, in list entries; past it, it starts again (as RE2's)
ALL = (1 << 256) - 1

CHAR, SPLIT, ASSERT, MATCH = range(4)
START, WORD, OTHER = range(3)  # what precedes a position: the text's start, a \w byte, another byte
END = -1  # the class "after" the last byte
UNKNOWN, MATCHED = -1, -2


class PatternError(ValueError):
    """A pattern this module refuses; the message says why, in one line."""


class Budget(ValueError):
    """More work than :func:`budget` allowed."""


_meter = threading.local()


@contextmanager
def budget(steps: int) -> Iterator[None]:
    """Every search in this thread, inside the block, together takes at most ``steps`` steps (a
    byte its automaton reads, an NFA state visited while building a DFA state, and what the caller
    counts with :func:`charge`); past it, :class:`Budget`. One search is linear in its text; this
    bounds many patterns over many names as a whole."""
    outer = getattr(_meter, "left", None)
    _meter.left = steps
    try:
        yield
    finally:
        _meter.left = outer


def _bytes(chars: str) -> int:
    return sum(1 << b for b in chars.encode())


def _span(lo: int, hi: int) -> int:
    return ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)


DIGIT = _span(48, 57)
WORDS = DIGIT | _span(65, 90) | _span(97, 122) | _bytes("_")
SPACE = _bytes(" \t\n\v\f\r")  # isspace in the C locale: std::regex over char
DOT = ALL & ~_bytes("\n\r")  # ECMAScript's line terminators, as bytes
UPPER, LOWER = _span(65, 90), _span(97, 122)
PUNCT = _span(33, 47) | _span(58, 64) | _span(91, 96) | _span(123, 126)
POSIX = {  # [[:name:]] (std::regex_traits::lookup_classname, C locale)
    "alnum": DIGIT | UPPER | LOWER,
    "alpha": UPPER | LOWER,
    "blank": _bytes(" \t"),
    "cntrl": _span(0, 31) | 1 << 127,
    "digit": DIGIT,
    "d": DIGIT,
    "graph": _span(33, 126),
    "lower": LOWER,
    "print": _span(32, 126),
    "punct": PUNCT,
    "space": SPACE,
    "s": SPACE,
    "upper": UPPER,
    "w": WORDS,
    "xdigit": DIGIT | _span(65, 70) | _span(97, 102),
}
CLASS_ESCAPES = {"d": DIGIT, "D": ALL & ~DIGIT, "w": WORDS, "W": ALL & ~WORDS, "s": SPACE, "S": ALL & ~SPACE}
CONTROL = {"f": 12, "n": 10, "r": 13, "t": 9, "v": 11}


# ---- parsing: pattern text -> a tree of tuples -------------------------------------------------
# ("set", mask) one byte in mask; ("cat", [..]); ("alt", [..]); ("rep", node, lo, hi or None);
# ("assert", "^" | "$" | "b" | "B")


class _Parser:
    """ECMAScript's Pattern grammar (ECMA-262 §22.2.1), as std::regex's ECMAScript reads it."""

    def __init__(self, text: str) -> None:
        self.text, self.i, self.depth = text, 0, 0

    def fail(self, why: str) -> PatternError:
        return PatternError(f"{why} (position {self.i})")

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.text[j] if j < len(self.text) else ""

    def parse(self) -> tuple:
        node = self.disjunction()
        if self.i < len(self.text):
            raise self.fail("unbalanced )")
        return node

    def disjunction(self) -> tuple:
        alts = [self.alternative()]
        while self.peek() == "|":
            self.i += 1
            alts.append(self.alternative())
        return alts[0] if len(alts) == 1 else ("alt", alts)

    def alternative(self) -> tuple:
        terms = []
        while self.peek() not in ("", "|", ")"):
            terms.append(self.term())
        return terms[0] if len(terms) == 1 else ("cat", terms)

    def term(self) -> tuple:
        c = self.peek()
        if c in "*+?" or (c == "{" and self.brace() is not None):
            raise self.fail(f"nothing to repeat before {c}")
        if c in "^$":
            self.i += 1
            return self.unquantified(("assert", c))
        if c == "\\" and self.peek(1) in ("b", "B"):
            self.i += 2
            return self.unquantified(("assert", self.text[self.i - 1]))
        return self.quantified(self.atom())

    def unquantified(self, node: tuple) -> tuple:
        if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.brace() is not None):
            raise self.fail("an assertion cannot be repeated")
        return node

    def quantified(self, node: tuple) -> tuple:
        c = self.peek()
        if c in ("*", "+", "?"):
            self.i += 1
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        elif c == "{":
            lo, hi, self.i = self.brace() or self.bad_brace()
        else:
            return node
        if self.peek() == "?":
            self.i += 1  # lazy: another order of trying, the same yes/no answer
        if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.brace() is not None):
            raise self.fail("nothing to repeat (a quantifier after a quantifier)")
        return ("rep", node, lo, hi)

    def brace(self) -> tuple[int, int | None, int] | None:
        """``{n}``, ``{n,}`` or ``{n,m}`` at the cursor: (n, m or None, the index after it)."""
        j, text = self.i + 1, self.text
        k = j
        while k < len(text) and text[k].isascii() and text[k].isdigit():
            k += 1
        if k == j or k >= len(text):
            return None
        lo = int(text[j:k])
        if text[k] == "}":
            return lo, lo, k + 1
        if text[k] != ",":
            return None
        m = k + 1
        while m < len(text) and text[m].isascii() and text[m].isdigit():
            m += 1
        if m >= len(text) or text[m] != "}":
            return None
        hi = int(text[k + 1 : m]) if m > k + 1 else None
        if hi is not None and hi < lo:
            raise self.fail(f"{{{lo},{hi}}} counts down")
        return lo, hi, m + 1

    def bad_brace(self) -> tuple:
        raise self.fail("{ begins no {n}, {n,} or {n,m} (write \\{ for the character)")

    def atom(self) -> tuple:
        c = self.peek()
        self.i += 1
        if c == ".":
            return ("set", DOT)
        if c == "(":
            return self.group()
        if c == ")":
            raise self.fail("unbalanced )")
        if c == "[":
            return self.bracket()
        if c == "{":
            self.i -= 1
            self.bad_brace()
        if c == "\\":
            return self.escape()
        return _literal(c)

    def group(self) -> tuple:
        if self.peek() == "?":
            self.group_kind()
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"groups nest more than {MAX_DEPTH} deep")
        node = self.disjunction()
        if self.peek() != ")":
            raise self.fail("unbalanced (: missing )")
        self.i += 1
        self.depth -= 1
        return node

    def group_kind(self) -> None:
        two = self.text[self.i : self.i + 2]
        if two == "?:":
            self.i += 2
        elif two in ("?=", "?!"):
            raise self.fail(f"lookahead ({two} needs a backtracking matcher; it is refused")
        elif two == "?<" and self.peek(2) in ("=", "!"):
            raise self.fail(f"lookbehind ({two}{self.peek(2)} is not ECMAScript std::regex syntax")
        elif len(two) < 2:
            raise self.fail("(? ends the pattern")
        else:
            raise self.fail(f"({two}... is Python syntax that std::regex's ECMAScript rejects")

    def escape(self) -> tuple:
        c = self.peek()
        if c == "":
            raise self.fail("\\ at the end")
        if c in "123456789":
            raise self.fail(f"backreference \\{c} needs a backtracking matcher; it is refused")
        if c in CLASS_ESCAPES:
            self.i += 1
            return ("set", CLASS_ESCAPES[c])
        return ("set", 1 << self.char_escape())

    def char_escape(self) -> int:
        """The byte of a CharacterEscape after ``\\`` (the cursor on its first character)."""
        c = self.peek()
        self.i += 1
        if c in CONTROL:
            return CONTROL[c]
        if c == "0":  # then a digit stays a digit (libstdc++ _M_eat_escape_ecma)
            return 0
        if c == "c":
            self.i -= 1
            raise self.fail("\\cX reads differently in std::regex's libraries (libstdc++: X itself); write \\xHH")
        if c in ("x", "u"):
            return self.hex_escape(c, 2 if c == "x" else 4)
        if c.isalnum() or c == "_" or not c.isascii():
            self.i -= 1
            raise self.fail(f"\\{c} is no ECMAScript escape")
        return ord(c)

    def hex_escape(self, c: str, n: int) -> int:
        digits = self.text[self.i : self.i + n]
        if len(digits) != n or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise self.fail(f"\\{c} wants {n} hexadecimal digits")
        self.i += n
        value = int(digits, 16)
        if value > (0xFF if c == "x" else 0x7F):
            raise self.fail(f"\\{c}{digits} is past ASCII; write the character itself")
        return value

    def bracket(self) -> tuple:
        negate = self.peek() == "^"
        self.i += negate
        mask = 0
        while self.peek() != "]":
            if self.peek() == "":
                raise self.fail("unbalanced [: missing ]")
            lo = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                mask |= self.range(lo, self.class_atom())
            else:
                mask |= lo[1]
        self.i += 1
        return ("set", ALL & ~mask if negate else mask)

    def range(self, lo: tuple[int | None, int], hi: tuple[int | None, int]) -> int:
        if lo[0] is None or hi[0] is None:
            raise self.fail("a range needs one character at each end")
        if lo[0] > hi[0]:
            raise self.fail("a range runs backwards")
        return _span(lo[0], hi[0])

    def class_atom(self) -> tuple[int | None, int]:
        """One member of a class: (its byte or None for a set of several, its mask)."""
        c = self.peek()
        self.i += 1
        if c == "[" and self.peek() in (":", ".", "="):
            return None, self.class_name()
        if c != "\\":
            data = c.encode("utf-8", "surrogatepass")
            return (data[0] if len(data) == 1 else None), sum(1 << b for b in data)
        e = self.peek()
        if e in CLASS_ESCAPES:
            self.i += 1
            return None, CLASS_ESCAPES[e]
        if e == "b":
            self.i += 1
            return 8, 1 << 8  # backspace inside a class
        if e in "123456789":
            raise self.fail(f"backreference \\{e} inside a class")
        if e == "-":
            self.i += 1
            return 45, 1 << 45
        b = self.char_escape()
        return b, 1 << b

    def class_name(self) -> int:
        kind = self.peek()
        end = self.text.find(kind + "]", self.i + 1)
        if end < 0:
            raise self.fail(f"[{kind} without {kind}]")
        name = self.text[self.i + 1 : end]
        if kind != ":":
            raise self.fail(f"collating [{kind}{name}{kind}] is not supported")
        if name not in POSIX:
            raise self.fail(f"no character class [:{name}:]")
        self.i = end + 2
        return POSIX[name]


def _literal(c: str) -> tuple:
    data = c.encode("utf-8", "surrogatepass")
    if len(data) == 1:
        return ("set", 1 << data[0])
    return ("cat", [("set", 1 << b) for b in data])


def _size(node: tuple) -> int:
    """The NFA states ``node`` compiles to, computed without building them (Python ints: no overflow)."""
    kind = node[0]
    if kind in ("set", "assert"):
        return 1
    if kind in ("cat", "alt"):
        return sum(_size(n) for n in node[1]) + (len(node[1]) - 1 if kind == "alt" else 0)
    body, lo, hi = _size(node[1]), node[2], node[3]
    if body == 0:
        return 0
    return lo * body + 1 if hi is None else lo * body + (hi - lo) * (body + 1)


# ---- compiling: the tree -> a Thompson NFA -----------------------------------------------------


class _Nfa:
    """States as parallel lists: op, argument (a byte mask or an assertion), and one or two next states."""

    def __init__(self) -> None:
        self.op: list[int] = []
        self.arg: list = []
        self.out: list[int] = []
        self.alt: list[int] = []

    def add(self, op: int, arg: object = None, out: int = -1, alt: int = -1) -> int:
        self.op.append(op)
        self.arg.append(arg)
        self.out.append(out)
        self.alt.append(alt)
        return len(self.op) - 1

    def build(self, node: tuple, nxt: int) -> int:
        """The entry state of ``node`` followed by ``nxt`` (compiled back to front)."""
        kind = node[0]
        if kind == "set":
            return self.add(CHAR, node[1], nxt)
        if kind == "assert":
            return self.add(ASSERT, node[1], nxt)
        if kind == "cat":
            for child in reversed(node[1]):
                nxt = self.build(child, nxt)
            return nxt
        if kind == "alt":
            entries = [self.build(child, nxt) for child in node[1]]
            entry = entries[-1]
            for e in reversed(entries[:-1]):
                entry = self.add(SPLIT, None, e, entry)
            return entry
        return self.repeat(node[1], node[2], node[3], nxt)

    def repeat(self, body: tuple, lo: int, hi: int | None, nxt: int) -> int:
        if _size(body) == 0:  # a body of no states matches only the empty text: so does its repetition
            return nxt
        entry = nxt
        if hi is None:
            loop = self.add(SPLIT, None, -1, nxt)
            self.out[loop] = self.build(body, loop)
            entry, lo = (self.out[loop], lo - 1) if lo else (loop, 0)
        else:
            for _ in range(hi - lo):
                entry = self.add(SPLIT, None, self.build(body, entry), nxt)
        for _ in range(lo):
            entry = self.build(body, entry)
        return entry


# ---- matching: a lazily built DFA over byte classes --------------------------------------------


class Pattern:
    """A compiled pattern: :meth:`search` says whether it matches anywhere in a text
    (``std::regex_search``); with ``whole`` it must match all of it (Python's ``re.fullmatch``)."""

    def __init__(self, source: str, whole: bool = False) -> None:
        tree = _Parser(source).parse()
        if whole:
            tree = ("cat", [("assert", "^"), tree, ("assert", "$")])
        size = _size(tree)
        if size > MAX_STATES:
            raise PatternError(f"expands to {_short(size)} states; at most {MAX_STATES:,}")
        self.source, self.work = source, 0
        self._nfa = _Nfa()
        start = self._nfa.build(tree, self._nfa.add(MATCH))
        self._start = start
        self._need, self._plain = _required(tree)
        self._need_text = self._need.decode("ascii") if self._need.isascii() else None
        self.prefix = _prefix(tree)
        self._lock = threading.Lock()  # the DFA cache grows while searching; the page searches in threads
        self._table = b""  # the DFA is built on the first text the literal does not decide

    def _classes(self) -> None:
        """Bytes no set tells apart share a class; a DFA row has one entry per class."""
        states = list(zip(self._nfa.op, self._nfa.arg, strict=True))
        masks = {a for op, a in states if op == CHAR}
        bounds = any(op == ASSERT and a in "bB" for op, a in states)
        anchored = any(op == ASSERT and a == "^" for op, a in states)
        cls = _partition(masks | ({WORDS} if bounds else set()))
        self._table = bytes(cls)
        self._n = max(cls) + 1
        first: dict[int, int] = {}
        self._rep = [first.setdefault(c, b) for b, c in enumerate(cls) if c not in first]  # a byte of each class
        word = [bool(WORDS >> b & 1) for b in self._rep]
        self._word = word if bounds else [False] * self._n
        self._prev = [WORD if w and bounds else OTHER for w in word]
        self._first = START if anchored or bounds else OTHER

    def _reset(self) -> None:
        self._cells = 0
        self._ids: dict[tuple[tuple[int, ...], int], int] = {}
        self._cores: list[tuple[tuple[int, ...], int]] = []
        self._trans: list[list[int]] = []
        self._ends: list[int] = []  # per state: UNKNOWN, 0 or 1
        self._skips: dict[int, int] = {}  # the state after the prefix, by what precedes it
        self._state((self._start,), self._first)

    def _state(self, core: tuple[int, ...], prev: int) -> int:
        key = (core, prev)
        found = self._ids.get(key)
        if found is not None:
            return found
        self._cells += len(core) + self._n
        self._ids[key] = len(self._cores)
        self._cores.append(key)
        self._trans.append([UNKNOWN] * self._n)
        self._ends.append(UNKNOWN)
        return len(self._cores) - 1

    def _closure(self, core: tuple[int, ...], prev: int, nxt: int) -> list[int] | None:
        """The CHAR states reachable from ``core`` without reading, between a byte of kind
        ``prev`` and one of class ``nxt`` (END: the text's end); None when MATCH is reachable."""
        op, arg, out, alt = self._nfa.op, self._nfa.arg, self._nfa.out, self._nfa.alt
        seen, chars, stack = set(), [], list(core)
        while stack:
            s = stack.pop()
            if s in seen:
                continue
            seen.add(s)
            kind = op[s]
            if kind == CHAR:
                chars.append(s)
            elif kind == SPLIT:
                stack += (alt[s], out[s])
            elif kind == MATCH:
                return None
            elif self._holds(arg[s], prev, nxt):
                stack.append(out[s])
        self.work += len(seen)
        charge(len(seen))
        return chars

    def _holds(self, kind: str, prev: int, nxt: int) -> bool:
        if kind == "^":
            return prev == START
        if kind == "$":
            return nxt == END
        boundary = (prev == WORD) != (nxt != END and self._word[nxt])
        return boundary == (kind == "b")

    def _step(self, s: int, c: int) -> int:
        core, prev = self._cores[s]
        chars = self._closure(core, prev, c)
        if chars is None:
            self._trans[s][c] = MATCHED
            return MATCHED
        byte, arg, out = self._rep[c], self._nfa.arg, self._nfa.out
        moved = tuple(sorted({self._start, *(out[q] for q in chars if arg[q] >> byte & 1)}))
        if self._cells >= MAX_CELLS:
            self._reset()
            return self._state(moved, self._prev[c])
        t = self._trans[s][c] = self._state(moved, self._prev[c])
        return t

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in ``text`` (std::regex_search's yes or no). Under
        :func:`budget` a text the literal rules out is not counted (a caller counts its calls)."""
        if text.isascii() and self._need_text is not None:
            if self._need_text not in text:  # a literal every match holds: most names fail here, in C
                return False
        elif self._need not in text.encode("utf-8", "surrogatepass"):
            return False
        if self._plain:
            return True
        raw = text.encode("utf-8", "surrogatepass")
        charge(len(raw) + 1)  # a step per byte: many patterns over many names are bounded too
        with self._lock:
            if not self._table:
                self._classes()
                self._reset()
            return self._run(raw.translate(self._table), raw)

    def _run(self, data: bytes, raw: bytes) -> bool:
        """Every match begins with the prefix, so none begins before its first place in the text:
        the automaton starts there, in the state its prefix leads to (kept, per kind of byte before)."""
        s, i = 0, 0
        if self.prefix:
            i = raw.find(self.prefix)
            if i < 0:
                return False
            s = self._skip(self._first if i == 0 else self._prev[data[i - 1]])
            i += len(self.prefix)
        s = s if s == MATCHED else self._walk(s, data[i:])
        return True if s == MATCHED else self._at_end(s)

    def _skip(self, prev: int) -> int:
        if prev not in self._skips:
            s = self._walk(self._state((self._start,), prev), self.prefix.translate(self._table))
            self._skips[prev] = s  # after any reset in the walk: s is a state of the new cache
        return self._skips[prev]

    def _walk(self, s: int, data: bytes) -> int:
        """The state after ``data`` from state ``s``, or MATCHED."""
        trans = self._trans
        for c in data:
            t = trans[s][c]
            if t == UNKNOWN:
                t = self._step(s, c)
                trans = self._trans
            if t == MATCHED:
                return MATCHED
            s = t
        return s

    def _at_end(self, s: int) -> bool:
        if self._ends[s] == UNKNOWN:
            core, prev = self._cores[s]
            self._ends[s] = int(self._closure(core, prev, END) is None)
        return bool(self._ends[s])

    def states(self) -> int:
        """The NFA's size: :meth:`search` visits at most this many states per byte, plus one pass."""
        return len(self._nfa.op)


def charge(steps: int) -> None:
    """Count ``steps`` against this thread's :func:`budget`, if one is open."""
    left = getattr(_meter, "left", None)
    if left is not None:
        _meter.left = left - steps
        if left < steps:
            raise Budget("matching took more steps than the budget allows")


def _partition(masks: set[int]) -> list[int]:
    """Each byte's class: bytes in the same class lie in the same masks. Each mask splits the
    classes it cuts, touching only its smaller side (a literal: one byte; ``.``: two)."""
    cls, n = [0] * 256, 1
    for mask in masks:
        side = mask if mask.bit_count() <= 128 else ALL & ~mask
        moved: dict[int, int] = {}
        while side:
            low = side & -side
            side ^= low
            b = low.bit_length() - 1
            if cls[b] not in moved:
                moved[cls[b]], n = n, n + 1
            cls[b] = moved[cls[b]]
    ids: dict[int, int] = {}
    return [ids.setdefault(c, len(ids)) for c in cls]


def _required(tree: tuple) -> tuple[bytes, bool]:
    """The longest run of single bytes every match contains, and whether the pattern is just that run."""
    parts = _flat(tree)
    runs, run = [b""], b""
    for node in parts:
        one = node[0] == "set" and node[1] != 0 and node[1] & (node[1] - 1) == 0
        run = run + bytes([node[1].bit_length() - 1]) if one else b""
        runs.append(run)
    need = max(runs, key=len)
    return need, len(need) == len(parts)


def _prefix(tree: tuple) -> bytes:
    """The bytes every match begins with (after a leading ``^``): ``blk\\.7\\.ffn`` gives
    ``blk.7.ffn``; ``blk\\.1\\.*`` gives only ``blk.1``, and an alternative outside any group nothing."""
    parts, out = _flat(tree), b""
    parts = parts[1:] if parts and parts[0] == ("assert", "^") else parts
    for node in parts:
        if node[0] != "set" or node[1] == 0 or node[1] & (node[1] - 1):
            break
        out += bytes([node[1].bit_length() - 1])
    return out


def _flat(node: tuple) -> list[tuple]:
    """A concatenation's parts, nested concatenations spread out."""
    if node[0] != "cat":
        return [node]
    return [part for child in node[1] for part in _flat(child)]


def _short(n: int) -> str:
    return f"{n:,}" if n < 10**15 else f"about 10^{len(str(n)) - 1}"


@lru_cache(maxsize=1024)
def compile(source: str, whole: bool = False) -> Pattern:
    """``source`` compiled (cached: the fit search plans many placements with the same patterns).
    Raises :class:`PatternError` with one line for a pattern it refuses."""
    return Pattern(source, whole)
