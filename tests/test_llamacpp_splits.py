"""The split replay (paramcount.memory.runtimes.llamacpp.splits) on its own: bounded as the
one-backend replay is (a deep model's alike layers replayed until the allocators' state repeats,
the same buffers as the whole graph), and the copy of a strided view as ggml_dup_tensor_layout
sizes it. Its figures are held to llama.cpp in tests/test_llamacpp_multidev.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from paramcount.memory.runtimes.llamacpp import splits
from paramcount.memory.runtimes.llamacpp.gallocr import Tensor
from paramcount.memory.runtimes.llamacpp.replay import Dense, _Builder

Q8_ROW = 34 * 1024 // 32  # one Q8_0 row of 1,024 values
FFN = 4096 * Q8_ROW  # gate, up and down: 4,096 × 1,024 values each
LAYER = {"attn_norm.weight": 4096, "attn_q.weight": 1024 * Q8_ROW, "attn_k.weight": 256 * Q8_ROW,
         "attn_v.weight": 256 * Q8_ROW, "attn_output.weight": 1024 * Q8_ROW, "ffn_norm.weight": 4096,
         "ffn_gate.weight": FFN, "ffn_up.weight": FFN, "ffn_down.weight": FFN}  # fmt: skip


def _tensors(layers: list[int | None], ffn: dict[int, int | None], kv_offload: bool = True) -> splits.Tensors:
    """A 1,024-wide Llama's tensors: each layer's on its device, ``ffn`` moving a layer's gate,
    up and down elsewhere (-ot), the input layer on the CPU, the output on the last layer's GPU."""
    where = {"token_embd.weight": (None, 32000 * Q8_ROW, 32000 * Q8_ROW)}
    for il, dev in enumerate(layers):
        for name, size in LAYER.items():
            moved = name.startswith("ffn_") and "norm" not in name and il in ffn
            where[f"blk.{il}.{name}"] = (ffn[il] if moved else dev, size, size)
    out = layers[-1]
    where |= {"output_norm.weight": (out, 4096, 4096), "output.weight": (out, 32000 * Q8_ROW, 32000 * Q8_ROW)}
    return splits.Tensors(where, tuple(layers), kv_offload)


def _dense(layers: int, tokens: int = 512) -> Dense:
    return Dense("llama", 1024, 16, 4, 64, 64, 4096, 32000, layers, 4096, tokens, outputs=tokens)


def _whole(d: Dense, t: splits.Tensors, n_gpus: int, n_copies: int) -> list[int]:
    g = _Builder(d).build(d.layers)
    return splits.buffers(g, splits.backends(g, t, n_gpus, n_copies, tuple(range(d.layers))))


PLACEMENTS = {
    # 40 layers: 7 in host memory (-ngl 34), 20 on the first GPU, 13 on the second
    "partial": ([None] * 7 + [0] * 20 + [1] * 13, {}, 1, True),
    # every layer on the GPUs, pipeline parallelism's 4 copies
    "pipeline": ([0] * 22 + [1] * 18, {}, 4, True),
    # -ot: layers 10-14's feed-forward on the second GPU, 30-33's on the CPU
    "overrides": ([0] * 25 + [1] * 15, {**dict.fromkeys(range(10, 15), 1), **dict.fromkeys(range(30, 34))}, 1, True),
    # --no-kv-offload: every cache on the CPU
    "nkvo": ([0] * 20 + [1] * 20, {}, 1, False),
}


@pytest.mark.parametrize("name", PLACEMENTS)
def test_the_bounded_replay_gives_the_whole_graphs_buffers(name, monkeypatch):
    layers, ffn, n_copies, kv = PLACEMENTS[name]
    t, d = _tensors(layers, ffn, kv), _dense(len(layers))
    whole = _whole(d, t, 2, n_copies)
    built = []
    real = splits.buffers
    monkeypatch.setattr(splits, "buffers", lambda g, b, *more: built.append(len(g.nodes)) or real(g, b, *more))
    assert splits.replayed(d, t, 2, n_copies) == whole
    nodes = len(_Builder(d).build(d.layers).nodes)
    assert max(built) < nodes  # fewer layers replayed than the model has


def test_a_strided_views_copy_spans_its_parents_rows():
    """``ggml_argsort_top_k``'s top 4 of 16 sorted experts, I32 over 512 tokens, copied to another
    backend: ggml_dup_tensor_layout keeps the 64-byte row stride, so 16 + 511 · 64 bytes."""
    order = Tensor("argsort", "ARGSORT", (16, 512), 4)
    top = Tensor("topk", "VIEW", (4, 512), 4, (order,), view_src=order)
    assert splits._layout_bytes(top) == 16 + 511 * 64
    assert splits._layout_bytes(replace(top, ne=(16, 512))) == 16 * 512 * 4  # the whole rows: contiguous
