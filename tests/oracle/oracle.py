"""The test oracle: transformers on the meta device (no memory, no weights).

``expect_same(raw)`` counts a config with paramcount and with transformers, for the
config's own class and for the backbone, and compares totals, every (name, shape), and
every tie. Imported by the oracle tests only; paramcount itself never imports this.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from paramcount.frontends.config import from_config  # noqa: E402
from paramcount.model import Model  # noqa: E402


@dataclass
class Truth:
    total: int
    shapes: dict[str, tuple[int, ...]]  # unique parameters, as named_parameters() names them
    ties: dict[str, str]  # a duplicate name -> the name it shares storage with


def instantiate(raw: dict[str, Any], class_name: str, model_type: str) -> Any:
    # a deep copy: transformers writes into nested dicts it is given (rope_theta into rope_scaling),
    # which would change the catalog's own entry for every later test in the process
    kwargs = {k: copy.deepcopy(v) for k, v in raw.items() if k != "model_type"}
    config = transformers.AutoConfig.for_model(model_type, **kwargs)
    with torch.device("meta"):
        return getattr(transformers, class_name)(config)


def truth(raw: dict[str, Any], class_name: str, model_type: str) -> Truth:
    module = instantiate(raw, class_name, model_type)
    seen: dict[int, str] = {}
    shapes, ties = {}, {}
    for name, p in module.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            ties[name] = seen[id(p)]
        else:
            seen[id(p)] = name
            shapes[name] = tuple(p.shape)
    return Truth(sum(p.numel() for p in module.parameters()), shapes, ties)


def ours(model: Model) -> Truth:
    shapes, ties = {}, {}
    for leaf in model.tensors():
        if leaf.tied_to:
            ties[leaf.name] = leaf.tied_to
        else:
            shapes[leaf.name] = tuple(int(d) for d in leaf.shape)
    return Truth(model.total, shapes, ties)


def differences(mine: Truth, real: Truth) -> list[str]:
    out = []
    for name in sorted(real.shapes.keys() - mine.shapes.keys()):
        out.append(f"missing {name} {real.shapes[name]}")
    for name in sorted(mine.shapes.keys() - real.shapes.keys()):
        out.append(f"extra {name} {mine.shapes[name]}")
    for name in sorted(mine.shapes.keys() & real.shapes.keys()):
        if mine.shapes[name] != real.shapes[name]:
            out.append(f"shape {name}: ours {mine.shapes[name]} transformers {real.shapes[name]}")
    if mine.ties != real.ties:
        out.append(f"ties: ours {mine.ties} transformers {real.ties}")
    if mine.total != real.total:
        out.append(f"total: ours {mine.total:,} transformers {real.total:,}")
    return out


def expect_class(raw: dict[str, Any], class_name: str | None = None, **kwargs: Any) -> Model:
    """Assert paramcount equals transformers for one class (default: the config's own)."""
    model = from_config(raw, "test", model_class=class_name, **kwargs)
    fixed = {**raw, **({"num_labels": kwargs["num_labels"]} if kwargs.get("num_labels") else {})}
    diffs = differences(ours(model), truth(fixed, model.class_name, model.model_type))
    assert not diffs, f"{model.class_name}:\n  " + "\n  ".join(diffs[:40])
    return model


def expect_same(raw: dict[str, Any], class_name: str | None = None) -> Model:
    """The config's class and its backbone both equal transformers, tensor by tensor."""
    model = expect_class(raw, class_name)
    if model.class_name != model.backbone_class:
        expect_class(raw, "base")
    return model


def expect_all_classes(raw: dict[str, Any]) -> None:
    """Every class paramcount offers for the family equals transformers for this config."""
    from paramcount.arch import family
    from paramcount.frontends.config import model_type

    for cls in family(model_type(raw, "test")).classes:
        expect_class(raw, cls)
