"""GPUs and their memory: exact bytes as each vendor states them, and custom sizes.

Vendors write "GB" on the box. For GDDR and HBM cards and Apple's unified memory that "GB" is
binary: the chips hold 2^30-byte gigabytes, so a "24 GB" RTX 4090 has 24·2^30 bytes. Each entry
says which unit its figure is in. A custom size is read as written: ``24GB`` is 24·10^9 bytes,
``20GiB`` is 20·2^30.

``usable`` is what one program may use by default: on an NVIDIA card the total CUDA reports
(``cudaMemGetInfo``), measured on an H100 SXM, an H200 and (in vLLM's logs) an RTX 4090 and
estimated for other cards from the largest share those keep back; the stated memory on AMD; on
a Mac, Metal's ``recommendedMaxWorkingSetSize`` (2/3 of memory up to 36 GB, 3/4 above, 107.52
GiB of 128 on macOS 26; ``sudo sysctl iogpu.wired_limit_mb=N`` raises it). The figures and their
sources live in :mod:`paramcount.hardware` (nvidia.py, apple.py); this module keeps the short
list ``fit`` compares by default and reads every other name through that catalog. The plan's
overhead covers the CUDA context on top of ``usable``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from ...errors import ParamcountError, bounded_number
from ...hardware import Hardware, candidates, nvidia
from ...hardware import lookup as hardware_lookup
from ...hardware.apple import working_set, working_share

if TYPE_CHECKING:  # detect.py (subprocess, json) is imported only when a machine is read
    from ...hardware.detect import GPUFound, Machine

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


# The short list `fit` compares by default: each row is the hardware catalog's (memory, usable
# bytes, bandwidth, capability, the dense bf16 figure or fp16 where a card has no bf16), under
# the key and name it had before the catalog existed, so plans and snapshots keep their labels.
_LEGACY = {
    "rtx3060": ("rtx3060-12gb", "GeForce RTX 3060", "consumer"),
    "rtx3090": ("rtx3090-24gb", "GeForce RTX 3090", "consumer"),
    "rtx4090": ("rtx4090-24gb", "GeForce RTX 4090", "consumer"),
    "rtx5090": ("rtx5090-32gb", "GeForce RTX 5090", "consumer"),
    "t4": ("t4", "Tesla T4", "data-centre"),
    "v100-16gb": ("v100-sxm2-16gb", "Tesla V100 16GB", "data-centre"),
    "v100-32gb": ("v100-sxm2-32gb", "Tesla V100 32GB", "data-centre"),
    "l4": ("l4", "L4", "data-centre"),
    "l40s": ("l40s", "L40S", "data-centre"),
    "a100-40gb": ("a100-sxm-40gb", "A100 40GB", "data-centre"),
    "a100-80gb": ("a100-sxm-80gb", "A100 80GB", "data-centre"),
    "h100": ("h100-sxm", "H100 SXM 80GB", "data-centre"),
    "h100-pcie": ("h100-pcie", "H100 PCIe 80GB", "data-centre"),
    "h200": ("h200", "H200 141GB", "data-centre"),
    "mi300x": ("mi300x", "AMD Instinct MI300X", "data-centre"),
}
_APPLE_SIZES = (8, 16, 24, 32, 36, 48, 64, 96, 128, 192)
# measured CUDA totals by key: the catalog's keys and the short list's
CUDA_TOTAL = dict(nvidia.CUDA_TOTAL)
CUDA_TOTAL.update({k: nvidia.CUDA_TOTAL[v[0]] for k, v in _LEGACY.items() if v[0] in nvidia.CUDA_TOTAL})
KEPT_BACK = nvidia.KEPT_BACK
_DATA_CENTRE = ("data centre", "Instinct")


def from_hardware(row: Hardware, key: str | None = None, name: str | None = None, kind: str | None = None) -> GPU:
    """A catalog row as the planners' GPU: bytes as the catalog has them, the dense 16-bit figure
    in TFLOPS (bf16, else fp16; a GeForce card's to one decimal, as NVIDIA's whitepapers print
    it), bandwidth in GB/s."""
    if row.kind == "cpu":
        raise ParamcountError(f"{row.name} is a CPU; --gpu takes a GPU or an Apple chip", field="--gpu")
    peak = row.flops.get("bf16") or row.flops.get("fp16")
    kind = kind or ("apple" if row.kind == "apple" else "data-centre" if row.family in _DATA_CENTRE else "consumer")
    note = " ".join(n for n in row.notes if n.startswith("ECC"))
    return GPU(
        key or row.key,
        name or row.name,
        row.memory_bytes,
        row.stated,
        row.usable_bytes,
        round(peak / 1e12, 1 if row.family.startswith("GeForce") else 2) if peak else None,
        kind,
        note,
        _gb_s(row.bandwidth_bytes_per_s),
        row.capability,
    )


def detected(found: GPUFound) -> GPU:
    """A GPU as this machine's driver reports it: its catalog row with the memory usable now
    (:meth:`GPUFound.hardware`), else a GPU of the size reported."""
    row = found.hardware()
    if row is not None:
        return from_hardware(row, name=f"{row.name} (detected)")
    usable = min(found.usable_bytes or found.memory_bytes, found.free_bytes or found.memory_bytes)
    return GPU("detected", f"{found.name} (detected)", found.memory_bytes, "detected", usable, None, "custom")


def ram_device(machine: Machine) -> GPU:
    """No GPU: llama.cpp's ``--device cpu`` plan, held to the RAM available now (MemAvailable;
    all of it where that is unknown)."""
    ram = machine.ram_bytes or 0
    name = f"RAM of this machine ({machine.cpu.name or 'CPU'})"
    note = "no GPU found: llama.cpp on the CPU; usable is the RAM available now (MemAvailable)"
    return GPU("ram", name, ram, "RAM", machine.ram_available_bytes or ram, None, "custom", note)


def _gb_s(bandwidth: int) -> float:
    """Bytes per second as GB/s, a whole number where it is one (as the datasheets print it)."""
    return bandwidth // GB if bandwidth % GB == 0 else bandwidth / GB


def _apple(gb: int) -> GPU:
    # any M-series Mac of this size: Metal's recommended working set (hardware.apple.working_set)
    usable, _ = working_set(gb)
    fraction = working_share(gb)
    share = f"{fraction.numerator}/{fraction.denominator}" if fraction.denominator < 10 else f"{float(fraction):.0%}"
    note = f"unified memory; macOS lets the GPU use about {share} by default (iogpu.wired_limit_mb raises it)"
    return GPU(f"apple-{gb}gb", f"Apple M-series {gb} GB", gb * GIB, f"{gb} GB unified", usable, None, "apple", note)


_TABLE = (
    *(from_hardware(hardware_lookup(v[0]), k, v[1], v[2]) for k, v in _LEGACY.items()),
    *(_apple(gb) for gb in _APPLE_SIZES),
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


def _as_gpu(row: Hardware) -> GPU:
    """A catalog row: its short-list GPU where it has one (the same key and label), else its own."""
    legacy = {v[0]: k for k, v in _LEGACY.items()}
    return GPUS[legacy[row.key]] if row.key in legacy else from_hardware(row)


def custom(text: str) -> GPU:
    """A GPU of a given size, read as written (``24GB`` is decimal, ``24GiB`` binary)."""
    size = parse_size(text)
    label = text.strip().replace(" ", "")
    return GPU(label, f"custom {label}", size, label, size, None, "custom")


def gpu(name: str | GPU) -> GPU:
    """A GPU by name (``RTX 4090``, ``h100``, ``apple-64gb``, or any name the hardware catalog takes:
    ``NVIDIA GeForce RTX 3060``, ``A100 SXM 80GB``, ``Apple M2 Max 64GB``) or a custom size (``24GB``,
    ``20GiB``)."""
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
    bare = re.fullmatch(r"\s*\d+(\.\d+)?\s*", name) is not None
    found = candidates(name)
    if len(found) == 1:
        return _as_gpu(found[0])
    if found and not bare:  # several rows: the catalog's one line, naming them
        hardware_lookup(name)
    close = difflib.get_close_matches(key, list(index), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(dict.fromkeys(index[c] for c in close))}?" if close else ""
    if bare:  # a bare number: the unit is missing, or it is several cards' number
        hint = f"; a size needs its unit: {name.strip()}GB or {name.strip()}GiB"
        hint += f"; cards of that number: {', '.join(r.key for r in found[:8])}" if found else ""
    elif size:  # 24G, 24gigs: a size whose unit is unclear, never a card's name
        hint = _size_hint(float(size.group(1)), size.group(2))
    raise ParamcountError(
        f"unknown GPU {name!r}{hint} (known: {', '.join(GPUS)}; or a size like 24GB or 20GiB)", field="--gpu"
    )
