"""``paramcount hardware``: the catalog as a table, and this machine as a few lines."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from ..hardware import Hardware
from ..hardware.detect import Machine

GIB = 2**30


def _peak(row: Hardware) -> str:
    """The dense 16-bit peak (bf16, else fp16), else fp32, in TFLOP/s, naming the dtype."""
    for dtype in ("bf16", "fp16", "fp32"):
        if dtype in row.flops:
            return f"{row.flops[dtype] / 1e12:,.1f} {dtype}"
    return ""


def _memory(row: Hardware) -> str:
    if row.kind == "cpu":
        return row.stated
    return f"{row.memory_bytes / GIB:g} GiB ({row.usable_bytes / GIB:.1f} usable)"


def catalog_table(rows: Sequence[Hardware]) -> Table:
    t = Table(box=None, header_style="bold", pad_edge=False)
    for name, justify in (
        ("key", "left"),
        ("name", "left"),
        ("memory", "right"),
        ("GB/s", "right"),
        ("TFLOP/s", "right"),
    ):
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        t.add_row(r.key, r.name, _memory(r), f"{r.bandwidth_bytes_per_s / 1e9:,.1f}", _peak(r))
    return t


def machine_lines(m: Machine) -> list[str]:
    """One line per GPU, then RAM and the CPU; each unknown part says so."""
    lines = []
    for g in m.gpus:
        free = f", {g.free_bytes / GIB:.2f} GiB free" if g.free_bytes is not None else ""
        usable = f", {g.usable_bytes / GIB:.2f} GiB usable" if g.usable_bytes else ""
        key = f" = {g.row.key}" if g.row else " (not in the catalog)"
        lines.append(f"GPU  {g.name}{key}: {g.memory_bytes / GIB:.2f} GiB{usable}{free} ({g.source})")
    if not m.gpus:
        lines.append("GPU  none found")
    ram = f"{m.ram_bytes / GIB:.2f} GiB" if m.ram_bytes else "unknown"
    avail = f", {m.ram_available_bytes / GIB:.2f} GiB available" if m.ram_available_bytes else ""
    lines.append(f"RAM  {ram}{avail}")
    c = m.cpu
    key = f" = {c.row.key}" if c.row else ""
    lines.append(
        f"CPU  {c.name or 'unknown'}{key}: {c.cores or '?'} cores; {', '.join(c.features) or 'no features read'}"
    )
    lines.extend(f"note {n}" for n in m.notes)
    return lines
