"""Training memory: model states against real optimizers' state after a step on a tiny CPU model,
the ZeRO paper's 16 bytes per parameter and its partitioned figures, and the activation formula
against Korthikanti et al.'s eq. 1 and Megatron-LM's implementation of it."""

from __future__ import annotations

import pytest

from paramcount import from_dims, load
from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config
from paramcount.memory.activations import activations
from paramcount.memory.lora import lora
from paramcount.memory.training import model_shapes, training

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

transformers.logging.set_verbosity_error()

# Tensors above and below bitsandbytes' 4,096-value threshold, matrices and vectors.
TINY = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 64,
    "intermediate_size": 160,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 101,
}


def terms(**kwargs) -> dict:
    return {t.key: t for t in training(from_config(TINY, "tiny"), **kwargs)}


def tiny_torch(dtype=torch.float32):
    torch.manual_seed(0)
    cfg = transformers.AutoConfig.for_model("llama", **{k: v for k, v in TINY.items() if k != "model_type"})
    return transformers.LlamaForCausalLM(cfg).to(dtype)


def step(module, make_optimizer) -> object:
    """One training step; returns the optimizer with its state allocated."""
    params = [p for p in module.parameters() if p.requires_grad]
    opt = make_optimizer(params)
    ids = torch.randint(0, 100, (2, 8))
    module(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    return opt


def state_bytes(opt) -> int:
    """Bytes of every tensor in the optimizer's state, a tensor shared by several params once."""
    seen = {}
    for state in opt.state.values():
        for value in state.values():
            if torch.is_tensor(value):
                seen[value.data_ptr()] = value.numel() * value.element_size()
    return sum(seen.values())


def adafactor(params):
    return transformers.optimization.Adafactor(params, lr=1e-3, relative_step=False)


def adam8bit(params):
    bnb = pytest.importorskip("bitsandbytes")
    return bnb.optim.Adam8bit(params, lr=1e-3)


OPTIMIZERS = {
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-3),
    "sgd": lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9),
    "adafactor": adafactor,
    "adam8bit": adam8bit,
}


def test_the_tiny_model_is_the_torch_model():
    assert model_shapes(from_config(TINY, "tiny")).params == sum(p.numel() for p in tiny_torch().parameters())


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_states_equal_the_optimizers_after_a_step(name):
    opt = step(tiny_torch(), OPTIMIZERS[name])
    assert terms(optimizer=name, precision="fp32")["optimizer"].bytes == state_bytes(opt)


@pytest.mark.parametrize("name", ["adamw", "sgd", "adafactor"])
def test_pure_bf16_states(name):
    """torch keeps AdamW and SGD states in the parameters' dtype; Adafactor upcasts to fp32."""
    opt = step(tiny_torch(torch.bfloat16), OPTIMIZERS[name])
    assert terms(optimizer=name, precision="bf16")["optimizer"].bytes == state_bytes(opt)


@pytest.mark.parametrize(("dtype", "precision"), [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_gradients_equal_the_grad_tensors(dtype, precision):
    module = tiny_torch(dtype)
    step(module, OPTIMIZERS["sgd"])
    grads = sum(p.grad.numel() * p.grad.element_size() for p in module.parameters())
    assert terms(precision=precision)["gradients"].bytes == grads
    if precision == "bf16":  # mixed precision keeps 16-bit gradients too
        assert terms(precision="mixed")["gradients"].bytes == grads


@pytest.mark.parametrize("name", ["adamw", "adafactor"])
def test_lora_states_equal_peft_training(name):
    """A peft model's trainable parameters, their gradients and optimizer state after a step."""
    peft = pytest.importorskip("peft")
    config = {"r": 4, "target_modules": "all-linear", "bias": "lora_only", "modules_to_save": ["lm_head"]}
    module = peft.get_peft_model(tiny_torch(), peft.LoraConfig(**config))
    opt = step(module, OPTIMIZERS[name])
    trainable = [p for p in module.parameters() if p.requires_grad]
    adapters = lora(from_config(TINY, "tiny"), 4, "all-linear", bias="lora_only", modules_to_save=["lm_head"])
    got = {t.key: t for t in training(adapters.model, optimizer=name, lora=adapters)}
    assert got["adapters"].bytes == sum(p.nbytes for p in trainable)  # the tiny base has no biases
    assert got["gradients"].bytes == sum(p.grad.nbytes for p in trainable)
    assert got["optimizer"].bytes == state_bytes(opt)
    assert got["weights"].bytes == 2 * adapters.model.total  # the frozen base in bf16


def test_qlora_base_is_the_weights_modules_nf4():
    from paramcount.memory.weights import weights

    model = load("meta-llama/Llama-2-7b-hf")
    got = {t.key: t for t in training(model, qlora_bits=4, lora=lora(model, 16, "all-linear"))}
    assert got["weights"].bytes == weights(model, "nf4", double_quant=True).bytes
    assert got["weights"].bytes < model.total * 0.6  # about 4.1 bits a parameter
    assert "master_weights" not in got


# ---- ZeRO: 16 bytes per parameter, and what each stage partitions -----------------------------------


def zero_model():
    """A Llama layout of 7.5B parameters, the ZeRO paper's example (Rajbhandari et al. 2019, Fig. 1)."""
    model = from_dims(
        "llama",
        "LlamaForCausalLM",
        hidden_size=4096,
        num_hidden_layers=36,
        intermediate_size=11008,
        num_attention_heads=32,
        vocab_size=26147,
    )
    assert round(model.total / 1e9, 3) == 7.5
    return model


def model_states(terms: list) -> int:
    return sum(t.bytes for t in terms if t.key != "activations")


def test_mixed_precision_adamw_is_16_bytes_a_parameter():
    model = zero_model()
    got = {t.key: t for t in training(model)}
    per_param = {"weights": 2, "gradients": 2, "master_weights": 4}
    for key, size in per_param.items():
        assert got[key].bytes == size * model.total
    moments, steps = got["optimizer"].parts
    assert moments.bytes == 8 * model.total
    assert steps.bytes == 4 * model_shapes(model).tensors  # torch's step counters, one per tensor
    assert moments.bytes + sum(got[k].bytes for k in per_param) == 16 * model.total
    assert round(model_states(list(got.values())) / 1e9) == 120  # the paper's 120 GB


@pytest.mark.parametrize(("stage", "gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_stages_reproduce_the_papers_figure_1(stage, gb):
    """7.5B parameters, K = 12, on 64 GPUs: 120 GB, 31.4 GB (P_os), 16.6 GB (P_os+g), 1.9 GB (P_os+g+p)."""
    assert round(model_states(training(zero_model(), zero=stage, gpus=64)) / 1e9, 1) == gb


def sharded(t, gpus: int) -> int:
    """A term split over ``gpus``: each part rounded up to whole bytes."""
    return sum(sharded(p, gpus) for p in t.parts) if t.parts else -(-t.bytes // gpus)


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_each_stage_divides_its_terms(stage):
    model = load("Qwen/Qwen2.5-0.5B")
    whole = {t.key: t for t in training(model)}
    split = {t.key: t.bytes for t in training(model, zero=stage, gpus=8)}
    divided = [set(), {"optimizer", "master_weights"}, {"gradients"}, {"weights"}]
    keys = set().union(*divided[: stage + 1])
    for key, t in whole.items():
        assert split[key] == (sharded(t, 8) if key in keys else t.bytes), key


# ---- activations --------------------------------------------------------------------------------------

GPT3 = {"s": 2048, "b": 1, "h": 12288, "a": 96, "L": 96, "V": 50257}


def gpt3_layers(**kwargs) -> int:
    term = activations(load("openai/gpt-3-175b"), GPT3["b"], GPT3["s"], **kwargs)
    return next(p.bytes for p in term.parts if p.key == "activations.layers")


def test_no_recomputation_is_eq_1():
    """sbhL(34 + 5as/h); for GPT-3 5as/h = 80, more than twice the 34."""
    s, b, h, a, L = (GPT3[k] for k in "sbhaL")
    assert 5 * a * s // h == 80
    assert gpt3_layers(recompute="none", flash=False) == s * b * h * L * (34 + 5 * a * s // h)


@pytest.mark.parametrize("kwargs", [{"recompute": "selective", "flash": False}, {"recompute": "none", "flash": True}])
def test_selective_recomputation_or_flash_is_34_sbh(kwargs):
    s, b, h, L = (GPT3[k] for k in "sbhL")
    assert gpt3_layers(**kwargs) == 34 * s * b * h * L


def test_full_recomputation_keeps_the_layer_inputs():
    s, b, h, L = (GPT3[k] for k in "sbhL")
    assert gpt3_layers(recompute="full") == 2 * s * b * h * L


def test_selective_total_equals_megatron_lm():
    """megatron/training/theoretical_memory_usage.py, compute_activation_memory (selective
    recomputation, sequence parallel, t = 1, one pipeline stage): per layer sbh(18 + 4·ffn/h),
    8sb token ids, an sbh embedding dropout mask, and 4sbh(1 + V/h) for the output and loss."""
    s, b, h, L, V = (GPT3[k] for k in "sbhLV")
    megatron = s * b * h * (18 + 4 * (4 * h) // h) * L + 8 * s * b + s * b * h + s * b * h * 4 + 4 * s * b * V
    got = activations(load("openai/gpt-3-175b"), b, s, recompute="selective", flash=False)
    assert got.bytes == megatron and got.estimate and "2205.05198" in got.source


def test_gqa_swiglu_adaptation():
    """Llama 3 8B (h 4096, 8 of 32 heads for K and V, SwiGLU I = 14336), per token and layer:
    attention 2(h + q + 2kv + q) + h, MLP 2(h + 2I + I + I) + h (gate, up, SiLU, product),
    two norms 2·2h; with q = kv = h and a 4h GeLU MLP it would be 34h."""
    h, q, kv, inner, s, L = 4096, 4096, 1024, 14336, 4096, 32
    per_token = 2 * (h + q + 2 * kv + q) + h + 2 * (h + 2 * inner + inner + inner) + h + 2 * 2 * h
    got = activations(load("meta-llama/Meta-Llama-3-8B"), 1, s)
    assert got.parts[0].bytes == per_token * s * L


def test_routed_experts_count_k_times():
    h, q, kv, inner, k, s, L = 4096, 4096, 1024, 14336, 2, 1024, 32
    per_token = 2 * (h + q + 2 * kv + q) + h + k * (2 * (h + 4 * inner) + h) + 2 * 2 * h
    assert activations(load("mistralai/Mixtral-8x7B-v0.1"), 1, s).parts[0].bytes == per_token * s * L


def test_albert_runs_its_shared_layer_every_time():
    model = load("albert/albert-base-v2")  # 12 layers run over one stored group
    one = activations(model, 1, 512, flash=True).parts[0]
    assert one.bytes == 12 * 512 * 34 * 768


def test_training_terms_and_estimates():
    got = training(load("Qwen/Qwen2.5-0.5B"), batch=4, context=1024, recompute="full")
    assert [t.key for t in got] == ["weights", "master_weights", "gradients", "optimizer", "activations"]
    assert [t.estimate for t in got] == [False, False, False, False, True]
    for t in got:
        assert not t.parts or sum(p.bytes for p in t.parts) == t.bytes


def test_fp32_training_has_no_master_copy():
    got = terms(precision="fp32")
    n = from_config(TINY, "tiny").total
    assert "master_weights" not in got and got["weights"].bytes == 4 * n


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"optimizer": "lion"}, "optimizer must be one of"),
        ({"precision": "fp8"}, "precision must be one of mixed, fp32, bf16"),
        ({"zero": 4}, "zero must be a ZeRO stage"),
        ({"gpus": 0}, "gpus must be a whole number"),
        ({"qlora_bits": 3}, "qlora_bits must be 4 or 8"),
        ({"recompute": "some"}, "recompute must be one of none, selective, full"),
        ({"batch": 0}, "batch must be a whole number"),
        ({"context": -1}, "context must be a whole number"),
    ],
)
def test_bad_settings(kwargs, message):
    with pytest.raises(ParamcountError, match=message):
        training(from_config(TINY, "tiny"), **kwargs)


def test_adapters_of_another_model_are_refused():
    other = lora(load("Qwen/Qwen2.5-0.5B"))
    with pytest.raises(ParamcountError, match="made for another model"):
        training(from_config(TINY, "tiny"), lora=other)


SMALL = {**TINY, "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 4, "vocab_size": 1000}


def kept_by_autograd(lora_config: dict | None = None) -> int:
    """Bytes of the tensors a backward pass keeps (saved_tensors_hooks; parameters excluded) for
    the small Llama in bf16 with SDPA, batch 2 × 256 tokens, optionally under peft adapters."""
    config = transformers.AutoConfig.for_model("llama", **{k: v for k, v in SMALL.items() if k != "model_type"})
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    module = transformers.LlamaForCausalLM(config).to(torch.bfloat16).train()
    if lora_config:
        peft = pytest.importorskip("peft")
        module = peft.get_peft_model(module, peft.LoraConfig(**lora_config))
    params, kept = {p.data_ptr() for p in module.parameters()}, {}

    def pack(t):
        if t.data_ptr() not in params:
            kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    ids = torch.randint(0, 900, (2, 256))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(input_ids=ids, labels=ids)
    return sum(kept.values())


def test_estimate_is_near_what_autograd_saves():
    """The estimate measured 0.86 of the real tensors (transformers' RMSNorm also keeps an fp32
    copy of its input, which the paper's 2-byte norm input does not count)."""
    estimate = activations(from_config(SMALL, "small"), 2, 256, flash=True).bytes
    assert 0.75 < estimate / kept_by_autograd() < 1.1


def test_lora_activations_note_is_measured():
    """The ratios training() states under LoRA: 0.86 (q_proj, v_proj) and 1.41 (all-linear)."""
    full = kept_by_autograd()
    assert round(kept_by_autograd({"r": 8, "target_modules": ["q_proj", "v_proj"]}) / full, 2) == 0.86
    assert round(kept_by_autograd({"r": 8, "target_modules": "all-linear"}) / full, 2) == 1.41
    note = training(from_config(SMALL, "small"), lora=8)[-1].assumption
    assert "0.86×" in note and "1.41×" in note
