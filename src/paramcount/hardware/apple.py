# ruff: noqa: E501  (data tables: one product a line)
"""Apple M1–M4 chips in every memory size sold: unified memory, bandwidth, and what the GPU may use.

Bandwidth and memory options are Apple's (newsroom announcements and tech specs pages); M3 Max and
M4 Max come in two bins whose bandwidth differs, and each memory size belongs to one bin. Apple
gave GPU FLOP/s only for M1 (2.6 TFLOPS, its newsroom post) and M1 Pro and M1 Max (5.2 and 10.4,
on the slides of its October 2021 event); there ``flops`` holds that FP32 figure for the chip's
largest GPU (binned variants have fewer cores: ``notes`` says so). Figures others derive from
core counts and clocks are left out, and so is FP16, which Apple never states.

``usable_bytes`` is Metal's ``recommendedMaxWorkingSetSize``, what llama.cpp, MLX and PyTorch's MPS
backend budget against by default (``sudo sysctl iogpu.wired_limit_mb=N`` overrides it). Seen in
logs: 2/3 of memory at 16 GB (10,922.67 MiB, abetlen/llama-cpp-python#687) and 32 GB (21,845.34
MiB, ollama/ollama#434); 3/4 at 64 GB (49,152 MiB, ggml-org/llama.cpp#1870) and 96 GB (73,728
MiB, ggml-org/llama.cpp#3213); 107.52 GiB (84%) at 128 GB on macOS 26, on two machines
(antirez/ds4#890, #893). Sizes between take the rule those suggest (2/3 up to 36 GB, 3/4 above),
an estimate each row's ``notes`` names.
"""

from __future__ import annotations

from fractions import Fraction

from .row import GB, GIB, Hardware, tflops

_NEWS = "https://www.apple.com/newsroom/"
WORKING_SET_MEASURED = {
    16: (Fraction(2, 3), "abetlen/llama-cpp-python#687: recommendedMaxWorkingSetSize = 10922.67 MB"),
    32: (Fraction(2, 3), "ollama/ollama#434: recommendedMaxWorkingSetSize = 21845.34 MB"),
    64: (Fraction(3, 4), "ggml-org/llama.cpp#1870: recommendedMaxWorkingSetSize = 49152.00 MiB"),
    96: (Fraction(3, 4), "ggml-org/llama.cpp#3213: recommendedMaxWorkingSetSize = 73728.00 MB"),
    128: (Fraction(84, 100), "antirez/ds4#890 and #893: recommendedMaxWorkingSetSize 107.52 GiB on macOS 26"),
}


def working_share(gib: int) -> Fraction:
    """The share of a ``gib`` GiB Mac's memory Metal recommends: as logged, else the rule."""
    if gib in WORKING_SET_MEASURED:
        return WORKING_SET_MEASURED[gib][0]
    return Fraction(2, 3) if gib <= 36 else Fraction(3, 4)


def working_set(gib: int) -> tuple[int, str]:
    """Metal's recommended working set on a Mac with ``gib`` GiB, and where the figure comes from."""
    share = working_share(gib)
    if gib in WORKING_SET_MEASURED:
        seen = WORKING_SET_MEASURED[gib][1]
        return int(gib * GIB * share), f"usable_bytes: Metal's recommendedMaxWorkingSetSize as logged ({seen})"
    return int(gib * GIB * share), f"usable_bytes: estimated, {share} of memory (the rule the logged sizes follow)"


# chip: (memory sizes by bandwidth in GB/s, FP32 TFLOPS Apple states or None, announcement)
_CHIPS: dict[str, tuple[dict[float, tuple[int, ...]], float | None, str]] = {
    "M1": ({68.25: (8, 16)}, 2.6, "2020/11/apple-unleashes-m1/"),
    "M1 Pro": ({200: (16, 32)}, 5.2, "2021/10/introducing-m1-pro-and-m1-max-the-most-powerful-chips-apple-has-ever-built/"),
    "M1 Max": ({400: (32, 64)}, 10.4, "2021/10/introducing-m1-pro-and-m1-max-the-most-powerful-chips-apple-has-ever-built/"),
    "M1 Ultra": ({800: (64, 128)}, None, "2022/03/apple-unveils-m1-ultra-the-worlds-most-powerful-chip-for-a-personal-computer/"),
    "M2": ({100: (8, 16, 24)}, None, "2022/06/apple-unveils-m2-with-breakthrough-performance-and-capabilities/"),
    "M2 Pro": ({200: (16, 32)}, None, "2023/01/apple-unveils-m2-pro-and-m2-max-next-generation-chips-for-next-level-workflows/"),
    "M2 Max": ({400: (32, 64, 96)}, None, "2023/01/apple-unveils-m2-pro-and-m2-max-next-generation-chips-for-next-level-workflows/"),
    "M2 Ultra": ({800: (64, 128, 192)}, None, "2023/06/apple-introduces-m2-ultra/"),
    "M3": ({100: (8, 16, 24)}, None, "2023/10/apple-unveils-m3-m3-pro-and-m3-max-the-most-advanced-chips-for-a-personal-computer/"),
    "M3 Pro": ({150: (18, 36)}, None, "2023/10/apple-unveils-m3-m3-pro-and-m3-max-the-most-advanced-chips-for-a-personal-computer/"),
    "M3 Max": ({300: (36, 96), 400: (48, 64, 128)}, None, "2023/10/apple-unveils-m3-m3-pro-and-m3-max-the-most-advanced-chips-for-a-personal-computer/"),
    "M3 Ultra": ({819: (96, 256, 512)}, None, "2025/03/apple-reveals-m3-ultra-taking-apple-silicon-to-a-new-extreme/"),
    "M4": ({120: (8, 16, 24, 32)}, None, "2024/05/apple-introduces-m4-chip/"),
    "M4 Pro": ({273: (24, 48, 64)}, None, "2024/10/apple-introduces-m4-pro-and-m4-max/"),
    "M4 Max": ({410: (36,), 546: (48, 64, 128)}, None, "2024/10/apple-introduces-m4-pro-and-m4-max/"),
}  # fmt: skip
_SPECS = "Apple tech specifications of the Macs with this chip (https://support.apple.com/specs)"
_EVENT = "Apple event 'Unleashed', October 18, 2021: GPU TFLOPS on its slides (https://www.apple.com/apple-events/)"


def _row(chip: str, gib: int, bandwidth: float, fp32: float | None, news: str) -> Hardware:
    use, note = working_set(gib)
    notes = [note]
    if fp32 is not None:
        notes.append("fp32: Apple's figure for the chip's largest GPU; binned variants have fewer GPU cores")
    if chip == "M1":
        notes.append("bandwidth: LPDDR4X-4266 on a 128-bit bus (Apple gives M2's 100 GB/s as 50% over M1)")
    if chip == "M4" and gib == 8:
        notes.append("8 GB: the iPad Pro's M4 (the Macs start at 16 GB)")
    return Hardware(
        key=f"{chip.lower().replace(' ', '-')}-{gib}gb",
        name=f"Apple {chip} {gib}GB",
        aliases=(f"{chip} {gib}GB", f"Mac {chip} {gib}GB"),
        kind="apple",
        vendor="apple",
        memory_bytes=gib * GIB,
        usable_bytes=use,
        bandwidth_bytes_per_s=int(bandwidth * GB),
        flops=tflops(fp32=fp32),
        sources=(_NEWS + news, _SPECS, *((_EVENT,) if fp32 and chip != "M1" else ())),
        features=("metal",),
        stated=f"{gib}GB unified memory",
        notes=tuple(notes),
        family=chip,
    )


ALL = tuple(
    _row(chip, gib, bandwidth, fp32, news)
    for chip, (sizes, fp32, news) in _CHIPS.items()
    for bandwidth, gibs in sizes.items()
    for gib in gibs
)
