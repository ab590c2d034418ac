"""Fit: the GPU table's bytes, custom sizes, and that every "largest" or "fewest" is a boundary
of the plan's own figures (one more token, sequence, or one GPU fewer, does not fit)."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import paramcount
from paramcount.errors import ParamcountError
from paramcount.memory import GPUS, fit, gpu, inference, overview, train
from paramcount.memory.core.gpus import GB, GIB
from paramcount.memory.fit import SCHEMA, largest, smallest

LLAMA13 = "meta-llama/Llama-2-13b-hf"


@pytest.fixture(scope="module")
def llama13():
    return paramcount.load(LLAMA13)


# ---- the table ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, gib",
    [
        ("rtx3060", 12),
        ("RTX 3090", 24),
        ("GeForce RTX 4090", 24),
        ("5090", 32),
        ("t4", 16),
        ("v100-32gb", 32),
        ("l4", 24),
        ("l40s", 48),
        ("A100 40GB", 40),
        ("a100-80gb", 80),
        ("H100", 80),
        ("h200", 141),
        ("MI300X", 192),
    ],
)
def test_vendor_gb_on_gpus_is_binary(name, gib):
    """A "24 GB" card holds 24·2^30 bytes: GDDR and HBM chips come in binary gigabytes (of
    which CUDA reports a little less as usable: tests/test_allocator.py)."""
    g = gpu(name)
    assert g.memory == gib * GIB and g.unit == "GiB"
    assert g.usable < g.memory if g.capability else g.usable == g.memory  # NVIDIA's driver keeps some back


@pytest.mark.parametrize("gb", [8, 16, 24, 32, 36, 48, 64, 96, 128, 192])
def test_apple_unified_memory_gpu_share(gb):
    g = gpu(f"apple-{gb}gb")
    assert g.memory == gb * GIB
    # Metal's recommendedMaxWorkingSetSize: 2/3 up to 36 GB, 3/4 above, but 107.52 GiB (84%) as
    # logged on 128 GB Macs under macOS 26 (antirez/ds4#890, #893; paramcount.hardware.apple)
    share = Fraction(84, 100) if gb == 128 else Fraction(2, 3) if gb <= 36 else Fraction(3, 4)
    assert g.usable == int(gb * GIB * share)
    assert "macOS" in g.note


def test_custom_sizes_are_read_as_written():
    assert gpu("24GB").memory == 24 * GB and gpu("24GB").unit == "GB"
    assert gpu("20GiB").memory == 20 * GIB
    assert gpu("1.5 TB").memory == 1500 * GB


def test_every_data_centre_and_consumer_gpu_has_a_peak():
    for g in GPUS.values():
        assert (g.tflops is None) == (g.kind == "apple"), g.key


@pytest.mark.parametrize(
    "name, message",
    [
        ("rtx4095", "unknown GPU 'rtx4095'; did you mean rtx4090"),
        ("H10", "did you mean h100"),
        ("a100", "'a100' is more than one GPU: say a100-40gb or a100-80gb"),
        ("0GB", "a size must be positive"),
        ("12 parsecs", "unknown GPU '12 parsecs'"),
    ],
)
def test_unknown_gpus(name, message):
    with pytest.raises(ParamcountError, match=message):
        gpu(name)


# ---- the search -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cut", [1, 2, 7, 999, 1000])
def test_largest_and_smallest_find_the_boundary(cut):
    assert largest(lambda n: n <= cut, 1, 1000) == cut
    assert smallest(lambda n: n >= cut, 1, 1000) == cut
    assert largest(lambda n: n <= 0, 1, 1000) is None
    assert smallest(lambda n: n > 1000, 1, 1000) is None


@pytest.mark.parametrize("card, context", [("rtx3060", 4096), ("rtx4090", 4096), ("24GB", 1000), ("apple-16gb", 2048)])
def test_inference_limits_are_boundaries(llama13, card, context):
    result = fit(llama13, card, context=context, batch=1)
    cap = gpu(card).usable
    for row in result.rows:
        scheme = row.precision
        assert row.fits == (inference(llama13, scheme, context=context).total <= cap)
        assert row.headroom == cap - row.plan.total
        if row.max_context is not None:
            assert inference(llama13, scheme, context=row.max_context).total <= cap
            if row.max_context < row.context_limit:
                assert inference(llama13, scheme, context=row.max_context + 1).total > cap
        else:
            assert inference(llama13, scheme, context=1).total > cap
        if row.max_batch is not None:
            assert inference(llama13, scheme, context=context, batch=row.max_batch).total <= cap
            assert inference(llama13, scheme, context=context, batch=row.max_batch + 1).total > cap
        else:
            assert not row.fits


def test_seed_claim_as_a_fit(llama13):
    """13B on a 12 GB RTX 3060 at 4,096 tokens: only weights at 0.5 B per parameter fit; the real
    4-bit formats, with their scales and 16-bit embeddings, fit a shorter context."""
    result = fit(llama13, "rtx3060", context=4096)
    fits = {r.precision for r in result.rows if r.fits}
    assert fits == {"int4"}
    assert result.row("int4").max_context == 4096 == result.row("int4").context_limit
    for scheme in ("nf4", "q4_k_m"):
        assert 2048 < result.row(scheme).max_context < 4096


def test_training_fewest_gpus_is_a_boundary():
    model = paramcount.load("meta-llama/Llama-2-7b-hf")
    result = fit(model, "a100-40gb", context=1024, batch=1, mode="training")
    cap = gpu("a100-40gb").usable
    for row in result.rows:
        precision = row.precision
        n = row.gpus
        assert n is not None
        assert train(model, precision=precision, zero=3, gpus=n, context=1024).total <= cap
        if n > 1:
            assert train(model, precision=precision, zero=3, gpus=n - 1, context=1024).total > cap


def test_training_limits_hold_the_other_settings():
    model = paramcount.load("meta-llama/Llama-2-7b-hf")
    row = fit(model, "h100", context=2048, mode="training", zero=3, gpus=8, recompute="full").row("mixed")
    assert row.plan.settings["gpus"] == 8 and row.plan.settings["recompute"] == "full"
    over = train(model, zero=3, gpus=8, recompute="full", context=row.max_context + 1)
    assert row.max_context == row.context_limit or over.total > gpu("h100").usable


# ---- every GPU at once, JSON, errors ----------------------------------------------------------------


def test_overview_agrees_with_fit(llama13):
    o = overview(llama13, context=2048)
    assert len(o.gpus) == len(GPUS)
    one = fit(llama13, "rtx4090", context=2048)
    for row in one.rows:
        assert o.headroom(GPUS["rtx4090"], row.precision) == row.headroom
    data = o.to_dict()
    assert data["schema"] == SCHEMA and data["gpu"] is None and len(data["table"]) == len(GPUS)


def test_fit_json(llama13):
    data = fit(llama13, "rtx3060", context=4096).to_dict()
    assert data["schema"] == "paramcount.fit/1"
    assert set(data) == {"schema", "model", "gpu", "mode", "context", "batch", "settings", "rows", "skipped"}
    assert data["gpu"]["memory"] == 12 * GIB and data["gpu"]["unit"] == "GiB"
    row = data["rows"][0]
    assert set(row) == {
        "precision",
        "fits",
        "total",
        "headroom",
        "max_context",
        "context_limit",
        "max_batch",
        "gpus",
        "settings",
        "terms",
    }
    assert row["total"]["bytes"] == sum(row["terms"].values())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mode": "serving"}, "mode is inference or training"),
        ({"zero": 3}, "unknown inference option 'zero'"),
        ({"mode": "training", "kv_dtype": "fp8"}, "unknown training option 'kv_dtype'"),
        ({"batch": 0}, "--batch: expected an integer ≥ 1"),
        ({"context": -5}, "--context: expected an integer ≥ 1"),
    ],
)
def test_bad_fit_settings(llama13, kwargs, message):
    with pytest.raises(ParamcountError, match=message):
        fit(llama13, "rtx3060", **kwargs)


def test_qlora_fit_shows_the_qlora_row_alone():
    model = paramcount.load("meta-llama/Llama-2-7b-hf")
    result = fit(model, "rtx4090", context=1024, mode="training", qlora=True, lora=16)
    assert [r.precision for r in result.rows] == ["qlora"]
    assert result.rows[0].plan.settings["lora"] == "rank 16 on q_proj,v_proj"


def test_a_precision_the_model_cannot_take_is_left_out_with_the_reason():
    # LongCat-Flash: llama.cpp's converter has no class for it, so no llama.cpp file type is stated
    result = fit(paramcount.load("meituan-longcat/LongCat-Flash-Chat"), "mi300x", context=1024)
    shown = [r.precision for r in result.rows]
    assert "q4_k_m" not in shown and "q8_0" not in shown  # both llama.cpp file types, each a mix
    assert [s.split(":")[0] for s in result.skipped] == ["q8_0", "q4_k_m"]
    assert overview(paramcount.load("meituan-longcat/LongCat-Flash-Chat"), context=1024).skipped == result.skipped
    with pytest.raises(ParamcountError, match=r"no llama\.cpp mix"):
        fit(paramcount.load("meituan-longcat/LongCat-Flash-Chat"), "mi300x", context=1024, only=("q4_k_m",))


@given(
    steps=st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=40),
    base=st.integers(min_value=0, max_value=10**9),
    cap=st.integers(min_value=0, max_value=10**9),
    high=st.integers(min_value=1, max_value=1 << 20),
    slope=st.integers(min_value=0, max_value=10**4),
)
@settings(max_examples=400, deadline=None)
def test_the_secant_search_answers_as_bisection(steps, base, cap, high, slope):
    """fit's searches guess along the line through the interval's ends; on any cost that never
    falls (linear, stepped like llama.cpp's padded cells, flat) the answer is bisection's."""
    from paramcount.memory.fit import largest_under

    marks = sorted(steps)

    def cost(n: int) -> int:
        return base + slope * n + sum(1000 for m in marks if n > m)

    calls = []

    def counted(n: int) -> int:
        calls.append(n)
        return cost(n)

    assert largest_under(counted, cap, 1, high) == largest(lambda n: cost(n) <= cap, 1, high)
    assert len(calls) <= 4 * high.bit_length() + 4  # never worse than a bisection by much
