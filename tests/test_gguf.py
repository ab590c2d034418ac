"""GGUF files written with the gguf package's own writer count exactly, with exact bytes."""

from __future__ import annotations

import os

import pytest

gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")

from paramcount.gguf import reader as pg  # noqa: E402

from .budget import calls  # noqa: E402

CALLS_8B = 200_000  # calls to count a 291-tensor header (25,538 measured): never one per element

Q = gguf.GGMLQuantizationType

# (elements per block, bytes per block), written out here rather than read from the package,
# so the test checks the table the reader uses against the format's published block sizes.
BLOCKS = {
    Q.F32: (1, 4),
    Q.F16: (1, 2),
    Q.BF16: (1, 2),
    Q.Q4_0: (32, 18),  # 16 bytes of nibbles + an f16 scale
    Q.Q8_0: (32, 34),  # 32 int8 + an f16 scale
    Q.Q4_K: (256, 144),
    Q.Q5_K: (256, 176),
    Q.Q6_K: (256, 210),
}


def raw(shape: tuple[int, ...], q) -> np.ndarray:
    """Zeroed bytes of the right size for a tensor of ``shape`` (PyTorch order) in type ``q``."""
    block, size = BLOCKS[q]
    return np.zeros((*shape[:-1], shape[-1] // block * size), dtype=np.uint8)


def write(path, tensors, arch="llama", meta=None, endianess=None):
    kwargs = {"endianess": endianess} if endianess is not None else {}
    w = gguf.GGUFWriter(str(path), arch, **kwargs)
    for key, value in (meta or {}).items():
        getattr(w, f"add_{key}")(value)
    for name, shape, q in tensors:
        if q == Q.F32:
            w.add_tensor(name, np.zeros(shape, dtype=np.float32))
        elif q == Q.F16:
            w.add_tensor(name, np.zeros(shape, dtype=np.float16))
        else:
            w.add_tensor(name, raw(shape, q), raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


H, FF, V = 256, 512, 1000
LLAMA = [
    ("token_embd.weight", (V, H), Q.Q8_0),
    *[
        t
        for i in range(2)
        for t in (
            (f"blk.{i}.attn_norm.weight", (H,), Q.F32),
            (f"blk.{i}.attn_q.weight", (H, H), Q.Q4_0),
            (f"blk.{i}.attn_k.weight", (H // 2, H), Q.Q4_K),
            (f"blk.{i}.attn_v.weight", (H // 2, H), Q.Q6_K),
            (f"blk.{i}.attn_output.weight", (H, H), Q.Q5_K),
            (f"blk.{i}.ffn_norm.weight", (H,), Q.F32),
            (f"blk.{i}.ffn_gate.weight", (FF, H), Q.Q4_K),
            (f"blk.{i}.ffn_up.weight", (FF, H), Q.BF16),
            (f"blk.{i}.ffn_down.weight", (H, FF), Q.F16),
        )
    ],
    ("output_norm.weight", (H,), Q.F32),
    ("output.weight", (V, H), Q.Q6_K),
]
META = {
    "block_count": 2,
    "context_length": 4096,
    "embedding_length": H,
    "feed_forward_length": FF,
    "head_count": 4,
    "head_count_kv": 2,
    "name": "tiny-llama",
}


def expected(tensors):
    """(elements, bytes) per tensor from the block table: whole blocks, never rounded bits."""
    out = {}
    for name, shape, q in tensors:
        n = int(np.prod(shape))
        block, size = BLOCKS[q]
        out[name] = (n, n // block * size)
    return out


@pytest.fixture
def llama(tmp_path):
    return write(tmp_path / "tiny.gguf", LLAMA, meta=META)


def test_every_tensor_has_exact_elements_and_bytes(llama):
    info = pg.read_header(llama)
    want = expected(LLAMA)
    assert {t.name: (t.elements, t.nbytes) for t in info.tensors} == want
    assert {t.name: t.shape for t in info.tensors} == {name: shape for name, shape, _ in LLAMA}
    assert info.tensors[2].type_name == "Q4_0" and info.tensors[2].nbytes == H * H // 32 * 18
    assert info.elements == sum(n for n, _ in want.values())
    assert info.nbytes == sum(b for _, b in want.values())
    assert info.bits_per_weight == 8 * info.nbytes / info.elements


def test_agrees_with_the_packages_own_reader(llama):
    reader = gguf.GGUFReader(str(llama))
    theirs = {
        t.name: (int(t.n_elements), int(t.n_bytes), tuple(int(d) for d in reversed(t.shape))) for t in reader.tensors
    }
    ours = {t.name: (t.elements, t.nbytes, t.shape) for t in pg.read_header(llama).tensors}
    assert ours == theirs
    assert pg.read_header(llama).data_offset == reader.data_offset


def test_split_by_quant_type(llama):
    split = {s.type_name: (s.tensors, s.elements, s.nbytes) for s in pg.read_header(llama).by_type()}
    assert split["Q4_0"] == (2, 2 * H * H, 2 * H * H // 32 * 18)
    assert split["Q4_K"] == (4, 2 * (H // 2 * H + FF * H), 2 * (H // 2 * H + FF * H) // 256 * 144)
    assert split["F32"] == (5, 5 * H, 5 * H * 4)
    assert split["Q6_K"][2] == (2 * H // 2 * H + V * H) // 256 * 210
    assert sum(s[2] for s in split.values()) == pg.read_header(llama).nbytes
    by_type = pg.read_header(llama).by_type()
    assert by_type[0].nbytes >= by_type[-1].nbytes
    assert next(s for s in by_type if s.type_name == "Q8_0").bits_per_weight == 8.5


def test_architecture_metadata(llama):
    info = pg.read_header(llama)
    assert info.architecture == "llama" and info.version == 3 and info.alignment == 32
    assert info.arch_metadata() == {
        "block_count": 2,
        "context_length": 4096,
        "embedding_length": H,
        "feed_forward_length": FF,
        "attention.head_count": 4,
        "attention.head_count_kv": 2,
    }
    assert info.metadata["general.name"] == "tiny-llama"


def test_model_tree_and_components(llama):
    m = pg.from_file(llama)
    want = expected(LLAMA)
    assert m.total == sum(n for n, _ in want.values())
    assert (m.name, m.model_type, m.class_name) == ("tiny-llama", "llama", "GGUF")
    assert m.backbone_total == m.total - V * H  # without output.weight
    per_layer = H + H * H + 2 * (H // 2 * H) + H * H + H + 3 * FF * H
    assert [(g.path, g.copies, g.each) for g in m.layers()] == [("blk", 2, per_layer)]
    assert m.components() == {
        "embeddings": V * H,
        "attention": 2 * (2 * H * H + 2 * (H // 2 * H)),
        "feed_forward": 2 * 3 * FF * H,
        "norms": 5 * H,
        "output_head": V * H,
    }
    dtypes = {leaf.name: leaf.dtype for leaf in m.tensors()}
    assert dtypes["blk.1.attn_q.weight"] == "Q4_0" and dtypes["output.weight"] == "Q6_K"
    notes = " ".join(m.notes)
    assert f"{m.total:,} elements in {pg.read_header(llama).nbytes:,} bytes" in notes
    assert "Q4_0 2 tensors" in notes and "block_count 2" in notes


def test_moe_names_become_experts_and_router(tmp_path):
    e, h, ff = 4, 256, 128
    tensors = [
        ("token_embd.weight", (64, h), Q.F16),
        ("blk.0.ffn_gate_inp.weight", (e, h), Q.F32),
        ("blk.0.ffn_gate_exps.weight", (e, ff, h), Q.Q4_K),
        ("blk.0.ffn_up_exps.weight", (e, ff, h), Q.Q4_K),
        ("blk.0.ffn_down_exps.weight", (e, h, ff), Q.Q8_0),
        ("blk.0.ffn_up_shexp.weight", (ff, h), Q.Q8_0),
        ("blk.0.attn_k_norm.weight", (h,), Q.F32),
    ]
    path = write(tmp_path / "moe.gguf", tensors, arch="qwen2moe", meta={"expert_count": e, "expert_used_count": 2})
    m = pg.from_file(path)
    assert m.components() == {
        "embeddings": 64 * h,
        "experts": 3 * e * ff * h + ff * h,
        "router": e * h,
        "norms": h,
    }
    info = pg.read_header(path)
    assert info.arch_metadata() == {"expert_count": e, "expert_used_count": 2}
    assert info.tensors[2].nbytes == e * ff * h // 256 * 144
    assert "no output.weight: the output head reuses token_embd.weight (tied)" in m.notes


def test_big_endian_file(tmp_path):
    path = write(tmp_path / "be.gguf", LLAMA[:3], meta={"block_count": 1}, endianess=gguf.GGUFEndian.BIG)
    info = pg.read_header(path)
    assert info.byte_order == ">" and info.arch_metadata() == {"block_count": 1}
    assert {t.name: (t.elements, t.nbytes) for t in info.tensors} == expected(LLAMA[:3])


def test_read_recognises_gguf_by_name_or_magic(llama, tmp_path):
    renamed = tmp_path / "model.bin"
    renamed.write_bytes(llama.read_bytes())
    assert pg.read(renamed).total == pg.read(llama).total
    other = tmp_path / "config.json"
    other.write_text("{}")
    assert pg.read(other) is None and pg.read(tmp_path) is None


LLAMA_3_8B = (4096, 14336, 128256, 1024, 32)  # hidden, ffn, vocabulary, kv width, layers


def llama_3_8b_tensors() -> list[tuple[str, tuple[int, ...], int]]:
    """Meta-Llama-3-8B's tensors in llama.cpp's names, Q4_K with Q6_K for attn_v, ffn_down and output."""
    h, ff, v, kv, layers = LLAMA_3_8B
    tensors = [("token_embd.weight", (v, h), Q.Q4_K)]
    for i in range(layers):
        tensors += [
            (f"blk.{i}.attn_norm.weight", (h,), Q.F32),
            (f"blk.{i}.attn_q.weight", (h, h), Q.Q4_K),
            (f"blk.{i}.attn_k.weight", (kv, h), Q.Q4_K),
            (f"blk.{i}.attn_v.weight", (kv, h), Q.Q6_K),
            (f"blk.{i}.attn_output.weight", (h, h), Q.Q4_K),
            (f"blk.{i}.ffn_norm.weight", (h,), Q.F32),
            (f"blk.{i}.ffn_gate.weight", (ff, h), Q.Q4_K),
            (f"blk.{i}.ffn_up.weight", (ff, h), Q.Q4_K),
            (f"blk.{i}.ffn_down.weight", (h, ff), Q.Q6_K),
        ]
    return [*tensors, ("output_norm.weight", (h,), Q.F32), ("output.weight", (v, h), Q.Q6_K)]


def write_sparse_llama_3_8b(path, token_list: bool = False) -> dict:
    """Llama-3-8B as a Q4_K/Q6_K GGUF: a real header (with its 128,256-token vocabulary when
    ``token_list``) and a hole where its tensor data would be: nothing is written or read there.
    Returns each tensor's (shape, bytes)."""
    tensors = llama_3_8b_tensors()
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(LLAMA_3_8B[4])
    if token_list:
        w.add_token_list([f"token-{i}" for i in range(LLAMA_3_8B[2])])
    sizes = expected(tensors)
    for name, shape, q in tensors:
        w.add_tensor_info(name, shape, np.dtype(np.float32), sizes[name][1], raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    header = os.path.getsize(path)
    os.truncate(path, -(-header // 32) * 32 + sum(-(-b // 32) * 32 for _, b in sizes.values()))
    return sizes


def test_sparse_8b_file_counts_from_its_header_alone(tmp_path):
    """Llama-3-8B as a Q4_K/Q6_K GGUF: a real header, a hole for its 5.2 GB of data. The count
    takes calls in proportion to its 291 tensors and Python memory far below the data's size."""
    import tracemalloc

    path = tmp_path / "llama-3-8b.Q4_K_M.gguf"
    sizes = write_sparse_llama_3_8b(path)
    pg.from_file(path)  # imports and caches warmed outside the count
    tracemalloc.start()
    try:
        with calls(CALLS_8B) as done:
            m = pg.from_file(path)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert m.total == 8_030_261_248  # Meta-Llama-3-8B, as its config.json counts
    info = pg.read_header(path)
    assert info.nbytes == sum(b for _, b in sizes.values())
    assert info.bits_per_weight == 8 * info.nbytes / m.total and 5.1 < info.bits_per_weight < 5.2
    assert done.n > 0 and peak < 16 << 20  # never the 5.2 GB of data, nor a tensor's worth of it


def test_config_and_gguf_agree_on_llama_3_8b():
    import paramcount

    assert paramcount.load("meta-llama/Meta-Llama-3-8B").total == 8_030_261_248


def test_cli_counts_a_gguf_file(llama, capsys):
    from paramcount.cli import main

    assert main([str(llama), "--width", "200"]) == 0
    out = capsys.readouterr().out
    assert f"{pg.from_file(llama).total:,}" in out and "bits per weight" in out and "Q4_0" in out


def write_split(tmp_path, per_shard=7):
    w = gguf.GGUFWriter(str(tmp_path / "tiny.gguf"), "llama", split_max_tensors=per_shard)
    w.add_block_count(2)
    for name, shape, q in LLAMA:
        data = np.zeros(shape, dtype=np.float32) if q == Q.F32 else raw(shape, q)
        w.add_tensor(name, data, raw_dtype=None if q == Q.F32 else q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return sorted(tmp_path.glob("tiny-*-of-*.gguf"))


def test_split_model_counts_all_shards_from_any_one(tmp_path):
    shards = write_split(tmp_path)
    assert [p.name for p in shards] == [f"tiny-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    want = expected(LLAMA)
    for shard in shards:
        m = pg.from_file(shard)
        assert m.total == sum(n for n, _ in want.values())
        assert {leaf.name for leaf in m.tensors()} == set(want)
        assert "in 3 shards" in m.notes[0]
    info = pg.read_shards(shards[1])
    assert info.nbytes == sum(b for _, b in want.values())
    assert info.arch_metadata() == {"block_count": 2}
    assert len(pg.read_header(shards[0]).tensors) == 7  # one shard alone holds only its part


def test_split_model_with_a_missing_shard(tmp_path):
    shards = write_split(tmp_path)
    shards[2].unlink()
    with pytest.raises(pg.ParamcountError, match=r"shard 3 of 3 is missing: tiny-00003-of-00003\.gguf"):
        pg.from_file(shards[0])
    renamed = tmp_path / "renamed.gguf"
    shards[0].rename(renamed)
    with pytest.raises(pg.ParamcountError, match=r"split\.count says 3 shards, but the name"):
        pg.from_file(renamed)


@pytest.mark.parametrize(
    ("name", "component"),
    [
        ("token_embd.weight", "embeddings"),
        ("position_embd.weight", "embeddings"),  # gguf-py's POS_EMBD name (GPT-2, StarCoder, BERT)
        ("token_types.weight", "embeddings"),
        ("blk.3.ffn_gate_exps.weight", "experts"),
        ("blk.0.attn_norm.weight", "norms"),
        ("output.weight", "output_head"),
    ],
)
def test_a_gguf_tensor_falls_in_its_component_by_name(name, component):
    assert pg.kind(name) == component
