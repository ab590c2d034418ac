"""vLLM 0.33.0's pages for models with Mamba-style state layers, worked out by hand.

Every expectation restates vLLM's arithmetic from the catalog config's fields, written out here
(nothing is read from paramcount.memory.runtimes.vllm.state):

- the state arrays each model's ``get_mamba_state_shape_from_config`` asks of
  ``MambaStateShapeCalculator`` (mamba_utils.py): Mamba-1 conv (K − 1, I/TP) and SSM (I/TP, S);
  Mamba-2 conv (K − 1, (I + 2·G·S)/TP), one group padded to TP, and SSM (heads/TP, head dim, S);
  short conv (L − 1, conv_dim/TP); gated DeltaNet conv (K − 1, (2·nk·dk + nv·dv)/TP) and
  recurrent (nv/TP, dv, dk); Kimi delta attention conv (K − 1, 3·heads·d/TP) and recurrent
  (heads/TP, d, d) in fp32. Conv states in the model dtype (bf16), SSM states too unless a
  config hook says otherwise (NemotronH float32; Qwen3.5 its mamba_ssm_dtype);
- ``Platform._align_hybrid_block_size``: attention block = k·⌈state / (k · a)⌉ for a page of
  ``a`` bytes a token, k = 16 (FLASH_ATTN on SM90), lcm with 64 for gated DeltaNet (FlashInfer's
  prefill checkpoints), 128 for MLA; the state page padded to block · a;
- ``_get_kv_cache_groups_uniform_page_size``: layers per group = the fewer layers of the two
  kinds, or the more where that is under 1.5 times the fewer; ``get_kv_cache_config_from_groups``:
  blocks = memory // (layers per group · page);
- ``request_memory``: the claim is ⌈0.92 × the GPU⌉ (CacheConfig.gpu_memory_utilization);
- ``MambaSpec.max_memory_usage_bytes`` in align mode (prefix caching, on by default for hybrid
  models): 2 blocks a sequence per state group, 3 for a mixer with a prefill-checkpoint block
  (MambaMixer2, gated DeltaNet on FlashInfer); an attention-free model has no prefix caching:
  1 block; ``get_kv_cache_capacity``: tokens = int(blocks / blocks per request · max_model_len).

The same figures were also compared, outside this suite, with vLLM 0.33.0's own Python (its
shape calculators, ``_align_hybrid_block_size``, grouping and ``get_max_concurrency_for_kv_cache_config``)
run on these configs with the GPU kernels stubbed: they agree.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from fractions import Fraction

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.cli import main
from paramcount.memory.core.gpus import GIB, gpu
from paramcount.memory.runtimes import planner

BF16 = 2
U = Fraction(23, 25)  # CacheConfig.gpu_memory_utilization's default (vllm/config/cache.py)


def claim(memory: int) -> int:
    return math.ceil(memory * U)  # request_memory


def fixed(p, context: int) -> int:
    return p.stages[0].share.bytes + p.peak(context).bytes + p.graphs(context).bytes


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def text(hub: str) -> dict:
    c = paramcount.load(hub).config
    return c.get("text_config", c)


# ---- the state of one layer on one rank: (elements, bytes per element) per array ----------------


def mamba1(inner: int, state: int, kernel: int, tp: int) -> list[tuple[int, int]]:
    i = inner // tp
    return [((kernel - 1) * i, BF16), (i * state, BF16)]


def mamba2(inner, groups, heads, head_dim, state, kernel, tp, ssm=BF16) -> list[tuple[int, int]]:
    if groups % tp:  # MambaMixer2 takes one group, replicated to each rank's heads
        groups = tp
    return [((kernel - 1) * (inner + 2 * groups * state) // tp, BF16), (heads // tp * head_dim * state, ssm)]


def gdn(c: dict, tp: int, ssm: int = BF16) -> list[tuple[int, int]]:
    nk, nv = c["linear_num_key_heads"], c["linear_num_value_heads"]
    dk, dv, k = c["linear_key_head_dim"], c["linear_value_head_dim"], c["linear_conv_kernel_dim"]
    return [((k - 1) * (2 * nk * dk + nv * dv) // tp, BF16), (nv // tp * dv * dk, ssm)]


def full_layers(c: dict) -> int:
    """Qwen3-Next / Qwen3.5 full-attention layers: layer_types, else every full_attention_interval-th."""
    if c.get("layer_types"):
        return c["layer_types"].count("full_attention")
    return sum((i + 1) % c["full_attention_interval"] == 0 for i in range(c["num_hidden_layers"]))


@dataclass
class Case:
    hub: str
    tp: int
    state: list[tuple[int, int]]
    per_token: int  # bytes one token takes in one attention layer's page on this rank (0: none)
    attention: int  # attention layers
    states: int  # state layers
    k: int = 16  # kernel block alignment
    blocks: int = 2  # blocks a sequence holds per state group


def jamba(tp: int) -> Case:
    c = text("ai21labs/AI21-Jamba-1.5-Mini")
    n = c["num_hidden_layers"]
    attention = sum(i % c["attn_layer_period"] == c["attn_layer_offset"] for i in range(n))
    head = c["hidden_size"] // c["num_attention_heads"]
    state = mamba1(c["mamba_expand"] * c["hidden_size"], c["mamba_d_state"], c["mamba_d_conv"], tp)
    return Case("ai21labs/AI21-Jamba-1.5-Mini", tp, state, 2 * (8 // tp) * head * BF16, attention, n - attention)


def falcon_h1(tp: int) -> Case:
    c = text("tiiuae/Falcon-H1-7B-Instruct")
    state = mamba2(
        c["mamba_d_ssm"],
        c["mamba_n_groups"],
        c["mamba_n_heads"],
        c["mamba_d_head"],
        c["mamba_d_state"],
        c["mamba_d_conv"],
        tp,
    )
    n, kv = c["num_hidden_layers"], max(1, c["num_key_value_heads"] // tp)
    return Case("tiiuae/Falcon-H1-7B-Instruct", tp, state, 2 * kv * c["head_dim"] * BF16, n, n, blocks=3)


def nemotron(tp: int) -> Case:
    c = text("nvidia/NVIDIA-Nemotron-Nano-9B-v2")
    pattern = c["hybrid_override_pattern"]
    heads, d = c["mamba_num_heads"], c["mamba_head_dim"]
    state = mamba2(heads * d, c["n_groups"], heads, d, c["ssm_state_size"], c["conv_kernel"], tp, ssm=4)  # float32
    per_token = 2 * max(1, c["num_key_value_heads"] // tp) * c["head_dim"] * BF16
    return Case(
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2", tp, state, per_token, pattern.count("*"), pattern.count("M"), blocks=3
    )


def granite(tp: int) -> Case:
    c = text("ibm-granite/granite-4.0-h-small")
    state = mamba2(
        c["mamba_expand"] * c["hidden_size"],
        c["mamba_n_groups"],
        c["mamba_n_heads"],
        c["mamba_d_head"],
        c["mamba_d_state"],
        c["mamba_d_conv"],
        tp,
    )
    head = c["hidden_size"] // c["num_attention_heads"]
    types = c["layer_types"]
    per_token = 2 * (c["num_key_value_heads"] // tp) * head * BF16
    return Case(
        "ibm-granite/granite-4.0-h-small",
        tp,
        state,
        per_token,
        types.count("attention"),
        types.count("mamba"),
        blocks=3,
    )


def lfm2(tp: int) -> Case:
    c = text("LiquidAI/LFM2-1.2B")
    attention = len(c["full_attn_idxs"])
    state = [((c["conv_L_cache"] - 1) * c["conv_dim"] // tp, BF16)]
    head = c["hidden_size"] // c["num_attention_heads"]
    per_token = 2 * (c["num_key_value_heads"] // tp) * head * BF16
    return Case("LiquidAI/LFM2-1.2B", tp, state, per_token, attention, c["num_hidden_layers"] - attention)


def qwen(hub: str, tp: int, ssm: int) -> Case:
    c = text(hub)
    full = full_layers(c)
    per_token = 2 * max(1, c["num_key_value_heads"] // tp) * c["head_dim"] * BF16
    return Case(hub, tp, gdn(c, tp, ssm), per_token, full, c["num_hidden_layers"] - full, k=64, blocks=3)


def kimi(tp: int) -> Case:
    c = text("moonshotai/Kimi-Linear-48B-A3B-Instruct")
    own = c["linear_attn_config"]
    heads, d, k = own["num_heads"], own["head_dim"], own["short_conv_kernel_size"]
    state = [((k - 1) * 3 * heads * d // tp, BF16), (heads // tp * d * d, 4)]
    per_token = (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * BF16  # the MLA latent, one head on every rank
    hub = "moonshotai/Kimi-Linear-48B-A3B-Instruct"
    return Case(hub, tp, state, per_token, len(own["full_attn_layers"]), len(own["kda_layers"]), k=128)


HYBRIDS = [
    jamba(4),
    falcon_h1(1),
    falcon_h1(2),
    nemotron(1),
    nemotron(4),
    granite(1),
    granite(4),
    lfm2(1),
    qwen("Qwen/Qwen3-Next-80B-A3B-Instruct", 4, BF16),  # no mamba_ssm_dtype hook: the model's dtype
    qwen("Qwen/Qwen3.5-27B", 1, 4),  # mamba_ssm_dtype float32
    qwen("Qwen/Qwen3.6-35B-A3B", 2, 4),  # the image+text model: its text config
    kimi(4),
]


def expected(case: Case) -> dict:
    state = sum(n * b for n, b in case.state)
    block = case.k * cdiv(state, case.k * case.per_token)
    block = max(16, 16 * cdiv(block, 16))
    low, high = sorted((case.attention, case.states))
    group = high if high < 1.5 * low else low
    return {
        "state": state,
        "block": block,
        "page": block * case.per_token,
        "group": group,
        "groups": (cdiv(case.attention, group), cdiv(case.states, group)),
    }


@pytest.mark.parametrize("case", HYBRIDS, ids=lambda c: f"{c.hub.split('/')[1]}-tp{c.tp}")
def test_hybrid_pages_blocks_and_groups_are_vllms(case):
    e = expected(case)
    p = planner(paramcount.load(case.hub), "bf16", "vllm", tp=case.tp)
    pages = p.stages[0].pages
    assert (pages.state_page, pages.block, pages.page, pages.pool) == (e["state"], e["block"], e["page"], e["group"])
    assert tuple(n for _, n in pages.groups) == e["groups"]
    assert pages.page >= pages.state_page  # the state page padded to the attention page
    context = 32768
    per_request = e["groups"][0] * cdiv(context, e["block"]) + e["groups"][1] * case.blocks
    assert pages.per_sequence(context, 8192) == per_request
    memory = 80 * GIB
    s = p.serving(memory, context)
    blocks = (claim(memory) - fixed(p, context)) // (e["group"] * e["page"])
    assert s["kv_blocks"] == blocks
    assert s["kv_tokens"] == int(blocks / per_request * context)
    assert s["max_sequences"] == blocks // per_request and s["max_concurrency"] == blocks / per_request
    assert s["starts"] == (blocks >= per_request + 1)  # the null block (80 GiB's 8% holds the CUDA context)


def test_gated_deltanet_blocks_are_multiples_of_64_as_in_vllm_0_33():
    # vLLM 0.21's _align_hybrid_block_size rounded Qwen3-Next-80B's TP 4 block to 16 tokens: 272;
    # 0.33 on SM90 also aligns it to FlashInfer's 64-token GDN checkpoints: 320
    c = text("Qwen/Qwen3-Next-80B-A3B-Instruct")
    state = sum(n * b for n, b in gdn(c, 4))
    per_token = 2 * 1 * 256 * BF16
    assert 16 * cdiv(state, 16 * per_token) == 272
    assert (
        planner(paramcount.load("Qwen/Qwen3-Next-80B-A3B-Instruct"), "bf16", "vllm", tp=4).stages[0].pages.block == 320
    )


@pytest.mark.parametrize(
    "hub, state",
    [
        (
            "state-spaces/mamba-2.8b-hf",
            lambda c: mamba1(c["expand"] * c["hidden_size"], c["state_size"], c["conv_kernel"], 1),
        ),
        (
            "mistralai/Mamba-Codestral-7B-v0.1",
            lambda c: mamba2(
                c["expand"] * c["hidden_size"],
                c["n_groups"],
                c["num_heads"],
                c["head_dim"],
                c["state_size"],
                c["conv_kernel"],
                1,
            ),
        ),
    ],
)
def test_attention_free_models_take_one_unpadded_state_block_a_sequence(hub, state):
    # no attention backend: the block size stays, the page is the state's own; no prefix caching
    # (ModelConfig.is_prefix_caching_supported: attention-free), so one block a request
    c = text(hub)
    page = sum(n * b for n, b in state(c))
    p = planner(paramcount.load(hub), "bf16", "vllm")
    pages = p.stages[0].pages
    layers = c["num_hidden_layers"]
    assert (pages.page, pages.pool, pages.block, pages.per_sequence(65536, 8192)) == (page, layers, 16, 1)
    s = p.serving(80 * GIB, 65536)
    blocks = (claim(80 * GIB) - fixed(p, 65536)) // (layers * page)
    assert (s["kv_blocks"], s["max_sequences"], s["kv_tokens"]) == (blocks, blocks, blocks * 65536)


def test_mamba_state_width_is_expand_times_hidden_whatever_the_file_says():
    # MambaConfig.__post_init__ sets intermediate_size = expand × hidden_size over the file's own
    # (transformers 5.23), and vLLM reads that config: a stale intermediate_size changes nothing
    raw = {**text("state-spaces/mamba-2.8b-hf")}
    plain = planner(paramcount.load(raw), "bf16", "vllm").stages[0].pages.page
    stale = planner(paramcount.load({**raw, "intermediate_size": 1024}), "bf16", "vllm").stages[0].pages.page
    assert plain == stale == sum(n * b for n, b in mamba1(raw["expand"] * raw["hidden_size"], 16, 4, 1))


def test_an_fp8_cache_halves_the_attention_page_not_the_state():
    # --kv-cache-dtype fp8 is the attention layers'; the state follows mamba_cache_dtype (the model's)
    c = text("Qwen/Qwen3-Next-80B-A3B-Instruct")
    state = sum(n * b for n, b in gdn(c, 4))
    p = planner(paramcount.load("Qwen/Qwen3-Next-80B-A3B-Instruct"), "bf16", "vllm", tp=4, kv_dtype="fp8")
    per_token = 2 * 1 * 256 * 1
    assert p.stages[0].pages.state_page == state
    assert p.stages[0].pages.block == 64 * cdiv(state, 64 * per_token) == 576


def test_a_larger_block_size_is_the_alignment():
    # kernel_block_alignment_size = max(16, --block-size)
    case = nemotron(1)
    state = sum(n * b for n, b in case.state)
    p = planner(paramcount.load(case.hub), "bf16", "vllm", block_size=64)
    assert p.stages[0].pages.block == 64 * cdiv(state, 64 * case.per_token)
    assert p.stages[0].pages.block % 64 == 0 and p.stages[0].pages.block != expected(case)["block"]


def test_the_plan_total_is_where_vllm_starts_with_the_null_block():
    # a model whose claim leaves the CUDA context, cuBLAS and NCCL room in the 8% outside it
    p = planner(paramcount.load("nvidia/NVIDIA-Nemotron-Nano-9B-v2"), "bf16", "vllm")
    context = 8192
    per = p.stages[0].pages.per_sequence(context, 8192)
    total = p.total(context, 1)
    s = p.serving(total, context)
    assert s["starts"] and s["kv_blocks"] == per + 1  # the sequence's blocks and the pool's null block
    bpb = p.stages[0].pages.page * p.stages[0].pages.pool
    short = math.ceil((fixed(p, context) + per * bpb) / U)  # room for the sequence, not the null block
    assert p.serving(short, context)["kv_blocks"] == per and not p.serving(short, context)["starts"]


def test_decode_reads_each_state_once():
    from paramcount.memory import speed

    p = planner(paramcount.load("LiquidAI/LFM2-1.2B"), "bf16", "vllm")
    pages = p.stages[0].pages
    d = speed.decode(p, gpu("h100"), 4096, 2)
    c = text("LiquidAI/LFM2-1.2B")
    attention = len(c["full_attn_idxs"])
    kv = 2 * (attention * 4096 * 2 * 8 * 64 * BF16 + (c["num_hidden_layers"] - attention) * 2 * c["conv_dim"] * BF16)
    assert pages.decode_bytes(2, 4096, 8192) == kv  # 4096 is a whole number of 16-token blocks
    assert f"{kv:,} B KV" in d.formula


def test_the_plan_says_which_vllm_and_gpu_its_pages_hold_for(capsys):
    argv = ["memory", "Qwen/Qwen3-Next-80B-A3B-Instruct", "--runtime", "vllm", "--tp", "4", "--json"]
    assert main([*argv, "--context", "32k"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["block_size"] == 320
    kv = next(t for t in doc["terms"] if t["key"] == "kv_cache")
    assert "_align_hybrid_block_size" in kv["source"] and "MambaSpec" in kv["source"] and not kv["estimate"]
    assert any("vLLM 0.33.0" in n and "SM90" in n for n in doc["notes"])


@pytest.mark.parametrize(
    "argv, field, words",
    [
        (["MiniMaxAI/MiniMax-Text-01"], "--runtime", "only up to 0.23.0"),
        (["ai21labs/AI21-Jamba-1.5-Mini", "--tp", "4", "--pp", "2"], "--pp", "state layers"),
        (["mistralai/Mamba-Codestral-7B-v0.1", "--tp", "16"], "--tp", "groups"),  # 8 groups over 16 ranks
        (["deepseek-ai/DeepSeek-V3.2-Exp"], "--runtime", "'indexer'"),
    ],
)
def test_what_is_not_paged_is_refused_in_one_line(capsys, argv, field, words):
    code = main(["memory", *argv, "--runtime", "vllm", "--context", "4096"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and field in err and words in err


def test_lfm2_without_conv_dim_is_refused_as_vllm_would_fail():
    c = dict(paramcount.load("LiquidAI/LFM2-1.2B").config)
    del c["conv_dim"]
    with pytest.raises(ParamcountError, match="conv_dim"):
        planner(paramcount.load(c), "bf16", "vllm")


# ---- the state mixers' weights on one rank, as vLLM 0.33.0's layers create them ---------------------


def mixer_bytes(hub: str, tp: int, layer: int, module: str) -> int:
    """paramcount's bytes of one layer's mixer (``module``) on one rank, from the vLLM plan's shares."""
    from paramcount.memory.runtimes.vllm.plan import _state_share

    p = planner(paramcount.load(hub), "bf16", "vllm", tp=tp)
    total = Fraction(0)
    for r in p.weights.rows:
        m = re.match(r".*layers\.(\d+)(?:–(\d+))?\.(.*)$", r.name)
        if m and int(m.group(1)) <= layer <= int(m.group(2) or m.group(1)) and m.group(3).startswith(module + "."):
            total += _state_share(r, p.state) * Fraction(r.bytes, r.count)
    return int(total)


def mamba1_rank(h, inner, state, kernel, dt_rank, tp, conv_bias, proj_bias, norms):
    """MambaMixer.__init__ (mamba_mixer.py): no quantisation config anywhere; A (I/TP, S) float32;
    the dt, B and C RMSNorms only with use_rms_norm (Jamba; Mamba only for Falcon-Mamba)."""
    i = inner // tp
    n = 2 * i * h + 2 * i * proj_bias  # in_proj, MergedColumnParallelLinear(h, [I, I])
    n += i * kernel + i * conv_bias  # conv1d, ColumnParallelLinear(K, I)
    n += (dt_rank + 2 * state) * i  # x_proj, RowParallelLinear(I, R + 2S)
    n += i * dt_rank + i  # dt_proj, ColumnParallelLinear(R, I, bias)
    n += i  # D
    n += h * i + h * proj_bias  # out_proj, RowParallelLinear: its bias whole
    n += (dt_rank + 2 * state) * norms  # dt, B and C RMSNorms, whole
    return BF16 * n + 4 * i * state  # A


def mamba2_rank(h, inner, groups, heads, state, kernel, tp, conv_bias, proj_bias, norm):
    """MambaMixer2.__init__ (mamba_mixer2.py): groups padded to TP when one (extra_groups_for_head_shards)."""
    g = groups if groups % tp == 0 else tp
    conv = (inner + 2 * g * state) // tp
    n = (2 * inner + 2 * g * state + heads) // tp * (h + proj_bias)  # in_proj
    n += conv * (kernel + conv_bias)  # conv1d
    n += 2 * heads // tp  # D, dt_bias
    n += (inner // tp) * norm  # Mixer2RMSNormGated
    n += h * (inner // tp) + h * proj_bias  # out_proj
    return BF16 * n + 4 * heads // tp  # A float32


def jamba_rank(c: dict, tp: int) -> int:
    h = c["hidden_size"]
    dims = (c["mamba_expand"] * h, c["mamba_d_state"], c["mamba_d_conv"], c["mamba_dt_rank"])
    return mamba1_rank(h, *dims, tp, c["mamba_conv_bias"], c["mamba_proj_bias"], True)  # use_rms_norm=True


def mamba_rank(c: dict, tp: int) -> int:
    h = c["hidden_size"]
    dims = (c["expand"] * h, c["state_size"], c["conv_kernel"], c["time_step_rank"])
    return mamba1_rank(h, *dims, tp, c["use_conv_bias"], c["use_bias"], False)  # not Falcon-Mamba: no norms


def falcon_h1_rank(c: dict, tp: int) -> int:
    # FalconH1Config's defaults: mamba_conv_bias True, mamba_proj_bias and mamba_rms_norm False
    dims = (c["mamba_d_ssm"], c["mamba_n_groups"], c["mamba_n_heads"], c["mamba_d_state"], c["mamba_d_conv"])
    return mamba2_rank(c["hidden_size"], *dims, tp, True, False, False)


def nemotron_rank(c: dict, tp: int) -> int:
    heads = c["mamba_num_heads"]
    dims = (heads * c["mamba_head_dim"], c["n_groups"], heads, c["ssm_state_size"], c["conv_kernel"])
    return mamba2_rank(c["hidden_size"], *dims, tp, c["use_conv_bias"], c["use_bias"], True)


def codestral_rank(c: dict, tp: int) -> int:
    h = c["hidden_size"]
    dims = (c["expand"] * h, c["n_groups"], c["num_heads"], c["state_size"], c["conv_kernel"])
    return mamba2_rank(h, *dims, tp, c["use_conv_bias"], c["use_bias"], True)


def lfm2_rank(c: dict, tp: int) -> int:
    # ShortConv: conv (D/TP, 1, L) without a quantisation config, in_proj (3D/TP, D), out_proj (D, D/TP)
    assert not c["conv_bias"]
    d = c["conv_dim"] // tp
    return BF16 * (d * c["conv_L_cache"] + 3 * d * c["conv_dim"] + c["conv_dim"] * d)


@pytest.mark.parametrize(
    "hub, tp, module, expected",
    [
        ("ai21labs/AI21-Jamba-1.5-Mini", 4, "mamba", jamba_rank),
        ("state-spaces/mamba-2.8b-hf", 2, "mixer", mamba_rank),
        ("tiiuae/Falcon-H1-7B-Instruct", 2, "mamba", falcon_h1_rank),  # one group, copied to both ranks
        ("tiiuae/Falcon-H1-7B-Instruct", 4, "mamba", falcon_h1_rank),
        ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", 4, "mixer", nemotron_rank),
        ("mistralai/Mamba-Codestral-7B-v0.1", 4, "mixer", codestral_rank),
        ("LiquidAI/LFM2-1.2B", 2, "conv", lfm2_rank),
    ],
)
def test_mamba_mixer_weights_per_rank_are_vllms(hub, tp, module, expected):
    assert mixer_bytes(hub, tp, 0, module) == expected(text(hub), tp)


def test_gated_deltanet_weights_per_rank_are_vllms():
    # QwenGatedDeltaNetAttention: conv1d (2·nk·dk + nv·dv)/TP × K, in_proj_qkvz (2·nk·dk + 2·nv·dv)/TP × h,
    # in_proj_ba 2·nv/TP × h, dt_bias nv/TP, A_log nv/TP float32, norm dv whole, out_proj h × nv·dv/TP
    c, tp, h = text("Qwen/Qwen3-Next-80B-A3B-Instruct"), 4, 2048
    nk, nv, dk, dv, k = 16, 32, 128, 128, 4
    assert (c["linear_num_key_heads"], c["linear_num_value_heads"], c["hidden_size"]) == (nk, nv, h)
    n = (2 * nk * dk + nv * dv) // tp * k + (2 * nk * dk + 2 * nv * dv) // tp * h + 2 * nv // tp * h
    n += nv // tp + dv + h * nv * dv // tp
    assert mixer_bytes("Qwen/Qwen3-Next-80B-A3B-Instruct", tp, 0, "linear_attn") == BF16 * n + 4 * nv // tp


def test_kimi_delta_attention_weights_per_rank_are_vllms():
    # KimiGatedDeltaNetAttention: q, k, v (P/TP × h), b (H/TP × h) and f_a (d × h, whole on every rank)
    # in in_proj_qkvgfab; f_b_proj and g_b_proj P/TP × d; g_a_proj d × h replicated; conv1d 3P/TP × K,
    # dt_bias P/TP and A_log H/TP in float32; o_norm d whole; o_proj h × P/TP
    tp, h, heads, d, k = 4, 2304, 32, 128, 4
    proj = heads * d
    n = 3 * proj // tp * h + heads // tp * h + d * h + 2 * proj // tp * d + d * h + d + h * proj // tp
    fp32 = 3 * proj // tp * k + proj // tp + heads // tp
    assert mixer_bytes("moonshotai/Kimi-Linear-48B-A3B-Instruct", tp, 1, "self_attn") == BF16 * n + 4 * fp32


def test_qwen3_5_keeps_in_proj_b_and_a_whole_under_gptq_and_awq():
    # QwenGatedDeltaNetAttention.maybe_disable_tp: Marlin needs 64 rows a rank, so on CUDA the separate
    # in_proj_b and in_proj_a stay whole under AWQ and GPTQ; bf16 splits them
    from paramcount.memory.runtimes.vllm.plan import _state_share

    for scheme, whole in (("bf16", False), ("gptq-int4", True), ("awq-int4", True)):
        p = planner(paramcount.load("Qwen/Qwen3.5-27B"), scheme, "vllm", tp=4)
        row = next(r for r in p.weights.rows if r.name.endswith("linear_attn.in_proj_b.weight"))
        assert _state_share(row, p.state) == (1 if whole else Fraction(1, 4)), scheme


def test_every_hybrid_tensor_has_a_known_split():
    for case in HYBRIDS:
        p = planner(paramcount.load(case.hub), "bf16", "vllm", tp=case.tp)
        w = p.plan(4096).term("weights")
        assert not p.stages[0].share.replicated or case.hub == "Qwen/Qwen3.6-35B-A3B", case.hub  # its vision tower
        assert "float32" in w.assumption
