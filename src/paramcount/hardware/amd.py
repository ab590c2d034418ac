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

_RDNA = {3: (256, 512), 4: (256, 512)}


def _radeon(
    model: str, rdna: int, cus: int, boost_mhz: int, gib: int, gbps: float, bus: int, url: str, gen: int = 4,
    lanes: int = 16, pro: bool = False, aliases: tuple[str, ...] = (),
) -> Hardware:  # fmt: skip
    fp32, fp16 = (cus * r * boost_mhz * 10**6 for r in _RDNA[rdna])
    short = model.lower().replace(" ", "").removeprefix("pro")
    notes = [f"FLOP/s: {cus} CUs × {boost_mhz} MHz boost × 256 FP32 / 512 FP16 per CU per clock"]
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
        stated=f"{gib} GB GDDR6" + (" ECC" if pro else ""),
        notes=tuple(notes),
        family="Radeon PRO" if pro else f"Radeon RX {7000 if rdna == 3 else 9000}",
    )


RADEON = (
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
