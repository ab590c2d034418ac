"""llama-fit-params over several GPUs (common/fit.cpp common_params_fit_impl with nd > 1), held
to what the C++ guarantees, measured with the same plan it searched over (no GPU at hand):

* step 1: nothing changes when every device keeps its margin with -ts unset, which
  load_tensors turns into a split by free memory;
* step 2: an unset context is interpolated to the summed target less (nd + 1) layers' model
  bytes / 2, rounded down to 256, and the fit goes on to the layers;
* step 3: the last device is filled first, alone, to the boundary of its own target, then the
  one before it; set_ngl_tensor_split_tbo gives -ngl (the sum) and -ts (the layer counts);
* fit-params.cpp prints -ts as whole numbers without trailing zeros, and only while two are left.
"""

from __future__ import annotations

import json

import pytest

import paramcount
from paramcount.cli import main
from paramcount.memory.core.limits import Limit
from paramcount.memory.runtimes import planner
from paramcount.memory.runtimes.llamacpp.fit import MARGIN, MIB, FitParams, fit_target, margins_for
from paramcount.memory.runtimes.llamacpp.fit_multi import SOURCE_ONLY, fit_params_multi
from paramcount.memory.runtimes.llamacpp.placement import Placement
from paramcount.records import replace

GB = 10**9
CUDA_CONTEXT = 1 << 29  # the planner's default overhead on a GPU: what llama.cpp finds already taken


def setup(hub: str, **options):
    model = paramcount.load(hub)
    return planner(model, "q4_k_m", "llama.cpp", **options), Limit.of(model).tokens


def on(p, n_ctx: int, ts, ngl=None, overrides=()) -> list[int]:
    """What llama.cpp measures on each GPU (model + context + compute) at -c n_ctx with -ngl and
    -ts as given: the plan's bytes per device, less the CUDA context each."""
    placed = p.placed(replace(p.placement, gpu_layers=ngl, tensor_split=tuple(map(float, ts)), overrides=overrides))
    plan = placed.plan(n_ctx, 1)
    devices = plan.settings["devices"]
    names = [f"CUDA{i}" for i in range(len(ts))]
    overhead = sum(t.bytes for t in plan.device_terms if t.key == "overhead") // len(names)
    return [devices[n] - overhead for n in names]


def test_no_change_when_each_device_keeps_its_margin():
    """-ts unset: load_tensors splits by free memory; each device measured so."""
    p, trained = setup("meta-llama/Llama-3.1-8B")
    free = [8 * GB - CUDA_CONTEXT, 8 * GB - CUDA_CONTEXT]
    r = fit_params_multi(p, free, 32768, 1, trained)
    assert r.arguments() == "-c 32768 -ngl -1" and not r.failed
    assert [d["projected_bytes"] for d in r.per_device] == on(p, 32768, free)
    assert all(f - u >= MARGIN for f, u in zip(free, on(p, 32768, free), strict=True))
    assert r.steps[-1] == SOURCE_ONLY and "no changes needed" in r.steps[-2]


def test_a_set_context_fills_the_last_device_first_to_its_boundary():
    """32k tokens on two 4 GB cards: the layers do not all fit; the last device (the output
    layer's) takes as many as leave its margin while the first holds none, then the first takes
    as many as leave its own."""
    p, trained = setup("meta-llama/Llama-3.1-8B")
    free = [4 * GB - CUDA_CONTEXT] * 2
    target = free[0] - MARGIN
    r = fit_params_multi(p, free, 32768, 1, trained)
    a, b = (int(v) for v in r.tensor_split)
    assert r.ngl == a + b < 33 and r.arguments() == f"-c 32768 -ngl {a + b} -ts {a},{b}" and not r.overrides
    assert on(p, 32768, (0, b), b)[1] <= target < on(p, 32768, (0, b + 1), b + 1)[1]
    assert on(p, 32768, (a, b), a + b)[0] <= target < on(p, 32768, (a + 1, b), a + b + 1)[0]
    assert [d["layers"] for d in r.per_device] == [a, b]


def test_an_unset_context_is_cut_to_the_summed_target_less_the_layer_waste():
    """common_params_fit_impl step 2 for nd = 2: target = Σ free − Σ margin − 3 · model_per_layer / 2,
    model_per_layer = Σ model buffers / n_layer at the full context; the cut context is a
    multiple of 256; the layers are then fitted at it (it does not return)."""
    p, trained = setup("meta-llama/Llama-3.1-8B")
    free = [8 * GB - CUDA_CONTEXT] * 2
    r = fit_params_multi(p, free, None, 1, trained)
    full = p.placed(Placement(tensor_split=tuple(map(float, free)))).plan(trained, 1)
    per_layer = full.term("weights").bytes // 32
    target = sum(free) - 2 * MARGIN - 3 * per_layer // 2
    at_full, at_min = sum(on(p, trained, free)), sum(on(p, 4096, free))
    expected = 4096 + (trained - 4096) * (target - at_min) // (at_full - at_min)
    assert r.n_ctx == expected - expected % 256
    a, b = (int(v) for v in r.tensor_split)
    assert a + b == 33 and r.ngl == 33  # every layer fits at the cut context, split by the fill
    assert r.arguments() == f"-c {r.n_ctx} -ngl 33 -ts {a},{b}"
    assert on(p, r.n_ctx, (0, 33), 33)[1] > free[1] - MARGIN  # the last device alone could not take all
    # llama-fit-params checks a device only while filling it: filling CUDA0 puts every layer on the
    # GPUs, pipeline parallelism's copies grow CUDA1's buffer, and the answer says CUDA1 is short
    used = on(p, r.n_ctx, (a, b), 33)
    assert [d["projected_bytes"] for d in r.per_device] == used
    assert [d["keeps_margin"] for d in r.per_device] == [f - u >= MARGIN for f, u in zip(free, used, strict=True)]
    assert r.per_device[0]["keeps_margin"] and not r.per_device[1]["keeps_margin"]
    assert any(s.startswith("CUDA1:") and "short of its 1,024 MiB margin" in s for s in r.steps)


def test_the_longest_context_with_every_layer_split_by_free_memory():
    """Two unequal cards (12 GB, 8 GB), -ts unset: load_tensors splits by free memory; the
    longest -c in steps of 256 at which each GPU keeps its margin, and 256 more at which one
    does not."""
    p, trained = setup("meta-llama/Llama-3.1-8B")
    free = [12 * GB - CUDA_CONTEXT, 8 * GB - CUDA_CONTEXT]
    r = fit_params_multi(p, free, None, 1, trained)

    def fits(n_ctx: int) -> bool:
        return all(f - u >= MARGIN for f, u in zip(free, on(p, n_ctx, free), strict=True))

    assert r.longest % 256 == 0 and fits(r.longest) and not fits(r.longest + 256)


def test_a_moe_model_allows_a_sixth_of_a_layer_per_device():
    """Step 2 for a MoE model: "only whole tensors can be assigned to devices, which we estimate
    to be <= 1/3 of a layer": the summed target less (nd + 1) · model_per_layer / 6."""
    p, trained = setup("Qwen/Qwen3-30B-A3B")
    free = [12 * GB - CUDA_CONTEXT] * 2
    r = fit_params_multi(p, free, None, 1, trained)
    full = p.placed(Placement(tensor_split=tuple(map(float, free)))).plan(trained, 1)
    target = sum(free) - 2 * MARGIN - 3 * (full.term("weights").bytes // 48) // 6
    at_full, at_min = sum(on(p, trained, free)), sum(on(p, 4096, free))
    expected = 4096 + (trained - 4096) * (target - at_min) // (at_full - at_min)
    assert r.n_ctx == expected - expected % 256 and 4096 < r.n_ctx < trained


@pytest.mark.parametrize(
    ("split", "printed"),
    [((17.0, 16.0), " -ts 17,16"), ((0.0, 33.0), " -ts 0,33"), ((33.0, 0.0), ""), ((5.0, 7.0, 0.0), " -ts 5,7")],
)
def test_the_tensor_split_is_printed_as_fit_params_cpp_does(split, printed):
    """fit-params.cpp: ``while (nd > 1 && tensor_split[nd - 1] == 0.0f) nd--``, then -ts only
    when nd > 1, each value as uint32_t."""
    r = FitParams(4096, 33, (), 0, 0, 0, (), tensor_split=split)
    assert r.arguments() == "-c 4096 -ngl 33" + printed


def test_parameters_set_by_hand_stop_the_fit():
    """After step 2, -ngl and then -ts set by hand make common_params_fit_impl abort."""
    p, trained = setup("meta-llama/Llama-3.1-8B", gpu_layers=20)
    free = [4 * GB - CUDA_CONTEXT] * 2
    assert fit_params_multi(p, free, 32768, 1, trained).failed == "n_gpu_layers already set by user to 20, abort"
    p, _ = setup("meta-llama/Llama-3.1-8B", tensor_split=(1.0, 1.0))
    r = fit_params_multi(p, free, 32768, 1, trained)
    assert r.failed == "model_params::tensor_split already set by user, abort"


def test_a_moe_model_overflows_to_the_next_device():
    """Qwen3-30B-A3B at Q4_K_M on two 12 GB cards: the dense weights fit (step 4): every layer
    offloaded; the first device's layers are its lowest, its first partial layer overflows part of
    its feed-forward to CUDA1, the others' experts to the CPU; the overrides run in layer order."""
    p, trained = setup("Qwen/Qwen3-30B-A3B")
    free = [12 * GB - CUDA_CONTEXT] * 2
    r = fit_params_multi(p, free, 32768, 1, trained)
    a, b = (int(v) for v in r.tensor_split)
    assert r.ngl == a + b == 49 and not r.failed
    layers = [int(pattern.split("\\.")[1]) for pattern, _ in r.overrides]
    assert layers == sorted(layers) and len(set(layers)) == len(layers)
    first = [(pattern, buft) for pattern, buft in r.overrides if int(pattern.split("\\.")[1]) < a]
    assert first[0][1] == "CUDA1" and "_exps" not in first[0][0]  # LAYER_FRACTION_UP/GATE/ATTN
    assert all(buft == "CPU" for _, buft in r.overrides if _ != first[0][0])
    assert all(d["projected_bytes"] < d["free_bytes"] - MARGIN for d in r.per_device)
    assert any("only dense weights in device memory: a total surplus" in s for s in r.steps)


def test_a_last_gpu_left_empty_drops_the_split_as_llama_cpp_prints_it():
    """Qwen3-30B-A3B (48 blocks) at 8k on 24 GB + 3 GB, traced by hand through step 4: the
    whole-layer move puts every block on CUDA0 (it fits), leaving CUDA1 the output layer alone;
    "one more layer" then takes that (its uint32 n_part-- wraps) with overflow type UP, then
    GATE, toward CUDA1, for layer il0 = 48, which is no block: CUDA1 holds nothing and both stay
    under target. -ts 49,0 loses its trailing zero and with it the flag (fit-params.cpp)."""
    p, trained = setup("Qwen/Qwen3-30B-A3B")
    r = fit_params_multi(p, [24 * GB - CUDA_CONTEXT, 3 * GB - CUDA_CONTEXT], 8192, 1, trained)
    assert r.tensor_split == (49.0, 0.0) and r.ngl == 49
    assert r.arguments() == '-c 8192 -ngl 49 -ot "blk\\.48\\.ffn_down.*=CUDA1"'
    assert any("prints as no -ts" in s for s in r.steps) and any("names no block" in s for s in r.steps)
    assert r.per_device[1]["projected_bytes"] == 0


@pytest.mark.parametrize(
    ("text", "nd", "margins"),
    [("512", 3, (512, 512, 512)), ("512,2048", 2, (512, 2048)), ("512/2048", 3, (512, 2048, 1024)), ("0", 1, (0,))],
)
def test_fit_target_is_read_as_common_arg_cpp_does(text, nd, margins):
    """-fitt: split at , and /; one value for every device, several for the first ones, the rest
    keep common.h's 1024 MiB."""
    assert margins_for(fit_target(text), nd) == tuple(m * MIB for m in margins)


def test_each_gpu_is_held_to_its_own_margin():
    """-fitt 512,2048 with 32k tokens on two 4 GB cards: the last device is filled to its own
    target (free − 2048 MiB), the first to free − 512 MiB."""
    p, trained = setup("meta-llama/Llama-3.1-8B")
    free = [4 * GB - CUDA_CONTEXT] * 2
    t0, t1 = free[0] - 512 * MIB, free[1] - 2048 * MIB
    r = fit_params_multi(p, free, 32768, 1, trained, margins=(512 * MIB, 2048 * MIB))
    a, b = (int(v) for v in r.tensor_split)
    assert on(p, 32768, (0, b), b)[1] <= t1 < on(p, 32768, (0, b + 1), b + 1)[1]
    assert on(p, 32768, (a, b), a + b)[0] <= t0 < on(p, 32768, (a + 1, b), a + b + 1)[0]
    assert [d["margin_bytes"] for d in r.per_device] == [512 * MIB, 2048 * MIB]


# ---- the CLI ----------------------------------------------------------------------------------

ARGV = ["fit", "meta-llama/Llama-3.1-8B", "--dtype", "q4_k_m"]


def test_fit_over_two_gpus_prints_the_split(capsys):
    """Exit 1 as for one GPU: the table's plan (every layer, 32k tokens: 9.7 GB) fits neither
    card nor their sum; llama-fit-params' partial offload is printed beside it."""
    argv = [*ARGV, "--runtime", "llama.cpp", "--gpu", "4GB,4GB", "--context", "32768"]
    assert main([*argv, "--width", "200"]) == 1
    out = capsys.readouterr().out
    assert "over 2 GPUs" in out and "-ts " in out and "CUDA1:" in out and "source" in out
    assert main([*argv, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    fitted = doc["rows"][0]["fit_params"]
    a, b = fitted["tensor_split"]
    assert fitted["arguments"] == f"-c 32768 -ngl {a + b} -ts {a},{b}"
    assert [d["layers"] for d in fitted["per_device"]] == [a, b] and len(doc["gpus"]) == 2
    assert doc["gpu"]["usable"] == 2 * 4 * GB and SOURCE_ONLY in fitted["steps"]
    assert fitted["exact"] is False and "no GPU at hand" in fitted["why"] and "compute" in fitted["why"]


@pytest.mark.parametrize(
    ("flags", "field", "words"),
    [
        (["--runtime", "llama.cpp", "--gpu", "rtx3090", "--gpus", "2"], "--gpus", "--gpu rtx3090,rtx3090"),
        (["--runtime", "transformers", "--gpu", "rtx3090,rtx3090"], "--gpu", "add --runtime llama.cpp"),
        (["--runtime", "llama.cpp", "--gpu", "rtx3090,rtx3090", "-sm", "none"], "--split-mode", "one GPU"),
        (["--runtime", "llama.cpp", "--gpu", "rtx3090,rtx3090", "-ts", "1,1,1"], "--tensor-split", "3 values"),
        (["--runtime", "llama.cpp", "--gpu", ",".join(["8GB"] * 17)], "--gpu", "1 to 16 GPUs"),
        (["--runtime", "llama.cpp", "--gpu", "rtx3090,"], "--gpu", "unknown GPU"),
        (["--runtime", "llama.cpp", "--gpu", "8GB", "-fitt", "1,x"], "--fit-target", "MiB per GPU"),
        (["--runtime", "llama.cpp", "--gpu", "8GB", "-fitt", ",".join(["1"] * 16)], "--fit-target", "16 input"),
        (
            ["--runtime", "transformers", "--dtype", "nf4", "--gpu", "8GB", "-fitt", "512"],
            "--fit-target",
            "--runtime llama.cpp",
        ),
        (
            ["--runtime", "transformers", "--dtype", "nf4", "--gpu", "8GB", "-fitc", "8192"],
            "--fit-ctx",
            "--runtime llama.cpp",
        ),
        (["--runtime", "llama.cpp", "-fitt", "512"], "--fit-target", "on --gpu"),
        (["--runtime", "ollama", "--gpu", "8GB", "-fitc", "8192"], "--fit-ctx", "on --gpu"),
    ],
)
def test_ambiguous_gpu_flags_are_one_line(capsys, flags, field, words):
    assert main([*ARGV, *flags]) == 2
    err = capsys.readouterr().err
    assert f"{field}:" in err and words in err and err.count("\n") == 1


def test_fit_target_reaches_the_fit(capsys):
    argv = [*ARGV, "--runtime", "llama.cpp", "--gpu", "4GB,4GB", "--context", "32768", "-fitt", "512,2048", "--json"]
    assert main(argv) == 1  # the table's plan, every layer at 32k, does not fit (as above)
    fitted = json.loads(capsys.readouterr().out)["rows"][0]["fit_params"]
    assert [d["margin_bytes"] for d in fitted["per_device"]] == [512 * MIB, 2048 * MIB]
    # one 4 GB card: even the floor is too much with every layer, so the context is the floor (-fitc)
    one = [*ARGV, "--runtime", "llama.cpp", "--gpu", "4GB", "-fitt", "2048", "-fitc", "8192", "--json"]
    main(one)
    fitted = json.loads(capsys.readouterr().out)["rows"][0]["fit_params"]
    assert fitted["margin_bytes"] == 2048 * MIB and fitted["n_ctx"] == 8192 and fitted["n_gpu_layers"] < 33


def test_training_and_memory_take_one_gpu(capsys):
    assert main(["fit", "meta-llama/Llama-3.1-8B", "--train", "--gpu", "h100,h100"]) == 2
    assert "training takes one --gpu and --gpus N" in capsys.readouterr().err
    assert main(["memory", "meta-llama/Llama-3.1-8B", "--gpu", "h100,h100"]) == 2
    err = capsys.readouterr().err
    assert "several are for `paramcount fit --runtime llama.cpp`" in err and err.count("\n") == 1
