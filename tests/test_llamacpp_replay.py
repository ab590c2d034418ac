"""The dense decoders' compute buffer on a CPU, replayed (``paramcount.memory.runtimes.llamacpp.replay``
and ``.gallocr``).

Oracles: tests/fixtures/llamacpp_replay_trace.json (ggml-alloc's own log of every allocation and
free, in order, for issue 35's Llama file with and without flash attention and its LFM2 file at
512 and 4,096 cells: the emitted graph and
the ported allocator must place every tensor where llama.cpp 0.5.0 did) and
tests/fixtures/llamacpp_replay.json (tools/record_llamacpp_replay.py: llama, qwen2 and qwen3
files of other widths at other micro-batches, sequence counts and flash attention settings,
recorded after the replay was written and held out from it: its "CPU compute buffer size"; the
quantised-cache rows were recorded after the Hadamard rotations were emitted, which were checked
against tests/fixtures/llamacpp_buffers.json's two quantised rows only).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import paramcount
from paramcount.cli import main
from paramcount.memory import inference
from paramcount.memory.runtimes.llamacpp.gallocr import DynAllocator, reserve
from paramcount.memory.runtimes.llamacpp.replay import Dense, _Builder, replay, rotations

from .gguf_files import write

FIXTURES = Path(__file__).parent / "fixtures"
TRACE = json.loads((FIXTURES / "llamacpp_replay_trace.json").read_text())
RECORDED = json.loads((FIXTURES / "llamacpp_replay.json").read_text())
LANDING = json.loads((FIXTURES / "llamacpp_landing.json").read_text())

# issue 35's Llama file (llamacpp_landing.json "llama"): 896 wide, 14 heads, 2 KV heads of 64, n_ff 2,432
LLAMA = Dense("llama", 896, 14, 2, 64, 64, 2432, 24000, 6, n_kv=512, tokens=512)
# its LFM2 file ("lfm2"): 1,024 wide, short convolutions (l_cache 3) but in layers 2 and 5, n_ff 3,072
LFM2 = Dense("lfm2", 1024, 16, 8, 64, 64, 3072, 16384, 6, n_kv=512, tokens=512, recurrent=(0, 1, 3, 4), d_conv=2)


@pytest.mark.parametrize(
    "case", TRACE["cases"], ids=lambda c: f"{c['spec']}-{c['context']}x{c['parallel']}-fa{c['flash_attn']}"
)
def test_every_allocation_and_free_where_ggml_alloc_logged_it(case):
    base = {"llama": LLAMA, "lfm2": LFM2}[case["spec"]]
    d = replace(base, n_kv=case["context"], streams=case["parallel"], flash=case["flash_attn"] == "on")
    g = reserve(_Builder(d).build(d.layers))
    events = [[kind, offset, size] for kind, _, offset, size in g.events if kind != "reuse"]
    assert events == case["events"]


@pytest.mark.parametrize("layers", [6, 7, 12, 33])
@pytest.mark.parametrize("flash", [True, False])
@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_the_repeating_layers_give_the_whole_stacks_buffer(arch, flash, layers):
    """The bounded replay (first layer, middle layers until the allocator's state repeats, last
    layer) equals the replay of every layer, over widths whose peak sits in different places."""
    base = replace(LLAMA, arch=arch, layers=layers, flash=flash)
    wide = {"hidden": 1024, "heads": 16, "ffn": 8192, "vocab": 4000}
    for d in (base, replace(base, ffn=2048, n_kv=1024, streams=1), replace(base, **wide)):
        assert replay(d) == replay(d, layers=layers)


def test_best_fit_skips_the_last_block_and_merges_on_free():
    a = DynAllocator(32)
    x, y, z = a.alloc(100), a.alloc(64), a.alloc(32)
    assert (x, y, z) == (0, 128, 192) and a.max_size == 224
    a.free(x, 100)
    a.free(z, 32)  # merges with the endless last block
    assert a.blocks[0] == [0, 128] and a.blocks[1][0] == 192
    assert a.alloc(64) == 0  # the best fit among the blocks but the last
    a.free(0, 64)
    a.free(y, 64)  # joins the block before and the one after into one
    assert a.blocks == [[0, 1 << 62]]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, paramcount.Model]:
    folder = tmp_path_factory.mktemp("replay")
    specs = {**RECORDED["specs"], **LANDING["specs"]}
    return {n: paramcount.load(str(write(s, folder / f"{n}.gguf"))) for n, s in specs.items()}


def _key(c: dict) -> str:
    return f"{c['spec']}-{c['context']}x{c['parallel']}-ub{c['ubatch']}-fa{c['flash_attn']}-{c['type_k']}-{c['type_v']}"


@pytest.mark.parametrize("case", RECORDED["cases"], ids=_key)
def test_held_out_files_and_settings_within_one_percent(files, case):
    plan = inference(
        files[case["spec"]], context=case["context"], batch=case["parallel"], runtime="llama.cpp",
        ubatch=case["ubatch"], flash_attn=case["flash_attn"], type_k=case["type_k"], type_v=case["type_v"],
        device="cpu", cpu="none",
    )  # fmt: skip
    term = plan.term("compute")
    assert f"{case['compute_bytes'] / 2**20:.2f}" == case["compute_mib"]
    assert not term.estimate and "replayed" in term.formula
    assert abs(term.bytes / case["compute_bytes"] - 1) <= 0.01


def test_the_closed_form_stays_an_estimate_where_the_replay_does_not_reach(files):
    """Granite 4.0-H and LFM2 over a unified cache and any plan for a GPU keep the closed form, flagged."""
    granite = inference(files["granitemoehybrid"], context=4096, batch=2, runtime="llama.cpp", device="cpu",
                        kv_unified=True)  # fmt: skip
    unified = inference(files["lfm2"], context=4096, batch=2, runtime="llama.cpp", device="cpu", kv_unified=True)
    gpu = inference(files["llama"], context=4096, runtime="llama.cpp")
    for plan in (granite, unified, gpu):
        assert plan.term("compute").estimate


def test_a_quantised_cache_adds_its_hadamard_rotations():
    """``build_input_k_rot``: the largest power of two from 64 dividing the K head; V: 64; none
    for f16 or a head not a multiple of 64."""
    assert rotations(64, 64, True, True) == (64, 64)
    assert rotations(128, 128, True, False) == (128, 0)
    assert rotations(192, 80, True, True) == (64, 0)
    assert rotations(128, 128, False, False) == (0, 0)
    graph = _Builder(replace(LLAMA, flash=True, k_rot=64, v_rot=64)).build(2)
    rotated = [n for n in graph.nodes if n.op == "MUL_MAT" and n.src[0].name.endswith("_rot")]
    assert len(rotated) == 2 * 4  # Q, K and V rotated in, the attention output rotated back, each layer
    assert [t.name for t in graph.leafs if t.name.endswith("_rot")] == ["attn_inp_k_rot", "attn_inp_v_rot"]


def test_the_cli_says_no_term_is_an_estimate(files, capsys):
    """A replayed plan on a CPU has no estimated term left; the table says so, not "estimates ()"."""
    argv = ["memory", files["llama"].source, "--runtime", "llama.cpp", "--context", "4096", "--device", "cpu"]
    assert main([*argv, "--cpu-features", "none"]) == 0
    out = capsys.readouterr().out
    assert "no estimates: every term is exact" in out and "estimates ()" not in out
