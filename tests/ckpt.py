"""Helpers that write small real checkpoints for the checkpoint tests (torch + safetensors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
st = pytest.importorskip("safetensors.torch")

TINY_LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "vocab_size": 64,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 128,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
}
LINEARS = {  # tiny llama's linear layers: (out, in)
    "self_attn.q_proj": (64, 64),
    "self_attn.k_proj": (32, 64),
    "self_attn.v_proj": (32, 64),
    "self_attn.o_proj": (64, 64),
    "mlp.gate_proj": (128, 64),
    "mlp.up_proj": (128, 64),
    "mlp.down_proj": (64, 128),
}


def config_of(raw: dict[str, Any]):
    kwargs = {k: v for k, v in raw.items() if k not in ("model_type", "architectures", "torch_dtype")}
    return transformers.AutoConfig.for_model(raw["model_type"], **kwargs)


def build(raw: dict[str, Any], cls: str | None = None, dtype=None):
    """A real transformers model for a config dict (random weights, small)."""
    torch.manual_seed(0)
    model = getattr(transformers, cls or raw["architectures"][0])(config_of(raw))
    return model.to(dtype) if dtype is not None else model


def write_config(folder: Path, raw: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(raw), encoding="utf-8")


def save(path: Path, tensors: dict[str, Any], metadata: dict[str, str] | None = None) -> Path:
    """Write tensors (torch tensors, contiguous copies) as one .safetensors file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    st.save_file({k: v.contiguous().clone() for k, v in tensors.items()}, str(path), metadata or {"format": "pt"})
    return path


def state(model) -> dict[str, Any]:
    """The unique parameters of a model by name (a tied one once, under its first name)."""
    seen, out = set(), {}
    for name, p in model.named_parameters():
        if id(p) not in seen:
            seen.add(id(p))
            out[name] = p.detach()
    return out


def total(model) -> int:
    return sum(p.numel() for p in model.parameters())


def zeros(*shape: int, dtype=None):
    return torch.zeros(shape, dtype=dtype or torch.float16)


def plain_parts(raw: dict[str, Any] = TINY_LLAMA, dtype=None) -> dict[str, Any]:
    """The tensors of tiny llama that quantisers leave alone: embeddings, norms, head."""
    h, v, n = raw["hidden_size"], raw["vocab_size"], raw["num_hidden_layers"]
    out = {"model.embed_tokens.weight": zeros(v, h, dtype=dtype), "model.norm.weight": zeros(h, dtype=dtype)}
    out["lm_head.weight"] = zeros(v, h, dtype=dtype)
    for i in range(n):
        out[f"model.layers.{i}.input_layernorm.weight"] = zeros(h, dtype=dtype)
        out[f"model.layers.{i}.post_attention_layernorm.weight"] = zeros(h, dtype=dtype)
    return out


def linears(raw: dict[str, Any] = TINY_LLAMA):
    """(module prefix, out, in) for every linear layer in tiny llama's decoder layers."""
    for i in range(raw["num_hidden_layers"]):
        for name, (out, inp) in LINEARS.items():
            yield f"model.layers.{i}.{name}", out, inp
