"""The one error type users see: a message that names where the input went wrong."""

from __future__ import annotations


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
        where = ": ".join(p for p in (self.source, self.field) if p)
        text = f"{where}: {self.message}" if where else self.message
        return " ".join(text.split())  # always one line

    def at(self, source: str) -> ParamcountError:
        """The same error, said of ``source`` when the raiser did not know it."""
        if self.source is None:
            self.source = source
        return self
