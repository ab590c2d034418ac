"""vLLM's memory plan: what ``vllm serve`` holds on each GPU, and the KV cache it gets.

Modelled on vLLM 0.33.0 (:data:`paramcount.memory.runtimes.vllm.state.VLLM_VERSION`; every function cited
is that release's). vLLM (the V1 engine, Model Runner V2) claims ⌈``gpu_memory_utilization``
(0.92) × the GPU⌉ (``request_memory``, vllm/v1/worker/utils.py) and refuses to start unless the
free memory at its snapshot holds that claim; the CUDA context, the cuBLAS handles and the NCCL
buffers are made before the snapshot, so they sit beside the claim. Out of the claim come, in
order, the weights of the GPU's rank, the activation peak of a profiling forward pass over
``max_num_batched_tokens`` tokens and the CUDA graphs' profiled estimate; all that is left becomes
the KV cache, cut into blocks of ``block_size`` tokens per layer
(``Worker.determine_available_memory``, vllm/v1/worker/gpu_worker.py;
``get_kv_cache_config_from_groups``, vllm/v1/core/kv_cache_planning.py).

``max_num_seqs`` and ``max_num_batched_tokens`` default as ``vllm serve`` sets them for the GPU
(``EngineArgs.get_batch_defaults``): 1,024 and 8,192 on an H100 or H200 (the GPU assumed when
none is named), 256 and 2,048 on an A100 or a smaller GPU, 1,024 and 16,384 from 160 GiB. The
kernels are those of the GPUs in :mod:`paramcount.memory.core.gpus` (FLASH_ATTN, 16-token blocks; at
most 512-token CUDA graphs, as on all but data-centre Blackwell).

A plan here is the memory that serves ``batch`` sequences of ``context`` tokens on one GPU of
the tightest rank: its weights, the profiled peak, the CUDA graphs, the KV blocks those
sequences need, and what must be free beside the claim. It fits a GPU exactly when vLLM starts
on it and admits that load. Given a GPU, the plan also says what vLLM would log: the KV cache
in tokens and blocks and the largest number of such sequences at once.

Layers that keep a Mamba-style state (Mamba, gated DeltaNet, short convolutions, Kimi delta
attention) are paged, and their weights split, as vLLM 0.33.0 does: :mod:`paramcount.memory.runtimes.vllm.state`.

vLLM's CPU platform (``--device cpu``: its own KV budget, block size, batch defaults and sync
scheduling over the same pages) is :mod:`paramcount.memory.runtimes.vllm.cpu`.

Exact: the KV page sizes and block counts (identities of the shapes and vLLM's arithmetic),
and the weights of one rank as vLLM shards the projections it knows. Estimated, and marked so:
the profiled activation peak, the CUDA graphs, the CUDA context, cuBLAS and NCCL.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ....arch.cache import LayerKind, Layout
from ....errors import ParamcountError, brief
from ....model import Model
from ....records import replace
from ...core.terms import GIB, Term
from .marlin import SRC_MARLIN
from .mxfp4 import SRC_MXFP4
from .quant_config import SRC_IGNORED
from .state import SRC_ALIGN, SRC_STATE, SRC_STATE_SHARD, VLLM_VERSION, StateSpec, attention_block, state_spec

# vLLM 0.33.0's defaults: vllm/config/cache.py CacheConfig (gpu_memory_utilization = 0.92,
# DEFAULT_BLOCK_SIZE = 16; the FLASH_ATTN and FLASH_ATTN_MLA backends of the GPUs planned keep 16);
# vllm/model_executor/layers/vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE.
UTILIZATION = Fraction(23, 25)
MIN_UTILIZATION = Fraction(1, 100)  # our floor, not vLLM's: a hundredth of a GPU holds no real model
BLOCK_SIZE = 16
VOCAB_PADDING = 64
KV_BYTES = {"auto": None, "fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
# EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py) for ``vllm serve``
# (UsageContext.OPENAI_API_SERVER): (max_num_seqs, max_num_batched_tokens) by the GPU's memory
# and name; the H100's when no GPU is named.
BIG_GPU = (1024, 16384)  # ≥ 160 GiB (B200, MI300X)
LARGE_GPU = (1024, 8192)  # ≥ 70 GiB and not an A100 (H100, H200)
OTHER_GPU = (256, 2048)  # A100s and smaller GPUs
DEFAULTS_GPU = "h100"
# VllmConfig._set_cudagraph_sizes: default_max_graph_size, 1024 on data-centre Blackwell (SM100),
# none of which the GPU table holds
MAX_GRAPH_SIZE = 512
# V0 (0.6) defaults: vllm/config.py SchedulerConfig (max_num_seqs 256; max_num_batched_tokens
# max(max_model_len, 2048), or 2048 with chunked prefill), vllm/engine/arg_utils.py EngineArgs
# (chunked prefill on by default past a 32K max_model_len)
V0_SEQS = 256
V0_TOKENS = 2048
V0_CHUNKED_FROM = 32 * 1024
# vllm/worker/model_runner.py (V0): _BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + 8 × (1 … 32), decode only
V0_MAX_GRAPH = 256

LATEST = "latest"


@dataclass(frozen=True)
class Accounting:
    """Where a vLLM release line books the memory made outside PyTorch and the CUDA graphs."""

    non_torch_in_claim: bool  # cuBLAS handles made after the baseline snapshot: in the budget
    graphs_in_claim: bool  # graphs profiled before the KV cache is sized: in the budget
    start_check: bool  # refuses to start unless the free memory holds the claim
    source: str
    graphs: str = "full_and_piecewise"  # which CUDA graphs it captures: "decode" (V0), "piecewise", or both
    nccl_in_claim: bool = True  # NCCL made after the baseline snapshot (the distributed init after it)


# vllm/worker/worker.py Worker.determine_num_available_blocks (V0, 0.6): init_gpu_memory is read in
# init_device before init_worker_distributed_environment, so NCCL and cuBLAS count in peak_memory
# (total × utilization − peak_memory is the KV cache; from 0.6.5 memory_profiling logs it as
# non_torch_memory); capture_model runs in _warm_up_model after _init_cache_engine, beyond the budget.
V0 = Accounting(
    True,
    False,
    False,
    "vllm/worker/worker.py Worker.init_device (init_gpu_memory before the distributed init), "
    "determine_num_available_blocks (total × utilization − peak), initialize_cache → _warm_up_model → capture_model "
    "(after the KV cache)",
    "decode",
)
# vllm/v1/worker/gpu_worker.py (0.8 to 0.10): init_device reads the baseline (0.8.5: init_gpu_memory;
# 0.10: MemorySnapshot) before init_worker_distributed_environment, and the profile run makes the cuBLAS
# handles at its first matmul, so both are in determine_available_memory's non_kv_cache_memory (0.10:
# memory_profiling's weights + torch peak + non_torch_increase); compile_or_warm_up_model captures the
# graphs after initialize_from_config has allocated the KV cache. 0.8 reads the baseline with
# mem_get_info and never compares it with the claim; 0.10's init_device refuses a GPU whose free memory
# is under the requested share ("Free memory on device ... is less than desired GPU memory utilization").
V1_EARLY = Accounting(
    True,
    False,
    False,
    "vllm/v1/worker/gpu_worker.py Worker.determine_available_memory (memory_profiling: non_kv_cache_memory = "
    "weights + torch peak + non_torch_increase), compile_or_warm_up_model (capture_model after the KV cache)",
    "piecewise",
)
V1_CHECKED = replace(V1_EARLY, start_check=True)
# 0.11 moved init_worker_distributed_environment before the snapshot in Worker.init_device ("This
# ensures NCCL buffers are allocated before we measure available memory"): NCCL sits beside the claim
# from then on; the cuBLAS handles are still made by the profile run's first matmul, after the
# snapshot, so memory_profiling counts them in the claim (non_torch_increase; by 0.27 total_consumed,
# the free memory lost since the snapshot). 0.11 also made FULL_AND_PIECEWISE the default cudagraph_mode
# (0.8 to 0.10: PIECEWISE only); 0.11 to 0.20 still capture the graphs after the KV cache.
V1_GRAPHS_BEYOND = replace(V1_CHECKED, graphs="full_and_piecewise", nccl_in_claim=False)
# 0.21 made the CUDA-graph estimate in the claim the default ("CUDA graph memory profiling is enabled
# (default since v0.21.0)", gpu_worker.py, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS); 0.21 to 0.32
# book cuBLAS and NCCL as 0.11 does.
V1_GRAPHS_IN = Accounting(
    True,
    True,
    True,
    "vllm/v1/worker/gpu_worker.py Worker.init_device (MemorySnapshot after the distributed init, no matmul "
    "before it), determine_available_memory (memory_profiling, vllm/utils/mem_utils.py: non_kv_cache_memory "
    "counts what the profile run made after the snapshot, the cuBLAS handles of its first matmul included; "
    "cudagraph_memory_estimate_applied)",
    nccl_in_claim=False,
)
# 0.33 makes the cuBLAS(Lt) handles before the snapshot (Worker.init_device: torch.mm and
# torch.nn.functional.linear on a 16 × 16 tensor, "so they count as baseline like the NCCL buffers").
V1_LATEST = Accounting(
    False,
    True,
    True,
    "vllm/v1/worker/gpu_worker.py Worker.init_device (request_memory), determine_available_memory "
    "(cudagraph_memory_estimate_applied)",
    nccl_in_claim=False,
)
VERSIONS = {
    "0.6": V0,
    "0.8": V1_EARLY,
    "0.10": V1_CHECKED,
    "0.20": V1_GRAPHS_BEYOND,
    "0.32": V1_GRAPHS_IN,
    LATEST: V1_LATEST,
}

SRC_CLAIM = (
    "vllm/v1/worker/utils.py request_memory (requested_memory = ⌈total × gpu_memory_utilization⌉); "
    "vllm/v1/worker/gpu_worker.py Worker.determine_available_memory (the KV cache: requested_memory − "
    "non_kv_cache_memory − the CUDA graphs' estimate)"
)
SRC_BLOCKS = (
    "vllm/v1/core/kv_cache_planning.py get_kv_cache_config_from_groups (available // bytes per block), "
    "_get_kv_cache_groups_uniform_page_size; vllm/v1/kv_cache_interface.py AttentionSpec.page_size_bytes, "
    "MLAAttentionSpec, SlidingWindowSpec.max_admission_blocks_per_request"
)
SRC_SHARD = (
    "vllm/model_executor/layers/linear.py ColumnParallelLinear, QKVParallelLinear (num_kv_head_replicas), "
    "RowParallelLinear; vocab_parallel_embedding.py VocabParallelEmbedding (pad_vocab_size); "
    "fused_moe/layer.py FusedMoE (determine_expert_map); distributed/utils.py get_pp_indices"
)
SRC_PROFILE = (
    "vllm/v1/worker/gpu/model_runner.py GPUModelRunner.profile_run (Model Runner V2, 0.33's default: "
    "_dummy_run over max_num_batched_tokens, _dummy_sampler_run over min(tokens, max_num_seqs) rows)"
)
SRC_PROFILE_OLD = {
    "0.6": "vllm/worker/model_runner.py GPUModelRunnerBase.profile_run (max_num_batched_tokens over max_num_seqs "
    "dummy sequences, sampled)",
    "0.8": "vllm/v1/worker/gpu_model_runner.py GPUModelRunner.profile_run (_dummy_run over max_num_tokens, "
    "_dummy_sampler_run)",
}
SRC_PROFILE_OLD["0.10"] = SRC_PROFILE_OLD["0.20"] = SRC_PROFILE_OLD["0.8"]
SRC_PROFILE_OLD["0.32"] = SRC_PROFILE_OLD["0.8"] + " (0.21's default: VLLM_USE_V2_MODEL_RUNNER off)"
SRC_NON_TORCH = (
    "vllm/v1/worker/gpu_worker.py Worker.init_device (init_worker_distributed_environment, and from 0.33 the "
    "cuBLAS handles of a 16 × 16 torch.mm and linear, come before MemorySnapshot, so NCCL and cuBLAS memory "
    "is not taken from the claim)"
)
SRC_GRAPHS = (
    "vllm/config/vllm.py VllmConfig._set_cudagraph_sizes (capture sizes); vllm/v1/worker/gpu/cudagraph_utils.py "
    "ModelCudaGraphManager._init_candidates (FULL decode graphs up to max_num_seqs tokens), "
    "profile_cudagraph_memory; gpu_worker.py Worker.determine_available_memory (cudagraph_memory_estimate_applied)"
)
SRC_UNCHECKED = (
    "vllm/worker/worker.py Worker.init_device (V0) and vllm/v1/worker/gpu_worker.py Worker.init_device (0.8): the "
    "free memory is read, never compared with the claim; what is captured after the KV cache must still fit beside it"
)
SRC_CONTEXT = (
    "vllm/v1/worker/utils.py request_memory, run from Worker.init_device: the free memory at the snapshot "
    "must hold the claim, so the CUDA context, NCCL and cuBLAS sit beside it"
)

# Projections vLLM splits across tensor-parallel ranks, by the module name a checkpoint uses.
COLUMN = frozenset(
    {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "gate_up_proj", "fc1", "c_fc", "w1", "w3"}
    | {"dense_h_to_4h", "q_b_proj", "kv_b_proj", "wq", "wk", "wv", "in_proj"}
)
ROW = frozenset({"o_proj", "down_proj", "dense", "c_proj", "fc2", "w2", "out_proj", "dense_4h_to_h", "wo"})
FUSED_QKV = frozenset({"qkv_proj", "query_key_value", "c_attn", "Wqkv", "W_pack"})
KV_PROJ = frozenset({"k_proj", "v_proj", "wk", "wv"})
REPLICATED = frozenset({"q_a_proj", "kv_a_proj_with_mqa", "gate", "router", "shared_expert_gate"})
POSITIONS = frozenset({"wpe", "position_embeddings", "embed_positions"})  # nn.Embedding in vLLM: whole
_LAYER = re.compile(r"^(?P<path>.+?)\.(?P<a>\d+)(?:–(?P<b>\d+))?\.(?P<rest>.+)$")
_PARAMS = frozenset({"weight", "bias"})


@dataclass(frozen=True)
class Options:
    """vLLM's settings a plan depends on (the names are vLLM's own flags). ``max_num_seqs`` and
    ``max_batched_tokens`` are None where not given: ``vllm serve``'s defaults for ``gpu``
    (:func:`batch_defaults`); ``gpu`` is None for no GPU named (an H100's defaults)."""

    tp: int = 1  # --tensor-parallel-size
    pp: int = 1  # --pipeline-parallel-size
    ep: int = 1  # experts spread over this many ranks (--enable-expert-parallel: EP = TP × DP)
    utilization: Fraction = UTILIZATION  # --gpu-memory-utilization
    block_size: int = BLOCK_SIZE  # --block-size
    max_num_seqs: int | None = None  # --max-num-seqs
    max_batched_tokens: int | None = None  # --max-num-batched-tokens
    kv_dtype: str = "auto"  # --kv-cache-dtype
    enforce_eager: bool = False  # --enforce-eager: no CUDA graphs
    gpu: Any = None  # the GPU served on (its memory and name pick the batch defaults)
    device: str = "gpu"  # --device cpu: vLLM's CPU platform (paramcount.memory.runtimes.vllm.cpu)
    kv_cache_space: int | None = None  # --kv-cache-space: VLLM_CPU_KVCACHE_SPACE, whole GiB
    ram: int | None = None  # --ram: the CPU's memory, which --gpu-memory-utilization claims a share of
    version: str = LATEST  # --vllm-version: the release line whose memory accounting is planned

    @property
    def accounting(self) -> Accounting:
        """What the named release takes out of its claim, and whether it checks the GPU at start."""
        return VERSIONS[self.version]

    @property
    def defaults(self) -> tuple[int, int]:
        """``vllm serve``'s (max_num_seqs, max_num_batched_tokens) for the GPU (or the CPUs)."""
        if self.device == "cpu":
            from .cpu import batch_defaults as cpu_defaults

            return cpu_defaults(self.tp * self.pp)
        return batch_defaults(self.gpu)

    @property
    def seqs(self) -> int:
        """max_num_seqs: as given, else the default at most max_num_batched_tokens
        (EngineArgs._set_default_max_num_seqs_and_batched_tokens_args); V0 (0.6) defaulted to 256."""
        if self.max_num_seqs:
            return self.max_num_seqs
        return V0_SEQS if self.version == "0.6" else min(self.defaults[0], self.max_batched_tokens or self.defaults[1])

    def tokens(self, context: int) -> int:
        """max_num_batched_tokens at --max-model-len ``context``: as given, else the GPU's default
        capped at max_num_seqs × max_model_len (EngineArgs._set_default_max_num_seqs_and_batched_tokens_args;
        chunked prefill is on for decoder models, so nothing raises it to max_model_len). V0 (0.6)
        turns chunked prefill on only past 32K tokens, and without it takes max(max_model_len, 2,048)."""
        if self.max_batched_tokens:
            return self.max_batched_tokens
        if self.version == "0.6":
            return max(context, V0_TOKENS) if context <= V0_CHUNKED_FROM else V0_TOKENS
        return min(self.seqs * context, self.defaults[1])

    def in_flight(self, context: int) -> int:
        """VllmConfig.max_in_flight_tokens: a full batch per concurrent step. Async scheduling and
        Model Runner V2 are 0.33's defaults, so max_concurrent_batches is PP + 1; the CPU platform
        turns async scheduling off (CpuPlatform.check_and_update_config), leaving PP."""
        return (self.pp + (self.device != "cpu")) * self.tokens(context)


def batch_defaults(gpu: Any) -> tuple[int, int]:
    """EngineArgs.get_batch_defaults for ``vllm serve`` on ``gpu`` (None: an H100): by the
    device's memory, and "a100" in its name keeping an A100 80GB on the small tier."""
    from ...core.gpus import gpu as find

    card = find(DEFAULTS_GPU) if gpu is None else gpu
    if card.memory >= 160 * GIB:
        return BIG_GPU
    if card.memory >= 70 * GIB and "a100" not in card.name.lower():
        return LARGE_GPU
    return OTHER_GPU


def options(**given: Any) -> Options:
    """Options from keyword arguments, each checked, with the flag named on a bad one."""
    o = Options()
    flags = {
        "tp": "--tp",
        "pp": "--pp",
        "ep": "--ep",
        "block_size": "--block-size",
        "max_num_seqs": "--max-num-seqs",
        "max_batched_tokens": "--max-num-batched-tokens",
    }
    for key, flag in flags.items():
        v = given.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1 << 20:
            raise ParamcountError(f"{flag} takes a whole number from 1 to {1 << 20:,}, got {v!r}", field=flag)
        o = replace(o, **{key: v})
    if given.get("enforce_eager"):
        o = replace(o, enforce_eager=True)
    if given.get("gpu") is not None:
        from ...core.gpus import gpu as find

        o = replace(o, gpu=find(given["gpu"]))
    if given.get("utilization") is not None:
        o = replace(o, utilization=_utilization(given["utilization"]))
    if given.get("device") not in (None, "gpu"):
        from .cpu import cpu_options

        o = cpu_options(o, given)
    elif given.get("kv_cache_space") is not None:
        raise ParamcountError(
            "--kv-cache-space is VLLM_CPU_KVCACHE_SPACE, for vLLM's CPU platform: add --device cpu "
            "(on a GPU, vLLM's KV cache is what --gpu-memory-utilization leaves)",
            field="--kv-cache-space",
        )
    if given.get("vllm_version") is not None:
        o = replace(o, version=_version(given["vllm_version"]))
    if given.get("kv_dtype") is not None:
        key = str(given["kv_dtype"]).lower()
        if key not in KV_BYTES:
            raise ParamcountError(
                f"vLLM's --kv-cache-dtype is one of {', '.join(KV_BYTES)}, not {key!r}", field="--kv-dtype"
            )
        o = replace(o, kv_dtype=key)
    if o.ep not in (1, o.tp):
        raise ParamcountError(
            f"--ep {o.ep}: vLLM spreads experts over TP × DP ranks (--enable-expert-parallel); with one "
            f"data-parallel replica that is --ep {o.tp} (or 1 for experts split like other layers)",
            field="--ep",
        )
    _check_batch(o)
    return o


def _check_batch(o: Options) -> None:
    """SchedulerConfig.verify_max_model_len: max_num_batched_tokens must be at least max_num_seqs."""
    tokens = o.max_batched_tokens or o.defaults[1]
    if tokens < o.seqs:
        flag = "--max-num-batched-tokens" if o.max_batched_tokens else "--max-num-seqs"
        raise ParamcountError(
            f"vLLM needs max_num_batched_tokens ({tokens:,}) ≥ max_num_seqs ({o.seqs:,}); raise "
            "--max-num-batched-tokens or lower --max-num-seqs",
            field=flag,
        )


def _version(value: Any) -> str:
    """The release line named by --vllm-version: one whose accounting is planned here."""
    key = str(value).strip().lower()[:20]
    key = key.removesuffix(".x")
    if key not in VERSIONS:
        raise ParamcountError(
            f"vLLM version {brief(value)} is not planned; give one of {', '.join(VERSIONS)} "
            "(0.6: V0; 0.8 to 0.20: V1 before the CUDA-graph estimate; 0.32: 0.21 to 0.32; latest: vLLM "
            + VLLM_VERSION
            + ")",
            field="--vllm-version",
        )
    return key


def _utilization(value: Any) -> Fraction:
    """The share given (flag text, or the page's number), checked as a float first: its range
    bounds the exponent, so ``Fraction("1e-999999999")`` (a billion-digit power of ten) is
    never built, and a share under MIN_UTILIZATION would make the GPU the plan asks for (the
    claim over the share) absurdly large (1e-320 overflows a float)."""
    text = str(value)[:41]
    try:
        u = Fraction(text) if MIN_UTILIZATION <= float(text) <= 1 and len(text) <= 40 else None
    except (ValueError, ZeroDivisionError, OverflowError):
        u = None
    if u is None:
        raise ParamcountError(
            f"expected a share in [{float(MIN_UTILIZATION):g}, 1], got {brief(value)}",
            field="--gpu-memory-utilization",
        )
    if u == 1:
        raise ParamcountError(
            "1 would make vLLM ask for the whole GPU, but the CUDA context, NCCL and cuBLAS "
            "already hold part of it when it checks (request_memory), so it would not start; give a share below 1",
            field="--gpu-memory-utilization",
        )
    return u


# ---- sharding: the weights one GPU holds -----------------------------------------------------


@dataclass(frozen=True)
class Heads:
    q: int
    kv: int

    def kv_per_rank(self, tp: int) -> int:
        """QKVParallelLinear: kv/tp heads per rank, or one replicated head when kv < tp (0 for MLA)."""
        return max(1, self.kv // tp) if self.kv else 0


def check_split(heads: Heads | None, layers: int, o: Options) -> None:
    """What vLLM refuses before it loads anything (ModelConfig.verify_with_parallel_config)."""
    if heads and heads.q % o.tp:
        raise ParamcountError(
            f"--tp {o.tp}: vLLM needs the {heads.q} attention heads to divide evenly over the ranks", field="--tp"
        )
    if heads and heads.kv and (heads.kv % o.tp if heads.kv >= o.tp else o.tp % heads.kv):
        raise ParamcountError(
            f"--tp {o.tp}: vLLM needs the {heads.kv} KV heads and the ranks to divide one another", field="--tp"
        )
    if o.pp > max(layers, 1):
        raise ParamcountError(f"--pp {o.pp}: the model has only {layers} layers to split", field="--pp")


def pp_layers(n: int, pp: int) -> list[range]:
    """vLLM's get_pp_indices: n // pp layers each, the remainder one each to the ranks before the last."""
    sizes = [n // pp] * pp
    for i in range(2, n % pp + 2):
        sizes[-i] += 1
    starts = [sum(sizes[:r]) for r in range(pp)]
    return [range(s, s + k) for s, k in zip(starts, sizes, strict=True)]


@dataclass(frozen=True)
class Share:
    """The bytes of one pipeline stage on its busiest tensor-parallel rank."""

    bytes: int
    experts: int  # of which routed-expert bytes (what a token reads only k/E of)
    replicated: tuple[str, ...]  # linear weights vLLM's sharding is not known for: counted whole


def _module(name: str) -> tuple[str, bool]:
    """The owning module's name and whether the tensor is a bias (a fused expert tensor is its own name)."""
    head, _, last = name.rpartition(".")
    if last in _PARAMS:
        return head.rpartition(".")[2], last == "bias"
    if last.endswith("_bias"):  # a fused experts' bias: experts.down_proj_bias
        return last.removesuffix("_bias"), True
    return last, False


def _tp_share(row: Any, heads: Heads | None, o: Options, tp: int) -> Fraction | None:
    """Of one tensor, the share the busiest TP rank holds; None where vLLM's split is not known.
    ``heads`` are the language model's, for its own projections; None elsewhere (a vision tower)."""
    module, bias = _module(row.name)
    shape = row.shape
    if module in POSITIONS:
        return Fraction(1)
    if row.kind in ("embeddings", "output_head") and len(shape) == 2 and module not in COLUMN | ROW:
        rows = int(shape[0])
        padded = -(-rows // VOCAB_PADDING) * VOCAB_PADDING
        return Fraction(padded // tp if padded % tp == 0 else -(-padded // tp), rows)
    if _routed(row):
        if o.ep > 1:
            experts = _experts(row)
            return Fraction(-(-experts // o.ep), experts) if experts else Fraction(1, o.ep)
        return Fraction(1) if bias and module in ROW else Fraction(1, tp)
    if module in KV_PROJ and heads and heads.kv:
        return Fraction(heads.kv_per_rank(tp), heads.kv)
    if module in FUSED_QKV and heads and heads.kv:
        return Fraction(heads.q // tp + 2 * heads.kv_per_rank(tp), heads.q + 2 * heads.kv)
    if module in COLUMN:
        return Fraction(1, tp)
    if module in ROW:
        return Fraction(1) if bias else Fraction(1, tp)
    if module in REPLICATED or len(shape) < 2 or bias or row.kind in ("norms", "router"):
        return Fraction(1)
    return None


def _state_share(row: Any, state: StateSpec) -> Fraction | None:
    """Of a state mixer's tensor, the bytes a rank holds over the row's bytes (vllm_state's
    Shard: its split, and its own dtype where vLLM keeps one); None for other tensors."""
    for name, shard in state.shards:
        if row.name.endswith("." + name):
            if shard.itemsize is None:
                return shard.share
            return shard.share * Fraction(row.parameters * shard.itemsize, row.bytes)
    return None


def _experts(row: Any) -> int:
    """Experts in one layer's tensor: the leading dimension of a fused 3-D tensor, else the range in the name."""
    if len(row.shape) == 3:
        return int(row.shape[0])
    m = re.search(r"\.experts\.(\d+)(?:–(\d+))?\.", row.name)
    return int(m.group(2) or m.group(1)) + 1 if m else 0


def decoder_layers(rows: Any) -> int:
    """The layers of the indexed path that holds most bytes (the decoder stack): its top index + 1."""
    found, top = _indexed_paths(rows)
    return top[max(found, key=lambda p: found[p])] if found else 0


def stack_path(rows: Any, layers: int) -> str | None:
    """The decoder-layer list: the indexed path whose indices run to ``layers`` - 1 and hold most bytes."""
    found, top = _indexed_paths(rows)
    matching = [p for p in found if top[p] == layers]
    return max(matching, key=lambda p: found[p]) if matching else None


def _indexed_paths(rows: Any) -> tuple[dict[str, int], dict[str, int]]:
    """Each indexed path's bytes (``layers.3``, ``layers.0–31``: path ``layers``) and its top index + 1."""
    found: dict[str, int] = {}
    top: dict[str, int] = {}
    for r in rows:
        m = _LAYER.match(r.name)
        if m:
            p = m.group("path")
            found[p] = found.get(p, 0) + r.bytes
            top[p] = max(top.get(p, 0), int(m.group("b") or m.group("a")) + 1)
    return found, top


def shares(
    rows: Any, heads: Heads | None, layers: int, o: Options, tied: bool, state: StateSpec | None = None
) -> list[Share]:
    """Each pipeline stage's bytes on its busiest TP rank: embeddings and anything outside the
    decoder layers on the first stage, the final norm and the head on the last (the head as its
    own copy on the last stage when it is tied to the embeddings and PP > 1). A state mixer's
    tensors are held as its ``state.shards`` say (split and dtype)."""
    stack = stack_path(rows, layers)
    if o.pp > 1 and stack is None:
        raise ParamcountError("--pp: the decoder layers could not be told apart from the other tensors", field="--pp")
    stages = pp_layers(layers, o.pp)
    acc = [[Fraction(0), Fraction(0)] for _ in stages]
    unknown: dict[str, None] = {}
    for r in rows:
        if not r.bytes and not (tied and r.role == "tied" and o.pp > 1):
            continue
        m = _LAYER.match(r.name)
        own = heads if stack is None or (m and m.group("path") == stack) else None
        share = _state_share(r, state) if state is not None else None
        unmodelled = state is not None and not state.shards and r.kind == "recurrent"
        if share is None and not unmodelled:
            share = _tp_share(r, own, o, o.tp)
        if share is None:
            share = Fraction(1)
            if o.tp > 1 or unmodelled:
                unknown[_module(r.name)[0]] = None
        expert = _routed(r)
        for stage, part in _stages(r, stack, stages, tied):
            acc[stage][0] += part * share
            acc[stage][1] += part * share if expert else 0
    return [Share(math.ceil(b), math.ceil(e), tuple(unknown)) for b, e in acc]


def _stages(row: Any, stack: str | None, stages: list[range], tied: bool) -> list[tuple[int, Fraction]]:
    """(stage, bytes) of a row: split by its layer indices inside the decoder stack, else placed."""
    last = len(stages) - 1
    if row.role == "tied":  # PP > 1: the last stage loads its own head from the tied embedding
        return [(last, Fraction(_tied_bytes(row)))]
    m = _LAYER.match(row.name) if stack else None
    if stack and m and m.group("path") == stack:
        a = int(m.group("a"))
        b = int(m.group("b") or a)
        per = Fraction(row.bytes, b - a + 1)
        out = []
        for i, r in enumerate(stages):
            n = len(range(max(a, r.start), min(b + 1, r.stop)))
            if n:
                out.append((i, per * n))
        return out
    parent = stack.rpartition(".")[0] if stack else ""
    final_norm = row.kind == "norms" and not m and row.name.startswith(parent + ".")
    if row.kind == "output_head" or (stack and final_norm):
        return [(last, Fraction(row.bytes))]
    return [(0, Fraction(row.bytes))]


def _tied_bytes(row: Any) -> int:
    return math.prod(int(d) for d in row.shape) * 2  # the head as its own bf16 copy


# ---- the KV cache: pages and blocks ------------------------------------------------------------


@dataclass(frozen=True)
class Pages:
    """The KV cache of one pipeline stage on one GPU, as vLLM pages it.

    ``page`` is one layer's bytes per block (the same for every layer, or vLLM refuses);
    ``pool`` the layers one block spans (every layer for a uniform model; for a hybrid model
    the group size of ``_get_kv_cache_groups_uniform_page_size``, each group taking blocks from
    one shared pool); ``groups`` the kinds with their group counts; ``block`` the tokens of an
    attention block. A model with Mamba-style state layers also has ``state_blocks`` (the blocks
    a sequence holds per state group), ``state_layers`` and ``state_page`` (a state layer's own
    bytes, padded to ``page`` beside attention layers).
    """

    page: int
    pool: int
    groups: tuple[tuple[LayerKind, int], ...]
    block: int
    state_blocks: int = 0
    state_layers: int = 0
    state_page: int = 0

    def blocks(self, available: int) -> int:
        return max(available, 0) // self.page // self.pool

    def per_sequence(self, tokens: int, in_flight: int) -> int:
        """Blocks one sequence of ``tokens`` takes across the groups: a sliding window's as
        SlidingWindowSpec.max_admission_blocks_per_request counts them (window − 1 + the
        ``in_flight`` tokens, at most ``tokens``, in blocks, + 1); a state group's as
        MambaSpec.max_memory_usage_bytes (``state_blocks``); a full layer's ⌈tokens / block⌉."""
        n = 0
        for kind, count in self.groups:
            if kind.attention == "state":
                n += count * self.state_blocks
            elif kind.attention == "sliding" and kind.window:
                n += count * (-(-min(kind.window - 1 + in_flight, tokens) // self.block) + 1)
            else:
                n += count * -(-tokens // self.block)
        return n

    def needed(self, sequences: int, tokens: int, in_flight: int) -> int:
        """Blocks the pool must have for ``sequences`` at once: theirs and the null block the
        BlockPool holds back (vllm/v1/core/block_pool.py; get_kv_cache_configs checks
        against the memory less one block)."""
        return sequences * self.per_sequence(tokens, in_flight) + 1

    def bytes(self, blocks: int) -> int:
        return blocks * self.page * self.pool

    def decode_bytes(self, sequences: int, tokens: int, in_flight: int) -> int:
        """Bytes a decode step reads: the attention groups' blocks, and each state layer's own
        state once (not its padding, nor the blocks prefix caching keeps)."""
        if not self.state_layers:
            return self.bytes(sequences * self.per_sequence(tokens, in_flight))
        attention = sum(n * -(-tokens // self.block) for kind, n in self.groups if kind.attention != "state")
        return sequences * (self.bytes(attention) + self.state_layers * self.state_page)


def group_size(counts: list[int]) -> int:
    """Layers per KV cache group (``_get_kv_cache_groups_uniform_page_size``): the fewest layers of
    one type, or the most where that is under 1.5 times the fewest (less padding)."""
    low, high = min(counts), max(counts)
    return high if 2 * high < 3 * low else low


def pages(
    layout: Layout, heads_tp: int, block: int, kv_bytes: int, layers: int | None = None, state: StateSpec | None = None
) -> Pages:
    """The paging of ``layout`` (or of ``layers`` of it, for one pipeline stage of a uniform
    model); ``state`` is the state layers' MambaSpec, for a model that has them."""
    kinds = [k for k in layout.kinds if k.layers]
    if state is not None and any(k.attention == "state" for k in kinds):
        return state_pages(kinds, heads_tp, block, kv_bytes, state, layers)
    bad = [k for k in kinds if k.attention not in ("full", "sliding") or k.stores not in ("kv", "mla-latent")]
    if bad:
        what = bad[0].stores if bad[0].attention in ("full", "sliding") else bad[0].attention
        raise ParamcountError(
            f"the vLLM plan pages full, sliding-window and MLA attention and Mamba-style states; this model also "
            f"caches {what!r} (plan it with --runtime transformers)",
            field="--runtime",
        )
    if not kinds:
        raise ParamcountError("the model keeps no KV cache for vLLM to page (an encoder)", field="--runtime")
    sizes = {_page(k, heads_tp, block, kv_bytes) for k in kinds}
    if len(sizes) > 1:
        raise ParamcountError(
            "the model's layers have different KV page sizes, which vLLM unifies (larger blocks for the smaller "
            "pages, padding, or packing; unify_kv_cache_spec_page_size); that is not modelled (plan it with "
            "--runtime transformers)",
            field="--runtime",
        )
    by_type: dict[tuple, int] = {}
    for k in kinds:
        key = (k.attention, k.window)
        by_type[key] = by_type.get(key, 0) + k.layers
    if len(by_type) == 1:
        n = layers if layers is not None else kinds[0].layers if len(kinds) == 1 else sum(k.layers for k in kinds)
        return Pages(sizes.pop(), n, ((kinds[0], 1),), block)
    if layers is not None:
        raise ParamcountError("--pp over layers of mixed attention types is not modelled", field="--pp")
    pool = group_size(list(by_type.values()))
    first = {(k.attention, k.window): k for k in kinds}
    groups = tuple((first[key], -(-n // pool)) for key, n in by_type.items())
    return Pages(sizes.pop(), pool, groups, block)


def state_pages(
    kinds: list[LayerKind], heads_tp: int, block: int, kv_bytes: int, spec: StateSpec, layers: int | None
) -> Pages:
    """Pages of a model with state layers (vllm_state): alone, one group of unpadded state pages;
    beside attention layers, attention blocks raised until a page holds a state, the state page
    padded to it, and both kinds in groups of one size from one pool."""
    if layers is not None:
        raise ParamcountError("--pp over Mamba-style state layers is not modelled", field="--pp")
    states = [k for k in kinds if k.attention == "state"]
    attention = [k for k in kinds if k.attention != "state"]
    n_state = sum({k.where: k.layers for k in states}.values())  # a layer's conv and SSM kinds share `where`
    if not attention:
        return Pages(spec.bytes, n_state, ((states[0], 1),), block, spec.blocks, n_state, spec.bytes)
    shapes = {(k.attention, k.stores, k.kv_heads, k.key_dim, k.value_dim) for k in attention}
    if len(shapes) > 1 or any(k.attention != "full" or k.stores not in ("kv", "mla-latent") for k in attention):
        raise ParamcountError(
            "the vLLM plan pages state layers beside one kind of full attention; this model has "
            f"{', '.join(sorted({k.label for k in attention}))} (plan it with --runtime transformers)",
            field="--runtime",
        )
    kind, n_attention = attention[0], sum(k.layers for k in attention)
    size = attention_block(spec, _page(kind, heads_tp, 1, kv_bytes), block, kind.stores == "mla-latent")
    pool = group_size([n_attention, n_state])
    groups = ((kind, -(-n_attention // pool)), (states[0], -(-n_state // pool)))
    return Pages(_page(kind, heads_tp, size, kv_bytes), pool, groups, size, spec.blocks, n_state, spec.bytes)


def _page(kind: LayerKind, heads_tp: int, block: int, kv_bytes: int) -> int:
    """One layer's bytes per block: keys and values of its heads on this rank (MLA: the latent,
    replicated on every rank)."""
    heads = kind.kv_heads if kind.stores == "mla-latent" else heads_tp
    return block * heads * (kind.key_dim + kind.value_dim) * kv_bytes


def kv_heads(layout: Layout) -> int:
    """The language model's KV heads (0 for MLA, whose latent is one replicated head)."""
    return max((k.kv_heads for k in layout.kinds if k.stores == "kv"), default=0)


# ---- the profiled peak ---------------------------------------------------------------------------


def layer_width(widths: Any, tp: int) -> int:
    """Values one token keeps alive in a layer on one rank: 4 hidden-wide tensors and the wider of
    the attention and MLP projections' outputs, split over TP."""
    return 4 * widths.hidden + -(-max(widths.attention, widths.ffn) // tp)


@dataclass(frozen=True)
class Peak:
    """What the profiling pass's widest layer holds: the dense estimate (``widths``) or, for a
    model with routed experts, its attention and dense layers split over TP and the fused-MoE
    kernel's buffers (:mod:`paramcount.memory.runtimes.vllm.moe`, ``moe``)."""

    widths: Any
    moe: Any = None
    fp8: bool = False
    encoders: tuple[str, ...] = ()  # the model's encoder towers (vision, audio), whose profile is not counted

    def bytes(self, o: Options, tokens: int, b: int) -> int:
        """The widest layer's bytes over ``tokens`` tokens on one rank."""
        if self.moe is None:
            return tokens * layer_width(self.widths, o.tp) * b
        from .moe import workspace

        m = self.moe
        split = -(-max(m.attention, m.dense) // o.tp)
        experts = workspace(m, o.version, o.tp if o.ep == 1 else 1, tokens, b, self.fp8)
        return tokens * (4 * m.hidden + m.held) * b + max(tokens * split * b, experts)


def profile_peak(peak: Peak, o: Options, dtype_bytes: int, context: int) -> Term:
    """The activation peak of vLLM's profiling run: a forward pass over max_num_batched_tokens
    tokens (the widest layer's tensors, the projections' outputs split over TP; an MoE layer's
    fused-kernel buffers) and the sampler's dummy runs over min(tokens, max_num_seqs) rows of
    logits (the second in fp32)."""
    widths = peak.widths
    tokens = o.tokens(context)
    layer = peak.bytes(o, tokens, dtype_bytes)
    rows = min(o.seqs, tokens)
    logits = rows * widths.logits * 4 * SAMPLER_COPIES if widths.logits else 0
    tail = f" + S·V·4·{SAMPLER_COPIES} = {layer:,} + {rows}·{widths.logits:,}·4·{SAMPLER_COPIES} = {layer + logits:,} B"
    if peak.moe is None:
        formula = (
            f"T·(4h + max(W_attn, W_ffn)/TP)·b + S·V·4·{SAMPLER_COPIES} = {tokens:,}·(4·{widths.hidden:,} + "
            f"max({widths.attention:,}, {widths.ffn:,})/{o.tp})·{dtype_bytes} + {rows}·{widths.logits:,}·4·"
            f"{SAMPLER_COPIES} = {layer + logits:,} B"
        )
        layer_said = "one layer's tensors at a time"
    else:
        from .moe import describe

        formula = f"T·(4h + held)·b + max(T·max(W_attn, W_dense)/TP·b, MoE buffers){tail}"
        layer_said = "one layer's tensors at a time; in an MoE layer " + describe(
            peak.moe, o.version, o.tp if o.ep == 1 else 1
        )
    said = (
        f"the profiling pass over max_num_batched_tokens {tokens:,} ({layer_said}) and the "
        f"sampler's over {rows:,} rows (max_num_seqs) of fp32 logits (logits, probabilities, log-probabilities)"
    )
    if peak.encoders:
        encoders = ENCODER_PROFILE.format(", ".join(peak.encoders))
        said += f"; not counted (the figure can be low for this model): {encoders}"
    source = SRC_PROFILE_OLD.get(o.version, SRC_PROFILE)
    if peak.moe is not None:
        from .moe import OLD_LINES, SRC_MOE

        source += "; " + SRC_MOE["old" if o.version in OLD_LINES else "new"]
    return Term("activations", "activations (profiled peak)", layer + logits, formula, said, True, source)


# vllm/v1/worker/gpu/model_runner.py GPUModelRunner.profile_run (profile_encoder_cache over
# get_dummy_encoder_profile_inputs), vllm/multimodal/encoder_budget.py MultiModalBudget (the budget
# max(max_num_batched_tokens, the most tokens one item can have), items = budget // those tokens)
ENCODER_PROFILE = (
    "before the pass vLLM runs the {} over dummy items of the most tokens one item can have, as many as "
    "its encoder budget (max(max_num_batched_tokens, those tokens)) holds, and keeps their outputs through "
    "the pass (profile_run, MultiModalBudget)"
)
SAMPLER_COPIES = 3
CUDA_CONTEXT = GIB // 2  # the CUDA context and the kernels it loads, on a data-centre GPU
NON_TORCH = GIB // 4  # cuBLAS handles and workspaces, on one GPU
NON_TORCH_PER_PEER = GIB // 8  # NCCL and custom all-reduce buffers, per other rank it talks to


# Estimates held to what vLLM itself logged in public threads (tests/fixtures/vllm_logs_versions.json,
# checked by tests/test_vllm_versions.py): plan ÷ logged − 1, least and greatest (to the hundredth,
# outward), and how many logs, per release line. Each rides in the term's JSON as its "error".
# CUDA graphs: V0 to 0.20 log what capture_model took after the KV cache ("Graph capturing finished in
# N secs, took X GiB"), 0.21+ its profile_cudagraph_memory estimate ("Estimated CUDA graph memory: X GiB
# total"). Neither a per-graph driver term, nor one per piecewise piece, nor profile_cudagraph_memory's
# first capture + a per-graph cost, fitted on half of these logs, held the other half within 2% or
# 64 MiB (docs/vllm.md), so the rule stays and carries its measured error.
GRAPH_ERROR: dict[str, tuple[float, float, int]] = {
    "0.6": (-0.20, 0.23, 2),
    "0.8": (-0.47, -0.46, 1),
    "0.20": (0.08, 1.11, 2),
    "0.32": (1.81, 1.82, 1),
}
# V0's non_torch_memory (memory_profiling: the non-torch memory made between init_device's baseline,
# before the distributed init, and the end of the profile): 1.79 / 3.58 GiB (TP 1 / 2) from the 0.6.5
# development build, 0.16 GiB (TP 1, H100) and 0.25 GiB (TP 2, RTX 4090) from later V0 builds, which
# take the baseline as a MemorySnapshot (vllm#12059, #12126). The later builds' figure is not a
# constant this plan can derive (CUDA's lazily loaded modules, NCCL's buffers), so it stays an estimate.
NON_TORCH_ERROR: dict[str, tuple[float, float, int]] = {"0.6": (-0.90, 0.57, 5)}
LOGGED = "vLLM's own logs in public threads, tests/fixtures/vllm_logs_versions.json"


def measured_error(table: dict[str, tuple[float, float, int]], version: str) -> tuple[tuple[str, object], ...]:
    """A term's measured error for a release line, for the plan's JSON (no logs: says so)."""
    if version not in table:
        return (("logs", 0), ("against", LOGGED + ": none found for this release line"))
    low, high, logs = table[version]
    return (("low", low), ("high", high), ("logs", logs), ("measure", "plan / logged - 1"), ("against", LOGGED))


def error_words(table: dict[str, tuple[float, float, int]], version: str) -> str:
    """The measured error in words, for a term's assumption."""
    if version not in table:
        return "no public log of this release line states it"
    low, high, logs = table[version]
    line = {"0.32": "vLLM 0.21 to 0.32", LATEST: "vLLM 0.33 and later"}.get(version, f"vLLM {version}")
    return f"against {logs} public log{'s' * (logs > 1)} of {line} it was {low:+.0%} … {high:+.0%} off"


def cuda_context() -> Term:
    formula = f"0.5 GiB = {CUDA_CONTEXT:,} B"
    said = "the CUDA context and the kernels it loads, which each GPU process holds before vLLM's memory snapshot"
    return Term("cuda_context", "CUDA context", CUDA_CONTEXT, formula, said, True, SRC_CONTEXT)


def non_torch(o: Options) -> Term:
    """cuBLAS and NCCL memory, whole: made before the latest vLLM's snapshot, so beside its claim;
    up to 0.10 made after the baseline snapshot and measured as non_torch_memory, so in the claim."""
    peers = o.tp - 1 + (o.pp > 1)
    n = NON_TORCH + peers * NON_TORCH_PER_PEER
    formula = f"0.25 GiB + {peers} × 0.125 GiB = {n:,} B"
    said = "cuBLAS handles and workspaces, and NCCL and custom all-reduce buffers per peer rank: " + (
        f"vLLM {o.version} makes them after its baseline snapshot and takes them out of the claim (non_torch_memory)"
        if o.accounting.non_torch_in_claim
        else "vLLM makes them before its memory snapshot, so they must fit beside the claim"
    )
    source = o.accounting.source if o.accounting.non_torch_in_claim else SRC_NON_TORCH
    said += f"; {error_words(NON_TORCH_ERROR, o.version)}"
    return Term(
        "non_torch", "cuBLAS and NCCL", n, formula, said, True, source, error=measured_error(NON_TORCH_ERROR, o.version)
    )


def non_torch_split(o: Options) -> tuple[tuple[Term, ...], tuple[Term, ...]]:
    """The non-torch terms in the claim and beside it. 0.11 to 0.32 make NCCL before the snapshot
    and the cuBLAS handles after it (the profile run's first matmul): cuBLAS in the claim, NCCL
    beside; the other lines keep both on one side, as one term."""
    a = o.accounting
    whole = non_torch(o)
    if a.non_torch_in_claim == a.nccl_in_claim:
        return ((whole,), ()) if a.non_torch_in_claim else ((), (whole,))
    cublas = Term(
        "non_torch",
        "cuBLAS",
        NON_TORCH,
        f"0.25 GiB = {NON_TORCH:,} B",
        f"cuBLAS handles and workspaces: vLLM {o.version} makes them at the profile run's first matmul, after its "
        f"memory snapshot, and takes them out of the claim; {error_words(NON_TORCH_ERROR, o.version)}",
        True,
        a.source,
        error=measured_error(NON_TORCH_ERROR, o.version),
    )
    nccl = whole.bytes - NON_TORCH
    if not nccl:
        return (cublas,), ()
    beside = Term(
        "nccl",
        "NCCL",
        nccl,
        f"{nccl // NON_TORCH_PER_PEER} peers × 0.125 GiB = {nccl:,} B",
        f"NCCL and custom all-reduce buffers per peer rank: vLLM {o.version} makes them in init_device before its "
        "memory snapshot, so they must fit beside the claim",
        True,
        SRC_NON_TORCH,
    )
    return (cublas,), (beside,)


def capture_sizes(o: Options, context: int) -> list[int]:
    """The batch sizes (tokens) vLLM captures a CUDA graph for, by default (VllmConfig._set_cudagraph_sizes
    with one token per decode request): 1, 2, 4, every 8 to 248 and every 16 from 256, up to
    min(2 × max_num_seqs, 512, max_num_batched_tokens); max_num_batched_tokens itself when it is
    under that ceiling, and max_num_seqs (the widest decode batch) when it is within it."""
    if o.enforce_eager:
        return []
    seqs, tokens = o.seqs, o.tokens(context)
    if o.accounting.graphs == "decode":  # V0 model_runner.py _BATCH_SIZES_TO_CAPTURE, up to max_num_seqs
        return [s for s in (1, 2, 4, *range(8, V0_MAX_GRAPH + 1, 8)) if s <= max(seqs, 1)]
    if o.accounting.graphs == "piecewise":  # 0.8's list, every 8 to 512, within the token budget
        return [s for s in (1, 2, 4, *range(8, MAX_GRAPH_SIZE + 1, 8)) if s <= tokens]
    ceiling = min(2 * seqs, MAX_GRAPH_SIZE)
    top = min(tokens, ceiling)
    sizes = [s for s in (1, 2, 4) if s <= top] + list(range(8, min(top + 1, 256), 8)) + list(range(256, top + 1, 16))
    if tokens <= top:
        sizes.append(tokens)
    if seqs <= min(ceiling, tokens):
        sizes.append(seqs)
    return sorted(set(sizes))


def cuda_graphs(peak: Peak, o: Options, dtype_bytes: int, context: int) -> Term:
    """The CUDA graphs' memory: one piecewise graph per capture size (mixed batches) and one full
    graph per size up to max_num_seqs tokens (decode-only batches: FULL_AND_PIECEWISE, the default),
    each taken to keep one layer's tensors at its size (the pool they share holds the rest)."""
    sizes = capture_sizes(o, context)
    if not sizes:
        return Term("cuda_graphs", "CUDA graphs", 0, "--enforce-eager: none", "no CUDA graphs", False, SRC_GRAPHS)
    full = [s for s in sizes if s <= o.seqs] if o.accounting.graphs == "full_and_piecewise" else []
    per_token = peak.bytes(o, 1, dtype_bytes)
    n = (sum(sizes) + sum(full)) * per_token  # linear: no captured size reaches a fused-MoE chunk
    each = "(4h + max(W_attn, W_ffn)/TP)·b" if peak.moe is None else "an MoE layer's bytes per token"
    formula = (
        f"(Σ piecewise sizes + Σ full sizes) · {each} = ({sum(sizes):,} + {sum(full):,}) · {per_token:,} B = {n:,} B"
    )
    said = (
        _graph_kinds(o, sizes, full)
        + ", each keeping about one layer's tensors at its size; "
        + (
            "vLLM measures it before sizing the KV cache and logs 'Estimated CUDA graph memory'"
            if o.accounting.graphs_in_claim
            else f"vLLM {o.version} captures them after the KV cache is allocated, beyond its claim"
        )
        + f"; a rough estimate: {error_words(GRAPH_ERROR, o.version)}"
    )
    source = SRC_GRAPHS if o.accounting.graphs_in_claim else o.accounting.source
    return Term(
        "cuda_graphs", "CUDA graphs", n, formula, said, True, source, error=measured_error(GRAPH_ERROR, o.version)
    )


def _graph_kinds(o: Options, sizes: list[int], full: list[int]) -> str:
    """The graphs the named release captures, in words."""
    if o.accounting.graphs == "decode":
        return f"{len(sizes)} full decode graphs (batch sizes 1 … {sizes[-1]}, V0's _BATCH_SIZES_TO_CAPTURE)"
    if o.accounting.graphs == "piecewise":
        return f"{len(sizes)} piecewise graphs (sizes 1 … {sizes[-1]}; vLLM {o.version} captures no full graphs)"
    return f"{len(sizes)} piecewise graphs (sizes 1 … {sizes[-1]}) and {len(full)} full decode graphs"


# ---- the planner -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """One pipeline stage on its busiest GPU: weights, what the sampler and the profile add, pages."""

    share: Share
    pages: Pages


class VllmPlanner:
    """The weights and shapes read once; plans ``batch`` sequences of ``context`` tokens per GPU
    (``batch`` is the number of requests vLLM runs at once), and the KV capacity a GPU leaves."""

    runtime = "vllm"

    def __init__(
        self,
        model: Model,
        scheme: str | None = None,
        kv_dtype: str | None = None,
        overhead: Any = None,
        *,
        keep: Any = None,
        pure: bool = False,
        **given: Any,
    ):
        from ...context.kv_layout import layout_of
        from ...core.plan import activation_bytes
        from ...tree.widths import shape_widths
        from ...weights.base import scheme as find
        from ...weights.dtype import compute_dtype, default_scheme
        from ...weights.schemes import weights

        if overhead is not None:
            raise ParamcountError(
                "vLLM sizes its own claim: set --gpu-memory-utilization, not --overhead", field="--overhead"
            )
        self.model = model
        self.o = options(kv_dtype=kv_dtype, **given)
        from .quant_config import awq_keep, config_group, config_scheme, fp8_ignored

        ignored = fp8_ignored(model)
        from ...weights.stored import is_checkpoint

        if scheme is None and not is_checkpoint(model):  # a checkpoint's stored bytes are read as they are
            from ...weights.quant_config import FP8_METHODS, unplanned

            unplanned(model, "vLLM", (*FP8_METHODS, "bitsandbytes", "gptq", "awq", "mxfp4"))
        self.scheme = find(scheme or config_scheme(model) or default_scheme(model)).name
        # bitsandbytes 4-bit is served (vllm/model_executor/layers/quantization/bitsandbytes.py); 8-bit is not planned
        if self.scheme.startswith(("q", "iq", "bnb")) and self.scheme not in ("stored",):
            raise ParamcountError(
                f"{self.scheme} is not a format vLLM serves from a config; use bf16, fp16, fp8, int8, "
                "gptq-int4, gptq-int8, awq-int4, nf4, fp4 or a checkpoint's stored weights",
                field="--dtype",
            )
        if keep is None and self.scheme in ("fp8", "int8"):
            keep = "embeddings,output_head,norms,router"  # vLLM's fp8/int8 methods quantise linear layers only
        some: list[tuple[int, str]] = []
        listed: list[str] = []
        if ignored and self.scheme == "fp8" and keep == "embeddings,output_head,norms,router":
            from .quant_config import kept_suffixes, matching

            every, some = kept_suffixes(ignored, int((model.config or {}).get("num_hidden_layers") or 0))
            listed = matching(every, weights(model, self.scheme, keep=keep, pure=pure).rows)
            keep = ",".join([keep, *listed])
        group = config_group(model) if self.scheme == config_scheme(model) else None
        if keep is None and self.scheme == "awq-int4":
            keep, listed = awq_keep(model, lambda k: weights(model, self.scheme, keep=k, pure=pure, group_size=group))
        self.weights = weights(model, self.scheme, keep=keep, pure=pure, group_size=group)
        from .mxfp4 import config_mxfp4, config_rows

        # a config that says MXFP4 (gpt-oss) is served as its checkpoint ships, unless a scheme is named
        self.config_mxfp4 = scheme is None and self.scheme != "stored" and config_mxfp4(model)
        if self.config_mxfp4:
            self.weights = replace(self.weights, rows=tuple(config_rows(self.weights.rows)))
        self.rows, self.mxfp4_note = self._held_rows()
        self.ignored_note = self._kept_layers(some, listed) if some or ignored or listed else None
        self.dtype = compute_dtype(self.scheme, model)
        self.act_bytes = activation_bytes(self.dtype)
        self.kv_bytes = KV_BYTES[self.o.kv_dtype] or self.act_bytes
        self.layout, self.partial = layout_of(model, "latent")
        if self.partial:
            raise ParamcountError(
                f"the vLLM plan needs the model's attention layout: {self.partial}", field="--runtime"
            )
        self.widths = shape_widths(model)
        from .moe import read as moe_layers

        encoders = tuple(t.replace("_", " ") for t in model.towers() if t.endswith("_encoder"))
        self._peak = Peak(self.widths, moe_layers(model), self.scheme == "fp8", encoders)
        from ...context.kv_layout import attention_heads
        from ...core.limits import Limit

        self.limit = Limit.of(model)
        kv = kv_heads(self.layout)
        q = attention_heads(model) or kv
        self.heads = Heads(q, kv)
        has_state = any(k.attention == "state" for k in self.layout.kinds)
        self.state = state_spec(model, self.o.tp, self.dtype, self.scheme) if has_state else None
        self.layers = decoder_layers(self.weights.rows) if has_state else sum(k.layers for k in self.layout.kinds)
        check_split(self.heads, self.layers, self.o)
        self.rows, self.marlin_note = self._marlin_rows()
        tied = any(r.role == "tied" for r in self.weights.rows)
        self.stages = self._stages(tied)
        self.active = _active_share(model, self.weights.rows)
        if self.o.device == "cpu":
            from .cpu import check_model

            check_model(self)

    def _kept_layers(self, some: list[tuple[int, str]], listed: list[str]) -> str:
        """Rows for the layers the checkpoint's quantization_config keeps 16-bit in some layers only."""
        from ...core.plan import activation_bytes
        from ...weights.dtype import compute_dtype
        from .quant_config import kept_rows

        extra = kept_rows(self.rows, some, activation_bytes(compute_dtype(self.scheme, self.model)))
        self.rows = [*self.rows, *extra]
        kept = [*listed[:6], *(["…"] if len(listed) > 6 else []), *([f"{len(extra)} layers' own"] if extra else [])]
        return (
            f"the checkpoint's quantization_config keeps {', '.join(kept) or 'nothing this plan holds'} in 16-bit "
            f"(vLLM skips them: {'is_layer_skipped_awq' if self.scheme.startswith('awq') else 'is_layer_skipped'})"
        )

    def _held_rows(self) -> tuple[list[Any], str | None]:
        """The weights' rows as vLLM holds them on the GPU named (MXFP4 experts padded by its backend)."""
        from .mxfp4 import held_rows

        card = self.o.gpu
        capability = card.capability if card is not None else None
        experts_tp = self.o.tp if self.o.ep == 1 else 1
        return held_rows(self.weights.rows, capability, self.o.version, experts_tp)

    def _marlin_rows(self) -> tuple[list[Any], str | None]:
        """GPTQ/AWQ layers as the kernel vLLM picks on the GPU holds them (runtimes.vllm.marlin)."""
        from .marlin import held_rows

        card = self.o.gpu
        capability = card.capability if card is not None else None

        def placement(r: Any) -> tuple[bool, Fraction]:
            share = _tp_share(r, self.heads, self.o, self.o.tp) or Fraction(1)
            return _module(r.name)[0] in ROW, share

        return held_rows(self.rows, self.model, self.scheme, (capability, self.o.version), placement)

    def _stages(self, tied: bool) -> list[Stage]:
        o = self.o
        heads_tp = self.heads.kv_per_rank(o.tp)
        split = shares(self.rows, self.heads, self.layers, o, tied, self.state)
        if o.pp == 1:
            return [Stage(split[0], pages(self.layout, heads_tp, o.block_size, self.kv_bytes, state=self.state))]
        ranges = pp_layers(self.layers, o.pp)
        return [
            Stage(s, pages(self.layout, heads_tp, o.block_size, self.kv_bytes, len(r), self.state))
            for s, r in zip(split, ranges, strict=True)
        ]

    # one stage's memory in the claim before the KV cache: weights + profiled peak + CUDA graphs
    def _fixed(self, stage: Stage, context: int) -> int:
        return stage.share.bytes + sum(t.bytes for t in self._claimed(context))

    def _claimed(self, context: int) -> tuple[Term, ...]:
        """The terms besides weights and KV that the named release takes out of its claim."""
        a = self.o.accounting
        return (
            self.peak(context),
            *non_torch_split(self.o)[0],
            *((self.graphs(context),) if a.graphs_in_claim else ()),
        )

    def _beside_terms(self, context: int) -> tuple[Term, ...]:
        """What must fit beside the claim: the CUDA context, and what the release books outside it."""
        a = self.o.accounting
        return (
            cuda_context(),
            *non_torch_split(self.o)[1],
            *(() if a.graphs_in_claim else (self.graphs(context),)),
        )

    def peak(self, context: int) -> Term:
        return profile_peak(self._peak, self.o, self.act_bytes, context)

    def graphs(self, context: int) -> Term:
        return cuda_graphs(self._peak, self.o, self.act_bytes, context)

    def beside(self, context: int) -> int:
        """What must be free beside the claim: the CUDA context, and cuBLAS, NCCL and the CUDA
        graphs where the named release books them outside it (estimates)."""
        return sum(t.bytes for t in self._beside_terms(context))

    def _need(self, stage: Stage, context: int, batch: int) -> int:
        blocks = stage.pages.needed(batch, context, self.o.in_flight(context))
        return self._fixed(stage, context) + stage.pages.bytes(blocks)

    def busiest(self, context: int, batch: int) -> Stage:
        return max(self.stages, key=lambda s: self._need(s, context, batch))

    def plan(self, context: int, batch: int = 1, why: str = "--context") -> Any:
        from ...core.plan import Plan, positive

        context, batch = positive(context, "--context"), positive(batch, "--concurrency")
        warned = self.limit.check(context, "vllm")
        if self.o.device == "cpu":
            return self._cpu_plan(context, batch, why, warned)
        stage = self.busiest(context, batch)
        blocks = stage.pages.needed(batch, context, self.o.in_flight(context))
        kv = self._kv_term(stage, blocks, context, batch)
        base = (self._weights_term(stage), *self._claimed(context), kv)
        claimed = sum(t.bytes for t in base)
        terms = (*base, self._outside(claimed, context))
        notes = (*warned, *self._notes(stage, context))
        return Plan(self.model, "inference", terms, self._settings(context, why, batch, blocks), notes, planner=self)

    def _cpu_plan(self, context: int, batch: int, why: str, warned: tuple[str, ...]) -> Any:
        """vLLM's CPU platform: the weights and the KV cache it allocates (paramcount.memory.runtimes.vllm.cpu)."""
        from ...core.plan import Plan
        from .cpu import cpu_notes, kv_term, weights_term

        kv, blocks = kv_term(self, context, batch)
        settings = {**self._settings(context, why, batch, blocks), "device": "cpu"}
        settings.update(kv_cache_space_gib=self.o.kv_cache_space, gpu_memory_utilization=float(self.o.utilization))
        notes = (*warned, *cpu_notes(self, context, batch))
        return Plan(self.model, "inference", (weights_term(self), kv), settings, notes, planner=self)

    def total(self, context: int, batch: int = 1) -> int:
        if self.o.device == "cpu":
            return self.plan(context, batch).total
        stage = self.busiest(context, batch)
        return self._gpu(self._need(stage, context, batch), context)

    def _gpu(self, claimed: int, context: int) -> int:
        """The least GPU memory vLLM starts on holding ``claimed`` bytes in its claim: ⌈M × u⌉ ≥
        claimed, and M − ⌈M × u⌉ ≥ what must be free beside it (request_memory)."""
        return max(_claim(claimed, self.o.utilization), _beside(self.beside(context), self.o.utilization))

    def serving(self, memory: int, context: int) -> dict[str, Any]:
        """What vLLM logs on a GPU of ``memory`` bytes at --max-model-len ``context``: KV blocks and
        tokens per GPU, and the largest number of such sequences at once (on CPUs: from
        --kv-cache-space or --ram, ``memory`` unused; :func:`paramcount.memory.runtimes.vllm.cpu.serving`)."""
        if self.o.device == "cpu":
            from .cpu import serving

            return serving(self, context)
        claim = math.ceil(memory * self.o.utilization)  # request_memory
        blocks = min(s.pages.blocks(claim - self._fixed(s, context)) for s in self.stages)
        per_seq = self.stages[0].pages.per_sequence(context, self.o.in_flight(context))
        outside = memory - claim
        return {
            # vLLM's total is the driver's (torch.cuda.mem_get_info): a listed GPU's stated size overstates it
            "claim_of_bytes": memory,
            "claim_of": "the --gpu size as stated (vLLM's is the driver's total, a little less on a listed GPU)",
            "kv_cache_bytes": min(max(claim - self._fixed(s, context), 0) for s in self.stages),
            "kv_blocks": blocks,
            # kv_cache_utils.py get_kv_cache_capacity: int(max_concurrency × max_model_len), the
            # concurrency get_max_concurrency_for_kv_cache_config's num_blocks / Σ blocks per request
            "kv_tokens": int(blocks / per_seq * context),
            "blocks_per_sequence": per_seq,
            # vLLM's own figure, a float ("Maximum concurrency …: 42.67x"); whole sequences beside it
            "max_concurrency": blocks / per_seq,
            "max_sequences": blocks // per_seq,
            # request_memory: the free memory at the snapshot holds the claim; get_kv_cache_configs:
            # the blocks less the null block hold one sequence of max_model_len
            "starts": (outside >= self.beside(context) or not self.o.accounting.start_check) and blocks >= per_seq + 1,
            **({"vllm_version": self.o.version} if self.o.version != LATEST else {}),
            "outside_claim_bytes": outside,
            "cuda_context_bytes": CUDA_CONTEXT,
            "non_torch_bytes": non_torch(self.o).bytes,
        }

    def _weights_term(self, stage: Stage) -> Term:
        o = self.o
        whole = self.weights.bytes
        split = f"TP {o.tp}" + (f", PP {o.pp}" if o.pp > 1 else "") + (f", EP {o.ep}" if o.ep > 1 else "")
        unknown = stage.share.replicated
        said = (
            f"{self.weights.scheme} weights of the busiest GPU ({split}): attention and MLP projections split "
            "over TP (a KV head per rank when there are fewer than the ranks), the vocabulary padded to 64 rows "
            f"and split, norms and routers whole on every rank; of the model's {whole:,} B"
        )
        if self.state is not None and self.state.shards:
            said += (
                f"; the {self.state.mixer} mixers' tensors as vLLM {VLLM_VERSION}'s layers hold them (split by their "
                "weight loaders, A in float32, layers built without a quantisation config in the model's dtype)"
            )
        if unknown:
            said += f"; counted whole on every rank, their split not known here: {', '.join(unknown[:6])}"
        if self.scheme == "fp8":
            said += "; fp8 per-tensor scales (4 B per linear layer) not counted"
        if self.mxfp4_note:
            said += f"; {self.mxfp4_note}"
        if self.ignored_note:
            said += f"; {self.ignored_note}"
        if self.marlin_note:
            said += f"; {self.marlin_note}"
        label = f"weights ({self.scheme}{', MXFP4 experts' if self.config_mxfp4 else ''}, {split})"
        # Marlin's padding is held to vLLM's log; the Triton and FlashInfer layouts' swizzle is not modelled
        swizzled = bool(self.mxfp4_note) and "Marlin" not in self.mxfp4_note
        if swizzled:
            said += "; an estimate: the backend's swizzled layout may pad further (vLLM 0.14 on an H100 logs +6%)"
        return Term(
            "weights",
            label,
            stage.share.bytes,
            f"Σ tensors × their share on one GPU = {stage.share.bytes:,} B",
            said,
            bool(unknown) or swizzled,
            SRC_SHARD
            + (f"; {SRC_STATE_SHARD}" if self.state is not None else "")
            + (f"; {SRC_MXFP4}" if self.mxfp4_note else "")
            + (f"; {SRC_MARLIN}" if self.marlin_note else "")
            + (f"; {SRC_IGNORED}" if self.ignored_note else ""),
        )

    def _kv_term(self, stage: Stage, blocks: int, context: int, batch: int) -> Term:
        p = stage.pages
        per = p.per_sequence(context, self.o.in_flight(context))
        n = p.bytes(blocks)
        formula = (
            f"({batch} seq × {per:,} blocks + 1 null block) × {p.page:,} B per layer-block × {p.pool} layers = {n:,} B"
        )
        said = (
            f"blocks of {p.block} tokens, {p.page:,} B per layer ({self.kv_bytes} B per value); "
            f"a sequence of {context:,} tokens takes {per:,} blocks"
            + (" across its groups" if len(p.groups) > 1 else "")
            + (
                f" (sliding-window layers keep window − 1 + {self.o.in_flight(context):,} tokens in flight)"
                if any(k.window for k, _ in p.groups)
                else ""
            )
            + "; the block pool holds one null block back"
        )
        if self.state is not None:
            said += f"; {self._state_said(p)}"
        label = f"KV cache ({context:,} tokens × {batch})"
        source = SRC_BLOCKS + (f"; {SRC_STATE}; {SRC_ALIGN}" if self.state is not None else "")
        return Term("kv_cache", label, n, formula, said, False, source)

    def _state_said(self, p: Pages) -> str:
        """The state layers' part of the KV term, in words."""
        spec = self.state
        assert spec is not None
        padded = (
            f", padded to the {p.page:,} B page of a {p.block}-token attention block" if p.page != p.state_page else ""
        )
        held = (
            f"{spec.blocks} blocks a sequence per state group (prefix caching's mamba_cache_mode 'align'"
            + (", one for prefill checkpoints)" if spec.checkpoint_blocks else ")")
            if spec.hybrid
            else "one block a sequence per group (no prefix caching for an attention-free model)"
        )
        return f"{p.state_layers} state layers of {spec.describe()}{padded}; {held}"

    def _outside(self, claimed: int, context: int) -> Term:
        """The GPU beyond the claimed bytes: the CUDA context, cuBLAS and NCCL, which must be free
        beside the claim when vLLM starts, and what is left (beside the claim, or in it as more
        KV blocks where the memory beside it sets the GPU's size)."""
        u = self.o.utilization
        total = self._gpu(claimed, context)
        parts = self._beside_terms(context)
        beside = sum(t.bytes for t in parts)
        names = "the " + ", ".join(t.label for t in parts)
        free = total - claimed - beside
        if free:
            parts += (Term("free", "left free", free, f"{free:,} B", "unused, or more KV blocks", False, SRC_CLAIM),)
        by_claim = total == _claim(claimed, u)
        if by_claim:
            formula = f"(the least M with ⌈M × {_num(u)}⌉ ≥ {claimed:,}) − {claimed:,} = {total - claimed:,} B"
            said = f"vLLM claims ⌈{_num(u)} × the GPU⌉ (--gpu-memory-utilization); the rest " + (
                f"must be free when it starts and holds {names}"
                if self.o.accounting.start_check
                else f"holds {names} (vLLM {self.o.version} does not check it at start: what does not fit fails later)"
            )
        else:
            formula = f"⌈{beside:,} / {_num(1 - u)}⌉ − {claimed:,} = {total - claimed:,} B"
            said = (
                f"{names} outgrow the {_num(1 - u)} share a GPU holding the claim leaves: "
                f"the GPU must be {beside:,} / {_num(1 - u)} B at least, and its larger claim holds more KV blocks"
            )
        label = f"outside the claim ({_num(1 - u)})"
        source = SRC_CONTEXT if self.o.accounting.start_check else SRC_UNCHECKED
        return Term("outside", label, total - claimed, formula, said, not by_claim, source, parts)

    def _settings(self, context: int, why: str, batch: int, blocks: int) -> dict[str, Any]:
        o = self.o
        return {
            "runtime": "vllm",
            "scheme": self.scheme,
            "keep": ",".join(self.weights.keep) or "none",
            "compute_dtype": self.dtype,
            "kv_dtype": o.kv_dtype if o.kv_dtype != "auto" else self.dtype,
            "kv_cache": "vllm",
            "context": context,
            "context_from": why,
            "batch": batch,
            "concurrency": batch,
            "tp": o.tp,
            "pp": o.pp,
            "ep": o.ep,
            "gpus": o.tp * o.pp,
            "gpu_memory_utilization": float(o.utilization),
            "block_size": self.stages[0].pages.block,
            "max_num_seqs": o.seqs,
            "max_num_batched_tokens": o.tokens(context),
            "defaults_for": o.gpu.key if o.gpu is not None else None,
            "kv_blocks": blocks,
            **({"vllm_version": o.version} if o.version != LATEST else {}),
        }

    def _notes(self, stage: Stage, context: int) -> tuple[str, ...]:
        o = self.o
        notes = [self._defaults_note(context)] if o.max_num_seqs is None or o.max_batched_tokens is None else []
        if o.pp > 1:
            notes.append(
                f"pipeline stages of {', '.join(str(len(r)) for r in pp_layers(self.layers, o.pp))} layers; "
                "the busiest stage is planned, and every stage gets the fewest blocks any stage has"
            )
        if any(k.stores == "mla-latent" for k in self.layout.kinds):
            notes.append("MLA: each layer caches its latent (kv_lora_rank + qk_rope_head_dim), the same on every rank")
        if any(k.attention == "sliding" for k in self.layout.kinds):
            notes.append(
                "sliding-window layers: vLLM's hybrid KV cache manager frees blocks outside the window, and "
                f"reserves the window and {o.pp + 1} batches in flight (async scheduling, max_in_flight_tokens) "
                "(--disable-hybrid-kv-cache-manager pages them as full layers; not modelled)"
            )
        if 0 < self.heads.kv < o.tp:
            notes.append(
                f"{self.heads.kv} KV heads over {o.tp} ranks: each rank keeps one, replicated {o.tp // self.heads.kv}×"
            )
        if self.state is not None:
            notes.append(self._state_note(stage.pages))
        if o.gpu is not None and o.gpu.kind != "custom":
            notes.append(_driver_note(o.gpu.memory, o.utilization))
        return tuple(notes)

    def _defaults_note(self, context: int) -> str:
        """Where max_num_seqs and max_num_batched_tokens come from when not given."""
        o = self.o
        if o.version == "0.6":
            return (
                f"max_num_seqs {o.seqs:,} and max_num_batched_tokens {o.tokens(context):,}: vLLM 0.6's defaults "
                "(SchedulerConfig: 256 sequences; max(max_model_len, 2,048) tokens without chunked prefill, "
                "2,048 with it, which EngineArgs turns on past 32,768 tokens)"
            )
        where = f"on the {o.gpu.name}" if o.gpu is not None else "on an H100 or H200 (no --gpu named)"
        capped = f", capped at max_num_seqs × {context:,} tokens" if o.tokens(context) < o.defaults[1] else ""
        return (
            f"max_num_seqs {o.seqs:,} and max_num_batched_tokens {o.tokens(context):,}: vllm serve's defaults "
            f"{where}{capped} (EngineArgs.get_batch_defaults: 1,024 and 8,192 on GPUs of 70 GiB or more but "
            "A100s, 1,024 and 16,384 from 160 GiB, else 256 and 2,048)"
        )

    def _state_note(self, p: Pages) -> str:
        """How vLLM pages the state layers, with the version and GPU the figures hold for."""
        spec = self.state
        assert spec is not None
        if not spec.hybrid:
            return (
                f"state layers paged as vLLM {VLLM_VERSION} does for an attention-free model: one "
                f"{spec.bytes:,} B state per layer and sequence, {p.state_layers} layers to a block"
            )
        raised = f"raised from {self.o.block_size} to {p.block} tokens" if p.block != self.o.block_size else "kept"
        return (
            f"state layers paged as vLLM {VLLM_VERSION} does on an SM90 GPU (H100, H200): the attention block "
            f"{raised} so that its page holds a {spec.bytes:,} B state; prefix caching (on by default) keeps "
            f"{spec.blocks} state blocks per sequence and group; other GPUs' kernels may align blocks otherwise"
        )


# torch.cuda.mem_get_info's total as vLLM logs it (total_gpu_memory): vllm-project/vllm#10511, #11550, #14447
DRIVER_SEEN = "79.22 GiB on an 80 GiB H100, 23.55 to 23.58 GiB on a 24 GiB RTX 4090"


def _driver_note(stated: int, u: Fraction) -> str:
    """vLLM's claim is of the total the driver reports (``torch.cuda.mem_get_info``, in
    ``MemorySnapshot``), a little under a card's stated size: vLLM's own logs show
    ``total_gpu_memory`` 79.22 GiB on an 80 GiB H100 (vllm-project/vllm#10511) and 23.55 to
    23.58 GiB on 24 GiB RTX 4090s (#11550, #14447)."""
    gib = stated / 2**30
    return (
        f"the claim is of the GPU's stated {gib:,.2f} GiB; vLLM takes the total the driver reports "
        f"(torch.cuda.mem_get_info), a little less: its logs show {DRIVER_SEEN}, and every GiB less is "
        f"{float(u):g} GiB less KV cache; "
        "name the size your driver reports as --gpu (e.g. --gpu 23.55GiB) for vLLM's own figure"
    )


def _claim(claimed: int, u: Fraction) -> int:
    """The least GPU memory M whose claim ⌈M × u⌉ (request_memory) holds ``claimed`` bytes."""
    return math.floor((claimed - 1) / u) + 1


def _beside(needed: int, u: Fraction) -> int:
    """The least GPU memory M with M − ⌈M × u⌉ = ⌊M × (1 − u)⌋ ≥ ``needed``."""
    return math.ceil(needed / (1 - u))


def _num(f: Fraction) -> str:
    return f"{float(f):g}"


def _active_share(model: Model, rows: Any) -> Fraction:
    """Of the routed experts' parameters, the share one token uses (k of E; 1 for a dense model)."""
    inactive = model.total - model.active_total
    routed = sum(r.parameters for r in rows if _routed(r))
    if inactive <= 0 or not routed:
        return Fraction(1)
    return Fraction(max(routed - inactive, 0), routed)


def _routed(row: Any) -> bool:
    return row.kind == "experts" and ".experts." in f".{row.name}."
