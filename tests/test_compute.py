"""FLOP counts against torch's FlopCounterMode on tiny CPU models, and the known 6·N·D figures."""

from __future__ import annotations

import pytest

from paramcount import load
from paramcount.errors import ParamcountError
from paramcount.frontends.config import from_config
from paramcount.memory.flops import chinchilla_tokens, forward_flops, matmul_params, train_time, training_flops

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

transformers.logging.set_verbosity_error()

TINY = {
    "llama-gqa": {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 64,
        "intermediate_size": 160,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 101,
    },
    "gpt2-conv1d-tied": {
        "model_type": "gpt2",
        "architectures": ["GPT2LMHeadModel"],
        "n_embd": 48,
        "n_layer": 2,
        "n_head": 4,
        "vocab_size": 97,
        "n_positions": 64,
    },
    "bert": {
        "model_type": "bert",
        "architectures": ["BertForMaskedLM"],
        "hidden_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 96,
        "vocab_size": 99,
        "max_position_embeddings": 64,
    },
    "albert-shared-layers": {
        "model_type": "albert",
        "architectures": ["AlbertForMaskedLM"],
        "hidden_size": 48,
        "embedding_size": 16,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "intermediate_size": 96,
        "vocab_size": 99,
        "max_position_embeddings": 64,
    },
    "t5-encoder-decoder": {
        "model_type": "t5",
        "architectures": ["T5ForConditionalGeneration"],
        "d_model": 32,
        "d_kv": 8,
        "d_ff": 64,
        "num_layers": 2,
        "num_heads": 4,
        "vocab_size": 100,
    },
    "qwen3-moe-router-experts": {
        "model_type": "qwen3_moe",
        "architectures": ["Qwen3MoeForCausalLM"],
        "hidden_size": 64,
        "intermediate_size": 128,
        "moe_intermediate_size": 32,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "vocab_size": 100,
    },
}


def counted(raw: dict, context: int, batch: int) -> int:
    """FLOPs torch counts for one forward pass; eager attention and experts, so every matmul shows."""
    config = transformers.AutoConfig.for_model(raw["model_type"], **{k: v for k, v in raw.items() if k != "model_type"})
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"
    torch.manual_seed(0)
    module = getattr(transformers, raw["architectures"][0])(config).eval()
    ids = torch.randint(0, 90, (batch, context))
    extra = {"decoder_input_ids": ids} if raw["model_type"] == "t5" else {}
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        module(input_ids=ids, **extra)
    return counter.get_total_flops()


@pytest.mark.parametrize("name", TINY)
def test_forward_flops_equal_torchs_count(name):
    """2·N_matmul·tokens + 4·T·d_attn·tokens, to the FLOP."""
    raw = TINY[name]
    assert forward_flops(from_config(raw, name), 16, 2).total == counted(raw, 16, 2)


def test_gpt3_matmuls_and_kaplans_approximation():
    """GPT-3: 12·L·h² in the layers plus the tied V×h head; Kaplan's attention term is half the dense one."""
    model = load("openai/gpt-3-175b")
    L, h, V, T = 96, 12288, 50257, 2048
    assert matmul_params(model) == 12 * L * h * h + V * h
    f = forward_flops(model, T)
    assert f.attention == 2 * (f.kaplan - 2 * f.non_embedding) == 4 * L * T * h
    assert f.attention_causal == 2 * L * (T + 1) * h
    assert 3 * f.per_token == 6 * matmul_params(model) + 12 * L * h * T  # PaLM App. B / nanoGPT: 6N + 12LHQT


def test_gpt3_training_compute_is_3_14e23():
    """Brown et al. 2020 (Table D.1): GPT-3 175B, 300B tokens, 3.14e23 FLOPs, i.e. 6·N·D."""
    t = training_flops(load("openai/gpt-3-175b"), 300 * 10**9)
    assert f"{t.flops:.3g}" == "3.14e+23"
    approx = t.approximations
    assert set(approx) == {"6·N·D (N total)", "6·N·D (N non-embedding)"}
    total, error = approx["6·N·D (N total)"]
    assert total == t.flops and error == pytest.approx(total / t.exact - 1)
    assert -0.05 < error < 0  # attention over 2,048 tokens adds a few percent to 6·N
    assert t.exact_causal < t.exact


def test_moe_compute_uses_the_active_parameters():
    model = load("mistralai/Mixtral-8x7B-v0.1")
    t = training_flops(model, 10**12)
    assert t.flops == 6 * model.active_total * 10**12
    assert t.forward.matmul_params < model.active_total  # norms and embeddings are not multiplied


def test_chinchilla_tokens_are_20_per_parameter():
    model = load("meta-llama/Llama-2-70b-hf")
    assert chinchilla_tokens(model) == 20 * model.total
    assert f"{chinchilla_tokens(model):.2g}" == "1.4e+12"  # Chinchilla's 70B on 1.4T tokens


def test_train_time():
    seconds = train_time(3.14e23, 312e12, utilisation=0.5, gpus=1024)
    assert seconds == pytest.approx(3.14e23 / (312e12 * 0.5 * 1024))
    assert train_time(1e18, 1e15) == pytest.approx(1e18 / 0.4e15)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: train_time(0, 1e15), "flops must be a positive number"),
        (lambda: train_time(1e18, float("inf")), "peak_flops must be a positive number"),
        (lambda: train_time(1e18, 1e15, utilisation=1.5), r"utilisation must be in \(0, 1\]"),
        (lambda: train_time(1e18, 1e15, gpus=0), "gpus must be a whole number"),
        (lambda: forward_flops(load("gpt2"), 0), "context must be a whole number"),
        (lambda: training_flops(load("gpt2"), -5), "tokens must be a whole number"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ParamcountError, match=message):
        call()


@pytest.mark.parametrize(
    "name, reason",
    [
        ("deepseek-ai/DeepSeek-V3", "MLA"),
        ("deepseek-ai/DeepSeek-V3.2-Exp", "indexer"),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", "state updates"),
        ("deepseek-ai/DeepSeek-V4-Flash-Base", "compressed attention"),
        ("google/gemma-2-9b", "sliding-window"),
    ],
)
def test_attention_the_dense_term_misdescribes_is_an_estimate(name, reason):
    """MLA, sparse indexers, sliding windows, compressed attention and recurrent mixers do not
    compute 4·T·d_attn per token and layer: every figure holding that term says estimate, the
    JSON says attention_exact false, and a note says why; the matmul figures stay exact."""
    from paramcount.compute_report import report

    r = report(name)
    doc = r.to_dict()
    assert doc["attention_exact"] is False
    assert any(reason in note for note in doc["notes"])
    marked = {f["key"]: f["estimate"] for f in doc["figures"]}
    assert marked["forward.attention"] and marked["forward.per_token"] and marked["training.exact"]
    assert not marked["forward.dense"] and not marked["n.total"]


def test_plain_full_attention_keeps_exact_figures():
    from paramcount.compute_report import report

    doc = report("meta-llama/Llama-3.1-8B").to_dict()
    assert doc["attention_exact"] is True
    assert not any(f["estimate"] for f in doc["figures"] if f["key"].startswith(("forward.", "training.")))
