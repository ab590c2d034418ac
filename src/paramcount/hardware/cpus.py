# ruff: noqa: E501  (data tables: one product a line)
"""Server and desktop CPUs: cores, memory channels, the DDR speed the vendor supports, bandwidth.

A CPU row has no memory of its own (``memory_bytes`` 0): its bandwidth is what the socket's
channels move at the supported DDR5 speed, channels × MT/s × 8 bytes (a 64-bit channel), which
is the "per socket memory bandwidth" AMD prints (EPYC 9654: 12 × 4800 × 8 = 460.8 GB/s).
``features`` are the instruction sets llama.cpp's CPU backend chooses kernels by (ggml-cpu:
AVX2, AVX-512 with its BF16/VNNI extensions, AMX on Intel Xeon from Sapphire Rapids).

Peak FLOP/s are derived (neither vendor prints them for these parts): per core and cycle, what the
microarchitecture's vector (and, on Xeon from Sapphire Rapids, AMX) units issue (``_UARCH``, each
figure with its source), times the cores, times the vendor's maximum boost clock ("up to"), so
each is a ceiling: under an all-core AVX-512 or AMX load the cores run below it. ``fp32``: FMA
lanes × 2; ``int8``: the int8 dot-product rate (multiply-adds × 2: AVX-VNNI/AVX-512 VNNI
``vpdpbusd``, AVX2's ``vpmaddubsw``+``vpmaddwd`` pair without VNNI, AMX's ``tdpbusd`` tiles where
there are any); ``bf16``: AVX-512 BF16's ``vdpbf16ps``, or AMX's ``tdpbf16ps``. ``vector_flops``
keeps the AVX2/AVX-512 units' rates apart from AMX's (what ggml's ``ggml_vec_dot_*`` kernels run on).
"""

from __future__ import annotations

from .row import Hardware

ZEN3 = ("avx2",)
ICELAKE = ("avx2", "avx512", "avx512_vnni")
ALDERLAKE = ("avx2", "avx_vnni")
ZEN4 = ("avx2", "avx512", "avx512_bf16", "avx512_vnni")
ZEN5 = ("avx2", "avx512", "avx512_bf16", "avx512_vnni", "avx_vnni")
XEON_AMX = ("avx2", "avx512", "avx512_bf16", "avx512_fp16", "avx512_vnni", "avx_vnni", "amx", "amx_bf16", "amx_int8")
XEON6_AMX = (*XEON_AMX, "amx_fp16")
CORE = ("avx2", "avx_vnni")

# per core and cycle: (fp32 FLOP, int8 OP, bf16 FLOP or None) of the vector units; AMX (int8 OP,
# bf16 FLOP) or None; the source of the issue widths
_ZEN = "AMD Software Optimization Guide for the AMD Zen{} Microarchitecture (AMD publication {}), floating-point unit"
_INTEL_OPT = "Intel 64 and IA-32 Architectures Optimization Reference Manual (248966), {}"
_UARCH = {
    # 2 × 256-bit FMA (16 fp32 lanes × 2); no VNNI: vpmaddubsw + vpmaddwd on 2 multiply pipes, 32 products a cycle
    "Zen 3": ((32, 64, None), None, _ZEN.format(" 3", "56665")),
    # AVX-512 on the 256-bit datapaths: zmm in two halves, so the 2 × 256-bit FMA rate; vpdpbusd ymm 2 a cycle
    "Zen 4": ((32, 128, 64), None, _ZEN.format(" 4", "57647")),
    # full 512-bit datapaths on the desktop and server parts: 2 × 512-bit FMA, vpdpbusd zmm 2 a cycle
    "Zen 5": ((64, 256, 128), None, _ZEN.format(" 5", "58455")),
    # Xeon Platinum: 2 × 512-bit FMA units (ports 0+1 fused and 5), vpdpbusd zmm on both
    "Sunny Cove (server)": ((64, 256, None), None, _INTEL_OPT.format("Ice Lake Server: two 512-bit FMA units")),
    # as Sunny Cove, plus AMX: 1024 int8 multiply-adds and 512 bf16 a cycle per core (2048 OP, 1024 FLOP)
    "Golden Cove (server)": ((64, 256, 128), (2048, 1024), _INTEL_OPT.format("Intel AMX: 2048 int8 / 1024 bf16 operations per cycle per core")),
    "Raptor Cove (server)": ((64, 256, 128), (2048, 1024), _INTEL_OPT.format("Intel AMX: 2048 int8 / 1024 bf16 operations per cycle per core")),
    "Redwood Cove (server)": ((64, 256, 128), (2048, 1024), _INTEL_OPT.format("Intel AMX: 2048 int8 / 1024 bf16 operations per cycle per core")),
    # client P-cores (AVX-512 fused off): 2 × 256-bit FMA, AVX-VNNI vpdpbusd ymm 2 a cycle
    "Golden Cove": ((32, 128, None), None, _INTEL_OPT.format("Golden Cove: 2 × 256-bit FMA")),
    "Raptor Cove": ((32, 128, None), None, _INTEL_OPT.format("Golden Cove: 2 × 256-bit FMA")),
    "Lion Cove": ((32, 128, None), None, _INTEL_OPT.format("Lion Cove: 2 × 256-bit FMA")),
    # E-cores: Gracemont 2 × 128-bit FMA (a ymm op takes both), Skymont 4 × 128-bit
    "Gracemont": ((16, 64, None), None, _INTEL_OPT.format("Gracemont: 2 × 128-bit FMA")),
    "Skymont": ((32, 128, None), None, _INTEL_OPT.format("Skymont: 4 × 128-bit FMA")),
}  # fmt: skip

_AMD = "https://www.amd.com/en/products/processors/"
_INTEL = "https://www.intel.com/content/www/us/en/ark/products/"

# family: (vendor, channels, MT/s, features, source page, core microarchitecture); DDR5 unless the family is in _DDR4
_FAMILIES = {
    "EPYC 7003": ("amd", 8, 3200, ZEN3, _AMD + "server/epyc/3rd-generation-7003-series.html", "Zen 3"),
    "Threadripper PRO 5000": ("amd", 8, 3200, ZEN3, _AMD + "workstations/ryzen-threadripper.html", "Zen 3"),
    "Ryzen 5000": ("amd", 2, 3200, ZEN3, _AMD + "desktops/ryzen/5000-series.html", "Zen 3"),
    "Xeon 3rd gen (Ice Lake)": ("intel", 8, 3200, ICELAKE, _INTEL + "series/204098/3rd-generation-intel-xeon-scalable-processors.html", "Sunny Cove (server)"),
    "Core 12th gen": ("intel", 2, 4800, ALDERLAKE, _INTEL + "series/217839/12th-generation-intel-core-i9-processors.html", "Golden Cove"),
    "EPYC 9004": ("amd", 12, 4800, ZEN4, _AMD + "server/epyc/4th-generation-9004-and-8004-series.html", "Zen 4"),
    "EPYC 9005": ("amd", 12, 6000, ZEN5, _AMD + "server/epyc/9005-series.html", "Zen 5"),
    "Threadripper 7000": ("amd", 4, 5200, ZEN4, _AMD + "workstations/ryzen-threadripper.html", "Zen 4"),
    "Threadripper PRO 7000": ("amd", 8, 5200, ZEN4, _AMD + "workstations/ryzen-threadripper.html", "Zen 4"),
    "Threadripper 9000": ("amd", 4, 6400, ZEN5, _AMD + "workstations/ryzen-threadripper.html", "Zen 5"),
    "Threadripper PRO 9000": ("amd", 8, 6400, ZEN5, _AMD + "workstations/ryzen-threadripper.html", "Zen 5"),
    "Ryzen 7000": ("amd", 2, 5200, ZEN4, _AMD + "desktops/ryzen/7000-series.html", "Zen 4"),
    "Ryzen 9000": ("amd", 2, 5600, ZEN5, _AMD + "desktops/ryzen/9000-series.html", "Zen 5"),
    "Xeon 4th gen (Sapphire Rapids)": ("intel", 8, 4800, XEON_AMX, _INTEL + "series/228622/4th-generation-intel-xeon-scalable-processors.html", "Golden Cove (server)"),
    "Xeon 5th gen (Emerald Rapids)": ("intel", 8, 5600, XEON_AMX, _INTEL + "series/236644/5th-generation-intel-xeon-scalable-processors.html", "Raptor Cove (server)"),
    "Xeon 6 (Granite Rapids AP)": ("intel", 12, 6400, XEON6_AMX, _INTEL + "series/240357/intel-xeon-6.html", "Redwood Cove (server)"),
    "Xeon 6 (Granite Rapids SP)": ("intel", 8, 6400, XEON6_AMX, _INTEL + "series/240357/intel-xeon-6.html", "Redwood Cove (server)"),
    "Core 13th/14th gen": ("intel", 2, 5600, CORE, _INTEL + "series/230485/14th-generation-intel-core-i9-processors.html", "Raptor Cove"),
    "Core Ultra 200S": ("intel", 2, 6400, CORE, _INTEL + "series/241071/intel-core-ultra-processors-series-2.html", "Lion Cove"),
    # Lunar Lake: LPDDR5X-8533 on the package, a 128-bit bus (two 64-bit channels' width)
    "Core Ultra 200V": ("intel", 2, 8533, CORE, _INTEL + "series/241071/intel-core-ultra-processors-series-2.html", "Lion Cove"),
}  # fmt: skip
_E_CORES = {"Core 12th gen": "Gracemont", "Core 13th/14th gen": "Gracemont", "Core Ultra 200S": "Skymont",
            "Core Ultra 200V": "Skymont"}  # fmt: skip
_LPDDR = {"Core Ultra 200V": "LPDDR5X"}  # memory on the package: not DIMMs
_DDR4 = {"EPYC 7003", "Threadripper PRO 5000", "Ryzen 5000", "Xeon 3rd gen (Ice Lake)"}


def _peaks(family: str, cores: int, ghz: float, e: tuple[int, float] | None) -> tuple[dict, dict, str, tuple]:
    """(vector FLOP/s, FLOP/s with AMX's, the cores and clocks in words, the microarchitectures'
    sources): each kind of core's per-cycle issue × its count × its maximum boost."""
    uarch = _FAMILIES[family][5]
    small, small_ghz = e or (0, 0.0)
    units = [(_UARCH[uarch], cores - small, ghz)] + ([(_UARCH[_E_CORES[family]], small, small_ghz)] if small else [])
    vector = {d: sum(u[0][i] * n * g * 1e9 for u, n, g in units) for i, d in enumerate(("fp32", "int8", "bf16"))
              if units[0][0][0][i]}  # fmt: skip
    amx = units[0][0][1]
    flops = {**vector, **({"int8": amx[0] * cores * ghz * 1e9, "bf16": amx[1] * cores * ghz * 1e9} if amx else {})}
    clocks = f"{cores - small} {uarch} cores at {ghz} GHz"
    if small:
        clocks += f" and {small} {_E_CORES[family]} at {small_ghz} GHz"
    return vector, flops, clocks, tuple(dict.fromkeys(u[0][2] for u in units))


def _stated(family: str, channels: int, mts: int) -> str:
    if family in _LPDDR:
        return f"{_LPDDR[family]}-{mts}, {channels * 64}-bit"
    return f"{channels} channels DDR{4 if family in _DDR4 else 5}-{mts}"


def _cpu(key: str, name: str, family: str, cores: int, ghz: float, aliases: tuple[str, ...] = (),
         e: tuple[int, float] | None = None) -> Hardware:  # fmt: skip
    """One CPU: ``cores`` in all, ``ghz`` the vendor's maximum boost clock; ``e``: of the cores,
    the efficiency cores and their maximum boost (Intel's hybrid parts)."""
    vendor, channels, mts, features, page, _ = _FAMILIES[family]
    short = name.removeprefix("AMD ").removeprefix("Intel ")
    vector, flops, clocks, uarchs = _peaks(family, cores, ghz, e)
    return Hardware(
        key=key,
        name=name,
        aliases=(short, *aliases),
        kind="cpu",
        vendor=vendor,
        memory_bytes=0,
        usable_bytes=0,
        bandwidth_bytes_per_s=channels * mts * 10**6 * 8,
        flops=flops,
        sources=(page, *uarchs),
        cores=cores,
        features=features,
        stated=_stated(family, channels, mts),
        notes=(
            "bandwidth: channels × MT/s × 8 bytes, one socket",
            f"FLOP/s derived: per-core per-cycle issue of the microarchitecture × {clocks} (the vendor's "
            "maximum boost: a ceiling, all-core vector loads run slower)"
            + ("; int8 and bf16 are AMX's tiles, vector_flops the AVX-512 units'" if flops != vector else ""),
        ),
        memory_channels=channels,
        memory_speed_mts=mts,
        family=family,
        vector_flops=vector,
    )


ALL = (
    _cpu("epyc-7313", "AMD EPYC 7313", "EPYC 7003", 16, 3.7),
    _cpu("epyc-7443", "AMD EPYC 7443", "EPYC 7003", 24, 4.0),
    _cpu("epyc-7543", "AMD EPYC 7543", "EPYC 7003", 32, 3.7),
    _cpu("epyc-7713", "AMD EPYC 7713", "EPYC 7003", 64, 3.675),
    _cpu("epyc-7763", "AMD EPYC 7763", "EPYC 7003", 64, 3.5, ("EPYC 7763 64-Core Processor",)),
    _cpu("epyc-9124", "AMD EPYC 9124", "EPYC 9004", 16, 3.7),
    _cpu("epyc-9354", "AMD EPYC 9354", "EPYC 9004", 32, 3.8),
    _cpu("epyc-9454", "AMD EPYC 9454", "EPYC 9004", 48, 3.8),
    _cpu("epyc-9554", "AMD EPYC 9554", "EPYC 9004", 64, 3.75),
    _cpu("epyc-9654", "AMD EPYC 9654", "EPYC 9004", 96, 3.7, ("EPYC 9654 96-Core Processor",)),
    _cpu("epyc-9684x", "AMD EPYC 9684X", "EPYC 9004", 96, 3.7),
    _cpu("epyc-9754", "AMD EPYC 9754", "EPYC 9004", 128, 3.1),
    _cpu("epyc-9355", "AMD EPYC 9355", "EPYC 9005", 32, 4.4),
    _cpu("epyc-9555", "AMD EPYC 9555", "EPYC 9005", 64, 4.4),
    _cpu("epyc-9575f", "AMD EPYC 9575F", "EPYC 9005", 64, 5.0),
    _cpu("epyc-9655", "AMD EPYC 9655", "EPYC 9005", 96, 4.5),
    _cpu("epyc-9755", "AMD EPYC 9755", "EPYC 9005", 128, 4.1),
    _cpu("epyc-9965", "AMD EPYC 9965", "EPYC 9005", 192, 3.7),
    _cpu("threadripper-7960x", "AMD Ryzen Threadripper 7960X", "Threadripper 7000", 24, 5.3, ("Threadripper 7960X",)),
    _cpu("threadripper-7970x", "AMD Ryzen Threadripper 7970X", "Threadripper 7000", 32, 5.3, ("Threadripper 7970X",)),
    _cpu("threadripper-7980x", "AMD Ryzen Threadripper 7980X", "Threadripper 7000", 64, 5.1, ("Threadripper 7980X",)),
    _cpu("threadripper-pro-7995wx", "AMD Ryzen Threadripper PRO 7995WX", "Threadripper PRO 7000", 96, 5.1, ("Threadripper PRO 7995WX", "7995WX")),
    _cpu("threadripper-9980x", "AMD Ryzen Threadripper 9980X", "Threadripper 9000", 64, 5.4, ("Threadripper 9980X",)),
    _cpu("threadripper-pro-9995wx", "AMD Ryzen Threadripper PRO 9995WX", "Threadripper PRO 9000", 96, 5.4, ("Threadripper PRO 9995WX", "9995WX")),
    _cpu("threadripper-pro-5965wx", "AMD Ryzen Threadripper PRO 5965WX", "Threadripper PRO 5000", 24, 4.5, ("Threadripper PRO 5965WX", "5965WX")),
    _cpu("threadripper-pro-5975wx", "AMD Ryzen Threadripper PRO 5975WX", "Threadripper PRO 5000", 32, 4.5, ("Threadripper PRO 5975WX", "5975WX")),
    _cpu("threadripper-pro-5995wx", "AMD Ryzen Threadripper PRO 5995WX", "Threadripper PRO 5000", 64, 4.5, ("Threadripper PRO 5995WX", "5995WX")),
    _cpu("ryzen-5-5600x", "AMD Ryzen 5 5600X", "Ryzen 5000", 6, 4.6),
    _cpu("ryzen-7-5700x", "AMD Ryzen 7 5700X", "Ryzen 5000", 8, 4.6),
    _cpu("ryzen-7-5800x", "AMD Ryzen 7 5800X", "Ryzen 5000", 8, 4.7),
    _cpu("ryzen-7-5800x3d", "AMD Ryzen 7 5800X3D", "Ryzen 5000", 8, 4.5),
    _cpu("ryzen-9-5900x", "AMD Ryzen 9 5900X", "Ryzen 5000", 12, 4.8, ("Ryzen 9 5900X 12-Core Processor",)),
    _cpu("ryzen-9-5950x", "AMD Ryzen 9 5950X", "Ryzen 5000", 16, 4.9, ("Ryzen 9 5950X 16-Core Processor",)),
    _cpu("ryzen-5-7600x", "AMD Ryzen 5 7600X", "Ryzen 7000", 6, 5.3),
    _cpu("ryzen-7-7700x", "AMD Ryzen 7 7700X", "Ryzen 7000", 8, 5.4),
    _cpu("ryzen-7-7800x3d", "AMD Ryzen 7 7800X3D", "Ryzen 7000", 8, 5.0),
    _cpu("ryzen-9-7900x", "AMD Ryzen 9 7900X", "Ryzen 7000", 12, 5.6),
    _cpu("ryzen-9-7950x", "AMD Ryzen 9 7950X", "Ryzen 7000", 16, 5.7, ("Ryzen 9 7950X 16-Core Processor",)),
    _cpu("ryzen-9-7900x3d", "AMD Ryzen 9 7900X3D", "Ryzen 7000", 12, 5.6),
    _cpu("ryzen-9-7950x3d", "AMD Ryzen 9 7950X3D", "Ryzen 7000", 16, 5.7),
    _cpu("ryzen-5-9600x", "AMD Ryzen 5 9600X", "Ryzen 9000", 6, 5.4),
    _cpu("ryzen-7-9700x", "AMD Ryzen 7 9700X", "Ryzen 9000", 8, 5.5),
    _cpu("ryzen-7-9800x3d", "AMD Ryzen 7 9800X3D", "Ryzen 9000", 8, 5.2),
    _cpu("ryzen-9-9900x", "AMD Ryzen 9 9900X", "Ryzen 9000", 12, 5.6),
    _cpu("ryzen-9-9950x", "AMD Ryzen 9 9950X", "Ryzen 9000", 16, 5.7, ("Ryzen 9 9950X 16-Core Processor",)),
    _cpu("xeon-platinum-8358", "Intel Xeon Platinum 8358", "Xeon 3rd gen (Ice Lake)", 32, 3.4),
    _cpu("xeon-platinum-8380", "Intel Xeon Platinum 8380", "Xeon 3rd gen (Ice Lake)", 40, 3.4),
    _cpu("xeon-platinum-8462y+", "Intel Xeon Platinum 8462Y+", "Xeon 4th gen (Sapphire Rapids)", 32, 4.1),
    _cpu("xeon-platinum-8468", "Intel Xeon Platinum 8468", "Xeon 4th gen (Sapphire Rapids)", 48, 3.8),
    _cpu("xeon-platinum-8480+", "Intel Xeon Platinum 8480+", "Xeon 4th gen (Sapphire Rapids)", 56, 3.8, ("Xeon Platinum 8480C",)),
    _cpu("xeon-platinum-8580", "Intel Xeon Platinum 8580", "Xeon 5th gen (Emerald Rapids)", 60, 4.0),
    _cpu("xeon-platinum-8592+", "Intel Xeon Platinum 8592+", "Xeon 5th gen (Emerald Rapids)", 64, 3.9),
    _cpu("xeon-6787p", "Intel Xeon 6787P", "Xeon 6 (Granite Rapids SP)", 86, 3.8),
    _cpu("xeon-6960p", "Intel Xeon 6960P", "Xeon 6 (Granite Rapids AP)", 72, 3.9),
    _cpu("xeon-6972p", "Intel Xeon 6972P", "Xeon 6 (Granite Rapids AP)", 96, 3.9),
    _cpu("xeon-6980p", "Intel Xeon 6980P", "Xeon 6 (Granite Rapids AP)", 128, 3.9),
    _cpu("core-i9-12900k", "Intel Core i9-12900K", "Core 12th gen", 16, 5.1, ("i9-12900K", "12900K"), e=(8, 3.9)),
    _cpu("core-i9-13900k", "Intel Core i9-13900K", "Core 13th/14th gen", 24, 5.8, ("i9-13900K", "13900K"), e=(16, 4.3)),
    _cpu("core-i9-14900k", "Intel Core i9-14900K", "Core 13th/14th gen", 24, 6.0, ("i9-14900K", "14900K"), e=(16, 4.4)),
    _cpu("core-ultra-9-285k", "Intel Core Ultra 9 285K", "Core Ultra 200S", 24, 5.7, ("Ultra 9 285K", "285K"), e=(16, 4.6)),
    _cpu("core-ultra-7-258v", "Intel Core Ultra 7 258V", "Core Ultra 200V", 8, 4.8, ("Ultra 7 258V", "258V"), e=(4, 3.7)),
    _cpu("core-ultra-9-288v", "Intel Core Ultra 9 288V", "Core Ultra 200V", 8, 5.1, ("Ultra 9 288V", "288V"), e=(4, 3.7)),
)  # fmt: skip
