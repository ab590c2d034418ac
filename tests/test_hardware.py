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
    assert len(set(ROWS)) == len(ROWS) and {row: 1}[lookup("Tesla T4")] == 1  # rows are hashable
    from dataclasses import replace

    assert replace(row, usable_bytes=1) != row and replace(row, usable_bytes=1).flops == row.flops


# --- detection, from recorded outputs (hardware.detect) ---

from paramcount.hardware.detect import Probes, detect  # noqa: E402

CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 0
cpu cores\t: 56
flags\t\t: fpu sse avx2 avx512f avx512_bf16 avx512_vnni amx_tile amx_bf16 amx_int8
processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 1
cpu cores\t: 56
"""
MEMINFO = "MemTotal:       2113464320 kB\nMemFree:         100 kB\nMemAvailable:   2013464320 kB\n"
SMI = "NVIDIA H100 80GB HBM3, 81559, 81004\nNVIDIA GeForce RTX 3060, 12288, 11950\nSome Future GPU, 4096, [N/A]\n"
ROCM = (
    '{"card0": {"Card model": "0x74a1", "Card Series": "AMD Instinct MI300X", "VRAM Total Memory (B)": "206141652992", '
    '"VRAM Total Used Memory (B)": "291123200"}}'
)


def _probes(commands: dict[str, str], files: dict[str, str], platform: str = "linux") -> Probes:
    def run(cmd):
        return commands.get(cmd[0] if cmd[0] != "sysctl" else cmd[-1])

    return Probes(run=run, read=files.get, nvml=lambda: None, platform=platform)


def test_detect_reads_gpus_ram_and_cpu_from_recorded_outputs():
    m = detect(_probes({"nvidia-smi": SMI, "rocm-smi": ROCM}, {"/proc/meminfo": MEMINFO, "/proc/cpuinfo": CPUINFO}))
    assert [(g.name, g.row.key if g.row else None, g.source) for g in m.gpus] == [
        ("NVIDIA H100 80GB HBM3", "h100-sxm", "nvidia-smi"),
        ("NVIDIA GeForce RTX 3060", "rtx3060-12gb", "nvidia-smi"),
        ("Some Future GPU", None, "nvidia-smi"),
        ("AMD Instinct MI300X", "mi300x", "rocm-smi"),
    ]
    assert m.gpus[1].memory_bytes == 12288 * 2**20 and m.gpus[1].free_bytes == 11950 * 2**20
    assert m.gpus[2].free_bytes is None  # "[N/A]" read as unknown, not as 0
    assert m.gpus[3].free_bytes == 206141652992 - 291123200
    assert m.ram_bytes == 2113464320 * 1024 and m.ram_available_bytes == 2013464320 * 1024
    assert m.cpu.name == "Intel(R) Xeon(R) Platinum 8480+" and m.cpu.cores == 112
    assert m.cpu.features == ("avx2", "avx512", "avx512_bf16", "avx512_vnni", "amx", "amx_bf16", "amx_int8")
    assert m.cpu.row.key == "xeon-platinum-8480+"
    assert m.gpus[1].hardware().usable_bytes == 11950 * 2**20  # what is free now, below the catalog's figure


def test_detect_on_a_mac_reads_sysctl_and_the_working_set():
    mac = {"hw.memsize": "68719476736\n", "machdep.cpu.brand_string": "Apple M2 Max\n", "hw.physicalcpu": "12"}
    m = detect(_probes(mac | {"iogpu.wired_limit_mb": "0"}, {}, platform="darwin"))
    (g,) = m.gpus
    assert (g.name, g.row.key, g.usable_bytes, m.ram_bytes) == ("Apple M2 Max 64GB", "m2-max-64gb", 48 * GIB, 64 * GIB)
    raised = detect(_probes(mac | {"iogpu.wired_limit_mb": "57344"}, {}, platform="darwin"))
    assert raised.gpus[0].usable_bytes == 56 * GIB and raised.gpus[0].hardware().usable_bytes == 56 * GIB


def test_detect_tolerates_missing_and_garbled_tools():
    m = detect(_probes({"nvidia-smi": "garbage\n\x00", "rocm-smi": "{not json"}, {"/proc/cpuinfo": "x" * 1000}))
    assert m.gpus == () and m.ram_bytes is None and "no /proc/meminfo: RAM unknown" in m.notes
    none = detect(_probes({}, {}))
    assert none.gpus == () and "no NVIDIA GPU read (no nvidia-smi, or it failed)" in none.notes


def test_detect_for_real_has_the_documented_shape():
    doc = detect().as_dict()
    assert set(doc) == {"gpus", "ram_bytes", "ram_available_bytes", "cpu", "notes"}
    assert set(doc["cpu"]) == {"name", "cores", "features", "key"}


# --- the command ---


def test_hardware_json_lists_the_catalog(capsys):
    import json

    from paramcount.cli import main

    assert main(["hardware", "--json", "--kind", "apple"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == sum(len(s) for s in APPLE_SIZES.values())
    assert {"name", "aliases", "kind", "memory_bytes", "bandwidth_bytes_per_s", "flops", "sources"} <= set(rows[0])
    assert main(["hardware", "--detect", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) >= {"gpus", "ram_bytes", "cpu"}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["hardware", "--kind", "tpu"], "invalid choice: 'tpu'"),
        (["memory", "gpt2", "--gpu", "A100"], "'A100' is more than one GPU: say a100-40gb or a100-80gb"),
        (["memory", "gpt2", "--gpu", "4060 Ti"], "'4060 Ti' is more than one: say rtx4060ti-8gb or rtx4060ti-16gb"),
        (["memory", "gpt2", "--gpu", "epyc-9654"], "AMD EPYC 9654 is a CPU; --gpu takes a GPU or an Apple chip"),
    ],
)
def test_bad_hardware_names_are_one_line_and_exit_2(argv, message, capsys):
    from paramcount.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_catalog_name_plans_like_the_card():
    from paramcount.memory import gpu

    assert gpu("NVIDIA GeForce RTX 3060") is gpu("rtx3060")
    m2 = gpu("Apple M2 Max 64GB")
    assert (m2.usable, m2.bandwidth, m2.kind) == (48 * GIB, 400.0, "apple")


# --- --ram and --gpu auto ---


def _cli(capsys, *argv):
    from paramcount.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ram_makes_an_expert_offload_not_fit(capsys):
    # Qwen3-30B-A3B q8_0 on a 4090 with 30 layers' experts in host memory: ~19.6 GB on the host
    argv = ("fit", "Qwen/Qwen3-30B-A3B", "--runtime", "llama.cpp", "--dtype", "q8_0", "--gpu", "rtx4090")
    argv += ("--n-cpu-moe", "30", "--json")
    import json

    code, out, _ = _cli(capsys, *argv, "--ram", "16GB")
    (row,) = json.loads(out)["rows"]
    assert code == 1 and row["fits"] is False and row["ram"]["fits"] is False
    assert row["ram"]["bytes"] == 16 * 10**9 and row["ram"]["host"]["bytes"] > 16 * 10**9
    assert row["headroom"]["bytes"] > 0  # the GPU part alone would fit
    code, out, _ = _cli(capsys, *argv, "--ram", "64GB")
    assert code == 0 and json.loads(out)["rows"][0]["fits"] is True
    code, out, _ = _cli(capsys, *argv[:-1], "--ram", "16GB", "--width", "120")
    assert "host GiB / RAM" in out and "/ 14.90" in out  # the card's unit: 16 GB is 14.90 GiB


def test_memory_shows_the_host_part_beside_ram(capsys):
    argv = ("memory", "Qwen/Qwen2.5-0.5B", "--runtime", "llama.cpp", "--dtype", "q8_0", "--ram", "1GB")
    code, out, _ = _cli(capsys, *argv, "--width", "200")
    assert code == 0 and "host part 0.15 GB fits in 1.00 GB of RAM (--ram)" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fit", "gpt2", "--gpu", "rtx3060", "--ram", "12XB"], "--ram: expected a size like 24GB or 20GiB, got '12XB'"),
        (["memory", "gpt2", "--ram", "0GB"], "--ram: a size must be positive, got '0GB'"),
        (["fit", "gpt2", "--ram", "64GB"], "--ram: --ram checks a plan on a GPU: add --gpu NAME (or --gpu auto)"),
    ],
)
def test_bad_ram_is_one_line_and_exit_2(argv, message, capsys):
    code, _, err = _cli(capsys, *argv)
    assert code == 2 and message in err and err.count("\n") == 1


def _machine(monkeypatch, gpus: str = "", features: str = "avx2 avx512f amx_tile amx_int8"):
    import paramcount.hardware.detect as d

    cpuinfo = f"processor\t: 0\nmodel name\t: Test CPU\ncpu cores\t: 8\nflags\t\t: {features}\n"
    files = {"/proc/meminfo": "MemTotal: 67108864 kB\nMemAvailable: 62914560 kB\n", "/proc/cpuinfo": cpuinfo}
    probes = _probes({"nvidia-smi": gpus} if gpus else {}, files)
    real = d.detect
    monkeypatch.setattr(d, "detect", lambda probes_=None: real(probes))


def test_gpu_auto_without_a_gpu_plans_llamacpp_on_the_cpu_with_its_features(capsys, monkeypatch):
    import json

    _machine(monkeypatch)
    argv = ("memory", "Qwen/Qwen2.5-0.5B", "--runtime", "llama.cpp", "--dtype", "q8_0", "--gpu", "auto", "--json")
    code, out, _ = _cli(capsys, *argv)
    doc = json.loads(out)
    assert code == 0 and doc["settings"]["device"] == "cpu"
    assert any("(--cpu-features amx)" in note for note in doc["notes"])  # the detected AMX, not avx2
    assert doc["gpu"]["key"] == "ram" and doc["gpu"]["usable"] == 62914560 * 1024
    assert doc["ram"] == {"bytes": 62914560 * 1024, "host": doc["ram"]["host"], "fits": True}  # MemAvailable
    code, _, err = _cli(capsys, "fit", "Qwen/Qwen2.5-0.5B", "--gpu", "auto")  # transformers needs a GPU
    assert code == 2 and "no GPU found on this machine: --gpu auto plans llama.cpp on the CPU" in err


def test_gpu_auto_with_a_gpu_plans_for_the_detected_card(capsys, monkeypatch):
    import json

    _machine(monkeypatch, gpus="NVIDIA GeForce RTX 3060, 12288, 10240\n", features="avx2")
    code, out, _ = _cli(capsys, "fit", "Qwen/Qwen2.5-0.5B", "--gpu", "auto", "--dtype", "bf16", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["gpu"]["name"] == "NVIDIA GeForce RTX 3060 (detected)"
    assert doc["gpu"]["usable"] == 10240 * 2**20  # the free memory nvidia-smi reported
    assert doc["rows"][0]["ram"]["bytes"] == 62914560 * 1024


def test_gpu_auto_under_ollama_plans_for_the_detected_card(capsys, monkeypatch, tmp_path):
    import json

    from .gguf_files import llama_spec, write

    tiny = write(llama_spec("tiny", 4, 256, 8, 2, 512, 1000, context=8192), tmp_path / "tiny.gguf")
    _machine(monkeypatch, gpus="NVIDIA GeForce RTX 3060, 12288, 10240\n")
    code, out, _ = _cli(capsys, "memory", str(tiny), "--runtime", "ollama", "--gpu", "auto", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["gpu"]["name"] == "NVIDIA GeForce RTX 3060 (detected)"
    assert doc["gpu"]["usable"] == 10240 * 2**20


def test_quadro_rtx_6000_is_not_the_rtx_a6000():
    """Turing's Quadro RTX 6000 (24 GB) is its own card, never read as Ampere's RTX A6000 (48 GB)."""
    turing = lookup("NVIDIA Quadro RTX 6000")
    assert turing.key == "quadro-rtx6000-24gb" and turing.capability == (7, 5) and turing.memory_bytes == 24 * 2**30
    assert lookup("NVIDIA RTX A6000").key == "rtx-a6000-48gb"


@pytest.mark.parametrize(
    "name, key, bandwidth, fp32_tflops",
    [
        # as llama.cpp's benchmark threads and vendors name them; each figure the datasheet's
        ("Tesla P40", "p40-24gb", 346e9, 12.0),
        ("TITAN RTX", "titan-rtx-24gb", 672e9, 16.3),  # NVIDIA: 16.3 TFLOPS FP32, 130 tensor
        ("Quadro RTX 8000", "quadro-rtx8000-48gb", 672e9, 16.3),
        ("Radeon RX 6800 XT", "rx6800xt-16gb", 512e9, 20.74),  # AMD: Peak Single Precision 20.74 TFLOPs
        ("RX 6900 XT", "rx6900xt-16gb", 512e9, 23.04),
        ("RX 6700 XT 12GB", "rx6700xt-12gb", 384e9, 13.21),
        ("AMD Radeon VII", "radeonvii-16gb", 1024e9, 13.8),  # AMD: 13.8 TFLOPs, 1 TB/s HBM2
    ],
)
def test_older_and_popular_gpus_are_in_the_catalog(name, key, bandwidth, fp32_tflops):
    hw = lookup(name)
    assert hw.key == key and hw.bandwidth_bytes_per_s == bandwidth
    assert hw.flops["fp32"] / 1e12 == pytest.approx(fp32_tflops, abs=0.06)


@pytest.mark.parametrize(
    "name, key, stated, gbs",
    [
        ("AMD EPYC 7763 64-Core Processor", "epyc-7763", "8 channels DDR4-3200", 204.8),
        ("Ryzen 9 5950X", "ryzen-9-5950x", "2 channels DDR4-3200", 51.2),
        ("Ryzen 9 7950X3D", "ryzen-9-7950x3d", "2 channels DDR5-5200", 83.2),
        ("Intel Xeon Platinum 8380", "xeon-platinum-8380", "8 channels DDR4-3200", 204.8),
        ("i9-12900K", "core-i9-12900k", "2 channels DDR5-4800", 76.8),
        ("Core Ultra 7 258V", "core-ultra-7-258v", "LPDDR5X-8533, 128-bit", 136.528),  # Lunar Lake: 2 × 8533 × 8
    ],
)
def test_cpus_of_the_ddr4_generation_too(name, key, stated, gbs):
    cpu = lookup(name)
    assert cpu.key == key and cpu.stated == stated and cpu.bandwidth_bytes_per_s == round(gbs * 1e9)


def test_every_cpu_has_derived_peaks_from_its_microarchitecture():
    """cpus.py: per-core per-cycle issue × cores × the vendor's maximum boost, marked derived."""
    for r in (r for r in ROWS if r.kind == "cpu"):
        assert r.flops["fp32"] and r.flops["int8"] >= r.vector_flops["int8"] > r.flops["fp32"], r.key
        assert set(r.vector_flops) <= set(r.flops) and any("derived" in n for n in r.notes), r.key
        assert (r.flops != r.vector_flops) == ("amx_int8" in r.features), r.key
        assert len(r.sources) >= 2, r.key  # the vendor's page, the microarchitecture's reference
    assert lookup("EPYC 9654").flops["fp32"] == pytest.approx(96 * 32 * 3.7e9)  # Zen 4: 2 × 256-bit FMA
    assert lookup("Ryzen 9 9950X").flops["fp32"] == pytest.approx(16 * 64 * 5.7e9)  # Zen 5: 2 × 512-bit
    assert lookup("Xeon Platinum 8480+").flops["int8"] == pytest.approx(56 * 2048 * 3.8e9)  # AMX
    assert lookup("Xeon Platinum 8480+").vector_flops["int8"] == pytest.approx(56 * 256 * 3.8e9)  # AVX-512 VNNI
    hybrid = lookup("i9-13900K")  # 8 P-cores (2 × 256-bit) at 5.8 GHz, 16 E-cores (2 × 128-bit) at 4.3
    assert hybrid.flops["fp32"] == pytest.approx(8 * 32 * 5.8e9 + 16 * 16 * 4.3e9)
    assert "bf16" not in lookup("Ryzen 9 5950X").flops  # Zen 3: no AVX-512 BF16
    lunar = lookup("258V")  # 4 Lion Cove (2 × 256-bit) at 4.8 GHz, 4 Skymont (4 × 128-bit) at 3.7
    assert lunar.flops["fp32"] == pytest.approx(4 * 32 * 4.8e9 + 4 * 32 * 3.7e9)
