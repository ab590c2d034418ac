"""Every command at the bounds on input: the deepest config accepted, and a model whose tensor list
is just past what is listed one by one. Each builds a tree and a plan of a few hundred objects,
never one per repeated layer, unless the output lists every tensor (and then at most a few times
MAX_LISTED leaves). The objects are counted, not timed (tests/budget.py); benchmarks/bench_bounds.py
times the same commands."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from paramcount.arch.config import MAX_LAYERS
from paramcount.cli import main
from paramcount.ir import MAX_LISTED, Block, Leaf, Run, Tensor, Tie, leaf_count, leaves, runs
from paramcount.memory.tree.modules import Module
from paramcount.slots import Slot

from .budget import built

DEEP = {
    "model_type": "llama",
    "num_hidden_layers": MAX_LAYERS,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 64,
}
# Experts × layers far past MAX_LISTED: every listing must refuse or collapse, never unroll.
WIDE = {
    "model_type": "qwen3_moe",
    "num_hidden_layers": MAX_LAYERS,
    "hidden_size": 32,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 32,
    "moe_intermediate_size": 32,
    "vocab_size": 32,
    "num_experts": 1 << 26,
    "num_experts_per_tok": 2,
}
# What a command may build: tree nodes, plan modules and slots well under one per layer of DEEP's
# 4,096 (the most measured is 215, compute's modules), and unrolled leaves only for a listing, at
# most three listings of MAX_LISTED (diff reads both sides and the checkpoint's own: 110,598).
NODES = MAX_LAYERS // 2
LISTED = 3 * MAX_LISTED


def bounded(monkeypatch):
    """Both budgets at once: the nodes and modules, and the unrolled leaves."""
    from contextlib import ExitStack

    stack = ExitStack()
    nodes = stack.enter_context(built(monkeypatch, NODES, Tensor, Block, Tie, Run, Module, Slot))
    listed = stack.enter_context(built(monkeypatch, LISTED, Leaf))
    return stack, nodes, listed


def _folder(path: Path, config: dict, weights: bool) -> str:
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    if weights:  # a 126-byte checkpoint beside a config of millions of tensors
        raw = json.dumps({"model.embed_tokens.weight": {"dtype": "BF16", "shape": [4, 2], "data_offsets": [0, 16]}})
        (path / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw.encode() + bytes(16))
    return str(path)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("bounds")
    return {
        f"{name}-{kind}": _folder(base / f"{name}-{kind}", config, kind == "ckpt")
        for name, config in (("deep", DEEP), ("wide", WIDE))
        for kind in ("config", "ckpt")
    }


COMMANDS = [
    ["{config}"],
    ["{config}", "--json"],
    ["{config}", "--json", "--collapsed"],
    ["{config}", "--tree", "99"],
    ["{ckpt}"],
    ["{ckpt}", "--json", "--collapsed"],
    ["{ckpt}", "--tree", "99"],
    ["explain", "{config}"],
    ["check", "{config}", "1B"],
    ["compare", "{config}", "{ckpt}"],
    ["diff", "{config}", "{ckpt}"],
    ["memory", "{config}"],
    ["memory", "{config}", "--dtype", "q4_k_m", "--runtime", "llama.cpp"],
    ["memory", "{ckpt}"],
    ["memory", "{config}", "--train", "--lora-rank", "8"],
    ["fit", "{config}"],
    ["fit", "{ckpt}", "--gpu", "h100"],
    ["compute", "{config}"],
    ["compute", "{ckpt}"],
]


@pytest.mark.parametrize("model", ["deep", "wide"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_every_command_at_the_bound(made, capsys, monkeypatch, model, command):
    argv = [a.format(config=made[f"{model}-config"], ckpt=made[f"{model}-ckpt"]) for a in command]
    stack, nodes, _listed = bounded(monkeypatch)
    with stack:
        code = main([*argv, "--width", "100"] if command[0] in ("memory", "fit", "compute") else argv)
    out, err = capsys.readouterr()
    assert nodes.n > 0 and code in (0, 1, 2) and "Traceback" not in err
    if code == 2:  # refused: one line that names the way to the collapsed form
        assert err.count("\n") == 1 and str(MAX_LISTED)[:3] in err.replace(",", ""), err
        assert "--collapsed" in err or "compare" in err or "checkpoint alone" in err, err
    else:
        assert out.strip()


def test_depth_past_the_bound_is_refused(tmp_path, capsys):
    path = _folder(tmp_path / "deeper", {**DEEP, "num_hidden_layers": MAX_LAYERS + 1}, weights=False)
    assert main([path]) == 2
    err = capsys.readouterr().err
    assert "num_hidden_layers" in err and f"{MAX_LAYERS:,}" in err and err.count("\n") == 1


def test_checkpoint_beside_a_huge_config_says_it_was_not_compared(made, capsys, monkeypatch):
    from paramcount.frontends import checkpoint

    monkeypatch.setattr(checkpoint, "MAX_LISTED", 1000)  # the deep llama's 36,867 tensors are past it
    assert main([made["deep-ckpt"]]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "compared name by name" in out and "checkpoint alone" in out


def test_collapsed_tensors_sum_to_the_total(made, capsys):
    assert main([made["wide-config"], "--json", "--collapsed"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["tensors_collapsed"]
    assert "tensors" not in doc and sum(r["count"] * r["copies"] for r in rows) == doc["total"]
    assert any(r["name"].startswith(f"layers.{{0..{MAX_LAYERS - 1}}}.") for r in rows)


def test_collapsed_form_lists_what_unrolling_lists():
    import paramcount

    model = paramcount.load("qwen3-30b-a3b")
    unrolled = list(leaves(model.tree))
    collapsed = list(runs(model.tree))
    assert sum(r.copies for r in collapsed) == len(unrolled) == leaf_count(model.tree)
    assert sum(r.copies * r.leaf.count for r in collapsed if not r.leaf.tied_to) == model.total


def test_a_checkpoint_of_max_tensors_counts_each_once(tmp_path, capsys, monkeypatch):
    from paramcount.frontends.safetensors import MAX_TENSORS

    n = MAX_TENSORS
    entry = '"model.layers.{}.mlp.w{}.weight":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}}'
    raw = ("{" + ",".join(entry.format(i // 8, i % 8, 4 * i, 4 * i + 4) for i in range(n)) + "}").encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(4 * n))
    stack, _nodes, listed = bounded(monkeypatch)
    with stack:
        assert main([str(tmp_path)]) == 0
    assert f"{n:,} │" in capsys.readouterr().out  # the dtype table counts every tensor
    assert listed.n <= n + 1, listed.by_class  # each tensor becomes one leaf: read once, never per lookup
