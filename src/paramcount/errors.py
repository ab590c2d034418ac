"""The one error type users see: a message that names where the input went wrong."""

from __future__ import annotations

import re


class ParamcountError(Exception):
    """Bad input: carries the source (file or model name) and the field at fault.

    The CLI prints ``str(error)`` as a single line and exits with code 2.
    """

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        self.message = message
        self.source = source
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        named = (p if len(p) <= 200 else p[:200] + "…" for p in (self.source, self.field) if p)
        where = ": ".join(named)
        text = f"{where}: {self.message}" if where else self.message
        return printable(" ".join(text.split()))  # always one line, nothing a terminal obeys

    def __reduce__(self) -> tuple:
        # pickled whole (the web server's worker processes send errors back): source and field too
        return (_rebuild, (type(self), self.message, self.source, self.field))

    def at(self, source: str) -> ParamcountError:
        """The same error, said of ``source`` when the raiser did not know it."""
        if self.source is None:
            self.source = source
        return self


class BadSource(ParamcountError):
    """The input itself is malformed (a GGUF key of the wrong type, a tensor of the wrong rank),
    whatever is asked of it: callers that try several precisions or sizes stop at the first."""


def _rebuild(cls: type, message: str, source: str | None, field: str | None) -> ParamcountError:
    error = cls.__new__(cls)
    ParamcountError.__init__(error, message, source=source, field=field)
    return error


# Counts of parameters, tokens and bytes written by hand never need more than 30 digits (10^30
# is far above any of them); longer numbers are refused before Python turns them into ints,
# which past 4,300 digits raises and far below that can take unbounded time (10**100000000).
MAX_DIGITS = 30


def bounded_number(text: str, field: str, what: str = "a number") -> str:
    """``text`` (digits, maybe a point), or a one-line error when it is too long to be sane."""
    if len(text) > MAX_DIGITS:
        raise ParamcountError(f"{what} of {len(text):,} characters; at most {MAX_DIGITS} are read", field=field)
    return text


def bounded_exponent(text: str | None, field: str) -> int:
    """A power of ten written after ``e``, at most ±MAX_DIGITS."""
    if not text:
        return 0
    if len(text) > 4 or abs(int(text)) > MAX_DIGITS:
        raise ParamcountError(f"the exponent e{text[:12]} is past ±{MAX_DIGITS}", field=field)
    return int(text)


def brief(value: object, limit: int = 40) -> str:
    """An input value fit for a one-line message, however long it is (an int of 4,000 digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        return f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


# What must not reach a terminal from input: C0 and C1 control characters (ESC[2J clears the
# screen), lone surrogates (unencodable: printing one raises) and bidirectional overrides.
# Compiled on first use: each is half a millisecond, a twentieth of the CLI's start-up.
_UNSAFE = "[\x00-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]"
_UNSAFE_BUT_LAYOUT = "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]"


def _escape(m: re.Match[str]) -> str:
    code = ord(m[0])
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _json_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m[0]):04x}"


def printable(text: str, layout: bool = False, json: bool = False) -> str:
    """``text`` with every unsafe character written as its Python escape (``\\x1b``, ``\\ud800``);
    ``layout`` keeps line breaks and tabs (a whole document rather than one name). ``json`` writes
    JSON's escape (``\\u001b``) instead, which inside a JSON string means the same character:
    ``json.dumps(…, ensure_ascii=False)`` leaves surrogates, C1 controls and overrides raw."""
    if text.isprintable():  # no control character, surrogate or override (each is unprintable)
        return text
    if json:
        return re.sub(_UNSAFE_BUT_LAYOUT, _json_escape, text)
    return re.sub(_UNSAFE_BUT_LAYOUT if layout else _UNSAFE, _escape, text)
