"""Qwen2-VL's language model on its own (``Qwen2VLTextConfig``): ``Qwen2VLTextModel``, Qwen2's
tree (biased q/k/v, bias-free o, SwiGLU, RMSNorms) with the heads always ``h / a`` wide: the
attention reads no ``head_dim``, so a file's one is ignored here as transformers ignores it."""

from __future__ import annotations

from ..ir import Block
from . import Family, qwen2
from .config import Cfg

DEFAULTS = {
    "vocab_size": 152064,
    "hidden_size": 8192,
    "intermediate_size": 29568,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "max_window_layers": 80,
}


def without_head_dim(c: Cfg) -> Cfg:
    """The config as the attention reads it: no ``head_dim`` field."""
    if "head_dim" not in c.raw:
        return c
    raw = {k: v for k, v in c.raw.items() if k != "head_dim"}
    return Cfg(raw, c.defaults, c.source, c.aliases, prefix=c.prefix)


def backbone(c: Cfg) -> Block:
    return Block("", qwen2.backbone(without_head_dim(c)), label="backbone")


def check(c: Cfg) -> None:
    qwen2.FAMILY.check(without_head_dim(c))


def cache_layout(c: Cfg, model_type: str, cls: str, mla: str):
    """Qwen2's layout: the window only with ``use_sliding_window``, from ``max_window_layers`` on
    (this class's default 80, not Qwen2's 28)."""
    from .cache import BUILDERS

    return BUILDERS["qwen2"](without_head_dim(c), "qwen2", cls, mla)


FAMILY = Family(
    model_type="qwen2_vl_text",
    defaults=DEFAULTS,
    backbone="Qwen2VLTextModel",
    check=check,
    cache_layout=cache_layout,
    classes={"Qwen2VLTextModel": backbone},
)
