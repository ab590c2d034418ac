"""paramcount.memory.runtimes.transformers.attention.EAGER_DEFAULT against transformers: the model types whose class
does not support sdpa (``_supports_sdpa = False``), so transformers runs them eager."""

import pytest

from paramcount.memory.runtimes.transformers.attention import EAGER_DEFAULT

transformers = pytest.importorskip("transformers")


def _model_class(model_type: str):
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    name = MODEL_MAPPING_NAMES.get(model_type)
    return getattr(transformers, name) if name else None


@pytest.mark.parametrize("model_type", sorted(EAGER_DEFAULT))
def test_eager_by_default_in_transformers(model_type):
    cls = _model_class(model_type)
    assert cls is not None, model_type
    assert cls._supports_sdpa is False, model_type


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "qwen3", "gemma3_text", "phi3", "mistral", "olmoe", "gpt2"])
def test_sdpa_by_default_in_transformers(model_type):
    assert model_type not in EAGER_DEFAULT
    assert _model_class(model_type)._supports_sdpa is not False
