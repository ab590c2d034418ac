"""The vLLM runtime's plan: weights per rank, KV pages and blocks, the claim, fit and speed bounds.

Every expected figure is worked out here by hand from the model's dimensions and vLLM's rules
(restated from its source, which the terms cite): the shards of QKVParallelLinear, the
column- and row-parallel projections and VocabParallelEmbedding; get_pp_indices; the page
sizes of FullAttentionSpec, SlidingWindowSpec and MLAAttentionSpec; get_num_blocks and the
hybrid grouping of get_kv_cache_config. The profiled activation peak and the non-torch memory
are estimates and are only held to being marked so.
"""

from __future__ import annotations

import json
import math

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.cli import main
from paramcount.memory.fit import fit
from paramcount.memory.gpus import GIB, gpu
from paramcount.memory.runtimes import planner
from paramcount.memory.vllm import VOCAB_PADDING, pp_layers


def vllm(name: str, scheme: str = "bf16", **given):
    return planner(paramcount.load(name), scheme, "vllm", **given)


def llama_rank_bytes(tp: int, *, v=128256, h=8192, inter=28672, layers=80, q=64, kv=8, d=128, bytes_=2) -> int:
    """Llama-3.1-70B's bf16 weights on one of ``tp`` ranks, by hand."""
    vocab = -(-v // VOCAB_PADDING) * VOCAB_PADDING // tp
    kv_rank = max(1, kv // tp)
    layer = (q // tp) * d * h * 2 + 2 * kv_rank * d * h + 3 * (inter // tp) * h + 2 * h
    return bytes_ * (2 * vocab * h + layers * layer + h)


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_weights_per_rank_are_the_shards_vllm_loads(tp):
    p = vllm("meta-llama/Llama-3.1-70B", tp=tp)
    assert p.stages[0].share.bytes == llama_rank_bytes(tp)
    assert p.plan(4096).term("weights").estimate is False  # every tensor's split is known


def test_fewer_kv_heads_than_ranks_are_replicated():
    # Llama-3.1-70B has 8 KV heads: at TP 16 each rank holds one, and the KV page is one head's
    p = vllm("meta-llama/Llama-3.1-70B", tp=16)
    assert p.stages[0].share.bytes == llama_rank_bytes(16)
    assert p.stages[0].pages.page == 16 * 1 * (128 + 128) * 2
    assert any("replicated 2×" in n for n in p.plan(4096).notes)


def test_the_vocabulary_is_padded_to_64_rows_before_it_is_split():
    # GPT-2's 50,257 rows become 50,304 (786 × 64): 12 heads allow TP 4
    m = paramcount.load("gpt2")
    one = planner(m, "fp32", "vllm", tp=1).stages[0].share.bytes
    plain = paramcount.memory.weights(m, "fp32").bytes
    assert one - plain == (50304 - 50257) * 768 * 4  # the tied table, stored once


def test_pipeline_stages_split_layers_as_get_pp_indices():
    # vLLM gives n // pp layers each, and the remainder one each to the stages before the last, backwards
    assert [len(r) for r in pp_layers(80, 3)] == [27, 27, 26]
    sizes = [len(r) for r in pp_layers(10, 4)]
    assert sum(sizes) == 10 and sizes == [2, 3, 3, 2]
    assert [r.start for r in pp_layers(10, 4)] == [0, 2, 5, 8]
    p = vllm("meta-llama/Llama-3.1-70B", tp=8, pp=2)
    first, last = (s.share.bytes for s in p.stages)
    per_layer = (llama_rank_bytes(8) - llama_rank_bytes(8, layers=0)) // 80
    embed = 2 * 128256 // 8 * 8192
    assert first == embed + 40 * per_layer
    assert last == embed + 40 * per_layer + 2 * 8192  # the head and the final norm
    assert [s.pages.pool for s in p.stages] == [40, 40]


def test_kv_blocks_on_a_gpu_follow_get_num_blocks():
    p = vllm("meta-llama/Llama-3.1-8B")
    page = 16 * 8 * (128 + 128) * 2  # block × KV heads × (K + V) × bf16
    assert p.stages[0].pages.page == page
    memory = 80 * GIB
    fixed = p.stages[0].share.bytes + p.peak.bytes + p.non_torch.bytes + p.graphs.bytes
    s = p.serving(memory, 32768)
    blocks = (memory * 9 // 10 - fixed) // page // 32
    assert s["kv_blocks"] == blocks
    assert s["kv_tokens"] == blocks * 16
    assert s["max_concurrency"] == blocks // (32768 // 16)


def test_mla_caches_one_latent_replicated_on_every_rank():
    one, eight = vllm("deepseek-ai/DeepSeek-V2-Lite"), vllm("deepseek-ai/DeepSeek-V2-Lite", tp=8)
    latent = 16 * (512 + 64) * 2  # block × (kv_lora_rank + qk_rope_head_dim) × bf16, no factor 2 for V
    assert one.stages[0].pages.page == eight.stages[0].pages.page == latent


def test_sliding_and_full_layers_share_a_pool_in_groups():
    # Gemma 3 1B: 26 layers, 22 sliding (window 512) and 4 full; groups of 4 layers: 6 sliding, 1 full
    p = vllm("google/gemma-3-1b-pt")
    pages = p.stages[0].pages
    assert pages.pool == 4
    assert sorted(n for _, n in pages.groups) == [1, 6]
    context, chunk = 32768, 8192
    sliding = -(-min(512 - 1 + chunk, context) // 16) + 1  # SlidingWindowSpec: window − 1 + a chunk, + 1 block
    assert pages.per_sequence(context, chunk) == 6 * sliding + context // 16
    s = p.serving(24 * GIB, context)
    # what vLLM logs: get_kv_cache_capacity's int(max_concurrency × max_model_len), the concurrency
    # being num_blocks over the blocks a request takes across the groups
    per_request = 6 * sliding + context // 16
    assert s["kv_tokens"] == int(s["kv_blocks"] / per_request * context)
    assert s["max_concurrency"] == s["kv_blocks"] // per_request


def test_fp8_kv_halves_the_pages():
    assert vllm("meta-llama/Llama-3.1-8B", kv_dtype="fp8").stages[0].pages.page == 16 * 8 * 256 * 1


def test_the_plan_fits_exactly_when_vllm_would_start_and_admit_the_load():
    p = vllm("meta-llama/Llama-3.1-8B")
    plan = p.plan(8192, 8)
    claimed = sum(t.bytes for t in plan.terms if t.key != "outside")
    assert plan.total == math.ceil(claimed / 0.9) == p.total(8192, 8)
    assert [t.key for t in plan.terms] == ["weights", "activations", "non_torch", "cuda_graphs", "kv_cache", "outside"]
    assert {t.key for t in plan.terms if t.estimate} == {"activations", "non_torch", "cuda_graphs"}
    assert [t.key for t in plan.term("outside").parts] == ["cuda_context", "free"]
    assert all(t.source for t in plan.terms)
    # the sequences' blocks and the null block the BlockPool holds back
    assert plan.term("kv_cache").bytes == (8 * (8192 // 16) + 1) * 65536 * 32


def test_decode_is_bounded_by_bandwidth_and_prefill_by_compute():
    from paramcount.compute import forward_flops
    from paramcount.memory import speed

    p, h100 = vllm("meta-llama/Llama-3.1-8B"), gpu("h100")
    d = speed.decode(p, h100, 4096, 1)
    read = p.stages[0].share.bytes + 4096 * 32 * 8 * 256 * 2
    assert d.limit == "memory"
    assert d.seconds == pytest.approx(read / 3350e9)
    f = speed.prefill(p, h100, 4096)
    assert f.seconds == pytest.approx(4096 * forward_flops(p.model, 4096).per_token_causal / 989.4e12)
    assert speed.decode(p, gpu("apple-64gb"), 4096, 1) is None


def test_moe_decode_reads_k_of_e_experts():
    p = vllm("mistralai/Mixtral-8x7B-v0.1", tp=8)
    assert p.active == pytest.approx(2 / 8)


def test_fit_names_the_fewest_gpus_the_kv_room_and_the_decode_bound(capsys):
    where = ["--runtime", "vllm", "--gpu", "h100", "--context", "32768", "--concurrency", "16"]
    code = main(["fit", "meta-llama/Llama-3.1-70B-Instruct", *where, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["mode"] == "serving"
    bf16 = out["rows"][0]
    assert bf16["precision"] == "bf16" and bf16["fits"]
    # at TP 4 the 16 sequences' KV alone (16 × 32k × 80 layers × 2 heads × 256 × 2 B = 40 GiB) and the
    # 32.9 GiB of weights leave no room under 0.9 × 80 GiB; at TP 8 they fit
    assert bf16["serving"]["tp"] == 8 and bf16["gpus"] == 8
    assert bf16["serving"]["kv_tokens"] > 16 * 32768
    assert bf16["serving"]["decode"]["bound_by"] == "memory" and bf16["serving"]["decode"]["upper_bound"]
    r = fit("meta-llama/Llama-3.1-70B-Instruct", "h100", 32768, 16, runtime="vllm", only=("bf16",), tp=4).rows[0]
    assert not r.fits and r.serving["tp"] is None


def test_fit_text_names_the_split(capsys):
    code = main(["fit", "meta-llama/Llama-3.1-8B", "--runtime", "vllm", "--gpu", "l4", "--context", "8k"])
    out = capsys.readouterr().out
    assert code == 0 and "(TP " in out and "decode tok/s" in out and "upper bound" in out


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--runtime", "vllm", "--tp", "3"], "--tp"),  # 32 heads over 3 ranks
        (["--runtime", "vllm", "--tp", "4", "--ep", "2"], "--ep"),
        (["--runtime", "vllm", "--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
        (["--runtime", "vllm", "--gpu-memory-utilization", "abc"], "--gpu-memory-utilization"),
        (["--runtime", "vllm", "--pp", "99"], "--pp"),
        (["--runtime", "vllm", "--overhead", "1GiB"], "--overhead"),
        (["--runtime", "vllm", "--dtype", "q4_k_m"], "--dtype"),
        (["--runtime", "vllm", "--kv-dtype", "int3"], "--kv-dtype"),
        (["--tp", "2"], "--tp"),  # a vLLM setting on the transformers plan
        (["--runtime", "llama.cpp", "--block-size", "32"], "--block-size"),
        (["--runtime", "vllm", "--ubatch", "256"], "--ubatch"),
    ],
)
def test_bad_settings_are_one_line(capsys, argv, field):
    code = main(["memory", "meta-llama/Llama-3.1-8B", *argv])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and field in err


@pytest.mark.parametrize(
    "name, what",
    [
        ("MiniMaxAI/MiniMax-Text-01", "only up to 0.23.0"),  # vLLM dropped MiniMaxText01ForCausalLM
        ("deepseek-ai/DeepSeek-V3.2-Exp", "'indexer'"),
        ("google-bert/bert-base-uncased", "no KV cache"),
    ],
)
def test_layouts_vllm_pages_otherwise_are_refused(capsys, name, what):
    code = main(["memory", name, "--runtime", "vllm", "--context", "512"])
    err = capsys.readouterr().err
    assert code == 2 and what in err and len(err.strip().splitlines()) == 1


def test_memory_json_carries_the_serving_settings(capsys):
    main(["memory", "meta-llama/Llama-3.1-8B", "--runtime", "vllm", "--tp", "2", "--concurrency", "4", "--json"])
    doc = json.loads(capsys.readouterr().out)
    s = doc["settings"]
    assert (s["runtime"], s["tp"], s["concurrency"], s["block_size"], s["gpu_memory_utilization"]) == (
        "vllm",
        2,
        4,
        16,
        0.9,
    )


def test_an_unknown_split_is_flagged_as_an_estimate():
    # PaliGemma's projector (`linear`) and the vision patch embedding are not projections vLLM splits
    # by a known name here: counted whole on every rank, and the weights term says it may be off
    w = vllm("google/paligemma-3b-pt-224", tp=8).plan(1024).term("weights")
    assert w.estimate and "linear" in w.assumption


def test_a_split_vllm_refuses_is_refused():
    with pytest.raises(ParamcountError, match="32 attention heads"):
        vllm("meta-llama/Llama-3.1-8B", tp=5)


def test_a_context_past_the_limit_says_how_vllm_takes_it():
    notes = vllm("meta-llama/Llama-3.1-8B").plan(200_000).notes
    assert any("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in n for n in notes)
    with pytest.raises(ParamcountError, match="learned positions"):
        planner(paramcount.load("gpt2"), "bf16", "vllm").plan(2048)


def test_memory_on_a_gpu_says_what_vllm_logs(capsys):
    argv = ["memory", "meta-llama/Llama-3.1-8B", "--runtime", "vllm", "--context", "32k", "--gpu", "h100"]
    assert main([*argv, "--width", "200"]) == 0
    out = capsys.readouterr().out
    s = vllm("meta-llama/Llama-3.1-8B").serving(80 * GIB, 32768)
    assert f"{s['kv_tokens']:,} tokens ({s['kv_blocks']:,} blocks)" in out
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu"]["serving"] == s
    assert main(["memory", "meta-llama/Llama-3.1-70B", *argv[2:], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu"]["serving"]["starts"] is False  # 131 GiB of weights


def test_cuda_graph_sizes_follow_vllm_defaults():
    from paramcount.memory.vllm import capture_sizes, options

    # vLLM logs "PIECEWISE=51 (largest=512), FULL=35 (largest=256)" for the defaults
    sizes = capture_sizes(options())
    assert len(sizes) == 51 and sizes[-1] == 512 and sizes[:5] == [1, 2, 4, 8, 16]
    assert len([s for s in sizes if s <= 256]) == 35
    assert capture_sizes(options(max_num_seqs=8)) == [1, 2, 4, 8, 16]
    assert capture_sizes(options(max_num_seqs=256, max_batched_tokens=100))[-1] == 96
    assert capture_sizes(options(enforce_eager=True)) == []


def test_cuda_graphs_come_out_of_the_claim_and_enforce_eager_drops_them():
    eager, graphs = vllm("meta-llama/Llama-3.1-8B", enforce_eager=True), vllm("meta-llama/Llama-3.1-8B")
    assert eager.graphs.bytes == 0 < graphs.graphs.bytes
    a, b = eager.serving(80 * GIB, 8192), graphs.serving(80 * GIB, 8192)
    page = 16 * 8 * 256 * 2 * 32
    assert a["kv_blocks"] - b["kv_blocks"] == pytest.approx(graphs.graphs.bytes / page, abs=1)
    assert graphs.plan(8192).term("cuda_graphs").estimate


def test_a_tiny_share_outside_the_claim_still_holds_the_cuda_context():
    p = vllm("Qwen/Qwen2.5-0.5B", utilization="0.99")
    plan = p.plan(1024)
    outside = plan.term("outside")
    claimed = plan.total - outside.bytes
    assert outside.bytes == 512 * 2**20 > math.ceil(claimed / 0.99) - claimed
    assert outside.estimate and plan.total == p.total(1024)
