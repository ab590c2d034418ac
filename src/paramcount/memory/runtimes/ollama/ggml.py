"""A GGUF file as Ollama v0.12.10 reads it for its memory estimate (``fs/ggml/ggml.go``).

Ollama sizes tensors with a table of its own (``TensorType.TypeSize`` / ``BlockSize``), groups
them by layer (``Tensors.GroupLayers``: ``blk.N``, ``mm.N``, ``v.blk.N``, ``output``, …) and reads
the ``{arch}.*`` keys with defaults of its own (``KV.HeadCount``, ``EmbeddingHeadCountK``, …).
This module repeats those rules, and ``GGML.GraphSize``: the KV cache per layer and the graph
("compute") sizes that llm/memory.go fits against a GPU. Everything here is integer arithmetic in
Go's order (``a*b*9/16`` is ``(a*b*9)//16``), so the figures are Ollama's to the byte.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ....errors import ParamcountError
from ....gguf.reader import GGUFFile
from .versions import Release, release

NEWEST = release()

VERSION = "v0.12.10"  # the last release whose llm/memory.go estimated layers (80d34260)
GGML_GO = f"ollama {VERSION} fs/ggml/ggml.go"

# fs/ggml/ggml.go TensorType.BlockSize and TypeSize, by ggml type id (fs/ggml/type.go's iota):
# (elements per block, bytes per block). Ids not listed fall to ``default`` there: block 256,
# 0 bytes (TQ1_0, TQ2_0 and the repacked Q4_0_4_4 family), a size Ollama gets wrong: refused.
TYPE_SIZES: dict[int, tuple[int, int]] = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 4: (32, 17), 6: (32, 22), 7: (32, 24), 8: (32, 34),
    9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
    15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18),
    21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8),
    28: (1, 8), 29: (256, 56), 30: (1, 2), 39: (32, 17),
}  # fmt: skip

# fs/ggml/ggml.go KV.OllamaEngineRequired: these load on Ollama's own engine, whose layout comes
# from allocating the model on the device (llm/server.go ollamaServer.Load), not from this estimate.
OLLAMA_ENGINE = frozenset({
    "gemma3", "gemma3n", "gptoss", "gpt-oss", "llama4", "mistral3", "mllama", "qwen25vl", "qwen3", "qwen3moe",
    "qwen3vl", "qwen3vlmoe",
})  # fmt: skip
# fs/ggml/ggml.go GGML.FlashAttention: architectures with flash attention on by default
FLASH_DEFAULT = frozenset({"gemma3", "gptoss", "gpt-oss", "qwen3", "qwen3moe", "qwen3vl", "qwen3vlmoe"})
# kvCacheBytesPerElement as a fraction (q4_0 is 0.5 in Go's float64, truncated after the product)
KV_BYTES = {"q8_0": (1, 1), "q4_0": (1, 2), "f32": (4, 1), "f16": (2, 1), "": (2, 1)}


@dataclass(frozen=True)
class Graph:
    """``GGML.GraphSize``'s answer: KV bytes per block, and the graph for partial and full offload."""

    kv: tuple[int, ...]
    partial: int
    full: int
    formula: str  # which case of GraphSize gave the graph


class OllamaGGUF:
    """The keys, tensors and layer groups of one GGUF header, read with Ollama's rules."""

    def __init__(self, info: GGUFFile):
        self.info, self.source = info, info.path
        self.types, self.release, self.mxfp4 = TYPE_SIZES, VERSION, "39"  # v0.12.10's table (:meth:`at`)
        self.arch = info.architecture or "unknown"  # KV.Architecture's default
        self.groups: dict[str, dict[str, Any]] = {}
        for t in info.tensors:
            group, rest = group_of(t.name)
            self.groups.setdefault(group, {})[rest] = t

    # ---- KV (fs/ggml/ggml.go KV.*) -------------------------------------------------------------

    def value(self, key: str) -> Any:
        """``keyValue``: ``general.`` and ``tokenizer.`` keys as they are, others under the arch."""
        if not key.startswith(("general.", "tokenizer.")):
            key = f"{self.arch}.{key}"
        return self.info.metadata.get(key)

    def uint(self, key: str, default: int = 0) -> int:
        """``KV.Uint``: a uint32 value, else the default (a converter writes these as uint32)."""
        v = self.value(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 32 else default

    def uints(self, key: str, default: int) -> list[int]:
        """``UintOrArrayValueAsArray``: one number, or an array of them (int32 read as uint32)."""
        v = self.value(key)
        if isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            return [x % (1 << 32) for x in v]
        return [self.uint(key, default)] if isinstance(v, int) else [default]

    def per_layer(self, key: str) -> list[int]:
        """``KV.HeadCount`` / ``HeadCountKV``: one value per block, the last default filling in."""
        values, n = self.uints(key, 1), self.blocks
        fill = values[0] if len(values) == 1 else 1
        return [values[i] if i < len(values) else fill for i in range(n)]

    @property
    def blocks(self) -> int:
        return self.uint("block_count")

    @property
    def embedding(self) -> int:
        return self.uint("embedding_length")

    @property
    def head_dim(self) -> int:
        """``EmbeddingHeadCountMax``: embedding_length over the fewest heads."""
        heads = min(self.uints("attention.head_count", 1))
        return self.embedding // heads if heads > 0 else 0

    @property
    def head_dims(self) -> tuple[int, int]:
        """``EmbeddingHeadCountK`` and ``V``: key_length and value_length, else :attr:`head_dim`."""
        d = self.head_dim
        return self.uint("attention.key_length", d), self.uint("attention.value_length", d)

    @property
    def vocab(self) -> int:
        """``len(tokenizer.ggml.tokens)``: GraphSize reads it unguarded (a file without it panics)."""
        v = self.info.metadata.get("tokenizer.ggml.tokens")
        if isinstance(v, tuple) and v[:1] == ("array",):
            return v[2]
        if isinstance(v, list):
            return len(v)
        raise ParamcountError(
            "Ollama's estimate reads the vocabulary's size and the file has none", source=self.source,
            field="tokenizer.ggml.tokens",
        )  # fmt: skip

    # ---- tensors -------------------------------------------------------------------------------

    def at(self, rel: Release) -> OllamaGGUF:
        """This file as release ``rel`` sizes its tensors. MXFP4 came with gpt-oss (v0.11.0) as ggml
        type 4 (formerly Q4_2), the type Ollama's own gpt-oss files use; ggml's id 39 joined it in
        v0.11.5 (``case TensorTypeMXFP4, 39``), at 129 bytes per 256 until v0.11.8 (``BlockSize``
        did not list it: its default, 256). Before v0.11.5 a type-39 tensor is sized as its
        type-4 twin (17 bytes per 32), and :attr:`mxfp4_as_4` says so; before v0.11.0, refused.
        BF16 (type 30) is sized from v0.3.14 (not in v0.5.12); a type the release sizes as 0
        bytes is refused (:meth:`size`)."""
        other = copy.copy(self)
        other.release, other.mxfp4 = rel.name, rel.mxfp4
        unknown = (() if rel.mxfp4 else (4, 39)) + (() if rel.bf16 else (30,))
        other.types = {k: v for k, v in TYPE_SIZES.items() if k not in unknown}
        if rel.mxfp4 == "39/256":  # TypeSize 1 + BlockSize/2, BlockSize's default 256: 39 not in its list
            other.types[39] = (256, 129)
        return other

    @property
    def mxfp4_as_4(self) -> bool:
        """A ggml type-39 (MXFP4) tensor counted as Ollama's type 4, for a release before v0.11.5."""
        return self.mxfp4 == "4" and any(t.type_id == 39 for t in self.info.tensors)

    def size(self, t: Any) -> int:
        """``Tensor.Size``: elements × TypeSize / BlockSize, in Ollama's table."""
        if t.type_id not in self.types:
            raise ParamcountError(
                f"Ollama {self.release} sizes tensor type {t.type_name} as 0 bytes (fs/ggml/ggml.go TypeSize); "
                "its estimate for this file is not modelled", source=self.source, field=t.name,
            )  # fmt: skip
        block, nbytes = self.types[t.type_id]
        return t.elements * nbytes // block

    def layer(self, name: str) -> int | None:
        """``Layer.Size`` of one group (``blk.3``, ``output``), None when the file has none."""
        group = self.groups.get(name)
        return None if group is None else sum(self.size(t) for t in group.values())

    def tensor(self, group: str, rest: str) -> Any:
        return self.groups.get(group, {}).get(rest)

    @property
    def pooling(self) -> bool:
        """Whether ``{arch}.pooling_type`` is present: an embedding model (no flash attention)."""
        return f"{self.arch}.pooling_type" in self.info.metadata

    def supports_flash(self) -> bool:
        """``GGML.SupportsFlashAttention``: not an embedding model, not gemma2, K and V heads equal."""
        k, v = self.head_dims
        return not self.pooling and self.arch != "gemma2" and k != 0 and k == v


def group_of(name: str) -> tuple[str, str]:
    """``Tensors.GroupLayers``' key and the rest of the name: ``blk.3.attn_q.weight`` is
    (``blk.3``, ``attn_q.weight``), ``v.blk.0.ffn_up.weight`` (``v.blk.0``, ``ffn_up.weight``)."""
    parts = name.split(".")
    index = next((i for i, p in enumerate(parts) if p in ("blk", "mm")), -1)
    if index != -1 and len(parts) > index + 2:
        parts = [".".join(parts[: index + 2]), *parts[index + 2 :]]
    return parts[0], ".".join(parts[1:])


def kv_bytes(
    f: OllamaGGUF, context: int, kv_type: str, rel: Release = NEWEST, batch: int = 0, parallel: int = 1
) -> tuple[int, ...]:
    """GraphSize's default cache: ``context·(K+V head dims)·kv heads`` at the cache type's bytes per
    element for an attention layer; a recurrent layer (no heads) its conv and SSM state in f32
    (v0.11.11 on; before it every layer took the most KV heads). Gemma 3's local layers (v0.6.3
    on) and gpt-oss's even layers (v0.11.0 on) hold a window of ``num_parallel·window + batch``."""
    dk, dv = f.head_dims
    num, den = KV_BYTES[kv_type]
    heads, kv_heads = f.per_layer("attention.head_count"), f.per_layer("attention.head_count_kv")
    if not rel.recurrent:  # one figure for every layer: HeadCountKV(), HeadCountKVMax() from v0.9.3
        kv_heads = [max(kv_heads)] * len(kv_heads)
        heads = [1] * len(heads)
    recurrent = _recurrent(f)
    out = []
    for h, hkv in zip(heads, kv_heads, strict=True):
        out.append(context * (dk + dv) * hkv * num // den if h > 0 and hkv > 0 else recurrent)
    return _windows(f, tuple(out), rel, (num, den), batch * parallel and (batch, parallel, context))


def _windows(f: OllamaGGUF, kv: tuple[int, ...], rel: Release, bpe: tuple[int, int], at: Any) -> tuple[int, ...]:
    """The sliding-window layers of the Ollama engine's models, while the estimate sized them
    (before v0.11.11): Gemma 3's local layers (v0.6.3 on) and gpt-oss's even ones (v0.11.0 on)
    hold ``num_parallel·window + batch`` cells. ``at``: (batch, parallel, context), or falsy."""
    if not at:
        return kv
    (batch, parallel, context), (num, den) = at, bpe
    cell = sum(f.head_dims) * max(f.per_layer("attention.head_count_kv"))
    if f.arch == "gemma3" and rel.gemma3_sliding:  # every 6th layer global (gemma3GlobalCacheCount)
        window = parallel * f.uint("attention.sliding_window") + batch
        return tuple(kv[i] if (i + 1) % 6 == 0 else window * cell * num // den for i in range(len(kv)))
    if f.arch in ("gptoss", "gpt-oss") and rel.gptoss:  # bytes per cell first, then × cells (Go's order)
        return tuple(cell * num // den * ((parallel * 4096 + batch) if i % 2 == 0 else context) for i in range(len(kv)))
    return kv


def _recurrent(f: OllamaGGUF) -> int:
    conv, state = f.uint("ssm.conv_kernel"), f.uint("ssm.state_size")
    inner, groups = f.uint("ssm.inner_size"), f.uint("ssm.group_count")
    r = (conv - 1) * (inner + 2 * groups * state) if conv > 0 else 0
    return (r + state * inner) * 4


@dataclass(frozen=True)
class Dims:
    """GraphSize's local names: batch, context (× parallel), embedding, heads, vocab, …"""

    batch: int
    context: int
    embedding: int
    heads: int  # HeadCountMax
    heads_kv: int  # HeadCountKVMax
    vocab: int
    head_dim: int  # EmbeddingHeadCountMax
    dk: int  # EmbeddingHeadCountK


def dims(f: OllamaGGUF, context: int, batch: int) -> Dims:
    heads, kv = max(f.uints("attention.head_count", 1)), max(f.uints("attention.head_count_kv", 1))
    return Dims(batch, context, f.embedding, heads, kv, f.vocab, f.head_dim, f.head_dims[0])


def graph_size(
    f: OllamaGGUF, context: int, batch: int, parallel: int, kv_type: str, rel: Release = NEWEST, flash: bool = False
) -> Graph:
    """``GGML.GraphSize(context, batch, numParallel, kvCacheType, …)`` as release ``rel`` has it
    (the Ollama engine's architectures are refused before where it no longer estimated them);
    0 and 0 for one without a case (estimateGPULayers then takes :func:`gqa_share`)."""
    context *= parallel
    d = dims(f, context, batch)
    kv = kv_bytes(f, context, kv_type, rel, batch, parallel)
    if f.arch in _gptoss_names(rel):
        partial, full, said = _gptoss(f, d, sum(kv_bytes(f, context, kv_type, rel)), rel, parallel, flash)
        return Graph(kv, partial, full, said)
    rule = ARCH_GRAPHS.get(f.arch) if f.arch in rel.graphs else None
    partial, full, said = rule(f, d) if rule else (0, 0, "")
    if f.arch == "llama" and not rel.llama_full_vocab and f.tensor("blk.0", "ffn_gate.0.weight") is None:
        full = 4 * d.batch * (1 + 4 * d.embedding + d.context * (1 + d.heads))  # before v0.3.10: no vocab term
    return Graph(kv, partial, full, said or "none in GraphSize for this architecture")


def _gptoss_names(rel: Release) -> tuple[str, ...]:
    """GraphSize's gptoss case: from v0.11.0, named ``gpt-oss`` too from v0.11.5."""
    return ("gptoss", "gpt-oss") if rel.gptoss in ("2/6", "flash") else ("gptoss",) if rel.gptoss else ()


def _gptoss(f: OllamaGGUF, d: Dims, kv_total: int, rel: Release, parallel: int, flash: bool) -> tuple[int, int, str]:
    """The gptoss case, on the default cache's total (every layer at the whole context, summed
    before the case recomputes the windows): ``4·heads/kv heads·total/6`` (v0.11.0: partial twice
    that, v0.11.3: the same); from v0.11.5 no full figure (memory.go takes the partial) and a
    partial of ``2·…/6``, from v0.11.8 ``(4·num_parallel + context/1024 + 110) MiB`` with flash
    attention."""
    gqa = max(f.uints("attention.head_count", 1)), max(min(f.uints("attention.head_count_kv", 1)), 1)
    said = f"the gptoss case of GraphSize ({rel.name})"
    if rel.gptoss in ("2x", "1x"):
        full = 4 * gqa[0] // gqa[1] * kv_total // 6
        return (2 * full if rel.gptoss == "2x" else full), full, said
    if flash and rel.gptoss == "flash":
        return (4 * parallel + (d.context >> 10) + 110) << 20, 0, said + ", flash attention"
    return 2 * gqa[0] // gqa[1] * kv_total // 6, 0, said


def gqa_share(f: OllamaGGUF, kv_total: int) -> int:
    """estimateGPULayers' graph where GraphSize has none: HeadCountMax / HeadCountKVMin (at least
    1) times the whole KV cache, over 6."""
    gqa = max(f.uints("attention.head_count", 1)) // max(min(f.uints("attention.head_count_kv", 1)), 1)
    return gqa * kv_total // 6


# ---- GraphSize's cases, one function per architecture -------------------------------------------


def _llama(f: OllamaGGUF, d: Dims) -> tuple[int, int, str]:
    b, c, e, h, hkv, v, hd = d.batch, d.context, d.embedding, d.heads, d.heads_kv, d.vocab, d.head_dim
    full = max(4 * b * (1 + 4 * e + c * (1 + h)), 4 * b * (e + v))
    partial = 4 * b * e + max(
        4 * b * (1 + e + max(c, e)) + e * e * 9 // 16 + 4 * c * (b * h + hd * hkv),
        4 * b * (e + v) + e * v * 105 // 128,
    )
    exps, gate0 = f.tensor("blk.0", "ffn_gate_exps.weight"), f.tensor("blk.0", "ffn_gate.0.weight")
    if exps is not None:  # "mixtral 8x22b": experts in one tensor
        ff = f.uint("feed_forward_length")
        partial = max(
            3 * f.size(exps) + 4 * b * (2 * ff + hkv + e + c + hd * hkv),
            4 * (c * b * h + c * hd * hkv + b * 1024 + hd * hkv * b),
        )
        return partial, full, "the llama case of GraphSize, experts in one tensor (ffn_gate_exps)"
    if gate0 is not None:  # "mixtral 8x7b": one tensor per expert; Go's Shape[1] is ne[1]
        w1 = gate0.shape[-2] if len(gate0.shape) >= 2 else 1
        full = 4 * b * (2 + 3 * e + c * (1 + h) + 2 * hkv + w1)
        partial = max(
            4 * b * (3 + hd * hkv + e + c * (1 + h) + w1) + (e * e + 3 * e * hkv * w1) * 9 // 16,
            4 * b * (1 + 2 * e + c * (1 + h)) + e * (6 * c * hkv // h + e * 9 // 16),
        )
        return partial, full, "the llama case of GraphSize, one tensor per expert (ffn_gate.0)"
    return partial, full, "the llama case of GraphSize"


def _gemma(f: OllamaGGUF, d: Dims) -> tuple[int, int, str]:
    b, c, e, h, v, dk = d.batch, d.context, d.embedding, d.heads, d.vocab, d.dk
    full = max(4 * b * (e + v), 4 * b * (2 + c + c * h + 2 * e + 2 * dk * h))
    partial = max(
        4 * e * b + e * v * 105 // 128 + 4 * v * b,
        4 * b * (2 * e + 1 + 2 * dk * h + c + c * h) + 4 * dk * c * 8 + e * dk * h * 9 // 16,
    )
    return partial, full, f"the {f.arch} case of GraphSize"


def _command_r(f: OllamaGGUF, d: Dims) -> tuple[int, int, str]:
    b, c, e, h, v = d.batch, d.context, d.embedding, d.heads, d.vocab
    full = max(4 * b * (e + v), 4 * b * (2 + 4 * e + c * (1 + h)))
    partial = max(4 * b * (e + v) + e * v * 105 // 128, 4 * b * (1 + 2 * e + c * (1 + h)) + 4 * e * c + e * e * 9 // 16)
    return partial, full, "the command-r case of GraphSize"


def _qwen2(f: OllamaGGUF, d: Dims) -> tuple[int, int, str]:
    b, c, e, h, v = d.batch, d.context, d.embedding, d.heads, d.vocab
    full = max(4 * b * (e + v), 4 * b * (1 + 2 * e + c + c * h))
    partial = max(4 * b * (e + v) + e * v * 105 // 128, 4 * (b * (1 + 2 * e + c * (1 + h)) + e * (1 + c)))
    return partial, full, "the qwen2 case of GraphSize"


def _phi2(f: OllamaGGUF, d: Dims) -> tuple[int, int, str]:
    b, c, e, h, v = d.batch, d.context, d.embedding, d.heads, d.vocab
    full = max(4 * b * (e + v), 4 * b * (1 + 4 * e + c + c * h))
    partial = max(4 * b * (2 * e + v) + e * v * 105 // 128, 4 * b * (2 + 3 * e + c + c * h))
    return partial, full, "the phi2 case of GraphSize"


def _stablelm(f: OllamaGGUF, d: Dims) -> tuple[int, int, str]:
    b, c, e, h, v = d.batch, d.context, d.embedding, d.heads, d.vocab
    full = 4 * b * (c * (1 + h) + 3 * e + 2)
    return max(4 * b * (v + 2 * e), full), full, "the stablelm case of GraphSize"


def _deepseek2(f: OllamaGGUF, d: Dims) -> tuple[int, int, str]:
    b, c, e, hkv, v, dk = d.batch, d.context, d.embedding, d.heads_kv, d.vocab, d.dk
    full = max(4 * b * (3 * e + v), 4 * b * (3 * e + 2 + c * (1 + hkv) + 2 * dk * hkv))
    partial = max(
        4 * b * (3 * e + v) + e * v * 105 // 128,
        4 * b * (2 * e + 1 + 2 * dk * hkv + c + c * hkv) + 4 * dk * c * hkv + e * dk * hkv * 9 // 16,
    )
    return partial, full, "the deepseek2 case of GraphSize"


def _chatglm(f: OllamaGGUF, d: Dims) -> tuple[int, int, str]:
    b, c, e, h, v, dk = d.batch, d.context, d.embedding, d.heads, d.vocab, d.dk
    full, partial = 4 * b * (e + v), 4 * b * (e + v) + e * v * 105 // 128
    bias = f.tensor("blk.0", "attn_qkv.bias")
    if bias is not None:  # Go's Shape[0] is ne[0]: the last of our (PyTorch-order) shape
        q = bias.shape[-1]
        full = max(full, 4 * b * (2 + 2 * e + c + c * h + dk * h + q))
        partial = max(partial, 4 * b * (1 + 2 * e + dk * h + c + c * h) + 4 * dk * c + 4 * c * dk + 4 * q)
    return partial, full, "the chatglm case of GraphSize"


ARCH_GRAPHS: Mapping[str, Any] = {
    "llama": _llama,
    "gemma": _gemma,
    "gemma2": _gemma,
    "gemma3": _gemma,  # v0.6.0 to v0.11.10 (then the Ollama engine's)
    "llama4": _llama,  # v0.6.7 to v0.11.10
    "command-r": _command_r,
    "qwen2": _qwen2,
    "phi2": _phi2,
    "stablelm": _stablelm,
    "deepseek2": _deepseek2,
    "chatglm": _chatglm,
}


def vision_graph(f: OllamaGGUF, rel: Release = NEWEST) -> tuple[int, int]:
    """``GGML.VisionGraphSize`` (v0.6.1 on): a vision tower in the model's own file, its ``v.*``
    weights and, for gemma3, a graph of ``4·(image²·channels + embedding·patch + patches²·heads)``."""
    if rel.vision == "none" or not f.uint("vision.block_count"):
        return 0, 0
    weights = sum(f.layer(g) or 0 for g in f.groups if g == "v" or g.startswith("v."))
    image, patch = f.uint("vision.image_size"), f.uint("vision.patch_size")
    if f.arch != "gemma3" or patch == 0:  # the other architectures' cases are not estimated here
        return weights, 0
    patches = (image // patch) * (image // patch) + (f.tensor("v", "class_embd") is not None)
    heads, width = f.uint("vision.attention.head_count"), f.uint("vision.embedding_length")
    return weights, 4 * (image * image * f.uint("vision.num_channels") + width * patch + patches * patches * heads)
