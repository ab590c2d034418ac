"""``paramcount diff`` between a GGUF file and the transformers source it was converted from.

Each GGUF is written (tests/gguf_files.py) from the same config as the folder or config it is
compared with, named as llama.cpp's converter names it: by the specs of tests/gguf_files.py, or
by gguf-py's own tensor map (the installed package, not paramcount's copy) over what the
converter class hands it (tests/test_quant_mix_moe.py's transcriptions of conversion/*.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import paramcount
from paramcount.cli import main
from paramcount.gguf.names import name_map
from paramcount.gguf_diff import diff_any

from .ckpt import TINY_LLAMA, build, save, state, torch, write_config
from .gguf_files import llama_spec, write

gguf = pytest.importorskip("gguf")


def _tiny_llama_gguf(tmp_path, tied: bool = False):
    c = TINY_LLAMA
    spec = llama_spec(
        "tiny", c["num_hidden_layers"], c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"],
        c["intermediate_size"], c["vocab_size"], tied=tied,
    )  # fmt: skip
    return write(spec, tmp_path / ("tied.gguf" if tied else "tiny.gguf"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A model folder (config.json and model.safetensors) of the tiny Llama."""
    path = tmp_path_factory.mktemp("llama")
    save(path / "model.safetensors", state(build(TINY_LLAMA, dtype=torch.float16)))
    write_config(path, TINY_LLAMA)
    return path


def _kinds(diffs) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for d in diffs:
        out.setdefault(d.kind, set()).add(d.name)
    return out


def test_llama_file_against_its_folder_matches_every_tensor(tmp_path, folder):
    result = diff_any(paramcount.load(_tiny_llama_gguf(tmp_path)), paramcount.load(folder))
    assert result.differences == () and result.matched == 21 == len(state(build(TINY_LLAMA)))
    assert _kinds(result.conversions) == {"permuted": {f"blk.{i}.attn_{p}.weight" for i in (0, 1) for p in "qk"}}
    assert result.a_total == result.b_total


def test_cli_text_and_json_in_either_order(tmp_path, folder, capsys):
    file = _tiny_llama_gguf(tmp_path)
    assert main(["diff", str(folder), str(file), "--width", "160"]) == 0
    out = capsys.readouterr().out
    assert "21 tensors matched" in out and "no differences" in out
    assert "model.layers.*.self_attn.q_proj.weight × 2  A: (64, 64)  B: (64, 64)  (rows reordered" in out
    assert main(["diff", str(file), str(folder), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["differences"] == [] and data["matched"] == 21
    assert {(c["kind"], c["name"]) for c in data["conversions"]} == {
        ("permuted", f"blk.{i}.attn_{p}.weight") for i in (0, 1) for p in "qk"
    }
    assert "llama.cpp's converter" in data["alignment"]


def test_a_real_difference_is_still_one(tmp_path, capsys):
    """A file of 3 layers against a config of 2: the third block is only in the file, exit 1."""
    c = TINY_LLAMA
    spec = llama_spec("three", 3, c["hidden_size"], 4, 2, c["intermediate_size"], c["vocab_size"])
    file = write(spec, tmp_path / "three.gguf")
    (tmp_path / "config.json").write_text(json.dumps(TINY_LLAMA))
    assert main(["diff", str(file), str(tmp_path / "config.json"), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert {d["kind"] for d in data["differences"]} == {"missing"}
    assert {d["name"] for d in data["differences"]} == {n for n, _, _ in spec["tensors"] if n.startswith("blk.2.")}


def test_mixtral_experts_are_stacked(tmp_path):
    config = {
        **TINY_LLAMA, "model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "num_local_experts": 4,
        "num_experts_per_tok": 2, "intermediate_size": 96,
    }  # fmt: skip
    spec = llama_spec("moe", 2, 64, 4, 2, 96, 64, experts=4, used=2)
    result = diff_any(paramcount.load(write(spec, tmp_path / "moe.gguf")), paramcount.load(config))
    assert result.differences == ()
    merged = [c for c in result.conversions if c.kind == "merged"]
    assert {c.name for c in merged} == {f"blk.{i}.ffn_{p}_exps.weight" for i in (0, 1) for p in ("gate", "up", "down")}
    down = next(c for c in merged if c.name == "blk.0.ffn_down_exps.weight")
    assert (down.a, down.b, down.why) == ("(4, 64, 96)", "(4, 64, 96)", "4 experts × (64, 96) stacked")
    assert result.matched == 2 * (4 + 1 + 3 * 4 + 2) + 3  # experts counted one by one


def _converted(tmp_path, arch: str, config: dict, tensors, meta: dict) -> paramcount.Model:
    """A GGUF of what a converter class hands gguf-py, named by gguf-py's own map."""
    tmap = gguf.get_tensor_name_map(getattr(gguf.MODEL_ARCH, arch.upper()), config["num_hidden_layers"])
    rows = []
    for hf, shape in tensors:
        name = tmap.get_name(hf, try_suffixes=(".weight", ".bias"))
        assert name is not None, hf
        rows.append([name, list(shape), "F32" if len(shape) == 1 else "F16"])
    spec = {"name": arch, "arch": arch, "meta": meta, "tensors": rows, "vocab": config["vocab_size"]}
    return paramcount.load(write(spec, tmp_path / f"{arch}.gguf"))


DEEPSEEK_V2 = {
    "model_type": "deepseek_v2", "architectures": ["DeepseekV2ForCausalLM"], "vocab_size": 64, "hidden_size": 64,
    "intermediate_size": 96, "moe_intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 4, "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
    "first_k_dense_replace": 1, "kv_lora_rank": 16, "q_lora_rank": None, "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 16, "v_head_dim": 16, "tie_word_embeddings": False,
}  # fmt: skip


def test_deepseek2_kv_b_is_split_and_experts_stacked(tmp_path):
    from .test_quant_mix_moe import deepseek2

    meta = {"block_count": 2, "embedding_length": 64, "attention.head_count": 4, "attention.head_count_kv": 1}
    file = _converted(tmp_path, "deepseek2", DEEPSEEK_V2, deepseek2(DEEPSEEK_V2), meta)
    config = paramcount.load(DEEPSEEK_V2)
    result = diff_any(config, file)
    assert result.differences == () and result.matched == len(_named(config))  # kv_b_proj once, split or not
    kinds = _kinds(result.conversions)
    assert kinds["split"] == {f"model.layers.{i}.self_attn.kv_b_proj.weight" for i in (0, 1)}
    split = [c for c in result.conversions if c.kind == "split" and c.name.startswith("model.layers.0.")]
    assert sorted(c.b for c in split) == ["(4, 16, 16)", "(4, 16, 16)"]  # (H, rank, nope) and (H, v, rank)
    assert "4 heads × (nope 16 + v 16), rank 16" in split[0].why
    assert kinds["merged"] == {f"model.layers.1.mlp.experts.*.{p}_proj.weight" for p in ("gate", "up", "down")}
    assert "permuted" not in kinds  # deepseek2 is not one of LlamaModel's architectures
    assert result.a_total == result.b_total == config.total


def test_tied_model_file_has_no_output_tensor(tmp_path, capsys):
    tied = {**TINY_LLAMA, "tie_word_embeddings": True}
    file = paramcount.load(_tiny_llama_gguf(tmp_path, tied=True))
    assert diff_any(paramcount.load(tied), file).differences == ()
    untied = diff_any(paramcount.load(TINY_LLAMA), file)
    assert [(d.kind, d.name, d.a, d.b) for d in untied.differences] == [
        ("tie", "lm_head.weight", "stored", "tied to token_embd.weight")
    ]


def test_dropped_and_added_by_the_conversion(tmp_path):
    """A checkpoint that stores rotary inv_freq and an MTP layer past num_hidden_layers, against a
    file with rope_freqs: dropped and added, not differences."""
    tensors = state(build(TINY_LLAMA, dtype=torch.float16))
    tensors["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.zeros(8)
    for name, shape in [(k, v.shape) for k, v in tensors.items() if k.startswith("model.layers.1.")]:
        tensors[name.replace("layers.1.", "layers.2.")] = torch.zeros(shape, dtype=torch.float16)
    save(tmp_path / "ckpt" / "model.safetensors", tensors)
    write_config(tmp_path / "ckpt", TINY_LLAMA)
    spec = llama_spec("rope", 2, 64, 4, 2, 128, 64)
    spec["tensors"].append(["rope_freqs.weight", [8], "F32"])
    result = diff_any(paramcount.load(tmp_path / "ckpt"), paramcount.load(write(spec, tmp_path / "rope.gguf")))
    assert result.differences == ()
    kinds = _kinds(result.conversions)
    assert kinds["added"] == {"rope_freqs.weight"}
    dropped = kinds["dropped"]
    assert "model.layers.0.self_attn.rotary_emb.inv_freq" in dropped
    assert {n for n in dropped if ".layers.2." in n} == {n for n in tensors if ".layers.2." in n}
    mtp = next(c for c in result.conversions if c.kind == "dropped" and ".layers.2." in c.name)
    assert "multi-token-prediction" in mtp.why


def test_gpt2_conv1d_weights_are_transposed_and_vocab_padding_shown(tmp_path):
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 64, "n_embd": 32,
              "n_layer": 1, "n_head": 4, "n_positions": 16}  # fmt: skip
    model = paramcount.load(config)
    hf = [(n, tuple(t.shape)) for n, t in _named(model)]
    file_tensors = [
        (n, s[::-1] if n.endswith((".c_attn.weight", ".c_fc.weight", ".c_proj.weight")) else s) for n, s in hf
    ]
    file_tensors = [(n, (80, 32) if n.endswith("wte.weight") else s) for n, s in file_tensors]  # 16 rows of padding
    meta = {"block_count": 1, "embedding_length": 32, "attention.head_count": 4}
    result = diff_any(model, _converted(tmp_path, "gpt2", {**config, "num_hidden_layers": 1}, file_tensors, meta))
    assert result.differences == ()
    kinds = _kinds(result.conversions)
    assert kinds["transposed"] == {
        f"transformer.h.0.{p}.weight" for p in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
    }
    padded = next(c for c in result.conversions if c.kind == "padded")
    assert (padded.name, padded.a, padded.b) == ("transformer.wte.weight", "(64, 32)", "(80, 32)")


def _named(model):
    from paramcount.frontends.diff import items_of

    items, _ = items_of(model)
    return [(x.name, x) for x in items]


def test_name_map_agrees_with_gguf_py():
    """paramcount's copy of the tensor map (gguf-py of llama-cpp-python 0.3.36) gives what the
    installed gguf-py gives, for the checkpoint names of several families."""
    from paramcount.frontends.diff import items_of
    from paramcount.gguf_diff import converter_name

    from .test_quant_mix_moe import deepseek2

    small = {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4,
             "num_key_value_heads": 2, "vocab_size": 100}  # fmt: skip
    configs = {
        "qwen3moe": {**small, "model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], "num_experts": 4,
                     "num_experts_per_tok": 2, "moe_intermediate_size": 32},
        "gemma2": {**small, "model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"], "head_dim": 16},
        "gpt2": {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 2, "n_embd": 32, "n_head": 4,
                 "vocab_size": 100},
        "phi3": {**small, "model_type": "phi3", "architectures": ["Phi3ForCausalLM"]},
    }  # fmt: skip
    cases = {arch: [x.name for x in items_of(paramcount.load(c))[0]] for arch, c in configs.items()}
    cases["llama"] = list(state(build(TINY_LLAMA)))
    cases["deepseek2"] = [n for n, _ in deepseek2(DEEPSEEK_V2)]
    for arch, names in cases.items():
        tmap = gguf.get_tensor_name_map(getattr(gguf.MODEL_ARCH, arch.upper()), 4)
        for n in map(converter_name, names):
            n = re.sub(r"\.experts\.\d+\.", ".experts.", n)  # as the converter names a stack
            theirs = tmap.get_name(n, try_suffixes=(".weight", ".bias"))
            assert name_map(arch).gguf(n) == theirs and theirs is not None, (arch, n)


# --- files as llama.cpp's own converter wrote them ------------------------------------------------

RECORDED = json.loads((Path(__file__).parent / "fixtures" / "llamacpp_mmproj.json").read_text(encoding="utf-8"))


def _recorded_file(tmp_path, model_id: str):
    """The language model's GGUF as convert_hf_to_gguf.py wrote it for ``model_id``
    (tools/record_converter.py: names, shapes and types of every add_tensor call)."""
    text = RECORDED["models"][model_id]["text"]
    tensors = []
    for name, shape, qtype, blocks in text["tensors"]:
        numbers = [n for part in blocks.split(",") if part for n in _span(part)] if blocks else [None]
        tensors += [[name if i is None else name.format(i), shape, qtype] for i in numbers]
    count = 1 + max(int(n.split(".")[1]) for n, _, _ in tensors if n.startswith("blk."))
    spec = {"name": model_id, "arch": text["gguf_arch"], "meta": {"block_count": count}, "tensors": tensors, "vocab": 8}
    return paramcount.load(write(spec, tmp_path / "recorded.gguf"))


def _span(part: str) -> range:
    first, _, last = part.partition("-")
    return range(int(first), int(last or first) + 1)


@pytest.mark.parametrize(
    ("model_id", "kinds"),
    [
        ("Qwen/Qwen3-VL-30B-A3B-Instruct", {"dropped", "merged"}),  # 128 experts stacked a layer
        ("llava-hf/llava-1.5-7b-hf", {"dropped", "permuted"}),
        ("HuggingFaceTB/SmolVLM2-500M-Video-Instruct", {"dropped", "permuted"}),  # text_model. renamed
        # per_layer_token_embd & co. (a block entry of gguf-py's map without {bid}); each layer's
        # layer_scalar buffer written as blk.N.layer_output_scale
        ("google/gemma-4-E2B-it", {"dropped", "added"}),
        ("google/gemma-4-31B-it", {"dropped", "added"}),
    ],
)
def test_files_the_converter_wrote_match_their_catalog_config(tmp_path, model_id, kinds):
    """An image+text model's language-model file: every text tensor matched through the
    converter's renames (language_model. dropped), its towers and projector dropped (mmproj)."""
    result = diff_any(paramcount.load(model_id), _recorded_file(tmp_path, model_id))
    assert result.differences == ()
    assert {c.kind for c in result.conversions} == kinds
    dropped = [c for c in result.conversions if c.kind == "dropped"]
    assert dropped and all("--mmproj" in c.why for c in dropped)


def test_an_architecture_gguf_py_never_named_is_compared_by_name(tmp_path, capsys):
    spec = llama_spec("odd", 2, 64, 4, 2, 128, 64, arch="notanarch")
    file = write(spec, tmp_path / "odd.gguf")
    (tmp_path / "config.json").write_text(json.dumps(TINY_LLAMA))
    assert main(["diff", str(file), str(tmp_path / "config.json"), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["matched"] == 0 and "notanarch is not an architecture gguf-py names" in data["alignment"]
    assert data["conversions"] == []


def test_fused_qkv_is_merged(tmp_path):
    """convert_hf_to_gguf.py --fuse-qkv: q, k and v rows concatenated into one attn_qkv."""
    spec = llama_spec("fused", 2, 64, 4, 2, 128, 64)
    tensors = [t for t in spec["tensors"] if not t[0].endswith(("attn_q.weight", "attn_k.weight", "attn_v.weight"))]
    spec["tensors"] = tensors + [[f"blk.{i}.attn_qkv.weight", [64 + 32 + 32, 64], "F16"] for i in (0, 1)]
    result = diff_any(paramcount.load(TINY_LLAMA), paramcount.load(write(spec, tmp_path / "fused.gguf")))
    assert result.differences == () and result.matched == 21
    merged = [c for c in result.conversions if c.kind == "merged"]
    assert [(c.name, c.a, c.b) for c in merged] == [
        (f"model.layers.{i}.self_attn.q_proj.weight", "(128, 64)", "(128, 64)") for i in (0, 1)
    ]
    assert merged[0].why.startswith("attn_q, attn_k and attn_v concatenated")


def test_a_checkpoints_fused_qkv_split_in_the_file(tmp_path):
    """A Phi-3 checkpoint (qkv_proj and gate_up_proj fused) against a file with q, k and v apart:
    split; its gate_up_proj stays one ffn_up, as gguf-py maps it for phi3."""
    tensors = state(build(TINY_LLAMA, dtype=torch.float16))
    for i in (0, 1):
        p = f"model.layers.{i}."
        qkv = [tensors.pop(f"{p}self_attn.{x}_proj.weight") for x in "qkv"]
        gate_up = [tensors.pop(f"{p}mlp.{x}_proj.weight") for x in ("gate", "up")]
        tensors[f"{p}self_attn.qkv_proj.weight"] = torch.cat(qkv)
        tensors[f"{p}mlp.gate_up_proj.weight"] = torch.cat(gate_up)
    save(tmp_path / "ckpt" / "model.safetensors", tensors)
    write_config(tmp_path / "ckpt", {**TINY_LLAMA, "model_type": "phi3", "architectures": ["Phi3ForCausalLM"]})
    spec = llama_spec("apart", 2, 64, 4, 2, 128, 64, arch="phi3")
    spec["tensors"] = [
        [n, [256, 64] if n.endswith("ffn_up.weight") else s, t] for n, s, t in spec["tensors"] if "ffn_gate" not in n
    ]
    result = diff_any(paramcount.load(write(spec, tmp_path / "apart.gguf")), paramcount.load(tmp_path / "ckpt"))
    assert result.differences == () and result.matched == 2 * 6 + 3
    split = [c for c in result.conversions if c.kind == "split"]
    assert {c.name for c in split} == {f"blk.{i}.attn_{x}.weight" for i in (0, 1) for x in "qkv"}
    assert {(c.a, c.b) for c in split if c.name == "blk.0.attn_k.weight"} == {("(32, 64)", "(32, 64)")}
