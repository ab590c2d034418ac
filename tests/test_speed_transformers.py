"""transformers' speed (:mod:`paramcount.memory.speed.hf`): the estimate where optimum-benchmark's
``model.generate`` runs were fitted, the bounds (labelled, with why) where they were not, and the
arithmetic behind both. The fit itself is held by tests/test_speed.py (factors.json is what
tools/speed_calibration/fit.py writes from the committed CSVs)."""

import csv
from pathlib import Path

import pytest

import paramcount
from paramcount.memory.speed import hf
from paramcount.memory.speed import llamacpp as lcp
from paramcount.memory.speed.estimate import speed
from paramcount.memory.speed.factors import fitted

DATA = Path(__file__).resolve().parents[1] / "tools" / "speed_calibration" / "transformers.csv"


def _speed(name="meta-llama/Llama-2-7b-hf", gpu="A100 SXM 80GB", dtype="fp16", **kw):
    return speed(paramcount.load(name), [gpu], "transformers", dtype, **kw)


def _fit_module():
    from .test_speed import _fit_module as load

    return load()


def test_a_fitted_run_is_predicted_within_its_expected_error():
    """optimum-benchmark's Llama-2-7b fp16 run on an A100 (transformers 4.35.2, sdpa, a prompt of 256
    and 512 new tokens: a mean depth of 512): 41.9 tokens/s decode, 256 tokens in 31.8 ms."""
    s = _speed(context=512, prompt=256)
    e = s.decode.error
    assert s.decode.tokens_per_s == pytest.approx(41.9, rel=e["p90"])
    assert s.prefill.tokens_per_s == pytest.approx(256 / 0.0318, rel=s.prefill.error["p90"])
    assert e["runtime"] == "transformers" and e["family"] == "nvidia-pro" and e["rows"] >= 6
    assert e["fitted_hardware"] == ["a100-sxm-80gb"] and e["this_hardware_fitted"] is True
    assert s.decode.bound_tokens_per_s > s.decode.tokens_per_s and s.prefill.bound_tokens_per_s > s.prefill.tokens_per_s


def test_another_card_of_the_family_says_it_was_not_fitted():
    e = _speed(gpu="H100 SXM").to_dict()["decode"]["estimate"]["expected_error"]
    assert e["this_hardware_fitted"] is False and e["fitted_hardware"] == ["a100-sxm-80gb"]


@pytest.mark.parametrize(
    ("gpu", "dtype", "why"),
    [("RTX 4090", "bf16", "not calibrated on nvidia-geforce"), ("A100 SXM 80GB", "int8", "not int8"),
     ("A100 SXM 80GB", "fp32", "not fp32")],
)  # fmt: skip
def test_where_no_run_was_fitted_only_the_bound_labelled_with_why(gpu, dtype, why):
    d = _speed(gpu=gpu, dtype=dtype).to_dict()
    for phase in ("decode", "prefill", "ttft"):
        assert d[phase]["estimate"] is None and why in d[phase]["note"], d[phase]
        assert d[phase]["upper_bound"]["label"].startswith("upper bound")
    assert d["decode_tokens_per_s"] is None and d["ttft_s"] is None


def test_a_mixture_of_experts_gets_the_bound_only():
    d = _speed("mistralai/Mixtral-8x7B-v0.1", gpu="H200", dtype="bf16").to_dict()
    assert d["decode"]["estimate"] is None and "mixture of experts" in d["decode"]["note"]


def test_several_gpus_give_the_first_ones_bound_only():
    d = speed(paramcount.load("meta-llama/Llama-2-7b-hf"), ["A100 SXM 80GB", "A100 SXM 80GB"], "transformers", "fp16")
    assert d.decode.seconds is None and "several GPUs" in d.decode.why and len(d.hardware) == 1


def test_a_dynamic_cache_step_reads_the_cache_and_copies_it():
    """DynamicLayer.update's torch.cat reads the old cache and writes a new one; attention reads it."""
    s = _speed(context=4096)
    read = s.decode.terms["bytes_read_per_step"]
    assert read["kv_cache"] == 4096 * 32 * 2 * 4096 * 2  # layers × (K, V) × 4096 wide × 2 bytes, per cell
    assert read["kv_cache_copy"] == 2 * read["kv_cache"]
    step = sum(p.bytes for p in s.decode.parts)
    assert step == read["weights"] + 3 * read["kv_cache"] + read["embedding_rows"]


def test_decode_and_prefill_are_the_fitted_terms_arithmetic():
    """A step: its reads at the fitted share of the bandwidth plus layer_s per layer; a prompt: its
    FLOPs at the fitted share of the peak plus the same per-layer overhead."""
    f = fitted("transformers", "nvidia-pro")
    s = _speed(context=1024, prompt=512)
    hw, layers = s.hardware[0], 32
    reads = sum(p.bytes for p in s.decode.parts if p.device == hw.key)
    expect = reads / (hw.bandwidth_bytes_per_s * f.get("bandwidth")) + layers * f.get("layer_s")
    assert s.decode.seconds == pytest.approx(expect, rel=1e-6)
    w = hf.work(paramcount.load("meta-llama/Llama-2-7b-hf"), _rows())
    flops = w.prompt_flops(512) / (lcp.peak(hw) * f.get("compute"))
    weights = sum(w.weights.values()) / (hw.bandwidth_bytes_per_s * f.get("bandwidth"))
    assert s.prefill.seconds == pytest.approx(max(flops, weights) + layers * f.get("layer_s"), rel=1e-6)
    assert s.ttft.seconds == pytest.approx(s.prefill.seconds)


def _rows():
    from paramcount.memory.weights.schemes import weights

    return weights(paramcount.load("meta-llama/Llama-2-7b-hf"), "fp16").rows


def test_a_short_prompt_is_bound_by_the_layers_launches():
    s = _speed(prompt=16)
    assert s.prefill.bound_by.startswith("per-layer launch/sync overhead")


def test_batches_past_the_fitted_ones_carry_no_expected_error():
    assert _speed(concurrency=hf.MAX_BATCH).decode.error is not None
    past = _speed(concurrency=hf.MAX_BATCH + 1).decode
    assert past.error is None and past.seconds and f"batches of 1 to {hf.MAX_BATCH}" in past.why


def test_runs_outside_the_fitted_settings_stay_in_the_data_unfitted():
    fit = _fit_module()
    rows, left = fit.read_transformers()
    assert left > 0 and len({r.phase for r in rows}) == 2
    assert sum(r.phase == "decode" for r in rows) >= 6 and sum(r.phase == "prefill" for r in rows) >= 6
    from paramcount.hardware import catalog

    known = {h.key: h for h in catalog()}
    reasons = set()
    for r in csv.DictReader(DATA.open(encoding="utf-8")):
        hw = known.get(r["hardware"])
        reasons.add(fit.hf_left_out(r, hw) if hw else "not in the catalog")
    assert {"quantised kernels: not fitted", "a batch past 8: not fitted"} <= reasons
    assert any(x.startswith("a setting not stated") for x in reasons)


def test_a_decode_rate_is_taken_after_the_prompts_forward():
    """Where only generate's and the forward's latencies were published (optimum-benchmark before
    its decode column), the new tokens after the first over generate's time past the forward."""
    fit = _fit_module()
    row = {"decode_tokens_per_s": "", "generate_s": "2.75", "forward_s": "0.0592"}
    assert fit._hf_decode_rate(row, 1, 100) == pytest.approx(99 / (2.75 - 0.0592))
    assert fit._hf_decode_rate({"decode_tokens_per_s": "149.0"}, 4, 512) == pytest.approx(149.0 / 4)
