"""Where llama.cpp puts each layer and tensor: the rules of llama_model_base::load_tensors and
llama_model_loader::create_tensor (vendored llama.cpp), restated here in their plainest form:

* -ngl N offloads the last N of the n_layer_all + 1 "layers", the output layer counted last:
  layers max(n_layer_all + 1 - N, 0) .. n_layer_all; negative N, auto and all: every one;
* with -ts, offloaded layer k (0-based among them) goes to the first GPU whose cumulative share
  is greater than k / offloaded (std::upper_bound);
* the first -ot pattern found anywhere in the tensor's name (std::regex_search) wins.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest

from paramcount.errors import ParamcountError
from paramcount.memory.runtimes.llamacpp.placement import (
    EXPS,
    Placement,
    gpu_layers,
    n_cpu_moe,
    override_flags,
    overrides,
    placement,
    tensor_split,
)

N_LAYER = 32


def gpus(p: Placement, n_all: int = N_LAYER) -> list[int | None]:
    splits = p.splits()
    return [p.layer_gpu(il, n_all, splits) for il in range(n_all + 1)]


@pytest.mark.parametrize("ngl", [0, 1, 2, 10, 32, 33, 99])
def test_ngl_offloads_the_last_layers_output_first(ngl):
    on = gpus(Placement(gpu_layers=ngl))
    first = max(N_LAYER + 1 - ngl, 0)
    assert on == [None] * first + [0] * (N_LAYER + 1 - first)
    assert (on[N_LAYER] == 0) == (ngl >= 1)  # the output layer is the first one offloaded


@pytest.mark.parametrize("text", ["auto", "all", "-1", "-7", None])
def test_every_layer_by_default_and_for_negative_values(text):
    p = Placement(gpu_layers=gpu_layers(text) if text is not None else None)
    assert gpus(p) == [0] * (N_LAYER + 1)


def test_auto_is_the_default_and_all_is_not():
    """common/arg.cpp: auto is -1 (llama_model_default_params' value, which --fit may change),
    all is -2 (set by the user: --fit leaves it alone)."""
    assert gpu_layers("auto") is None and gpu_layers("-1") is None
    assert gpu_layers("all") == -2 and Placement(gpu_layers=-2).given


@pytest.mark.parametrize("shares", [(3, 1), (1, 1), (1, 2, 1), (0.6, 0.4), (1, 0, 1)])
@pytest.mark.parametrize("ngl", [33, 20])
def test_tensor_split_by_cumulative_shares(shares, ngl):
    p = Placement(gpu_layers=ngl, tensor_split=tuple(float(s) for s in shares))
    on = gpus(p)
    start, act = N_LAYER + 1 - ngl, ngl
    total = sum(Fraction(str(s)) for s in shares)
    cumulative = [sum(Fraction(str(s)) for s in shares[: i + 1]) / total for i in range(len(shares))]
    for il in range(N_LAYER + 1):
        if il < start:
            assert on[il] is None
            continue
        k = Fraction(il - start, act)
        assert on[il] == next(i for i, c in enumerate(cumulative) if c > k), (il, on)
    assert 1 not in on or shares[1]  # a GPU with no share gets no layer


def test_split_mode_none_keeps_the_main_gpu_only():
    p = placement(tensor_split=(1.0, 1.0), split_mode="none", main_gpu=1)
    assert p.devices == 1 and p.names() == ("CUDA1",) and set(gpus(p)) == {0}


def test_n_cpu_moe_names_each_layer_exactly():
    """blk\\.1\\. never matches blk.10 or blk.11: the dot after the number is in the pattern."""
    p = Placement(overrides=n_cpu_moe(2))
    assert p.override("blk.1.ffn_up_exps.weight") == "CPU"
    assert p.override("blk.0.ffn_gate_up_exps.weight") == "CPU"
    assert p.override("blk.0.ffn_down_chexps.weight") == "CPU"
    for name in ("blk.10.ffn_up_exps.weight", "blk.2.ffn_up_exps.weight", "blk.1.ffn_down_shexp.weight"):
        assert p.override(name) is None, name
    assert p.override("blk.1.attn_q.weight") is None


def test_cpu_moe_matches_every_layers_experts_and_nothing_else():
    p = Placement(overrides=((EXPS, "CPU"),))
    assert all(p.override(f"blk.{i}.ffn_{t}_exps.weight") == "CPU" for i in (0, 7, 93) for t in ("gate", "up", "down"))
    assert p.override("blk.3.ffn_gate_inp.weight") is None and p.override("blk.3.ffn_up_shexp.weight") is None


def test_a_pattern_whose_dot_repeats_names_more_than_its_layer():
    """``blk\\.1\\.*`` matches blk.1 followed by any dots: blk.10, blk.11, … too (its text begins
    like one layer's pattern; its parsed prefix is only ``blk.1``)."""
    p = Placement(overrides=(("blk\\.1\\.*", "CPU"),))
    assert [p.override(f"blk.{i}.attn_q.weight") for i in (1, 2, 10, 19)] == ["CPU", None, "CPU", "CPU"]


def test_the_first_matching_override_wins():
    p = placement(overrides=overrides("attn=CUDA0,blk\\.0\\.=CPU"), tensor_split=(1.0,))
    assert p.override("blk.0.attn_q.weight") == "CUDA0" and p.override("blk.0.ffn_up.weight") == "CPU"


def test_the_layer_index_of_patterns_never_changes_which_matches():
    """Patterns that name one layer are looked up by it; the answer is the plain first match."""
    rng = random.Random(7)
    pieces = ["blk\\.{}\\.ffn_(up|down)", "blk\\.{}\\.attn", "^blk\\.{}\\.", "ffn_up|blk\\.{}\\.attn", "exps", "blk"]
    pieces += ["blk\\.{}\\.*", "^blk\\.{}\\.?a", "blk\\.{}\\.(ffn|attn)|x", "(blk\\.{}\\.)", "blk\\.{}\\.{{0}}"]
    names = [f"blk.{i}.{t}.weight" for i in range(12) for t in ("attn_q", "ffn_up_exps", "ffn_down", "ffn_up")]
    for _ in range(200):
        chosen = tuple((rng.choice(pieces).format(rng.randrange(12)), rng.choice(("CPU", "CUDA0"))) for _ in range(6))
        p = Placement(overrides=chosen)
        for name in names:
            import re

            plain = next((b for pattern, b in chosen if re.search(pattern, name)), None)
            assert p.override(name) == plain, (chosen, name)


FREEZING = (".*" * 12 + "Z", "(.|.)*Z", "(\\w|\\w)*Z", "((a+))+$", "(.*)*" * 14 + "Z", "blk\\.(\\d+)*\\.x")


def test_patterns_that_froze_python_re_are_placed():
    """Issue 32: each took seconds to minutes in Python's re on a long enough name; matched in
    linear time now, they place nothing (no tensor name ends in Z, in a, or holds .x)."""
    import paramcount
    from paramcount.memory import inference

    model = paramcount.load("Qwen/Qwen3-30B-A3B")
    plain = inference(model, "q4_k_m", runtime="llama.cpp", overrides=(("QQ", "CPU"),))
    given = overrides(",".join(f"{p}=CPU" for p in FREEZING))
    plan = inference(model, "q4_k_m", runtime="llama.cpp", overrides=given)
    assert plan.total == plain.total and plan.host == plain.host


@pytest.mark.parametrize(
    "given",
    ["[a-z]+[a-z_]+p[a-z]*s=CPU", ",".join(f"q{i}=CPU" for i in range(100))],  # an automaton; many literals
)
def test_matching_past_its_budget_is_refused_in_one_line(monkeypatch, given):
    import paramcount
    from paramcount.memory import inference
    from paramcount.memory.runtimes.llamacpp import placement as pl

    monkeypatch.setattr(pl, "MAX_MATCH_STEPS", 50)
    with pytest.raises(ParamcountError) as e:
        inference(paramcount.load("Qwen/Qwen3-30B-A3B"), "q4_k_m", runtime="llama.cpp", overrides=overrides(given))
    assert e.value.field == "--override-tensor" and "takes more than 50 steps" in str(e.value)


# ---- bad values: one line naming the flag -----------------------------------------------------


@pytest.mark.parametrize(
    ("call", "field", "words"),
    [
        (lambda: gpu_layers("many"), "--n-gpu-layers", "auto or all"),
        (lambda: overrides("exps"), "--override-tensor", "PATTERN=BUFFER_TYPE"),
        (lambda: overrides("blk[=CPU"), "--override-tensor", "bad tensor pattern"),
        (lambda: overrides("(a)\\1=CPU"), "--override-tensor", "backreference \\1 needs a backtracking matcher"),
        (lambda: overrides("(?!x)exps=CPU"), "--override-tensor", "lookahead (?! needs a backtracking matcher"),
        (lambda: overrides("(?s:.)*" * 14 + "=CPU"), "--override-tensor", "(?s... is Python syntax"),
        (lambda: overrides("a{4294967296}=CPU"), "--override-tensor", "expands to 4,294,967,296 states"),
        (lambda: placement(overrides=(("(a{1000}){1000}", "CPU"),)), "--override-tensor", "expands to 1,000,000"),
        (lambda: tensor_split("1e308,1e308"), "--tensor-split", "a C float, std::stof"),
        (lambda: tensor_split("1e-50,1"), "--tensor-split", "a C float, std::stof"),
        (lambda: tensor_split("3e38,3e38"), "--tensor-split", "add up past a C float"),
        (lambda: placement(tensor_split=(3e38, 3e38)), "--tensor-split", "add up past a C float"),
        (lambda: overrides("x" * 300 + "=CPU"), "--override-tensor", "1 to 256 characters"),
        (lambda: placement(overrides=overrides("exps=CUDA1")), "--override-tensor", "unknown buffer type"),
        (lambda: placement(overrides=overrides("exps=cpu")), "--override-tensor", "CPU, CUDA0"),
        (lambda: tensor_split("1,-1"), "--tensor-split", "not negative"),
        (lambda: tensor_split("a,b"), "--tensor-split", "numbers"),
        (lambda: tensor_split(",".join("1" * 16)), "--tensor-split", "fewer than 16"),
        (lambda: placement(split_mode="row", tensor_split=(1.0, 1.0)), "--split-mode", "no row split"),
        (lambda: placement(split_mode="rows"), "--split-mode", "none, layer or row"),
        (lambda: placement(main_gpu=2, tensor_split=(1.0, 1.0)), "--main-gpu", "no GPU 2"),
        (lambda: n_cpu_moe(4097), "--n-cpu-moe", "0..4,096"),
        (lambda: placement(overrides=(("exps", "CPU"),) * 4097), "--override-tensor", "at most 4,096"),
    ],
)
def test_bad_values_are_refused_in_one_line(call, field, words):
    with pytest.raises(ParamcountError) as e:
        call()
    assert e.value.field == field and words in str(e.value) and "\n" not in str(e.value)


def test_arguments_read_back():
    p = placement(gpu_layers=20, tensor_split=(3.0, 1.0), overrides=overrides("exps=CPU"), kv_offload=False)
    assert p.arguments() == '-ngl 20 -ts 3,1 -ot "exps=CPU" -nkvo'


# ---- held to llama.cpp: std::regex_search on a real file's names -------------------------------


def test_patterns_match_what_llama_cpp_overrides():
    """tests/fixtures/llamacpp_overrides.json: the tensors a CPU build of llama.cpp logged as
    "buffer type overridden" for each list of patterns (tools/record_llamacpp_overrides.py);
    the patterns of --cpu-moe, --n-cpu-moe and fit, and a few of a user's."""
    import json
    from pathlib import Path

    doc = json.loads((Path(__file__).parent / "fixtures" / "llamacpp_overrides.json").read_text())
    assert len(doc["cases"]) >= 10
    for case in doc["cases"]:
        p = Placement(overrides=tuple((pattern, "CPU") for pattern in case["patterns"]))
        assert sorted(n for n in doc["tensors"] if p.override(n)) == case["overridden"], case["patterns"]
    assert doc["cases"][1]["patterns"] == [pattern for pattern, _ in n_cpu_moe(2)]
    assert doc["cases"][0]["patterns"] == [EXPS]


def test_rope_factors_go_with_layer_zero_and_norms_with_the_output():
    """rope_freqs is LLM_TENSOR_LAYER_REPEATING, created in layer 0's loop; output_norm is the
    output layer's (llama-arch.cpp LLM_TENSOR_INFOS)."""
    from types import SimpleNamespace

    from paramcount.memory.runtimes.llamacpp.placement import place

    rows = [SimpleNamespace(name=n, count=1) for n in ("rope_freqs.weight", "output_norm.weight", "token_embd.weight")]
    found = {pl.name: pl.device for pl in place(rows, lambda r: (r.name, -1, -1), N_LAYER, Placement(gpu_layers=1))}
    assert found == {"rope_freqs.weight": None, "output_norm.weight": 0, "token_embd.weight": None}
    found = {pl.name: pl.device for pl in place(rows, lambda r: (r.name, -1, -1), N_LAYER, Placement())}
    assert found == {"rope_freqs.weight": 0, "output_norm.weight": 0, "token_embd.weight": None}


@pytest.mark.parametrize(
    "found, flags",
    [
        (((EXPS, "CPU"),), "--cpu-moe"),
        (n_cpu_moe(20), "--n-cpu-moe 20"),
        (n_cpu_moe(1), "--n-cpu-moe 1"),
        # not what --n-cpu-moe gives (a layer skipped, another buffer): the patterns as -ot reads them
        (n_cpu_moe(3)[1:], "-ot blk\\.([1-2])" + EXPS + "=CPU"),  # layers 1 and 2, merged
        (((r"blk\.1\.ffn", "CUDA1"), (r"exps", "CPU")), r"-ot blk\.1\.ffn=CUDA1,exps=CPU"),
    ],
)
def test_override_flags_are_the_shortest_flags_that_read_back(found, flags):
    """fit's settings line shows the flags, never the tuple (it printed 20 patterns for --n-cpu-moe 20)."""
    assert override_flags(found) == flags
    if flags.startswith("-ot "):
        assert same_buffers(overrides(flags[4:]), found)


def same_buffers(a, b, n_layer: int = 130) -> bool:
    """Every tensor name of an n_layer model gets one buffer under both lists of overrides."""
    names = [f"blk.{i}.{t}.weight" for i in range(n_layer) for t in TENSORS] + ["output.weight", "token_embd.weight"]
    pa, pb = (placement(overrides=o, tensor_split=(1.0, 1.0)) for o in (a, b))
    return all(pa.override(n) == pb.override(n) for n in names)


TENSORS = (
    "attn_q",
    "ffn_up",
    "ffn_down",
    "ffn_gate",
    "ffn_up_exps",
    "ffn_down_exps",
    "ffn_gate_exps",
    "ffn_gate_up_exps",
)
FRACTIONS = (r"\.ffn_(gate|gate_up|down).*", r"\.ffn_down.*", EXPS)


@pytest.mark.parametrize("seed", range(40))
def test_merged_overrides_place_every_tensor_as_the_list_does(seed):
    """What fit prints (a ~1,600-character -ot for 32 layers before) is merged into number ranges
    (blk\\.(1[7-9]|[2-3][0-9]|4[0-8])\\.…): each tensor of a 130-layer model gets the same buffer,
    and the merged line reads back through -ot's own parser."""
    rng = random.Random(seed)
    found, il = [], rng.randrange(0, 120)
    while il < 130 and len(found) < 60:
        found.append((f"blk\\.{il}{rng.choice(FRACTIONS)}", rng.choice(("CPU", "CPU", "CUDA1"))))
        il += rng.choice((1, 1, 1, 2))
    flags = override_flags(tuple(found))
    assert same_buffers(overrides(flags.removeprefix("-ot ")), found) if flags.startswith("-ot ") else True
    runs = 1 + sum(_key(a) != _key(b) or _layer(a) + 1 != _layer(b) for a, b in itertools.pairwise(found))
    assert flags.count("=") <= runs  # one pattern for each run of neighbouring layers alike


def _key(override: tuple[str, str]) -> tuple[str, str]:
    return override[0].split("\\.", 2)[2], override[1]


def _layer(override: tuple[str, str]) -> int:
    return int(override[0].split("\\.", 2)[1])


def test_fit_prints_one_short_line_for_32_layers_of_experts():
    found = ((r"blk\.16\.ffn_down.*", "CPU"), *((f"blk\\.{i}{EXPS}", "CPU") for i in range(17, 49)))
    assert override_flags(found) == r"-ot blk\.16\.ffn_down.*=CPU,blk\.(1[7-9]|[2-3][0-9]|4[0-8])" + EXPS + "=CPU"
