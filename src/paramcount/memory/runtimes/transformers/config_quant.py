"""The weights transformers 5.23 loads for a config (no weight files) whose ``quantization_config``
names a method, when no ``--dtype`` is given: what ``from_pretrained`` would hold on the GPU named.

- ``fp8`` (``quantizer_finegrained_fp8.py``, ``integrations/finegrained_fp8.py``): where kept
  (:func:`~.loading.loading`), ``replace_with_fp8_linear`` swaps every ``nn.Linear`` outside
  ``modules_to_not_convert`` (absent: ``get_keys_to_not_convert``, the tied and output layers and
  the last parameter's module) for ``FP8Linear``: an fp8 weight and a ``weight_scale_inv`` of
  ⌈out/b₀⌉×⌈in/b₁⌉ per ``weight_block_size`` (fp32, one byte under ``scale_fmt`` ue8m0; no block
  size: one fp32 scalar), and under ``activation_scheme`` static one fp32 ``activation_scale``;
  each fused ``.experts`` module becomes ``FP8Experts`` (``_alloc_expert_proj``: fp8
  [E, out, in] and scales [E, max(⌈out/b₀⌉, 2 for gate_up), ⌈in/b₁⌉], static: E fp32 per
  projection). Everything else stays bf16. Dequantised: every tensor bf16 (the shapes' plan).
- ``mxfp4`` (gpt-oss; ``integrations/mxfp4.py`` ``Mxfp4GptOssExperts``): kept, the experts'
  projections as the checkpoint's blocks (uint8, two values a byte) and E8M0 scales (uint8, one per
  32 values); the Triton kernels' swizzle may pad them, not modelled: an estimate.
- ``bitsandbytes``: the ``nf4``/``fp4``/``bnb-int8`` layouts with ``bnb_4bit_use_double_quant``;
  ``llm_int8_skip_modules`` replaces the default skips (``get_modules_to_not_convert``).
- ``gptq``/``awq`` (``quantizer_gptq.py`` via optimum, ``quantizer_awq.py``; both load through
  gptqmodel): the checkpoint layout (qweight, qzeros, scales, g_idx) at its ``bits`` and
  ``group_size``. gptqmodel picks a kernel by what the machine has (``hf_gptqmodel_post_init``),
  and some repack their tensors: an estimate.
- any other method: refused in one line (plan it with ``--dtype``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ....errors import ParamcountError, brief
from ....model import Model
from ...core.gpus import GPU
from ...weights.base import Row, Weights
from ...weights.layouts import Part, ceil_div, part
from .loading import Loading, loading

SRC_FP8 = "transformers 5.23 integrations/finegrained_fp8.py replace_with_fp8_linear, FP8Linear, FP8Experts"
SRC_MXFP4 = "transformers 5.23 integrations/mxfp4.py Mxfp4GptOssExperts"
PLANNED = ("fp8", "mxfp4", "bitsandbytes", "gptq", "awq")
_EXPERTS = re.compile(r"\.experts\.(gate_up_proj|up_proj|down_proj)$")
_RANGE = re.compile(r"\.(\d+)–(\d+)\.")  # a row's layer range, "model.layers.3–60.mlp"
_BOUNDARY = r"(?:(?<=\.)|(?=\.|$))"  # quantizers_utils.should_convert_module


def quant_config(model: Model) -> Mapping[str, Any] | None:
    """The config's quantization_config (None: there is none); anything but an object is refused."""
    q = (model.config or {}).get("quantization_config")
    if q is not None and not isinstance(q, Mapping):
        raise ParamcountError(f"quantization_config must be an object, not {brief(q)}", field="quantization_config")
    return q


def config_weights(model: Model, gpu: GPU | None, keep: Any, pure: bool) -> tuple[Weights, Loading | None]:
    """The weights transformers loads for ``model``'s quantization_config on ``gpu``, and how
    it treats the method (None for GPTQ/AWQ, always loaded as their kernels hold them)."""
    q = quant_config(model)
    assert q is not None
    name = q.get("quant_method")
    if name not in PLANNED:
        raise ParamcountError(
            f"quantization_config.quant_method {brief(name)} is not planned for transformers from a config "
            f"(planned: {', '.join(PLANNED)}); give --dtype to plan the weights at a scheme",
            field="quantization_config.quant_method",
        )
    if keep is not None:
        raise ParamcountError(
            "--keep applies to a scheme given with --dtype; the quantization_config says what stays 16-bit",
            field="--keep",
        )
    if name in ("gptq", "awq"):
        return _gptq_awq(model), None
    if name == "bitsandbytes":
        return _bnb(model, q), loading(model, gpu)
    found = loading(model, gpu)
    assert found is not None
    if q.get("dequantize") is True:  # validate_environment returns early; replace_with_fp8_linear converts nothing
        found = Loading(name, False, f"{name} dequantised to bf16: the quantization_config says dequantize true")
    from ...weights.schemes import weights

    plain = weights(model, "bf16", pure=pure)
    if found.kept is False:  # dequantised: every tensor bf16, as the shapes plan it
        return replace(plain, options="dequantised from the quantization_config", note=""), found
    w = _fp8(model, q, plain) if name == "fp8" else _mxfp4(plain)
    if found.kept is None:
        w = replace(w, bound=True, note=f"{w.note}; an estimate: {found.why}")
    return w, found


def config_method(model: Model, found: Loading | None) -> str:
    """The plan's ``quantization_config`` setting: the method and what transformers does with it."""
    q = quant_config(model) or {}
    done = {True: "kept", False: "dequantised to bf16", None: "assumed kept"}[found.kept] if found else "kept"
    return f"{q.get('quant_method')} ({done})"


def _gptq_awq(model: Model) -> Weights:
    from ...weights.quant_config import config_group, config_scheme
    from ...weights.schemes import weights

    s = config_scheme(model, "transformers")
    assert s is not None
    group = config_group(model)
    w = weights(model, s, group_size=group)
    listed = _awq_skips(model, w) if s.startswith("awq") else []
    if listed:  # quantizer_awq.py: modules_to_not_convert beside the default skips, as should_convert_module reads them
        w = weights(model, s, group_size=group, keep=",".join([*w.keep, *listed]))
    tensors = "qweight, qzeros, scales, g_idx" if s.startswith("gptq") else "qweight, qzeros, scales"
    why = (
        f"{w.note or _said(w)}; the checkpoint's {s.split('-')[0].upper()} tensors as stored ({tensors}); "
        "an estimate: gptqmodel picks the kernel by the machine "
        "(transformers 5.23 quantizer_gptq.py / quantizer_awq.py, gptqmodel hf_gptqmodel_post_init) and some "
        "(Marlin) repack the tensors"
    )
    return replace(w, bound=True, note=why)


def _names(q: Mapping[str, Any], key: str) -> list[str] | None:
    """``quantization_config[key]``: a list of module names, or None where absent (else refused)."""
    names = q.get(key)
    if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise ParamcountError(
            f"quantization_config.{key} must be a list of module names, not {brief(names)}",
            field=f"quantization_config.{key}",
        )
    return names


def _awq_skips(model: Model, w: Weights) -> list[str]:
    """The quantised modules an AWQ config's modules_to_not_convert names."""
    names = _names(quant_config(model) or {}, "modules_to_not_convert")
    if names is None:
        return []
    skip = _patterns(names)
    modules = [r.name.rpartition(".")[0] for r in w.rows if r.role == "quantised"]
    return list(dict.fromkeys(m for m in modules if skip and _skipped(m, skip)))


def _bnb(model: Model, q: Mapping[str, Any]) -> Weights:
    """BitsAndBytesConfig: 4-bit (nf4/fp4, double quant) or LLM.int8; ``llm_int8_skip_modules``
    replaces get_keys_to_not_convert's skips (quantizer_bnb_4bit.py, quantizer_bnb_8bit.py)."""
    from ...weights.schemes import weights

    if q.get("load_in_4bit"):
        s = "fp4" if q.get("bnb_4bit_quant_type") == "fp4" else "nf4"
        dq = bool(q.get("bnb_4bit_use_double_quant"))
    elif q.get("load_in_8bit"):
        s, dq = "bnb-int8", None
    else:
        raise ParamcountError(
            "quantization_config: bitsandbytes needs load_in_4bit or load_in_8bit true",
            field="quantization_config.load_in_4bit",
        )
    skip = _names(q, "llm_int8_skip_modules")
    keep = "output" if skip is None else ",".join(skip[:1000]) or "none"
    return weights(model, s, keep=keep, double_quant=dq or None)


def _said(w: Weights) -> str:
    from ...weights.base import assumption

    return assumption(w)


def _skipped(module: str, patterns: list[str]) -> bool:
    """quantizers_utils.should_convert_module, negated, for a row of layers ``a–b``: each layer's
    module name tried (a pattern from the start, as a regex to a module boundary, or a suffix);
    a pattern that skips some of the row's layers only is refused (the row is planned as one)."""
    m = _RANGE.search(module)
    names = [module] if m is None else [_RANGE.sub(f".{i}.", module, 1) for i in range(int(m[1]), int(m[2]) + 1)]
    hits = [any(re.match(rf"(?:{p}){_BOUNDARY}", n) or n.endswith(p) for p in patterns) for n in names]
    if any(hits) and not all(hits):
        raise ParamcountError(
            f"quantization_config.modules_to_not_convert skips {module} in some of those layers only; the "
            "transformers plan follows names that hold in every layer or outside them",
            field="quantization_config.modules_to_not_convert",
        )
    return hits[0]


def _fp8(model: Model, q: Mapping[str, Any], plain: Weights) -> Weights:
    from ....slots import slots

    block = q.get("weight_block_size")
    if block is not None and not (
        isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block)
    ):
        raise ParamcountError(
            f"quantization_config.weight_block_size must be two positive integers or null, not {brief(block)}",
            field="quantization_config.weight_block_size",
        )
    patterns = _names(q, "modules_to_not_convert")
    skip = _patterns(patterns or [])
    linear = {s.name for s in slots(model.tree, model.model_type) if s.linear}
    output = _default_skips(model) if patterns is None else set()
    if q.get("modules_to_convert"):  # FP8Embedding for the listed embeddings: not planned
        raise ParamcountError(
            "quantization_config.modules_to_convert (FP8 embeddings) is not planned for transformers from a "
            "config; give --dtype to plan the weights at a scheme",
            field="quantization_config.modules_to_convert",
        )
    ue8m0 = q.get("scale_fmt") == "ue8m0"
    static = q.get("activation_scheme") == "static"
    # DeepseekV4Config moves a top-level expert_dtype into the quantization_config (configuration_deepseek_v4.py)
    fp4 = q.get("expert_dtype", (model.config or {}).get("expert_dtype")) == "fp4"
    rows = []
    for r in plain.rows:
        module = r.name.rpartition(".")[0]
        experts = _EXPERTS.search(r.name) and len(r.shape) == 3
        convert = (r.name in linear or experts) and r.role != "tied" and r.name not in output
        if convert and not (skip and _skipped(module, skip)):
            rows.append(
                _fp4_experts(r, ue8m0, static) if experts and fp4 else _fp8_row(r, block, ue8m0, static, bool(experts))
            )
        else:
            rows.append(replace(r, role="not quantised") if r.role == "quantised" else r)
    size = "per tensor" if block is None else f"block {block[0]}×{block[1]}"
    note = (
        f"FP8 ({size}{', ue8m0 scales' if ue8m0 else ''}{', static activation scales' if static else ''}"
        f"{', fp4 experts' if fp4 else ''}) "
        f"as the quantization_config says: linear layers and fused experts fp8 with their weight_scale_inv, "
        f"the rest bf16 ({SRC_FP8})"
    )
    return replace(plain, scheme="fp8", rows=tuple(rows), keep=(), options=size, note=note)


def _patterns(names: list[str]) -> list[str]:
    """The skip names, each a regex as should_convert_module reads it (refused if not one)."""
    for p in names[:1000]:
        try:
            re.compile(p)
        except re.error:
            raise ParamcountError(
                f"quantization_config.modules_to_not_convert: {brief(p)} is not a pattern transformers can match",
                field="quantization_config.modules_to_not_convert",
            ) from None
    return names[:1000]


def _default_skips(model: Model) -> set[str]:
    """get_keys_to_not_convert's modules (tied, output embeddings, the last parameter's module):
    the weights module's ``output`` keep item finds them alike."""
    from ...weights.schemes import weights

    return {r.name for r in weights(model, "fp8", keep="output").rows if r.role == "kept"}


def _fp8_row(r: Row, block: list[int] | None, ue8m0: bool, static: bool, experts: bool) -> Row:
    """FP8Linear / FP8Experts' parameters for one tensor of ``r`` (weights as [out, in])."""
    *lead, out, inp = (int(d) for d in r.shape)
    e = lead[0] if lead else 1
    n = e * out * inp
    if block is None:
        scales = e
    else:
        floor = 2 if experts and r.name.endswith("gate_up_proj") else 1  # _alloc_expert_proj min_sf_out
        scales = e * max(ceil_div(out, block[0]), floor) * ceil_div(inp, block[1])
    scale = part("weight_scale_inv (ue8m0)", "uint8", scales) if ue8m0 else part("weight_scale_inv", "fp32", scales)
    parts: tuple[Part, ...] = (part("weight", "fp8_e4m3", n), scale)
    if static:
        parts += (part("activation_scale", "fp32", e),)
    return Row(r.name, r.count, r.shape, "fp8 (quantization_config)", "quantised", parts, r.kind)


def _fp4_experts(r: Row, ue8m0: bool, static: bool) -> Row:
    """FP8Experts with expert_dtype fp4 (_alloc_expert_proj): int8 weights of two e2m1 values a
    byte [E, out, in/2] and a scale per row and 32 inputs [E, max(out, 2 for gate_up), ⌈in/32⌉]."""
    e, out, inp = (int(d) for d in r.shape)
    floor = 2 if r.name.endswith("gate_up_proj") else 1
    scales = e * max(out, floor) * ceil_div(inp, 32)
    scale = part("scale_inv (ue8m0)", "uint8", scales) if ue8m0 else part("scale_inv", "fp32", scales)
    parts: tuple[Part, ...] = (part("weight (two fp4 values a byte)", "int8", e * out * (inp // 2)), scale)
    if static:
        parts += (part("activation_scale", "fp32", e),)
    return Row(r.name, r.count, r.shape, "fp4 experts (quantization_config)", "quantised", parts, r.kind)


def _mxfp4(plain: Weights) -> Weights:
    """gpt-oss's experts as Mxfp4GptOssExperts loads the checkpoint's blocks and scales."""
    rows = []
    for r in plain.rows:
        if _EXPERTS.search(r.name) and len(r.shape) == 3:
            n = int(r.shape[0]) * int(r.shape[1]) * int(r.shape[2])
            parts = (
                Part("blocks (two fp4 values a byte)", "uint8", n, ceil_div(n, 2)),
                part("scales (E8M0, one per 32 values)", "uint8", ceil_div(n, 32)),
            )
            rows.append(Row(r.name, r.count, r.shape, "MXFP4 (quantization_config)", "quantised", parts, r.kind))
        else:
            rows.append(replace(r, role="not quantised") if r.role == "quantised" else r)
    note = (
        "MXFP4 experts as the quantization_config says: blocks and E8M0 scales, the rest bf16; an estimate: "
        "the Triton kernels' swizzle (swizzle_mxfp4) may pad the experts and the module declares their biases "
        f"fp32, neither modelled ({SRC_MXFP4})"
    )
    return replace(plain, rows=tuple(rows), keep=(), options="MXFP4 experts", bound=True, note=note)
