"""State-space mixers (Gu and Dao 2023; Dao and Gu 2024), tagged ``recurrent``: they keep a
fixed-size state per sequence (the last ``K − 1`` inputs of a causal convolution, and the SSM
state), not a KV cache. A sibling of ``blocks.py``.

- Mamba: ``in_proj`` h → 2I (x and the gate z), a depthwise causal ``conv1d`` over I channels,
  ``x_proj`` I → R + 2S (the step size's low-rank input, B and C), ``dt_proj`` R → I, the
  per-channel ``A_log`` (I, S) and ``D`` (I), ``out_proj`` I → h.
- Mamba-2: one ``in_proj`` h → I + (I + 2·G·S) + H (z, then x/B/C through the convolution,
  then one step size per head), ``dt_bias``/``A_log``/``D`` one per head, a gated RMSNorm over I.
"""

from __future__ import annotations

from typing import Any

from ..ir import Block, Sym, Tensor
from .blocks import block, linear, norm


def conv(name: str, channels: Sym, kernel: Sym, bias: bool) -> Block:
    """A depthwise nn.Conv1d (groups = channels): weight (C, 1, K)."""
    weight = Tensor("weight", (channels, 1, kernel))
    return Block(name, (weight, Tensor("bias", (channels,))) if bias else (weight,))


def mamba_mixer(h: Sym, inner: Sym, state: Sym, rank: Sym, kernel: Sym, bias: bool, conv_bias: bool) -> Block:
    return block(
        "mixer",
        Tensor("A_log", (inner, state)),
        Tensor("D", (inner,)),
        conv("conv1d", inner, kernel, conv_bias),
        linear("in_proj", h, 2 * inner, bias),
        linear("x_proj", inner, rank + 2 * state, bias=False),
        linear("dt_proj", rank, inner),
        linear("out_proj", inner, h, bias),
        kind="recurrent",
    )


def mamba2_mixer(
    h: Sym, inner: Sym, heads: Sym, groups: Sym, state: Sym, kernel: Sym, bias: bool, conv_bias: bool
) -> Block:
    conv_dim = inner + 2 * groups * state
    return block(
        "mixer",
        Tensor("dt_bias", (heads,)),
        Tensor("A_log", (heads,)),
        Tensor("D", (heads,)),
        conv("conv1d", conv_dim, kernel, conv_bias),
        linear("in_proj", h, inner + conv_dim + heads, bias),
        norm("norm", inner, bias=False),
        linear("out_proj", inner, h, bias),
        kind="recurrent",
    )


def states(layers: int, where: str, conv: int, ssm: int) -> list[Any]:
    """A Mamba layer's cache: the convolution's last K inputs per channel, in the model's dtype,
    and the SSM state, which the scan keeps in fp32 whatever the model's dtype (as a bf16 run of
    transformers' own mixers shows)."""
    from ..memory.kv_layout import state_kind

    return [state_kind(layers, conv, "conv state", where), state_kind(layers, ssm, "SSM state", where, "fp32")]
