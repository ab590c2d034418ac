"""The result object every frontend returns and every renderer reads."""

from __future__ import annotations

from collections.abc import Mapping

from . import count
from .ir import KINDS, MAX_LISTED, TOWERS, Block, Leaf, leaf_count, leaves
from .records import field, record

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from typing import Any


@record(frozen=True)
class Model:
    """A counted model: the tree of the chosen class and of its backbone.

    ``total`` is unique parameters (buffers are not parameters; a tied tensor counts once),
    equal to ``sum(p.numel() for p in model.parameters())`` in transformers.
    ``counted_by`` is ``"paramcount"`` for a native count, ``"transformers"`` for one made by
    transformers on the meta device (a model_type with no native family: no formulas).
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
    scope: tuple[str, ...] = ()  # what the count is not (the text tower only, MTP layers left out): said under it
    counted_by: str = "paramcount"  # "transformers": a model_type with no native family (the fallback)
    # why ``total`` is not exact: a lower bound (a printout hides parameters), or a printout's count
    # that may hold a shared module twice (the text says which); None: exact
    inexact: str | None = None

    def derived(self, key: Any, build: Any) -> Any:
        """A value computed from this model once (the model never changes): a memory plan per
        precision asks for the same layer widths and cache layout."""
        memo = self.__dict__.get("_derived")
        if memo is None:
            memo = {}
            object.__setattr__(self, "_derived", memo)  # not a field: replace() starts afresh
        if key not in memo:
            memo[key] = build()
        return memo[key]

    @property
    def exact(self) -> bool:
        """Whether ``total`` is the model's count; False when it is not (``inexact`` says why)."""
        return self.inexact is None

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

    def towers(self) -> dict[str, int]:
        """Unique parameters per tower of a composite model (vision encoder, projector, language
        model, …) in a fixed order; empty for a model of one tower."""
        sums = count.by_tower(self.tree)
        return {k: sums[k] for k in TOWERS if k in sums}

    def layers(self) -> list[count.LayerGroup]:
        return list(count.layer_groups(self.tree))

    def tensors(self, checkpoint: bool = False, instead: str = "") -> list[Leaf]:
        """Every parameter tensor and tie under its full transformers name (unrolled).

        With ``checkpoint`` the names are those a saved checkpoint uses (one tensor per
        expert where transformers fuses experts). Past ``ir.MAX_LISTED`` tensors this is a
        ParamcountError, ending with ``instead`` (how to get a collapsed form)."""
        n = leaf_count(self.tree, checkpoint)
        if n > MAX_LISTED:
            from .errors import ParamcountError

            raise ParamcountError(
                f"unrolls to {n:,} tensors, more than the {MAX_LISTED:,} listed one by one{instead}",
                source=self.name,
                field="tensors",
            )
        return list(leaves(self.tree, checkpoint=checkpoint))

    def ties(self) -> list[tuple[str, str, int]]:
        """(tied name, target name, parameters shared) for each tie."""
        return [(name, t.target, t.aliased_count) for name, t in count.ties(self.tree)]

    def require_native(self, what: str) -> None:
        """Refuse ``what`` (a derivation, a slip check) for a count without config symbols."""
        if self.counted_by != "paramcount":
            raise not_native(what, f"{self.model_type!r} was counted by {self.counted_by}", self.source)


def not_native(what: str, why: str, source: str | None):
    """The refusal of ``what`` for a model without config symbols, ``why`` naming its counter."""
    from .errors import ParamcountError

    return ParamcountError(
        f"{what} needs a native paramcount family; {why} "
        "(the count, --tree, --json, memory, fit, compute, compare and diff work)",
        source=source,
        field="model_type",
    )
