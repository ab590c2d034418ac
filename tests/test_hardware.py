"""The hardware catalog (paramcount.hardware): names as tools print them, refusals, and sane rows."""

from __future__ import annotations

import pytest

from paramcount.errors import ParamcountError
from paramcount.hardware import DTYPES, KINDS, VENDORS, catalog, lookup
from paramcount.hardware.apple import WORKING_SET_MEASURED

GIB = 2**30
ROWS = catalog()


@pytest.mark.parametrize(
    "name, key",
    [
        ("NVIDIA GeForce RTX 3060", "rtx3060-12gb"),
        ("RTX 3060", "rtx3060-12gb"),
        ("rtx3060", "rtx3060-12gb"),
        ("RTX 3060 8GB", "rtx3060-8gb"),
        ("RTX 3080 12GB", "rtx3080-12gb"),
        ("3090 24GB", "rtx3090-24gb"),
        ("4090", "rtx4090-24gb"),
        ("H100 SXM", "h100-sxm"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),  # nvidia-smi's name for the SXM card
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("A100 SXM 80GB", "a100-sxm-80gb"),
        ("a100 80gb sxm", "a100-sxm-80gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
        ("Tesla V100-SXM2-16GB", "v100-sxm2-16gb"),
        ("Tesla T4", "t4"),
        ("Apple M4 Pro 24GB", "m4-pro-24gb"),
        ("M2 Max 64GB", "m2-max-64gb"),
        ("Apple M2 Max (64 GB)", "m2-max-64gb"),
        ("m2-max-64gb", "m2-max-64gb"),
        ("AMD Instinct MI300X", "mi300x"),
        ("Radeon RX 7900 XTX", "rx7900xtx-24gb"),
        ("RTX 6000 Ada Generation", "rtx6000-ada-48gb"),
        ("AMD EPYC 9654 96-Core Processor", "epyc-9654"),
        ("Intel(R) Xeon(R) Platinum 8480+", "xeon-platinum-8480+"),
        ("epyc-9654", "epyc-9654"),
    ],
)
def test_names_as_vendors_and_tools_print_them(name, key):
    assert lookup(name).key == key


@pytest.mark.parametrize(
    "name, choices",
    [
        ("A100", "a100-pcie-40gb, a100-sxm-40gb, a100-pcie-80gb or a100-sxm-80gb"),
        ("RTX 3080", "rtx3080-10gb or rtx3080-12gb"),
        ("4060 Ti", "rtx4060ti-8gb or rtx4060ti-16gb"),
        ("M2 Max", "m2-max-32gb, m2-max-64gb or m2-max-96gb"),
        ("H100", "h100-pcie, h100-sxm or h100-nvl"),
    ],
)
def test_a_name_of_several_rows_is_refused_with_the_choices(name, choices):
    with pytest.raises(ParamcountError) as e:
        lookup(name)
    assert str(e.value) == f"--gpu: {name!r} is more than one: say {choices}"


def test_an_unknown_name_suggests_close_ones_on_one_line():
    with pytest.raises(ParamcountError, match=r"unknown hardware 'RTX 4090 D'; did you mean rtx4090-24gb") as e:
        lookup("RTX 4090 D")
    assert "\n" not in str(e.value)
    with pytest.raises(ParamcountError, match=r"unknown hardware 'x{80}'"):
        lookup("x" * 100_000)  # bounded: the name is cut before it is read
    with pytest.raises(ParamcountError, match="unknown hardware ''"):
        lookup("  ")


def test_every_row_is_complete_and_of_sane_magnitude():
    assert len({r.key for r in ROWS}) == len(ROWS)
    for r in ROWS:
        assert r.sources and all(s.strip() for s in r.sources), r.key
        assert r.kind in KINDS and r.vendor in VENDORS and set(r.flops) <= set(DTYPES), r.key
        assert all(1e11 < v < 2e16 for v in r.flops.values()), r.key  # 0.1 TFLOP/s to 20 PFLOP/s
        if r.kind == "cpu":
            assert r.memory_bytes == r.usable_bytes == 0 and r.cores and r.memory_channels and r.features, r.key
            assert r.bandwidth_bytes_per_s == r.memory_channels * r.memory_speed_mts * 10**6 * 8
            assert 50e9 < r.bandwidth_bytes_per_s < 700e9, r.key
        else:
            assert 2 * GIB <= r.memory_bytes <= 512 * GIB, r.key
            assert 0.6 * r.memory_bytes <= r.usable_bytes <= r.memory_bytes, r.key
            assert 60e9 < r.bandwidth_bytes_per_s < 9e12, r.key
        if r.vendor == "nvidia":
            assert r.capability is not None, r.key
        assert lookup(r.key) is r  # every key finds its own row
        for alias in r.aliases:
            assert r in _candidates(alias), (r.key, alias)


def _candidates(name):
    from paramcount.hardware import candidates

    return candidates(name)


@pytest.mark.parametrize(
    "key, dtype, tflops",
    [  # the whitepapers' own tables, which the SM × clock × rate rows must reproduce
        ("rtx2080ti-11gb", "fp16", 53.8),
        ("rtx3090-24gb", "bf16", 71.0),
        ("rtx3090-24gb", "fp32", 35.6),
        ("rtx4090-24gb", "bf16", 165.2),
        ("rtx4090-24gb", "fp8", 330.3),
        ("rtx4090-24gb", "fp32", 82.6),
        ("rtx5090-32gb", "bf16", 209.5),
        ("rtx5090-32gb", "fp32", 104.8),
        ("gtx1080ti-11gb", "fp32", 11.3),
        ("rtx-a6000-48gb", "fp32", 38.7),
        ("rtx6000-ada-48gb", "fp32", 91.1),
        ("rx7900xtx-24gb", "fp32", 61.4),
        ("rx7900xt-20gb", "fp32", 51.5),
    ],
)
def test_derived_flops_match_the_vendors_tables(key, dtype, tflops):
    assert lookup(key).flops[dtype] / 1e12 == pytest.approx(tflops, rel=0.005)  # tables print 3 figures


@pytest.mark.parametrize(
    "key, gbs",
    [("rtx3060-12gb", 360), ("rtx3060-8gb", 240), ("rtx4090-24gb", 1008), ("rtx5090-32gb", 1792), ("h100-sxm", 3350)],
)
def test_bandwidth_as_the_spec_pages_print_it(key, gbs):
    assert lookup(key).bandwidth_bytes_per_s == gbs * 10**9


APPLE_SIZES = {
    "M1": (8, 16), "M1 Pro": (16, 32), "M1 Max": (32, 64), "M1 Ultra": (64, 128),
    "M2": (8, 16, 24), "M2 Pro": (16, 32), "M2 Max": (32, 64, 96), "M2 Ultra": (64, 128, 192),
    "M3": (8, 16, 24), "M3 Pro": (18, 36), "M3 Max": (36, 48, 64, 96, 128), "M3 Ultra": (96, 256, 512),
    "M4": (8, 16, 24, 32), "M4 Pro": (24, 48, 64), "M4 Max": (36, 48, 64, 128),
}  # fmt: skip


def test_every_apple_chip_in_every_memory_size_sold():
    apple = {(r.family, r.memory_bytes // GIB) for r in ROWS if r.kind == "apple"}
    assert apple == {(chip, gb) for chip, sizes in APPLE_SIZES.items() for gb in sizes}
    for chip, sizes in APPLE_SIZES.items():
        for gb in sizes:
            assert lookup(f"Apple {chip} {gb}GB").memory_bytes == gb * GIB


def test_the_apple_working_set_is_metals_recommended_size():
    # macOS: 48 GiB of 64 (51539.61 MB in llama.cpp's log), 107.52 GiB of 128 on macOS 26
    assert lookup("M2 Max 64GB").usable_bytes == 48 * GIB
    assert lookup("Apple M3 Max 128GB").usable_bytes / GIB == pytest.approx(107.52)
    assert lookup("M1 16GB").usable_bytes == 16 * GIB * 2 // 3
    assert set(WORKING_SET_MEASURED) == {16, 32, 64, 96, 128}
    m3_max = {r.memory_bytes // GIB: r.bandwidth_bytes_per_s // 10**9 for r in ROWS if r.family == "M3 Max"}
    assert m3_max == {36: 300, 96: 300, 48: 400, 64: 400, 128: 400}  # two bins, two bandwidths


def test_measured_cuda_totals_are_kept():
    assert lookup("h100-sxm").usable_bytes == 85_017_493_504
    assert lookup("H200").usable_bytes == 150_109_880_320
    assert all(
        "estimated" in " ".join(r.notes)
        for r in ROWS
        if r.vendor == "nvidia" and r.key not in ("h100-sxm", "h200", "rtx4090-24gb")
    )


def test_rows_are_read_only():
    row = lookup("t4")
    with pytest.raises(TypeError):
        row.flops["fp32"] = 1.0  # type: ignore[index]
    assert row.as_dict()["flops"]["fp32"] == 8.1e12
