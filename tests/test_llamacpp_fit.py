"""llama-fit-params on one GPU (common/fit.cpp common_params_fit_impl), held to what its steps
guarantee, measured with the same plan it searched over:

* nothing changes when the defaults leave the margin (1024 MiB) free;
* an unset context is cut by linear interpolation between 4096 and the trained one, to a
  multiple of 256, and stops there;
* else -ngl is the boundary of the false-position search: those layers leave the margin, one
  more does not; a MoE model keeps its experts past the first GPU layer in host memory first.
"""

from __future__ import annotations

import json
import shlex

import pytest

import paramcount
from paramcount.cli import main
from paramcount.memory.core.limits import Limit
from paramcount.memory.runtimes import planner
from paramcount.memory.runtimes.llamacpp.fit import ALL_EXPERTS, MARGIN, MIB, fit_params, used

GB = 10**9
CUDA_CONTEXT = 1 << 29  # the planner's default overhead on a GPU: what llama.cpp finds already taken


def setup(hub: str, **options):
    model = paramcount.load(hub)
    return planner(model, "q4_k_m", "llama.cpp", **options), Limit.of(model).tokens


def test_no_change_when_the_defaults_fit():
    p, trained = setup("meta-llama/Llama-3.1-8B")
    need = used(p, trained, 1, None)
    r = fit_params(p, need + MARGIN, None, 1, trained)
    assert r.arguments() == f"-c {trained} -ngl -1" and r.used == need and not r.failed
    short = fit_params(p, need + MARGIN - 1, None, 1, trained)
    assert short.n_ctx < trained  # one byte less: the context is cut


def test_an_unset_context_is_interpolated_down():
    p, trained = setup("meta-llama/Llama-3.1-8B")
    free = 8 * GB - CUDA_CONTEXT
    r = fit_params(p, free, None, 1, trained)
    full, floor = used(p, trained, 1, None), used(p, 4096, 1, None)
    expected = 4096 + (trained - 4096) * (free - MARGIN - floor) // (full - floor)
    assert r.n_ctx == expected - expected % 256 and r.ngl is None
    assert r.used <= free - MARGIN  # the KV cache grows linearly: the cut context leaves the margin
    assert r.arguments() == f"-c {r.n_ctx} -ngl -1"
    # the longest context with every layer on the GPU, in llama.cpp's steps of 256 cells
    assert r.longest % 256 == 0 and r.longest >= r.n_ctx
    assert used(p, r.longest, 1, None) <= free - MARGIN < used(p, r.longest + 256, 1, None)


@pytest.mark.parametrize("context", [32768, 131072])
def test_a_set_context_fits_by_layers_at_the_boundary(context):
    p, trained = setup("meta-llama/Llama-3.1-8B")
    free = 8 * GB - CUDA_CONTEXT
    r = fit_params(p, free, context, 1, trained)
    assert r.n_ctx == context and 0 < r.ngl < 33 and not r.overrides
    assert used(p, context, 1, r.ngl) <= free - MARGIN < used(p, context, 1, r.ngl + 1)
    assert r.arguments() == f"-c {context} -ngl {r.ngl}"


def test_a_moe_model_keeps_its_experts_in_host_memory():
    """Qwen3-30B-A3B at Q4_K_M (18 GB) on 12 GB: every layer offloaded; the experts of the
    layers past the whole ones stay in host memory, one pattern per layer, in order."""
    p, trained = setup("Qwen/Qwen3-30B-A3B")
    free = 12 * GB - CUDA_CONTEXT
    r = fit_params(p, free, None, 1, trained)
    assert r.n_ctx == 4096 and r.ngl == 49  # the context floor (too little even there), every layer
    first = int(r.overrides[0][0].split("\\.")[1])
    assert [o[0].split("\\.")[1] for o in r.overrides] == [str(i) for i in range(first, 49)]
    assert all(b == "CPU" for _, b in r.overrides)
    assert all(o[0].endswith("_(ch|)exps") for o in r.overrides[1:])
    assert r.used <= free - MARGIN
    every = used(p, 4096, 1, None, ((ALL_EXPERTS, "CPU"),))
    assert every < r.used  # more than the dense weights went to the GPU
    assert r.plan.term("host_weights").bytes > 0


def test_a_set_n_gpu_layers_stops_the_fit():
    p, trained = setup("meta-llama/Llama-3.1-8B", gpu_layers=20)
    r = fit_params(p, 4 * GB, 32768, 1, trained)
    assert r.failed == "n_gpu_layers already set by user to 20, abort"


def test_the_steps_say_what_was_done():
    p, trained = setup("meta-llama/Llama-3.1-8B")
    r = fit_params(p, 8 * GB - CUDA_CONTEXT, 32768, 1, trained)
    assert r.steps[0].startswith("projected to use") and "set by user" in r.steps[1]
    doc = r.to_dict()
    assert doc["arguments"] == r.arguments() and doc["margin_bytes"] == 1024 * MIB


# ---- the CLI ----------------------------------------------------------------------------------


def test_fit_prints_llama_fit_params(capsys):
    """Printed where not every layer fits (q8_0 on 8 GB: llama.cpp's --fit offloads layers); where
    they do (q4_k_m), the table's max context is the one figure and fit_params stays in the JSON."""
    argv = ["fit", "meta-llama/Llama-3.1-8B", "--runtime", "llama.cpp", "--gpu", "8GB", "--dtype", "q8_0"]
    assert main([*argv, "--width", "200"]) == 1
    out = capsys.readouterr().out
    assert "what llama.cpp's --fit (on by default) picks" in out and "  q8_0: " in out
    assert "\n    -c 4096 -ngl " in out  # the arguments on a line of their own, to paste
    argv[-1] = "q4_k_m"
    assert main([*argv, "--width", "200"]) == 0
    assert "--fit (on by default) picks" not in capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    fitted = doc["rows"][0]["fit_params"]
    assert fitted["arguments"].startswith("-c ") and fitted["n_gpu_layers"] == -1


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["-ngl", "many"], "--n-gpu-layers"),
        (["-ot", "exps"], "--override-tensor"),
        (["-ot", "exps=GPU0"], "unknown buffer type"),
        (["--n-cpu-moe", "-2"], "--n-cpu-moe"),
        (["-ts", "1,-1"], "--tensor-split"),
        (["-sm", "row", "-ts", "1,1"], "no row split"),
    ],
)
def test_bad_placement_flags_are_one_line(capsys, flags, words):
    argv = ["memory", "Qwen/Qwen2.5-0.5B", "--runtime", "llama.cpp", "--dtype", "q4_k_m", *flags]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_a_gguf_moe_file_overflows_by_fit_cpp_patterns(tmp_path):
    """A 12-layer MoE file on a GPU with room for its dense weights and some experts: every
    layer offloaded, the patterns those of fit.cpp's get_overflow_pattern, as llama.cpp matched
    them in tests/fixtures/llamacpp_overrides.json."""
    pytest.importorskip("gguf")
    from pathlib import Path

    from paramcount.memory.runtimes.llamacpp.fit import _FRACTIONS

    from .gguf_files import llama_spec, write

    spec = llama_spec("moe", 12, 1024, 8, 2, 2048, 32000, experts=8, used=2, ftype="Q8_0", context=32768)
    p = planner(paramcount.load(str(write(spec, tmp_path / "moe.gguf"))), None, "llama.cpp")
    free = used(p, 4096, 1, None) // 2 + MARGIN
    r = fit_params(p, free, None, 1, 32768)
    assert r.n_ctx == 4096 and r.ngl == 13 and r.used <= free - MARGIN
    recorded = json.loads((Path(__file__).parent / "fixtures" / "llamacpp_overrides.json").read_text())["cases"]
    fit_cpp = [c["patterns"][0] for c in recorded[2:6]]
    assert fit_cpp == [_FRACTIONS[k].format(i) for k, i in (("attn", 3), ("up", 3), ("gate", 3), ("moe", 1))]
    assert all(pattern == _FRACTIONS["moe"].format(pattern.split("\\.")[1]) for pattern, _ in r.overrides[1:])


def test_parallel_sequences_multiply_the_context_and_its_steps():
    """-np 4 without --kv-unified: four streams, each of the trained context at most; the cut
    context stays a multiple of 256 · 4; with --kv-unified one stream of the trained context."""
    p, trained = setup("meta-llama/Llama-3.1-8B")
    r = fit_params(p, 24 * GB - CUDA_CONTEXT, None, 4, trained)
    assert r.steps[0].endswith(f"at -c {4 * trained:,}") and r.n_ctx % 1024 == 0 and r.n_ctx < 4 * trained
    unified, _ = setup("meta-llama/Llama-3.1-8B", kv_unified=True)
    assert fit_params(unified, 24 * GB - CUDA_CONTEXT, None, 4, trained).steps[0].endswith(f"at -c {trained:,}")


def test_fits_merged_arguments_give_memory_the_plan_llama_cpps_list_gives(capsys):
    """The short -ot line fit prints, fed back to ``memory``, plans the same bytes as llama.cpp's own
    one-pattern-a-layer list (Qwen3-30B-A3B in q8_0 on a 4090: 773 characters of patterns)."""
    model, where = "Qwen/Qwen3-30B-A3B", ["--runtime", "llama.cpp", "--gpu", "rtx4090"]
    main(["fit", model, *where, "--dtype", "q8_0", "--json"])
    fitted = json.loads(capsys.readouterr().out)["rows"][0]["fit_params"]
    assert len(fitted["overrides"]) > 1 and len(fitted["arguments"]) < 200
    listed = ["-c", str(fitted["n_ctx"]), "-ngl", str(fitted["n_gpu_layers"]), "-ot", ",".join(fitted["overrides"])]
    plans = []
    for flags in (shlex.split(fitted["arguments"]), listed):
        main(["memory", model, *where, "--dtype", "q8_0", "--json", *flags])
        plans.append(json.loads(capsys.readouterr().out))
    bytes_of = [[(t["key"], t["bytes"]) for t in p["terms"]] for p in plans]  # the words count the patterns
    assert plans[0]["total"] == plans[1]["total"] and bytes_of[0] == bytes_of[1]
