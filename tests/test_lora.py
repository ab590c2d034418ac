"""LoRA adapters against peft: ``get_peft_model(model, LoraConfig(...))`` on the meta device gives
the oracle's trainable and total parameter counts and the name and shape of every lora_A/lora_B."""

from __future__ import annotations

import itertools
import re
from collections import Counter

import pytest

from paramcount import load
from paramcount.arch import family
from paramcount.errors import ParamcountError
from paramcount.frontends import catalog
from paramcount.frontends.config import from_config
from paramcount.memory.training.lora import lora
from paramcount.memory.tree.modules import output_embedding, walk

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from transformers.pytorch_utils import Conv1D  # noqa: E402

from .budget import calls  # noqa: E402
from .oracle.oracle import instantiate  # noqa: E402

transformers.logging.set_verbosity_error()

LAYER_FIELDS = ("num_hidden_layers", "n_layer", "num_layers", "encoder_layers", "decoder_layers", "num_decoder_layers")


def small(model_id: str, layers: int = 3) -> dict:
    """A catalog config at its real widths with a few layers (and experts), so meta models are quick."""
    raw = dict(catalog.get(model_id).config)
    for f in LAYER_FIELDS:
        if f in raw:
            raw[f] = min(raw[f], layers)
    for f in ("num_experts", "num_local_experts", "n_routed_experts"):
        if f in raw:
            raw[f] = min(raw[f], 8)
    if "num_experts_per_tok" in raw:
        raw["num_experts_per_tok"] = 2
    if "attention_types" in raw:  # GPT-Neo's pattern must expand to the layer count
        raw["attention_types"] = [[["global"], min(raw.get("num_layers", layers), layers)]]
    if "first_k_dense_replace" in raw:
        raw |= {"first_k_dense_replace": 1, "n_group": 1, "topk_group": 1}
    for f in ("layer_types", "mlp_layer_types"):
        if f in raw:
            raw[f] = raw[f][:layers]
    if isinstance(raw.get("linear_attn_config"), dict):  # Kimi's 1-based layer lists
        own = raw["linear_attn_config"]
        cut = {k: [i for i in own[k] if i <= layers] for k in ("full_attn_layers", "kda_layers") if k in own}
        raw["linear_attn_config"] = own | cut
    return raw


# ---- the tree's modules are torch's modules ------------------------------------------------------

ONE_PER_FAMILY = sorted({e.config.get("model_type"): e.id for e in catalog.entries()}.values())


def torch_types(module) -> dict[str, str]:
    kinds = ((Conv1D, "Conv1D"), (torch.nn.Linear, "Linear"), (torch.nn.Embedding, "Embedding"))
    return {
        n: next(k for cls, k in kinds if isinstance(m, cls))
        for n, m in module.named_modules()
        if isinstance(m, (Conv1D, torch.nn.Linear, torch.nn.Embedding))
    }


@pytest.mark.parametrize("model_id", ONE_PER_FAMILY)
def test_module_types_and_output_embedding_are_torchs(model_id):
    """Every Linear, Conv1D and Embedding by name, and get_output_embeddings(), for every class."""
    raw = small(model_id)
    for cls in family(from_config(raw, "t").model_type).classes:
        model = from_config(raw, "t", model_class=cls)
        real = instantiate(raw, model.class_name, model.model_type)
        assert {m.name: m.type for m in walk(model, expand=True) if m.type} == torch_types(real), cls
        head = real.get_output_embeddings()
        want = next((n for n, m in real.named_modules() if m is head), None) if head is not None else None
        assert output_embedding(model) == want, cls


# ---- peft as the oracle ----------------------------------------------------------------------------


def unroll(label: str) -> list[str]:
    """``model.layers.0–2.q_proj`` -> the three names it stands for."""
    choices = []
    for part in label.split("."):
        span = re.fullmatch(r"(\d+)–(\d+)", part)
        choices.append([str(i) for i in range(int(span[1]), int(span[2]) + 1)] if span else [part])
    return [".".join(c) for c in itertools.product(*choices)]


def ours(adapters) -> Counter:
    """(name, shape) of every adapter tensor, named as peft names them (less its prefix and
    adapter name); a targeted parameter's adapter hangs on its module."""
    found = Counter()
    for r in adapters.rows:
        a, b = (
            ("lora_embedding_A", "lora_embedding_B") if r.module == "Embedding" else ("lora_A.weight", "lora_B.weight")
        )
        for name in unroll(r.name):
            module = name.rpartition(".")[0] if r.module == "Parameter" else name
            found[(f"{module}.{a}", r.a)] += 1
            found[(f"{module}.{b}", r.b)] += 1
    return found


def peft_model(raw: dict, cls: str | None, **config):
    model = from_config(raw, "t", model_class=cls)
    real = instantiate(raw, model.class_name, model.model_type)
    base = sum(p.numel() for p in real.parameters())
    return model, peft.get_peft_model(real, peft.LoraConfig(**config)), base


def theirs(wrapped) -> Counter:
    found = Counter()
    for name, p in wrapped.named_parameters():
        if "lora_" in name:
            name = name.removeprefix("base_model.model.").replace(".default", "").replace(".base_layer", "")
            found[(name, tuple(p.shape))] += 1
    return found


def expect_peft(model_id: str, cls: str | None = None, **config):
    raw = small(model_id)
    model, wrapped, base = peft_model(raw, cls, **config)
    kw = {"rank": config.get("r", 8), "targets": config["target_modules"], "bias": config.get("bias", "none")}
    saves, params = config.get("modules_to_save", ()), config.get("target_parameters", ())
    adapters = lora(model, **kw, modules_to_save=saves, parameters=params)
    trainable, total = wrapped.get_nb_trainable_parameters()
    assert adapters.trainable == trainable
    assert adapters.total - model.total == total - base  # parameters added (copies of modules_to_save too)
    assert ours(adapters) == theirs(wrapped)
    return adapters


CASES = [
    ("meta-llama/Llama-2-7b-hf", None, {"target_modules": ["q_proj", "v_proj"]}),
    (
        "meta-llama/Llama-2-7b-hf",
        None,
        {"target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], "r": 16},
    ),
    ("meta-llama/Meta-Llama-3-8B", None, {"target_modules": "all-linear", "r": 64}),
    ("meta-llama/Meta-Llama-3-8B", "LlamaForSequenceClassification", {"target_modules": "all-linear", "r": 4}),
    ("meta-llama/Llama-2-7b-hf", None, {"target_modules": ["embed_tokens", "lm_head"], "r": 4}),
    ("meta-llama/Llama-2-7b-hf", None, {"target_modules": r".*layers\.1\.self_attn\.(q|v)_proj", "r": 2}),
    (
        "Qwen/Qwen2.5-0.5B",
        None,
        {"target_modules": ["q_proj", "v_proj"], "bias": "lora_only", "modules_to_save": ["lm_head"]},
    ),
    ("google-bert/bert-base-uncased", None, {"target_modules": ["query", "value"]}),
    ("google-bert/bert-base-uncased", None, {"target_modules": "all-linear", "bias": "all", "r": 32}),
    (
        "google-bert/bert-base-uncased",
        "BertForSequenceClassification",
        {"target_modules": ["query", "value"], "modules_to_save": ["classifier"]},
    ),
    ("openai-community/gpt2", None, {"target_modules": ["c_attn"], "r": 4}),
    ("openai-community/gpt2", "GPT2DoubleHeadsModel", {"target_modules": "all-linear"}),
    ("google-t5/t5-small", None, {"target_modules": ["q", "v"]}),
    ("microsoft/Phi-3-mini-4k-instruct", None, {"target_modules": "all-linear"}),
    ("tiiuae/falcon-7b", None, {"target_modules": ["query_key_value"], "r": 16}),
    # transformers 5 fuses the experts into 3-D parameters; peft retargets them (rank 2r for gate_up_proj)
    ("Qwen/Qwen3-30B-A3B", None, {"target_modules": "all-linear"}),
    (
        "Qwen/Qwen3-30B-A3B",
        None,
        {"target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], "r": 16},
    ),
    ("mistralai/Mixtral-8x7B-v0.1", None, {"target_modules": "all-linear", "r": 4}),
    ("deepseek-ai/DeepSeek-V3", None, {"target_modules": "all-linear"}),
    ("Qwen/Qwen1.5-MoE-A2.7B", None, {"target_modules": "all-linear"}),  # no retargeting: experts untouched
    ("Qwen/Qwen3-30B-A3B", None, {"target_modules": ["q_proj"], "target_parameters": ["experts.down_proj"]}),
    ("meta-llama/Llama-2-7b-hf", None, {"target_modules": [], "target_parameters": ["self_attn.o_proj.weight"]}),
    # composites at full size: peft's Gemma 4 default (the language model's q/v only, not the towers'),
    # and all-linear past Llama 3.2 Vision's LM head (8 rows fewer than its embedding)
    ("google/gemma-4-E2B-it", None, {"target_modules": r".*language_model\..*\.(q_proj|v_proj)"}),
    ("meta-llama/Llama-3.2-90B-Vision-Instruct", None, {"target_modules": "all-linear", "r": 4}),
]


@pytest.mark.parametrize(
    ("model_id", "cls", "config"), CASES, ids=[f"{m}-{c or ''}-{i}" for i, (m, c, _) in enumerate(CASES)]
)
def test_adapters_equal_peft(model_id, cls, config):
    expect_peft(model_id, cls, **config)


def test_fused_experts_are_adapted_per_expert():
    adapters = expect_peft("Qwen/Qwen3-30B-A3B", target_modules="all-linear")
    experts = {r.name.rpartition(".")[2]: r for r in adapters.rows if r.module == "Parameter"}
    assert set(experts) == {"gate_up_proj", "down_proj", "weight"}  # the router's weight too
    assert experts["gate_up_proj"].a[0] == 2 * 8 * 8  # rank 2r (gate and up fused) × 8 experts
    assert experts["down_proj"].a[0] == 8 * 8


def test_full_size_llama_2_7b_equals_peft():
    """The whole model (32 layers) on the meta device: peft's own README example."""
    raw = catalog.get("meta-llama/Llama-2-7b-hf").config
    model, wrapped, _ = peft_model(raw, None, target_modules=["q_proj", "v_proj"], r=8)
    adapters = lora(model)
    assert (adapters.trainable, adapters.total) == wrapped.get_nb_trainable_parameters()
    assert [(r.name, r.copies, r.a, r.b) for r in adapters.rows] == [
        ("model.layers.0–31.self_attn.q_proj", 32, (8, 4096), (4096, 8)),
        ("model.layers.0–31.self_attn.v_proj", 32, (8, 4096), (4096, 8)),
    ]


def test_repeated_layers_are_multiplied_not_unrolled():
    model = load("meta-llama/Llama-3.1-405B")
    lora(load("meta-llama/Llama-3.2-1B"), 16, "all-linear")  # imports and caches warmed outside the count
    with calls(10_000):  # 1,355 measured; the unrolled walk (a regex target) takes 56,557
        adapters = lora(model, 16, "all-linear")
    assert len(adapters.rows) == 7 and {r.copies for r in adapters.rows} == {126}
    assert adapters.params == sum(126 * 16 * (r.d_in + r.d_out) for r in adapters.rows)


# ---- the memory term -------------------------------------------------------------------------------


def test_term_is_the_new_parameters_at_a_dtype():
    model = load("openai-community/gpt2")
    adapters = lora(model, 8, ["c_attn", "c_proj"], modules_to_save=["lm_head"])
    term = adapters.term()
    assert term.key == "adapters" and not term.estimate
    assert term.bytes == 4 * (adapters.params + adapters.saved_params)
    assert sum(p.bytes for p in term.parts) == term.bytes
    assert adapters.term("bf16").bytes * 2 == term.bytes
    # the tied lm_head is copied whole: V·h new parameters
    assert adapters.saved_params == 50257 * 768


# ---- bad input ---------------------------------------------------------------------------------


def test_targets_matching_nothing_name_the_linear_layers():
    with pytest.raises(ParamcountError, match=r"match no module.*q_proj, k_proj, v_proj, o_proj, gate_proj"):
        lora(load("meta-llama/Llama-2-7b-hf"), targets=["query"])


def test_a_module_lora_cannot_wrap():
    with pytest.raises(ParamcountError, match=r"model\.layers\.0\.mlp is not a layer LoRA can wrap"):
        lora(load("meta-llama/Llama-2-7b-hf"), targets=["mlp"])


def test_half_of_a_fused_expert_weight_is_refused_like_peft():
    raw = small("Qwen/Qwen3-30B-A3B")
    with pytest.raises(ValueError, match="without also targeting up_proj"):
        peft_model(raw, None, target_modules=["gate_proj"])
    with pytest.raises(ParamcountError, match="gate_proj cannot be targeted without up_proj"):
        lora(from_config(raw, "t"), targets=["gate_proj"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rank": 0}, "rank must be a whole number ≥ 1"),
        ({"rank": 2.5}, "rank must be"),
        ({"bias": "some"}, "bias must be one of none, all, lora_only"),
        ({"targets": "(q_proj"}, "is not a regular expression"),
        ({"targets": r"(\w+)\.\1"}, "backreference .1 needs a backtracking matcher"),
        ({"targets": "(?P<x>q_proj)"}, "Python syntax"),
        ({"targets": "q" * 1025}, "at most 1024 characters"),
        ({"modules_to_save": ["(lm_head"]}, "modules_to_save '.lm_head' is not a regular expression"),
        ({"targets": [""]}, "targets must be module names"),
        ({"modules_to_save": ["nothing_here"]}, "modules_to_save 'nothing_here' matches no module"),
        ({"parameters": ["nothing.weight"]}, "match no module"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ParamcountError, match=message):
        lora(load("Qwen/Qwen2.5-0.5B"), **kwargs)


def test_default_targets_are_pefts_per_model_type():
    """Without targets, peft's own default for the model type (its mapping, and a real
    get_peft_model with no target_modules); where peft has none, ours, said in a note."""
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as PEFT

    from paramcount.memory.training.lora import OWN_TARGETS, PEFT_TARGETS

    for entry in ONE_PER_FAMILY:
        model = load(catalog.get(entry).config)
        want = PEFT.get(model.model_type)
        assert PEFT_TARGETS.get(model.model_type) == (tuple(want) if isinstance(want, (list, set)) else want)
        adapters = lora(model)  # every family gets adapters: no "match nothing" error
        assert adapters.params > 0 and (model.model_type in OWN_TARGETS) == any(
            "peft has no" in n for n in adapters.notes
        )
    for model_id in (
        "google-bert/bert-base-uncased",
        "openai-community/gpt2",
        "bigscience/bloom-560m",
        "google-t5/t5-small",
    ):
        model, wrapped, _ = peft_model(small(model_id), None, r=8)
        assert lora(model).trainable == wrapped.get_nb_trainable_parameters()[0], model_id


def test_a_composite_over_an_mla_text_model_targets_both_towers_projections():
    """Mistral Small 4: peft has no default for mistral3; the composite's q_proj/v_proj (the
    Pixtral tower's) and its MLA language model's q_b_proj/kv_b_proj, which has no v_proj."""
    adapters = lora(load("mistralai/Mistral-Small-4-119B-2603"))
    assert adapters.targets == ("q_proj", "v_proj", "q_b_proj", "kv_b_proj")
    names = [r.name for r in adapters.rows]
    assert any("language_model" in n and "kv_b_proj" in n for n in names)
    assert any("vision_tower" in n and "v_proj" in n for n in names)
    assert lora(load("mistralai/Mistral-Small-3.1-24B-Instruct-2503")).targets == ("q_proj", "v_proj")
