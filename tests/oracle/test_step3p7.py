"""Step 3.7 Flash (``step3p7``), its language model (``step3p5``) and its vision model
(``step3p5_vision``) against transformers 5.23 on the meta device, every class; the towers sum to
the whole; the cache is the language model's, held to a real one after a CPU forward.

No published config.json of stepfun-ai/Step-3.7-Flash is stored here. ``STEP37_LIKE`` is put
together from the shapes public code quotes for it: the text model from NVIDIA aiconfigurator's
tests/unit/sdk/models/test_step3p7.py ("real Step-3.7-Flash shape": 45 layers, full attention
every 4th layer, sliding window 512, vocabulary 128,896, 288 experts of 1,280, top 8, a shared
expert of 1,280, 3 MTP layers, per-layer lists padded with them) and the
``attention_other_setting`` of 96 sliding heads several ports quote; the vision model from
vLLM's step5-preview test, which names the same Perception Encoder the Step 3.7 checkpoints
ship (``width`` 1536, ``layers`` 47, ``heads`` 16, 728 px, 14-px patches). The fields are
spelled as that remote-code config.json spells them (``num_attention_groups``,
``moe_num_experts``, ``moe_top_k``, ``moe_layers_enum``).
"""

import pytest

from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config

from ..cache_oracle import expect_cache
from .oracle import expect_all_classes, expect_same, transformers

N, MTP = 45, 3
LAYER_TYPES = ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(N + MTP)]
STEP37_TEXT = {
    "model_type": "step3p5",
    "architectures": ["Step3p5ForCausalLM"],
    "vocab_size": 128896,
    "hidden_size": 4096,
    "intermediate_size": 11264,
    "num_hidden_layers": N,
    "num_attention_heads": 64,
    "num_attention_groups": 8,
    "head_dim": 128,
    "max_position_embeddings": 65536,
    "layer_types": LAYER_TYPES,
    "sliding_window": 512,
    "attention_other_setting": {
        "attention_type": "sliding_attention",
        "num_attention_heads": 96,
        "num_attention_groups": 8,
        "head_dim": 128,
        "true_head_dim": 128,
    },
    "moe_layers_enum": ",".join(str(i) for i in range(3, N + MTP)),
    "moe_num_experts": 288,
    "moe_top_k": 8,
    "moe_intermediate_size": 1280,
    "share_expert_dim": 1280,
    "num_nextn_predict_layers": MTP,
    "rope_theta": [5e6 if t == "full_attention" else 1e4 for t in LAYER_TYPES],
    "partial_rotary_factors": [0.5 if t == "full_attention" else 1.0 for t in LAYER_TYPES],
}
PE_VISION = {
    "model_type": "perception_encoder",  # transformers drops it: the tower is Step3p7VisionModel
    "image_size": 728,
    "patch_size": 14,
    "width": 1536,
    "layers": 47,
    "heads": 16,
    "ls_init_value": 0.1,
    "hidden_act": "quick_gelu",
}
STEP37_LIKE = {
    "model_type": "step3p7",
    "architectures": ["Step3p7ForConditionalGeneration"],
    "text_config": {k: v for k, v in STEP37_TEXT.items() if k != "architectures"},
    "vision_config": PE_VISION,
}

TEXT = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 5}
TEXT |= {"num_attention_heads": 4, "num_attention_groups": 2, "head_dim": 8, "sliding_window": 4}
TEXT |= {
    "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention", "sliding_attention"]
}
TEXT |= {"attention_other_setting": {"num_attention_heads": 6}, "moe_layers_enum": "2,3"}
TEXT |= {"moe_num_experts": 4, "moe_top_k": 2, "moe_intermediate_size": 8, "share_expert_dim": 12}
VISION = {"width": 16, "layers": 2, "heads": 2, "image_size": 32, "patch_size": 4}
SMALL = {"model_type": "step3p7", "text_config": TEXT, "vision_config": VISION}


def saved(raw: dict) -> dict:
    """The config.json transformers itself writes for ``raw`` (save_pretrained's to_dict): the
    sliding heads as a ``per_layer_config``, the lists resolved, the vision widths as fields."""
    kwargs = {k: v for k, v in raw.items() if k != "model_type"}
    return transformers.AutoConfig.for_model(raw["model_type"], **kwargs).to_dict()


CONFIGS = {
    "defaults": {"model_type": "step3p7"},
    "text-defaults": {"model_type": "step3p5"},
    "vision-defaults": {"model_type": "step3p5_vision"},
    "step3.7-flash-like": STEP37_LIKE,
    "step3.7-flash-like-tied-projector-bias": {**STEP37_LIKE, "tie_word_embeddings": True, "projector_bias": True},
    "step3.7-flash-like-text-alone": STEP37_TEXT,
    "perception-encoder-alone": {**PE_VISION, "model_type": "step3p5_vision"},
    # a smaller encoder, its widths under both spellings (the Perception Encoder names win)
    "vision-shallow-wide-mlp": {
        "model_type": "step3p7",
        "text_config": TEXT,
        "vision_config": {"width": 1024, "hidden_size": 64, "layers": 6, "heads": 16, "image_size": 448}
        | {"patch_size": 16, "mlp_ratio": 4.0, "intermediate_size": 5},
    },
    "small": SMALL,
    "small-saved-by-transformers": saved(SMALL),
    "small-dense-per-element-gate-biased": {
        **SMALL,
        "text_config": {**TEXT, "moe_layers_enum": "", "gating": "per-element", "attention_bias": True}
        | {"mlp_bias": True},
    },
    "small-all-routed-explicit-heads": {
        **SMALL,
        "text_config": {k: v for k, v in TEXT.items() if k != "num_attention_groups"}
        | {"mlp_layer_types": ["sparse"] * 5, "num_sliding_attention_heads": 8, "num_key_value_heads": 4},
    },
    # num_local_experts is a field the class overwrites with n_routed_experts' default
    "small-num-local-experts-changes-nothing": {
        **SMALL,
        "text_config": {**{k: v for k, v in TEXT.items() if k != "moe_num_experts"}, "num_local_experts": 3},
    },
    "small-default-mlp-schedule": {
        **SMALL,
        "text_config": {k: v for k, v in TEXT.items() if k != "moe_layers_enum"} | {"n_routed_experts": 5},
    },
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_equals_transformers(name):
    expect_same(CONFIGS[name])


def test_every_class():
    expect_all_classes(SMALL)
    expect_all_classes({"model_type": "step3p5", **TEXT})
    expect_all_classes({"model_type": "step3p5_vision", **VISION})


@pytest.mark.parametrize("cls", ["Step3p7Model", "Step3p7ForConditionalGeneration"])
def test_towers_sum_to_the_whole(cls):
    m = from_config(STEP37_LIKE, "t", model_class=cls)
    towers = m.towers()
    assert set(towers) == {"vision_encoder", "projector", "language_model"}
    assert sum(towers.values()) == m.total
    h = 1536  # the downsampler (h → 2h → 4h, 3×3) and the linear projector (4h → text width)
    assert towers["projector"] == 9 * (2 * h * h + 8 * h * h) + 2 * h + 4 * h + 4 * h * 4096


def test_moe_active_per_token():
    m = from_config(STEP37_LIKE, "t")
    routed, e, k, h, i = N - 3, 288, 8, 4096, 1280
    assert m.total - m.active_total == routed * (e - k) * 3 * h * i


def test_notes_say_what_is_not_built():
    said = " ".join(from_config(STEP37_LIKE, "t").notes)
    assert "3 multi-token-prediction layer(s) (layers.45–47)" in said
    assert "e_score_correction_bias" in said


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_the_cache_is_the_language_models(dtype):
    """Nine tokens past a window of 4: the sliding layers keep 3 (96 and 64 query heads alike
    cache 2 KV heads)."""
    expect_cache(
        "step3p7", {"text_config": TEXT, "vision_config": VISION}, "Step3p7ForConditionalGeneration", dtype=dtype
    )
    expect_cache("step3p5", TEXT, "Step3p7TextModel", dtype=dtype)


def test_the_cache_of_a_saved_config_and_of_the_default_schedule():
    expect_cache("step3p7", {k: v for k, v in saved(SMALL).items() if k != "model_type"}, "Step3p7Model")
    # without layer_types every layer is full attention, whatever sliding_window says (the model
    # builds its sliding mask either way, so it needs one to run)
    plain = {k: v for k, v in TEXT.items() if k != "layer_types"}
    assert expect_cache("step3p5", plain, "Step3p7TextModel") == 5 * 2 * 2 * 8 * 9 * 2 * 4


@pytest.mark.parametrize(
    "text, vision, field",
    [
        ({**TEXT, "attention_other_setting": {"num_attention_heads": 5}}, VISION, "text_config.num_attention_groups"),
        (
            {**TEXT, "mlp_layer_types": ["sparse", "moe", "dense", "dense", "dense"]},
            VISION,
            "text_config.mlp_layer_types",
        ),
        ({**TEXT, "layer_types": ["full_attention"] * 4}, VISION, "text_config.layer_types"),
        ({**TEXT, "moe_layers_enum": "2,x"}, VISION, "text_config.moe_layers_enum"),
        ({**TEXT, "moe_top_k": 5}, VISION, "text_config.moe_top_k"),
        ({**TEXT, "per_layer_config": {"1": {"head_dim": 4}}}, VISION, "text_config.per_layer_config.1"),
        ({**TEXT, "head_dim": None}, VISION, "text_config.head_dim"),
        (TEXT, {**VISION, "heads": 3}, "vision_config.width"),
        (TEXT, {**VISION, "patch_size": 64}, "vision_config.patch_size"),
        (TEXT, {**VISION, "mlp_ratio": 0.01}, "vision_config.mlp_ratio"),
    ],
)
def test_impossible_configs_are_refused(text, vision, field):
    with pytest.raises(ParamcountError) as e:
        from_config({"model_type": "step3p7", "text_config": text, "vision_config": vision}, "t")
    assert e.value.field == field
