"""safetensors checkpoints written from small real models count exactly, from headers alone."""

import json
import shutil

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.frontends.checkpoint import CheckpointModel, load_path
from paramcount.frontends.safetensors import read_header

from .ckpt import TINY_LLAMA, build, save, st, state, torch, total, write_config


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    """An untied tiny llama saved by transformers (config.json + model.safetensors, float16)."""
    folder = tmp_path_factory.mktemp("llama")
    model = build(TINY_LLAMA, dtype=torch.float16)
    model.save_pretrained(folder)
    return folder, model


@pytest.fixture(scope="module")
def tied_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tied")
    model = build({**TINY_LLAMA, "tie_word_embeddings": True}, dtype=torch.bfloat16)
    model.save_pretrained(folder)
    return folder, model


def test_folder_counts_exactly_with_config_breakdown(llama_folder):
    folder, model = llama_folder
    m = paramcount.load(folder)
    assert isinstance(m, CheckpointModel)
    assert m.total == total(model) == paramcount.load(TINY_LLAMA).total
    assert m.components() == paramcount.load(TINY_LLAMA).components()
    assert m.class_name == "LlamaForCausalLM" and m.backbone_class == "LlamaModel"
    ck = m.checkpoint
    assert ck.by_dtype() == {"F16": (len(state(model)), total(model), 2 * total(model))}
    assert ck.file_bytes == (folder / "model.safetensors").stat().st_size
    assert ck.header_bytes + ck.data_bytes == ck.file_bytes
    assert ck.differences == () and ck.against.endswith("config.json (LlamaForCausalLM)")


def test_single_file_path_uses_config_beside_it(llama_folder):
    folder, model = llama_folder
    m = load_path(folder / "model.safetensors")
    assert m.total == total(model) and m.checkpoint.against is not None


def test_parser_agrees_with_safetensors_library(llama_folder):
    folder, _ = llama_folder
    path = folder / "model.safetensors"
    ours = {t.name: (t.dtype, t.shape) for t in read_header(path).tensors}
    with st.safe_open(str(path), "pt") as f:  # the library, listing keys and shapes without data
        theirs = {k: (f.get_slice(k).get_dtype(), tuple(f.get_slice(k).get_shape())) for k in f.keys()}  # noqa: SIM118
    assert ours == theirs


def test_tied_head_is_named_from_config(tied_folder):
    folder, model = tied_folder
    m = paramcount.load(folder)
    assert m.total == total(model)
    assert m.ties() == [("lm_head.weight", "model.embed_tokens.weight", 64 * 64)]
    assert "lm_head.weight" not in {t.name for t in read_header(folder / "model.safetensors").tensors}
    assert m.checkpoint.differences == ()


def test_tied_head_without_config_may_be_tied(tied_folder, tmp_path):
    folder, model = tied_folder
    shutil.copy(folder / "model.safetensors", tmp_path / "model.safetensors")
    m = paramcount.load(tmp_path / "model.safetensors")
    assert m.total == total(model) and m.class_name == "checkpoint"
    assert any("may be tied to model.embed_tokens.weight" in note for note in m.notes)
    assert m.components()["embeddings"] == 64 * 64


def test_sharded_checkpoint_with_index(tmp_path):
    model = build(TINY_LLAMA, dtype=torch.float16)
    model.save_pretrained(tmp_path, max_shard_size="20KB")
    index = tmp_path / "model.safetensors.index.json"
    shards = sorted(tmp_path.glob("model-*.safetensors"))
    assert index.exists() and len(shards) > 2
    for source in (tmp_path, index):
        m = paramcount.load(source)
        assert m.total == total(model) and m.checkpoint.differences == ()
        assert m.checkpoint.file_bytes == sum(p.stat().st_size for p in shards)
        assert m.checkpoint.chosen == f"model.safetensors.index.json ({len(shards)} shards)"


def test_missing_shard_is_an_error(tmp_path):
    model = build(TINY_LLAMA, dtype=torch.float16)
    model.save_pretrained(tmp_path, max_shard_size="20KB")
    next(iter(sorted(tmp_path.glob("model-*.safetensors")))).unlink()
    with pytest.raises(ParamcountError, match="is missing from the folder"):
        paramcount.load(tmp_path)


def test_index_total_size_mismatch_is_noted(tmp_path):
    model = build(TINY_LLAMA, dtype=torch.float16)
    model.save_pretrained(tmp_path, max_shard_size="20KB")
    index = tmp_path / "model.safetensors.index.json"
    data = json.loads(index.read_text())
    data["metadata"]["total_size"] = 12345
    index.write_text(json.dumps(data))
    assert any("total_size 12,345" in note for note in paramcount.load(tmp_path).notes)


def test_mixed_dtypes_counted_per_dtype_and_listed_against_config(tmp_path):
    model = build(TINY_LLAMA, dtype=torch.float16)
    tensors = {k: (v.float() if "norm" in k else v) for k, v in state(model).items()}
    save(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, TINY_LLAMA)
    ck = paramcount.load(tmp_path).checkpoint
    norms = sum(v.numel() for k, v in tensors.items() if "norm" in k)
    assert ck.by_dtype()["F32"] == (5, norms, 4 * norms)
    assert ck.by_dtype()["F16"][1] == total(model) - norms
    dtype_diffs = [d for d in ck.differences if d.kind == "dtype"]
    assert len(dtype_diffs) == 5 and all((d.a, d.b) == ("F16", "F32") for d in dtype_diffs)


PYTHIA = {
    "model_type": "gpt_neox",
    "architectures": ["GPTNeoXForCausalLM"],
    "vocab_size": 96,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 16,
    "rotary_pct": 0.25,
}


def test_pythia_buffers_are_itemised_not_counted(tmp_path):
    """Pythia's published files hold each layer's causal mask, masked_bias and inv_freq."""
    model = build(PYTHIA)
    tensors = {k.replace("lm_head.", "embed_out."): v for k, v in state(model).items()}  # as published
    for i in range(2):
        tensors[f"gpt_neox.layers.{i}.attention.bias"] = torch.ones(1, 1, 16, 16, dtype=torch.bool)
        tensors[f"gpt_neox.layers.{i}.attention.masked_bias"] = torch.tensor(-1e9)
        tensors[f"gpt_neox.layers.{i}.attention.rotary_emb.inv_freq"] = torch.zeros(1)
    save(tmp_path / "model.safetensors", tensors)
    for with_config in (True, False):
        if with_config:
            write_config(tmp_path, PYTHIA)
        m = load_path(tmp_path / "model.safetensors")
        assert m.total == total(model)
        roles = sorted({e.role for e in m.checkpoint.buffers})
        assert len(m.checkpoint.buffers) == 6
        assert roles == ["attention mask buffer", "rotary inv_freq buffer"]
        assert m.checkpoint.stored_elements == total(model) + 2 * (256 + 1 + 1)
        assert not [d for d in m.checkpoint.differences if d.kind != "dtype"]


def test_gpt2_published_layout(tmp_path):
    """openai-community/gpt2's file: GPT2Model names (no ``transformer.``), a causal mask per
    layer, and a config that says GPT2LMHeadModel: counted as the base model it holds."""
    raw = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 2, "n_embd": 32, "n_head": 4}
    raw |= {"vocab_size": 100, "n_positions": 16, "bos_token_id": 0, "eos_token_id": 0}
    model = build(raw, cls="GPT2Model")
    tensors = dict(state(model)) | {f"h.{i}.attn.bias": torch.ones(1, 1, 16, 16, dtype=torch.bool) for i in range(2)}
    save(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, raw)
    m = paramcount.load(tmp_path)
    assert m.class_name == "GPT2Model" and m.total == total(model) == paramcount.load(raw, "base").total
    assert [e.tensor.name for e in m.checkpoint.buffers] == ["h.0.attn.bias", "h.1.attn.bias"]
    assert m.checkpoint.differences == ()


def test_gptj_style_buffers(tmp_path):
    tensors = {
        "transformer.wte.weight": torch.zeros(10, 4),
        "transformer.h.0.attn.q_proj.weight": torch.zeros(4, 4),
        "transformer.h.0.attn.bias": torch.ones(1, 1, 8, 8, dtype=torch.bool),
        "transformer.h.0.attn.masked_bias": torch.tensor(-1e9),
        "lm_head.weight": torch.zeros(10, 4),
        "lm_head.bias": torch.zeros(10),
    }
    m = load_path(save(tmp_path / "w.safetensors", tensors))
    assert m.total == 40 + 16 + 40 + 10
    assert {e.tensor.name for e in m.checkpoint.buffers} == {
        "transformer.h.0.attn.bias",
        "transformer.h.0.attn.masked_bias",
    }


def test_folder_with_several_sets_picks_one_and_says_so(llama_folder, tmp_path):
    folder, model = llama_folder
    shutil.copy(folder / "model.safetensors", tmp_path / "model.safetensors")
    shutil.copy(folder / "config.json", tmp_path / "config.json")
    save(tmp_path / "consolidated.safetensors", {"tok_embeddings.weight": torch.zeros(64, 64)})
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04 not a pickle anyone should load")
    m = paramcount.load(tmp_path)
    assert m.total == total(model) and m.checkpoint.chosen == "model.safetensors"
    ignored = " ".join(m.checkpoint.ignored)
    assert "consolidated.safetensors" in ignored and "pytorch_model.bin (PyTorch pickle; never unpickled)" in ignored


def test_only_pickled_weights_counts_the_config_and_says_so(tmp_path):
    write_config(tmp_path, TINY_LLAMA)
    (tmp_path / "pytorch_model.bin").write_bytes(b"never opened")
    m = paramcount.load(tmp_path)
    assert m.total == paramcount.load(TINY_LLAMA).total
    assert "never unpickled" in m.notes[-1] and "config.json alone" in m.notes[-1]


def test_moe_checkpoint_names_and_active_count(tmp_path):
    raw = {
        "model_type": "mixtral",
        "architectures": ["MixtralForCausalLM"],
        "vocab_size": 64,
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
    }
    model = build(raw)
    model.save_pretrained(tmp_path)
    m = paramcount.load(tmp_path)
    names = {t.name for t in read_header(tmp_path / "model.safetensors").tensors}
    assert "model.layers.0.block_sparse_moe.experts.3.w2.weight" in names
    assert m.total == total(model) and m.checkpoint.differences == ()
    assert m.active_total == paramcount.load(raw).active_total < m.total


def test_base_model_checkpoint_under_a_head_config(tmp_path):
    """Weights saved from LlamaModel (no ``model.`` prefix, no head) with a ForCausalLM config."""
    model = build(TINY_LLAMA, cls="LlamaModel", dtype=torch.float16)
    save(tmp_path / "model.safetensors", state(model))
    write_config(tmp_path, TINY_LLAMA)
    m = paramcount.load(tmp_path)
    assert m.class_name == "LlamaModel" and m.total == total(model)
    assert m.checkpoint.differences == ()


def test_legacy_layernorm_gamma_beta_names_align(tmp_path):
    raw = {
        "model_type": "bert",
        "architectures": ["BertModel"],
        "vocab_size": 50,
        "hidden_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 32,
        "max_position_embeddings": 20,
    }
    model = build(raw)
    tensors = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
               for k, v in state(model).items()}  # fmt: skip
    save(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, {**raw, "torch_dtype": "float32"})
    m = paramcount.load(tmp_path)
    assert m.total == total(model) and m.checkpoint.differences == ()


def test_cli_shows_checkpoint_figures(llama_folder, capsys):
    folder, model = llama_folder
    assert main([str(folder), "--width", "120"]) == 0
    out = capsys.readouterr().out
    assert f"{total(model):,}" in out
    assert "parameters by storage" in out and "every stored tensor by dtype" in out
    assert "no differences between" in out


def test_cli_json_has_checkpoint_section(llama_folder, capsys):
    folder, model = llama_folder
    assert main([str(folder), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"] == total(model)
    assert data["checkpoint"]["parameters"] == total(model)
    assert data["checkpoint"]["by_dtype"]["F16"]["elements"] == total(model)
    assert data["checkpoint"]["differences"] == []
