"""MLX's weights: the schemes, a model folder's ``quantization`` block, and each tensor's bytes.

mlx-lm quantises as ``mlx_lm.convert -q`` does (mlx_lm/utils.py ``quantize_model``, through
mlx/nn/layers/quantized.py ``quantize``): every module with a ``to_quantized`` method (``nn.Linear``,
``nn.Embedding``, the experts' ``SwitchLinear``) whose input width (the weight's last dimension)
is a multiple of the group, unless the model's ``quant_predicate`` says otherwise (Qwen3-MoE keeps
its router ``mlp.gate`` at 8 bits, group 64: mlx_lm/models/qwen3_moe.py ``Model.quant_predicate``)
or the config's ``quantization`` block names the module with its own settings. A quantised
weight of ``out × in`` holds ``out·in·bits/32`` uint32 words and ``out·in/group`` scales and as
many biases in the unquantised dtype (mlx/ops.cpp ``quantize``, the affine mode); its bias, norms
and anything else stay in that dtype. A tied output head is the embedding's ``as_linear``: once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ....errors import ParamcountError
from ....slots import Slot

FLOATS = {"fp32": 4, "fp16": 2, "bf16": 2}
TORCH_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
BITS = (2, 3, 4, 5, 6, 8)  # mlx/ops.cpp quantize: the affine mode's widths
GROUPS = (32, 64, 128)
DEFAULT_GROUP = 64  # mlx_lm/utils.py quantize_model's defaults_for_mode("affine")
_SCHEME = re.compile(r"^mlx-(\d+)bit$")
SRC_QUANT = (
    "mlx_lm/utils.py quantize_model (wrapped_predicate: to_quantized, weight.shape[-1] % group_size, "
    "quant_predicate, the config's per-module entries); mlx/nn/layers/quantized.py quantize; mlx/ops.cpp quantize"
)
# A model's own quant_predicate: (module path suffix, its settings).
PREDICATES = {"qwen3_moe": (("mlp.gate", (8, 64)),)}


@dataclass(frozen=True)
class Quant:
    """How a model's quantisable modules are stored: ``bits`` and ``group`` (None: unquantised),
    ``base`` the dtype of everything else, ``modules`` per-module settings by MLX path (a pair
    of bits and group, or None for a module left whole)."""

    base: str
    bits: int | None = None
    group: int = DEFAULT_GROUP
    modules: Mapping[str, tuple[int, int] | None] = field(default_factory=dict)
    stored: bool = False  # read from the folder's config.json

    @property
    def name(self) -> str:
        return self.base if self.bits is None else f"mlx-{self.bits}bit"


def scheme(name: str | None, config: Mapping[str, Any], group: int | None) -> Quant:
    """The weights ``--dtype`` names (None or ``stored``: the config's ``quantization`` block, or
    its dtype), with ``--group-size``."""
    base = TORCH_DTYPES.get(str(config.get("torch_dtype") or config.get("dtype")), "bf16")
    block = config.get("quantization") or config.get("quantization_config")
    key = (name or "stored").strip().lower()
    if key == "stored":
        if isinstance(block, Mapping) and "bits" in block:
            if group is not None:
                raise ParamcountError("the model folder states its group size; drop --group-size", field="--group-size")
            return from_block(block, base)
        return Quant(base)
    if key in FLOATS:
        if group is not None:
            raise ParamcountError("--group-size is for mlx-Nbit schemes", field="--group-size")
        return Quant(key)
    m = _SCHEME.match(key)
    if not m or int(m.group(1)) not in BITS:
        raise ParamcountError(
            f"MLX's weights are bf16, fp16, fp32, stored or mlx-Nbit with N in {', '.join(map(str, BITS))}, "
            f"not {name!r}",
            field="--dtype",
        )
    return Quant(base, int(m.group(1)), _group(group if group is not None else DEFAULT_GROUP, "--group-size"))


def _group(value: Any, field: str) -> int:
    if isinstance(value, bool) or value not in GROUPS:
        raise ParamcountError(f"MLX's group size is one of {', '.join(map(str, GROUPS))}, not {value!r}", field=field)
    return value


def from_block(block: Mapping[str, Any], base: str) -> Quant:
    """A config.json's ``quantization`` block as mlx_lm.convert writes it: ``bits``, ``group_size``,
    ``mode`` (affine only here), and per-module entries (a dict of settings, or false)."""
    mode = block.get("mode", "affine")
    if mode != "affine":
        raise ParamcountError(f"MLX's {mode!r} quantisation is not planned here (affine only)", field="quantization")
    bits = block.get("bits")
    if bits not in BITS:
        raise ParamcountError(f"quantization.bits is one of {', '.join(map(str, BITS))}, not {bits!r}", field="bits")
    group = _group(block.get("group_size", DEFAULT_GROUP), "quantization.group_size")
    modules: dict[str, tuple[int, int] | None] = {}
    for path, value in block.items():
        if isinstance(value, Mapping):
            modules[path] = (_bits(value.get("bits", bits), path), _group(value.get("group_size", group), path))
        elif value is False:
            modules[path] = None
    return Quant(base, bits, group, modules, stored=True)


def _bits(value: Any, path: str) -> int:
    if value not in BITS:
        raise ParamcountError(f"quantization[{path!r}].bits is one of {BITS}, not {value!r}", field="quantization")
    return value


def mlx_paths(slot: Slot, layer: int | None) -> tuple[str, ...]:
    """The MLX module path(s) a tensor slot stands for at ``layer``: the module's own path, or for
    transformers' fused experts the ``switch_mlp`` projections mlx-lm keeps (gate and up apart)."""
    name = slot.name_at(range(layer, layer + 1)) if layer is not None else slot.name
    head, _, last = name.rpartition(".")
    if last in ("weight", "bias"):
        return (head,)
    if last == "gate_up_proj":
        where = head.replace(".experts", ".switch_mlp")
        return (f"{where}.gate_proj", f"{where}.up_proj")
    return (f"{head.replace('.experts', '.switch_mlp')}.{last}",)


def quantisable(slot: Slot) -> bool:
    """A weight MLX stores in a module with ``to_quantized``: a linear layer's (routers are
    ``nn.Linear`` in mlx-lm), an embedding table, the experts' stacked projections."""
    if slot.tie is not None or slot.is_bias or len(slot.shape) < 2:
        return False
    return slot.linear or slot.kind in ("embeddings", "router") or (slot.kind == "experts" and len(slot.shape) == 3)


def setting(q: Quant, slot: Slot, path: str, model_type: str) -> tuple[int, int] | None:
    """(bits, group) for the module at ``path``, or None where it stays whole."""
    if q.bits is None or not quantisable(slot):
        return None
    if path in q.modules:
        chosen = q.modules[path]
    else:
        chosen = next((s for end, s in PREDICATES.get(model_type, ()) if path.endswith(end)), (q.bits, q.group))
    if chosen is None or slot.shape[-1] % chosen[1]:
        return None
    return chosen


def tensor_bytes(slot: Slot, chosen: tuple[int, int] | None, base: int) -> int:
    """One copy's bytes: packed words + scales + biases, or whole in the base dtype."""
    if slot.tie is not None:
        return 0
    if chosen is None:
        return slot.elements * base
    bits, group = chosen
    rows, width = slot.elements // slot.shape[-1], slot.shape[-1]
    return rows * width * bits // 8 + 2 * rows * (width // group) * base
