"""paramcount.memory.runtimes.transformers.attention.EAGER_DEFAULT against transformers: the model types whose class
does not support sdpa (``_supports_sdpa = False``), so transformers runs them eager. Held both
ways for every native family, so that the table cannot drift from transformers again."""

import importlib

import pytest

from paramcount.arch import family, supported
from paramcount.memory.runtimes.transformers.attention import EAGER_DEFAULT

transformers = pytest.importorskip("transformers")

# Classes with no attention layer at all: their ``_supports_sdpa`` is PreTrainedModel's default
# False, which chooses nothing (planning them eager would add T×T scores they never compute).
NO_ATTENTION = frozenset({"mamba", "mamba2"})


def _model_class(model_type: str):
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    name = MODEL_MAPPING_NAMES.get(model_type)
    return getattr(transformers, name) if name else None


NATIVE = sorted(t for t in (family(m).model_type for m in supported()) if _model_class(t) is not None)


@pytest.mark.parametrize("model_type", sorted(EAGER_DEFAULT))
def test_eager_by_default_in_transformers(model_type):
    cls = _model_class(model_type)
    assert cls is not None, model_type
    assert cls._supports_sdpa is False, model_type


@pytest.mark.parametrize("model_type", NATIVE)
def test_every_native_family_as_transformers_chooses(model_type):
    """Eager in the table exactly where transformers' class does not support sdpa."""
    eager = _model_class(model_type)._supports_sdpa is False
    if model_type in NO_ATTENTION:
        assert model_type not in EAGER_DEFAULT
        return
    assert (model_type in EAGER_DEFAULT) == eager, (model_type, eager)


@pytest.mark.parametrize("model_type", sorted(NO_ATTENTION))
def test_the_attention_free_classes_have_no_attention(model_type):
    module = importlib.import_module(_model_class(model_type).__module__)
    assert not [n for n in dir(module) if n.endswith("Attention") or n == "eager_attention_forward"], model_type


def test_the_native_families_are_held():
    """The parametrized test sees the families, BLOOM, MPT, MPNet, DeBERTa-v2 among them."""
    assert len(NATIVE) >= 100 and {"bloom", "mpt", "mpnet", "deberta-v2", "gemma4_audio", "llama"} <= set(NATIVE)


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "qwen3", "gemma3_text", "phi3", "mistral", "olmoe", "gpt2"])
def test_sdpa_by_default_in_transformers(model_type):
    assert model_type not in EAGER_DEFAULT
    assert _model_class(model_type)._supports_sdpa is not False
