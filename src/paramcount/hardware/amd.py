"""AMD GPUs: Instinct accelerators (datasheet figures) and Radeon RX / Radeon PRO cards.

Instinct rows transcribe AMD's product pages and datasheets: ``fp32``/``fp64`` the vector rates,
``tf32``/``fp16``/``bf16``/``fp8``/``int8`` the dense matrix rates. Radeon rows take the compute
units and boost clock from AMD's spec pages: an RDNA 3/4 compute unit issues 256 FP32 FLOP per
clock (dual issue) and 512 FP16 (packed), which gives the "Peak Single/Half Precision" AMD prints
(RX 7900 XTX: 96 CUs × 2.5 GHz × 256 = 61.4 TFLOPS). RDNA 4's matrix units may do more per clock
than that FP16 rate; it is a floor there (each row's ``notes`` says so).

``usable_bytes`` is the stated memory: what ROCm reports as the total has not been measured here.
"""

from __future__ import annotations

from .row import GB, GIB, Hardware, pcie, tflops

_INSTINCT = "https://www.amd.com/en/products/accelerators/instinct/"


def _instinct(
    key: str, name: str, gib: int, memory: str, bandwidth_gbs: float, flops: dict, url: str, cus: int, gen: int = 5,
    aliases: tuple[str, ...] = (), features: tuple[str, ...] = (),
) -> Hardware:  # fmt: skip
    return Hardware(
        key=key,
        name=f"AMD Instinct {name}",
        aliases=(name, *aliases),
        kind="gpu",
        vendor="amd",
        memory_bytes=gib * GIB,
        usable_bytes=gib * GIB,
        bandwidth_bytes_per_s=int(bandwidth_gbs * GB),
        flops=flops,
        sources=(_INSTINCT + url,),
        cores=cus,
        features=features,
        pcie_bytes_per_s=pcie(gen),
        stated=f"{gib} GB {memory}",
        notes=("usable_bytes: the stated memory (ROCm's total not measured)",),
        family="Instinct",
    )


_MI300 = tflops(fp64=81.7, fp32=163.4, tf32=653.7, fp16=1307.4, bf16=1307.4, fp8=2614.9, int8=2614.9)
INSTINCT = (
    _instinct("mi100", "MI100", 32, "HBM2", 1228.8, tflops(fp64=11.5, fp32=23.1, fp16=184.6, bf16=92.3, int8=184.6),
              "mi100.html", 120, gen=4),
    _instinct("mi210", "MI210", 64, "HBM2e", 1638.4, tflops(fp64=22.6, fp32=22.6, fp16=181, bf16=181, int8=181),
              "mi200/mi210.html", 104, gen=4),
    _instinct("mi250", "MI250", 128, "HBM2e", 3276.8, tflops(fp64=45.3, fp32=45.3, fp16=362.1, bf16=362.1, int8=362.1),
              "mi200/mi250.html", 208, gen=4),
    _instinct("mi250x", "MI250X", 128, "HBM2e", 3276.8, tflops(fp64=47.9, fp32=47.9, fp16=383, bf16=383, int8=383),
              "mi200/mi250x.html", 220, gen=4),
    _instinct("mi300x", "MI300X", 192, "HBM3", 5300, _MI300, "mi300/mi300x.html", 304, aliases=("MI300", "MI300X OAM"),
              features=("fp8",)),
    _instinct("mi325x", "MI325X", 256, "HBM3E", 6000, _MI300, "mi300/mi325x.html", 304, features=("fp8",)),
    # MI355X: memory and bandwidth from AMD's page; its per-dtype figures are not transcribed (left out)
    _instinct("mi355x", "MI355X", 288, "HBM3E", 8000, {}, "mi350/mi355x.html", 256,
              features=("fp8", "fp6", "fp4", "mxfp4")),
)  # fmt: skip

# FP32 and packed FP16 FLOP per CU per clock: RDNA 3/4 dual-issue (256, 512); RDNA 2 and GCN 5
# (Radeon VII) issue 64 lanes × FMA (128, 256), as AMD's "Peak Single Precision" figures give
# (RX 6800 XT: 72 × 2.25 GHz × 128 = 20.74 TFLOPS; Radeon VII: 60 × 1.8 GHz × 128 = 13.8)
_RDNA = {1: (128, 256), 2: (128, 256), 3: (256, 512), 4: (256, 512)}
_FAMILY = {1: "Radeon VII", 2: "Radeon RX 6000", 3: "Radeon RX 7000", 4: "Radeon RX 9000"}


def _radeon(
    model: str, rdna: int, cus: int, boost_mhz: int, gib: int, gbps: float, bus: int, url: str, gen: int = 4,
    lanes: int = 16, pro: bool = False, aliases: tuple[str, ...] = (), memory: str = "GDDR6", clock: str = "boost",
) -> Hardware:  # fmt: skip
    """``rdna`` 2-4, or 1 for GCN 5's Radeon VII (the same rates per CU as RDNA 2)."""
    fp32, fp16 = (cus * r * boost_mhz * 10**6 for r in _RDNA[rdna])
    short = ("radeon" if rdna == 1 else "") + model.lower().replace(" ", "").removeprefix("pro")
    per = _RDNA[rdna]
    notes = [f"FLOP/s: {cus} CUs × {boost_mhz} MHz {clock} × {per[0]} FP32 / {per[1]} FP16 per CU per clock"]
    if rdna == 4:
        notes.append("fp16: the packed vector rate; RDNA 4's matrix (WMMA) rate may be higher")
    notes.append("usable_bytes: the stated memory (ROCm's total not measured)")
    return Hardware(
        key=f"{short}-{gib}gb",
        name=f"AMD Radeon {model}",
        aliases=(model, f"{model} {gib}GB", *aliases),
        kind="gpu",
        vendor="amd",
        memory_bytes=gib * GIB,
        usable_bytes=gib * GIB,
        bandwidth_bytes_per_s=int(gbps * bus / 8 * GB),
        flops={"fp32": float(fp32), "fp16": float(fp16)},
        sources=(f"https://www.amd.com/en/products/graphics/{url} (specifications)",),
        cores=cus,
        pcie_bytes_per_s=pcie(gen, lanes),
        stated=f"{gib} GB {memory}" + (" ECC" if pro else ""),
        notes=tuple(notes),
        family="Radeon PRO" if pro else _FAMILY[rdna],
    )


_RX6 = "desktops/radeon/6000-series/amd-radeon-rx-"
RADEON = (
    # RDNA 2: RX 6000 (PCIe 4.0; the 6600s x8)
    _radeon("RX 6600", 2, 28, 2491, 8, 14, 128, _RX6 + "6600.html", lanes=8),
    _radeon("RX 6600 XT", 2, 32, 2589, 8, 16, 128, _RX6 + "6600-xt.html", lanes=8),
    _radeon("RX 6700 XT", 2, 40, 2581, 12, 16, 192, _RX6 + "6700-xt.html"),
    _radeon("RX 6750 XT", 2, 40, 2600, 12, 18, 192, _RX6 + "6750-xt.html"),
    _radeon("RX 6800", 2, 60, 2105, 16, 16, 256, _RX6 + "6800.html"),
    _radeon("RX 6800 XT", 2, 72, 2250, 16, 16, 256, _RX6 + "6800-xt.html"),
    _radeon("RX 6900 XT", 2, 80, 2250, 16, 16, 256, _RX6 + "6900-xt.html"),
    _radeon("RX 6950 XT", 2, 80, 2310, 16, 18, 256, _RX6 + "6950-xt.html"),
    # GCN 5 (Vega 20): 16 GB HBM2 on a 4,096-bit bus at 2 Gbps, PCIe 3.0; AMD's peak engine clock
    _radeon(
        "VII",
        1,
        60,
        1800,
        16,
        2,
        4096,
        "desktops/radeon/amd-radeon-vii.html",
        gen=3,
        memory="HBM2",
        clock="peak",
        aliases=("Radeon 7",),
    ),
    _radeon("RX 7600", 3, 32, 2655, 8, 18, 128, "desktops/radeon/7000-series/amd-radeon-rx-7600.html", lanes=8),
    _radeon("RX 7600 XT", 3, 32, 2755, 16, 18, 128, "desktops/radeon/7000-series/amd-radeon-rx-7600-xt.html", lanes=8),
    _radeon("RX 7700 XT", 3, 54, 2544, 12, 18, 192, "desktops/radeon/7000-series/amd-radeon-rx-7700-xt.html"),
    _radeon("RX 7800 XT", 3, 60, 2430, 16, 19.5, 256, "desktops/radeon/7000-series/amd-radeon-rx-7800-xt.html"),
    _radeon("RX 7900 GRE", 3, 80, 2245, 16, 18, 256, "desktops/radeon/7000-series/amd-radeon-rx-7900-gre.html"),
    _radeon("RX 7900 XT", 3, 84, 2394, 20, 20, 320, "desktops/radeon/7000-series/amd-radeon-rx-7900xt.html"),
    _radeon("RX 7900 XTX", 3, 96, 2500, 24, 20, 384, "desktops/radeon/7000-series/amd-radeon-rx-7900xtx.html"),
    _radeon("RX 9060 XT", 4, 32, 3130, 8, 20, 128, "desktops/radeon/9000-series/amd-radeon-rx-9060xt.html", gen=5),
    _radeon("RX 9060 XT", 4, 32, 3130, 16, 20, 128, "desktops/radeon/9000-series/amd-radeon-rx-9060xt.html", gen=5),
    _radeon("RX 9070", 4, 56, 2520, 16, 20, 256, "desktops/radeon/9000-series/amd-radeon-rx-9070.html", gen=5),
    _radeon("RX 9070 XT", 4, 64, 2970, 16, 20, 256, "desktops/radeon/9000-series/amd-radeon-rx-9070xt.html", gen=5),
    _radeon("PRO W7800", 3, 70, 2520, 32, 18, 256, "workstations/radeon-pro/w7800.html", pro=True, aliases=("W7800",)),
    _radeon("PRO W7900", 3, 96, 2495, 48, 18, 384, "workstations/radeon-pro/w7900.html", pro=True, aliases=("W7900",)),
)

ALL = INSTINCT + RADEON
