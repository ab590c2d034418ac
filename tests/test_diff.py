"""Cross-checks: config.json against the weights beside it, and ``paramcount diff A B``."""

import json

import pytest

import paramcount
from paramcount.cli import main
from paramcount.frontends.diff import Item, align, collapse, compare, diff_models

from .ckpt import TINY_LLAMA, build, save, state, torch, total, write_config


@pytest.fixture(scope="module")
def weights():
    return state(build(TINY_LLAMA, dtype=torch.float16))


@pytest.fixture
def disagreeing(tmp_path, weights):
    """A config that says 3 layers and a wider MLP, beside weights of 2 layers, one extra tensor,
    one norm in float32 and the output head missing."""
    tensors = dict(weights)
    tensors["model.norm.weight"] = tensors["model.norm.weight"].float()
    tensors["model.layers.0.self_attn.rotary.scale"] = torch.zeros(4)
    del tensors["lm_head.weight"]
    save(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, {**TINY_LLAMA, "num_hidden_layers": 3, "intermediate_size": 160})
    return tmp_path


def test_folder_lists_every_disagreement(disagreeing):
    ck = paramcount.load(disagreeing).checkpoint
    by_kind: dict[str, set[str]] = {}
    for d in ck.differences:
        by_kind.setdefault(d.kind, set()).add(d.name)
    layer2 = {n for n in by_kind["missing"] if n.startswith("model.layers.2.")}
    assert len(layer2) == 9 and "lm_head.weight" in by_kind["missing"]
    assert by_kind["extra"] == {"model.layers.0.self_attn.rotary.scale"}
    assert by_kind["shape"] == {
        f"model.layers.{i}.mlp.{p}.weight" for i in (0, 1) for p in ("gate_proj", "up_proj", "down_proj")
    }
    assert by_kind["dtype"] == {"model.norm.weight"}
    gate = next(d for d in ck.differences if d.name == "model.layers.0.mlp.gate_proj.weight")
    assert (gate.a, gate.b) == ("(160, 64)", "(128, 64)")


def test_folder_disagreement_counts_the_files(disagreeing, weights):
    m = paramcount.load(disagreeing)
    stored = sum(v.numel() for k, v in weights.items() if k != "lm_head.weight") + 4
    assert m.total == stored != paramcount.load({**TINY_LLAMA, "num_hidden_layers": 3, "intermediate_size": 160}).total
    assert "disagree" in " ".join(m.notes)


def test_cli_lists_disagreements(disagreeing, capsys):
    assert main([str(disagreeing), "--width", "140"]) == 0
    out = capsys.readouterr().out
    assert "only in A" in out and "model.layers.2.mlp.down_proj.weight" in out
    assert "different shape" in out and "A: (160, 64)  B: (128, 64)" in out


def test_diff_command_exit_codes(tmp_path, weights, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    save(a / "model.safetensors", weights)
    save(b / "model.safetensors", weights)
    assert main(["diff", str(a), str(b)]) == 0
    assert "no differences" in capsys.readouterr().out
    changed = {**weights, "model.norm.weight": torch.zeros(65, dtype=torch.float16)}
    save(b / "model.safetensors", changed)
    assert main(["diff", str(a), str(b), "--width", "140"]) == 1
    assert "model.norm.weight  A: (64)  B: (65)" in capsys.readouterr().out


def test_diff_config_against_checkpoint_json(tmp_path, weights, capsys):
    save(tmp_path / "w" / "model.safetensors", {k: v for k, v in weights.items() if "layers.1." not in k})
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY_LLAMA))
    assert main(["diff", str(config), str(tmp_path / "w" / "model.safetensors"), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "paramcount.diff/1"
    assert data["a"]["total"] == paramcount.load(TINY_LLAMA).total
    assert {d["kind"] for d in data["differences"]} == {"missing"}
    assert len(data["differences"]) == 9


def test_diff_two_catalog_models():
    result = diff_models(paramcount.load("meta-llama/Llama-3.1-8B"), paramcount.load("meta-llama/Meta-Llama-3-8B"))
    assert result.differences == () and result.matched == 291


def test_tie_stored_on_one_side(tmp_path, capsys):
    tied = build({**TINY_LLAMA, "tie_word_embeddings": True}, dtype=torch.float16)
    tensors = state(tied)
    tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"]
    save(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, {**TINY_LLAMA, "tie_word_embeddings": True})
    m = paramcount.load(tmp_path)
    assert m.total == total(tied)  # loading shares the two: counted once
    assert [d.kind for d in m.checkpoint.differences] == ["tie"]
    assert [e.tensor.name for e in m.checkpoint.tied_copies] == ["lm_head.weight"]
    assert any("counted once" in n for n in m.notes)


def test_align_strips_and_adds_prefixes():
    a = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    how, matched = align(a, ["embed_tokens.weight", "norm.weight"])
    assert how.add == "model." and matched == 2
    how, _ = align(["embed_tokens.weight"], ["model.embed_tokens.weight", "model.norm.weight"])
    assert how.strip == "model."


def test_packed_items_compare_by_count():
    a = [Item("w", (4, 8), 32)]
    assert compare(a, [Item("w", None, 32, "U8", packed=True)])[0] == []
    assert compare(a, [Item("w", (8, 4), 32, "I32", packed=True)])[0] == []
    assert [d.kind for d in compare(a, [Item("w", None, 30, "U8", packed=True)])[0]] == ["shape"]


def test_collapse_folds_layer_numbers():
    names = [f"model.layers.{i}.attn.bias" for i in range(24)] + ["model.norm.weight"]
    assert collapse(names) == [("model.layers.*.attn.bias", 24), ("model.norm.weight", 1)]
