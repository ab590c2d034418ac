"""Float config fields, extreme runtime flags and odd paths through the command line: each ends
in a plan or one line naming the field, exit 2; never a traceback (issue 25 items 3, 4 and 6).
Then hypothesis perturbs the runtime flags of ``memory`` and ``fit`` at random."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paramcount.cli import main
from paramcount.frontends import catalog

NAN, INF = float("nan"), float("inf")


def config(folder: Path, name: str, raw: dict) -> str:
    """``raw`` written as Python's json writes it: NaN and Infinity as bare words, as a file may hold them."""
    path = folder / f"{name}.json"
    path.write_text(json.dumps(raw))
    return str(path)


def catalog_with(name: str, **fields) -> dict:
    return {**catalog.get(name).config, **fields}


def phi3_longrope(pct) -> dict:
    raw = catalog_with("microsoft/Phi-3-mini-4k-instruct", partial_rotary_factor=pct)
    return {**raw, "rope_scaling": {"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48}}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("floats")
    made = {f"lfm2-{v}": catalog_with("LiquidAI/LFM2-1.2B", block_ffn_dim_multiplier=v) for v in (NAN, INF, 1e308)}
    made["step37-nan"] = {"model_type": "step3p7", "vision_config": {"mlp_ratio": NAN}}  # Step-3.7 at its defaults
    for name, ratio in (("llama4-tiny", 1e-200), ("llama4-nan", NAN)):  # Llama 4 at its defaults
        made[name] = {"model_type": "llama4", "vision_config": {"pixel_shuffle_ratio": ratio}}
    made["phi3-abc"], made["phi3-nan"] = phi3_longrope("abc"), phi3_longrope(NAN)
    out = {k: config(base, k, v) for k, v in made.items()}
    long = base / "long-path"
    long.mkdir()  # every part short, the whole past PATH_MAX (4,096): ENAMETOOLONG, not ENOENT
    index = {"weight_map": {"w": "a/" * 2100 + "x.safetensors"}}
    (long / "model.safetensors.index.json").write_text(json.dumps(index))
    out["long-path"] = str(long)
    superscript = base / "superscript.txt"
    superscript.write_text(
        "Net(\n  (layers): ModuleList(\n    (²): Linear(in_features=4, out_features=4, bias=True)\n  )\n)\n"
    )
    out["superscript"] = str(superscript)
    return out


KIMI = "moonshotai/Kimi-Linear-48B-A3B-Instruct"
LLAMA8B, INTERNVL, NEXT = "meta-llama/Llama-3.1-8B", "OpenGVLab/InternVL3-8B-hf", "Qwen/Qwen3-Next-80B-A3B-Instruct"
REFUSED = [  # argv (file keys in {braces}), what the one line must say
    (["{lfm2-nan}"], "block_ffn_dim_multiplier: nan is out of range (must be in 0..1024)"),
    (["{lfm2-inf}"], "block_ffn_dim_multiplier: inf is out of range"),
    (["{lfm2-1e+308}"], "block_ffn_dim_multiplier: 1e+308 is out of range"),
    (["LiquidAI/LFM2-1.2B", "--set", "block_ffn_dim_multiplier=NaN"], "'NaN' holds NaN or infinity"),
    (["LiquidAI/LFM2-1.2B", "--set", "block_ffn_dim_multiplier=1e400"], "'1e400' holds NaN or infinity"),
    (["LiquidAI/LFM2-1.2B", "--set", "block_ffn_dim_multiplier=-Infinity"], "holds NaN or infinity"),
    (["LiquidAI/LFM2-1.2B", "--set", "block_ffn_dim_multiplier=0"], "gives an MLP width of 0"),
    (["{step37-nan}"], "vision_config.mlp_ratio: nan is out of range"),
    (
        ["memory", "{llama4-tiny}", "--images", "1", "--image-size", "1024x768"],
        "vision_config.pixel_shuffle_ratio: 1e-200 is out of range",
    ),
    (
        ["memory", "{llama4-nan}", "--images", "1", "--image-size", "1024x768"],
        "vision_config.pixel_shuffle_ratio: nan is out of range",
    ),
    (
        ["memory", "{phi3-abc}", "--dtype", "q4_k_m", "--runtime", "llama.cpp"],
        "partial_rotary_factor: expected a number, got 'abc'",
    ),
    (
        ["memory", "{phi3-nan}", "--dtype", "q4_k_m", "--runtime", "llama.cpp"],
        "partial_rotary_factor: nan is out of range (must be in 0..1)",
    ),
    (["memory", LLAMA8B, "--runtime", "vllm", "--gpu", "h100", "--gpu-memory-utilization=1e-320"], "[0.01, 1]"),
    (["memory", LLAMA8B, "--runtime", "vllm", "--gpu-memory-utilization=nan"], "got 'nan'"),
    (["memory", LLAMA8B, "--runtime", "vllm", "--gpu-memory-utilization=1e-999999999"], "got '1e-999999999'"),
    (["memory", LLAMA8B, "--runtime", "vllm", "--gpu-memory-utilization=inf"], "expected a share in [0.01, 1]"),
    ([INTERNVL, "--set", "downsample_ratio=5e-324"], "downsample_ratio: 5e-324 is out of range (must be in 1/1024..1"),
    (
        ["memory", INTERNVL, "--images", "1", "--image-size", "1024x768", "--set", "downsample_ratio=0.0005"],
        "downsample_ratio: 0.0005 is out of",
    ),
    (
        ["memory", INTERNVL, "--images", "1", "--image-size", "1024x768", "--set", "downsample_ratio=0.01"],
        "0.01 leaves no token of a 32×32",
    ),
    (
        ["memory", NEXT, "--runtime", "llama.cpp", "--set", "full_attention_interval=100"],
        "full_attention_interval: llama.cpp's converter writes the MTP layer as a copy of the last full-attention",
    ),
    (
        ["memory", KIMI, "--runtime", "llama.cpp", "--dtype", "q4_k_m", "--set", 'num_key_value_heads="abc"'],
        "num_key_value_heads: expected a whole number in 1..67,108,864, got 'abc'",
    ),
    (["{long-path}"], "weight_map shard 'a/a/a/"),
    (["memory", "{long-path}"], "cannot be opened: File name too long"),
]


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(code: int, out: str, err: str) -> bool:
    """Refused: one line on stderr, or under --json the error document on stdout and nothing else."""
    if code == 2 and not err and out.startswith("{"):
        import json

        return set(json.loads(out)) == {"schema", "error", "field", "source"} and "\n" not in json.loads(out)["error"]
    return code == 2 and err.count("\n") == 1 and err.startswith("paramcount: error: ") and "Traceback" not in out


@pytest.mark.parametrize("argv, said", REFUSED, ids=lambda x: " ".join(x)[:70] if isinstance(x, list) else None)
def test_refused_in_one_line(files, capsys, argv, said):
    code, out, err = run([a.format(**files) if "{" in a[:1] else a for a in argv], capsys)
    assert one_line(code, out, err), err[-600:]
    assert said in err, err[:300]


def test_the_edges_of_each_range_still_count(capsys):
    """The bounds refuse only what breaks: the published values and the ends of each range count."""
    for argv in (
        ["LiquidAI/LFM2-1.2B", "--set", "block_ffn_dim_multiplier=0.5"],
        ["memory", INTERNVL, "--images", "1", "--image-size", "1024x768", "--set", "downsample_ratio=1"],
        ["memory", LLAMA8B, "--runtime", "vllm", "--gpu", "h100", "--gpu-memory-utilization=0.01"],
        ["memory", NEXT, "--runtime", "llama.cpp", "--set", "full_attention_interval=48"],
    ):
        code, out, err = run(argv, capsys)
        # a plan that does not fit its --gpu exits 1 (vLLM at 1% of an H100 would not start)
        assert code == (1 if "--gpu" in argv else 0) and "parameters" in out, err


def test_a_superscript_layer_key_is_a_name_not_an_index(files, capsys):
    """``(²)``: str.isdigit() says yes, int() raises; it is a module named ² (counted, not indexed)."""
    code, out, err = run([files["superscript"], "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["total"] == 20 and [t["name"] for t in doc["tensors"]] == ["layers.².weight", "layers.².bias"]


# ---- random runtime flags through memory and fit -------------------------------------------------

ODD = ["nan", "NaN", "inf", "-inf", "1e308", "-1e308", "1e-320", "5e-324", "1e999999999", "0", "-1", "", " ", "abc"]
ODD += ["9" * 40, "1_000", "32k", "0x10", "١", "²", "1.5", "-0", "+3", "\x1b[2J"]
VALUE = st.sampled_from(ODD) | st.integers(-(2**70), 2**70).map(str) | st.floats().map(repr) | st.text(max_size=6)
FLAGS = ["context", "batch", "gpu-memory-utilization", "tp", "pp", "ep", "max-num-seqs", "max-num-batched-tokens"]
FLAGS += ["block-size", "ubatch", "parallel", "concurrency", "overhead", "kv-dtype", "images", "vllm-version"]
FLAGS += ["tensor-split", "n-gpu-layers", "main-gpu", "n-cpu-moe"]  # llama.cpp's placement (issue 32 item 5)
FIELDS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim"]
FIELDS += ["intermediate_size", "max_position_embeddings", "sliding_window", "full_attention_interval", "vocab_size"]
FIELDS += ["partial_rotary_factor", "rope_theta", "num_experts", "num_experts_per_tok", "linear_num_value_heads"]
FIELDS += ["v_head_dim", "qk_nope_head_dim", "kv_lora_rank", "block_ffn_dim_multiplier", "downsample_ratio"]
SET_VALUE = VALUE | st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "null", "[]", "[1, NaN]", "{}", "true"])
MODELS = ["gpt2", "Qwen/Qwen3-0.6B", "meta-llama/Llama-3.2-1B", NEXT, "google/gemma-3-1b-pt", "Qwen/Qwen3-30B-A3B"]
MODELS += [KIMI, "LiquidAI/LFM2-1.2B", INTERNVL, "microsoft/Phi-3-mini-4k-instruct"]
EXAMPLES = int(os.environ.get("PARAMCOUNT_FUZZ_EXAMPLES", "15"))  # a few seconds here; set 400 for a long run


@settings(max_examples=EXAMPLES * 2, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    command=st.sampled_from(["memory", "fit"]),
    model=st.sampled_from(MODELS),
    runtime=st.sampled_from(["transformers", "llama.cpp", "vllm", None]),
    dtype=st.sampled_from([None, "q4_k_m", "bf16", "fp8"]),
    gpu=st.sampled_from(["h100", "rtx4090", "24GB", None]),
    flags=st.dictionaries(st.sampled_from(FLAGS), VALUE, max_size=3),
    fields=st.dictionaries(st.sampled_from(FIELDS), SET_VALUE, max_size=2),
    json_out=st.booleans(),
)
def test_random_runtime_flags_end_in_a_plan_or_one_line(
    capsys, command, model, runtime, dtype, gpu, flags, fields, json_out
):
    argv = [command, model, *(["--runtime", runtime] if runtime else []), *(["--gpu", gpu] if gpu else [])]
    argv += ["--dtype", dtype] if dtype else []
    argv += [f"--{flag}={value}" for flag, value in flags.items()]
    argv += [a for field, value in fields.items() for a in ("--set", f"{field}={value}")]
    code, out, err = run(argv + (["--json"] if json_out else []), capsys)
    assert "Traceback" not in out + err and "\x1b" not in out + err, err[-600:]
    if code == 2 and json_out:  # the error as a JSON object on stdout
        assert not err and "error" in json.loads(out), out[-600:]
        return
    assert code in (0, 1) or one_line(code, out, err), (argv, err[-600:])
    if code == 0 and json_out:
        json.loads(out)


# ---- random -ot patterns and -ts proportions (issue 32 items 1 and 5) -----------------------------

REGEX_BITS = ["blk", r"\.", ".", "*", "+", "?", "(", ")", "(?:", "|", "[", "]", "^", "-", "{", "}", "2", ",", "1"]
REGEX_BITS += [r"\d", r"\w", r"\b", r"\1", "(?=", "(?s:", "exps", "ffn_", "$", "\\", "{4294967296}", "{1000}", "é"]


@settings(max_examples=EXAMPLES * 4, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    pattern=st.lists(st.sampled_from(REGEX_BITS), min_size=1, max_size=16).map("".join),
    shares=st.lists(st.sampled_from(ODD) | st.floats().map(repr), min_size=1, max_size=4).map(",".join),
)
def test_random_placement_patterns_end_in_a_plan_or_one_line(capsys, pattern, shares):
    """Any -ot text and -ts list: a plan, or one line naming the flag; the matcher is linear in
    the name whatever the pattern, so no example can spin (Python's re could)."""
    argv = ["memory", "Qwen/Qwen3-30B-A3B", "--runtime", "llama.cpp", "--dtype", "q4_k_m", "-ngl", "20"]
    code, out, err = run([*argv, "-ot", f"{pattern}=CPU", "-ts", shares, "--json"], capsys)
    assert "Traceback" not in out + err and "\x1b" not in out + err, err[-600:]
    assert code == 0 or one_line(code, out, err), (pattern, shares, err[-600:])
    if code == 2:
        said = err or out  # under --json the error document is on stdout
        assert "--override-tensor" in said or "--tensor-split" in said or "--main-gpu" in said, said
