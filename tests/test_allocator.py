"""What the transformers runtime's plans add for PyTorch's caching allocator and the card's
driver, term by term: each term as its docstring states it, computed here from the plan's own
other terms (the figures it was checked against are in tests/test_gpu_measured.py)."""

import math

import pytest

import paramcount
from paramcount import memory
from paramcount.memory import fit
from paramcount.memory.core.gpus import CUDA_TOTAL, GPUS, KEPT_BACK
from paramcount.memory.training.saved import vocab


def _part(plan, key):
    return next((p for p in plan.term("overhead").parts if p.key == key), None)


def _moments(plan) -> int:
    return sum(p.bytes for p in plan.term("optimizer").parts if p.key == "optimizer.moments")


def test_mixed_on_one_gpu_is_autocast_fp32_weights_and_gradients():
    model = paramcount.load("Qwen/Qwen3-0.6B")
    n = model.total
    plan = memory.train(model, precision="mixed", context=1024, batch=2)
    keys = [t.key for t in plan.terms]
    assert "master_weights" not in keys and plan.term("weights").bytes == 4 * n
    assert _moments(plan) == 8 * n
    zero = memory.train(model, precision="mixed", context=1024, batch=2, zero=1, gpus=2)
    assert "master_weights" in [t.key for t in zero.terms]  # ZeRO keeps 16-bit weights and an fp32 master


@pytest.mark.parametrize(
    ("model_id", "context", "batch", "blocks"),
    [  # what the allocator replayed reserved anew in the second step (tests/test_alloc_trace.py)
        ("meta-llama/Llama-3.2-3B", 4096, 2, 3),
        ("Qwen/Qwen3-0.6B", 4096, 2, 1),
        ("Qwen/Qwen2.5-0.5B", 4096, 4, 0),  # 2 GB of states fit in the 5 GB logits block
        ("Qwen/Qwen2.5-0.5B", 2048, 1, 2),  # tools/replay_sweep.py: 8.25 GB = 5.75 + 2 x 1.25
        ("meta-llama/Llama-3.2-1B", 2048, 2, 3),
    ],
)
def test_checkpointing_holds_the_first_steps_larger_phase_and_the_loss_blocks_again(model_id, context, batch, blocks):
    model = paramcount.load(model_id)
    plan = memory.train(model, precision="bf16", context=context, batch=batch, recompute="full")
    rows = context * batch * vocab(paramcount.memory.tree.widths.shape_model(model))
    weights, act, moments = plan.term("weights").bytes, plan.term("activations").bytes, _moments(plan)
    backward = weights + act + 2 * rows  # the bf16 logits' block, cached
    step = weights + weights + moments + moments // 2  # bf16 gradients, states, _foreach_sqrt's
    peak = sum(t.bytes for t in plan.terms if t.key != "overhead")
    assert _part(plan, "overhead.again").bytes == max(0, max(backward, step) + blocks * 4 * rows - peak)
    reserve = _part(plan, "overhead.reserve").bytes
    assert reserve == paramcount.memory.core.overhead.MEASURED_TRAINING.reserve(max(backward, step) - weights)
    assert _part(plan, "overhead.logits") is None and _part(plan, "overhead.step") is None
    assert _part(memory.train(model, precision="bf16", context=context, batch=batch), "overhead.again") is None


def test_checkpointed_lora_plans_the_loss_blocks_its_states_split():
    model = paramcount.load("meta-llama/Llama-3.2-3B")  # a few adapter states split no loss block
    plan = memory.train(model, precision="bf16", context=4096, batch=2, recompute="full", lora=16)
    part = _part(plan, "overhead.again")
    assert (part.bytes if part else 0) == 0


def test_checkpointing_holds_the_logits_block_less_the_states_it_took():
    model = paramcount.load("meta-llama/Llama-3.2-3B")
    logits = 2 * 4096 * 2 * vocab(paramcount.memory.tree.widths.shape_model(model))
    lora = memory.train(model, precision="bf16", context=4096, batch=2, recompute="full", lora=16)
    assert _part(lora, "overhead.logits").bytes == logits  # the adapters' states take none of it
    full = memory.train(model, precision="bf16", context=4096, batch=2, recompute="full")
    assert _part(full, "overhead.logits") is None  # in the backward's phase (overhead.again)
    assert _part(memory.train(model, precision="bf16", context=4096, batch=2), "overhead.logits") is None


def test_a_peak_at_the_optimizer_step_keeps_half_the_activations_cached():
    step = memory.train(paramcount.load("allenai/OLMoE-1B-7B-0924"), precision="bf16", context=1024)
    assert step.term("gradients").bytes > 0  # the step outgrows the activations
    assert _part(step, "overhead.step").bytes == step.term("activations").bytes // 2
    backward = memory.train(paramcount.load("Qwen/Qwen3-0.6B"), precision="bf16", context=2048, batch=4)
    assert backward.term("gradients").bytes == 0 and _part(backward, "overhead.step") is None


def test_an_optimizer_step_whose_states_fit_no_activation_block_holds_them_cached():
    """Qwen2.5 1.5B in mixed precision at 2,048 × 1: an fp32 MLP weight's state (8,960 × 1,536 × 4 B)
    is larger than a bf16 MLP activation (2,048 × 8,960 × 2 B), so the first optimizer step reserves
    anew beside half the activations' cached blocks, though the backward's activations outweigh its
    gradients and temporaries (the replay: 7.4 GB cached beyond the step's tensors); at 2,048 × 2
    the states fit in the activations' blocks and nothing is added."""
    model = paramcount.load("Qwen/Qwen2.5-1.5B")
    plan = memory.train(model, precision="mixed", context=2048, batch=1)
    act, moments = plan.term("activations").bytes, _moments(plan)
    outgrown = moments // 2 + moments // 2 - act  # fp32 gradients and _foreach_sqrt's temporaries
    assert plan.term("gradients").bytes == 0 and outgrown < 0
    assert _part(plan, "overhead.step").bytes == min(act // 2, outgrown + act // 2) > 0
    assert _part(memory.train(model, precision="mixed", context=2048, batch=2), "overhead.step") is None


def test_states_that_fit_no_activation_block_split_the_loss_blocks_allocated_again():
    """Gemma 3 1B in mixed precision at 2,048 × 1: its 8 GB of fp32 states fit in no bf16 MLP
    activation's block (6,912 × 1,152 × 4 B against 2,048 × 6,912 × 2 B) and take the logits' and
    the three loss blocks, which the next step allocates anew (the replay: 6.44 GB); that phase is
    the larger one. Qwen2.5 1.5B's first optimizer step holds more than its three loss blocks."""
    gemma = memory.train(paramcount.load("google/gemma-3-1b-pt"), precision="mixed", context=2048)
    block = 4 * 2048 * 262144
    assert _part(gemma, "overhead.again").bytes == 3 * block and _part(gemma, "overhead.step") is None
    qwen = memory.train(paramcount.load("Qwen/Qwen2.5-1.5B"), precision="mixed", context=2048)
    assert _part(qwen, "overhead.again") is None and _part(qwen, "overhead.step").bytes > 3 * 4 * 2048 * 151936


@pytest.mark.parametrize(
    ("scheme", "attn", "blocks"),
    [("bf16", "eager", 3), ("fp16", "eager", 0), ("bf16", "sdpa", 0), ("fp32", "eager", 0)],
)
def test_eager_bf16_attention_keeps_three_score_blocks_cached(scheme, attn, blocks):
    model = paramcount.load("meta-llama/Llama-3.2-1B")  # 32 query heads
    plan = memory.inference(model, scheme, context=8192, batch=1, attn=attn)
    part = _part(plan, "overhead.again")
    assert (part.bytes if part else 0) == blocks * 2 * 32 * 8192 * 8192


def test_the_math_kernels_blocks_leave_the_reserves_share():
    """sdpa in fp32 with grouped heads (the math kernel): its 9·B·H·T² bytes a call leave the 30%
    share, and one bool block (B·H·T²) is held beyond the peak instead."""
    model = paramcount.load("Qwen/Qwen2.5-0.5B")  # 14 query heads, 2 key/value heads
    plan = memory.inference(model, "fp32", context=8192, batch=1)
    unit = 14 * 8192 * 8192
    assert _part(plan, "overhead.again").bytes == unit
    rest = plan.term("kv_cache").bytes + plan.term("activations").bytes - (9 * unit + 6 * 8192 * 8192)
    assert _part(plan, "overhead.reserve").bytes == 64 * 2**20 + rest * 30 // 100
    assert _part(memory.inference(model, "bf16", context=8192, batch=1), "overhead.again") is None  # flash


def test_eager_attentions_softmax_blocks_hold_the_optimizer_steps_tensors():
    """GPT-J runs eager (its class has no sdpa path): at 2,048 tokens a layer's fp32 softmax
    (4·16·2,048² B) is at least an MLP weight's bf16 state (16,384 × 4,096 × 2 B), so the step
    reuses the freed blocks and none stays cached beside it; at 512 tokens it is not."""
    model = paramcount.load("EleutherAI/gpt-j-6b")
    assert memory.inference(model, "bf16", context=512).settings["attn"] == "eager"
    long = memory.train(model, precision="bf16", context=2048)
    assert long.term("gradients").bytes > 0 and _part(long, "overhead.step") is None
    short = memory.train(model, precision="bf16", context=512)
    assert _part(short, "overhead.step").bytes == short.term("activations").bytes // 2


def test_checkpointed_eager_attention_keeps_one_calls_blocks_cached():
    """GPT-Neo runs eager: under checkpointing one call's T×T blocks (bf16: 10·B·H·T²) stay cached
    at the loss's peak where an fp32 softmax (4·B·H·T²) is smaller than a loss block (4·N·V)."""
    model = paramcount.load("EleutherAI/gpt-neo-1.3B")  # 16 heads, V = 50,257
    lora = memory.train(model, precision="bf16", context=2048, recompute="full", lora=16)
    assert _part(lora, "overhead.scores").bytes == 10 * 16 * 2048 * 2048
    assert (
        _part(memory.train(model, precision="bf16", context=2048, lora=16, recompute="none"), "overhead.scores") is None
    )
    sdpa = memory.train(paramcount.load("microsoft/phi-2"), precision="bf16", context=2048, recompute="full", lora=16)
    assert _part(sdpa, "overhead.scores") is None


def test_usable_memory_is_what_cuda_reports():
    assert GPUS["h100"].usable == CUDA_TOTAL["h100"] == 85_017_493_504
    assert GPUS["h200"].usable == 150_109_880_320
    for key in ("rtx3060", "a100-80gb", "l4"):
        g = GPUS[key]
        assert g.usable == g.memory - math.ceil(g.memory * KEPT_BACK) < g.memory
    assert GPUS["apple-16gb"].usable == 16 * 2**30 * 2 // 3  # macOS' own share, unchanged


def test_fits_only_within_what_cuda_reports():
    """A plan between the H100's reported total and its stated 80 GiB does not fit."""
    model, card = paramcount.load("meta-llama/Llama-3.1-8B"), GPUS["h100"]
    total = lambda c: memory.inference(model, "bf16", context=c, batch=4).total  # noqa: E731
    context = next(c for c in range(8192, 65537, 128) if card.usable < total(c))
    assert total(context) <= card.memory
    assert not fit(model, "h100", context=context, batch=4, only=("bf16",)).row("bf16").fits
    assert fit(model, "h100", context=context - 128, batch=4, only=("bf16",)).row("bf16").fits
