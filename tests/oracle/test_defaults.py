"""Every family's DEFAULTS equal the field defaults of transformers' config class."""

import dataclasses

import pytest

from paramcount.arch import family, supported

transformers = pytest.importorskip("transformers")


def class_defaults(model_type: str) -> tuple[dict, dict]:
    cls = transformers.CONFIG_MAPPING[model_type]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for name, f in fields.items():
        if f.default is not dataclasses.MISSING:
            values[name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            values[name] = f.default_factory()
    return values, getattr(cls, "attribute_map", {})


@pytest.mark.parametrize("model_type", supported())
def test_defaults_match_config_class(model_type):
    fam = family(model_type)
    values, attribute_map = class_defaults(fam.model_type)
    instance = transformers.CONFIG_MAPPING[fam.model_type]()
    for key, ours in fam.defaults.items():
        real_key = key if key in values else attribute_map.get(key, key)
        # a field default, else what the class sets at construction (BART: num_labels = 3);
        # a field the class lacks but the model reads if a file sets it (Phi-3 head_dim) is None
        real = values[real_key] if real_key in values else getattr(instance, real_key, None)
        assert real == ours, f"{model_type}: {key} defaults to {real!r}, ours {ours!r}"
