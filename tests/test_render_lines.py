"""What the terminal says about runs of layers and header-only counts."""

from __future__ import annotations

from paramcount.flat import tree
from paramcount.model import Model
from paramcount.render.text import layer_lines, summary


def gguf_like() -> Model:
    """Four identical layers whose tensors are stored in two quant types (runs split by dtype)."""
    tensors = [(f"blk.{i}.attn_q.weight", (64, 64), "Q8_0" if i < 2 else "Q4_K") for i in range(4)]
    t = tree([*tensors, ("output.weight", (10, 64), "F16")])
    return Model("x.gguf", "x.gguf", "llama", "GGUF", t, "GGUF without output.weight", t)


def test_runs_of_equal_layers_are_one_line():
    model = gguf_like()
    assert len(model.layers()) == 2  # the tree keeps the dtypes apart
    assert [str(line) for line in layer_lines(model)] == ["blk.0–3: 4 × 4,096 = 16,384"]


def test_header_only_counts_say_what_they_are():
    from rich.console import Console

    console = Console(width=120, record=True)
    console.print(summary(gguf_like()))
    text = console.export_text()
    assert "every tensor in the GGUF header" in text and "class" not in text
