# ruff: noqa: E501  (data tables: one product a line)
"""NVIDIA GPUs: GeForce (Pascal to Blackwell), RTX workstation cards and data-centre GPUs.

GeForce rows are the spec pages' CUDA cores, boost clock and memory (speed × bus width gives the
bandwidth the same pages print), with peak rates per SM from each architecture's whitepaper:
a GeForce Turing-to-Blackwell SM does 512 dense FP16/BF16 tensor FLOP per clock with FP32
accumulation (half its FP16-accumulate rate), 256 TF32, 2,048 INT8 and, from Ada, 1,024 FP8
(FP32 accumulate); every CUDA core 2 FP32 FLOP. Those products reproduce each whitepaper's own
table (RTX 2080 Ti 53.8 FP16 TFLOPS, 3090 71.0, 4090 165.2, 5090 209.5: tests/test_hardware.py).
Data-centre rows transcribe the datasheets' dense figures (half the "with sparsity" ones).

``usable_bytes``: what CUDA reports as the total (``cudaMemGetInfo``; ``torch.cuda.mem_get_info``
and llama.cpp read it), which is the stated memory less what the driver keeps back. Measured on
an H100 SXM (85,017,493,504 B of 80 GiB) and an H200 (150,109,880,320 B of 141 GiB), driver
580.159.04 (tests/fixtures/gpu_h100.json, gpu_h200.json); an RTX 4090 reports 23.55 to 23.58 GiB
(vLLM's logs of ``total_gpu_memory``, vllm-project/vllm#11550 and #14447). Every other card is
held to the largest of those shares kept back, an estimate its ``notes`` name.
"""

from __future__ import annotations

import math
from fractions import Fraction

from .row import GB, GIB, Hardware, pcie, tflops

# cudaMemGetInfo's total, measured (see the module docstring), by catalog key
CUDA_TOTAL = {"h100-sxm": 85_017_493_504, "h200": 150_109_880_320, "rtx4090-24gb": int(Fraction("23.55") * GIB)}
_STATED = {"h100-sxm": 80 * GIB, "h200": 141 * GIB, "rtx4090-24gb": 24 * GIB}
KEPT_BACK = max(Fraction(_STATED[k] - t, _STATED[k]) for k, t in CUDA_TOTAL.items())

CUDA_GPUS = "https://developer.nvidia.com/cuda-gpus (CUDA compute capability)"


def usable(key: str, memory: int) -> tuple[int, tuple[str, ...]]:
    """CUDA's total for a card: measured, or the stated memory less the largest share measured."""
    if key in CUDA_TOTAL:
        return CUDA_TOTAL[key], ("usable_bytes: CUDA's total as measured",)
    kept = math.ceil(memory * KEPT_BACK)
    return memory - kept, (
        f"usable_bytes: estimated, the stated memory less {float(KEPT_BACK):.2%} (the largest share measured)",
    )


# Per-architecture facts for GeForce rows: compute capability, CUDA cores per SM, the dense
# tensor rates per SM per clock (FP32 accumulate), and the whitepaper they come from.
_ARCH = {
    "pascal": ((6, 1), 128, {}, "NVIDIA GeForce GTX 1080 whitepaper (Pascal GP104), 2016"),
    "turing": (
        (7, 5),
        64,
        {"fp16": 512, "int8": 2048},
        "NVIDIA Turing GPU Architecture whitepaper, WP-09183-001, Appendix A",
    ),
    "ampere": (
        (8, 6),
        128,
        {"tf32": 256, "fp16": 512, "bf16": 512, "int8": 2048},
        "NVIDIA Ampere GA102 GPU Architecture whitepaper, V2.1, Appendix A",
    ),
    "ada": (
        (8, 9),
        128,
        {"tf32": 256, "fp16": 512, "bf16": 512, "fp8": 1024, "int8": 2048},
        "NVIDIA Ada GPU Architecture whitepaper, V2.02, Appendix A",
    ),
    "blackwell": (
        (12, 0),
        128,
        {"tf32": 256, "fp16": 512, "bf16": 512, "fp8": 1024, "int8": 2048},
        "NVIDIA RTX Blackwell GPU Architecture whitepaper, V1.1, Appendix A",
    ),
}
_SERIES = {
    "pascal": ("GeForce GTX 10", "https://www.nvidia.com/en-us/geforce/10-series/ (GTX 10 series specifications)", 3),
    "turing": ("GeForce RTX 20", "https://www.nvidia.com/en-us/geforce/graphics-cards/compare/?section=compare-20", 3),
    "ampere": ("GeForce RTX 30", "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/ (compare specs)", 4),
    "ada": ("GeForce RTX 40", "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/ (compare specs)", 4),
    "blackwell": (
        "GeForce RTX 50",
        "https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/ (compare specs)",
        5,
    ),
}
_FEATURES = {"ada": ("fp8",), "blackwell": ("fp8", "fp6", "fp4", "mxfp4", "nvfp4")}


def _geforce(
    model: str,
    arch: str,
    cores: int,
    boost_mhz: int,
    gib: int,
    memory: str,
    gbps: float,
    bus: int,
    lanes: int = 16,
    aliases: tuple[str, ...] = (),
) -> Hardware:
    """``model`` as NVIDIA names it ("RTX 3060", "GTX 1080 Ti"); the key adds the memory size."""
    capability, per_sm, rates, whitepaper = _ARCH[arch]
    family, page, gen = _SERIES[arch]
    sms, clock = cores // per_sm, boost_mhz * 10**6
    flops = {"fp32": float(cores * 2 * clock)} | {k: float(sms * r * clock) for k, r in rates.items()}
    key = f"{model.lower().replace(' ', '')}-{gib}gb"
    use, note = usable(key, gib * GIB)
    notes = (f"FLOP/s: {sms} SMs × {boost_mhz} MHz boost × the whitepaper's rates per SM", *note)
    return Hardware(
        key=key,
        name=f"NVIDIA GeForce {model}",
        aliases=(f"{model} {gib}GB", *aliases),
        kind="gpu",
        vendor="nvidia",
        memory_bytes=gib * GIB,
        usable_bytes=use,
        bandwidth_bytes_per_s=int(gbps * bus / 8 * GB),
        flops=flops,
        sources=(page, whitepaper, CUDA_GPUS),
        capability=capability,
        cores=sms,
        features=_FEATURES.get(arch, ()),
        pcie_bytes_per_s=pcie(gen, lanes),
        stated=f"{gib} GB {memory}",
        notes=notes,
        family=family,
    )


GEFORCE = (
    # Pascal: FP16 runs at 1/64 rate and there are no tensor cores; FP32 only
    _geforce("GTX 1050", "pascal", 640, 1455, 2, "GDDR5", 7, 128),
    _geforce("GTX 1050 Ti", "pascal", 768, 1392, 4, "GDDR5", 7, 128),
    _geforce("GTX 1060", "pascal", 1152, 1708, 3, "GDDR5", 8, 192),
    _geforce("GTX 1060", "pascal", 1280, 1708, 6, "GDDR5", 8, 192),
    _geforce("GTX 1070", "pascal", 1920, 1683, 8, "GDDR5", 8, 256),
    _geforce("GTX 1070 Ti", "pascal", 2432, 1683, 8, "GDDR5", 8, 256),
    _geforce("GTX 1080", "pascal", 2560, 1733, 8, "GDDR5X", 10, 256),
    _geforce("GTX 1080 Ti", "pascal", 3584, 1582, 11, "GDDR5X", 11, 352),
    _geforce("RTX 2060", "turing", 1920, 1680, 6, "GDDR6", 14, 192),
    _geforce("RTX 2060", "turing", 2176, 1650, 12, "GDDR6", 14, 192),
    _geforce("RTX 2060 Super", "turing", 2176, 1650, 8, "GDDR6", 14, 256),
    _geforce("RTX 2070", "turing", 2304, 1620, 8, "GDDR6", 14, 256),
    _geforce("RTX 2070 Super", "turing", 2560, 1770, 8, "GDDR6", 14, 256),
    _geforce("RTX 2080", "turing", 2944, 1710, 8, "GDDR6", 14, 256),
    _geforce("RTX 2080 Super", "turing", 3072, 1815, 8, "GDDR6", 15.5, 256),
    _geforce("RTX 2080 Ti", "turing", 4352, 1545, 11, "GDDR6", 14, 352),
    _geforce("RTX 3050", "ampere", 2560, 1777, 8, "GDDR6", 14, 128, lanes=8),
    # the 12 GB RTX 3060 (2021) is the common one; the 8 GB (2022) is named with its size
    _geforce("RTX 3060", "ampere", 3584, 1777, 12, "GDDR6", 15, 192, aliases=("RTX 3060", "3060")),
    _geforce("RTX 3060", "ampere", 3584, 1777, 8, "GDDR6", 15, 128),
    _geforce("RTX 3060 Ti", "ampere", 4864, 1665, 8, "GDDR6", 14, 256),
    _geforce("RTX 3070", "ampere", 5888, 1725, 8, "GDDR6", 14, 256),
    _geforce("RTX 3070 Ti", "ampere", 6144, 1770, 8, "GDDR6X", 19, 256),
    _geforce("RTX 3080", "ampere", 8704, 1710, 10, "GDDR6X", 19, 320),
    _geforce("RTX 3080", "ampere", 8960, 1710, 12, "GDDR6X", 19, 384),
    _geforce("RTX 3080 Ti", "ampere", 10240, 1665, 12, "GDDR6X", 19, 384),
    _geforce("RTX 3090", "ampere", 10496, 1695, 24, "GDDR6X", 19.5, 384),
    _geforce("RTX 3090 Ti", "ampere", 10752, 1860, 24, "GDDR6X", 21, 384),
    _geforce("RTX 4060", "ada", 3072, 2460, 8, "GDDR6", 17, 128, lanes=8),
    _geforce("RTX 4060 Ti", "ada", 4352, 2535, 8, "GDDR6", 18, 128, lanes=8),
    _geforce("RTX 4060 Ti", "ada", 4352, 2535, 16, "GDDR6", 18, 128, lanes=8),
    _geforce("RTX 4070", "ada", 5888, 2475, 12, "GDDR6X", 21, 192),
    _geforce("RTX 4070 Super", "ada", 7168, 2475, 12, "GDDR6X", 21, 192),
    _geforce("RTX 4070 Ti", "ada", 7680, 2610, 12, "GDDR6X", 21, 192),
    _geforce("RTX 4070 Ti Super", "ada", 8448, 2610, 16, "GDDR6X", 21, 256),
    _geforce("RTX 4080", "ada", 9728, 2505, 16, "GDDR6X", 22.4, 256),
    _geforce("RTX 4080 Super", "ada", 10240, 2550, 16, "GDDR6X", 23, 256),
    _geforce("RTX 4090", "ada", 16384, 2520, 24, "GDDR6X", 21, 384),
    _geforce("RTX 5060", "blackwell", 3840, 2497, 8, "GDDR7", 28, 128, lanes=8),
    _geforce("RTX 5060 Ti", "blackwell", 4608, 2572, 8, "GDDR7", 28, 128, lanes=8),
    _geforce("RTX 5060 Ti", "blackwell", 4608, 2572, 16, "GDDR7", 28, 128, lanes=8),
    _geforce("RTX 5070", "blackwell", 6144, 2512, 12, "GDDR7", 28, 192),
    _geforce("RTX 5070 Ti", "blackwell", 8960, 2452, 16, "GDDR7", 28, 256),
    _geforce("RTX 5080", "blackwell", 10752, 2617, 16, "GDDR7", 30, 256),
    _geforce("RTX 5090", "blackwell", 21760, 2407, 32, "GDDR7", 28, 512),
)


def _card(
    key: str,
    name: str,
    gib: int,
    memory: str,
    bandwidth_gbs: float,
    flops: dict[str, float],
    capability: tuple[int, int],
    sources: tuple[str, ...],
    aliases: tuple[str, ...] = (),
    link: int | None = None,
    family: str = "data centre",
    features: tuple[str, ...] = (),
    notes: tuple[str, ...] = (),
    cores: int | None = None,
) -> Hardware:
    use, note = usable(key, gib * GIB)
    return Hardware(
        key=key,
        name=name,
        aliases=aliases,
        kind="gpu",
        vendor="nvidia",
        memory_bytes=gib * GIB,
        usable_bytes=use,
        bandwidth_bytes_per_s=int(bandwidth_gbs * GB),
        flops=flops,
        sources=(*sources, CUDA_GPUS),
        capability=capability,
        cores=cores,
        features=features,
        pcie_bytes_per_s=link,
        stated=f"{gib} GB {memory}",
        notes=(*notes, *note),
        family=family,
    )


def _pro_ampere(key: str, model: str, sms: int, boost_mhz: int, gib: int, bandwidth: float, url: str) -> Hardware:
    """RTX A-series: the datasheet's FP32 and sparse "Tensor Performance" (FP16, FP32 accumulate,
    which professional Ampere SMs run at full rate: 1,024 dense per SM per clock) agree with
    SMs × boost × these rates; the dense figures are the products."""
    clock = boost_mhz * 10**6
    rates = {"fp32": 256, "fp16": 1024, "bf16": 1024}
    flops = {k: float(sms * r * clock) for k, r in rates.items()}
    note = (f"FLOP/s: {sms} SMs × {boost_mhz} MHz boost × rates per SM (datasheet's sparse tensor figure halved)",)
    return _card(
        key, f"NVIDIA RTX {model}", gib, "GDDR6 ECC", bandwidth, flops, (8, 6), (url, _ARCH["ampere"][3]),
        # no "Quadro" alias: Ampere's RTX A-series never bore it, and "Quadro RTX 6000" is Turing's card
        aliases=(f"RTX {model}", model), link=pcie(4), family="RTX workstation", notes=note, cores=sms,
    )  # fmt: skip


_DC = "https://www.nvidia.com/en-us/data-center/"
WORKSTATION = (
    _pro_ampere("rtx-a4000-16gb", "A4000", 48, 1560, 16, 448, _DC.replace("data-center/", "design-visualization/rtx-a4000/")),
    _pro_ampere("rtx-a4500-20gb", "A4500", 56, 1650, 20, 640, _DC.replace("data-center/", "design-visualization/rtx-a4500/")),
    _pro_ampere("rtx-a5000-24gb", "A5000", 64, 1695, 24, 768, _DC.replace("data-center/", "design-visualization/rtx-a5000/")),
    _pro_ampere("rtx-a5500-24gb", "A5500", 80, 1665, 24, 768, _DC.replace("data-center/", "design-visualization/rtx-a5500/")),
    _pro_ampere("rtx-a6000-48gb", "A6000", 84, 1800, 48, 768, _DC.replace("data-center/", "design-visualization/rtx-a6000/")),
    # Turing's TITAN and Quadro RTX: TU102 with 72 SMs at 1770 MHz; their datasheets print 16.3 FP32
    # and 130.5 tensor TFLOPS (FP16, FP32 accumulate at full rate: 1,024 per SM per clock)
    *(
        _card(
            key, name, gib, memory, 672, {"fp32": 72 * 128 * 1.77e9, "fp16": 72 * 1024 * 1.77e9}, (7, 5),
            (url, _ARCH["turing"][3]), aliases=aliases, link=pcie(3), family=family, cores=72,
            notes=("FLOP/s: 72 SMs × 1770 MHz boost × rates per SM; the datasheet's 16.3 FP32 and 130.5 tensor TFLOPS agree",),
        )
        for key, name, gib, memory, url, aliases, family in (
            ("titan-rtx-24gb", "NVIDIA TITAN RTX", 24, "GDDR6", "https://www.nvidia.com/en-us/deep-learning-ai/products/titan-rtx/ (specs)",
             ("TITAN RTX", "Titan RTX"), "TITAN"),
            ("quadro-rtx6000-24gb", "NVIDIA Quadro RTX 6000", 24, "GDDR6 ECC", "https://www.nvidia.com/en-us/design-visualization/quadro/rtx-6000/ (datasheet)",
             ("Quadro RTX 6000", "RTX 6000 Turing"), "RTX workstation"),
            ("quadro-rtx8000-48gb", "NVIDIA Quadro RTX 8000", 48, "GDDR6 ECC", "https://www.nvidia.com/en-us/design-visualization/quadro/rtx-8000/ (datasheet)",
             ("Quadro RTX 8000", "RTX 8000"), "RTX workstation"),
        )
    ),
    _card(
        "rtx4000-ada-20gb", "NVIDIA RTX 4000 Ada Generation", 20, "GDDR6 ECC", 360, tflops(fp32=26.7), (8, 9),
        ("https://www.nvidia.com/en-us/design-visualization/rtx-4000/ (datasheet)",),
        aliases=("RTX 4000 Ada", "RTX 4000 Ada Generation"), link=pcie(4), family="RTX workstation", features=("fp8",),
    ),
    _card(
        "rtx5000-ada-32gb", "NVIDIA RTX 5000 Ada Generation", 32, "GDDR6 ECC", 576,
        {"fp32": 100 * 256 * 2.55e9, "fp16": 100 * 1024 * 2.55e9, "bf16": 100 * 1024 * 2.55e9, "fp8": 100 * 2048 * 2.55e9},
        (8, 9), ("https://www.nvidia.com/en-us/design-visualization/rtx-5000/ (datasheet)", _ARCH["ada"][3]),
        aliases=("RTX 5000 Ada", "RTX 5000 Ada Generation"), link=pcie(4), family="RTX workstation", features=("fp8",),
        notes=("FLOP/s: 100 SMs × 2550 MHz × rates per SM; the datasheet's 65.3 FP32 and 1,044.4 sparse FP8 TFLOPS agree",),
        cores=100,
    ),
    _card(
        "rtx6000-ada-48gb", "NVIDIA RTX 6000 Ada Generation", 48, "GDDR6 ECC", 960,
        {"fp32": 142 * 256 * 2.505e9, "fp16": 142 * 1024 * 2.505e9, "bf16": 142 * 1024 * 2.505e9, "fp8": 142 * 2048 * 2.505e9},
        (8, 9), ("https://www.nvidia.com/en-us/design-visualization/rtx-6000/ (datasheet)", _ARCH["ada"][3]),
        aliases=("RTX 6000 Ada", "RTX 6000 Ada Generation"), link=pcie(4), family="RTX workstation", features=("fp8",),
        notes=("FLOP/s: 142 SMs × 2505 MHz × rates per SM; the datasheet's 91.1 FP32 and 1,457 sparse FP8 TFLOPS agree",),
        cores=142,
    ),
    _card(
        "rtx-pro-6000-blackwell-96gb", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 96, "GDDR7 ECC", 1792,
        tflops(fp32=125), (12, 0), ("https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/rtx-pro-6000/ (datasheet)",),
        aliases=("RTX PRO 6000 Blackwell", "RTX PRO 6000", "RTX 6000 Pro", "RTX PRO 6000 Blackwell Workstation Edition"),
        link=pcie(5), family="RTX workstation", features=_FEATURES["blackwell"], cores=188,
    ),
)  # fmt: skip

_V100 = "NVIDIA Tesla V100 GPU datasheet (https://www.nvidia.com/en-us/data-center/v100/)"
_P100 = "NVIDIA Tesla P100 datasheet (https://www.nvidia.com/en-us/data-center/tesla-p100/)"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/a100/)"
_H100 = "NVIDIA H100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h100/)"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h200/)"
_GH200 = (
    "NVIDIA GH200 Grace Hopper Superchip datasheet (https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/)"
)
_B200 = "NVIDIA HGX B200 datasheet, per GPU: the 8-GPU tensor figures / 8, halved (dense) (https://www.nvidia.com/en-us/data-center/hgx/)"
_A100_FLOPS = tflops(fp64=9.7, fp32=19.5, tf32=156, fp16=312, bf16=312, int8=624)
_H100_SXM = tflops(fp64=34, fp32=67, tf32=494.7, fp16=989.4, bf16=989.4, fp8=1978.9, int8=1978.9)
_H_NVL = tflops(fp64=30, fp32=60, tf32=417.5, fp16=835.5, bf16=835.5, fp8=1670.5, int8=1670.5)
_HOPPER = ("fp8",)

DATACENTRE = (
    _card("p100-sxm2-16gb", "NVIDIA Tesla P100 SXM2 16GB", 16, "HBM2", 732, tflops(fp64=5.3, fp32=10.6, fp16=21.2), (6, 0),
          (_P100,), aliases=("Tesla P100-SXM2-16GB", "P100 SXM2", "P100 SXM")),
    _card("p100-pcie-16gb", "NVIDIA Tesla P100 PCIe 16GB", 16, "HBM2", 732, tflops(fp64=4.7, fp32=9.3, fp16=18.7), (6, 0),
          (_P100,), aliases=("Tesla P100-PCIE-16GB",), link=pcie(3)),
    _card("p100-pcie-12gb", "NVIDIA Tesla P100 PCIe 12GB", 12, "HBM2", 549, tflops(fp64=4.7, fp32=9.3, fp16=18.7), (6, 0),
          (_P100,), aliases=("Tesla P100-PCIE-12GB",), link=pcie(3)),
    # Pascal's inference card: FP16 at 1/64 rate (left out), INT8 by DP4A
    _card("p40-24gb", "NVIDIA Tesla P40", 24, "GDDR5", 346, tflops(fp32=12, int8=47), (6, 1),
          ("NVIDIA Tesla P40 datasheet (https://www.nvidia.com/en-us/data-center/tesla-p40/)",),
          aliases=("Tesla P40", "P40", "Tesla P40 24GB", "P40 24GB"), link=pcie(3), cores=30),
    _card("v100-sxm2-16gb", "NVIDIA Tesla V100 SXM2 16GB", 16, "HBM2", 900, tflops(fp64=7.8, fp32=15.7, fp16=125), (7, 0),
          (_V100,), aliases=("Tesla V100-SXM2-16GB", "V100 16GB", "V100 SXM2 16GB", "Tesla V100 16GB")),
    _card("v100-sxm2-32gb", "NVIDIA Tesla V100 SXM2 32GB", 32, "HBM2", 900, tflops(fp64=7.8, fp32=15.7, fp16=125), (7, 0),
          (_V100,), aliases=("Tesla V100-SXM2-32GB", "V100 32GB", "V100 SXM2 32GB", "Tesla V100 32GB")),
    _card("v100-pcie-16gb", "NVIDIA Tesla V100 PCIe 16GB", 16, "HBM2", 900, tflops(fp64=7, fp32=14, fp16=112), (7, 0),
          (_V100,), aliases=("Tesla V100-PCIE-16GB",), link=pcie(3)),
    _card("v100-pcie-32gb", "NVIDIA Tesla V100 PCIe 32GB", 32, "HBM2", 900, tflops(fp64=7, fp32=14, fp16=112), (7, 0),
          (_V100,), aliases=("Tesla V100-PCIE-32GB",), link=pcie(3)),
    _card("t4", "NVIDIA Tesla T4", 16, "GDDR6", 320, tflops(fp32=8.1, fp16=65, int8=130), (7, 5),
          ("NVIDIA T4 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/tesla-t4/)",),
          aliases=("T4", "Tesla T4"), link=pcie(3), notes=("ECC on by default takes some of it",)),
    _card("a10", "NVIDIA A10", 24, "GDDR6", 600, tflops(fp32=31.2, tf32=62.5, fp16=125, bf16=125, int8=250), (8, 6),
          ("NVIDIA A10 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/products/a10-gpu/)",),
          aliases=("A10",), link=pcie(4)),
    _card("a30", "NVIDIA A30", 24, "HBM2", 933, tflops(fp64=5.2, fp32=10.3, tf32=82, fp16=165, bf16=165, int8=330), (8, 0),
          ("NVIDIA A30 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/products/a30-gpu/)",),
          aliases=("A30",), link=pcie(4)),
    _card("a40", "NVIDIA A40", 48, "GDDR6 ECC", 696, tflops(fp32=37.4, tf32=74.8, fp16=149.7, bf16=149.7, int8=299.3), (8, 6),
          ("NVIDIA A40 datasheet (https://www.nvidia.com/en-us/data-center/a40/)",), aliases=("A40",), link=pcie(4)),
    _card("a100-pcie-40gb", "NVIDIA A100 PCIe 40GB", 40, "HBM2", 1555, _A100_FLOPS, (8, 0), (_A100,),
          aliases=("A100-PCIE-40GB", "A100 40GB PCIe"), link=pcie(4)),
    _card("a100-sxm-40gb", "NVIDIA A100 SXM4 40GB", 40, "HBM2", 1555, _A100_FLOPS, (8, 0), (_A100,),
          aliases=("A100-SXM4-40GB", "A100 SXM 40GB", "A100 40GB SXM")),
    _card("a100-pcie-80gb", "NVIDIA A100 PCIe 80GB", 80, "HBM2e", 1935, _A100_FLOPS, (8, 0), (_A100,),
          aliases=("A100 80GB PCIe", "A100-PCIE-80GB"), link=pcie(4)),
    _card("a100-sxm-80gb", "NVIDIA A100 SXM4 80GB", 80, "HBM2e", 2039, _A100_FLOPS, (8, 0), (_A100,),
          aliases=("A100-SXM4-80GB", "A100 SXM 80GB", "A100 80GB SXM")),
    _card("l4", "NVIDIA L4", 24, "GDDR6", 300, tflops(fp32=30.3, tf32=60, fp16=121, bf16=121, fp8=242.5, int8=242.5), (8, 9),
          ("NVIDIA L4 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/l4/)",), aliases=("L4",),
          link=pcie(4), features=("fp8",), notes=("ECC on by default takes some of it",)),
    _card("l40", "NVIDIA L40", 48, "GDDR6 ECC", 864, tflops(fp32=90.5, tf32=90.5, fp16=181.05, bf16=181.05, fp8=362, int8=362),
          (8, 9), ("NVIDIA L40 GPU datasheet (https://www.nvidia.com/en-us/data-center/l40/)",), aliases=("L40",),
          link=pcie(4), features=("fp8",)),
    _card("l40s", "NVIDIA L40S", 48, "GDDR6", 864, tflops(fp32=91.6, tf32=183, fp16=362.05, bf16=362.05, fp8=733, int8=733),
          (8, 9), ("NVIDIA L40S GPU datasheet (https://www.nvidia.com/en-us/data-center/l40s/)",), aliases=("L40S",),
          link=pcie(4), features=("fp8",), notes=("ECC on by default takes some of it",)),
    _card("h100-pcie", "NVIDIA H100 PCIe", 80, "HBM2e", 2000,
          tflops(fp64=26, fp32=51, tf32=378, fp16=756, bf16=756, fp8=1513, int8=1513), (9, 0), (_H100,),
          aliases=("H100 PCIe", "H100 PCIe 80GB"), link=pcie(5), features=_HOPPER),
    _card("h100-sxm", "NVIDIA H100 SXM5 80GB", 80, "HBM3", 3350, _H100_SXM, (9, 0), (_H100,),
          aliases=("H100 SXM", "H100 SXM5", "H100 80GB HBM3", "H100 SXM 80GB", "H100 SXM5 80GB"), link=pcie(5),
          features=_HOPPER),
    _card("h100-nvl", "NVIDIA H100 NVL", 94, "HBM3", 3900, _H_NVL, (9, 0), (_H100,), aliases=("H100 NVL", "H100 NVL 94GB"),
          link=pcie(5), features=_HOPPER),
    _card("h200", "NVIDIA H200 SXM 141GB", 141, "HBM3e", 4800, _H100_SXM, (9, 0), (_H200,),
          aliases=("H200", "H200 SXM", "H200 141GB", "H200 SXM 141GB"), link=pcie(5), features=_HOPPER),
    _card("h200-nvl", "NVIDIA H200 NVL", 141, "HBM3e", 4800, _H_NVL, (9, 0), (_H200,), aliases=("H200 NVL",),
          link=pcie(5), features=_HOPPER),
    _card("gh200-96gb", "NVIDIA GH200 96GB HBM3", 96, "HBM3", 4000, _H100_SXM, (9, 0), (_GH200,),
          aliases=("GH200 480GB", "GH200 96GB"), link=450 * GB, features=_HOPPER,
          notes=("pcie_bytes_per_s: NVLink-C2C to the Grace CPU, 900 GB/s both ways",)),
    _card("gh200-144gb", "NVIDIA GH200 144GB HBM3e", 144, "HBM3e", 4900, _H100_SXM, (9, 0), (_GH200,),
          aliases=("GH200 624GB", "GH200 144GB"), link=450 * GB, features=_HOPPER,
          notes=("pcie_bytes_per_s: NVLink-C2C to the Grace CPU, 900 GB/s both ways",)),
    _card("b200", "NVIDIA B200 180GB", 180, "HBM3e", 8000,
          tflops(tf32=1125, fp16=2250, bf16=2250, fp8=4500, int8=4500, fp4=9000), (10, 0), (_B200,),
          aliases=("B200", "B200 SXM", "B200-SXM-180GB", "B200 180GB"), link=pcie(5), features=_FEATURES["blackwell"]),
    # B300: memory and bandwidth from the HGX B300 page; no per-dtype figures transcribed (left out, not guessed)
    _card("b300", "NVIDIA B300 288GB", 288, "HBM3e", 8000, {}, (10, 3),
          ("NVIDIA HGX B300, per GPU: 2.3 TB HBM3e / 8 (https://www.nvidia.com/en-us/data-center/hgx/)",),
          aliases=("B300", "B300 SXM", "B300 288GB", "Blackwell Ultra"), link=pcie(5),
          features=_FEATURES["blackwell"]),
)  # fmt: skip

ALL = GEFORCE + WORKSTATION + DATACENTRE
