"""The vLLM runtime's plan: weights per rank, KV pages and blocks, the claim, fit and speed bounds.

Every expected figure is worked out here by hand from the model's dimensions and vLLM 0.33.0's
rules (restated from its source, which the terms cite): the shards of QKVParallelLinear, the
column- and row-parallel projections and VocabParallelEmbedding; get_pp_indices; the page
sizes of FullAttentionSpec, SlidingWindowSpec and MLAAttentionSpec; request_memory's claim of
⌈0.92 × the GPU⌉ and the free memory it needs beside it; get_kv_cache_config_from_groups and the
hybrid grouping; get_batch_defaults for ``vllm serve``; _set_cudagraph_sizes. The profiled
activation peak, the CUDA graphs, the CUDA context, cuBLAS and NCCL are estimates and are only
held to being marked so.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.cli import main
from paramcount.memory.core.gpus import GIB, gpu
from paramcount.memory.fit import fit
from paramcount.memory.runtimes import planner
from paramcount.memory.runtimes.vllm.plan import VOCAB_PADDING, pp_layers

U = Fraction(23, 25)  # CacheConfig.gpu_memory_utilization's default, 0.92 (vllm/config/cache.py)
# EngineArgs.get_batch_defaults, `vllm serve` (OPENAI_API_SERVER) on an H100: max_num_seqs, max_num_batched_tokens
H100_SEQS, H100_TOKENS = 1024, 8192


def vllm(name: str, scheme: str = "bf16", **given):
    return planner(paramcount.load(name), scheme, "vllm", **given)


def claim(memory: int, u: Fraction = U) -> int:
    """request_memory: ⌈total × gpu_memory_utilization⌉."""
    return math.ceil(memory * u)


def fixed(p, context: int) -> int:
    """What the claim holds before the KV cache: the rank's weights, the profiled peak, the CUDA graphs."""
    return p.stages[0].share.bytes + p.peak(context).bytes + p.graphs(context).bytes


def beside(tp: int, pp: int = 1) -> int:
    """What must be free beside the claim (estimates): the CUDA context 0.5 GiB, cuBLAS 0.25 GiB and
    0.125 GiB of NCCL per peer rank."""
    return GIB // 2 + GIB // 4 + (tp - 1 + (pp > 1)) * GIB // 8


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
    s = p.serving(memory, 32768)
    blocks = (claim(memory) - fixed(p, 32768)) // page // 32
    assert s["kv_blocks"] == blocks
    assert s["kv_tokens"] == blocks * 16
    assert s["max_sequences"] == blocks // (32768 // 16) and s["max_concurrency"] == blocks / (32768 // 16)


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
    context = 32768
    # SlidingWindowSpec.max_admission_blocks_per_request: window − 1 + max_in_flight_tokens (two batches of
    # max_num_batched_tokens: async scheduling, PP + 1 concurrent batches), at most the context, + 1 block
    in_flight = 2 * H100_TOKENS
    sliding = -(-min(512 - 1 + in_flight, context) // 16) + 1
    assert p.o.in_flight(context) == in_flight
    assert pages.per_sequence(context, in_flight) == 6 * sliding + context // 16
    s = p.serving(24 * GIB, context)
    # what vLLM logs: get_kv_cache_capacity's int(max_concurrency × max_model_len), the concurrency
    # being num_blocks over the blocks a request takes across the groups
    per_request = 6 * sliding + context // 16
    assert s["kv_tokens"] == int(s["kv_blocks"] / per_request * context)
    assert s["max_sequences"] == s["kv_blocks"] // per_request


def test_fp8_kv_halves_the_pages():
    assert vllm("meta-llama/Llama-3.1-8B", kv_dtype="fp8").stages[0].pages.page == 16 * 8 * 256 * 1


def test_the_plan_fits_exactly_when_vllm_would_start_and_admit_the_load():
    p = vllm("meta-llama/Llama-3.1-8B")
    plan = p.plan(8192, 8)
    claimed = sum(t.bytes for t in plan.terms if t.key != "outside")
    # the least M with ⌈M × 0.92⌉ ≥ the claimed bytes, its 8% holding what must be free beside the claim
    least = math.floor((claimed - 1) / U) + 1
    assert claim(least) >= claimed > claim(least - 1) and least - claim(least) >= beside(1)
    assert plan.total == least == p.total(8192, 8)
    assert p.serving(least - 1, 8192)["kv_blocks"] < 8 * 512 + 1 <= p.serving(least, 8192)["kv_blocks"]
    assert [t.key for t in plan.terms] == ["weights", "activations", "cuda_graphs", "kv_cache", "outside"]
    assert {t.key for t in plan.terms if t.estimate} == {"activations", "cuda_graphs"}
    outside = plan.term("outside")
    assert [t.key for t in outside.parts] == ["cuda_context", "non_torch", "free"]
    assert outside.parts[0].bytes + outside.parts[1].bytes == beside(1) and outside.parts[1].estimate
    assert all(t.source for t in plan.terms)
    # the sequences' blocks and the null block the BlockPool holds back
    assert plan.term("kv_cache").bytes == (8 * (8192 // 16) + 1) * 65536 * 32


def test_decode_is_bounded_by_bandwidth_and_prefill_by_compute():
    from paramcount.memory import speed
    from paramcount.memory.flops import forward_flops

    p, h100 = vllm("meta-llama/Llama-3.1-8B"), gpu("h100")
    d = speed.decode(p, h100, 4096, 1)
    # every weight but the 128,256 × 4,096 bf16 input embedding, of which one row is read
    read = p.stages[0].share.bytes - 128256 * 4096 * 2 + 4096 * 2 + 4096 * 32 * 8 * 256 * 2
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
    # 32.9 GiB of weights leave no room under 0.92 × 80 GiB; at TP 8 they fit
    assert bf16["serving"]["tp"] == 8 and bf16["gpus"] == 8
    assert bf16["serving"]["kv_tokens"] > 16 * 32768
    assert bf16["serving"]["decode"]["bound_by"] == "memory" and bf16["serving"]["decode"]["upper_bound"]
    r = fit(
        paramcount.load("meta-llama/Llama-3.1-70B-Instruct"), "h100", 32768, 16, runtime="vllm", only=("bf16",), tp=4
    ).rows[0]
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
        0.92,
    )
    assert (s["max_num_seqs"], s["max_num_batched_tokens"], s["defaults_for"]) == (H100_SEQS, H100_TOKENS, None)


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
    assert main(["memory", "meta-llama/Llama-3.1-70B", *argv[2:], "--json"]) == 1  # does not fit: exit 1
    assert json.loads(capsys.readouterr().out)["gpu"]["serving"]["starts"] is False  # 131 GiB of weights


def graph_sizes(seqs: int, tokens: int) -> list[int]:
    """VllmConfig._set_cudagraph_sizes (vllm/config/vllm.py) with one token per decode request, off
    data-centre Blackwell: the ceiling min(2 × max_num_seqs, 512), cut to max_num_batched_tokens; 1, 2, 4,
    every 8 below 256, every 16 from 256; then max_num_batched_tokens if within the cut ceiling and the
    uniform decode size max_num_seqs if within the ceiling and max_num_batched_tokens."""
    ceiling = min(seqs * 2, 512)
    decode = [seqs] if seqs <= ceiling else []
    top = min(tokens, ceiling)
    sizes = [i for i in [1, 2, 4] if i <= top]
    if top >= 8:
        sizes += list(range(8, min(top + 1, 256), 8))
    if top >= 256:
        sizes += list(range(256, top + 1, 16))
    if tokens <= top and tokens not in sizes:
        sizes.append(tokens)
    sizes += [i for i in decode if i <= tokens]
    return sorted(set(sizes))


@pytest.mark.parametrize(
    "given, context",
    [
        ({}, 4096),  # an H100: 1024 sequences, 8192 tokens
        ({"gpu": "a100-80gb"}, 4096),  # 256, 2048: vLLM logs PIECEWISE=51 (largest=512), FULL=35 (largest=256)
        ({"gpu": "mi300x"}, 4096),  # 1024, 16384
        ({"max_num_seqs": 8}, 4096),
        ({"max_num_seqs": 100}, 4096),  # the decode size 100 off the 8-stride
        ({"max_num_seqs": 100, "max_batched_tokens": 100}, 4096),  # the token budget itself
        ({"max_num_seqs": 4}, 3),  # tokens capped at 4 × 3 = 12
    ],
)
def test_cuda_graph_sizes_follow_vllm_defaults(given, context):
    from paramcount.memory.runtimes.vllm.plan import capture_sizes, options

    o = options(**given)
    assert capture_sizes(o, context) == graph_sizes(o.seqs, o.tokens(context))


def test_cuda_graphs_are_piecewise_for_every_size_and_full_up_to_max_num_seqs():
    from paramcount.memory.runtimes.vllm.plan import capture_sizes, options

    a100 = options(gpu="a100-80gb")
    sizes = capture_sizes(a100, 4096)
    assert (len(sizes), sizes[-1], len([s for s in sizes if s <= a100.seqs])) == (51, 512, 35)
    assert capture_sizes(options(enforce_eager=True), 4096) == []
    p = vllm("meta-llama/Llama-3.1-8B", gpu="a100-80gb")
    per_token = p.graphs(4096).bytes // (sum(sizes) + sum(s for s in sizes if s <= 256))
    assert p.graphs(4096).bytes == (sum(sizes) + sum(s for s in sizes if s <= 256)) * per_token


def test_cuda_graphs_come_out_of_the_claim_and_enforce_eager_drops_them():
    eager, graphs = vllm("meta-llama/Llama-3.1-8B", enforce_eager=True), vllm("meta-llama/Llama-3.1-8B")
    assert eager.graphs(8192).bytes == 0 < graphs.graphs(8192).bytes
    a, b = eager.serving(80 * GIB, 8192), graphs.serving(80 * GIB, 8192)
    page = 16 * 8 * 256 * 2 * 32
    assert a["kv_blocks"] - b["kv_blocks"] == pytest.approx(graphs.graphs(8192).bytes / page, abs=1)
    assert graphs.plan(8192).term("cuda_graphs").estimate


def test_a_tiny_share_outside_the_claim_sets_the_gpu_size():
    # at 0.99 a GPU's 1% must hold the CUDA context, cuBLAS and NCCL (request_memory: the free memory at
    # vLLM's snapshot holds the claim), so a 0.5B model needs ⌈0.75 GiB / 0.01⌉ of GPU to start
    p = vllm("Qwen/Qwen2.5-0.5B", utilization="0.99")
    plan = p.plan(1024)
    outside = plan.term("outside")
    claimed = plan.total - outside.bytes
    total = math.ceil(beside(1) / Fraction(1, 100))
    assert plan.total == total == p.total(1024) and total > math.ceil(claimed / Fraction(99, 100))
    assert outside.estimate and outside.parts[-1].key == "free"
    assert p.serving(total, 1024)["starts"] and not p.serving(total - 1, 1024)["starts"]


def test_vllm_refuses_to_start_when_the_free_memory_cannot_hold_its_claim():
    # a small model on an 8 GiB GPU: 8% of it (0.64 GiB) is less than the 0.75 GiB the CUDA context,
    # cuBLAS and NCCL hold before vLLM's snapshot, so it does not start though the claim holds the KV cache
    p = vllm("Qwen/Qwen2.5-0.5B")
    s = p.serving(8 * GIB, 1024)
    assert s["kv_blocks"] > s["blocks_per_sequence"] + 1 and not s["starts"]
    assert (
        s["outside_claim_bytes"]
        == 8 * GIB - claim(8 * GIB)
        < beside(1)
        == s["cuda_context_bytes"] + s["non_torch_bytes"]
    )
    assert p.serving(10 * GIB, 1024)["starts"]
    with pytest.raises(ParamcountError, match="would not start"):
        vllm("Qwen/Qwen2.5-0.5B", utilization=1)


@pytest.mark.parametrize(
    "card, seqs, tokens",
    [
        ("h100", 1024, 8192),
        ("h200", 1024, 8192),
        ("a100-80gb", 256, 2048),  # 80 GiB, but "a100" in the name
        ("l4", 256, 2048),
        ("rtx4090", 256, 2048),
        ("mi300x", 1024, 16384),  # 192 GiB: at least 160
    ],
)
def test_batch_defaults_are_vllm_serves_for_the_gpu(card, seqs, tokens):
    # EngineArgs.get_batch_defaults, UsageContext.OPENAI_API_SERVER
    p = vllm("meta-llama/Llama-3.1-8B", gpu=card)
    s = p.plan(4096).settings
    assert (s["max_num_seqs"], s["max_num_batched_tokens"], s["defaults_for"]) == (seqs, tokens, card)
    assert p.peak(4096).formula.startswith(f"T·(4h + max(W_attn, W_ffn)/TP)·b + S·V·4·3 = {tokens:,}·")
    assert f"+ {min(seqs, tokens)}·128,256·4·3" in p.peak(4096).formula


def test_the_token_budget_defaults_to_at_most_max_num_seqs_times_the_context():
    # _set_default_max_num_seqs_and_batched_tokens_args: min(max_num_seqs × max_model_len, the default)
    p = vllm("meta-llama/Llama-3.1-8B", max_num_seqs=2)
    assert p.plan(1000).settings["max_num_batched_tokens"] == 2000
    assert p.plan(8192).settings["max_num_batched_tokens"] == H100_TOKENS
    given = vllm("meta-llama/Llama-3.1-8B", max_num_seqs=2, max_batched_tokens=512)
    assert given.plan(100).settings["max_num_batched_tokens"] == 512  # as given, not capped


def test_fewer_batched_tokens_than_sequences_is_refused_as_vllm_does(capsys):
    # SchedulerConfig.verify_max_model_len: max_num_batched_tokens ≥ max_num_seqs, both given
    argv = ["memory", "meta-llama/Llama-3.1-8B", "--runtime", "vllm", "--max-num-batched-tokens", "512"]
    code = main([*argv, "--max-num-seqs", "1024"])
    err = capsys.readouterr().err
    assert code == 2 and "--max-num-batched-tokens" in err and "1,024" in err
    # not given, max_num_seqs defaults to at most the tokens
    # (EngineArgs._set_default_max_num_seqs_and_batched_tokens_args: min(max_num_seqs, max_num_batched_tokens))
    assert vllm("meta-llama/Llama-3.1-8B", max_batched_tokens=512).o.seqs == 512
    assert vllm("meta-llama/Llama-3.1-8B", max_batched_tokens=512, gpu="l4").o.seqs == 256


@pytest.mark.parametrize("pp", [1, 2])
def test_a_sliding_window_holds_the_batches_in_flight(pp):
    # Mistral-7B-v0.1 slides every layer over 4,096 tokens. With async scheduling and Model Runner V2
    # (0.33's defaults) VllmConfig.max_concurrent_batches is PP + 1, and max_in_flight_tokens that many
    # batches of max_num_batched_tokens: window − 1 + in flight, at most the context, in blocks, + 1
    p = vllm("mistralai/Mistral-7B-v0.1", pp=pp)
    context = 32768
    in_flight = (pp + 1) * H100_TOKENS
    per = -(-min(4096 - 1 + in_flight, context) // 16) + 1
    assert p.o.in_flight(context) == in_flight
    assert [s.pages.per_sequence(context, in_flight) for s in p.stages] == [per] * pp
    assert p.plan(context).term("kv_cache").bytes == (per + 1) * 16 * 8 * 256 * 2 * (32 // pp)


def test_a_listed_gpu_is_claimed_from_its_stated_size_and_says_so(capsys):
    """vLLM claims a share of the driver's total (torch.cuda.mem_get_info), a little under a card's
    stated size: the plan says which it used, and a size given as --gpu is claimed as given."""
    p = vllm("meta-llama/Llama-3.1-8B")
    stated, reported = gpu("rtx4090").memory, gpu("23.55GiB").memory
    a, b = p.serving(stated, 8192), p.serving(reported, 8192)
    assert a["claim_of_bytes"] == stated and b["claim_of_bytes"] == reported
    assert a["kv_cache_bytes"] - b["kv_cache_bytes"] == claim(stated) - claim(reported) > 0
    assert main(["memory", "meta-llama/Llama-3.1-8B", "--runtime", "vllm", "--gpu", "rtx4090", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("stated 24.00 GiB" in n and "torch.cuda.mem_get_info" in n for n in notes)
    assert main(["memory", "meta-llama/Llama-3.1-8B", "--runtime", "vllm", "--gpu", "23.55GiB", "--json"]) == 0
    assert not any("mem_get_info" in n for n in json.loads(capsys.readouterr().out)["notes"])
