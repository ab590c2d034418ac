"""State-space mixers (Gu and Dao 2023; Dao and Gu 2024), tagged ``recurrent``: they keep a
fixed-size state per sequence (the last ``K`` inputs of a causal convolution, and the SSM
state), not a KV cache. A sibling of ``blocks.py``, shared by Mamba, Mamba-2, Jamba, Falcon-H1,
Nemotron-H and Granite 4.0 (GraniteMoeHybrid).

- Mamba: ``in_proj`` h → 2I (x and the gate z), a depthwise causal ``conv1d`` over I channels,
  ``x_proj`` I → R + 2S (the step size's low-rank input, B and C), ``dt_proj`` R → I, the
  per-channel ``A_log`` (I, S) and ``D`` (I), ``out_proj`` I → h. Jamba adds RMSNorms over the
  step-size input, B and C.
- Mamba-2: one ``in_proj`` h → I + (I + 2·G·S) + H (z, then x/B/C through the convolution,
  then one step size per head), ``dt_bias``/``A_log``/``D`` one per head, a gated RMSNorm over I
  (optional in Falcon-H1).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from ..ir import Block, Sym, Tensor
from .blocks import block, linear, norm
from .config import Cfg

MAMBA, ATTENTION = "linear_attention", "full_attention"
LEGACY_TYPES = {"mamba": MAMBA, "attention": ATTENTION}  # transformers' remap_legacy_layer_types


def conv(name: str, channels: Sym, kernel: Sym, bias: bool) -> Block:
    """A depthwise nn.Conv1d (groups = channels): weight (C, 1, K)."""
    weight = Tensor("weight", (channels, 1, kernel))
    return Block(name, (weight, Tensor("bias", (channels,))) if bias else (weight,))


def mamba_mixer(
    h: Sym,
    inner: Sym,
    state: Sym,
    rank: Sym,
    kernel: Sym,
    bias: bool,
    conv_bias: bool,
    name: str = "mixer",
    dt_norms: bool = False,
) -> Block:
    """The Mamba (v1) mixer; ``dt_norms`` adds Jamba's RMSNorms over the step-size input (R),
    B and C (S each)."""
    norms = (
        (
            norm("dt_layernorm", rank, bias=False),
            norm("b_layernorm", state, bias=False),
            norm("c_layernorm", state, bias=False),
        )
        if dt_norms
        else ()
    )
    return block(
        name,
        Tensor("A_log", (inner, state)),
        Tensor("D", (inner,)),
        conv("conv1d", inner, kernel, conv_bias),
        linear("in_proj", h, 2 * inner, bias),
        linear("x_proj", inner, rank + 2 * state, bias=False),
        linear("dt_proj", rank, inner),
        linear("out_proj", inner, h, bias),
        *norms,
        kind="recurrent",
    )


def mamba2_mixer(
    h: Sym,
    inner: Sym,
    heads: Sym,
    groups: Sym,
    state: Sym,
    kernel: Sym,
    bias: bool,
    conv_bias: bool,
    name: str = "mixer",
    out_bias: bool | None = None,
    gated_norm: bool = True,
) -> Block:
    """The Mamba-2 mixer. ``out_bias`` differs from ``bias`` in Falcon-H1 (``projectors_bias``);
    Falcon-H1 also leaves the gated RMSNorm out unless ``mamba_rms_norm``."""
    conv_dim = inner + 2 * groups * state
    return block(
        name,
        Tensor("dt_bias", (heads,)),
        Tensor("A_log", (heads,)),
        Tensor("D", (heads,)),
        conv("conv1d", conv_dim, kernel, conv_bias),
        linear("in_proj", h, inner + conv_dim + heads, bias),
        norm("norm", inner, bias=False) if gated_norm else None,
        linear("out_proj", inner, h, bias if out_bias is None else out_bias),
        kind="recurrent",
    )


def check_mamba2(c: Cfg, inner: Sym, heads_field: str, groups_field: str, head_dim: Sym | None = None) -> None:
    """The reshapes Mamba-2 mixers do: I splits into heads (of ``head_dim`` when given) and
    into ``n_groups`` groups, and groups divide the heads."""
    heads, groups = c.int(heads_field), c.int(groups_field)
    if head_dim is not None and heads * head_dim != inner:
        raise c.error(
            heads_field,
            f"{int(heads)} heads × head dim {int(head_dim)} ({int(heads * head_dim):,}) must equal the mixer's "
            f"inner width {int(inner):,}",
        )
    if inner % heads:
        raise c.error(heads_field, f"{int(heads)} does not divide the mixer's inner width {int(inner):,}")
    if inner % groups or heads % groups:
        raise c.error(groups_field, f"{int(groups)} groups must divide the mixer's width and its {int(heads)} heads")


def states(layers: int, where: str, conv: int, ssm: int) -> list[Any]:
    """A Mamba layer's cache: the convolution's last K inputs per channel, in the model's dtype,
    and the SSM state, which the scan keeps in fp32 whatever the model's dtype (as a bf16 run of
    transformers' own mixers shows)."""
    from .cache import state_kind

    return [state_kind(layers, conv, "conv state", where), state_kind(layers, ssm, "SSM state", where, "fp32")]


def mamba2_states(layers: int, where: str, inner: int, groups: int, state: int, kernel: int) -> list[Any]:
    """A Mamba-2 layer's cache: K inputs of the I + 2·G·S conv channels, and the SSM state of
    H heads × head dim × S = I × S elements."""
    return states(layers, where, (inner + 2 * groups * state) * kernel, inner * state)


STATE_NOTE = "Mamba layers keep a conv state and an SSM state per sequence, whatever the context"


def layer_types(c: Cfg, field: str, count: int, allowed: Sequence[str]) -> list[str]:
    """A file's per-layer type list, legacy names (``mamba``, ``attention``) mapped as transformers
    maps them, checked to hold ``count`` entries of the ``allowed`` types."""
    given = c.get(field)
    if not isinstance(given, list) or len(given) != count:
        got = f"{len(given)} entries" if isinstance(given, list) else f"{given!r:.80}"
        raise c.error(field, f"expected a list of {count} layer types, got {got}")
    types = [LEGACY_TYPES.get(t, t) if isinstance(t, str) else t for t in given]
    unknown = sorted({f"{t!r:.40}" for t in types if t not in allowed})
    if unknown:
        named = ", ".join(unknown[:3]) + (", …" if len(unknown) > 3 else "")
        raise c.error(field, f"unknown layer type(s) {named}; expected one of {', '.join(allowed)}")
    return types


def hybrid_cache(c: Cfg, field: str, kinds: Sequence[Hashable], cached: dict[Hashable, Any]) -> list[Any]:
    """Cache kinds of a hybrid stack: the per-layer ``kinds`` grouped, each group's kinds from
    ``cached[kind](layers, where)`` (a kind not in ``cached`` keeps nothing: an MLP-only layer)."""
    from .cache import typed_groups

    names = [str(k) for k in kinds]
    by_name = {str(k): k for k in kinds}
    out: list[Any] = []
    for name, (n, where) in typed_groups(c, field, names, len(names)).items():
        build = cached.get(by_name[name])
        out += build(n, where) if build else []
    return out
