"""What this machine has: GPUs with their free memory, RAM, and the CPU's name, cores and features.

Each probe is bounded (a subprocess gets ``TIMEOUT`` seconds, a file is read up to ``MAX_READ``
bytes) and failure-tolerant: a tool that is missing, slow or prints something else leaves its
part empty and says why in ``notes``. GPUs come from NVML (the optional ``nvml`` extra,
nvidia-ml-py, imported only here), else ``nvidia-smi --query-gpu``, plus ``rocm-smi --json``; a
Mac's GPU is its chip, read from ``sysctl`` with Metal's recommended working set (or
``iogpu.wired_limit_mb`` where it is set). RAM is /proc/meminfo's MemTotal and MemAvailable (a
Mac's ``hw.memsize``); the CPU is /proc/cpuinfo's model name and flags (``sysctl`` on a Mac).
A detected GPU carries the catalog row its name and memory match, so a plan for it is a plan
for that row with the detected memory.

Tests feed :func:`detect` recorded outputs through :class:`Probes`; nothing here assumes the
machine it runs on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .apple import working_set
from .catalog import candidates
from .row import GIB, Hardware

TIMEOUT = 5.0  # seconds a probe may take
MAX_READ = 4 * 2**20  # bytes read of a file or a tool's output
MIB = 2**20

# /proc/cpuinfo flags (Linux's names) → the catalog's feature names (hardware.cpus)
_FLAGS = {
    "avx2": "avx2",
    "avx512f": "avx512",
    "avx512_bf16": "avx512_bf16",
    "avx512_fp16": "avx512_fp16",
    "avx512_vnni": "avx512_vnni",
    "avx_vnni": "avx_vnni",
    "amx_tile": "amx",
    "amx_bf16": "amx_bf16",
    "amx_int8": "amx_int8",
    "amx_fp16": "amx_fp16",
    "asimd": "neon",  # ARM (the "Features" line)
    "asimddp": "dotprod",
}


def _run(cmd: list[str]) -> str | None:
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout[:MAX_READ].decode("utf-8", "replace") if done.returncode == 0 else None


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_READ).decode("utf-8", "replace")
    except OSError:
        return None


def _nvml() -> list[tuple[str, int, int]] | None:
    """(name, total, free) per NVIDIA GPU through NVML, or None without the extra or a driver."""
    try:
        import pynvml  # the optional extra "nvml" (nvidia-ml-py)
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            out = []
            for i in range(pynvml.nvmlDeviceGetCount()):
                h = pynvml.nvmlDeviceGetHandleByIndex(i)
                name, mem = pynvml.nvmlDeviceGetName(h), pynvml.nvmlDeviceGetMemoryInfo(h)
                out.append((name.decode() if isinstance(name, bytes) else str(name), int(mem.total), int(mem.free)))
            return out
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # any NVML error (no driver, no device) means: ask nvidia-smi instead
        return None


@dataclass(frozen=True)
class Probes:
    """Where detection reads from; tests replace each with recorded output."""

    run: Callable[[list[str]], str | None] = _run
    read: Callable[[str], str | None] = _read
    nvml: Callable[[], list[tuple[str, int, int]] | None] = _nvml
    platform: str = sys.platform


@dataclass(frozen=True)
class GPUFound:
    """One GPU as its driver reports it, and the catalog row that name and memory are."""

    name: str
    memory_bytes: int
    free_bytes: int | None
    source: str
    row: Hardware | None = None
    usable_bytes: int | None = None  # a Mac: Metal's working set (or iogpu.wired_limit_mb)

    def hardware(self) -> Hardware | None:
        """The catalog row with what is usable now: the free memory the driver reports (as
        llama.cpp's --fit and Ollama read it), else a Mac's working set, else the catalog's."""
        if self.row is None:
            return None
        # a Mac's working set as read (iogpu.wired_limit_mb may raise it past the default); a
        # card's total as the driver reports it is more than CUDA's, which the catalog holds
        usable = self.usable_bytes or min(self.memory_bytes, self.row.usable_bytes)
        return replace(self.row, usable_bytes=min(usable, self.free_bytes) if self.free_bytes else usable)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "memory_bytes": self.memory_bytes,
            "free_bytes": self.free_bytes,
            "usable_bytes": self.usable_bytes or self.memory_bytes,
            "key": self.row.key if self.row else None,
            "source": self.source,
        }


@dataclass(frozen=True)
class CPUFound:
    name: str | None
    cores: int | None
    features: tuple[str, ...]
    row: Hardware | None = None

    def as_dict(self) -> dict:
        key = self.row.key if self.row else None
        return {"name": self.name, "cores": self.cores, "features": list(self.features), "key": key}


@dataclass(frozen=True)
class Machine:
    gpus: tuple[GPUFound, ...]
    ram_bytes: int | None
    ram_available_bytes: int | None
    cpu: CPUFound
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict:
        return {
            "gpus": [g.as_dict() for g in self.gpus],
            "ram_bytes": self.ram_bytes,
            "ram_available_bytes": self.ram_available_bytes,
            "cpu": self.cpu.as_dict(),
            "notes": list(self.notes),
        }


def match(name: str, memory_bytes: int | None = None) -> Hardware | None:
    """The catalog row a reported GPU is: its name's rows, the one nearest the memory reported
    (within 10%: drivers report a little less than the box says)."""
    rows = [r for r in candidates(name) if r.kind != "cpu"]
    if memory_bytes:
        rows = [r for r in rows if abs(r.memory_bytes - memory_bytes) <= 0.1 * r.memory_bytes]
        rows.sort(key=lambda r: abs(r.memory_bytes - memory_bytes))
    return rows[0] if len(rows) == 1 or (rows and memory_bytes) else None


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdecimal() and len(text) <= 20 else None


def parse_nvidia_smi(text: str) -> list[GPUFound]:
    """``nvidia-smi --query-gpu=name,memory.total,memory.free --format=csv,noheader,nounits`` (MiB)."""
    out = []
    for line in text.splitlines()[:64]:
        parts = [p.strip() for p in line.rsplit(",", 2)]
        if len(parts) != 3 or _int(parts[1]) is None:
            continue
        total, free = _int(parts[1]) * MIB, _int(parts[2])
        out.append(
            GPUFound(parts[0], total, free * MIB if free is not None else None, "nvidia-smi", match(parts[0], total))
        )
    return out


def parse_rocm_smi(text: str) -> list[GPUFound]:
    """``rocm-smi --showproductname --showmeminfo vram --json``: one object per card."""
    try:
        cards = json.loads(text)
    except ValueError:
        return []
    out = []
    for card in cards.values() if isinstance(cards, dict) else ():
        if not isinstance(card, dict):
            continue
        fields = {str(k).lower(): str(v) for k, v in card.items()}
        # "Card series" names the product ("AMD Instinct MI300X"); "Card model" is often a PCI id
        name = next((fields[k] for k in ("card series", "card sku", "card model") if fields.get(k)), None)
        total = _int(fields.get("vram total memory (b)", ""))
        used = _int(fields.get("vram total used memory (b)", ""))
        if name and total:
            free = total - used if used is not None else None
            out.append(GPUFound(name, total, free, "rocm-smi", match(name, total)))
    return out


def _gpus(p: Probes, notes: list[str]) -> list[GPUFound]:
    found = p.nvml()
    if found is not None:
        gpus = [GPUFound(n, t, f, "nvml", match(n, t)) for n, t, f in found]
    else:
        smi = p.run(["nvidia-smi", "--query-gpu=name,memory.total,memory.free", "--format=csv,noheader,nounits"])
        gpus = parse_nvidia_smi(smi) if smi else []
        if smi is None:
            notes.append("no NVIDIA GPU read (no nvidia-smi, or it failed)")
    rocm = p.run(["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"])
    return gpus + (parse_rocm_smi(rocm) if rocm else [])


def parse_meminfo(text: str) -> tuple[int | None, int | None]:
    """/proc/meminfo → (MemTotal, MemAvailable) in bytes (the file counts kB of 1,024)."""
    fields = {}
    for line in text.splitlines()[:200]:
        key, _, rest = line.partition(":")
        words = rest.split()
        if words and _int(words[0]) is not None:
            fields[key.strip()] = _int(words[0]) * 1024
    return fields.get("MemTotal"), fields.get("MemAvailable")


def parse_cpuinfo(text: str) -> CPUFound:
    """/proc/cpuinfo → the model name, physical cores (cores per socket × sockets) and features."""
    name, flags, sockets, per_socket, logical = None, set(), set(), None, 0
    for line in text.splitlines()[:100_000]:
        key, _, value = (s.strip() for s in line.partition(":"))
        if key == "processor":
            logical += 1
        elif key == "model name" and name is None:
            name = value
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
        elif key == "physical id":
            sockets.add(value)
        elif key == "cpu cores" and per_socket is None:
            per_socket = _int(value)
    cores = per_socket * max(len(sockets), 1) if per_socket else (logical or None)
    features = tuple(f for k, f in _FLAGS.items() if k in flags)
    return CPUFound(name, cores, features, _cpu_row(name))


def _cpu_row(name: str | None) -> Hardware | None:
    rows = [r for r in candidates(name) if r.kind == "cpu"] if name else []
    return rows[0] if len(rows) == 1 else None


def _linux(p: Probes, notes: list[str]) -> tuple[int | None, int | None, CPUFound]:
    meminfo, cpuinfo = p.read("/proc/meminfo"), p.read("/proc/cpuinfo")
    total, available = parse_meminfo(meminfo) if meminfo else (None, None)
    if meminfo is None:
        notes.append("no /proc/meminfo: RAM unknown")
    cpu = parse_cpuinfo(cpuinfo) if cpuinfo else CPUFound(None, os.cpu_count(), ())
    return total, available, cpu


def _sysctl(p: Probes, name: str) -> str | None:
    out = p.run(["sysctl", "-n", name])
    return out.strip() if out else None


def _mac(p: Probes, notes: list[str]) -> tuple[int | None, GPUFound | None, CPUFound]:
    """A Mac: its chip is the GPU, with Metal's working set (or iogpu.wired_limit_mb) as usable."""
    memsize = _int(_sysctl(p, "hw.memsize") or "")
    brand = _sysctl(p, "machdep.cpu.brand_string")
    cores = _int(_sysctl(p, "hw.physicalcpu") or "")
    cpu = CPUFound(brand, cores, ("neon",) if brand and brand.startswith("Apple") else ())
    if not (memsize and brand and brand.startswith("Apple")):
        notes.append("not an Apple-silicon Mac, or sysctl failed: no GPU read")
        return memsize, None, cpu
    gib = round(memsize / GIB)
    wired = _int(_sysctl(p, "iogpu.wired_limit_mb") or "")
    usable = wired * MIB if wired else working_set(gib)[0]
    name = f"{brand} {gib}GB"
    return memsize, GPUFound(name, memsize, None, "sysctl", match(name, gib * GIB), usable), cpu


def detect(probes: Probes | None = None) -> Machine:
    """This machine, as far as the probes can tell (each part None or empty when they cannot)."""
    p, notes = probes or Probes(), []
    if p.platform == "darwin":
        ram, gpu, cpu = _mac(p, notes)
        return Machine((gpu,) if gpu else (), ram, None, cpu, tuple(notes))
    total, available, cpu = _linux(p, notes)
    return Machine(tuple(_gpus(p, notes)), total, available, cpu, tuple(notes))
