"""GPUs and their memory: exact bytes as each vendor states them, and custom sizes.

Vendors write "GB" on the box. For GDDR and HBM cards and Apple's unified memory that "GB" is
binary: the chips hold 2^30-byte gigabytes, so a "24 GB" RTX 4090 has 24·2^30 bytes. Each entry
says which unit its figure is in. A custom size is read as written: ``24GB`` is 24·10^9 bytes,
``20GiB`` is 20·2^30.

``usable`` is what one program may use by default. On an NVIDIA card it is the total CUDA
reports (``cudaMemGetInfo``, what ``torch.cuda.mem_get_info`` and llama.cpp read), which is less
than the stated memory by what the driver keeps back: measured on an H100 SXM (85,017,493,504 B
of 80 GiB, 1.03% kept back) and an H200 (150,109,880,320 B of 141 GiB, 0.85%), both driver
580.159.04 (tests/fixtures/gpu_h100.json, gpu_h200.json); an RTX 4090 reports 23.55 to 23.58 GiB
of 24 (vLLM's logs of ``total_gpu_memory``, vllm-project/vllm#11550 and #14447: 1.9% kept
back). Other NVIDIA cards are held to the largest of those shares, an estimate. The plan's
overhead covers the CUDA context on top of that. On AMD cards it
is the stated memory (not measured here); on a Mac, macOS lets the GPU wire only part of
unified memory (about 2/3 up to 36 GB, 3/4 above, as Metal's ``recommendedMaxWorkingSetSize``
reports; ``sudo sysctl iogpu.wired_limit_mb=N`` raises it).
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from ...errors import ParamcountError, bounded_number

GB = 10**9
GIB = 2**30
MAX_BYTES = 2**70  # 1,024 EiB
UNITS = {"mb": 10**6, "gb": GB, "tb": 10**12, "mib": 2**20, "gib": GIB, "tib": 2**40}


@dataclass(frozen=True)
class GPU:
    """One accelerator: its memory in bytes and its peak dense 16-bit tensor throughput.

    ``tflops`` is the vendor's peak dense (not 2:4 sparse) bf16 figure, fp16 on GPUs without
    bf16 (T4, V100); ``None`` where the vendor gives none (Apple). ``bandwidth`` is the memory
    bandwidth on the same datasheet, in GB/s; ``None`` for Apple (it is the chip's, not the
    memory size's) and custom sizes. ``capability`` is NVIDIA's published CUDA compute
    capability (developer.nvidia.com/cuda-gpus), which decides how transformers loads a
    quantised checkpoint (:mod:`paramcount.memory.runtimes.transformers.loading`); ``None`` for AMD, Apple and custom
    sizes.
    """

    key: str
    name: str
    memory: int
    stated: str
    usable: int
    tflops: float | None
    kind: str  # consumer | data-centre | apple | custom
    note: str = ""
    bandwidth: float | None = None  # memory bandwidth, GB/s (10^9 bytes) as the vendor states it
    capability: tuple[int, int] | None = None  # CUDA compute capability (NVIDIA's table)

    @property
    def unit(self) -> str:
        """The unit the vendor's figure is in: GiB when it is a whole number of them."""
        return "GiB" if self.memory % GIB == 0 else "GB"


# cudaMemGetInfo's total: measured (H100, H200: driver 580.159.04) or as vLLM logs it (RTX 4090,
# the lower of 23.55 and 23.58 GiB); other NVIDIA cards keep back the largest share of these.
CUDA_TOTAL = {"h100": 85_017_493_504, "h200": 150_109_880_320, "rtx4090": int(Fraction("23.55") * GIB)}
_STATED = {"h100": 80 * GIB, "h200": 141 * GIB, "rtx4090": 24 * GIB}
KEPT_BACK = max(Fraction(_STATED[k] - t, _STATED[k]) for k, t in CUDA_TOTAL.items())


def _usable(key: str, memory: int, nvidia: bool) -> int:
    if key in CUDA_TOTAL:
        return CUDA_TOTAL[key]
    return memory - math.ceil(memory * KEPT_BACK) if nvidia else memory


def _card(
    key: str,
    name: str,
    gib: int,
    stated: str,
    tflops: float | None,
    bandwidth: float,
    kind: str,
    capability: tuple[int, int] | None,
    note: str = "",
) -> GPU:
    usable = _usable(key, gib * GIB, capability is not None)
    return GPU(key, name, gib * GIB, stated, usable, tflops, kind, note, bandwidth, capability)


def _apple(gb: int) -> GPU:
    # macOS wires about 2/3 of unified memory for the GPU up to 36 GB, 3/4 above (see module doc)
    usable = gb * GIB * 2 // 3 if gb <= 36 else gb * GIB * 3 // 4
    share = "2/3" if gb <= 36 else "3/4"
    note = f"unified memory; macOS lets the GPU use about {share} by default (iogpu.wired_limit_mb raises it)"
    return GPU(f"apple-{gb}gb", f"Apple M-series {gb} GB", gb * GIB, f"{gb} GB unified", usable, None, "apple", note)


_TABLE = (
    # Compute capability (after the kind): NVIDIA's CUDA GPUs table (developer.nvidia.com/cuda-gpus).
    # GeForce: bf16 tensor TFLOPS with fp32 accumulate from NVIDIA's GA102, Ada and Blackwell
    # whitepapers; the RTX 3060 (not in them) as 28 SMs × 1.777 GHz × 512 FLOP per clock.
    _card("rtx3060", "GeForce RTX 3060", 12, "12 GB GDDR6", 25.5, 360, "consumer", (8, 6)),
    _card("rtx3090", "GeForce RTX 3090", 24, "24 GB GDDR6X", 71.0, 936, "consumer", (8, 6)),
    _card("rtx4090", "GeForce RTX 4090", 24, "24 GB GDDR6X", 165.2, 1008, "consumer", (8, 9)),
    _card("rtx5090", "GeForce RTX 5090", 32, "32 GB GDDR7", 209.5, 1792, "consumer", (12, 0)),
    # Data centre: the vendors' datasheets (dense figures: half the "with sparsity" ones; A100 80GB
    # and H100 as SXM modules). Bandwidth (GB/s) from the same datasheets and whitepapers.
    _card("t4", "Tesla T4", 16, "16 GB GDDR6", 65.0, 320, "data-centre", (7, 5), "ECC on by default takes some of it"),
    _card("v100-16gb", "Tesla V100 16GB", 16, "16 GB HBM2", 125.0, 900, "data-centre", (7, 0)),
    _card("v100-32gb", "Tesla V100 32GB", 32, "32 GB HBM2", 125.0, 900, "data-centre", (7, 0)),
    _card("l4", "L4", 24, "24 GB GDDR6", 121.0, 300, "data-centre", (8, 9), "ECC on by default takes some of it"),
    _card("l40s", "L40S", 48, "48 GB GDDR6", 362.05, 864, "data-centre", (8, 9), "ECC on by default takes some of it"),
    _card("a100-40gb", "A100 40GB", 40, "40 GB HBM2", 312.0, 1555, "data-centre", (8, 0)),
    _card("a100-80gb", "A100 80GB", 80, "80 GB HBM2e", 312.0, 2039, "data-centre", (8, 0)),
    _card("h100", "H100 SXM 80GB", 80, "80 GB HBM3", 989.4, 3350, "data-centre", (9, 0)),
    _card("h100-pcie", "H100 PCIe 80GB", 80, "80 GB HBM2e", 756.0, 2000, "data-centre", (9, 0)),
    _card("h200", "H200 141GB", 141, "141 GB HBM3e", 989.4, 4800, "data-centre", (9, 0)),
    _card("mi300x", "AMD Instinct MI300X", 192, "192 GB HBM3", 1307.4, 5300, "data-centre", None),
    *(_apple(gb) for gb in (8, 16, 24, 32, 36, 48, 64, 96, 128, 192)),
)

GPUS: dict[str, GPU] = {g.key: g for g in _TABLE}

# Other spellings people type; a name that could be two cards is refused with both named.
_ALIASES = {"h100sxm": "h100", "h100sxm80gb": "h100", "h10080gb": "h100", "h200141gb": "h200", "mi300": "mi300x"}
_AMBIGUOUS = {"a100": ("a100-40gb", "a100-80gb"), "v100": ("v100-16gb", "v100-32gb")}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$", re.I)


def _norm(name: str) -> str:
    s = re.sub(r"[^a-z0-9]", "", name.lower())
    for prefix in ("nvidia", "geforce", "amd", "instinct", "tesla"):
        s = s.removeprefix(prefix)
    return s


def _index() -> dict[str, str]:
    index = {_norm(k): k for k in GPUS}
    index.update({_norm(g.name): g.key for g in GPUS.values()})
    index.update({k.removeprefix("rtx"): k for k in GPUS if k.startswith("rtx")})
    index.update({k.replace("apple", "mac"): v for k, v in index.items() if k.startswith("apple")})
    return index | _ALIASES


def parse_size(text: str, field: str = "--gpu") -> int:
    """``24GB`` → 24·10^9 bytes, ``20GiB`` → 20·2^30; raises on anything else."""
    m = _SIZE.match(text)
    if not m or m.group(2).lower() not in UNITS:
        raise ParamcountError(f"expected a size like 24GB or 20GiB, got {text!r}", field=field)
    bounded_number(m.group(1), field, "a size")
    try:
        value = int(Decimal(m.group(1)) * UNITS[m.group(2).lower()])
    except InvalidOperation as e:  # pragma: no cover - the pattern admits only decimals
        raise ParamcountError(f"bad size {text!r}", field=field) from e
    if value <= 0:
        raise ParamcountError(f"a size must be positive, got {text!r}", field=field)
    if value > MAX_BYTES:  # past it, sizes in GiB as floats overflow or lose every digit
        raise ParamcountError(
            f"{text.strip()} is more than {MAX_BYTES // 2**60:,} EiB; no memory is that large", field=field
        )
    return value


def _size_hint(number: float, unit: str) -> str:
    """``24G``: say the units a size takes, and the cards of about that size."""
    g = f"{number:g}"
    near = [k for k, c in GPUS.items() if c.kind != "custom" and abs(c.memory / GIB - number) <= 0.05 * number]
    cards = f"; cards of that size: {', '.join(near)}" if near else ""
    return f"; {unit!r} is not a unit: a size is {g}GB or {g}GiB (or MB, MiB, TB, TiB){cards}"


def custom(text: str) -> GPU:
    """A GPU of a given size, read as written (``24GB`` is decimal, ``24GiB`` binary)."""
    size = parse_size(text)
    label = text.strip().replace(" ", "")
    return GPU(label, f"custom {label}", size, label, size, None, "custom")


def gpu(name: str | GPU) -> GPU:
    """A GPU by name (``RTX 4090``, ``h100``, ``apple-64gb``) or a custom size (``24GB``, ``20GiB``)."""
    if isinstance(name, GPU):
        return name
    if "," in name:  # fit.py splits a list first; anywhere else one card is meant
        raise ParamcountError(
            f"one GPU here, not {name!r}; several are for `paramcount fit --runtime llama.cpp`", field="--gpu"
        )
    size = _SIZE.match(name)
    if size and size.group(2).lower() in UNITS:
        return custom(name)
    key = _norm(name)
    if key in _AMBIGUOUS:
        raise ParamcountError(f"{name!r} is more than one GPU: say {' or '.join(_AMBIGUOUS[key])}", field="--gpu")
    index = _index()
    if key in index:
        return GPUS[index[key]]
    close = difflib.get_close_matches(key, list(index), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(dict.fromkeys(index[c] for c in close))}?" if close else ""
    if re.fullmatch(r"\s*\d+(\.\d+)?\s*", name):  # a bare number: the unit is missing
        hint = f"; a size needs its unit: {name.strip()}GB or {name.strip()}GiB"
    elif size:  # 24G, 24gigs: a size whose unit is unclear, never a card's name
        hint = _size_hint(float(size.group(1)), size.group(2))
    raise ParamcountError(
        f"unknown GPU {name!r}{hint} (known: {', '.join(GPUS)}; or a size like 24GB or 20GiB)", field="--gpu"
    )
