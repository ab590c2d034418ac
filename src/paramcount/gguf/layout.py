"""The tensors a llama.cpp file holds, for families whose converter writes other tensors than
the transformers model has: the one place a plan from a config turns the model's tensors into
the file's (:func:`layout`).

llama.cpp's converter (``convert_hf_to_gguf.py``, one class per family in ``conversion/*.py``,
as vendored by llama-cpp-python 0.3.36) reads the checkpoint, not the transformers model. For
the families in ``RULES`` the file differs from the model paramcount counts, and a mix planned
from a config counts what the file holds, tensor by tensor (the hybrid and state-space
families' rules are :mod:`gguf_hybrid`'s, entered here like the others; an image+text
composite's language model follows its text family's rule, and ``TOWERS`` holds what the
mmproj class adds):

* fused experts are stacked per projection as nn.Linear holds them: ``ffn_gate_exps`` and
  ``ffn_up_exps`` (E, I, h), ``ffn_down_exps`` (E, h, I), whatever layout transformers keeps;
* a router's score-correction bias, a buffer transformers does not count, is a checkpoint
  tensor the file holds (``exp_probs_b.bias``, F32);
* MLA's ``kv_b_proj`` is split per head into ``attn_k_b`` and ``attn_v_b``
  (``DeepseekV2Model.modify_tensors``);
* multi-token-prediction layers the checkpoint appends are written as more blocks
  (``Glm4MoeModel``); tensors the converter computes are added (``rope_freqs``, Phi-3's rope
  factors); parameters it moves to metadata are dropped (Apertus' xIELU scalars).

Rows keep the names the converter hands to gguf-py's tensor mapping (the checkpoint's, or the
converter's own: ``self_attn.k_b_proj.weight``, ``mlp.experts.gate_proj.weight``), with the
file's shapes, so a test can map them through gguf-py and compare with the converter's rules.
Where the file's name gives a tensor another llama-quantize role than its module's name, or
the converter writes a tensor llama-quantize keeps in a type other than F32, the slot says so
(``Slot.file_role``, ``Slot.file_type``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..arch import family
from ..arch.blocks import block, linear, norm
from ..arch.config import Cfg
from ..ir import Block, Node, Tensor
from ..slots import Slot, slots
from . import hybrid
from . import types as gg

Step = Callable[[Slot], list[Slot]]


@dataclass(frozen=True)
class Layout:
    """The file's tensors as slots, what differs from the model (``note``), whether the plan is
    an upper bound (the note says why), and the multi-token-prediction layers it holds as its
    last blocks whose bytes the plan's note gives (``mtp``)."""

    slots: tuple[Slot, ...]
    note: str
    bound: bool = False
    mtp: int = 0
    # the decoder-layer list and first block of the multi-token-prediction layers the file
    # appends after the model's own (None: it appends none); set by layout()
    mtp_at: tuple[str, int] | None = None


Rule = Callable[[Cfg, list[Slot]], "Layout | None"]


def layout(model: Any, found: Sequence[Slot], file_type: bool = True) -> Layout | None:
    """The tensors llama.cpp's converter writes for ``model`` (None: the model's own), planned
    for a llama.cpp file type, or (``file_type`` false) for a single GGUF type: then only the
    ``SINGLE`` families' files."""
    mt = model.model_type
    if not file_type and mt not in SINGLE:
        return None
    config = dict(model.config or {})
    if mt in gg.COMPOSITES:
        out = _composite(mt, config, list(found), model.source)
    else:
        out = _family(mt, config, list(found), model.source)
    if out is None:
        return None
    return replace(out, slots=tuple(replace(s, order=i) for i, s in enumerate(out.slots)))


def _family(mt: str, config: dict, found: list[Slot], source: str | None, prefix: str = "") -> Layout | None:
    rule = RULES.get(mt)
    if rule is None:
        return None
    fam = family(mt, source)
    out = rule(Cfg(config, fam.defaults, source, fam.aliases, prefix), found)
    return None if out is None else replace(out, mtp_at=_appended(found, out.slots))


def _appended(found: Sequence[Slot], out: Sequence[Slot]) -> tuple[str, int] | None:
    """Where the file's blocks past the model's decoder layers start (its MTP layers)."""
    layered = [s for s in found if s.layers]
    if not layered:
        return None
    path, stop = layered[0].layer_path, max(s.layers.stop for s in layered)
    more = any(s.layers and s.layer_path == path and s.layers.start >= stop for s in out)
    return (path, stop) if more else None


def mtp_at(model: Any) -> tuple[str, int] | None:
    """The decoder-layer list and first block of the MTP layers a config's llama.cpp file
    appends (planned for a file type), or None."""
    found = model.derived(("slots", False), lambda: tuple(slots(model.tree, model.model_type)))
    file = model.derived(("gguf-layout", True), lambda: layout(model, found, True))
    return file.mtp_at if file else None


def _composite(mt: str, config: dict, found: list[Slot], source: str | None) -> Layout | None:
    """An image+text composite: its language model's tensors by its text family's rule (in
    place of the first of them), its towers' by ``TOWERS`` (what the mmproj class adds)."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    lm = [s for s in found if not gg.in_mmproj(mt, s)]
    own = gg.COMPOSITES[mt].text
    inner = _family(text.get("model_type", own), text, lm, source, "text_config.") if own else None
    step = TOWERS[mt](config) if mt in TOWERS else None
    if inner is None and step is None:
        return None
    inner = inner or Layout(tuple(lm), "")
    out: list[Slot] = []
    for s in found:
        if gg.in_mmproj(mt, s):
            out.extend(step(s) if step else [s])
        elif s is lm[0]:
            out.extend(inner.slots)
    return replace(inner, slots=tuple(out))


def _apply(found: Sequence[Slot], *steps: Step) -> list[Slot]:
    out = list(found)
    for step in steps:
        out = [t for s in out for t in step(s)]
    return out


def _like(s: Slot, rest: str, shape: Sequence[int], module: str) -> Slot:
    """A tensor the converter writes at ``s``'s place (same layers and copies), not a Linear's."""
    shape = tuple(int(d) for d in shape)
    return replace(s, rest=rest, shape=shape, module=module, linear=False, file_role=None, file_type=None)


# --- steps: one transformers tensor -> the file's ---------------------------------------------


def fused_experts(inout: bool = False) -> Step:
    """transformers' fused experts as the converter stacks the checkpoint's nn.Linear weights:
    ``experts.gate_up_proj`` → ``experts.gate_proj.weight`` and ``experts.up_proj.weight``,
    (E, I, h) each, and ``experts.down_proj`` → (E, h, I). ``inout``: transformers keeps them
    (E, in, out), which the converter transposes (gpt-oss, Llama 4); gpt-oss's biases split alike."""

    def step(s: Slot) -> list[Slot]:
        prefix, _, last = s.rest.rpartition(".")
        if s.kind != "experts" or s.module != "experts":
            return [s]
        if last in ("gate_up_proj", "down_proj") and len(s.shape) == 3:
            e, a, b = s.shape
            if last == "down_proj":
                return [_like(s, f"{prefix}.down_proj.weight", (e, b, a) if inout else (e, a, b), "down_proj")]
            i, h = (b // 2, a) if inout else (a // 2, b)
            return [_like(s, f"{prefix}.{p}_proj.weight", (e, i, h), f"{p}_proj") for p in ("gate", "up")]
        if last == "gate_up_proj_bias" and len(s.shape) == 2:  # gpt-oss: gate and up interleaved
            e, rows = s.shape
            return [_like(s, f"{prefix}.{p}_proj.bias", (e, rows // 2), f"{p}_proj") for p in ("gate", "up")]
        if last == "down_proj_bias":
            return [_like(s, f"{prefix}.down_proj.bias", s.shape, "down_proj")]
        return [s]

    return step


def correction_bias(on_router: bool = True) -> Step:
    """After each ``…gate.weight`` router, its ``e_score_correction_bias`` (n_expert values):
    on the router (DeepSeek-V3, GLM-4.5) or on the MoE block (MiniMax-M2). The converter's
    ``ModelBase.filter_tensors`` renames it ``e_score_correction.bias`` → ``exp_probs_b.bias``."""

    def step(s: Slot) -> list[Slot]:
        if s.kind != "router" or not s.rest.endswith(".gate.weight"):
            return [s]
        owner = s.rest[: -len(".weight")] if on_router else s.rest[: -len(".gate.weight")]
        return [s, _like(s, f"{owner}.e_score_correction_bias", s.shape[:1], owner.rpartition(".")[2])]

    return step


def mla_kv_b(c: Cfg) -> Step:
    """``DeepseekV2Model.modify_tensors``: kv_b_proj viewed as (n_head, qk_nope + v, rank) and
    split into ``k_b_proj`` (transposed: n_head × rank × qk_nope) and ``v_b_proj`` (n_head × v ×
    rank). It views by ``num_key_value_heads``, which MLA configs set to the head count."""
    nope, v, rank = (int(c.int(f)) for f in ("qk_nope_head_dim", "v_head_dim", "kv_lora_rank"))
    heads = int(c.int("num_attention_heads"))
    kv = c.raw.get("num_key_value_heads")
    if kv is not None and kv != heads:
        raise c.error(
            "num_key_value_heads",
            f"llama.cpp's converter (DeepseekV2Model) splits kv_b_proj by num_key_value_heads = {kv!r}, which must"
            f" equal num_attention_heads = {heads} for MLA; use a single GGUF type such as q4_k",
        )

    def step(s: Slot) -> list[Slot]:
        if s.module != "kv_b_proj" or s.is_bias:
            return [s]
        head = s.rest[: -len("kv_b_proj.weight")]
        return [
            _like(s, f"{head}k_b_proj.weight", (heads, rank, nope), "k_b_proj"),
            _like(s, f"{head}v_b_proj.weight", (heads, v, rank), "v_b_proj"),
        ]

    return step


def drop(*names: str) -> Step:
    """Tensors the converter does not write (their values go to the file's metadata)."""
    return lambda s: [] if s.rest.rpartition(".")[2] in names else [s]


# --- tensors the converter adds -----------------------------------------------------------------


def _after_layers(found: list[Slot], extra: list[Slot]) -> list[Slot]:
    last = max((i for i, s in enumerate(found) if s.layers), default=len(found) - 1)
    return [*found[: last + 1], *extra, *found[last + 1 :]]


def mtp_layers(c: Cfg, layer: Sequence[Node | None], own_head: bool) -> list[Slot]:
    """``num_nextn_predict_layers`` layers at ``model.layers.L…``, as the checkpoint appends them
    and the converter writes them (``blk.L…``): a decoder layer, ``eh_proj`` (2h → h), ``enorm``,
    ``hnorm``, ``shared_head.norm`` and, where the checkpoint has them, its own copies of the
    embedding and output head (``nextn.embed_tokens``, ``nextn.shared_head_head``)."""
    count = int(c.int("num_nextn_predict_layers", low=0, default=0))
    if not count:
        return []
    h, vocab, n = c.int("hidden_size"), c.int("vocab_size"), c.int("num_hidden_layers")
    head = block(
        "shared_head", norm("norm", h, bias=False), linear("head", h, vocab, False, "other") if own_head else None
    )
    embed = Block("embed_tokens", (Tensor("weight", (vocab, h)),), kind="other") if own_head else None
    nextn = (linear("eh_proj", 2 * h, h, False, "other"), norm("enorm", h, False), norm("hnorm", h, False), head, embed)
    children = tuple(m for m in (*layer, *nextn) if m is not None)
    stack = Block("layers", children, repeat=count, start=int(n), label="layer")
    return slots(Block("", (Block("model", (stack,)),)))


def nextn_layers(c: Cfg, found: Sequence[Slot], layers: Sequence[Sequence[Node | None]]) -> list[Slot]:
    """Multi-token-prediction layers numbered on after the decoder layers of ``found``, in their
    list: each the modules given (a decoder layer's, :func:`fusion`'s, a shared head)."""
    path = next(s.layer_path for s in found if s.layers)
    first = max(s.layers.stop for s in found if s.layers)
    stacks: tuple[Node, ...] = tuple(
        Block(
            path.rpartition(".")[2], tuple(m for m in layer if m is not None), repeat=1, start=first + i, label="layer"
        )
        for i, layer in enumerate(layers)
    )
    for part in reversed(path.split(".")[:-1]):
        stacks = (Block(part, stacks),)
    return slots(Block("", stacks))


def fusion(c: Cfg) -> tuple[Node, ...]:
    """An MTP layer's input fusion, as the converters name it for gguf-py's NEXTN_* tensors:
    ``eh_proj`` (2h → h), ``enorm``, ``hnorm``."""
    h = c.int("hidden_size")
    return linear("eh_proj", 2 * h, h, False, "other"), norm("enorm", h, False), norm("hnorm", h, False)


def shared_head(c: Cfg, own_head: bool) -> Block:
    """An MTP layer's ``shared_head``: its norm and, where the checkpoint has one, its head."""
    h = c.int("hidden_size")
    head = linear("head", h, c.int("vocab_size"), False, "other") if own_head else None
    return block("shared_head", norm("norm", h, False), head)


def _rope(c: Cfg) -> dict:
    rope = c.raw.get("rope_parameters") or c.raw.get("rope_scaling") or {}
    if not isinstance(rope, dict):
        return {}
    return rope.get("full_attention", rope) if isinstance(rope.get("full_attention"), dict) else rope


def _top(name: str, values: int) -> Slot:
    return Slot("", None, name, (values,), "other", 1, name.rpartition(".")[0], False)


def llama3_rope_freqs(c: Cfg) -> list[Slot]:
    """``LlamaModel.generate_extra_tensors``: with llama3 rope scaling, ``rope_freqs`` holds one
    factor per rotary pair of the head (``torch.arange(0, head_dim, 2)``), F32."""
    rope = _rope(c)
    if str(rope.get("rope_type", rope.get("type", ""))).lower() != "llama3":
        return []
    d = c.int("head_dim") if c.raw.get("head_dim") else c.int("hidden_size") // c.int("num_attention_heads")
    return [_top("rope_freqs.weight", (int(d) + 1) // 2)]


def phi3_rope_factors(c: Cfg) -> list[Slot]:
    """``Phi3MiniModel.generate_extra_tensors``: with ``long_factor`` in the rope scaling,
    ``rope_factors_long`` and ``rope_factors_short``, one value per factor given, F32."""
    rope = _rope(c)
    long, short = rope.get("long_factor"), rope.get("short_factor")
    if not long:
        return []
    if not isinstance(long, list) or not isinstance(short, list) or len(long) != len(short):
        raise c.error(
            "rope_scaling", "long_factor and short_factor must be lists of one length (llama.cpp's converter)"
        )
    # the converter raises unless there is one factor per rotary pair: int(rot_pct · n_embd) // n_head / 2
    where = "rope_parameters." if c.raw.get("rope_parameters") else "rope_scaling."
    name = where + "partial_rotary_factor" if "partial_rotary_factor" in rope else "partial_rotary_factor"
    pct = c.finite(name, rope.get("partial_rotary_factor", c.raw.get("partial_rotary_factor", 1.0)), 0, 1)
    pairs = int(pct * int(c.int("hidden_size"))) // int(c.int("num_attention_heads")) / 2
    if len(long) != pairs:
        raise c.error(
            "rope_scaling",
            f"llama.cpp's converter (Phi3MiniModel) needs {pairs:g} long and short factors (one per rotary pair),"
            f" not {len(long)}; use a single GGUF type such as q4_k",
        )
    return [_top("rope_factors_long.weight", len(long)), _top("rope_factors_short.weight", len(short))]


# --- the families ---------------------------------------------------------------------------------

_EXPERTS = "fused experts stacked per projection (ffn_gate_exps, ffn_up_exps, ffn_down_exps)"
_CORRECTION = "the routers' e_score_correction_bias (a buffer transformers does not count) as exp_probs_b, F32"
_MLA_WORDS = (
    "the file as llama.cpp's converter writes it (DeepseekV2Model): kv_b_proj split per head into attn_k_b"
    " (n_head × kv_lora_rank × qk_nope) and attn_v_b (n_head × v_head_dim × kv_lora_rank)"
)


def _deepseek2(c: Cfg, found: list[Slot], v3: bool) -> Layout:
    """conversion/deepseek.py DeepseekV2Model (DeepseekV2/V3ForCausalLM, Kimi-K2's configs):
    skip_mtp drops the checkpoint's MTP layers; ``set_gguf_parameters`` writes one KV head."""
    steps = [mla_kv_b(c), fused_experts(), *([correction_bias()] if v3 else [])]
    note = f"{_MLA_WORDS}, {_EXPERTS}" + (
        f", {_CORRECTION}; the checkpoint's multi-token-prediction layers are not written" if v3 else ""
    )
    return Layout(tuple(_apply(found, *steps)), note)


def _mtp_words(c: Cfg, own_head: bool, held: str, bound: bool) -> str:
    """What the file holds of the checkpoint's MTP layers, and why the plan is exact or a bound."""
    n, k = int(c.int("num_hidden_layers")), int(c.int("num_nextn_predict_layers", low=0, default=0))
    copies = "and own copies of the embedding and output head" if own_head else "(no copy of the embedding or head)"
    said = (
        f"; plus the checkpoint's {k} multi-token-prediction layer(s) (model.layers.{n}…, which transformers does not"
        f" build) as blocks with their eh_proj, norms {copies} ({held})"
    )
    if bound:
        return said + ": an upper bound, as a checkpoint without those copies or --no-mtp makes a smaller file"
    return said + "; a conversion with --no-mtp leaves them out"


def _dsa(c: Cfg, found: list[Slot], own_head: bool, held: str) -> Layout:
    """conversion/deepseek.py DeepseekV32Model and glm.py GlmMoeDsaModel (both DeepseekV2Model):
    skip_mtp False, block_count += num_nextn_predict_layers (unless --no-mtp); each layer's
    indexer mapped as indexer.attn_q_b, indexer.attn_k, indexer.k_norm and indexer.proj; the MTP
    layer's embed_tokens and shared_head.head written where the checkpoint holds them."""
    from ..arch import mla

    mtp = mtp_layers(c, mla.dsa_layer(c, ("sparse", True)), own_head=own_head)
    out = _apply(_after_layers(found, mtp), mla_kv_b(c), fused_experts(), correction_bias())
    note = f"{_MLA_WORDS}, {_EXPERTS}, {_CORRECTION}"
    return Layout(tuple(out), note + (_mtp_words(c, own_head, held, False) if mtp else ""))


def _glm4_moe_lite(c: Cfg, found: list[Slot]) -> Layout:
    """conversion/glm.py Glm4MoeLiteModel(DeepseekV2Model): DeepseekV2Model's file (kv_b_proj
    split, experts stacked, correction biases), with skip_mtp False and block_count +=
    num_nextn_predict_layers (unless --no-mtp); the MTP layer's embed_tokens and shared_head.head,
    which GLM-4.7-Flash's checkpoint holds (its safetensors total less transformers' count is that
    layer with both copies: tests/oracle/test_glm4_moe_lite.py), written as its blocks."""
    from ..arch import glm4_moe_lite

    mtp = mtp_layers(c, glm4_moe_lite.layer(c, "sparse"), own_head=True)
    out = _apply(_after_layers(found, mtp), mla_kv_b(c), fused_experts(), correction_bias())
    note = f"{_MLA_WORDS}, {_EXPERTS}, {_CORRECTION}"
    return Layout(tuple(out), note + (_mtp_words(c, True, "GLM-4.7-Flash's checkpoint", False) if mtp else ""))


def _glm4_moe(c: Cfg, found: list[Slot]) -> Layout:
    """conversion/glm.py Glm4MoeModel: block_count += num_nextn_predict_layers (kept unless
    --no-mtp); the MTP layer's own embed_tokens and shared_head.head are mapped when the
    checkpoint has them (GLM-4.5 and GLM-4.5-Air do, GLM-4.6 does not: vllm-project/vllm#27597),
    which one config shape cannot tell: an upper bound."""
    from ..arch import glm4_moe

    mtp = mtp_layers(c, glm4_moe.layer(c, True), own_head=True)
    out = _apply(_after_layers(found, mtp), fused_experts(), correction_bias())
    note = f"the file as llama.cpp's converter writes it (Glm4MoeModel): {_EXPERTS}, {_CORRECTION}"
    if not mtp:
        return Layout(tuple(out), note)
    held = "GLM-4.5 and GLM-4.5-Air hold them, GLM-4.6 does not"
    return Layout(tuple(out), note + _mtp_words(c, True, held, True), bound=True)


def _gpt_oss(c: Cfg, found: list[Slot]) -> Layout:
    """conversion/gpt_oss.py GptOssModel: the checkpoint's MXFP4 experts are repacked as MXFP4
    (gate_up split into gate and up), which llama-quantize dequantises and requantises to the
    mix's type (its target is never MXFP4 for these file types)."""
    note = (
        f"the file as llama.cpp's converter writes it (GptOssModel): {_EXPERTS}, their biases split alike; the"
        " converter keeps the checkpoint's MXFP4 experts, which llama-quantize requantises to the mix's types"
    )
    return Layout(tuple(_apply(found, fused_experts(inout=True))), note)


def _minimax_m2(c: Cfg, found: list[Slot]) -> Layout:
    """conversion/minimax.py MiniMaxM2Model: experts merged per projection (w1, w2, w3); the
    block's e_score_correction_bias mapped to exp_probs_b."""
    note = f"the file as llama.cpp's converter writes it (MiniMaxM2Model): {_EXPERTS}, {_CORRECTION}"
    return Layout(tuple(_apply(found, fused_experts(), correction_bias(on_router=False))), note)


def _llama4_text(c: Cfg, found: list[Slot]) -> Layout:
    """conversion/llama.py Llama4Model(LlamaModel): gate_up_proj transposed and split in halves,
    down_proj transposed; llama3 rope scaling adds rope_freqs."""
    extra = llama3_rope_freqs(c)
    note = f"the file as llama.cpp's converter writes it (Llama4Model): {_EXPERTS}" + _extra_words(extra)
    return Layout(tuple(extra + _apply(found, fused_experts(inout=True))), note)


def _phimoe(c: Cfg, found: list[Slot]) -> Layout:
    """conversion/phi.py PhiMoeModel(Phi3MiniModel): experts merged per projection (w1, w2, w3);
    long-rope factors written as tensors."""
    extra = phi3_rope_factors(c)
    note = f"the file as llama.cpp's converter writes it (PhiMoeModel): {_EXPERTS}" + _extra_words(extra)
    return Layout(tuple(extra + _apply(found, fused_experts())), note)


def _apertus(c: Cfg, found: list[Slot]) -> Layout:
    """conversion/llama.py ApertusModel(LlamaModel): each layer's xIELU alpha_p and alpha_n go to
    the file's metadata (xielu_alpha_p/…), not to tensors; llama3 rope scaling adds rope_freqs."""
    extra = llama3_rope_freqs(c)
    note = (
        "the file as llama.cpp's converter writes it (ApertusModel): the xIELU activations' alpha_p and alpha_n"
        " (2 parameters a layer) are metadata, not tensors" + _extra_words(extra)
    )
    return Layout(tuple(extra + _apply(found, drop("alpha_p", "alpha_n"))), note)


def _gemma4_text(c: Cfg, found: list[Slot]) -> Layout:
    """conversion/gemma.py Gemma4Model(Gemma3Model). ``generate_extra_tensors`` writes
    ``rope_freqs``: int(head_dim / 2) factors of the global layers' head (1 for each rotated
    pair, 1e30 for the rest of "proportional" rope), F32; ``filter_tensors`` writes each layer's
    ``layer_scalar`` buffer (``layer_output_scale``, one value, F32) and keeps the fused experts
    fused (``ffn_gate_up_exps``, which llama-quantize's tensor_get_category counts as ffn_gate:
    the name holds "ffn_gate", not "ffn_up"); ``modify_tensors`` writes the router's ``scale``
    and ``per_expert_scale`` as ``ffn_gate_inp.scale`` and ``ffn_down_exps.scale`` (1-D, F32).
    llama-quantize treats ``per_layer_token_embd`` as a token embedding (the output head's rule
    where the head is tied) and keeps ``per_layer_model_proj`` in the type the converter wrote."""
    from ..arch import gemma4_text

    rope = c.raw.get("rope_parameters") or {}  # absent: Gemma4TextConfig's default, proportional
    full = rope.get("full_attention", {}) if isinstance(rope, dict) else {}
    if full and full.get("rope_type") != "proportional":
        raise c.error(
            "rope_parameters",
            "llama.cpp's converter (Gemma4Model.generate_extra_tensors) asserts full_attention.rope_type"
            f" 'proportional', not {full.get('rope_type')!r}; use a single GGUF type such as q4_k",
        )
    head = next(d for t, _, d, _ in gemma4_text.kinds(c) if t == gemma4_text.FULL)
    kept = gg.mmproj_outtype(dict(c.raw))  # --outtype auto: the checkpoint's 2-byte type
    out = _apply(found, _layer_scalar, _gemma4_roles(kept))
    extra = [_top("rope_freqs.weight", int(head) // 2)]
    words = ["each layer's layer_scalar buffer as layer_output_scale (one F32 value a layer)"]
    if any(s.rest.endswith("experts.gate_up_proj") for s in found):
        words.append("the experts kept fused as ffn_gate_up_exps")
    if any(s.module == "per_layer_model_projection" for s in found):
        words.append(f"per_layer_model_proj kept in {kept}")
    note = f"the file as llama.cpp's converter writes it (Gemma4Model): {', '.join(words)}"
    return Layout(tuple(extra + out), note + _extra_words(extra))


def _step3p5(c: Cfg, found: list[Slot]) -> Layout:
    """conversion/step3.py Step35Model: the checkpoint's experts stacked per projection
    (``moe.gate_proj``, ``moe.up_proj``, ``moe.down_proj``), its ``moe.router_bias`` as
    exp_probs_b (F32); ``block_count += num_nextn_predict_layers`` (unless --no-mtp): the MTP
    layers the checkpoint appends at ``model.layers.{n + i}`` (transformers does not build
    them), each a Step 3.5 decoder layer of its index's type (the config's per-layer lists
    carry their entries; ``set_gguf_parameters`` pads an absent one with full attention; routed
    where ``moe_layers_enum`` lists the index) with eh_proj, enorm, hnorm and its own shared head
    (``filter_tensors``: ``transformer.shared_head.{norm,output}``); llama3 rope scaling adds
    rope_freqs of head_dim / 2 factors (``generate_extra_tensors`` pads them so)."""
    from ..arch import step3p5

    n, k = int(c.int("num_hidden_layers")), int(c.int("num_nextn_predict_layers", low=0, default=0))
    if c.raw.get("num_mtp_layers") is not None and int(c.int("num_mtp_layers", low=0)) != k:
        raise c.error(
            "num_mtp_layers",
            f"llama.cpp's converter (Step35Model) writes num_nextn_predict_layers ({k}) MTP layers, not num_mtp_layers;"
            " use a single GGUF type such as q4_k",
        )
    layers = [(*step3p5.layer(c, _step3p5_kind(c, n + i, n + k)), *fusion(c), shared_head(c, True)) for i in range(k)]
    mtp = nextn_layers(c, found, layers)
    head = _lm_head(c, found)
    out = _apply(_after_layers(found, mtp), fused_experts(), correction_bias()) + head
    rope = _rope(c)
    llama3 = str(rope.get("rope_type", rope.get("type", ""))).lower() == "llama3"
    extra = [_top("rope_freqs.weight", int(c.int("head_dim")) // 2)] if llama3 else []
    note = f"the file as llama.cpp's converter writes it (Step35Model): {_EXPERTS}, {_CORRECTION}"
    if head:
        note += ", the checkpoint's lm_head as output (counted here is Step3p7TextModel, without a head)"
    if k:
        note += (
            f"; plus the checkpoint's {k} multi-token-prediction layer(s) ({mtp[0].layer_path}.{n}…, which"
            " transformers does"
            " not build) as blocks with their eh_proj, enorm, hnorm and own shared head (norm and output), written by"
            " default (convert_hf_to_gguf.py --no-mtp leaves them out; llama.cpp loads them only for MTP drafting)"
        )
    return Layout(tuple(extra + out), note + _extra_words(extra))


MIMO_MTP = 3  # mimo.py MimoV2Model._n_nextn


def _mimo_v2_flash(c: Cfg, found: list[Slot]) -> Layout:
    """conversion/mimo.py MimoV2Model: experts merged per projection, the routers'
    e_score_correction_bias as exp_probs_b (F32); and, unless --no-mtp, ``_n_nextn = 3`` MTP
    layers ("MiMo V2-Flash, V2.5 and V2.5-Pro all ship 3 trained MTP layers under
    model.mtp.layers.{0,1,2}. The HF config does not expose the count, so it's hardcoded")
    written as blocks ``n + i``. Each, as vLLM's mimo_v2_mtp.py MiMoV2FlashMTPLayer builds it
    from the checkpoint (and ``dequant_model`` gives MTP layers the sliding layers' dims): a
    sliding-window attention layer with its sinks and a dense MLP of intermediate_size,
    input_layernorm and pre_mlp_layernorm, enorm, hnorm, eh_proj and final_layernorm
    (layer_output_norm)."""
    from ..arch import mimo_v2_flash as mimo

    h = c.int("hidden_size")
    layer = (
        mimo.self_attn(c, True),
        mimo.mlp(c, False),
        norm("input_layernorm", h, False),
        norm("pre_mlp_layernorm", h, False),
        *fusion(c),
        norm("final_layernorm", h, False),
    )
    mtp = nextn_layers(c, found, [layer] * MIMO_MTP)
    out = _apply(_after_layers(found, mtp), fused_experts(), correction_bias())
    note = (
        f"the file as llama.cpp's converter writes it (MimoV2Model): {_EXPERTS}, {_CORRECTION}; plus the"
        f" checkpoint's {MIMO_MTP} multi-token-prediction layers (model.mtp.layers.0–2, a count the converter fixes"
        " and the config does not give; transformers does not build them) as sliding-window attention layers"
        " with a dense MLP, eh_proj, enorm, hnorm and final_layernorm, written by default"
        " (convert_hf_to_gguf.py --no-mtp leaves them out; llama.cpp loads them only for MTP drafting)"
    )
    return Layout(tuple(out), note)


def _lm_head(c: Cfg, found: Sequence[Slot]) -> list[Slot]:
    """The checkpoint's ``lm_head`` where the count has no head (a backbone class) and the
    config does not tie it: the converter writes it as ``output``."""
    if any(s.kind == "output_head" for s in found) or c.bool("tie_word_embeddings", default=False):
        return []
    h, vocab = int(c.int("hidden_size")), int(c.int("vocab_size"))
    return [Slot("", None, "lm_head.weight", (vocab, h), "output_head", 1, "lm_head", True)]


def _step3p5_kind(c: Cfg, index: int, total: int) -> tuple[int, bool]:
    """(query heads, routed) of the MTP layer at ``index``, from the per-layer lists' entries."""
    from ..arch import step3p5

    types = c.raw.get("layer_types")
    kind = types[index] if isinstance(types, list) and len(types) == total else step3p5.FULL
    heads = int(step3p5.sliding_heads(c)) if kind == step3p5.SLIDING else int(c.int("num_attention_heads"))
    mlp = c.raw.get("mlp_layer_types")
    if c.raw.get("moe_layers_enum") is not None:  # the routed layers' indices, the MTP ones too
        return heads, index in step3p5.routed_layers(c)
    if mlp is None:  # by default layers 3 to num_hidden_layers - 1 route: none past them
        return heads, False
    if isinstance(mlp, list) and len(mlp) == total:
        return heads, mlp[index] == "sparse"
    raise c.error(
        "mlp_layer_types",
        f"gives no entry for the MTP layer {index}, whose feed-forward (dense or routed) llama.cpp's converter"
        " writes as the checkpoint holds it; use a single GGUF type such as q4_k",
    )


def _layer_scalar(s: Slot) -> list[Slot]:
    """Gemma4TextDecoderLayer's ``layer_scalar`` buffer (one value), after the layer's first norm."""
    if s.module != "input_layernorm" or not s.layers:
        return [s]
    return [s, _like(s, "layer_scalar", (1,), "layer_scalar")]


def _gemma4_roles(kept: str) -> Step:
    def step(s: Slot) -> list[Slot]:
        if s.rest.endswith("experts.gate_up_proj"):
            return [replace(s, file_role="ffn_gate")]
        if s.module == "embed_tokens_per_layer":
            return [replace(s, file_role="token_embd")]
        if s.module == "per_layer_model_projection":
            return [replace(s, file_type=kept)]
        return [s]

    return step


_BOUNDS = ("input_min", "input_max", "output_min", "output_max")


def _gemma4_towers(config: dict) -> Step:
    """conversion/gemma.py Gemma4VisionAudioModel: the checkpoint's buffers written beside the
    towers' parameters (each clipped linear's four bounds where the tower's config has
    use_clipped_linears, one F32 value each; the vision tower's std_bias and std_scale where it
    has standardize), the patch embedding as a conv kernel (n_embd, 3, p, p) and the audio
    depthwise convolution squeezed to 2-D, both by ``modify_tensors``."""
    vision, audio = (
        config.get(k) if isinstance(config.get(k), dict) else {} for k in ("vision_config", "audio_config")
    )
    towers = (("model.vision_tower.", vision), ("model.audio_tower.", audio))
    clipped = tuple(prefix for prefix, sub in towers if sub.get("use_clipped_linears"))

    def step(s: Slot) -> list[Slot]:
        where = s.layer_path or s.rest
        if clipped and s.rest.endswith(".linear.weight") and where.startswith(clipped):
            module = s.rest.removesuffix(".linear.weight")
            return [s, *(_like(s, f"{module}.{b}", (1,), b) for b in _BOUNDS)]
        if s.rest.endswith("patch_embedder.input_proj.weight"):
            n, k = s.shape
            side = math.isqrt(k // 3)
            return [_like(s, s.rest, (n, 3, side, side), s.module)]
        if s.rest.endswith("depthwise_conv1d.weight"):
            return [_like(s, s.rest, tuple(d for d in s.shape if d != 1), s.module)]
        if s.rest.endswith("patch_embedder.position_embedding_table") and vision.get("standardize"):
            h = s.shape[-1]
            return [s, *(_like(s, f"model.vision_tower.{b}", (h,), b) for b in ("std_bias", "std_scale"))]
        return [s]

    return step


def _rope_tables(converter: str, extra_of: Callable[[Cfg], list[Slot]]) -> Callable[[Cfg, list[Slot]], Layout | None]:
    """A converter that writes the model's tensors as they are, plus the tables its
    ``generate_extra_tensors`` computes from the rope scaling (None when it computes none)."""

    def rule(c: Cfg, found: list[Slot]) -> Layout | None:
        extra = extra_of(c)
        if not extra:
            return None
        note = f"the file as llama.cpp's converter writes it ({converter})" + _extra_words(extra)
        return Layout(tuple(extra + found), note)

    return rule


def _no_rope_freqs(converter: str, arch: str) -> Callable[[Cfg, list[Slot]], Layout | None]:
    """``converter`` inherits LlamaModel.generate_extra_tensors, but ``format_tensor_name``
    raises for ROPE_FREQS, which gguf-py's MODEL_TENSORS[``arch``] does not list: with llama3
    rope scaling the conversion fails, so no file (and no mix) exists."""

    def rule(c: Cfg, found: list[Slot]) -> Layout | None:
        if llama3_rope_freqs(c):
            raise c.error(
                "rope_scaling",
                f"llama.cpp's converter ({converter}) fails on llama3 rope scaling (it writes rope_freqs, which the"
                f" {arch} architecture does not list); use a single GGUF type such as q4_k",
            )
        return None

    return rule


def _extra_words(extra: list[Slot]) -> str:
    return (
        f"; plus {', '.join(s.rest for s in extra)} (computed by the converter from the rope scaling, F32)"
        if extra
        else ""
    )


def _hybrid(model_type: str) -> Rule:
    """gguf_hybrid's reading of the hybrid and state-space converters (its module docstring):
    their splits, added tensors (MTP layers, Kimi's correction biases) and GGUF roles."""

    def rule(c: Cfg, found: list[Slot]) -> Layout:
        out = hybrid.converted(model_type, dict(c.raw), found)
        return Layout(tuple(out), "", mtp=hybrid.mtp_layers(model_type, dict(c.raw)))

    return rule


def _nemotron_h(c: Cfg, found: list[Slot]) -> Layout:
    """conversion/nemotron.py NemotronHModel: gguf_hybrid's file, and with experts
    (``num_experts_per_tok``: nemotron_h_moe) the routers' ``e_score_correction_bias`` buffers
    as exp_probs_b (F32) and, unless --no-mtp, the checkpoint's one MTP step folded into one last
    block (``_MTP_SPECIAL_RENAMES``): ``mtp.layers.0`` (its norm and attention mixer, with
    enorm, hnorm, eh_proj) and ``mtp.layers.1`` (its norm as post_attention_layernorm, its MoE
    mixer, its final_layernorm as shared_head.norm). That block's router is written in the
    checkpoint's type, not F32: ``prepare_tensors`` matches FFN_GATE_INP against the checkpoint's
    block number (``mtp.layers.1``), not the block it writes; llama-quantize keeps it so."""
    from ..arch import nemotron_h

    base = _hybrid("nemotron_h")(c, found)
    if "num_experts_per_tok" not in c.raw:
        return base
    k = int(c.int("num_nextn_predict_layers", low=0, default=0))
    if k > 1 or (k and nemotron_h.mtp_types(c) != [nemotron_h.ATTENTION, nemotron_h.MOE]):
        raise c.error(
            "num_nextn_predict_layers",
            "llama.cpp's converter (NemotronHModel) folds one MTP step of an attention and an MoE block only"
            f" (num_nextn_predict_layers {k}, mtp_layers_block_type {nemotron_h.mtp_types(c)});"
            " use a single GGUF type such as q4_k",
        )
    h = c.int("hidden_size")
    layer = (
        *nemotron_h.layer(c, nemotron_h.ATTENTION),
        norm("post_attention_layernorm", h, False),
        nemotron_h.moe_mixer(c),
        *fusion(c),
        shared_head(c, False),
    )
    kept = gg.mmproj_outtype(dict(c.raw))
    mtp = [replace(s, file_type=kept) if s.kind == "router" else s for s in nextn_layers(c, found, [layer] * k)]
    out = _apply([*base.slots, *mtp], correction_bias())
    note = f"the file as llama.cpp's converter writes it (NemotronHModel, nemotron_h_moe): {_CORRECTION}"
    if k:
        note += (
            f"; plus the checkpoint's MTP step (mtp.*, which transformers does not build) as block"
            f" {max(s.layers.stop for s in found if s.layers)}: its attention and MoE blocks with eh_proj, enorm,"
            f" hnorm and a shared-head norm, its router kept in {kept}, written by default (convert_hf_to_gguf.py"
            " --no-mtp leaves it out; llama.cpp loads it only for MTP drafting)"
        )
    return Layout(tuple(out), note)


RULES: dict[str, Rule] = {
    "deepseek_v2": lambda c, found: _deepseek2(c, found, v3=False),
    "deepseek_v3": lambda c, found: _deepseek2(c, found, v3=True),
    "deepseek_v32": lambda c, found: _dsa(c, found, True, "laid out as DeepSeek-V3's checkpoint"),
    "glm_moe_dsa": lambda c, found: _dsa(c, found, False, "GLM-5's checkpoint"),
    "glm4_moe": _glm4_moe,
    "glm4_moe_lite": _glm4_moe_lite,
    "gpt_oss": _gpt_oss,
    "minimax_m2": _minimax_m2,
    "llama4_text": _llama4_text,
    "phimoe": _phimoe,
    "apertus": _apertus,
    # The model's tensors as they are, plus what generate_extra_tensors computes from the rope
    # scaling: llama.py LlamaModel (registered for LlamaForCausalLM, MistralForCausalLM and
    # MixtralForCausalLM) and SmolLM3Model(LlamaModel), exaone.py Exaone4Model (llama3: rope_freqs);
    # phi.py Phi3MiniModel (long_factor: rope_factors_long and rope_factors_short).
    "llama": _rope_tables("LlamaModel", llama3_rope_freqs),
    "mistral": _rope_tables("LlamaModel", llama3_rope_freqs),
    "mixtral": _rope_tables("LlamaModel", llama3_rope_freqs),
    "smollm3": _rope_tables("SmolLM3Model", llama3_rope_freqs),
    "exaone4": _rope_tables("Exaone4Model", llama3_rope_freqs),
    "phi3": _rope_tables("Phi3MiniModel", phi3_rope_factors),
    # granite.py GraniteModel(LlamaModel) and GraniteMoeModel(GraniteModel): gguf-py's GRANITE and
    # GRANITE_MOE tensor lists lack ROPE_FREQS. mistral3.py Ministral3Model(LlamaModel) asserts
    # yarn rope for ministral3 configs, so it never writes rope_freqs.
    "granite": _no_rope_freqs("GraniteModel", "GRANITE"),
    "granitemoe": _no_rope_freqs("GraniteMoeModel", "GRANITE_MOE"),
    "gemma4_text": _gemma4_text,
    "step3p5": _step3p5,
    "mimo_v2_flash": _mimo_v2_flash,
    # the hybrid and state-space families (mamba, mamba2, jamba, falcon_h1, granitemoehybrid,
    # nemotron_h, lfm2, qwen3_next, qwen3_5_text, qwen3_5_moe_text, kimi_linear)
    **{model_type: _hybrid(model_type) for model_type in hybrid.ARCHS},
    "nemotron_h": _nemotron_h,
}
# Families whose file's tensors a single GGUF type (q4_k, not a file type) is planned on: none.
# A single type is the what-if of every quantisable tensor of the model in that type (the
# refusals of a file type point to it because it needs no converter), for every family alike.
SINGLE: frozenset[str] = frozenset()
# What an image+text composite's mmproj class writes beside the towers' tensors (a step per slot)
TOWERS: dict[str, Callable[[dict], Step]] = {"gemma4": _gemma4_towers}

__all__ = ["RULES", "SINGLE", "TOWERS", "Layout", "layout", "mtp_at"]
