"""What the transformers fallback refuses before it imports anything: a config that would make
transformers build for minutes or exhaust memory, or reach the network.

transformers builds every layer and every expert as its own module, so the work grows with the
layer counts (``num_hidden_layers``, ``depths``, ``block_sizes``, ``attn_layers`` ...) times the
expert counts of each config, sub-configs (``text_config``, ``backbone_config`` ...) included.
Every number and list of the config is read here: a count must be a whole number in range and
not negative, per-stage lists add up, and layers × experts stay within a budget. The bounds are
far above any real model (the largest real figures are in the comments) and are stated in the
error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ParamcountError

MAX_INT = 1 << 26  # the same bound as every native dimension (arch.config.MAX_DIM)
MAX_LAYERS = 1024  # one layer count (real models: a few hundred at most)
MAX_ALL_LAYERS = 4096  # every layer count of a config and its sub-configs together
MAX_EXPERTS = 1 << 15  # one expert count (Switch-C: 2,048; Doge's default: 16,384 rows)
MAX_WORK = 1 << 20  # layers × experts, summed over the configs (Doge's default: 524,288)
MAX_LIST = 4096  # elements of one list (Whisper's suppress_tokens: 88)
MAX_VALUES = 1 << 18  # numbers, strings and lists in the whole config (ImageNet-21k's id2label: ~44k)
MAX_DEPTH = 8  # nested sub-configs (text_config.vision_config…) deeper than any real config

# A field counting layers or blocks (an index such as vision_feature_layer is singular).
_LAYERS = re.compile(r"^n_layers?$|(layers|depths?|blocks|repeats|stages|per_block)$")
# A list whose elements are layer counts per stage (ConvNeXt's depths, Funnel's block_sizes).
_STAGES = re.compile(r"(depths?|block_sizes|block_repeats|blocks_per_stage|num_blocks|numb_of_layers)$")
_EXPERTS = re.compile(r"(experts|expert_num)$")
# A count or a size, which cannot be negative (ids, indices and windows may be: -1, -100).
_COUNT = re.compile(r"^(num|n)_|_(size|dim|heads|channels)$|^(hidden|intermediate)_size")
_NOT_SIZE = re.compile(r"theta|_value$|_base$|_ids?$|seed")  # numbers that size nothing
_PER_LAYER = re.compile(r"layer|block")  # a list with one entry per layer (layer_types, attn_layers)


@dataclass
class _Tally:
    """What one config (one mapping) asks transformers to build."""

    layers: int = 0
    experts: int = 0


@dataclass
class _Walk:
    source: str
    values: int = 0
    layers: int = 0
    work: int = 0

    def fail(self, field: str, message: str) -> ParamcountError:
        return ParamcountError(message, source=self.source, field=field or None)


def check(raw: Mapping[str, Any], source: str) -> None:
    """Refuse, in one line naming the field and the bound, what transformers should not build."""
    walk = _Walk(source)
    _mapping(walk, raw, "", 0)
    if walk.layers > MAX_ALL_LAYERS:
        raise walk.fail("", f"{walk.layers:,} layers in all is over {MAX_ALL_LAYERS:,} ({_WHY})")
    if walk.work > MAX_WORK:
        raise walk.fail("", f"layers × experts of {walk.work:,} is over {MAX_WORK:,} ({_WHY})")


_WHY = "the transformers fallback builds every layer and expert"


def _mapping(walk: _Walk, node: Mapping[str, Any], path: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise walk.fail(path, f"nested more than {MAX_DEPTH} deep")
    tally = _Tally()
    for key, value in node.items():
        here = f"{path}.{key}" if path else str(key)
        if isinstance(value, Mapping):
            _mapping(walk, value, here, depth + 1)
        else:
            _value(walk, tally, str(key), value, here, depth)
    walk.layers += tally.layers
    walk.work += max(tally.layers, 1) * max(tally.experts, 1) if tally.experts else 0


def _value(walk: _Walk, tally: _Tally, name: str, value: Any, here: str, depth: int) -> None:
    walk.values += 1
    if walk.values > MAX_VALUES:
        raise walk.fail(here, f"more than {MAX_VALUES:,} values in the config")
    if isinstance(value, list):
        _list(walk, tally, name, value, here, depth)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        n = _number(walk, name, value, here)
        if _LAYERS.search(name) or _STAGES.search(name):
            tally.layers += n
        elif _EXPERTS.search(name):
            tally.experts = max(tally.experts, n)


def _list(walk: _Walk, tally: _Tally, name: str, value: list, here: str, depth: int) -> None:
    if len(value) > MAX_LIST:
        raise walk.fail(here, f"a list of {len(value):,} elements is over {MAX_LIST:,}")
    per_layer = _PER_LAYER.search(name) and not _STAGES.search(name)
    if per_layer and len(value) > MAX_LAYERS:
        raise walk.fail(here, f"{len(value):,} entries is over {MAX_LAYERS:,} ({_WHY})")
    sub = _Tally()
    for i, item in enumerate(value):
        if isinstance(item, Mapping):
            _mapping(walk, item, f"{here}[{i}]", depth + 1)
        else:
            _value(walk, sub, name, item, f"{here}[{i}]", depth)
    if _STAGES.search(name):
        if sub.layers > MAX_LAYERS:
            raise walk.fail(here, f"{sub.layers:,} layers in all stages is over {MAX_LAYERS:,} ({_WHY})")
        tally.layers += sub.layers
    elif per_layer and not all(isinstance(x, (int, float)) for x in value):
        tally.layers += len(value)  # layer types, one per layer: Reformer builds len(attn_layers)
    tally.experts = max(tally.experts, sub.experts)


def _number(walk: _Walk, name: str, value: int | float, here: str) -> int:
    """The value as a whole number where the field counts something (0 where it need not)."""
    layers = bool(_LAYERS.search(name) or _STAGES.search(name))
    counts = layers or bool(_EXPERTS.search(name) or _COUNT.search(name))
    # An infinite bound that sizes nothing is real: Mamba-2's time_step_limit is (0.0, inf) by
    # default (transformers' Mamba2Config, NemotronHConfig) and saved as Infinity in config.json.
    if isinstance(value, float) and (math.isnan(value) or (counts and math.isinf(value))):
        raise walk.fail(here, f"{value} is not a finite number")
    if counts and value < 0:
        raise walk.fail(here, f"{value:,} is negative; a count or size is at least 0")
    high = MAX_LAYERS if layers else MAX_EXPERTS if _EXPERTS.search(name) else MAX_INT
    if high == MAX_INT and (isinstance(value, float) or _NOT_SIZE.search(name)) and not counts:
        return 0  # rope_theta of 1e9, a logits fill value of -1e9: no size, nothing built from it
    if abs(value) > high:
        raise walk.fail(here, f"{value:,} is over {high:,} ({_WHY if high != MAX_INT else 'out of range'})")
    return int(value) if counts else 0


TIMM = ("timm_backbone", "timm_wrapper")


def offline(raw: Mapping[str, Any], source: str | None, path: str = "", depth: int = 0) -> None:
    """Refuse what would make transformers fetch a backbone: a backbone named without its
    ``backbone_config`` (transformers looks it up on the Hub), or a timm backbone."""
    where = lambda key: f"{path}.{key}" if path else key  # noqa: E731
    if raw.get("model_type") in TIMM or raw.get("use_timm_backbone"):
        raise ParamcountError(
            "a timm backbone, which paramcount does not build (timm may fetch it from the Hub); "
            "give a transformers backbone_config instead",
            source=source,
            field=where("use_timm_backbone" if raw.get("use_timm_backbone") else "model_type"),
        )
    name = raw.get("backbone")
    if isinstance(name, str) and raw.get("backbone_config") is None:
        raise ParamcountError(
            f"names the backbone {name[:100]!r}, which transformers would look up on the Hub; paramcount "
            "never downloads: give its backbone_config instead",
            source=source,
            field=where("backbone"),
        )
    for key, value in raw.items():
        if isinstance(value, Mapping) and depth < 8:
            offline(value, source, where(str(key)), depth + 1)
