"""The JSON says whether a total is exact: ``"exact": false`` with the reason whenever it is a
lower bound (a print(model) text that hides parameters), never only in a note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paramcount.cli import main
from paramcount.frontends.printout import from_text

FIXTURES = Path(__file__).parent / "fixtures"


def count_json(capsys, source: str, *flags: str) -> dict:
    assert main([source, *flags, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_full_printout_is_exact_once_its_tie_is_settled(capsys):
    data = count_json(capsys, str(FIXTURES / "bloom-1b4-zh.txt"), "--set", "tie_word_embeddings=true")
    assert data["exact"] is True and data["inexact_reason"] is None and data["total"] == 1_303_111_680
    data = count_json(capsys, str(FIXTURES / "bloom-1b4-zh.txt"), "--set", "tie_word_embeddings=false")
    assert data["exact"] is True and data["total"] == 1_397_616_640


def test_a_printout_with_an_open_tie_is_not_exact(capsys):
    data = count_json(capsys, str(FIXTURES / "bloom-1b4-zh.txt"))  # Bloom ties by default: counted tied
    assert data["exact"] is False and data["total"] == 1_303_111_680
    assert "1,303,111,680 counts it tied; untied, 1,397,616,640" in data["inexact_reason"]


def test_a_printout_takes_only_the_tie_from_set(capsys):
    assert main(["count", str(FIXTURES / "bloom-1b4-zh.txt"), "--set", "n_layer=3"]) == 2
    assert "a print(model) text takes only --set tie_word_embeddings" in capsys.readouterr().err


def test_a_config_count_is_exact(capsys):
    data = count_json(capsys, "gpt2")
    assert data["exact"] is True and data["inexact_reason"] is None


def test_a_module_without_shown_parameters_makes_a_lower_bound(tmp_path, capsys):
    text = "T5ForConditionalGeneration(\n  (shared): Embedding(100, 8)\n  (final_layer_norm): T5LayerNorm()\n)\n"
    path = tmp_path / "t5.txt"
    path.write_text(text)
    data = count_json(capsys, str(path))
    assert data["exact"] is False and data["total"] == 800
    assert "lower bound" in data["inexact_reason"] and "T5LayerNorm" in data["inexact_reason"]


def test_fused_experts_in_a_real_printout_are_flagged():
    """transformers 5 prints fused experts as a module with no shapes (Qwen3MoeExperts())."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(
        "qwen3_moe", hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, vocab_size=100,
    )  # fmt: skip
    with torch.device("meta"):
        model = transformers.Qwen3MoeForCausalLM(config)
    counted = from_text(str(model), "printout", tied=getattr(config, "tie_word_embeddings", None)).model
    real = sum(p.numel() for p in model.parameters())
    assert not counted.exact and counted.total < real
    assert "expert" in counted.inexact


@pytest.mark.parametrize(
    ("model_type", "cls", "fields", "named"),
    [
        ("vit", "ViTModel", {"num_hidden_layers": 2}, "embeddings: position_embeddings"),  # cls_token filled
        ("clip", "CLIPModel", {}, None),  # logit_scale and class_embedding filled from the family: exact
        ("llama", "LlamaForCausalLM", {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 96,
                                       "num_attention_heads": 4, "vocab_size": 100}, None),
    ],
)  # fmt: skip
def test_parameters_held_beside_submodules_are_never_missed_silently(model_type, cls, fields, named):
    """ViT's class token and position table, CLIP's class embedding and temperature: a module that
    holds raw parameters beside its children prints only the children. The family fills those
    whose shape the printed widths give (ViT's cls_token, CLIP's both); the rest are named."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        model = getattr(transformers, cls)(config)
    counted = from_text(str(model), "printout", tied=getattr(config, "tie_word_embeddings", None)).model
    real = sum(p.numel() for p in model.parameters())
    if named is None:
        assert counted.exact and counted.total == real
    else:
        assert not counted.exact and counted.total < real and named in counted.inexact
