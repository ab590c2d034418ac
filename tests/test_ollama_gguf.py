"""Ollama's own gpt-oss files: MXFP4 stored as ggml type 4 (Ollama v0.11.0 … v0.11.7's converter,
``convert/reader.go tensorKindMXFP4 = 4``), not llama.cpp's 39. A tiny gpt-oss store is built in a
temporary folder: its file written with type 39 by gguf-py, then the experts' type ids set to 4,
the "type-39 twin" kept beside it for comparison."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.frontends import stores
from paramcount.gguf import reader as pg
from paramcount.memory.runtimes.ollama.ggml import OllamaGGUF
from paramcount.memory.runtimes.ollama.versions import release

from .gguf_files import write
from .test_stores import blob, one_line

E, N, HD, X, VOCAB = 64, 2, 16, 4, 256
EXPERTS = ("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps")


@pytest.fixture
def home(tmp_path, monkeypatch):
    """OLLAMA_MODELS in a temporary folder (never the real store), no KV type from the environment."""
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama"))
    monkeypatch.delenv("OLLAMA_KV_CACHE_TYPE", raising=False)
    return tmp_path


def gpt_oss(arch: str = "gptoss") -> dict:
    """gpt-oss's tensors as Ollama's converter names them (as tests/test_ollama_logs.py's 20b), tiny."""
    meta = {
        "context_length": 4096, "embedding_length": E, "block_count": N, "feed_forward_length": E,
        "attention.head_count": 4, "attention.head_count_kv": 2, "attention.key_length": HD,
        "attention.value_length": HD, "attention.sliding_window": 128, "expert_count": X, "expert_used_count": 2,
        "attention.layer_norm_rms_epsilon": 1e-5, "rope.freq_base": 150000.0,
    }  # fmt: skip
    tensors = [["token_embd.weight", [VOCAB, E], "BF16"]]
    for i in range(N):
        b = f"blk.{i}."
        tensors += [[b + "attn_norm.weight", [E], "F32"], [b + "post_attention_norm.weight", [E], "F32"],
                    [b + "attn_q.weight", [4 * HD, E], "BF16"], [b + "attn_k.weight", [2 * HD, E], "BF16"],
                    [b + "attn_v.weight", [2 * HD, E], "BF16"], [b + "attn_out.weight", [E, 4 * HD], "BF16"],
                    [b + "attn_sinks", [4], "F32"], [b + "ffn_gate_inp.weight", [X, E], "F32"]]  # fmt: skip
        for part in EXPERTS:
            tensors += [[b + part + ".weight", [X, E, E], "MXFP4"], [b + part + ".bias", [X, E], "F32"]]
    tensors += [["output_norm.weight", [E], "F32"], ["output.weight", [VOCAB, E], "BF16"]]
    return {"name": "gpt-oss-tiny", "arch": arch, "meta": meta, "tensors": tensors, "vocab": VOCAB}


def as_type_4(data: bytes, spec: dict) -> bytes:
    """The file with each MXFP4 tensor's ggml type id 39 rewritten as 4, as Ollama's converter wrote it."""
    out = bytearray(data)
    for name, shape, qtype in spec["tensors"]:
        if qtype == "MXFP4":
            key = struct.pack("<Q", len(name)) + name.encode()
            at = out.index(key) + len(key) + 4 + 8 * len(shape)  # past the rank and the dimensions
            assert struct.unpack_from("<I", out, at)[0] == 39
            struct.pack_into("<I", out, at, 4)
    return bytes(out)


def type_4_file(folder: Path) -> Path:
    """test_ollama_logs.py's gpt-oss:20b as Ollama v0.11.0 … v0.11.7 wrote it: written with type 39
    (data a sparse hole), then the header's MXFP4 type ids set to 4 in place."""
    from .test_ollama_logs import MODELS

    spec = MODELS["gpt-oss:20b"]()
    folder.mkdir(parents=True, exist_ok=True)
    path = write(spec, folder / "gpt-oss-20b-type-4.gguf")
    size = pg.read_header(path).data_offset  # the header only: the data is never read
    with open(path, "r+b") as f:
        head = f.read(size)
        f.seek(0)
        f.write(as_type_4(head, spec))
    return path


def store(home, spec: dict, name: str = "gpt-oss", tag: str = "tiny") -> tuple[bytes, bytes]:
    """An Ollama store holding ``spec``'s file with type-4 MXFP4; the type-39 twin's bytes and its own."""
    twin = write(spec, home / f"{spec['arch']}-twin.gguf").read_bytes()
    data = as_type_4(twin, spec)
    root = home / "ollama"
    folder = root / "manifests" / "registry.ollama.ai" / "library" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / tag).write_text(json.dumps({"layers": [{"mediaType": stores.MODEL, **blob(root, data)}]}))
    return twin, data


def header(data: bytes, source: str = "x.gguf") -> pg.GGUFFile:
    return pg.parse(data, source)


def test_type_4_in_an_ollama_gpt_oss_file_is_mxfp4_and_counts_as_its_type_39_twin(home):
    spec = gpt_oss()
    twin, _ = store(home, spec)
    model, same = paramcount.load("ollama:gpt-oss:tiny"), pg.to_model(header(twin))
    assert model.total == same.total == sum(math.prod(shape) for _, shape, _ in spec["tensors"])
    m = stores.ollama_manifest("gpt-oss:tiny")
    info = stores.read_blob(m, m.of(stores.MODEL)[0])
    fours = [t for t in info.tensors if t.type_id == 4]
    assert len(fours) == 3 * N and {t.type_name for t in fours} == {"MXFP4"}
    assert all(t.nbytes == t.elements // 32 * 17 for t in fours)  # 17 bytes per 32 values
    assert info.by_type() == header(twin).by_type()
    assert any(f"{3 * N} tensors of ggml type 4" in n for n in model.notes)
    assert all("ggml type 4" not in n for n in same.notes)


@pytest.mark.parametrize("version", ["0.11.4", "0.11.5", "0.11.8", "0.12.10"])
def test_ollamas_estimate_sizes_type_4_at_17_bytes_per_32_as_each_release_does(home, version):
    """fs/ggml/ggml.go: type 4 is BlockSize 32, TypeSize 1 + 32/2 from v0.11.0 (``4, // MXFP4``)
    through v0.12.10 (``case 4, TensorTypeMXFP4``); the type-39 twin at v0.11.5 is sized at
    129 bytes per 256 (39 missing from BlockSize), type 4 is not."""
    spec = gpt_oss()
    twin, data = store(home, spec)
    mine, theirs = (OllamaGGUF(header(d)).at(release(version)) for d in (data, twin))
    for t in (t for t in mine.info.tensors if t.type_id == 4):
        assert mine.size(t) == t.elements * 17 // 32
    twin_sized = theirs.size(next(t for t in theirs.info.tensors if t.type_id == 39))
    assert twin_sized == X * E * E * (129 if version == "0.11.5" else 17) // (256 if version == "0.11.5" else 32)
    assert not mine.mxfp4_as_4  # a type-4 file is Ollama's own: nothing is counted as a twin
    if version != "0.11.5":
        assert [mine.layer(f"blk.{i}") for i in range(N)] == [theirs.layer(f"blk.{i}") for i in range(N)]


def test_ollama_before_gpt_oss_sizes_type_4_as_0_bytes_refused(home):
    _, data = store(home, gpt_oss())
    f = OllamaGGUF(header(data)).at(release("0.10.1"))
    with pytest.raises(ParamcountError, match=r"Ollama v0\.10\.1 sizes tensor type MXFP4 as 0 bytes"):
        f.layer("blk.0")


def test_memory_fit_and_speed_under_ollama(home, capsys):
    twin, _ = store(home, gpt_oss())
    argv = ["ollama:gpt-oss:tiny", "--runtime", "ollama", "--gpu", "rtx4090"]
    assert main(["memory", *argv, "--ollama-version", "0.11.4", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["ollama_now"]["loads"] is False and "type 4" in got["ollama_now"]["why_not"]
    assert "mxfp4_as_type_4" not in got["settings"]
    (home / "twin.gguf").write_bytes(twin)
    assert main(["memory", str(home / "twin.gguf"), *argv[1:], "--ollama-version", "0.11.4", "--json"]) == 0
    other = json.loads(capsys.readouterr().out)
    assert [t["bytes"] for t in got["terms"]] == [t["bytes"] for t in other["terms"]]
    assert "loads" not in other["ollama_now"]
    assert main(["fit", *argv, "--ollama-version", "0.11.8"]) == 0
    assert "cannot run this file" in capsys.readouterr().out
    assert main(["speed", *argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runtime"] == "ollama"


@pytest.mark.parametrize("command", ["memory", "fit", "speed"])
def test_llama_cpp_cannot_load_type_4_refused_in_one_line(home, capsys, command):
    """ggml.c type_traits[4] is the removed Q4_2 (block size 0): gguf_init_from_file_impl fails."""
    store(home, gpt_oss())
    err = one_line([command, "ollama:gpt-oss:tiny", "--runtime", "llama.cpp", "--gpu", "rtx4090"], capsys)
    assert "llama.cpp cannot load this file: 6 tensors are ggml type 4" in err


@pytest.mark.parametrize("arch", ["gpt-oss", "llama"])
def test_type_4_anywhere_else_is_refused_in_one_line(home, capsys, arch):
    """llama.cpp's converter names gpt-oss ``gpt-oss`` and writes MXFP4 as 39: type 4 there is not MXFP4."""
    store(home, gpt_oss(arch), name="other")
    err = one_line(["ollama:other:tiny"], capsys)
    assert "tensor blk.0.ffn_gate_exps.weight: ggml type 4 (Q4_2, removed from ggml)" in err
    with pytest.raises(ParamcountError, match="only Ollama's own gpt-oss files"):
        header(as_type_4(write(gpt_oss(arch), home / "f.gguf").read_bytes(), gpt_oss(arch)))


def test_each_release_estimates_type_4_as_its_own_code(tmp_path):
    """tools/ollama_versions/record_type_4.py ran v0.11.2's, v0.11.4's and v0.11.8's own
    EstimateGPULayers on gpt-oss:20b with type-4 experts (v0.11.2/4 put 6/11 layers on 8 GiB where
    the type-39 file, its experts sized 0 bytes, took all 25): paramcount equals each to the byte."""
    from .test_ollama_versions import ours

    recorded = json.loads((Path(__file__).parent / "fixtures" / "ollama_type_4.json").read_text())
    f = OllamaGGUF(pg.read_header(type_4_file(tmp_path)))
    assert {c["release"] for c in recorded["cases"]} == {"v0.11.2", "v0.11.4", "v0.11.8"}
    wrong = [(c["release"], c["free"], c["num_gpu"]) for c in recorded["cases"] if ours(f, c) != c["ollama"]]
    assert not wrong, wrong


@pytest.mark.parametrize("command", ["memory", "fit", "speed"])
def test_llama_cpp_cannot_load_ollamas_gptoss_name_refused_in_one_line(home, capsys, command):
    """A type-39 file Ollama's converter wrote (v0.11.8 on) still names its architecture ``gptoss``:
    llm_arch_from_string does not know it, llama_model_loader throws "unknown model architecture"."""
    folder = home / "files"
    folder.mkdir()
    path = write(gpt_oss(), folder / "gptoss-39.gguf")
    err = one_line([command, str(path), "--runtime", "llama.cpp", "--gpu", "rtx4090"], capsys)
    assert "its architecture 'gptoss' is Ollama's name for gpt-oss" in err
    ollama = ["memory", str(path), "--runtime", "ollama", "--ollama-version", "0.11.8", "--gpu", "rtx4090"]
    assert main(ollama) == 0  # Ollama's own estimate plans it
