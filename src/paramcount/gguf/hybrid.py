"""The GGUF files of hybrid and state-space families, as llama.cpp's converter writes them.

Read in llama.cpp's converter (``convert_hf_to_gguf.py`` and ``conversion/*.py``, as vendored
by llama-cpp-python 0.3.36), gguf-py's ``tensor_mapping.py`` and ``src/llama-quant.cpp``:
mamba.py ``MambaModel`` (mamba) and ``Mamba2Model`` (mamba2), jamba.py ``JambaModel``,
falcon_h1.py ``FalconH1Model(Mamba2Model)``, granite.py ``GraniteHybridModel``
(granitemoehybrid), nemotron.py ``NemotronHModel`` (nemotron_h), lfm2.py ``LFM2Model``, qwen.py
``Qwen3NextModel``, ``Qwen3_5TextModel`` and ``Qwen3_5MoeTextModel``, kimi_linear.py
``KimiLinearModel``. Entered through :mod:`gguf_layout` (its ``RULES``, the one place a
config's tensors become the file's; Nemotron-H's MoE variant adds its buffers and MTP step there).

* The state-space tensors keep their element counts. ``A_log`` (written as ``ssm_a``, −exp A),
  ``D`` (``ssm_d``) and ``dt_bias`` (``ssm_dt.bias``) are named without ``.weight``: F32
  (``prepare_tensors``), never quantised (``tensor_allows_quantization`` wants ``weight``).
  The convolutions, squeezed to 2-D (``ssm_conv1d``, Kimi's ``ssm_conv1d_q/k/v``, LFM2's
  ``shortconv.conv``), are F32 and left alone too; the gated norm, reshaped per group
  (``ssm_norm``), is a norm. The projections (``ssm_in``, ``ssm_x``, ``ssm_dt``, ``ssm_out``,
  ``ssm_ba``, ``ssm_beta``, ``ssm_alpha``, ``ssm_f_a`` …, ``attn_gate``,
  ``shortconv.in_proj``/``out_proj``) are quantised in the file type's default type: their
  names fall in ``tensor_get_category``'s "other".
* Roles that are not the transformers module's: GraniteHybrid's shared MLP (``input_linear``
  split into ``ffn_gate``/``ffn_up``, ``output_linear`` as ``ffn_down``); Qwen3.5's ``in_proj_qkv`` and Qwen3-Next's
  q/k/v rows are ``attn_qkv`` (attn_v-like: counted and typed with the attn_v tensors); Kimi's
  KDA ``q/k/v/o_proj`` are ``attn_q/k/v/output``.
* Tensors the converter splits: Qwen3-Next's ``in_proj_qkvz`` into ``attn_qkv`` (q, k, v
  rows) and ``attn_gate`` (z rows); Kimi's ``kv_b_proj`` into ``attn_k_b`` (per head,
  transposed: rows of ``qk_nope_head_dim``) and ``attn_v_b``, and its convolution into q, k and
  v. Each part is a slot of its own, named ``…weight[part]``.
* Tensors the counted model lacks: Qwen3-Next's and Qwen3.5's multi-token-prediction layers
  (``mtp.*``, which transformers skips on load), written by default as the last blocks
  (``_QwenMtpMixin``: ``mtp.layers.i`` → block ``num_hidden_layers + i``, ``mtp.fc`` →
  ``nextn.eh_proj``, its norms → ``nextn.enorm``/``hnorm``/``shared_head_norm``); and Kimi's
  ``e_score_correction_bias`` buffers (``exp_probs_b.bias``, F32).
* The rules read ``n_gqa`` of layer 0 (``llama_hparams::n_gqa``: 0 where its KV heads are 0).
  Jamba, GraniteHybrid, Nemotron-H, LFM2 and Kimi write ``head_count_kv`` per layer, 0 for the
  recurrent layers; Mamba and Mamba-2 write ``head_count`` 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..arch import family
from ..arch.config import MAX_DIM
from ..errors import ParamcountError, brief
from ..records import replace
from ..slots import Slot

# transformers model_type -> llama.cpp architecture
ARCHS = {
    "mamba": "mamba", "mamba2": "mamba2", "jamba": "jamba", "falcon_h1": "falcon-h1",
    "granitemoehybrid": "granitehybrid", "nemotron_h": "nemotron_h", "lfm2": "lfm2",
    "qwen3_next": "qwen3next", "qwen3_5_text": "qwen35", "qwen3_5_moe_text": "qwen35moe",
    "kimi_linear": "kimi-linear",
}  # fmt: skip
F32_PARAMS = frozenset({"A_log", "D", "dt_bias"})  # ssm_a, ssm_d, ssm_dt.bias: no ".weight"
CONVS = frozenset({"conv1d", "conv"})  # ssm_conv1d*, shortconv.conv
_KV_PER_LAYER = frozenset({"jamba", "granitehybrid", "nemotron_h", "lfm2", "kimi-linear"})
_MTP = frozenset({"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"})  # _QwenMtpMixin
# The GGUF role of a tensor whose transformers module says otherwise (by module[part])
_ROLES = {
    # GraniteMoeModel.modify_tensors: shared_mlp.input_linear split into ffn_gate/ffn_up(_shexp),
    # output_linear → ffn_down(_shexp)
    "granitemoehybrid": {"input_linear": "ffn_up", "output_linear": "ffn_down"},
    "qwen3_next": {"in_proj_qkvz[qkv]": "attn_qkv", "in_proj_qkvz[z]": "other"},
    "qwen3_5_text": {"in_proj_qkv": "attn_qkv"},
    "qwen3_5_moe_text": {"in_proj_qkv": "attn_qkv"},
    "kimi_linear": {
        "q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
        "kv_b_proj[k_b]": "other", "kv_b_proj[v_b]": "other",
    },
}  # fmt: skip


def never_quantised(s: Slot) -> bool:
    """A state-space parameter the converter writes in F32 and llama-quantize leaves alone."""
    return s.role in F32_PARAMS or (s.kind == "recurrent" and s.module in CONVS)


def role(model_type: str, s: Slot) -> str | None:
    """The GGUF role of ``s`` where the converter's name for it is not its module's."""
    table = _ROLES.get(model_type)
    if table is None:
        return None
    tag = s.rest[s.rest.rfind("[") :] if s.rest.endswith("]") else ""
    return table.get(s.module + tag)


def n_gqa(arch: str, found: Sequence[Slot], heads: int, kv: int) -> int:
    """``llama_hparams::n_gqa()``: layer 0's heads per KV head, 0 where layer 0 has no KV heads."""
    if arch in ("mamba", "mamba2"):  # head_count 0 (MambaModel, Mamba2Model.set_gguf_parameters)
        return 0
    if arch in _KV_PER_LAYER and not any(s.kind == "attention" and s.layers and 0 in s.layers for s in found):
        return 0
    if arch == "kimi-linear":  # set_gguf_parameters: MLA as MQA, one KV head
        kv = 1
    return heads // max(kv, 1)


def converted(model_type: str, config: dict, found: Sequence[Slot]) -> list[Slot]:
    """The tensors of the GGUF file the converter writes, as slots in model order: ``found``
    with the converter's splits and the tensors it adds, each with its GGUF role where the
    converter's name for it is not its module's (``Slot.file_role``)."""
    out: list[Slot] = []
    convs = {s.layers.start: s for s in found if s.kind == "recurrent" and s.module == "conv1d" and s.layers}
    for s in found:
        out.extend(_split(model_type, config, s, convs))
        if model_type == "kimi_linear" and s.kind == "router" and s.module == "gate":
            out.append(_score_bias(s))
    out.extend(_mtp(model_type, config, out))
    return [replace(s, order=i, file_role=role(model_type, s)) for i, s in enumerate(out)]


def mtp_layers(model_type: str, config: dict) -> int:
    """The checkpoint's MTP layers: ``mtp_num_hidden_layers`` (Qwen3-Next's config has none; its
    published checkpoints hold one, as vLLM reads it)."""
    if model_type not in _MTP:
        return 0
    n = config.get("mtp_num_hidden_layers", 1)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ParamcountError(f"mtp_num_hidden_layers must be a whole number, not {n!r}", field="mtp_num_hidden_layers")
    return n


def is_mtp(s: Slot, n_layer: int) -> bool:
    """One of the MTP tensors ``converted`` adds (past the ``n_layer`` decoder layers)."""
    return s.rest.startswith("mtp.") or (s.layers is not None and s.layers.start >= n_layer)


def _split(model_type: str, config: dict, s: Slot, convs: dict[int, Slot]) -> list[Slot]:
    if model_type == "qwen3_next" and s.module == "in_proj_qkvz" and s.layers:
        # Qwen3NextModel.modify_tensors: the q, k, v rows (the convolution's channels,
        # 2·key + value) → attn_qkv, the z rows (value) → attn_gate
        qkv, width = convs[s.layers.start].shape[0], s.shape[-1]
        return [_part(s, "qkv", (qkv, width)), _part(s, "z", (s.shape[0] - qkv, width))]
    if model_type == "kimi_linear" and s.module == "kv_b_proj":
        return _kv_b(config, s)
    if model_type == "kimi_linear" and s.kind == "recurrent" and s.module == "conv1d":
        third = s.shape[0] // 3  # q_conv1d, k_conv1d, v_conv1d in the checkpoint
        return [_part(s, p, (third, *s.shape[1:])) for p in ("q", "k", "v")]
    return [s]


def _part(s: Slot, tag: str, shape: tuple[int, ...], linear: bool | None = None) -> Slot:
    return replace(s, rest=f"{s.rest}[{tag}]", shape=shape, linear=s.linear if linear is None else linear)


def _whole(config: dict, field: str) -> int:
    """A config field the converter reads that the count does not (the count's own are checked
    there): a whole number in the count's range, else one line naming it."""
    value = config.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIM:
        raise ParamcountError(f"expected a whole number in 1..{MAX_DIM:,}, got {brief(value)}", field=field)
    return value


def _kv_b(config: dict, s: Slot) -> list[Slot]:
    """KimiLinearModel.modify_tensors: kv_b_proj viewed (heads, nope + v, kv_lora_rank), split,
    k_b transposed: ``attn_k_b`` (heads, kv_lora_rank, nope), ``attn_v_b`` (heads, v, kv_lora_rank)."""
    c = {**family("kimi_linear").defaults, **config}
    heads = c.get("num_key_value_heads", 32)  # transformers' KimiLinearConfig: 32, None → the heads
    field = "num_attention_heads" if heads is None else "num_key_value_heads"
    heads, lora = _whole(c, field), s.shape[-1]
    nope, v = _whole(c, "qk_nope_head_dim"), _whole(c, "v_head_dim")
    if heads * (nope + v) != s.shape[0]:
        raise ParamcountError(
            f"kv_b_proj has {s.shape[0]} rows, not num_key_value_heads × (qk_nope_head_dim + v_head_dim)"
            " as llama.cpp's converter splits it",
            field="num_key_value_heads",
        )
    return [_part(s, "k_b", (heads, lora, nope), False), _part(s, "v_b", (heads, v, lora), False)]


def _score_bias(gate: Slot) -> Slot:
    """Kimi's router bias (a buffer, not counted), written as ``exp_probs_b.bias`` in F32."""
    rest = gate.rest.rsplit(".", 1)[0] + ".e_score_correction_bias"
    return replace(gate, rest=rest, shape=(gate.shape[0],), linear=False)


def _mtp(model_type: str, config: dict, found: Sequence[Slot]) -> list[Slot]:
    """The MTP layers as the converter writes them: each a full-attention decoder layer (the
    checkpoint's ``mtp.layers.i``, the same tensors as the model's last full-attention layer)
    numbered on after the decoder layers, then ``mtp.fc`` (2h → h) and three norms."""
    n_mtp = mtp_layers(model_type, config)
    if not n_mtp:
        return []
    n = max(s.layers.stop for s in found if s.layers)
    full = max((i for s in found if s.kind == "attention" and s.layers for i in s.layers), default=None)
    if full is None:  # full_attention_interval past the depth, or layer_types of linear attention only
        raise ParamcountError(
            "llama.cpp's converter writes the MTP layer as a copy of the last full-attention layer, and no "
            "layer has full attention (full_attention_interval, layer_types)",
            field="full_attention_interval",
        )
    layer = [s for s in found if s.layers and full in s.layers]
    out = [
        replace(s, layers=range(n + j, n + j + 1), copies=s.per_layer, tie=None) for j in range(n_mtp) for s in layer
    ]
    h = next(s.shape[-1] for s in found if s.kind == "embeddings")
    fc = Slot("", None, "mtp.fc.weight", (h, 2 * h), "other", 1, "fc", True)
    norms = [Slot("", None, f"mtp.{m}.weight", (h,), "norms", 1, m, False) for m in _MTP_NORMS]
    return [*out, fc, *norms]


_MTP_NORMS = ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm")
