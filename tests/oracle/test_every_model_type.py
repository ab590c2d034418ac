"""Every model_type transformers 5.23 knows, from its own default config: counted natively or by
the transformers fallback, and equal to transformers tensor by tensor, or refused in one line
only where transformers itself cannot build a model from that config here (a missing optional
backend such as timm, a default config its own code rejects, a sub-config with no model class).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.frontends import fallback

from .oracle import differences, ours, transformers, truth

MODEL_TYPES = sorted(transformers.CONFIG_MAPPING.keys())

# The only reasons a default config may be refused: each is transformers' own limit.
TRANSFORMERS_CANNOT = (
    "transformers could not build",
    "transformers cannot build",
    "transformers rejects this config",
    "transformers has no model class",
    "transformers has no class",
    # paramcount's own: a timm backbone (DETR's default) may be fetched from the Hub by timm
    "a timm backbone, which paramcount does not build",
)
SEEN: dict[str, bool] = {}  # model_type -> counted (filled by the parametrized test)


def _built(cls: str | None, model_type: str):
    """transformers' build of ``cls`` from the default config, or None where it builds nothing
    (the load then says why, or names another class and the oracle is built for that one)."""
    if cls is None:
        return None
    try:
        return truth({"model_type": model_type}, cls, model_type)
    except Exception:
        return None


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_default_config_is_counted_exactly(model_type):
    """The oracle is built here while paramcount loads in a thread: a model_type without a native
    family is built by the fallback's worker, in its own process, so the two builds overlap. The
    oracle's class is guessed as the backbone (what a config without ``architectures`` counts),
    and built again for the class paramcount names when the guess was wrong."""
    guess = fallback.types()["types"].get(model_type, {}).get("base")
    with ThreadPoolExecutor(1) as pool:
        loading = pool.submit(paramcount.load, {"model_type": model_type})
        early = _built(guess, model_type)
        try:
            model = loading.result()
        except ParamcountError as e:
            assert any(why in str(e) for why in TRANSFORMERS_CANNOT), str(e)
            assert "\n" not in str(e)
            SEEN[model_type] = False
            return
    SEEN[model_type] = True
    real = early if early is not None and model.class_name == guess else None
    assert not differences(ours(model), real or truth({"model_type": model_type}, model.class_name, model_type))


def test_most_model_types_are_counted():
    """A floor (run after the sweep above), so that a regression that refuses many at once cannot
    pass as a list of one-line refusals."""
    if len(SEEN) < len(MODEL_TYPES):
        pytest.skip("needs the whole sweep above in the same run")
    assert sum(SEEN.values()) >= 650, sum(SEEN.values())
