"""The row type of the hardware catalog, and the arithmetic its tables share.

Units, once: ``memory_bytes`` counts the "GB" printed on a GDDR/HBM card or a Mac as GiB (the
chips hold 2^30-byte gigabytes: a "24 GB" RTX 4090 has 24·2^30 bytes); bandwidth and FLOP/s
are decimal, as datasheets print them (936 GB/s is 936·10^9 bytes per second).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

GIB = 2**30
GB = 10**9
T = 10**12  # TFLOP/s → FLOP/s

KINDS = ("gpu", "apple", "cpu")
VENDORS = ("nvidia", "amd", "apple", "intel")
DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")


@dataclass(frozen=True)
class Hardware:
    """One product in one memory size: a GPU, an Apple chip, or a CPU (with no memory of its own).

    ``flops`` holds the vendor's peak dense (never 2:4 sparse) FLOP/s per dtype (OP/s for int8),
    only the dtypes its datasheet gives (or, where ``notes`` says so, the whitepaper's per-SM rate
    times the card's SMs and boost clock). ``fp32``/``fp64`` are the plain (vector/CUDA-core)
    rates; ``tf32``/``fp16``/``bf16``/``fp8``/``int8``/``fp4`` the matrix (tensor-core) rates, on
    GeForce and Radeon cards with FP32 accumulation (what PyTorch's cuBLAS calls use).
    ``usable_bytes`` is what one program may use by default: on NVIDIA the total CUDA reports
    (measured, or the stated memory less the largest share measured kept back: ``notes`` says
    which), on a Mac macOS's recommended working set, the stated memory on AMD, 0 for a CPU.
    """

    key: str
    name: str
    aliases: tuple[str, ...]
    kind: str
    vendor: str
    memory_bytes: int
    usable_bytes: int
    bandwidth_bytes_per_s: int
    flops: Mapping[str, float]
    sources: tuple[str, ...]
    capability: tuple[int, int] | None = None
    cores: int | None = None
    features: tuple[str, ...] = ()
    pcie_bytes_per_s: int | None = None
    stated: str = ""  # the memory as the vendor writes it: "12 GB GDDR6", "64GB unified memory"
    notes: tuple[str, ...] = ()  # what is derived or estimated, and how
    memory_channels: int | None = None  # CPU rows: DDR channels per socket
    memory_speed_mts: int | None = None  # CPU rows: the supported DDR speed, MT/s
    family: str = ""  # "GeForce RTX 30", "Instinct", "M2 Max", "EPYC 9004": for listing
    # CPU rows: the AVX2/AVX-512 units' peaks per dtype (what ggml's vec_dot kernels run on), apart
    # from ``flops``, which on Xeon from Sapphire Rapids gives AMX's int8 and bf16 tile rates
    vector_flops: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # a read-only view: the rows are shared by every caller
        object.__setattr__(self, "flops", MappingProxyType(dict(self.flops)))
        object.__setattr__(self, "vector_flops", MappingProxyType(dict(self.vector_flops)))

    def __hash__(self) -> int:  # the mapping of FLOP/s is not hashable; a row is its key
        return hash(self.key)

    @property
    def unit(self) -> str:
        """The unit the vendor's memory figure is in: GiB when it is a whole number of them."""
        return "GiB" if self.memory_bytes % GIB == 0 else "GB"

    def as_dict(self) -> dict:
        """The row as JSON: every field, FLOP/s per dtype as numbers."""
        return {
            "key": self.key,
            "name": self.name,
            "aliases": list(self.aliases),
            "kind": self.kind,
            "vendor": self.vendor,
            "family": self.family,
            "memory_bytes": self.memory_bytes,
            "usable_bytes": self.usable_bytes,
            "stated": self.stated,
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "flops": dict(self.flops),
            "vector_flops": dict(self.vector_flops),
            "capability": list(self.capability) if self.capability else None,
            "cores": self.cores,
            "features": list(self.features),
            "pcie_bytes_per_s": self.pcie_bytes_per_s,
            "memory_channels": self.memory_channels,
            "memory_speed_mts": self.memory_speed_mts,
            "notes": list(self.notes),
            "sources": list(self.sources),
        }


def pcie(gen: int, lanes: int = 16) -> int:
    """One direction of a PCIe link: GT/s per lane × lanes × the line code's payload share / 8 bits.

    Gen 3 and later use 128b/130b (PCI-SIG base specifications 3.0–5.0): gen 4 x16 is 31.5 GB/s,
    which NVIDIA's datasheets print as "64 GB/s" counting both directions."""
    rate = {3: 8, 4: 16, 5: 32}[gen]
    return rate * GB * lanes * 128 // 130 // 8


def tflops(**figures: float | None) -> dict[str, float]:
    """``tflops(fp32=19.5, bf16=312)`` → FLOP/s per dtype, leaving out what is not given."""
    return {k: float(v) * T for k, v in figures.items() if v is not None}
