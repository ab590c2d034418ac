"""Granite 4.0-H's compute buffer on a CPU, replayed (``replay._Builder.granite_layer``: Mamba-2
layers, attention without positions, routed experts with a shared expert, the muP scales).

Oracle: tests/fixtures/llamacpp_granite.json (tools/record_llamacpp_granite.py), recorded with
llama.cpp 0.5.0 (llama-cpp-python 0.3.36's, CPU build with GGML_ALLOCATOR_DEBUG) after the replay
was written and held to issue 35's Granite log only (/work/scratch/unseen's 4,096-cell one):
``traces``, ggml-alloc's own log of every allocation and free of one prompt graph for issue 35's
Granite file, a Granite with rotary positions, the four muP multipliers, one routed expert per
token and a Mamba last layer (``granite-mup``), and a Granite without experts
(``granite-dense``); ``cases``, the "CPU compute buffer size" of these files at other cell
counts, micro-batches, sequence counts and flash attention settings.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import paramcount
from paramcount.memory import inference
from paramcount.memory.runtimes.llamacpp.gallocr import reserve
from paramcount.memory.runtimes.llamacpp.replay import Dense, _Builder, buffer

from .gguf_files import write

FIXTURES = Path(__file__).parent / "fixtures"
DOC = json.loads((FIXTURES / "llamacpp_granite.json").read_text())
UNSEEN = json.loads((FIXTURES / "llamacpp_unseen35.json").read_text())
SPECS = {**DOC["specs"], "granitemoehybrid": UNSEEN["specs"]["granitemoehybrid"]}

# the three files' graphs as llama.cpp reads them (their specs' metadata and tensors)
GRAPHS = {
    # issue 35's: 640 wide, Mamba-2 (d_inner 1,280, d_state 128, 1 group, 20 heads) but in layers 2
    # and 5 (10 heads, 2 KV heads, no positions), 8 experts of 256 (2 a token), a shared one of 1,024
    "granitemoehybrid": Dense("granitehybrid", 640, 10, 2, 64, 64, 256, 10240, 6, 0, 512, recurrent=(0, 1, 3, 4),
                              d_conv=3, ssm=(1280, 128, 1, 20), moe=(8, 2, 256, 1024), rope=False),
    # rotary, the muP scales, 4 experts of 384 (1 a token), a shared one of 768, a Mamba last layer
    "granite-mup": Dense("granitehybrid", 512, 8, 2, 64, 64, 384, 8192, 6, 0, 512, recurrent=(1, 2, 3, 5), d_conv=3,
                         ssm=(1024, 64, 2, 16), moe=(4, 1, 384, 768), scales=(True, True, True)),
    # no experts: a dense feed-forward of 1,536
    "granite-dense": Dense("granitehybrid", 768, 12, 4, 64, 64, 1536, 12288, 4, 0, 512, recurrent=(0, 2, 3),
                           d_conv=3, ssm=(1536, 128, 1, 24), rope=False),
}  # fmt: skip


def _graph(case: dict) -> Dense:
    d = GRAPHS[case["spec"]]
    return replace(d, n_kv=case["context"], streams=case["parallel"], flash=case["flash_attn"] == "on")


@pytest.mark.parametrize("case", DOC["traces"], ids=lambda c: f"{c['spec']}-{c['context']}x{c['parallel']}")
def test_every_allocation_and_free_where_ggml_alloc_logged_it(case):
    d = _graph(case)
    g = reserve(_Builder(d).build(d.layers))
    assert [[kind, offset, size] for kind, _, offset, size in g.events if kind != "reuse"] == case["events"]


def test_the_mup_scales_are_emitted_in_place():
    """Each ``ggml_scale`` of Granite's multipliers takes its one parent's block
    (``ggml_gallocr_allocate_node``): with or without them every allocation lands where it did,
    which is why a GGUF file's multipliers need not be read (plan._granite)."""
    d = _graph(DOC["traces"][1])
    nodes = _Builder(d).build(d.layers).nodes
    assert sum(n.op == "SCALE" for n in nodes) == 1 + 2 * d.layers + 1 + 2 * len(d.recurrent)  # + build_rs's zeroing
    plain = replace(d, scales=(False, False, False))
    assert reserve(_Builder(plain).build(d.layers)).events != reserve(_Builder(d).build(d.layers)).events
    assert buffer(plain) == buffer(d)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, paramcount.Model]:
    folder = tmp_path_factory.mktemp("granite")
    return {n: paramcount.load(str(write(s, folder / f"{n}.gguf"))) for n, s in SPECS.items()}


def _key(c: dict) -> str:
    return f"{c['spec']}-{c['context']}x{c['parallel']}-ub{c['ubatch']}-fa{c['flash_attn']}"


@pytest.mark.parametrize("case", DOC["cases"], ids=_key)
def test_held_out_files_and_settings_to_the_byte(files, case):
    plan = inference(
        files[case["spec"]], context=case["context"], batch=case["parallel"], runtime="llama.cpp",
        ubatch=case["ubatch"], flash_attn=case["flash_attn"], device="cpu", cpu="none",
    )  # fmt: skip
    term = plan.term("compute")
    assert f"{case['compute_bytes'] / 2**20:.2f}" == case["compute_mib"]
    assert not term.estimate and "replayed over every layer" in term.formula
    assert term.bytes == case["compute_bytes"]


def test_the_plan_reads_the_graph_the_file_and_its_config_state(files):
    """dense_of: the file's widths, layer kinds, experts (the shared expert's width from its
    tensors) and rope switch, as the specs say; issue 35's config (its multipliers 1.0, which
    the converter writes, so each adds a scale) gives the same buffer as its file."""
    for name, graph in GRAPHS.items():
        plan = inference(files[name], context=4096, runtime="llama.cpp", device="cpu", cpu="none")
        assert plan.planner.dense == replace(graph, tokens=0, scales=(False, False, False))
    config = paramcount.load(UNSEEN["configs"]["granitemoehybrid"])
    plan = inference(config, context=4096, runtime="llama.cpp", device="cpu", cpu="none")
    assert plan.planner.dense == replace(GRAPHS["granitemoehybrid"], tokens=0, scales=(True, True, True))
    assert plan.term("compute").bytes == 29110304 and not plan.term("compute").estimate
