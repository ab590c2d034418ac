"""Training memory: model states against real optimizers' state after a step on a tiny CPU model,
the ZeRO paper's 16 bytes per parameter and its partitioned figures; the activations are
paramcount.memory.training.saved's (held to a training step in tests/test_saved.py and to the H100 in
tests/test_gpu_measured.py), the same in ``training``, ``train`` and ``fit``."""

from __future__ import annotations

import pytest

from paramcount import from_dims, load
from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config
from paramcount.memory import TrainingPlanner, fit
from paramcount.memory.training.lora import lora
from paramcount.memory.training.optimizer import model_shapes, training
from paramcount.memory.training.saved import activations

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
    from paramcount.memory.weights.schemes import weights

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


# ---- activations: one model in training(), train(), fit and the web ----------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"precision": "bf16", "recompute": "full", "batch": 4},
        {"precision": "fp32", "flash": False},
        {"precision": "bf16", "lora": 16},
        {"precision": "mixed", "qlora_bits": 4, "recompute": "full"},
    ],
)
def test_training_activations_are_the_planners(kwargs):
    """training()'s activations term is the one TrainingPlanner (memory --train, fit, the web)
    plans, whatever the precision, recompute, attention and adapters."""
    model = load("Qwen/Qwen3-0.6B")
    kwargs = {"batch": 2, "context": 1024, **kwargs}
    got = training(model, **kwargs)[-1]
    bits = kwargs.pop("qlora_bits", None)
    b, t = kwargs.pop("batch"), kwargs.pop("context")
    planner = TrainingPlanner(model, kwargs.pop("precision", "mixed"), qlora=bits or False, **kwargs)
    assert got == planner.plan(t, b).term("activations")


def test_fit_reads_the_same_activations():
    model = load("Qwen/Qwen3-0.6B")
    row = fit(model, "h100", context=2048, batch=2, mode="training", only=("bf16",)).row("bf16")
    expected = activations(model, 2, 2048, precision="bf16")
    assert row.plan.term("activations") == expected


def test_public_activations_say_what_they_model():
    got = activations(load("Qwen/Qwen3-0.6B"), 2, 1024, precision="mixed")
    assert got.estimate and "modeling_llama.py" in got.source and "gpu_h100.json" in got.source
    assert {p.key for p in got.parts} >= {"activations.layers", "activations.loss", "activations.autocast"}
    assert sum(p.bytes for p in got.parts) == got.bytes


def test_albert_runs_its_shared_layer_every_time():
    model = load("albert/albert-base-v2")  # 12 layers run over one stored group
    layers = activations(model, 1, 512).parts[0]
    assert layers.key == "activations.layers" and layers.formula.startswith("12 × ")


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


def test_lora_and_qlora_checkpoint_as_their_recipes_do():
    """TRL's SFTConfig and peft's prepare_model_for_kbit_training turn gradient checkpointing on:
    QLoRA of Qwen3-8B fits a 4090 by default (issue 33), and --recompute none still plans without."""
    model = load("Qwen/Qwen3-8B")
    by_default = fit(model, "rtx4090", context=4096, mode="training", qlora=True).row("qlora")
    assert by_default.fits and by_default.plan.settings["recompute"] == "full"
    assert by_default.plan.settings["recompute_from"].startswith("TRL's SFTConfig")
    without = fit(model, "rtx4090", context=4096, mode="training", qlora=True, recompute="none").row("qlora")
    assert not without.fits and without.plan.settings["recompute_from"] == "--recompute"
    full = TrainingPlanner(model, "bf16").plan(4096, 1).settings
    assert full["recompute"] == "none" and full["recompute_from"] == "Trainer's default"
