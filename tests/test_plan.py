"""Memory plans: the terms add up, identities equal their modules' figures, estimates say so,
the seed's rule and claim hold with their assumptions, and the inference working-set estimate
is held to the peak of live tensors in a real transformers forward."""

import pytest

import paramcount
from paramcount.errors import ParamcountError
from paramcount.memory import GPUS, inference, kv_cache, train, training, weights
from paramcount.memory.core.gpus import GIB
from paramcount.memory.core.overhead import MEASURED, MEASURED_TRAINING, Overhead, parse
from paramcount.memory.core.plan import SCHEMA, context_for
from paramcount.memory.runtimes.transformers.working_set import activations

LLAMA13 = "meta-llama/Llama-2-13b-hf"


@pytest.fixture(scope="module")
def llama13():
    return paramcount.load(LLAMA13)


# ---- the terms -------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["bf16", "int4", "nf4", "bnb-int8", "fp32"])
def test_inference_terms_add_up_and_equal_their_modules(llama13, scheme):
    plan = inference(llama13, scheme, context=3000, batch=2)
    assert [t.key for t in plan.terms] == ["weights", "kv_cache", "activations", "overhead"]
    assert plan.total == sum(t.bytes for t in plan.terms)
    assert plan.term("weights").bytes == weights(llama13, scheme).bytes
    kv = plan.settings["kv_dtype"]
    assert plan.term("kv_cache").bytes == kv_cache(llama13, 3000, 2, kv).bytes
    rest = plan.total - plan.term("overhead").bytes - plan.term("weights").bytes
    assert plan.term("overhead").bytes == MEASURED.split(plan.term("weights").bytes, rest)
    assert plan.term("overhead").bytes == MEASURED.context + MEASURED.workspace + MEASURED.reserve(rest)
    for t in plan.terms:
        assert not t.parts or sum(p.bytes for p in t.parts) == t.bytes, t.key


def test_estimates_say_so_with_a_source(llama13):
    plan = inference(llama13, "int4")
    kinds = {t.key: t.estimate for t in plan.terms}
    assert kinds == {"weights": False, "kv_cache": False, "activations": True, "overhead": True}
    for t in plan.terms:
        assert t.formula and t.assumption
        if t.estimate:
            assert "arXiv" in t.source or "#86509" in t.source or "gpu_h100.json" in t.source
    assert plan.estimated == plan.term("activations").bytes + plan.term("overhead").bytes


def test_kv_dtype_defaults_to_the_compute_dtype(llama13):
    assert inference(llama13, "fp32").settings["kv_dtype"] == "fp32"
    assert inference(llama13, "nf4").settings["kv_dtype"] == "bf16"
    with pytest.raises(ParamcountError, match=r"q4_k_m is a GGUF type: llama\.cpp and Ollama load it"):
        inference(llama13, "q4_k_m")  # transformers' plan would not be the file's
    fp8 = inference(llama13, "int4", kv_dtype="fp8")
    assert fp8.term("kv_cache").bytes == kv_cache(llama13, 4096, 1, "fp8").bytes


def test_context_default_is_the_model_limit_capped_at_4096(llama13):
    assert context_for(llama13, None) == (4096, "the model's limit")
    assert context_for(paramcount.load("meta-llama/Llama-3.1-8B"), None) == (
        4096,
        "the default; the model allows 131,072",
    )
    assert context_for(paramcount.load("meta-llama/Llama-3.1-8B"), None)[0] == 4096
    assert context_for(paramcount.load("bert-base-uncased"), None)[0] == 512
    bare = paramcount.from_dims("llama", num_hidden_layers=2, hidden_size=64, num_attention_heads=4)
    assert context_for(bare, None) == (2048, "the model's limit")  # LlamaConfig's default, as transformers builds it
    mamba = paramcount.from_dims("mamba", num_hidden_layers=2, hidden_size=64)
    assert context_for(mamba, None) == (4096, "the default; the config states no limit")
    assert context_for(llama13, 100) == (100, "--context")


def test_memory_grows_with_context_and_batch(llama13):
    small, longer, wider = (
        inference(llama13, "int4", context=c, batch=b).total for c, b in ((512, 1), (1024, 1), (512, 2))
    )
    assert small < longer and small < wider


# ---- the seed note's rule and claim ------------------------------------------------------------------


@pytest.mark.parametrize("scheme, gb_per_billion", [("fp32", 4), ("fp16", 2), ("bf16", 2), ("int8", 1), ("int4", 0.5)])
def test_seed_rule_bytes_per_parameter(llama13, scheme, gb_per_billion):
    """FP32 ≈ 4 GB per billion parameters, FP16 2, INT8 1, INT4 0.5: exact when every tensor is cast."""
    w = inference(llama13, scheme).term("weights").bytes
    assert w == gb_per_billion * llama13.total
    assert w / 1e9 / (llama13.total / 1e9) == gb_per_billion


def test_real_4bit_formats_cost_more_than_half_a_byte(llama13):
    """nf4 (bf16 embeddings and head, fp32 absmax per 64) and q4_k_m (Q6_K mixed in) are above the rule."""
    half = llama13.total // 2
    for scheme in ("nf4", "q4_k_m", "gptq-int4"):
        assert half < weights(llama13, scheme).bytes < llama13.total


def test_seed_claim_13b_int4_on_a_12gb_card(llama13):
    """ "A 12 GB card (RTX 3060) runs a 13B model at INT4": true for weights at 0.5 B per parameter,
    a 4,096-token context (Llama 2's whole window) in a bf16 KV cache, batch 1 and the default
    overhead (the CUDA context and cuBLAS workspace as measured, the allocator's reserve); not at
    8 or 16 bits."""
    card = GPUS["rtx3060"]
    assert card.memory == 12 * GIB and card.usable < card.memory  # CUDA reports a little less
    plan = inference(llama13, "int4", context=4096, batch=1)
    assert plan.settings == {
        "scheme": "int4",
        "keep": "none",
        "compute_dtype": "bf16",
        "kv_dtype": "bf16",
        "kv_cache": "dynamic",
        "context": 4096,
        "context_from": "--context",
        "batch": 1,
        "overhead": "measured",
        "attn": "sdpa",
        "attn_from": "transformers' default",
    }
    assert plan.total <= card.usable
    assert inference(llama13, "int8", context=4096).total > card.usable
    assert inference(llama13, "bf16", context=4096).total > card.usable
    # the weights alone are the seed's 13B × 0.5 GB; the KV cache of 4,096 tokens is half as much again
    assert plan.term("weights").bytes == llama13.total // 2
    assert plan.term("kv_cache").bytes == 2 * 40 * 5120 * 4096 * 2


# ---- overhead ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, fixed, percent",
    [("0.5GiB+10%", GIB // 2, 10), ("1GB", 10**9, 0), ("15%", 0, 15), ("0", 0, 0), ("800MB + 2.5%", 8 * 10**8, 2.5)],
)
def test_overhead_specs(text, fixed, percent):
    o = parse(text)
    assert (o.fixed, float(o.percent)) == (fixed, percent)
    assert o.of(10**10) == fixed + int(10**10 * percent / 100)
    assert parse(o.text) == o


def test_overhead_is_adjustable(llama13):
    none = inference(llama13, "int4", overhead="0")
    assert none.term("overhead").bytes == 0
    assert inference(llama13, "int4", overhead=Overhead(GIB, 0)).total == none.total + GIB


@pytest.mark.parametrize("text", ["lots", "5 parsecs", "150%", "", "-1GB"])
def test_bad_overhead(text):
    with pytest.raises(ParamcountError, match="--overhead"):
        parse(text)


# ---- training ------------------------------------------------------------------------------------------


def test_train_is_the_model_states_the_activations_at_the_peak_and_overhead():
    """The states of ``training`` (the gradients as the peak holds them), the saved tensors of
    :mod:`paramcount.memory.training.saved`, and the measured overhead."""
    from paramcount.memory.training.saved import Step, of_step

    model = paramcount.load("meta-llama/Llama-2-7b-hf")
    plan = train(model, zero=3, gpus=8, batch=2, context=1024)
    expected = training(model, zero=3, gpus=8, batch=2, context=1024)
    assert [t.key for t in plan.terms] == [t.key for t in expected] + ["overhead"]
    act = of_step(model, Step(1024, 2, "mixed", heads=32))
    assert plan.term("activations") == act == expected[-1]  # one model: train() and training() agree
    same = [t.key for t in expected if t.key not in ("gradients", "activations")]
    assert [plan.term(k).bytes for k in same] == [next(t for t in expected if t.key == k).bytes for k in same]
    grads, opt = (next(t for t in expected if t.key == k) for k in ("gradients", "optimizer"))
    temp = opt.parts[0].bytes // 2  # torch._foreach_sqrt(exp_avg_sq): one moment
    assert plan.term("gradients").bytes == max(0, grads.bytes + temp - act.bytes) and plan.term("gradients").estimate
    weights = plan.term("weights").bytes + plan.term("master_weights").bytes
    rest = plan.total - plan.term("overhead").bytes - weights
    assert plan.term("overhead").bytes == MEASURED_TRAINING.split(weights, rest)
    assert plan.to_dict()["settings"]["zero"] == 3


def test_qlora_trains_adapters_over_an_nf4_base():
    model = paramcount.load("meta-llama/Llama-2-7b-hf")
    plan = train(model, qlora=True, lora=16, context=512)
    assert plan.term("weights").bytes == weights(model, "nf4", double_quant=True).bytes
    assert plan.settings["lora"] == "rank 16 on q_proj,v_proj" and plan.settings["qlora"] == "nf4"
    assert train(model, precision="qlora", context=512).total < train(model, context=512).total


# ---- JSON -----------------------------------------------------------------------------------------------


def test_plan_json(llama13):
    data = inference(llama13, "nf4", context=2048).to_dict()
    assert data["schema"] == SCHEMA == "paramcount.memory/1"
    assert set(data) == {"schema", "model", "mode", "settings", "total", "estimated", "terms", "notes"}
    assert data["model"] == {
        "name": LLAMA13,
        "source": f"catalog:{LLAMA13}",
        "class": "LlamaForCausalLM",
        "parameters": llama13.total,
    }
    assert data["total"]["bytes"] == sum(t["bytes"] for t in data["terms"])
    term = data["terms"][0]
    assert set(term) == {"key", "label", "bytes", "gb", "gib", "formula", "assumption", "estimate", "source", "parts"}


# ---- bad input -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"context": 0}, "--context: expected an integer ≥ 1, got 0"),
        ({"batch": -2}, "--batch: expected an integer ≥ 1, got -2"),
        ({"batch": 1.5}, "--batch: expected an integer ≥ 1, got 1.5"),
        ({"scheme": "int3"}, "unknown scheme 'int3'"),
        ({"kv_dtype": "int2"}, "unknown KV-cache dtype 'int2'"),
    ],
)
def test_bad_inference_settings(llama13, kwargs, message):
    with pytest.raises(ParamcountError, match=message):
        inference(llama13, **kwargs)


# ---- the activation estimate against a real forward -------------------------------------------------


def _peak_of_live_tensors(module, ids):
    """Bytes of tensor storage alive at once during ``module(ids)``, tracked op by op."""
    torch = pytest.importorskip("torch")
    from .live_tensors import Live

    with torch.no_grad(), Live() as live:
        out = module(input_ids=ids, use_cache=False, logits_to_keep=1)  # as generate's prefill
        del out
    return live.peak


TINY = {
    "llama": dict(hidden_size=256, intermediate_size=688, num_attention_heads=4, num_key_value_heads=2),
    "qwen3": dict(hidden_size=256, intermediate_size=768, num_attention_heads=4, num_key_value_heads=2, head_dim=64),
    "mixtral": dict(
        hidden_size=256, intermediate_size=512, num_attention_heads=4, num_key_value_heads=2, num_local_experts=4
    ),
    "qwen2_moe": dict(  # routed experts and a shared expert, run one after the other
        hidden_size=256,
        moe_intermediate_size=256,
        shared_expert_intermediate_size=1024,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_experts=8,
        num_experts_per_tok=2,
    ),
}


@pytest.mark.parametrize("family", sorted(TINY))
def test_working_set_estimate_against_the_measured_peak(family):
    """Within 10% of the peak storage of live tensors in transformers' bf16 forward (SDPA)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = {"model_type": family, "num_hidden_layers": 2, "vocab_size": 1000, **TINY[family]}
    torch.manual_seed(0)
    hf = transformers.AutoConfig.for_model(**config)
    module = transformers.AutoModelForCausalLM.from_config(hf, attn_implementation="sdpa").to(torch.bfloat16).eval()
    model = paramcount.load({**config, "architectures": [type(module).__name__]})
    for batch, context in ((1, 256), (2, 512)):
        measured = _peak_of_live_tensors(module, torch.randint(0, 1000, (batch, context)))
        estimate = activations(model, context, batch, 2, "bf16").bytes
        assert 0.9 < estimate / measured < 1.1, (family, batch, context, estimate, measured)


@pytest.mark.parametrize(
    "name",
    [
        "meta-llama/Llama-3.1-8B",
        "google/gemma-2-9b",
        "deepseek-ai/DeepSeek-V3",
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
        "deepseek-ai/DeepSeek-V4-Flash-Base",
        "openai/whisper-small",
        "google-t5/t5-base",
        "google-bert/bert-base-uncased",
    ],
)
def test_a_planners_total_is_its_plans_total(name):
    """The fit searches ask ``InferencePlanner.total``, which skips the formulas: it must be
    the plan's total at every context, batch, precision and cache dtype."""
    from paramcount.memory.runtimes.transformers.plan import InferencePlanner

    model = paramcount.load(name)
    for scheme, kv in (("bf16", None), ("int4", "fp8"), ("fp32", "int8")):
        planner = InferencePlanner(model, scheme, kv)
        for context in (1, 448, 511, 4096, 100_000):
            for batch in (1, 3):
                try:
                    expected = planner.plan(context, batch).total
                except ParamcountError:  # past a learned position table: both refuse
                    with pytest.raises(ParamcountError):
                        planner.total(context, batch)
                    continue
                assert planner.total(context, batch) == expected
