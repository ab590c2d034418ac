import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config

from .oracle import expect_all_classes, expect_same

CONFIGS = {
    "defaults": {"model_type": "electra"},
    # google/electra-small-discriminator: 128-wide embeddings projected to 256
    "electra-small-discriminator": {
        "model_type": "electra",
        "architectures": ["ElectraForPreTraining"],
        "vocab_size": 30522,
        "embedding_size": 128,
        "hidden_size": 256,
        "num_hidden_layers": 12,
        "num_attention_heads": 4,
        "intermediate_size": 1024,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
    },
    # google/electra-base-generator: embeddings (768) wider than the hidden size (256)
    "electra-base-generator": {
        "model_type": "electra",
        "architectures": ["ElectraForMaskedLM"],
        "vocab_size": 30522,
        "embedding_size": 768,
        "hidden_size": 256,
        "num_hidden_layers": 12,
        "num_attention_heads": 4,
        "intermediate_size": 1024,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
    },
    # google/electra-large-discriminator: embedding_size == hidden_size, so no embeddings_project
    "electra-large-discriminator": {
        "model_type": "electra",
        "architectures": ["ElectraForPreTraining"],
        "vocab_size": 30522,
        "embedding_size": 1024,
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
    },
    "untied-generator": {
        "model_type": "electra",
        "architectures": ["ElectraForMaskedLM"],
        "tie_word_embeddings": False,
        "num_hidden_layers": 2,
    },
    "choice-summary-to-labels": {
        "model_type": "electra",
        "architectures": ["ElectraForMultipleChoice"],
        "summary_proj_to_labels": True,
        "num_labels": 3,
        "num_hidden_layers": 1,
    },
    "choice-no-summary-proj": {
        "model_type": "electra",
        "architectures": ["ElectraForMultipleChoice"],
        "summary_use_proj": False,
        "num_hidden_layers": 1,
    },
    "decoder-cross": {
        "model_type": "electra",
        "architectures": ["ElectraForCausalLM"],
        "is_decoder": True,
        "add_cross_attention": True,
        "num_hidden_layers": 2,
    },
}


@pytest.mark.parametrize("name", CONFIGS)
def test_electra_matches_transformers(name):
    expect_same(CONFIGS[name])


@pytest.mark.parametrize("embedding_size", [64, 128])
def test_every_electra_class(embedding_size):
    expect_all_classes(
        {
            "model_type": "electra",
            "num_hidden_layers": 2,
            "hidden_size": 128,
            "embedding_size": embedding_size,
            "num_attention_heads": 4,
            "intermediate_size": 256,
            "vocab_size": 1000,
            "num_labels": 4,
        }
    )


def test_electra_small_discriminator_total():
    # ElectraForPreTraining for electra-small-discriminator: 13.5M (ElectraModel alone 13,483,008).
    model = expect_same(CONFIGS["electra-small-discriminator"])
    assert model.total == 13_549_057
    assert model.backbone_total == 13_483_008
    assert any(leaf.name == "electra.embeddings_project.weight" for leaf in model.tensors())


def test_electra_attn_summary_is_refused():
    # transformers raises NotImplementedError for summary_type "attn" in ElectraSequenceSummary.
    raw = {**CONFIGS["choice-no-summary-proj"], "summary_use_proj": True, "summary_type": "attn"}
    with pytest.raises(ParamcountError, match="attn"):
        from_config(raw, "test")


# The bundled catalog's real config.json files of this family.
CATALOG = [e for e in catalog.entries() if e.config.get("model_type") == "electra"]


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_electra_catalog_entries_match_transformers(entry):
    expect_same(entry.config)
