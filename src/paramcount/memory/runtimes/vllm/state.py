"""vLLM's pages for Mamba-style state layers and for the attention layers beside them.

Modelled on vLLM 0.33.0 (:data:`VLLM_VERSION`; the functions cited are that release's). A state
layer (a Mamba-1 or Mamba-2 mixer, a short convolution, a gated DeltaNet, a Kimi delta
attention layer) keeps, per sequence, the arrays its mixer's ``get_state_shape`` names
(``MambaStateShapeCalculator``, vllm/model_executor/layers/mamba/mamba_utils.py) in the dtypes
``MambaStateDtypeCalculator`` gives them: the conv state in the model's dtype, the SSM or
recurrent state in ``mamba_ssm_cache_dtype`` (the model's dtype unless the model's config hook
or the mixer says otherwise). Their bytes are one ``MambaSpec`` page
(vllm/v1/kv_cache_interface.py ``MambaSpec.page_size_bytes``), whatever the context.

In a hybrid model every layer's page must be one size. vLLM raises the attention block size
until an attention page holds a state page and pads the state page to it
(``Platform._align_hybrid_block_size``, vllm/platforms/interface.py, run from
``update_block_size_for_backend``). Prefix caching is on by default for hybrid models
(``ModelConfig.is_prefix_caching_supported``), which sets ``mamba_cache_mode = "align"``
(vllm/model_executor/models/config.py ``MambaModelConfig.verify_and_update_config``): a
sequence then holds two state blocks per state group, plus one for a mixer that exports
prefill checkpoints (``MambaSpec.max_memory_usage_bytes``). An attention-free model (Mamba,
Mamba-2) has no prefix caching by default: one state block per sequence and layer group.

Each mixer's weights on a rank follow its vLLM layer (:class:`Shard`): which tensors its
column- and row-parallel projections and weight loaders split, how a single Mamba-2 group is
copied to every rank, which parameters vLLM creates in float32, and which layers it builds
without a quantisation config (kept in the model's dtype).

The kernel block sizes are those of an SM90 GPU (H100, H200), where vLLM's default attention
backends are FLASH_ATTN and FLASH_ATTN_MLA (any multiple of 16 tokens) and gated DeltaNet
prefills with FlashInfer (:data:`GDN_CHECKPOINT_ALIGNMENT`); other GPUs pick other kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ....errors import ParamcountError

VLLM_VERSION = "0.33.0"

# FLASH_ATTN.get_supported_kernel_block_sizes and FlashAttnMLABackend's on SM90: MultipleOf(16)
# (vllm/v1/attention/backends/flash_attn.py, mla/flashattn_mla.py).
KERNEL_BLOCK = 16
# _align_hybrid_block_size: "if model_config.use_mla: kernel_block_alignment_size = max(…, 128)".
MLA_BLOCK = 128
# vllm/v1/attention/backends/gdn_attn.py FLASHINFER_GDN_CHECKPOINT_ALIGNMENT: the tokens a gated
# DeltaNet layer exports prefill checkpoints at when FlashInfer prefills it (SM90, align mode).
GDN_CHECKPOINT_ALIGNMENT = 64
# vllm/model_executor/layers/mamba/kda_checkpoint.py kda_prefill_checkpoint_alignment (FlashKDA).
KDA_CHECKPOINT_ALIGNMENT = 16

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
SRC_STATE = (
    f"vLLM {VLLM_VERSION}: vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator, "
    "MambaStateDtypeCalculator; vllm/v1/kv_cache_interface.py MambaSpec.page_size_bytes, "
    "MambaSpec.max_memory_usage_bytes"
)
SRC_STATE_SHARD = (
    f"vLLM {VLLM_VERSION}: vllm/model_executor/layers/mamba/mamba_mixer.py MambaMixer, mamba_mixer2.py MambaMixer2 "
    "(mamba_v2_sharded_weight_loader, Mixer2RMSNormGated), short_conv.py ShortConv, "
    "gdn/qwen_gdn_linear_attn.py QwenGatedDeltaNetAttention, gdn/kimi_gdn_linear_attn.py KimiGatedDeltaNetAttention"
)
SRC_ALIGN = (
    f"vLLM {VLLM_VERSION}: vllm/platforms/interface.py Platform._align_hybrid_block_size; "
    "vllm/v1/core/kv_cache_planning.py _get_kv_cache_groups_uniform_page_size, get_kv_cache_config_from_groups"
)


@dataclass(frozen=True)
class Array:
    """One state array of a layer on one rank: its name, shape and bytes per element."""

    name: str
    shape: tuple[int, ...]
    itemsize: int

    @property
    def bytes(self) -> int:
        return math.prod(self.shape) * self.itemsize


@dataclass(frozen=True)
class Shard:
    """One of a state mixer's checkpoint tensors as a rank holds it: ``share`` of its elements,
    each of ``itemsize`` bytes, or as the plan stores linear weights where ``itemsize`` is None
    (a layer vLLM builds with the quantisation config). A layer built without one keeps the
    model's dtype; a parameter vLLM creates as torch.float32 keeps 4 bytes whatever the model's."""

    share: Fraction
    itemsize: int | None = None


@dataclass(frozen=True)
class StateSpec:
    """A state layer's ``MambaSpec`` on one rank.

    ``checkpoint_blocks`` is the spec's ``num_prefill_checkpoint_blocks`` (a block more per
    sequence in align mode); ``alignment`` the mixer's ``get_prefill_checkpoint_alignment``
    (the attention block becomes a multiple of it in align mode); ``hybrid`` whether attention
    layers sit beside the state layers (vLLM's ``is_hybrid``, which turns prefix caching on);
    ``shards`` how a rank holds each of the mixer's checkpoint tensors (:class:`Shard`), by the
    name's end (``mamba.conv1d.weight``).
    """

    mixer: str
    arrays: tuple[Array, ...]
    checkpoint_blocks: int = 0
    alignment: int | None = None
    hybrid: bool = True
    shards: tuple[tuple[str, Shard], ...] = ()  # the mixer's tensors by name (prefixed by the family)

    @property
    def bytes(self) -> int:
        return sum(a.bytes for a in self.arrays)

    @property
    def blocks(self) -> int:
        """Blocks one sequence holds per state group: ``MambaSpec.max_memory_usage_bytes`` over
        the page (align mode: 2 + checkpoint blocks; otherwise 1; no speculative tokens)."""
        return 2 + self.checkpoint_blocks if self.hybrid else 1

    def describe(self) -> str:
        parts = [f"{a.name} {a.shape} × {a.itemsize} B" for a in self.arrays]
        return f"{self.mixer}: " + " + ".join(parts) + f" = {self.bytes:,} B"


def divide(field: str, whole: int, tp: int) -> int:
    """vllm/distributed/utils.py ``divide``: vLLM asserts the split is even."""
    if whole % tp:
        raise ParamcountError(
            f"--tp {tp}: vLLM splits the state's {whole:,} {field} evenly over the ranks, and {tp} does not divide it",
            field="--tp",
        )
    return whole // tp


def _field(c: Any, name: str) -> int:
    return int(c.int(name))


# ---- the mixers: MambaStateShapeCalculator ---------------------------------------------------


def mamba1(tp: int, b: int, inner: int, state: int, kernel: int) -> StateSpec:
    """``mamba1_state_shape``: conv (K − 1, I/TP), SSM (I/TP, S); MambaMixer exports no checkpoint.

    Weights (vllm/model_executor/layers/mamba/mamba_mixer.py MambaMixer): in_proj, conv1d and
    dt_proj column-parallel, x_proj and out_proj row-parallel, A (I/TP, S) and D sharded by
    their weight_loader; every layer built without a quantisation config (the model's dtype),
    A created as float32; the dt/B/C RMSNorms whole."""
    i = divide("intermediate channels", inner, tp)
    part, whole = Fraction(1, tp), Fraction(1)
    split = ("in_proj.weight", "in_proj.bias", "conv1d.weight", "conv1d.bias", "x_proj.weight")
    split += ("dt_proj.weight", "dt_proj.bias", "D", "out_proj.weight")
    norms = tuple(f"{n}_layernorm.weight" for n in ("dt", "b", "c"))
    shards = (
        *((n, Shard(part, b)) for n in split),
        ("A_log", Shard(part, 4)),
        *((n, Shard(whole, b)) for n in ("out_proj.bias", *norms)),
    )
    arrays = (Array("conv", (kernel - 1, i), b), Array("SSM", (i, state), b))
    return StateSpec("Mamba-1", arrays, shards=shards)


def mamba2(tp: int, b: int, ssm_b: int, dims: tuple[int, int, int, int, int, int], hybrid: bool = True) -> StateSpec:
    """``mamba2_state_shape`` for dims (I, groups, heads, head dim, S, K): conv (K − 1, (I + 2·G·S)/TP)
    with G padded to TP when one group is shared, SSM (heads/TP, head dim, S). MambaMixer2's
    spec holds one prefill-checkpoint block (``MambaMixer2.get_kv_cache_spec``)."""
    inner, groups, heads, head_dim, state, kernel = dims
    if groups % tp and groups != 1:
        raise ParamcountError(
            f"--tp {tp}: vLLM's MambaMixer2 needs the {groups} groups to divide over the ranks (or one group)",
            field="--tp",
        )
    padded = groups + (0 if groups % tp == 0 else tp - groups)  # extra_groups_for_head_shards
    conv = divide("conv channels", inner + 2 * padded * state, tp)
    ssm = (divide("heads", heads, tp), head_dim, state)
    arrays = (Array("conv", (kernel - 1, conv), b), Array("SSM", ssm, ssm_b))
    shards = mamba2_shards(tp, b, inner, groups, padded, heads, state)
    return StateSpec("Mamba-2", arrays, checkpoint_blocks=1, hybrid=hybrid, shards=shards)


def mamba2_shards(
    tp: int, b: int, inner: int, groups: int, padded: int, heads: int, state: int
) -> tuple[tuple[str, Shard], ...]:
    """MambaMixer2's weights on a rank (vllm/model_executor/layers/mamba/mamba_mixer2.py): in_proj
    (z, x, B, C, dt) and conv1d (x, B, C) column-parallel over the groups padded to the ranks
    (one group is copied to every rank by mamba_v2_sharded_weight_loader), so a rank holds
    (I + 2·G'·S)/TP conv rows of the file's I + 2·G·S; conv1d built without a quantisation
    config; A (heads/TP) float32; D, dt_bias and the gated norm (Mixer2RMSNormGated, I/TP)
    sharded in the model's dtype; out_proj row-parallel."""
    part, whole = Fraction(1, tp), Fraction(1)
    conv = Fraction(inner + 2 * padded * state, tp * (inner + 2 * groups * state))
    proj = Fraction(2 * inner + 2 * padded * state + heads, tp * (2 * inner + 2 * groups * state + heads))
    return (
        ("in_proj.weight", Shard(proj)),
        ("in_proj.bias", Shard(proj)),
        ("conv1d.weight", Shard(conv, b)),
        ("conv1d.bias", Shard(conv, b)),
        ("A_log", Shard(part, 4)),
        *((n, Shard(part, b)) for n in ("D", "dt_bias", "norm.weight")),
        ("out_proj.weight", Shard(part)),
        ("out_proj.bias", Shard(whole)),
    )


def short_conv(tp: int, b: int, dim: int, cache: int) -> StateSpec:
    """``short_conv_state_shape``: conv (L_cache − 1, conv_dim/TP); ShortConv exports no checkpoint.
    Weights (short_conv.py ShortConv): conv column-parallel without a quantisation config,
    in_proj column-parallel, out_proj row-parallel."""
    part = Fraction(1, tp)
    shards = (
        *((n, Shard(part, b)) for n in ("conv.weight", "conv.bias")),
        *((n, Shard(part)) for n in ("in_proj.weight", "in_proj.bias", "out_proj.weight")),
        ("out_proj.bias", Shard(Fraction(1))),
    )
    return StateSpec("short conv", (Array("conv", (cache - 1, divide("conv channels", dim, tp)), b),), shards=shards)


def gated_delta_net(tp: int, b: int, ssm_b: int, dims: tuple[int, int, int, int, int]) -> StateSpec:
    """``gated_delta_net_state_shape`` for (key heads, value heads, d_k, d_v, K): conv
    (K − 1, (2·nk·d_k + nv·d_v)/TP), recurrent (nv/TP, d_v, d_k). With FlashInfer's GDN prefill
    (SM90) in align mode the layer exports prefill checkpoints every 64 tokens and holds a block
    for them (``QwenGatedDeltaNetAttention.get_kv_cache_spec``, ``get_prefill_checkpoint_alignment``)."""
    nk, nv, dk, dv, kernel = dims
    divide("key heads", nk, tp)
    conv = divide("conv channels", 2 * nk * dk + nv * dv, tp)
    recurrent = (divide("value heads", nv, tp), dv, dk)
    arrays = (Array("conv", (kernel - 1, conv), b), Array("recurrent", recurrent, ssm_b))
    return StateSpec(
        "gated DeltaNet", arrays, checkpoint_blocks=1, alignment=GDN_CHECKPOINT_ALIGNMENT, shards=gdn_shards(tp, b)
    )


def gdn_shards(tp: int, b: int) -> tuple[tuple[str, Shard], ...]:
    """QwenGatedDeltaNetAttention's weights on a rank (gdn/qwen_gdn_linear_attn.py): conv1d
    column-parallel without a quantisation config; the in_proj_qkvz and in_proj_ba projections
    (Qwen3.5's in_proj_qkv, in_proj_z, in_proj_b, in_proj_a load into them) column-parallel;
    A_log (value heads/TP) float32, dt_bias sharded; the norm (RMSNormGated over one head) whole;
    out_proj row-parallel."""
    part = Fraction(1, tp)
    projections = ("in_proj_qkvz", "in_proj_ba", "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj")
    return (
        ("conv1d.weight", Shard(part, b)),
        *((f"{n}.weight", Shard(part)) for n in projections),
        ("A_log", Shard(part, 4)),
        ("dt_bias", Shard(part, b)),
        ("norm.weight", Shard(Fraction(1), b)),
    )


def kda(tp: int, b: int, heads: int, head_dim: int, kernel: int, flash: bool) -> StateSpec:
    """``kda_state_shape``: conv (K − 1, 3·heads·d/TP), recurrent (heads/TP, d, d) in fp32
    (``kda_state_dtype`` with mamba_ssm_cache_dtype auto). A layer that prefills with FlashKDA
    holds a block for its prefill checkpoints (vllm/models/kimi_k3/nvidia/kda.py
    KimiK3DeltaAttention.get_kv_cache_spec); one that prefills with Triton does not."""
    conv = divide("conv channels", 3 * heads * head_dim, tp)
    recurrent = (divide("heads", heads, tp), head_dim, head_dim)
    arrays = (Array("conv", (kernel - 1, conv), b), Array("recurrent", recurrent, 4))
    return StateSpec("Kimi delta attention", arrays, checkpoint_blocks=int(flash))


def kda_shards(tp: int, b: int) -> tuple[tuple[str, Shard], ...]:
    """KimiGatedDeltaNetAttention's weights on a rank (gdn/kimi_gdn_linear_attn.py): q, k, v and
    b load into in_proj_qkvgfab, column-parallel, whose f_a shard every rank holds whole
    (_KimiGDNMergedColumnParallelLinear); f_b_proj and g_b_proj column-parallel, g_a_proj
    replicated; conv1d (params_dtype float32), dt_bias and A_log float32 and sharded; o_norm
    (FusedRMSNormGated over one head) whole; o_proj row-parallel."""
    part, whole = Fraction(1, tp), Fraction(1)
    split = ("q_proj", "k_proj", "v_proj", "b_proj", "forget_gate.f_b_proj", "g_b_proj", "o_proj")
    return (
        *((f"{n}.weight", Shard(part)) for n in split),
        *((f"{n}.weight", Shard(whole)) for n in ("forget_gate.f_a_proj", "g_a_proj")),
        *((n, Shard(part, 4)) for n in ("conv1d.weight", "forget_gate.dt_bias", "forget_gate.A_log")),
        ("o_norm.weight", Shard(whole, b)),
    )


# ---- the families: each model's get_mamba_state_shape_from_config -----------------------------

MODEL_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}  # the model dtype (the plan's compute dtype)


def ssm_dtype(c: Any, field: str | None, default: int | None, b: int) -> int:
    """Bytes per SSM-state element: the config's ``field`` where the model's config hook copies
    it into ``mamba_ssm_cache_dtype``, else ``default`` (NemotronH: float32), else the model's."""
    value = c.raw.get(field) if field else None
    if value is None:
        return default or b
    if value == "auto":
        return b
    if value not in DTYPE_BYTES:
        raise c.error(str(field), f"vLLM takes float32, bfloat16 or float16 here, got {value!r}")
    return DTYPE_BYTES[value]


def under(module: str, spec: StateSpec, *more: tuple[str, Shard]) -> StateSpec:
    """``spec`` with its tensors named as the decoder layer holds the mixer (``module.name``),
    and ``more`` of the family's own tensors beside it."""
    shards = tuple((f"{module}.{name}", shard) for name, shard in spec.shards)
    return replace(spec, shards=shards + more)


def _jamba(c: Any, tp: int, dtype: str) -> StateSpec:
    """JambaForCausalLM: mamba1_state_shape(mamba_expand × h, mamba_d_state, mamba_d_conv)."""
    inner = _field(c, "mamba_expand") * _field(c, "hidden_size")
    return under("mamba", mamba1(tp, MODEL_BYTES[dtype], inner, _field(c, "mamba_d_state"), _field(c, "mamba_d_conv")))


def _mamba(c: Any, tp: int, dtype: str) -> StateSpec:
    """MambaForCausalLM: mamba1_state_shape(intermediate_size, state_size, conv_kernel). vLLM reads
    the config transformers builds, whose MambaConfig sets intermediate_size to expand × h
    whatever the file says (configuration_mamba.py __post_init__), as the count does. Attention-free."""
    inner = _field(c, "expand") * _field(c, "hidden_size")
    spec = mamba1(tp, MODEL_BYTES[dtype], inner, _field(c, "state_size"), _field(c, "conv_kernel"))
    return under("mixer", replace(spec, hybrid=False))


def _mamba2(c: Any, tp: int, dtype: str) -> StateSpec:
    """Mamba2ForCausalLM: expand × h, n_groups, num_heads, head_dim, state_size, conv_kernel.
    Attention-free."""
    fields = ("n_groups", "num_heads", "head_dim", "state_size", "conv_kernel")
    dims = (_field(c, "expand") * _field(c, "hidden_size"), *(_field(c, f) for f in fields))
    b = MODEL_BYTES[dtype]
    return under("mixer", mamba2(tp, b, b, dims, hybrid=False))  # type: ignore[arg-type]


def _mamba_head(c: Any, inner: int, heads: int) -> int:
    """``mamba_d_head``: "auto" is I / mamba_n_heads, as the transformers config sets it."""
    return inner // heads if c.get("mamba_d_head") == "auto" else _field(c, "mamba_d_head")


def _mamba2_fields(c: Any, tp: int, dtype: str, inner: int) -> StateSpec:
    """GraniteMoeHybrid and FalconH1: mamba_n_groups, mamba_n_heads, mamba_d_head,
    mamba_d_state, mamba_d_conv over the mixer's width ``inner``."""
    heads = _field(c, "mamba_n_heads")
    dims = (inner, _field(c, "mamba_n_groups"), heads, _mamba_head(c, inner, heads))
    b = MODEL_BYTES[dtype]
    return mamba2(tp, b, b, (*dims, _field(c, "mamba_d_state"), _field(c, "mamba_d_conv")))


def _granite(c: Any, tp: int, dtype: str) -> StateSpec:
    """GraniteMoeHybridForCausalLM: a mixer mamba_expand × h wide; its shared MLP's input_linear
    column-parallel and output_linear row-parallel (granitemoeshared.py GraniteMoeSharedMLP)."""
    spec = _mamba2_fields(c, tp, dtype, _field(c, "mamba_expand") * _field(c, "hidden_size"))
    mlp = tuple((f"shared_mlp.{n}_linear.weight", Shard(Fraction(1, tp))) for n in ("input", "output"))
    return under("mamba", spec, *mlp)


def _falcon_h1(c: Any, tp: int, dtype: str) -> StateSpec:
    """FalconH1ForCausalLM: a mixer mamba_d_ssm wide (mamba_expand × h where the file sets it null)."""
    from ....arch import falcon_h1

    return under("mamba", _mamba2_fields(c, tp, dtype, int(falcon_h1.inner(c))))


def _nemotron_h(c: Any, tp: int, dtype: str) -> StateSpec:
    """NemotronHForCausalLM: mamba_num_heads × mamba_head_dim, n_groups, ssm_state_size,
    conv_kernel; the SSM state in the config's mamba_ssm_cache_dtype, float32 when it has none
    (NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype)."""
    from ....arch.nemotron_h import legacy

    heads, head_dim = _field(c, "mamba_num_heads"), _field(c, "mamba_head_dim")
    dims = (heads * head_dim, _field(c, legacy(c, "n_groups")), heads, head_dim, _field(c, "ssm_state_size"))
    b = MODEL_BYTES[dtype]
    spec = mamba2(tp, b, ssm_dtype(c, "mamba_ssm_cache_dtype", 4, b), (*dims, _field(c, legacy(c, "conv_kernel"))))
    return under("mixer", spec)


def _lfm2(c: Any, tp: int, dtype: str) -> StateSpec:
    """Lfm2ForCausalLM: short_conv_state_shape(conv_dim, conv_L_cache); vLLM reads conv_dim,
    which the transformers config does not fill in."""
    dim = c.raw.get("conv_dim")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise c.error("conv_dim", "vLLM's LFM2 reads conv_dim, which this config lacks")
    return under("conv", short_conv(tp, MODEL_BYTES[dtype], dim, _field(c, "conv_L_cache")))


def _gdn(field: str | None) -> Any:
    """Qwen3NextForCausalLM, Qwen3_5(Moe)ForCausalLM: the linear_* fields; Qwen3.5's config hook
    copies the text config's mamba_ssm_dtype into mamba_ssm_cache_dtype (``field``)."""

    def read(c: Any, tp: int, dtype: str) -> StateSpec:
        from ....arch.linear_attention import deltanet_dims

        nk, nv, dk, dv, kernel = (int(x) for x in deltanet_dims(c))
        b = MODEL_BYTES[dtype]
        return under("linear_attn", gated_delta_net(tp, b, ssm_dtype(c, field, None, b), (nk, nv, dk, dv, kernel)))

    return read


def _kimi_linear(c: Any, tp: int, dtype: str) -> StateSpec:
    """KimiLinearForCausalLM (vllm/models/kimi_k3/nvidia/model.py): linear_attn_config's
    num_heads, head_dim, short_conv_kernel_size (vLLM's own KimiLinearConfig). Its KDA layers are
    KimiGatedDeltaNetAttention (Triton prefill, no checkpoint block) unless use_full_rank_gate
    makes them KimiK3DeltaAttention, which prefills with FlashKDA on SM90 where the gate is
    bounded (gate_lower_bound), d = 128 and the model bf16 (is_flashkda_supported)."""
    own = c.raw.get("linear_attn_config")
    keys = ("num_heads", "head_dim", "short_conv_kernel_size")
    if not isinstance(own, dict) or not all(isinstance(own.get(k), int) and own[k] > 0 for k in keys):
        raise c.error("linear_attn_config", f"vLLM reads {', '.join(keys)} from it; this config lacks one")
    heads, d, kernel = (int(own[k]) for k in keys)
    full_rank = bool(own.get("use_full_rank_gate", False))
    flash = full_rank and own.get("gate_lower_bound") is not None and d == 128 and dtype == "bf16"
    spec = kda(tp, MODEL_BYTES[dtype], heads, d, kernel, flash)
    # KimiK3DeltaAttention (the full-rank gate) pads its projections per rank: its split is not modelled
    return spec if full_rank else under("self_attn", replace(spec, shards=kda_shards(tp, MODEL_BYTES[dtype])))


FAMILIES = {
    "jamba": _jamba,
    "mamba": _mamba,
    "mamba2": _mamba2,
    "granitemoehybrid": _granite,
    "falcon_h1": _falcon_h1,
    "nemotron_h": _nemotron_h,
    "lfm2": _lfm2,
    "qwen3_next": _gdn(None),
    "qwen3_5_text": _gdn("mamba_ssm_dtype"),
    "qwen3_5_moe_text": _gdn("mamba_ssm_dtype"),
    "kimi_linear": _kimi_linear,
}
COMPOSITES = {"qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text"}  # the text config's family
REFUSED = {
    "minimax": "vLLM serves MiniMax-Text-01 (MiniMaxText01ForCausalLM) only up to 0.23.0; the plan models "
    f"vLLM {VLLM_VERSION}",
}


def state_spec(model: Any, tp: int, dtype: str, scheme: str = "bf16") -> StateSpec:
    """The ``MambaSpec`` of ``model``'s state layers on one of ``tp`` ranks for a model dtype
    (bf16, fp16, fp32) and weight scheme; a one-line error for a family whose state is not paged here."""
    from ...context.kv_layout import cfg_of

    c, model_type = cfg_of(model), model.model_type
    if model_type in COMPOSITES:
        from ....arch.qwen3_vl import text_cfg

        model_type = COMPOSITES[model_type]
        c = text_cfg(c, model_type)
    read = FAMILIES.get(model_type)
    if read is None:
        why = REFUSED.get(model_type, f"its state layers ({model_type}) are not modelled")
        why = f"the vLLM plan cannot page this model: {why} (plan it with --runtime transformers)"
        raise ParamcountError(why, field="--runtime")
    spec = read(c, tp, dtype)
    if model_type in ("qwen3_5_text", "qwen3_5_moe_text") and scheme.startswith(MARLIN_REPLICATED):
        spec = replace(spec, shards=_ba_whole(spec.shards))
    return spec


# QwenGatedDeltaNetAttention.maybe_disable_tp: on CUDA, Qwen3.5's separate in_proj_b and in_proj_a
# stay whole on every rank under AWQ, GPTQ (and INC) quantisation (Marlin's 64-row minimum).
MARLIN_REPLICATED = ("awq", "gptq")


def _ba_whole(shards: tuple[tuple[str, Shard], ...]) -> tuple[tuple[str, Shard], ...]:
    ends = ("in_proj_b.weight", "in_proj_a.weight", "in_proj_ba.weight")
    return tuple((n, Shard(Fraction(1), sh.itemsize) if n.endswith(ends) else sh) for n, sh in shards)


# ---- the attention block that holds a state page ---------------------------------------------


def attention_block(spec: StateSpec, per_token: int, block: int, mla: bool) -> int:
    """``_align_hybrid_block_size``: the smallest multiple of the kernel alignment (16 tokens, at
    least ``block``; 128 for MLA; in align mode also a multiple of the mixers' checkpoint
    alignment) whose attention page of ``per_token`` bytes a token holds the state page; then a
    multiple of every backend's smallest kernel block (16)."""
    k = max(KERNEL_BLOCK, block)
    if mla:
        k = max(k, MLA_BLOCK)
    if spec.hybrid:  # mamba_cache_mode "align"
        k = math.lcm(k, spec.alignment or 1)
    size = k * -(-spec.bytes // (k * per_token))
    size = KERNEL_BLOCK * -(-size // KERNEL_BLOCK)
    return max(block, size)
