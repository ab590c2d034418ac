"""The result object every frontend returns and every renderer reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import count
from .ir import KINDS, Block, Leaf, leaves


@dataclass(frozen=True)
class Model:
    """A counted model: the tree of the chosen class and of its backbone.

    ``total`` is unique parameters (buffers are not parameters; a tied tensor counts once),
    equal to ``sum(p.numel() for p in model.parameters())`` in transformers.
    """

    name: str
    source: str
    model_type: str
    class_name: str
    tree: Block
    backbone_class: str
    backbone: Block
    config: Mapping[str, Any] = field(default_factory=dict, repr=False)
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return count.total(self.tree)

    @property
    def total_with_ties(self) -> int:
        return count.total_with_ties(self.tree)

    @property
    def backbone_total(self) -> int:
        return count.total(self.backbone)

    @property
    def active_total(self) -> int:
        """Parameters used per token; equal to ``total`` unless the model routes experts."""
        return count.active(self.tree)

    @property
    def is_moe(self) -> bool:
        return self.active_total != self.total

    def components(self) -> dict[str, int]:
        """Unique parameters per component, in a fixed order; a component that is all ties
        (a tied output head) is present with 0."""
        sums = count.by_kind(self.tree)
        return {k: sums[k] for k in KINDS if k in sums}

    def layers(self) -> list[count.LayerGroup]:
        return list(count.layer_groups(self.tree))

    def tensors(self, checkpoint: bool = False) -> list[Leaf]:
        """Every parameter tensor and tie under its full transformers name (unrolled).

        With ``checkpoint`` the names are those a saved checkpoint uses (one tensor per
        expert where transformers fuses experts)."""
        return list(leaves(self.tree, checkpoint=checkpoint))

    def ties(self) -> list[tuple[str, str, int]]:
        """(tied name, target name, parameters shared) for each tie."""
        return [(name, t.target, t.aliased_count) for name, t in count.ties(self.tree)]
