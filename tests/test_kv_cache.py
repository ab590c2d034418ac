"""KV cache: bytes equal to the tensors a real transformers cache holds after a forward pass.

Each case builds a tiny random model with transformers on the CPU, runs ``use_cache=True``
over a short prompt (longer than the sliding windows, so their trimming shows), and sums the
bytes of every key and value tensor in the returned cache (both halves of an
EncoderDecoderCache). paramcount computes the same figure from the config alone.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from typing import Any

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.memory.context.kv_cache import CACHE_DTYPES, kv_cache
from paramcount.memory.context.kv_layout import attention_layout

from .budget import calls
from .cache_oracle import V, build, cache_bytes, forward, ours

CALLS_4092_LAYERS = 20_000  # grouping 4,092 layers into two rows (411 measured); five calls a layer pass it

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

LM = {"vocab_size": V, "hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4, "intermediate_size": 40}
GQA = {**LM, "num_key_value_heads": 2}
MOE = {"moe_intermediate_size": 16, "num_experts_per_tok": 2}
T5 = {"vocab_size": V, "d_model": 32, "d_kv": 8, "d_ff": 40, "num_layers": 2, "num_decoder_layers": 3, "num_heads": 4}
BART = {
    "vocab_size": V,
    "d_model": 32,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 40,
    "decoder_ffn_dim": 40,
}
DEEPSEEK = {
    **LM,
    **MOE,
    "n_routed_experts": 4,
    "n_group": 2,
    "topk_group": 1,
    "kv_lora_rank": 16,
    "q_lora_rank": 24,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 12,
    "v_head_dim": 10,
    "first_k_dense_replace": 1,
}

# (id, model_type, config fields, class): prompts of 9 tokens against windows of 4 or 5.
CASES = [
    ("llama-mha", "llama", LM, "LlamaForCausalLM"),
    ("llama-gqa", "llama", GQA, "LlamaForCausalLM"),
    ("llama-mqa", "llama", {**LM, "num_key_value_heads": 1}, "LlamaForCausalLM"),
    ("llama-head_dim", "llama", {**GQA, "head_dim": 12}, "LlamaForCausalLM"),
    ("mistral-sliding", "mistral", {**GQA, "sliding_window": 4}, "MistralForCausalLM"),
    ("mistral-default-window", "mistral", GQA, "MistralForCausalLM"),
    ("gemma2-alternating", "gemma2", {**LM, "head_dim": 8, "sliding_window": 4}, "Gemma2ForCausalLM"),
    ("gemma3-pattern", "gemma3_text", {**LM, "num_hidden_layers": 7, "sliding_window": 5}, "Gemma3ForCausalLM"),
    (
        "gemma3-layer_types",
        "gemma3_text",
        {**LM, "sliding_window": 4, "layer_types": ["full_attention", "sliding_attention", "full_attention"]},
        "Gemma3ForCausalLM",
    ),
    (
        "qwen2-max_window_layers",
        "qwen2",
        {**GQA, "use_sliding_window": True, "sliding_window": 4, "max_window_layers": 1},
        "Qwen2ForCausalLM",
    ),
    (
        "qwen2-no-sliding",
        "qwen2",
        {**GQA, "sliding_window": 4, "max_window_layers": 1},
        "Qwen2ForCausalLM",
    ),
    (
        "qwen2_moe-sliding",
        "qwen2_moe",
        {**GQA, **MOE, "num_hidden_layers": 4, "num_experts": 4, "shared_expert_intermediate_size": 16}
        | {"use_sliding_window": True, "sliding_window": 4, "max_window_layers": 3},
        "Qwen2MoeForCausalLM",
    ),
    ("qwen3", "qwen3", {**GQA, "head_dim": 16}, "Qwen3ForCausalLM"),
    (
        "qwen3_moe-sliding",
        "qwen3_moe",
        {**LM, **MOE, "num_experts": 4, "use_sliding_window": True, "sliding_window": 5},
        "Qwen3MoeForCausalLM",
    ),
    ("phi3-sliding", "phi3", {**LM, "pad_token_id": 0, "sliding_window": 5}, "Phi3ForCausalLM"),
    (
        "starcoder2-sliding",
        "starcoder2",
        {**GQA, "sliding_window": 4},
        "Starcoder2ForCausalLM",
    ),
    ("mixtral", "mixtral", {**GQA, "num_local_experts": 4}, "MixtralForCausalLM"),
    ("gemma", "gemma", {**LM, "num_key_value_heads": 1, "head_dim": 16}, "GemmaForCausalLM"),
    ("olmo", "olmo", LM, "OlmoForCausalLM"),
    ("phi", "phi", LM, "PhiForCausalLM"),
    ("falcon-multi-query", "falcon", LM, "FalconForCausalLM"),
    ("falcon-new-arch", "falcon", {**LM, "new_decoder_architecture": True, "num_kv_heads": 2}, "FalconForCausalLM"),
    ("falcon-mha", "falcon", {**LM, "multi_query": False}, "FalconForCausalLM"),
    ("gpt2", "gpt2", {"vocab_size": V, "n_embd": 32, "n_layer": 2, "n_head": 4}, "GPT2LMHeadModel"),
    ("gpt_neox", "gpt_neox", LM, "GPTNeoXForCausalLM"),
    ("gptj", "gptj", {"vocab_size": V, "n_embd": 32, "n_layer": 2, "n_head": 4, "rotary_dim": 4}, "GPTJForCausalLM"),
    ("bloom", "bloom", {"vocab_size": V, "hidden_size": 32, "n_layer": 2, "n_head": 4}, "BloomForCausalLM"),
    ("opt", "opt", {**LM, "ffn_dim": 40}, "OPTForCausalLM"),
    ("deepseek_v3-mla", "deepseek_v3", DEEPSEEK, "DeepseekV3ForCausalLM"),
    ("bert-decoder", "bert", {**LM, "is_decoder": True}, "BertLMHeadModel"),
    ("roberta-decoder", "roberta", {**LM, "is_decoder": True}, "RobertaForCausalLM"),
    ("bart-decoder-only", "bart", BART, "BartForCausalLM"),
]
ENCODER_DECODER = [
    ("t5", "t5", T5, "T5ForConditionalGeneration"),
    ("mt5", "mt5", {**T5, "num_decoder_layers": None}, "MT5ForConditionalGeneration"),
    ("bart", "bart", {**BART, "decoder_layers": 3}, "BartForConditionalGeneration"),
]


@pytest.mark.parametrize(("model_type", "fields", "cls"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bytes_equal_the_real_dynamic_cache(model_type: str, fields: dict[str, Any], cls: str) -> None:
    real = cache_bytes(forward(build(model_type, fields, cls), tokens=9))
    assert real > 0
    assert kv_cache(ours(model_type, fields, cls), 9, batch=2, dtype="fp32").bytes == real


@pytest.mark.parametrize(
    ("model_type", "fields", "cls"), [c[1:] for c in ENCODER_DECODER], ids=[c[0] for c in ENCODER_DECODER]
)
def test_encoder_decoder_self_and_cross_caches(model_type: str, fields: dict[str, Any], cls: str) -> None:
    cache = forward(build(model_type, fields, cls), tokens=7, source=5)
    got = kv_cache(ours(model_type, fields, cls), 7, batch=2, dtype="fp32", encoder_length=5)
    rows = {r.kind.attention: r.bytes for r in got.layers}
    assert rows == {"full": cache_bytes(cache.self_attention_cache), "cross": cache_bytes(cache.cross_attention_cache)}
    assert got.bytes == cache_bytes(cache)
    # The cross-attention cache is fixed by the source; only the self-attention half grows.
    longer = kv_cache(ours(model_type, fields, cls), 8, batch=2, dtype="fp32", encoder_length=5)
    assert longer.bytes - got.bytes == 2 * got.per_token


@pytest.mark.parametrize(
    ("model_type", "fields", "cls"),
    [
        ("gpt2", {"vocab_size": V, "n_embd": 32, "n_layer": 2, "n_head": 4}, "GPT2LMHeadModel"),
        ("bert", {**LM, "is_decoder": True}, "BertLMHeadModel"),
    ],
)
def test_decoders_with_cross_attention_over_encoder_states(model_type: str, fields: dict[str, Any], cls: str) -> None:
    fields = {**fields, "add_cross_attention": True}
    model = build(model_type, fields, cls)
    with torch.no_grad():
        states = torch.randn(2, 5, 32)
        cache = model(
            input_ids=torch.randint(4, V, (2, 7)), encoder_hidden_states=states, use_cache=True
        ).past_key_values
    got = kv_cache(ours(model_type, fields, cls), 7, batch=2, dtype="fp32", encoder_length=5)
    assert got.bytes == cache_bytes(cache) and [r.kind.attention for r in got.layers] == ["full", "cross"]


@pytest.mark.parametrize(("dtype", "name"), [("float32", "fp32"), ("bfloat16", "bf16"), ("float16", "fp16")])
def test_element_sizes_match_the_model_dtype(dtype: str, name: str) -> None:
    fields = GQA
    real = cache_bytes(forward(build("llama", fields, "LlamaForCausalLM", getattr(torch, dtype)), tokens=6))
    assert kv_cache(ours("llama", fields, "LlamaForCausalLM"), 6, batch=2, dtype=name).bytes == real
    assert kv_cache(ours("llama", fields, "LlamaForCausalLM"), 6, batch=2, dtype=dtype).dtype == name


def test_fp8_counts_transformers_fp8_cache_with_its_scales() -> None:
    fields = GQA
    model = build("llama", fields, "LlamaForCausalLM")
    cache = forward(model, tokens=6, cache=transformers.QuantizedCache(backend="fp8", config=model.config))
    got = kv_cache(ours("llama", fields, "LlamaForCausalLM"), 6, batch=2, dtype="fp8")
    assert got.bytes == cache_bytes(cache)
    assert got.bytes - 3 * 2 * 4 == kv_cache(ours("llama", fields, "LlamaForCausalLM"), 6, batch=2, dtype="int8").bytes


@pytest.mark.parametrize(
    ("model_type", "fields", "cls"),
    [
        ("llama", GQA, "LlamaForCausalLM"),
        ("mistral", {**GQA, "sliding_window": 4}, "MistralForCausalLM"),
        ("gemma2", {**LM, "head_dim": 8, "sliding_window": 4}, "Gemma2ForCausalLM"),
    ],
)
def test_static_cache_allocates_the_window(model_type: str, fields: dict[str, Any], cls: str) -> None:
    model = build(model_type, fields, cls)
    cache = forward(model, tokens=9, cache=transformers.StaticCache(config=model.config, max_cache_len=9))
    assert kv_cache(ours(model_type, fields, cls), 9, batch=2, dtype="fp32", cache="static").bytes == cache_bytes(cache)


def test_sliding_layers_after_a_prefill_shorter_and_longer_than_the_window() -> None:
    """Below the window every layer grows; past it, only the full layers do."""
    fields = {**LM, "head_dim": 8, "sliding_window": 4}
    model, mine = build("gemma2", fields, "Gemma2ForCausalLM"), ours("gemma2", fields, "Gemma2ForCausalLM")
    for tokens in (1, 2, 3, 4, 9):
        real = cache_bytes(forward(model, tokens=tokens, batch=1))
        got = kv_cache(mine, tokens, dtype="fp32")
        assert got.bytes == got.per_sequence == real
        nxt = cache_bytes(forward(model, tokens=tokens + 1, batch=1))
        assert got.per_token_at() == nxt - real
    assert got.per_token_at() < got.per_token  # steady state: the sliding layers stopped growing


def test_mla_latent_is_what_transformers_caches_and_expanded_is_what_attention_uses() -> None:
    model = build("deepseek_v3", DEEPSEEK, "DeepseekV3ForCausalLM")
    cache = forward(model, tokens=7)
    mine = ours("deepseek_v3", DEEPSEEK, "DeepseekV3ForCausalLM")
    assert kv_cache(mine, 7, batch=2, dtype="fp32").bytes == cache_bytes(cache)
    # Expanded: the per-head keys and values each attention layer builds from its cached latent.
    expanded = 0
    for layer, decoder in zip(cache.layers, model.model.layers, strict=True):
        keys, values = decoder.self_attn.expand_kv(layer.keys, layer.values)
        expanded += sum(t.numel() * t.element_size() for t in (keys, values))
    assert kv_cache(mine, 7, batch=2, dtype="fp32", mla="expanded").bytes == expanded
    c = model.config
    assert attention_layout(mine).per_token_elements == c.num_hidden_layers * (c.kv_lora_rank + c.qk_rope_head_dim)


def test_deepseek_v3_latent_per_token_from_its_config() -> None:
    raw = paramcount.load("deepseek-ai/DeepSeek-V3").config
    c = transformers.DeepseekV3Config(**{k: v for k, v in raw.items() if k != "model_type"})
    got = kv_cache(paramcount.load("deepseek-ai/DeepSeek-V3"), 1, dtype="bf16")
    assert got.per_token == c.num_hidden_layers * (c.kv_lora_rank + c.qk_rope_head_dim) * 2
    assert got.layout.mla == "latent" and got.layout.kinds[0].stores == "mla-latent"


def test_encoder_only_models_have_no_cache() -> None:
    fields = {**LM}
    assert forward(build("bert", fields, "BertModel"), tokens=5) is None
    got = kv_cache(ours("bert", fields, "BertModel"), 5, batch=2)
    assert got.bytes == got.per_token == 0 and got.layers == ()
    assert "no KV cache" in got.term().formula and got.term().bytes == 0
    for name, cls in (("distilbert-base-uncased", None), ("google-t5/t5-small", "T5EncoderModel")):
        assert kv_cache(paramcount.load(name, model_class=cls), 128).bytes == 0


def test_published_per_token_figures() -> None:
    assert kv_cache(paramcount.load("meta-llama/Llama-2-7b-hf"), 4096, dtype="fp16").per_token == 524_288  # 0.5 MiB
    assert (
        kv_cache(paramcount.load("meta-llama/Meta-Llama-3-8B"), 8192, dtype="bf16").per_token == 131_072
    )  # 128 KiB, GQA


def _catalog_decoders() -> list[str]:
    from paramcount.frontends import catalog

    skip = {"t5", "mt5", "bart", "bert", "roberta", "xlm-roberta", "electra", "distilbert", "albert", "deepseek_v3"}
    skip |= {
        "camembert",
        "umt5",
        "mbart",
        "m2m_100",
        "marian",
        "mpnet",
        "whisper",
    }  # text encoders and encoder-decoders added for issue 13: checked in their own tests
    skip |= {"vit", "dinov2", "clip", "clip_text_model", "clip_vision_model"}  # image and text encoders: no cache
    # indexed_attention layers (checked against the real cache in their oracle tests) and a refused layout
    skip |= {"deepseek_v32", "glm_moe_dsa", "deepseek_v4"}
    # cross-attention layers cache the image's tiles, not the text: held in test_mllama and test_images
    skip |= {"mllama"}
    return [e.id for e in catalog.entries() if e.config.get("model_type") not in skip]


def test_layer_types_and_windows_match_transformers_for_every_catalog_decoder() -> None:
    from transformers.cache_utils import get_layer_types_and_kwargs

    names = _catalog_decoders()
    assert len(names) > 30
    plain = {"full_attention", "sliding_attention", "chunked_attention"}
    checked = 0
    for name in names:
        raw = paramcount.load(name).config
        config = transformers.AutoConfig.for_model(**raw)
        types, kwargs = get_layer_types_and_kwargs(config.get_text_config(decoder=True))
        if not set(types) <= plain or not attention_layout(paramcount.load(name)).kinds:  # encoders keep no cache
            continue  # recurrent states, indexers, shared KV, towers: their families' own cache tests hold them
        checked += 1
        want: dict[tuple[str, int | None], int] = {}
        for t, kw in zip(types, kwargs, strict=True):
            if t == "linear_attention":  # a recurrent state, held to the real cache in its family's test
                continue
            key = ("full", None) if t == "full_attention" else ("sliding", kw["sliding_window"])
            want[key] = want.get(key, 0) + 1
        got = {
            (k.attention, k.window): k.layers
            for k in attention_layout(paramcount.load(name)).kinds
            if k.attention != "state"
        }
        assert got == want, name
    assert checked > 30


def test_rows_group_layers_without_unrolling() -> None:
    config = {"model_type": "gemma3_text", **LM, "num_hidden_layers": 4092}  # MAX_LAYERS is 4,096
    attention_layout(paramcount.load({**config, "num_hidden_layers": 4}))  # imports and caches warmed outside the count
    model = paramcount.load(config)
    with calls(CALLS_4092_LAYERS):
        layout = attention_layout(model)
    assert [(k.attention, k.layers) for k in layout.kinds] == [("sliding", 3410), ("full", 682)]
    assert layout.kinds[1].where == "5, 11, 17, …, 4091"


def test_term_formula_and_parts_sum() -> None:
    got = kv_cache(paramcount.load("google/gemma-2-2b"), 8192, batch=2)
    term = got.term()
    assert term.key == "kv_cache" and not term.estimate and term.bytes == got.bytes
    assert sum(p.bytes for p in term.parts) == term.bytes and len(term.parts) == 2
    assert "--kv-dtype" in term.assumption and "W−1" in term.assumption
    assert "min(T, W−1)" in term.parts[0].formula and term.parts[0].formula.endswith(f"{term.parts[0].bytes:,} B")
    single = kv_cache(paramcount.load("meta-llama/Meta-Llama-3-8B"), 4096).term()
    assert single.parts == () and single.formula.startswith("2 · L · n_kv · d_head · T · B × 2 B = 2 · 32 · 8 · 128")
    assert single.label == "KV cache (bf16, 4,096 tokens × 1)"


def test_int4_is_half_a_byte_per_element() -> None:
    four, eight = (kv_cache(paramcount.load("meta-llama/Llama-3.2-1B"), 1000, dtype=d) for d in ("int4", "int8"))
    assert 2 * four.bytes == eight.bytes and "no quantisation scales" in four.term().assumption
    assert CACHE_DTYPES["int4"] == 4


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"context": 0}, "context", "0 is out of range"),
        ({"context": -5}, "context", "out of range"),
        ({"context": 2**31}, "context", "out of range (must be 1..1,073,741,824)"),
        ({"context": True}, "context", "expected a whole number, got True"),
        ({"context": 2.5}, "context", "expected a whole number"),
        ({"context": "4096"}, "context", "expected a whole number"),
        ({"batch": 0}, "batch", "out of range"),
        ({"batch": 2**21}, "batch", "out of range"),
        ({"dtype": "fp7"}, "dtype", "unknown KV-cache dtype 'fp7'; choose one of: fp32, fp16, bf16, fp8, int8, int4"),
        ({"dtype": 16}, "dtype", "unknown KV-cache dtype 16"),
        ({"cache": "paged"}, "cache", "unknown cache 'paged'"),
        ({"mla": "compressed"}, "mla", "unknown MLA cache form 'compressed'"),
        ({"encoder_length": 0}, "encoder_length", "out of range"),
    ],
)
def test_bad_arguments_are_one_line_errors(kwargs: dict[str, Any], field: str, message: str) -> None:
    args = {"context": 16, **kwargs}
    with pytest.raises(ParamcountError) as e:
        kv_cache(paramcount.load("meta-llama/Llama-3.2-1B"), **args)
    assert e.value.field == field and message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"layer_types": ["full_attention"]}, "layer_types", "expected a list of 3 layer types, got 1 entries"),
        ({"layer_types": ["full_attention", "mamba", "x"]}, "layer_types", "no KV-cache layout for layer type(s)"),
        ({"layer_types": ["sliding_attention"] * 3}, "sliding_window", "sliding_window is null"),
        ({"sliding_window": 0}, "sliding_window", "expected a positive integer"),
        ({"sliding_window": "4k"}, "sliding_window", "expected a positive integer"),
    ],
)
def test_bad_window_fields(fields: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ParamcountError) as e:
        attention_layout(paramcount.load({"model_type": "llama", **LM, **fields}))
    assert e.value.field == field and message in str(e.value)


def test_a_model_without_a_config_is_refused() -> None:
    from paramcount.frontends import printout

    model = printout.from_text("LlamaForCausalLM(\n  (lm_head): Linear(in_features=32, out_features=64, bias=False)\n)")
    assert model.model.model_type == "llama"
    with pytest.raises(ParamcountError, match="needs the model's transformers config"):
        kv_cache(model, 16)
    # A GGUF file's metadata uses its own key names: never read as a transformers config; its
    # layout (llama.cpp's, tests/test_memory_checkpoints.py) needs the GGUF keys.
    gguf = replace(paramcount.load("meta-llama/Llama-3.2-1B"), class_name="GGUF", config={"block_count": 16})
    with pytest.raises(ParamcountError, match=r"llama\.attention\.head_count is needed for the KV cache"):
        attention_layout(gguf)


def test_importing_the_module_loads_nothing_heavy() -> None:
    code = (
        "import sys; import paramcount; from paramcount.memory.context.kv_cache import kv_cache; "
        "kv_cache(paramcount.load('google/gemma-2-2b'), 8192);"
        "print([m for m in ('torch', 'transformers', 'numpy', 'rich') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
