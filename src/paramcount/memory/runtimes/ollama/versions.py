"""Which Ollama's estimate: the rules each release range changed, from v0.2.0 to v0.12.10.

Every Ollama from v0.2.0 to v0.12.10 chose ``num_gpu`` with ``EstimateGPULayers`` /
``estimateGPULayers`` (``llm/memory.go``) and ``GraphSize`` (``llm/ggml.go`` until v0.5.11, then
``fs/ggml/ggml.go``); the scheduler (``server/sched.go``) chose ``num_ctx`` and ``num_parallel``.
Their formulas changed in place over the releases. :data:`DELTAS` lists each change once, at the
release that made it (read from ``git diff`` of those files between the tags), and
:func:`release` applies them in order from v0.2.0's rules: one small data delta per range, one
planner for all. v0.12.11 sizes layers by allocating them on the device (f560bd077) and v0.30
leaves ``-ngl`` to llama.cpp's fit: they estimate nothing, so they are refused here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ....errors import ParamcountError

# The v0.x.y release tags of ollama/ollama that estimated layers (git tag, newest last).
TAGS = {
    2: 8,
    3: 14,
    4: 7,
    5: 13,
    6: 8,
    7: 1,
    8: 0,
    9: 6,
    10: 1,
    11: 11,
    12: 10,
}  # fmt: skip  minor: last patch release
NEWEST = (0, 12, 10)

# fs/ggml/ggml.go KV.OllamaEngineRequired from v0.11.11 (before it, these too went through the estimate)
ENGINE_0_11_11 = frozenset({"gemma3", "gemma3n", "mistral3", "llama4", "mllama", "qwen25vl", "gptoss", "gpt-oss"})
# fs/ggml/ggml.go GGML.FlashAttention from v0.11.8: flash attention on by default for these
FLASH_0_11_8 = frozenset({"gptoss", "gpt-oss"})


@dataclass(frozen=True)
class Release:
    """The rules of one Ollama release that the estimate reads (see :data:`DELTAS` for when each changed)."""

    version: tuple[int, int, int]
    default_context: int = 2048  # api.DefaultOptions NumCtx / OLLAMA_CONTEXT_LENGTH's default
    context_env: bool = False  # OLLAMA_CONTEXT_LENGTH read (v0.5.13 on)
    auto_parallel: int = 4  # server/sched.go defaultParallel: tried for a full fit, then 1
    projector_parallel_one: bool = True  # sched: a model with a projector file runs with parallel 1
    gpu_overhead: bool = False  # OLLAMA_GPU_OVERHEAD read (envconfig.GpuOverhead)
    kv_types: bool = False  # OLLAMA_KV_CACHE_TYPE applied to the estimate's cache (with flash attention)
    llama_full_vocab: bool = False  # llama's full-offload graph at least 4·batch·(embedding + vocab)
    graphs: frozenset[str] = frozenset(
        {"llama", "gemma", "gemma2", "command-r", "qwen2", "phi2", "stablelm", "deepseek2"}
    )  # GraphSize's cases
    trained_cut: bool = False  # NewLlamaServer cuts num_ctx to the trained context_length (v0.9.3 on)
    per_layer_heads: bool = False  # HeadCountMax/… read arrays of head counts (v0.9.3)
    gemma3_sliding: bool = False  # gemma3's local layers cached at num_parallel·sliding_window + batch
    vision: str = "none"  # a vision tower in the model's file (VisionGraphSize): none, gpu0 or last
    blocks_down: bool = False  # layers placed from the last block down (else from blk.0 up)
    largest_buffer: bool = False  # v0.7.0: the buffer layer is the largest layer group, not blk.0
    ctx_floor: str = "projector"  # num_ctx ≥ 2048: with a projector file (estimate), every model, vision (sched)
    projector_overflow: bool = False  # a projector no GPU holds counted in the total (v0.7.1 on)
    output_overflow: bool = False  # the output layer counted in the total even past num_gpu (v0.7.1 on)
    gptoss: str = ""  # GraphSize's gptoss case: "", "2x", "1x", "2/6", "flash"
    gptoss_context: bool = False  # server/routes.go: num_ctx at least 8192 for the gptoss family (v0.11.0 on)
    mxfp4: str = ""  # MXFP4: none, ggml type "4" (v0.11.0), type 39 too at 129 B/256 (v0.11.5), "39" (v0.11.8)
    bf16: bool = False  # TypeSize knows BF16 (ggml type 30): v0.3.14 to v0.5.11, then from v0.5.13
    gptoss_flash: bool = True  # SupportsFlashAttention (false for gptoss in v0.11.2 to v0.11.4)
    flash_default: frozenset[str] = frozenset()  # GGML.FlashAttention: on by default for these
    xavier_no_flash: bool = False  # no flash attention on CUDA compute capability 7.2 (v0.12.4 on)
    subsets: bool = False  # pickBestFullFitByLibrary tries 1, 2, … GPUs (else one GPU, then all)
    fit_in_load: bool = False  # the fit checked in llamaServer.Load, after NewLlamaServer's trained-length cut
    zero_parallel_auto: bool = True  # OLLAMA_NUM_PARALLEL=0 tries defaultParallel, then 1 (`<= 0` in sched.go)
    engine: frozenset[str] = frozenset()  # architectures sized by allocating them, not estimated
    recurrent: bool = False  # a layer without heads cached as its conv + SSM state (f32)
    unsupported: frozenset[str] = frozenset({"mllama", "qwen25vl", "gemma3n", "mistral3"})  # not modelled here

    @property
    def name(self) -> str:
        return "v" + ".".join(map(str, self.version))


# (release, changes): each the first release with that rule, from each file's git history
DELTAS: tuple[tuple[tuple[int, int, int], dict[str, object]], ...] = (
    ((0, 2, 2), {"graphs": "+chatglm"}),  # llm/ggml.go GraphSize: case "chatglm"
    ((0, 3, 10), {"gpu_overhead": True, "llama_full_vocab": True}),  # b05c9e83d; llama fullOffload max(…, vocab)
    ((0, 3, 14), {"bf16": True}),  # typeSize: case 30
    ((0, 5, 0), {"kv_types": True}),
    ((0, 5, 12), {"bf16": False}),  # fs/ggml's first TypeSize, without BF16
    ((0, 5, 13), {"bf16": True}),  # 1bdab9fdb: k/v context quantization
    ((0, 5, 13), {"context_env": True}),  # envconfig.ContextLength
    ((0, 6, 0), {"graphs": "+gemma3"}),  # case "gemma", "gemma2", "gemma3"
    ((0, 6, 1), {"vision": "gpu0"}),  # VisionGraphSize for gemma3, held like a projector
    ((0, 6, 3), {"gemma3_sliding": True}),  # per-layer kv
    ((0, 6, 7), {"default_context": 4096, "auto_parallel": 2, "projector_parallel_one": False, "graphs": "+llama4"}),
    ((0, 7, 0), {"blocks_down": True, "largest_buffer": True}),  # 94ab428e3 / 0478d440f
    (
        (0, 7, 1),
        {
            "largest_buffer": False,
            "vision": "last",
            "projector_overflow": True,
            "output_overflow": True,
            "ctx_floor": "all",
        },
    ),
    ((0, 9, 3), {"per_layer_heads": True, "trained_cut": True}),  # b2b270ad5: HeadCountMax, HeadCountKVMin
    ((0, 10, 0), {"auto_parallel": 1}),
    ((0, 11, 0), {"gptoss": "2x", "gptoss_context": True, "mxfp4": "4"}),  # partial = 2 × full
    ((0, 11, 2), {"gptoss_flash": False}),
    ((0, 11, 3), {"gptoss": "1x"}),  # partialOffload = fullOffload
    # pickBestFullFitByLibrary, called from llamaServer.Load; GetRunner's floor; OLLAMA_NUM_PARALLEL=0 read as 1
    ((0, 11, 5), {"subsets": True, "ctx_floor": "sched", "fit_in_load": True, "zero_parallel_auto": False}),
    ((0, 11, 5), {"gptoss_flash": True, "mxfp4": "39/256", "gptoss": "2/6"}),  # TypeSize 39; no full graph
    ((0, 11, 8), {"gptoss": "flash", "flash_default": FLASH_0_11_8, "mxfp4": "39"}),  # 85ccf7354
    ((0, 11, 11), {"engine": ENGINE_0_11_11, "recurrent": True}),  # eb10390de: new estimates by default
    ((0, 12, 0), {"engine": ENGINE_0_11_11 | {"qwen3"}}),
    ((0, 12, 3), {"engine": ENGINE_0_11_11 | {"qwen3", "qwen3moe"}}),
    ((0, 12, 4), {"flash_default": FLASH_0_11_8 | {"qwen3", "qwen3moe"}, "xavier_no_flash": True}),  # aa45f7ce2
    ((0, 12, 5), {"engine": ENGINE_0_11_11 | {"qwen3moe"}}),  # qwen3 back on the llama engine
    ((0, 12, 6), {"engine": ENGINE_0_11_11 | {"qwen3", "qwen3moe"}, "flash_default": "+gemma3"}),
    ((0, 12, 7), {"engine": ENGINE_0_11_11 | {"qwen3", "qwen3moe", "qwen3vl", "qwen3vlmoe"}}),
    ((0, 12, 8), {"flash_default": FLASH_0_11_8 | {"gemma3", "qwen3", "qwen3moe", "qwen3vl", "qwen3vlmoe"}}),
)


def parse(text: str | None) -> tuple[int, int, int]:
    """``0.2.8`` or ``v0.2.8`` (``0.2`` is that line's last release); None or ``latest``: the newest."""
    if text is None or (isinstance(text, str) and text.strip().lower() in ("", "latest")):
        return NEWEST
    if not isinstance(text, str):
        raise ParamcountError(f"expected a release such as 0.6.5, got {text!r}", field="--ollama-version")
    m = re.fullmatch(r"v?0\.(\d{1,2})(?:\.(\d{1,2}))?", text.strip())
    minor = int(m.group(1)) if m else -1
    if minor in TAGS:
        patch = TAGS[minor] if m.group(2) is None else int(m.group(2))  # type: ignore[union-attr]
        if patch <= TAGS[minor]:
            return (0, minor, patch)
    if m and (minor > 12 or (minor == 12 and int(m.group(2) or 0) > 10)):
        raise ParamcountError(
            f"Ollama {text} does not estimate layers (v0.12.11 on sizes them by allocating on the device, v0.30 on "
            "leaves -ngl to llama.cpp's fit): give 0.2.0 … 0.12.10", field="--ollama-version",
        )  # fmt: skip
    raise ParamcountError(f"unknown Ollama release {text!r}: give 0.2.0 … 0.12.10 or latest", field="--ollama-version")


def release(text: str | None = None) -> Release:
    """The rules of the named Ollama release (default: v0.12.10, the newest that estimated)."""
    want = parse(text)
    r = Release(want)
    for since, changes in DELTAS:
        if since <= want:
            r = replace(r, **{k: _apply(getattr(r, k), v) for k, v in changes.items()})
    return r


def _apply(old: object, new: object) -> object:
    """A delta's value, or ``"+name"``: one more GraphSize case."""
    if isinstance(new, str) and new.startswith("+") and isinstance(old, frozenset):
        return old | {new[1:]}
    return new
