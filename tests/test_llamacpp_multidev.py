"""llama.cpp over two devices, held to llama.cpp's own buffers and llama-fit-params' answers
(issue 35): tests/fixtures/llamacpp_multidev.json, read off llama.cpp (llama-cpp-python 0.3.36's
vendored source) over two RPC devices that allocate as ggml-cuda does, for a Llama and a Qwen3-MoE
file (Q8_0): each test reads the file's header from the fixture, in a sparse file of its size.

* model and KV buffers per device: to the byte, every case;
* compute buffers per device and the CPU backend's: to the byte, every case, by the split replay
  (:mod:`paramcount.memory.runtimes.llamacpp.splits`: the graph cut as ggml_backend_sched_split_graph
  cuts it, each backend's buffer placed by the port of ggml-alloc);
* ``fit``: llama-fit-params' answer, identical in all 12 runs (10 before the split replay), with
  each device's projected bytes what llama.cpp measures at that answer, to the byte.
"""

from __future__ import annotations

import base64
import functools
import json
import tempfile
from pathlib import Path

import pytest

import paramcount
from paramcount.memory.runtimes import planner
from paramcount.memory.runtimes.llamacpp.fit_multi import fit_params_multi
from paramcount.memory.runtimes.llamacpp.placement import overrides
from paramcount.records import replace

DOC = json.loads((Path(__file__).parent / "fixtures" / "llamacpp_multidev.json").read_text())
MIB = 1 << 20
EXACT = ("weights.CUDA0", "weights.CUDA1", "kv.CUDA0", "kv.CUDA1")
COMPUTE = ("compute.CUDA0", "compute.CUDA1", "host_compute")


@functools.cache
def _model(name: str):
    """The GGUF file llama.cpp ran: its header, and as many bytes after it as the file had
    (sparse: paramcount maps the header and never reads the data)."""
    m = DOC["models"][name]
    path = Path(tempfile.mkdtemp()) / f"{name}.gguf"
    with path.open("wb") as f:
        f.write(base64.b64decode(m["header_base64"]))
        f.truncate(m["file_bytes"])
    return paramcount.load(str(path))


def _planner(name: str, fa: str = "on", ub: int = 512):
    return planner(_model(name), None, "llama.cpp", flash_attn=fa, ubatch=ub)


def _bytes(case: dict) -> dict[str, int]:
    p = _planner(case["model"], case.get("fa", "on"), case.get("ub", 512))
    given = {
        "tensor_split": tuple(map(float, case["ts"])),
        "gpu_layers": case.get("ngl"),
        "kv_offload": not case.get("nkvo"),
    }
    given["overrides"] = overrides(case["ot"]) if case.get("ot") else ()
    np_ = case.get("np", 1)  # -np sequences sharing -c: paramcount's context is per sequence
    plan = p.placed(replace(p.placement, **given)).plan(case["ctx"] // np_, np_)
    out = {"host_compute": plan.term("host_compute").bytes}
    terms = {t.key: t for t in plan.terms}  # no KV term where no cache is on a GPU (-nkvo, -ngl 0)
    for key, short in (("weights", "weights"), ("kv_cache", "kv"), ("compute", "compute")):
        parts = terms[key].parts if key in terms else ()
        out |= {f"{short}.{q.key.split('.')[-1]}": q.bytes for q in parts if "CUDA" in q.key}
    return out


@pytest.mark.parametrize("case", DOC["cases"], ids=[c["name"] for c in DOC["cases"]])
def test_buffers_per_device_as_llama_cpp_allocates_them(case):
    got = _bytes(case)
    for key in EXACT:
        assert got.get(key, 0) == case["bytes"][key], key
    for key in COMPUTE:  # the split replay (paramcount.memory.runtimes.llamacpp.splits): to the byte
        assert got.get(key, 0) == case["bytes"][key], key


def test_every_compute_buffer_to_the_byte():
    """All 43 settings' 129 compute buffers (each GPU's and the CPU backend's) as llama.cpp sizes
    them, by the split replay: 109 of them before it (the scheduler's rules in closed form)."""
    exact = sum(_bytes(c).get(k, 0) == c["bytes"][k] for c in DOC["cases"] for k in COMPUTE)
    assert exact == 3 * len(DOC["cases"]) == 129


def test_the_gpu_compute_stays_an_estimate():
    """Exact on RPC devices; ggml-cuda's fusions (ggml_backend_cuda_graph_optimize) keep some tensors
    longer, and a run's own reserve differs from the no_alloc one: the GPU figure stays flagged."""
    case = DOC["cases"][0]
    p = _planner(case["model"])
    plan = p.placed(replace(p.placement, tensor_split=(1.0, 1.0))).plan(case["ctx"], 1)
    assert plan.term("compute").estimate and plan.term("host_compute").estimate
    assert "ggml_backend_sched_split_graph" in plan.term("compute").source


@pytest.mark.parametrize("case", DOC["held_out"]["cases"], ids=[c["name"] for c in DOC["held_out"]["cases"]])
def test_held_out_settings_every_buffer_to_the_byte(case):
    """19 settings recorded after the split replay was written (the fixture's ``held_out``: -nkvo,
    -ngl 0, attention or router weights on the CPU, -ub 128 and 1,024, -np 2 and 4, ...): every
    buffer, each GPU's and the CPU backend's compute too, to the byte (the closed form before it:
    the first 16 settings' compute 34 of 48; with -np 4 and -ngl 6 the K/V views a GPU copies in
    cover every stream's cells)."""
    got = _bytes(case)
    assert {k: got.get(k, 0) for k in case["bytes"]} == case["bytes"]


HELD_FITS = DOC["held_out"]["fits"]


@pytest.mark.parametrize("run", [*DOC["fits"], *HELD_FITS], ids=[r["name"] for r in (*DOC["fits"], *HELD_FITS)])
def test_fit_answers_as_llama_fit_params_gives_them(run):
    p = _planner(run["model"])
    trained = DOC["models"][run["model"]]["config"]["max_position_embeddings"]  # the file's context_length
    r = fit_params_multi(p, [f * MIB for f in run["free_mib"]], run["ctx"], 1, trained)
    answer = r.arguments(printed=True)
    assert answer == run["llama_cpp"]
    for d, used in zip(r.per_device, run["used_bytes"], strict=True):
        assert d["projected_bytes"] == used, d["device"]
        assert d["keeps_margin"] == (d["free_bytes"] - used >= d["margin_bytes"]), d["device"]


def test_an_answer_short_of_a_margin_says_so():
    """2 × 1,180 MiB, Llama: llama-fit-params fills the last GPU (4 layers and the output), then
    the first (5 layers): every layer on the GPUs turns pipeline parallelism on, whose copies
    leave the last 32 MiB short of its 1,024 MiB margin, as llama.cpp measures it."""
    run = next(r for r in DOC["fits"] if r["name"] == "dense-1180x2")
    r = fit_params_multi(_planner("llama"), [f * MIB for f in run["free_mib"]], None, 1, 8192)
    assert r.arguments() == run["llama_cpp"] == "-c 4096 -ngl 9 -ts 5,4"
    assert [d["keeps_margin"] for d in r.per_device] == [True, False]
    assert any(s.startswith("CUDA1: 992 MiB left free at the answer, short of its 1,024 MiB margin") for s in r.steps)


ONE_GPU = DOC["held_out"]["one_gpu"]


@functools.cache
def _spec_file(name: str, folder: str):
    """A GGUF file llama.cpp ran, written again by tests/gguf_files.py (header by gguf-py, data a
    sparse hole: paramcount reads the header only)."""
    from .gguf_files import llama_spec, write

    s = ONE_GPU["specs"][name]
    spec = llama_spec(name, s["layers"], s["embedding"], s["heads"], s["kv_heads"], s["ffn"], s["vocab"],
                      context=s["context"], tied=s["tied"])  # fmt: skip
    return paramcount.load(str(write(spec, Path(folder) / f"{name}.gguf")))


@pytest.mark.parametrize("case", ONE_GPU["cases"], ids=lambda c: f"{c['spec']}-{c['fa']}-{c['ctx']}-ts{c['ts']}")
def test_one_gpu_and_ts_1_0_compute_to_the_byte(tmp_path_factory, case):
    """Files none of the above is: a tiny Llama on one device (no placement: the one-GPU plan) and
    on two with -ts 1,0 (pipeline parallelism's copies on the first), and one of Llama 3.2 3B's
    widths on one device: the GPU's and the CPU backend's compute buffers to the byte (the closed
    form before: -2,048 B or +260,096 B on the tiny one, -23,080,960 B, -7.9%, on the 3B-wide one
    with flash attention, where ggml-alloc places the logits above the last layer's work)."""
    tiny = _spec_file(case["spec"], str(tmp_path_factory.getbasetemp()))
    p = planner(tiny, None, "llama.cpp", flash_attn=case["fa"])
    if case["ts"]:
        p = p.placed(replace(p.placement, tensor_split=tuple(map(float, case["ts"]))))
    terms = {t.key: t for t in p.plan(case["ctx"], 1).terms}
    parts = {q.key: q.bytes for q in terms["compute"].parts}
    assert parts.get("compute.CUDA0", terms["compute"].bytes) == case["compute"]
    assert terms["host_compute"].bytes == case["host_compute"]


@pytest.mark.parametrize("case", DOC["held_out"]["sm_none"]["cases"], ids=lambda c: f"{c['model']} {c['args']}")
def test_sm_none_on_the_second_gpu_to_the_byte(case):
    """-sm none -mg 1: the model on the second device alone (with -ngl 5 the host layers' prompt ops
    offloaded to it, its only GPU), its compute buffer and the CPU backend's to the byte."""
    p = _planner(case["model"])
    given = {"split_mode": case["split_mode"], "main_gpu": case["main_gpu"], "gpu_layers": case["ngl"]}
    terms = {t.key: t for t in p.placed(replace(p.placement, **given)).plan(4096, 1).terms}
    assert (terms["compute"].bytes, terms["host_compute"].bytes) == (case["compute"], case["host_compute"])
