"""Composite models: a config made of parts (``text_config``, ``vision_config``) becomes one
tree with a child per tower, each built by that tower's own family (a LLaVA's language model
is the llama family's tree, not a copy), and marked with its tower for the breakdown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ParamcountError
from ..ir import Block, Node, Tensor, Tie
from .config import Cfg


class NoNativeTower(ParamcountError):
    """A composite whose tower has no native family: the whole model goes to the fallback."""


def sub_family(c: Cfg, field: str, default_type: str):
    """The family of a nested config, from its ``model_type`` (else the composite's default)."""
    from . import family, supported

    raw = c.raw.get(field) or {}
    mt = raw.get("model_type", default_type) if isinstance(raw, dict) else default_type
    if not isinstance(mt, str) or mt.replace("-", "_") not in supported():
        error = NoNativeTower(
            f"model_type {mt!r} has no native paramcount family for this tower",
            source=c.source,
            field=f"{c.prefix}{field}.model_type",
        )
        error.model_type = mt
        raise error
    return family(mt, c.source)


def tower_cfg(c: Cfg, field: str, default_type: str, absent: Mapping[str, Any] | None = None) -> Cfg:
    """The nested config seen through its own family's defaults (and the composite's ``absent``
    fields when the file has none), checked as that family checks."""
    key = ("tower_cfg", field, default_type, id(absent))
    if key not in c.memo:
        fam = sub_family(c, field, default_type)
        sub = c.sub(field, fam.defaults, fam.aliases, absent=absent)
        if fam.check:
            fam.check(sub)
        c.memo[key] = (sub, absent)  # the entry keeps ``absent`` alive: its id is in the key
    return c.memo[key][0]


def tower(
    c: Cfg, field: str, default_type: str, name: str, kind: str, absent: Mapping[str, Any] | None = None
) -> Block:
    """The backbone of the nested config's family, as module ``name`` of tower ``kind``."""
    key = ("tower", field, default_type, name, kind, id(absent))
    if key not in c.memo:
        fam = sub_family(c, field, default_type)
        tree = fam.classes[fam.backbone](tower_cfg(c, field, default_type, absent))
        c.memo[key] = Block(name, tree.children, tower=kind)
    return c.memo[key]


def text_cache(field: str, default_type: str, absent: Mapping[str, Any] | None = None):
    """A composite's cache layout: its language model's, from the nested config (``absent``:
    the composite's text config when the file has none)."""

    def layout(c: Cfg, model_type: str, cls: str, mla: str) -> tuple[list[Any], list[str]]:
        from .cache import BUILDERS, NoLayout

        fam = sub_family(c, field, default_type)
        builder = BUILDERS.get(fam.model_type) or fam.cache_layout
        if builder is None:
            raise NoLayout(f"no KV-cache layout for the language model's model_type {fam.model_type!r}")
        kinds, notes = builder(tower_cfg(c, field, default_type, absent), fam.model_type, fam.backbone, mla)
        return kinds, [f"the language model ({fam.model_type}) keeps the cache", *notes]

    return layout


def tied(
    c: Cfg, field: str, default_type: str, forwarded: bool = False, absent: Mapping[str, Any] | None = None
) -> bool:
    """The composite's ``tie_word_embeddings``; ``forwarded`` where its config class takes the
    text config's when that is true (pre-v5 saves kept it there: LLaVA, Qwen2-VL)."""
    own = c.bool("tie_word_embeddings")
    return own or (forwarded and tower_cfg(c, field, default_type, absent).bool("tie_word_embeddings"))


def untied_text_notes(
    default_type: str, field: str = "text_config", absent: Mapping[str, Any] | None = None
) -> Callable[[Cfg, str], list[str]]:
    """A note where a file leaves the composite's tie out but its text config unties the head.

    transformers 5 reads the composite's own ``tie_word_embeddings`` (true by default for these
    classes) and ties the head; transformers 4 tied by the text config's, so a checkpoint it
    saved from such a file (InternVL3's and Mistral 3's ``-hf`` releases) stores its own
    ``lm_head.weight``. The count is transformers 5's; the note says what the checkpoint adds."""

    def notes(c: Cfg, cls: str) -> list[str]:
        text = c.raw.get(field)
        if not cls.endswith("ForConditionalGeneration") or c.raw.get("tie_word_embeddings") is not None:
            return []
        if not (isinstance(text, Mapping) and text.get("tie_word_embeddings") is False):
            return []
        t = tower_cfg(c, field, default_type, absent)
        extra = int(t.int("vocab_size")) * int(t.int("hidden_size"))
        return [
            f"tie_word_embeddings is not set, so transformers 5 ties lm_head to the token embedding (the class"
            f" default), though {field}.tie_word_embeddings is false: a checkpoint transformers 4 saved from this"
            f" file stores its own lm_head.weight, {extra:,} parameters more (set tie_word_embeddings false to"
            " count it)"
        ]

    return notes


def conditional_generation(
    parts: Callable[[Cfg], tuple[Node, ...]],
    field: str,
    default_type: str,
    forwarded: bool = False,
    absent: Mapping[str, Any] | None = None,
) -> Callable[[Cfg], Block]:
    """``…ForConditionalGeneration``: the composite's model as ``model`` and a bias-free LM head
    over the language model's vocabulary, tied to its token embedding when the config says."""

    def build(c: Cfg) -> Block:
        head = lm_head(tower_cfg(c, field, default_type, absent), tied(c, field, default_type, forwarded, absent))
        return Block("", (Block("model", parts(c), label="backbone"), head))

    return build


def lm_head(t: Cfg, tie: bool, embed: str = "model.language_model.embed_tokens.weight") -> Block:
    """A composite's bias-free LM head over its language model's vocabulary (text config ``t``),
    tied to the language model's token embedding ``embed`` when ``tie``."""
    shape = (t.int("vocab_size"), t.int("hidden_size"))
    weight = Tie("weight", shape, embed) if tie else Tensor("weight", shape)
    return Block("lm_head", (weight,), kind="output_head", tower="language_model")


# Checkpoints saved before transformers 5 (most LLaVA-style ones on the Hub) name the parts
# as attributes of the class: transformers' conversion_mapping.py renames them on loading
# ("llava", and "LlavaModel" and "CLIPVisionModel" within it); so does the checkpoint reader.
LLAVA_RENAMES = (
    (r"^language_model\.lm_head\.", "lm_head."),
    (r"^language_model\.model\.", "model.language_model."),
    (r"^language_model\.", "model.language_model."),
    (r"^vision_tower\.vision_model\.", "model.vision_tower."),  # a CLIP or SigLIP tower's own prefix
    (r"^vision_tower\.", "model.vision_tower."),
    (r"^multi_modal_projector\.", "model.multi_modal_projector."),
)
# Qwen2-VL and Qwen2.5-VL ("Qwen2VLForConditionalGeneration"): the text model was ``model.``.
QWEN_VL_RENAMES = (
    (r"^visual\.", "model.visual."),
    (r"^model\.(?!language_model\.|visual\.)", "model.language_model."),
)


def fixed_image_tokens(
    vision_type: str,
    tokens: Callable[[Cfg, Cfg], int],
    said: str,
    absent: Mapping[str, Any] | None = None,
    cls_token: bool = False,
) -> Callable[[Cfg, int, int], Any]:
    """An image rule for a processor that resizes every image to the vision tower's
    ``image_size`` (LLaVA, PaliGemma, Gemma 3): ``tokens(composite, vision)`` tokens whatever the
    image's size; the tower runs over (image_size / patch_size)² patches (+1 with a class token)."""

    def rule(c: Cfg, width: int, height: int) -> Any:
        from .media import ImageTokens

        v = tower_cfg(c, "vision_config", vision_type, absent)
        side = int(v.int("image_size")) // int(v.int("patch_size"))
        n = tokens(c, v)
        patches = side * side + int(cls_token)
        text = f"{said}: every image resized to {int(v.int('image_size'))} px, {n:,} image tokens"
        return ImageTokens(n, patches, int(v.int("hidden_size")), int(v.int("intermediate_size")), text)

    return rule
