"""Qwen3-VL (Qwen team 2025): a ViT over 3-D patches (a biased Conv3d over
``temporal_patch_size`` frames of ``patch_size``² pixels, a learned position table of
``num_position_embeddings`` resampled to each image's grid) with biased LayerNorm blocks (a
fused ``qkv``, a GELU MLP of ``intermediate_size``); a patch merger (a LayerNorm, then an MLP
over each m×m block of patches into ``out_hidden_size``: the projector) and, for each of the
``deepstack_visual_indexes``, one more merger whose LayerNorm comes after the m×m shuffle, which
feeds that block's features into the language model's first layers. The language model is
Qwen3's decoder (``Qwen3VLTextModel``).

Qwen3.5 and Qwen3.5-MoE use the same vision model without deep-stack mergers; Qwen3-VL-MoE and
Qwen3.5-MoE's language models route experts. transformers builds each part from its own class,
whatever a nested ``model_type`` says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..ir import Block, Node, Tensor
from . import Family
from .blocks import base, block, embedding, linear, mlp, norm, num_labels
from .config import Cfg, per_cfg
from .towers import QWEN_VL_RENAMES, lm_head

VISION = {
    "depth": 27,
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 3584,
    "num_position_embeddings": 2304,
    "deepstack_visual_indexes": (8, 16, 24),
}
VISION_ALIASES = {"num_heads": ("num_attention_heads",), "depth": ("num_hidden_layers",)}
DEFAULTS = {"text_config": None, "vision_config": None, "tie_word_embeddings": False}


def vision_cfg(c: Cfg, defaults: Mapping[str, Any] = VISION) -> Cfg:
    v = c.sub("vision_config", defaults, VISION_ALIASES)
    v.divides("hidden_size", "num_heads")
    return v


def merger(v: Cfg, name: str, postshuffle: bool) -> Block:
    """LayerNorm (of the vision width, or after the m×m shuffle), Linear(m²·w, m²·w), GELU,
    Linear(m²·w, out)."""
    h, m = v.int("hidden_size"), v.int("spatial_merge_size", high=1 << 8)
    wide = h * m * m
    return block(
        name,
        norm("norm", wide if postshuffle else h),
        linear("linear_fc1", wide, wide),
        linear("linear_fc2", wide, v.int("out_hidden_size")),
        kind="feed_forward",
        tower="projector",
    )


def deepstack(v: Cfg) -> int:
    value = v.get("deepstack_visual_indexes", ())
    if not isinstance(value, list | tuple) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise v.error("deepstack_visual_indexes", f"expected a list of block indices, got {value!r:.60}")
    return len(value)


def visual(v: Cfg, stacked: bool = True) -> Block:
    """The vision model: patch embedding, position table and blocks are the vision encoder; the
    merger and the deep-stack mergers (Qwen3-VL's only: ``stacked``) the projector."""
    h, t, p = v.int("hidden_size"), v.int("temporal_patch_size", high=1 << 10), v.int("patch_size", high=1 << 12)
    proj = Block("proj", (Tensor("weight", (h, v.int("in_channels", high=1 << 12), t, p, p)), Tensor("bias", (h,))))
    attn = block("attn", linear("qkv", h, 3 * h), linear("proj", h, h), kind="attention")
    layer = (
        norm("norm1", h),
        norm("norm2", h),
        attn,
        mlp("mlp", h, v.int("intermediate_size"), names=("linear_fc1", "linear_fc2")),
    )
    n = deepstack(v) if stacked else 0
    shuffled = merger(v, "", postshuffle=True).children
    extra = (
        Block("deepstack_merger_list", shuffled, repeat=n, label="merger", kind="feed_forward", tower="projector"),
    )
    return Block(
        "visual",
        (
            Block("patch_embed", (proj,), kind="embeddings", tower="vision_encoder"),
            Block(
                "pos_embed",
                embedding("", v.int("num_position_embeddings"), h).children,
                kind="embeddings",
                tower="vision_encoder",
            ),
            Block("blocks", layer, repeat=v.int("depth"), label="layer", tower="vision_encoder"),
            merger(v, "merger", postshuffle=False),
            *(extra if n else ()),
        ),
    )


def composite(
    text_family: str, vision_defaults: Mapping[str, Any] = VISION, stacked: bool = True
) -> Callable[[Cfg], tuple[Node, ...]]:
    """A composite's parts: the vision model and the language model of ``text_family``, from
    ``vision_config`` and ``text_config`` read through their own classes' defaults."""

    @per_cfg
    def parts(c: Cfg) -> tuple[Node, ...]:
        text = text_cfg(c, text_family)
        tree = _text_backbone(text_family)(text)
        vision = visual(vision_cfg(c, vision_defaults), stacked)
        return (vision, Block("language_model", tree.children, tower="language_model"))

    return parts


def _family(name: str) -> Family:
    from . import family

    return family(name)


def _text_backbone(name: str) -> Callable[[Cfg], Block]:
    fam = _family(name)
    return fam.classes[fam.backbone]


@per_cfg  # the parts, the head and the cache layout all read it: checked once
def text_cfg(c: Cfg, text_family: str) -> Cfg:
    fam = _family(text_family)
    t = c.sub("text_config", fam.defaults, fam.aliases)
    if fam.check:
        fam.check(t)
    return t


def classes(prefix: str, text_family: str, vision_defaults: Mapping[str, Any] = VISION, heads: bool = False) -> dict:
    """``<prefix>Model`` and ``<prefix>ForConditionalGeneration`` (an LM head over the text
    vocabulary, tied where the composite says); with ``heads`` the sequence and token
    classifiers transformers builds on the whole model (Qwen3.5)."""
    stacked = "deepstack_visual_indexes" in vision_defaults  # Qwen3.5's vision model has none, whatever its file says
    parts = composite(text_family, vision_defaults, stacked)

    def generation(c: Cfg) -> Block:
        t = text_cfg(c, text_family)
        return Block("", (Block("model", parts(c), label="backbone"), lm_head(t, c.bool("tie_word_embeddings"))))

    def head(name: str, bias: bool) -> Callable[[Cfg], Block]:
        def build(c: Cfg) -> Block:
            score = linear(name, text_cfg(c, text_family).int("hidden_size"), num_labels(c), bias, kind="output_head")
            return Block("", (Block("model", parts(c), label="backbone"), score))

        return build

    out = {f"{prefix}Model": base(parts), f"{prefix}ForConditionalGeneration": generation}
    if heads:
        out[f"{prefix}ForSequenceClassification"] = head("score", bias=False)
        out[f"{prefix}ForTokenClassification"] = head("score", bias=True)
    return out


def image_rule(vision_defaults: Mapping[str, Any] = VISION) -> Callable[[Cfg, int, int], Any]:
    """Qwen2VLImageProcessor (which Qwen3-VL and Qwen3.5 use) at its pixel bounds, with the
    vision config's patch and merge sizes (a checkpoint's preprocessor_config.json sets them, and
    may set other bounds)."""

    def rule(c: Cfg, width: int, height: int) -> Any:
        from .media import ImageTokens, smart_resize
        from .qwen2_vl import MAX_PIXELS, MIN_PIXELS

        v = vision_cfg(c, vision_defaults)
        p, m = int(v.int("patch_size")), int(v.int("spatial_merge_size"))
        h_bar, w_bar = smart_resize(height, width, p * m, MIN_PIXELS, MAX_PIXELS)
        patches = (h_bar // p) * (w_bar // p)
        said = (
            f"Qwen2VLImageProcessor with the model's {p}-px patches merged {m}x{m}: resized to {w_bar}x{h_bar} "
            f"({MIN_PIXELS:,} to {MAX_PIXELS:,} pixels, the processor's defaults; a checkpoint's "
            f"preprocessor_config.json may set others), {patches // (m * m):,} image tokens"
        )
        return ImageTokens(
            patches // (m * m), patches, int(v.int("hidden_size")), int(v.int("intermediate_size")), said
        )

    return rule


def cache(text_family: str):
    """The language model's cache, from the text config."""

    def layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
        from .cache import BUILDERS

        fam = _family(text_family)
        builder = BUILDERS.get(fam.model_type) or fam.cache_layout
        kinds, notes = builder(text_cfg(c, text_family), fam.model_type, fam.backbone, mla)  # type: ignore[misc]
        return kinds, [f"the language model ({text_family}) keeps the cache", *notes]

    return layout


FAMILY = Family(
    model_type="qwen3_vl",
    defaults=DEFAULTS,
    backbone="Qwen3VLModel",
    cache_layout=cache("qwen3_vl_text"),
    classes=classes("Qwen3VL", "qwen3_vl_text"),
    renames=QWEN_VL_RENAMES,
    image_tokens=image_rule(),
)

__all__ = ["FAMILY", "VISION", "cache", "classes", "image_rule"]
