"""The attention transformers runs and the kernel PyTorch picks (paramcount.memory.runtimes.transformers.attention)."""

import pytest

import paramcount
from paramcount.errors import ParamcountError
from paramcount.memory import inference
from paramcount.memory.runtimes.transformers.attention import IMPLEMENTATIONS, held, implementation, kernel, per_call


@pytest.mark.parametrize(
    "impl, dtype, windowed, grouped, expected",
    [
        ("sdpa", "bf16", False, True, ("flash", False, False)),
        ("sdpa", "bf16", True, True, ("efficient", True, True)),  # a mask: repeat_kv, bias
        ("sdpa", "fp32", False, True, ("math", False, True)),  # no flash in fp32, no GQA in efficient
        ("sdpa", "fp32", False, False, ("efficient", False, False)),
        ("eager", "bf16", False, True, ("eager", True, True)),
        ("flash_attention_2", "bf16", True, True, ("flash", False, False)),
    ],
)
def test_the_kernel_pytorch_runs(impl, dtype, windowed, grouped, expected):
    k = kernel(impl, dtype, windowed, grouped)
    assert (k.kernel, k.masked, k.repeats) == expected


def test_what_each_kernel_allocates_per_call_and_holds():
    B, T, H = 2, 1000, 8
    assert per_call(kernel("sdpa", "bf16", False, True), B, T, H, 2) == 0
    assert per_call(kernel("sdpa", "bf16", True, True), B, T, H, 2) == 2 * B * T * T  # the bf16 bias
    assert held(kernel("sdpa", "bf16", True, True), B, T, 2, 2) == T * T  # one broadcast bool mask
    math = kernel("sdpa", "fp32", False, True)  # fp32 scores, softmax, _safe_softmax's bool copy; the masks
    assert per_call(math, B, T, H, 4) == 9 * H * B * T * T + 6 * T * T
    eager = kernel("eager", "bf16", False, True)
    assert per_call(eager, B, T, H, 2) == 10 * H * B * T * T  # bf16 scores, their fp32 copy, fp32 softmax
    assert per_call(eager, B, T, H, 2, dtype="fp16") == 8 * H * B * T * T  # fp16 scores, fp32 softmax, fp16 cast
    assert per_call(eager, B, T, H, 4) == 8 * H * B * T * T  # fp32 scores and softmax
    assert per_call(eager, B, T, H, 2, sinks=True) == 6 * H * B * T * (T + 1)
    assert held(eager, B, T, 2, 2) == 2 * B * T * T * 2  # a float mask per kind


def test_the_eager_paths_of_their_own():
    """BLOOM, MPT, DeBERTa-v2 and MPNet as their modeling files run eager (attention.PATHS)."""
    B, T, H = 2, 1000, 8
    eager, square = kernel("eager", "bf16", False, False), H * B * T * T
    # BLOOM: the bound scores and the previous layer's probabilities beside the generic path
    assert per_call(eager, B, T, H, 2, dtype="bf16", path="alibi-held") == 14 * square
    assert per_call(eager, B, T, H, 2, dtype="fp16", path="alibi-held") == 12 * square
    assert per_call(eager, B, T, H, 4, dtype="fp32", path="alibi-held") == 16 * square
    # MPT: the fp32 bias promotes the scores, so fp16 costs what bf16 does; a bool mask
    assert per_call(eager, B, T, H, 2, dtype="fp16", path="alibi-fp32") == 10 * square
    assert per_call(eager, B, T, H, 4, dtype="fp32", path="alibi-fp32") == 8 * square
    assert held(eager, B, T, 2, 1, "alibi-fp32") == B * T * T
    # softmax in the compute dtype: DeBERTa-v2's five score tensors, MPNet's two and its held bias
    assert per_call(eager, B, T, H, 2, dtype="bf16", path="disentangled") == 10 * square
    assert per_call(eager, B, T, H, 4, dtype="fp32", path="relative-bias") == 8 * square
    assert held(eager, B, T, 2, 0, "relative-bias", H) == 2 * square


@pytest.mark.parametrize(
    "model, path",
    [
        ("bigscience/bloom-560m", "alibi-held"),
        ("mosaicml/mpt-7b", "alibi-fp32"),
        ("microsoft/deberta-v3-base", "disentangled"),
        ("microsoft/mpnet-base", "relative-bias"),
    ],
)
def test_these_run_eager_by_default(model, path):
    plan = inference(paramcount.load(model), "bf16", context=512)
    assert plan.settings["attn"] == "eager" and plan.planner.attending.path == path


def test_defaults_follow_transformers():
    oss = paramcount.load("openai/gpt-oss-20b")
    assert implementation(oss, None)[0] == "eager"
    assert implementation(paramcount.load("Qwen/Qwen3-0.6B"), None) == ("sdpa", "transformers' default")
    plan = inference(oss, "bf16", context=8192)
    assert plan.settings["attn"] == "eager" and "gpt_oss" in plan.settings["attn_from"]


@pytest.mark.parametrize(
    "model, attn, dtype, message",
    [
        ("Qwen/Qwen3-0.6B", "flash", "bf16", "--attn must be one of sdpa, eager, flash_attention_2, not 'flash'"),
        ("Qwen/Qwen3-0.6B", "flash_attention_2", "fp32", "flash_attention_2 runs in fp16 or bf16 only"),
        ("openai/gpt-oss-20b", "sdpa", "bf16", "transformers has no sdpa attention for gpt_oss"),
    ],
)
def test_bad_attn_is_refused(model, attn, dtype, message):
    with pytest.raises(ParamcountError, match=message):
        inference(paramcount.load(model), dtype, context=64, attn=attn)


def test_attn_on_the_command_line(capsys):
    from paramcount.cli import main

    assert main(["memory", "Qwen/Qwen3-0.6B", "--attn", "eager", "--context", "4096", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"attn": "eager"' in out and '"attn_from": "--attn"' in out
    assert main(["memory", "Qwen/Qwen3-0.6B", "--attn", "flash"]) == 2
    assert "invalid choice: 'flash'" in capsys.readouterr().err
    assert main(["memory", "openai/gpt-oss-20b", "--attn", "sdpa"]) == 2
    assert "--attn: transformers has no sdpa attention for gpt_oss" in capsys.readouterr().err
    assert main(["memory", "Qwen/Qwen3-0.6B", "--runtime", "vllm", "--attn", "eager"]) == 2
    assert "--attn is a transformers setting" in capsys.readouterr().err


def test_eager_costs_more_than_sdpa_and_grows_with_the_square():
    sdpa = inference(paramcount.load("Qwen/Qwen3-0.6B"), "bf16", context=8192, attn="sdpa").term("activations").bytes
    eager = inference(paramcount.load("Qwen/Qwen3-0.6B"), "bf16", context=8192, attn="eager").term("activations").bytes
    assert eager > 2 * sdpa
    assert set(IMPLEMENTATIONS) == {"sdpa", "eager", "flash_attention_2"}
