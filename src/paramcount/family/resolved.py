"""What resolving a model gives: the tree to read, and why it is not the family's where it is not."""

from __future__ import annotations

from ..model import Model
from ..records import record

GGUF = "GGUF"  # Model.class_name of a GGUF file's model (memory.gguf_file.GGUF; not imported: start-up)


@record(frozen=True)
class Resolved:
    """``model``: the tree to read; ``checked``: what was checked to use the family's tree
    (None for a config, whose tree is the family's); ``why``: why the tree is not the family's
    (None when it is)."""

    model: Model
    checked: str | None = None
    why: str | None = None

    @property
    def is_family(self) -> bool:
        return self.why is None
