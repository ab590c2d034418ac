"""Small GGUF files of real architectures, written by gguf-py's writer with sparse data.

A spec is a plain dict (architecture, metadata, tensors, vocabulary size) that JSON fixtures
store, so a test can write the same file the recording script (tools/record_llamacpp.py)
gave to llama.cpp. The tensor data is never written: the file is extended to its full length
with a sparse hole, so it reads as zeros (what llama.cpp loads and quantises) and costs no disk.
The header carries a minimal SPM vocabulary of ``vocab`` tokens, which llama.cpp needs to load
the file and whose size is its ``n_vocab``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

Spec = dict[str, Any]


@functools.cache
def name_map(arch: Any, n_blocks: int) -> Any:
    """gguf-py's ``TensorNameMap`` for ``arch`` (a ``gguf.MODEL_ARCH``) and ``n_blocks``, built once:
    its constructor formats every key of every block (a quarter second each), and nothing reads
    it but ``get_name`` and ``get_type_and_name``."""
    import gguf

    return gguf.get_tensor_name_map(arch, n_blocks)


def llama_spec(
    name: str, layers: int, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int, *, context: int = 8192,
    ftype: str = "F16", experts: int = 0, used: int = 0, tied: bool = False, arch: str = "llama",
) -> Spec:  # fmt: skip
    """A llama-architecture model (dense, or Mixtral-style MoE with ``experts``)."""
    d = hidden // heads
    meta = {
        "context_length": context,
        "embedding_length": hidden,
        "block_count": layers,
        "feed_forward_length": ffn,
        "attention.head_count": heads,
        "attention.head_count_kv": kv_heads,
        "attention.layer_norm_rms_epsilon": 1e-5,
        "rope.dimension_count": d,
    }
    if experts:
        meta.update({"expert_count": experts, "expert_used_count": used})
    tensors = [["token_embd.weight", [vocab, hidden], ftype]]
    for i in range(layers):
        b = f"blk.{i}."
        tensors += [
            [b + "attn_norm.weight", [hidden], "F32"],
            [b + "attn_q.weight", [heads * d, hidden], ftype],
            [b + "attn_k.weight", [kv_heads * d, hidden], ftype],
            [b + "attn_v.weight", [kv_heads * d, hidden], ftype],
            [b + "attn_output.weight", [hidden, heads * d], ftype],
            [b + "ffn_norm.weight", [hidden], "F32"],
        ]
        if experts:
            tensors += [
                [b + "ffn_gate_inp.weight", [experts, hidden], "F32"],
                [b + "ffn_gate_exps.weight", [experts, ffn, hidden], ftype],
                [b + "ffn_up_exps.weight", [experts, ffn, hidden], ftype],
                [b + "ffn_down_exps.weight", [experts, hidden, ffn], ftype],
            ]
        else:
            tensors += [
                [b + "ffn_gate.weight", [ffn, hidden], ftype],
                [b + "ffn_up.weight", [ffn, hidden], ftype],
                [b + "ffn_down.weight", [hidden, ffn], ftype],
            ]
    tensors.append(["output_norm.weight", [hidden], "F32"])
    if not tied:
        tensors.append(["output.weight", [vocab, hidden], ftype])
    return {"name": name, "arch": arch, "meta": meta, "tensors": tensors, "vocab": vocab}


def gemma3_spec(
    name: str, layers: int, hidden: int, heads: int, kv_heads: int, head_dim: int, ffn: int, vocab: int,
    *, window: int = 512, context: int = 32768, ftype: str = "F16",
) -> Spec:  # fmt: skip
    """A Gemma 3 text model: tied embeddings, q/k norms, five sliding layers in six."""
    meta = {
        "context_length": context,
        "embedding_length": hidden,
        "block_count": layers,
        "feed_forward_length": ffn,
        "attention.head_count": heads,
        "attention.head_count_kv": kv_heads,
        "attention.key_length": head_dim,
        "attention.value_length": head_dim,
        "attention.layer_norm_rms_epsilon": 1e-6,
        "attention.sliding_window": window,
    }
    tensors = [["token_embd.weight", [vocab, hidden], ftype]]
    for i in range(layers):
        b = f"blk.{i}."
        tensors += [
            [b + "attn_norm.weight", [hidden], "F32"],
            [b + "attn_q.weight", [heads * head_dim, hidden], ftype],
            [b + "attn_k.weight", [kv_heads * head_dim, hidden], ftype],
            [b + "attn_v.weight", [kv_heads * head_dim, hidden], ftype],
            [b + "attn_output.weight", [hidden, heads * head_dim], ftype],
            [b + "attn_q_norm.weight", [head_dim], "F32"],
            [b + "attn_k_norm.weight", [head_dim], "F32"],
            [b + "post_attention_norm.weight", [hidden], "F32"],
            [b + "ffn_norm.weight", [hidden], "F32"],
            [b + "ffn_gate.weight", [ffn, hidden], ftype],
            [b + "ffn_up.weight", [ffn, hidden], ftype],
            [b + "ffn_down.weight", [hidden, ffn], ftype],
            [b + "post_ffw_norm.weight", [hidden], "F32"],
        ]
    tensors.append(["output_norm.weight", [hidden], "F32"])
    return {"name": name, "arch": "gemma3", "meta": meta, "tensors": tensors, "vocab": vocab}


def write(spec: Spec, path: Path) -> Path:
    """The GGUF file of ``spec`` at ``path``: header by gguf-py, data a sparse hole of zeros."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), spec["arch"])
    w.add_name(spec["name"])
    for key, value in spec["meta"].items():
        _add(w, f"{spec['arch']}.{key}", value)
    _vocab(w, spec["vocab"])
    size = 0
    for name, shape, qtype in spec["tensors"]:
        q = gguf.GGMLQuantizationType[qtype]
        block, type_size = gguf.GGML_QUANT_SIZES[q]
        n = int(np.prod(shape))
        nbytes = n // block * type_size
        w.add_tensor_info(name, _byte_shape(shape, block, type_size), np.dtype(np.uint8), nbytes, raw_dtype=q)
        size += -(-nbytes // w.data_alignment) * w.data_alignment
    w.write_header_to_file(path=path)
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    head = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(-(-head // w.data_alignment) * w.data_alignment + size)
    return path


def _byte_shape(shape: list[int], block: int, type_size: int) -> list[int]:
    """The shape gguf-py expects for raw quantised data: the last dim in bytes."""
    return [*shape[:-1], shape[-1] // block * type_size]


def _add(w: Any, key: str, value: Any) -> None:
    """A metadata value in the type llama.cpp's converter writes it: uint32, float32, bool,
    string, or an array (``head_count_kv`` per layer: int32; ``recurrent_layers``: bool)."""
    if isinstance(value, bool):
        w.add_bool(key, value)
    elif isinstance(value, float):
        w.add_float32(key, value)
    elif isinstance(value, int):
        w.add_uint32(key, value)
    elif isinstance(value, str):
        w.add_string(key, value)
    elif isinstance(value, list):
        w.add_array(key, value)
    else:
        raise TypeError(f"{key}: {value!r}")


def _vocab(w: Any, n: int) -> None:
    """A minimal SPM vocabulary: <unk>, <s>, </s> and numbered pieces."""
    tokens = ["<unk>", "<s>", "</s>", *(f"t{i}" for i in range(3, n))]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * n)
    w.add_token_types([2, 3, 3, *([1] * (n - 3))])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)


# ---- a header written byte by byte: any key in any GGUF type --------------------------------------

_U32, _I32, _F32, _BOOL, _STR, _ARR, _U64, _I64, _F64 = 4, 5, 6, 7, 8, 9, 10, 11, 12


def write_raw(spec: Spec, path: Path, meta: dict[str, Any] | None = None) -> Path:
    """The file of ``spec`` (with ``meta`` for its ``{arch}.*`` keys) without gguf-py and without a
    vocabulary: each value in the GGUF type of its Python value (:func:`typed`), however wrong
    for its key, which gguf-py's writer would coerce or refuse. Fast enough for a corpus of
    thousands of files."""
    import math
    import struct

    from paramcount.dtypes import DTYPES, GGML_IDS

    arch = spec["arch"]
    kvs = [_kv("general.architecture", arch), _kv("general.name", spec["name"])]
    kvs += [_kv(f"{arch}.{k}", v) for k, v in (spec["meta"] if meta is None else meta).items()]
    infos, offset = [], 0
    for name, shape, qtype in spec["tensors"]:
        block, size = DTYPES[qtype]
        ne = b"".join(struct.pack("<Q", d) for d in reversed(shape))
        infos.append(_str(name) + struct.pack("<I", len(shape)) + ne + struct.pack("<IQ", GGML_IDS[qtype], offset))
        offset += -(-(math.prod(shape) // block * size) // 32) * 32
    head = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(kvs)) + b"".join(kvs) + b"".join(infos)
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(len(head) + offset)
    return path


def _str(text: str) -> bytes:
    import struct

    data = text.encode("utf-8", "surrogatepass")
    return struct.pack("<Q", len(data)) + data


def _kv(key: str, value: Any) -> bytes:
    import struct

    vtype, payload = typed(value)
    return _str(key) + struct.pack("<I", vtype) + payload


def typed(value: Any) -> tuple[int, bytes]:
    """A Python value as a GGUF value: bool; int as uint32, int32, uint64 or int64 (the first
    that holds it); float as float32 (float64 past its range); str; list as an array of its
    first item's type (an empty one: int32)."""
    import struct

    if isinstance(value, bool):
        return _BOOL, struct.pack("<?", value)
    if isinstance(value, int):
        for vtype, code, lo, hi in ((_U32, "I", 0, 1 << 32), (_I32, "i", -(1 << 31), 1 << 31), (_U64, "Q", 0, 1 << 64)):
            if lo <= value < hi:
                return vtype, struct.pack("<" + code, value)
        return _I64, struct.pack("<q", max(min(value, (1 << 63) - 1), -(1 << 63)))
    if isinstance(value, float):
        try:
            return _F32, struct.pack("<f", value)
        except OverflowError:  # past float32's range
            return _F64, struct.pack("<d", value)
    if isinstance(value, str):
        return _STR, _str(value)
    if isinstance(value, list):
        items = [typed(v) for v in value]
        item = items[0][0] if items else _I32
        if any(t != item for t, _ in items):
            raise TypeError(f"an array of mixed types: {value!r}")
        return _ARR, struct.pack("<IQ", item, len(items)) + b"".join(p for _, p in items)
    raise TypeError(f"no GGUF type for {value!r}")
