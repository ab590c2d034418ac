"""The bundled catalog: every entry parses, its names are unique, it counts, it equals
transformers on the meta device, and it reproduces every exact figure its authors print."""

from __future__ import annotations

import hashlib
import json
from importlib import resources

import pytest

import paramcount
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

ENTRIES = catalog.entries()
IDS = [e.id for e in ENTRIES]
PUBLISHED = [e for e in ENTRIES if e.published]

# The seed articles' figures, counted from the models (none is printed by the models' authors,
# so they live here rather than under "published"), looked up by the names people type.
SEEDS = {
    ("bert-base-uncased", "BertModel"): 109_482_240,
    ("bert-base-chinese", "BertModel"): 102_267_648,
    ("bloom-1b4-zh", "BloomForCausalLM"): 1_303_111_680,
    ("gpt2", "GPT2LMHeadModel"): 124_439_808,
    ("gpt-3", "GPT2LMHeadModel"): 174_604_259_328,
}

# transformers 5 always ties the T5/mT5 LM head when it builds a model from a config, while these
# checkpoints store lm_head.weight on its own and paramcount counts it (see arch/t5.py).
UNTIED_T5_HEADS = {
    "google/flan-t5-base",
    "google/flan-t5-large",
    "google/flan-t5-xl",
    "google/mt5-base",
    "google/umt5-xxl",
}


def entry(model_id: str) -> catalog.Entry:
    return next(e for e in ENTRIES if e.id == model_id)


def test_the_catalog_is_populated():
    assert len(ENTRIES) >= 60
    assert catalog.DEFAULT in IDS


def test_every_file_parses_and_is_named_after_its_id():
    folder = resources.files("paramcount") / "catalog"
    for f in folder.iterdir():
        if not f.name.endswith(".json"):
            continue
        data = json.loads(f.read_text(encoding="utf-8"))
        assert set(data) <= {"id", "aliases", "note", "scope", "published", "config"}, f.name
        assert f.name == data["id"].replace("/", "--") + ".json"


@pytest.mark.parametrize("model_id", IDS)
def test_entry_is_well_formed(model_id):
    e = entry(model_id)
    org, _, name = e.id.partition("/")
    assert org and name and "/" not in name
    assert all(isinstance(a, str) and a and a.strip() == a for a in e.aliases)
    assert isinstance(e.note, str)
    assert isinstance(e.config, dict) and (e.config.get("model_type") or e.config.get("architectures"))
    if e.published:
        assert set(e.published) == {"total", "class", "source"}
        assert isinstance(e.published["total"], int) and e.published["total"] > 0
        assert e.published["class"] and e.published["source"]


SCOPED = [e for e in ENTRIES if e.scope]


def test_the_text_towers_and_checkpoints_with_mtp_layers_say_what_they_leave_out():
    """A count that is not what the name suggests says so (issue 20): the text tower of an
    image+text model, a checkpoint's multi-token-prediction layers that transformers skips."""
    scoped = {e.id: e.scope for e in SCOPED}
    for text_only in ("meta-llama/Llama-4-Scout-17B-16E", "Qwen/Qwen3.5-27B", "Qwen/Qwen3.5-397B-A17B"):
        assert scoped[text_only].startswith("the text model only"), text_only
    for mtp in ("Qwen/Qwen3.5-35B-A3B", "Qwen/Qwen3-Next-80B-A3B-Instruct", "deepseek-ai/DeepSeek-V3", "zai-org/GLM-5"):
        assert "multi-token-prediction" in scoped[mtp], mtp
    assert "bert-base-uncased" not in {n for e in SCOPED for n in e.aliases}


@pytest.mark.parametrize("e", SCOPED, ids=lambda e: e.id)
def test_a_scope_is_one_short_sentence_the_count_carries(e):
    assert isinstance(e.scope, str) and 20 < len(e.scope) <= 200 and "\n" not in e.scope
    assert paramcount.load(e.id).scope == (e.scope,)
    assert paramcount.load(e.id, model_class="base").scope == (e.scope,)  # the backbone is no less a text tower


def test_an_entry_without_a_scope_counts_without_one():
    assert paramcount.load("bert-base-uncased").scope == ()


COMPOSITES = [e for e in ENTRIES if paramcount.load(e.id).towers()]


@pytest.mark.parametrize("e", COMPOSITES, ids=lambda e: e.id)
def test_the_towers_are_parts_of_the_class(e):
    """Every image+text (and audio, and two-tower) catalog model: its towers add up to the
    class's total, output head included, and so do their rows in the JSON."""
    m = paramcount.load(e.id)
    assert sum(m.towers().values()) == m.total
    from paramcount.render.json import to_dict

    data = to_dict(m, tensors=False)
    assert sum(data["towers"].values()) == data["total"]


def test_names_are_unique_in_any_case():
    seen: dict[str, str] = {}
    for e in ENTRIES:
        for name in (e.id, *e.aliases):
            key = name.lower()
            assert key not in seen, f"{name!r} names both {seen[key]} and {e.id}"
            seen[key] = e.id


@pytest.mark.parametrize("model_id", IDS)
def test_every_name_finds_its_entry(model_id):
    e = entry(model_id)
    for name in (e.id, e.id.upper(), *e.aliases, *(a.upper() for a in e.aliases)):
        found = catalog.find(name)
        assert found is not None and found.id == e.id, name


@pytest.mark.parametrize("model_id", IDS)
def test_entry_counts(model_id):
    e = entry(model_id)
    model = from_config(e.config, e.id)
    assert model.total > 0 and model.backbone_total > 0


@pytest.mark.parametrize("model_id", IDS)
def test_entry_matches_transformers(model_id):
    from .oracle.oracle import expect_class, expect_same, truth

    e = entry(model_id)
    if e.id not in UNTIED_T5_HEADS:
        expect_same(e.config)
        return
    expect_class(e.config, "base")
    ours = from_config(e.config, e.id)
    built = truth(e.config, ours.class_name, ours.model_type)
    head = e.config["vocab_size"] * e.config["d_model"]
    assert ours.total == built.total + head


@pytest.mark.parametrize("model_id", [e.id for e in PUBLISHED])
def test_published_total(model_id):
    e = entry(model_id)
    model = from_config(e.config, e.id, model_class=e.published["class"])
    assert model.total == e.published["total"], e.published["source"]


# Issue 33 item 8: entries whose config was confirmed against a second, independent source, and
# that source's total as it prints it. Each figure was counted from the checkpoint (the Hub's
# safetensors metadata, or Keras's conversion of the weights), not from the config, and
# transformers on the meta device gives the same total (test_entry_matches_transformers).
GEMMA3_KERAS_VOCAB_GAP = 64  # Keras stops at the 262,144 text tokens; the checkpoint holds 262,208
SECOND_SOURCE_TOTALS = {
    # Hub API safetensors total, saved beside the Hub's config.json in
    # daniel-p-green/alain-ai-learning-platform out/research-deepseek-ai-*/sources/huggingface/model.json
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": 32_763_876_352,
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": 8_030_261_248,
    # keras-hub gemma3_presets.py, gemma3_instruct_12b, plus the 64 rows of 3840 Keras leaves out
    "google/gemma-3-12b-it": 12_187_079_280 + GEMMA3_KERAS_VOCAB_GAP * 3840,
}


def test_the_keras_vocabulary_gap_is_the_one_the_27b_entry_shows():
    """keras-hub prints 27,432,062,576 for gemma3_instruct_27b: the Hub-byte 27B config less the
    same 64 embedding rows, so the rule used for the 12B figure is not fitted to it."""
    assert paramcount.load("google/gemma-3-27b-it").total == 27_432_062_576 + GEMMA3_KERAS_VOCAB_GAP * 5376


@pytest.mark.parametrize("model_id", sorted(SECOND_SOURCE_TOTALS))
def test_second_source_total(model_id):
    e = entry(model_id)
    assert from_config(e.config, e.id).total == SECOND_SOURCE_TOTALS[model_id]
    assert "Source 1" in e.note and "Source 2" in e.note


# sha256 of the Hub's config.json as a public record holds it, and whether the file ends in a
# newline: an entry whose config, written as the Hub writes it (two-space JSON, its key order),
# hashes to that is the Hub's file byte for byte. Records: LuxiaSL/metabasis metabasis/roster.py
# (Qwen 2.5 Instruct, Llama 3.3, Qwen3-30B-A3B) and the download manifests beside the R1 distills'
# files in daniel-p-green/alain-ai-learning-platform (paths and commits in each entry's note).
HUB_CONFIG_SHA256 = {
    "Qwen/Qwen2.5-14B-Instruct": ("0f2085dbbe2ee251bd6a6a0797d84a6ce34436044d629aa3cba793b43d311a9e", True),
    "Qwen/Qwen2.5-32B-Instruct": ("9c6772f138ef9e5b3d1c18f2c87e451bbc01f5f1a4eabb36f9bf4f53829b903e", True),
    "meta-llama/Llama-3.3-70B-Instruct": ("95ef9768e4741543dbfaf0c274f101855883ff338b235c99eca2b6a4f4abee12", True),
    "Qwen/Qwen3-30B-A3B": ("2850ddb3bf7aecad20b611e2d44f3077fc8193f4827c93beddd4c02ad63c2297", False),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": (
        "2c003fe40b13d2d1f372254d77177ed753176150f3d424d1b5ad22ff1d78a987",
        True,
    ),
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": (
        "54acfad3cffe057640904ca8a1e83525e6551c70c7a04c641f5a9eda0bbf64bd",
        True,
    ),
}


@pytest.mark.parametrize("model_id", sorted(HUB_CONFIG_SHA256))
def test_config_is_the_hub_file_byte_for_byte(model_id):
    digest, newline = HUB_CONFIG_SHA256[model_id]
    # read from the file: other tests hand the loaded config to transformers, which may fill in
    # nested rope dicts in place
    path = resources.files("paramcount") / "catalog" / (model_id.replace("/", "--") + ".json")
    config = json.loads(path.read_text(encoding="utf-8"))["config"]
    text = json.dumps(config, indent=2) + ("\n" if newline else "")
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == digest


def test_the_llama_70b_distill_is_llama_3_3_70b_instruct():
    """DeepSeek-R1-Distill-Llama-70B ships Llama 3.3 70B Instruct's config.json byte for byte (the
    same sha256 recorded for both, sources in the entry's note), so it is an alias; its own
    model.safetensors.index.json says 141,107,412,992 bytes of bf16."""
    e = catalog.find("deepseek-ai/DeepSeek-R1-Distill-Llama-70B")
    assert e is not None and e.id == "meta-llama/Llama-3.3-70B-Instruct"
    assert from_config(e.config, e.id).total * 2 == 141_107_412_992


@pytest.mark.parametrize(("name", "cls"), SEEDS)
def test_seed_figures(name, cls):
    e = catalog.get(name)
    assert from_config(e.config, e.id, model_class=cls).total == SEEDS[name, cls]
