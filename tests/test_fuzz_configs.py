"""Mutated real configs: every outcome is a count or a ParamcountError, never another exception."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paramcount
from paramcount.frontends import catalog

ENTRIES = catalog.entries()
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def mutated(draw):
    config = json.loads(json.dumps(draw(st.sampled_from(ENTRIES)).config))
    keys = sorted(config)
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(keys) | st.text(max_size=8))
        if draw(st.booleans()) and key in config:
            del config[key]
        else:
            config[key] = draw(JSON)
    return config


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.sampled_from([None, "base"]))
def test_mutated_config_counts_or_fails_cleanly(config, model_class):
    try:
        model = paramcount.load(config, model_class)
    except paramcount.ParamcountError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert model.total >= 0 and sum(model.components().values()) == model.total


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.sampled_from(["bf16", "int4", "nf4", "q4_k_m"]), st.integers(1, 2**17))
def test_mutated_config_plans_or_fails_cleanly(config, scheme, context):
    from paramcount.memory import inference

    try:
        plan = inference(paramcount.load(config), scheme, context=context)
    except paramcount.ParamcountError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert plan.total == sum(t.bytes for t in plan.terms) and all(t.bytes >= 0 for t in plan.terms)
