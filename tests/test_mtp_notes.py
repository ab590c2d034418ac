"""The count's notes on multi-token-prediction layers: what each published checkpoint holds, as
a figure written here from the config's shapes and held to published totals.

* DeepSeek-V3: ``model.layers.61`` is a MoE decoder layer with ``eh_proj``, ``enorm``,
  ``hnorm``, ``shared_head.norm`` and its own ``embed_tokens`` and ``shared_head.head``
  (model.safetensors.index.json; vLLM's and SGLang's DeepSeekMTP loaders read all of them).
  A public listing of DeepSeek-R1's 163 safetensors files (DeepSeek-V3's shapes) counts
  684,531,386,000 values: the model, that layer, the routers' 59 correction biases and the FP8
  block scales (one float per 128 × 128 block of each FP8 weight), to the unit; the card says
  "685B, which includes 671B of the Main Model weights and 14B of the MTP Module weights".
* GLM-4.5 and GLM-4.5-Air hold the copies too, GLM-4.6 does not (vllm-project/vllm#27597);
  GLM-5 does not (vllm-project/vllm-ascend#6754: its guide copies them in before serving MTP).
"""

from __future__ import annotations

import re

import paramcount

FP8_BLOCK = 128


def _figures(note: str) -> list[int]:
    return [int(x.replace(",", "")) for x in re.findall(r"\d{1,3}(?:,\d{3})+", note)]


def _mtp_note(model) -> str:
    return next(n for n in model.notes if "multi-token-prediction" in n)


def _deepseek_v3_shapes(c: dict) -> dict[str, list[tuple[int, ...]]]:
    """One MoE layer's weights (FP8 in the checkpoint) and its other tensors, from the config."""
    h, a = c["hidden_size"], c["num_attention_heads"]
    nope, rope, v, r, ql = (c[k] for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank",
                                           "q_lora_rank"))  # fmt: skip
    e, inter = c["n_routed_experts"], c["moe_intermediate_size"]
    attention = [(ql, h), (a * (nope + rope), ql), (r + rope, h), (a * (nope + v), r), (h, a * v)]
    expert = [(inter, h), (inter, h), (h, inter)]
    return {
        "attention": attention,
        "experts": expert * (e + c["n_shared_experts"]),
        "other": [(e, h), (ql,), (r,), (h,), (h,)],  # router, q_a/kv_a norms, two layer norms
    }


def _params(shapes) -> int:
    total = 0
    for s in shapes:
        n = 1
        for d in s:
            n *= d
        total += n
    return total


def _scales(shapes) -> int:
    return sum(-(-s[0] // FP8_BLOCK) * -(-s[1] // FP8_BLOCK) for s in shapes)


def test_deepseek_v3_mtp_layer_holds_its_own_embedding_and_head():
    m = paramcount.load("deepseek-ai/DeepSeek-V3")
    c = m.config
    h, vocab = c["hidden_size"], c["vocab_size"]
    layer = _deepseek_v3_shapes(c)
    moe_layer = _params(layer["attention"] + layer["experts"] + layer["other"])
    mtp = moe_layer + 2 * h * h + 3 * h + 2 * vocab * h  # eh_proj, enorm/hnorm/shared_head.norm, the copies
    note = _mtp_note(m)
    assert _figures(note)[0] == mtp == 13_463_426_048
    assert "own copies of the embedding and output head" in note and "sharing" not in note
    # the checkpoint's values: FP8 weights (attention, MLPs) carry scales; the router and norms do not
    dense = [(c["intermediate_size"], h)] * 2 + [(h, c["intermediate_size"])]
    k, n = c["first_k_dense_replace"], c["num_hidden_layers"]
    fp8 = k * _scales(layer["attention"] + dense) + (n - k + 1) * _scales(layer["attention"] + layer["experts"])
    biases = (n - k + 1) * c["n_routed_experts"]
    assert m.total + mtp + biases + fp8 == 684_531_386_000
    assert round((m.total + mtp + biases + fp8) / 1e9) == 685 and round(m.total / 1e9) == 671


def test_glm45_note_gives_both_checkpoints_figures():
    """GLM-4.5-Air: the layer alone (GLM-4.6's layout) and with its copies (GLM-4.5-Air's own),
    which the published Q8_0 file of GLM-4.5-Air matches (tests/test_quant_mix_moe.py)."""
    from paramcount.memory.weights.schemes import weights

    m = paramcount.load("zai-org/GLM-4.5-Air")
    h, vocab = m.config["hidden_size"], m.config["vocab_size"]
    note = _mtp_note(m)
    alone, in_all = _figures(note)[0], int(re.search(r"([\d,]+) in all", note)[1].replace(",", ""))
    assert in_all == alone + 2 * vocab * h and "GLM-4.6" in note
    file_extra = weights(m, "q8_0").parameters - m.total - 46 * m.config["n_routed_experts"]  # 45 + 1 biases
    assert file_extra == in_all


def test_glm5_mtp_layer_shares_the_embedding_and_head():
    m = paramcount.load("zai-org/GLM-5")
    note = _mtp_note(m)
    assert "holds no copy of the embedding or output head" in note
    from paramcount.memory.weights.schemes import weights

    w = weights(m, "q8_0")  # the converted file: the MTP layer without copies, exactly
    assert not w.term().estimate
    assert not [r for r in w.rows if re.search(r"\.78\.(embed_tokens|shared_head\.head)\.", r.name)]
    biases = (m.config["num_hidden_layers"] + 1 - m.config["first_k_dense_replace"]) * m.config["n_routed_experts"]
    assert w.parameters - m.total == _figures(note)[0] + biases
