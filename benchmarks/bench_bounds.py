"""The timings the test suite no longer asserts (issue 23 item 7), as ratios measured in one run.

Run: python benchmarks/bench_bounds.py   (the gguf and numpy test extras for the GGUF row)

The tests bound the same work by counting it (calls, lines of Python, objects built: see
tests/budget.py), which holds on any machine under any load. What a count cannot see, work
inside one C call (a regular expression backtracking, int() of a long string), and how long the
bounded work takes, is timed here. Each figure is the best of several runs, set against a
baseline timed in the same run, so that a slower machine moves both alike: the ratio is the
point. The old tests' limits are the goals (a hostile printout at most 4x a normal one of its
size, a command at the bounds in seconds).
"""

from __future__ import annotations

import contextlib
import io
import json
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tests' builders: one definition of each hostile input

from paramcount.cli import main  # noqa: E402
from paramcount.frontends import printout  # noqa: E402


def best(fn: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def quiet(argv: list[str]) -> Callable[[], int]:
    def run() -> int:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return main(argv)

    return run


def printouts() -> list[tuple[str, float, float]]:
    """Hostile printouts against a normal one of the same size (the old test: at most 4x + 0.5 s)."""
    from tests.test_printout import normal_printout, numbers, siblings

    size = 14 * 50_000
    texts = {make.__name__: make(size) for make in (normal_printout, siblings, numbers)}
    normal = best(lambda: printout.from_text(texts["normal_printout"]), 2)
    return [
        (f"print(model): {name}, {size:,} chars (vs a normal one)", best(lambda t=t: printout.from_text(t), 2), normal)
        for name, t in texts.items()
        if name != "normal_printout"
    ]


def bounds(folder: Path) -> list[tuple[str, float, float]]:
    """Every command of tests/test_bounds.py at the bounds, against a plain count of Llama-3.1-8B."""
    from tests.test_bounds import COMMANDS, DEEP, WIDE, _folder

    base = best(quiet(["meta-llama/Llama-3.1-8B"]))
    rows = []
    for name, config in (("deep", DEEP), ("wide", WIDE)):
        made = {kind: _folder(folder / f"{name}-{kind}", config, kind == "ckpt") for kind in ("config", "ckpt")}
        for command in COMMANDS:
            argv = [a.format(**made) for a in command]
            rows.append((f"{name}: {' '.join(command)}", best(quiet(argv), 1), base))
    return rows


def max_tensors(folder: Path) -> list[tuple[str, float, float]]:
    """A checkpoint of MAX_TENSORS tensors, against json.loads of its header alone."""
    from paramcount.frontends.safetensors import MAX_TENSORS

    entry = '"model.layers.{}.mlp.w{}.weight":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}}'
    raw = ("{" + ",".join(entry.format(i // 8, i % 8, 4 * i, 4 * i + 4) for i in range(MAX_TENSORS)) + "}").encode()
    (folder / "max").mkdir()
    (folder / "max" / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(4 * MAX_TENSORS))
    return [(f"{MAX_TENSORS:,} tensors counted", best(quiet([str(folder / "max")])), best(lambda: json.loads(raw)))]


def gguf_8b(folder: Path) -> list[tuple[str, float, float]]:
    """Llama-3-8B's GGUF header counted, against gguf-py's GGUFReader opening the same file."""
    import importlib.util

    if importlib.util.find_spec("gguf") is None or importlib.util.find_spec("numpy") is None:
        return []
    import gguf
    from tests.test_gguf import write_sparse_llama_3_8b

    from paramcount.gguf import reader as pg

    path = folder / "llama-3-8b.Q4_K_M.gguf"
    write_sparse_llama_3_8b(path)
    return [("Llama-3-8B GGUF counted", best(lambda: pg.from_file(path)), best(lambda: gguf.GGUFReader(str(path))))]


def unrolled() -> list[tuple[str, float, float]]:
    """Work that multiplies repeats, against the same work on a model of a few layers."""
    import paramcount
    from paramcount.memory.context.kv_layout import attention_layout
    from paramcount.memory.training.lora import lora

    lm = {"vocab_size": 64, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4}
    lm |= {"num_key_value_heads": 2, "head_dim": 16, "sliding_window": 16}
    layout = [
        best(lambda n=n: attention_layout({"model_type": "gemma3_text", **lm, "num_hidden_layers": n}), 5)
        for n in (4092, 6)
    ]
    big, small = paramcount.load("meta-llama/Llama-3.1-405B"), paramcount.load("meta-llama/Llama-3.2-1B")
    adapters = [best(lambda m=m: lora(m, 16, "all-linear"), 5) for m in (big, small)]
    return [("KV layout, 4,092 layers (vs 6)", *layout), ("LoRA all-linear, 405B (vs 1B)", *adapters)]


def main_() -> None:
    rows = [*printouts(), *unrolled()]
    with tempfile.TemporaryDirectory() as tmp:
        rows += max_tensors(Path(tmp)) + gguf_8b(Path(tmp)) + bounds(Path(tmp))
    print("| figure | seconds | baseline (s) | ratio |\n|---|---:|---:|---:|")
    for name, took, base in rows:
        print(f"| {name} | {took:.4g} | {base:.4g} | {took / base:.3g} |")


if __name__ == "__main__":
    main_()
