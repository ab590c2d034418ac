"""How many layers Ollama v0.12.10 offloads: ``llm/memory.go`` ``estimateGPULayers``, step by step.

The estimate reserves, on every GPU it uses, the device's minimum memory (``MinimumMemory``:
457 MiB, 512 MiB on Metal) and one layer "as a buffer" (``blk.0`` and its KV cache), the
projector on the first GPU, then places layers from the last block down while each one fits
under the GPU's free memory less ``OLLAMA_GPU_OVERHEAD`` and the larger of the two graph sizes,
then the output layer (``output_norm`` and ``output``, or ``token_embd`` when tied). The graph
added at the end is the full-offload one when every layer went to the GPUs, else the partial one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .ggml import NEWEST, Graph, OllamaGGUF, gqa_share, vision_graph
from .versions import Release

MIB = 1 << 20
MINIMUM = 457 * MIB  # ml/device.go DeviceInfo.MinimumMemory (CUDA, ROCm, Vulkan)
MINIMUM_METAL = 512 * MIB  # the same, for Metal


@dataclass(frozen=True)
class Device:
    """One GPU as Ollama's discovery reports it: its library and free memory."""

    library: str  # CUDA, ROCm, Metal, Vulkan
    free: int

    @property
    def minimum(self) -> int:
        return MINIMUM_METAL if self.library == "Metal" else MINIMUM


@dataclass(frozen=True)
class Sizes:
    """The sizes estimateGPULayers works with, read from the file once."""

    blocks: tuple[int | None, ...]  # Layer.Size of blk.i (None: the file has no such group)
    kv: tuple[int, ...]  # the cache of each block (GraphSize)
    output: int  # memoryLastLayer: output_norm + (output or token_embd), and a vision tower in the file
    projector: int  # llamaEngineProjectorWeights: every tensor of the projector files, on GPU 0
    partial: int  # graphPartialOffload after the Metal and multi-GPU rules
    full: int  # graphFullOffload after them
    first: int | None = None  # the buffer layer's weights when not blk.0's (v0.7.0: the largest group)


@dataclass(frozen=True)
class Estimate:
    """``MemoryEstimate``: layers offloaded, bytes per GPU, and the total if nothing fitted."""

    layers: int  # Layers: blocks and the output layer placed on GPUs (0: none)
    graph: int  # Graph: the graph size added to each GPU used
    vram: int  # VRAMSize: the allocations summed
    total: int  # TotalSize: VRAMSize + what overflowed to system memory
    split: tuple[int, ...]  # TensorSplit: layers per GPU
    per_gpu: tuple[int, ...]  # GPUSizes
    fully: bool  # every block and the output layer on GPUs: the full-offload graph
    buffer: int  # the one-layer buffer each GPU used reserves (blk.0 + kv[0])
    placed: int  # blocks placed (without the output layer)
    output_placed: bool
    overflow: int


def sizes(f: OllamaGGUF, graph: Graph, projector: int, devices: Sequence[Device], rel: Release = NEWEST) -> Sizes:
    """What estimateGPULayers reads before its loops. Without a projector file, a vision tower in
    the model's own file (``vision.block_count``, ``GGML.VisionGraphSize``: its ``v.*`` weights and
    graph) is held on the first GPU like a projector (v0.6.1 to v0.7.0), then goes with the output
    layer (v0.7.1 on); before v0.6.1 it is not counted."""
    blocks = tuple(f.layer(f"blk.{i}") for i in range(f.blocks))
    head = f.layer("output")
    output = (f.layer("output_norm") or 0) + (head if head is not None else f.layer("token_embd") or 0)
    if projector == 0:
        tower = sum(vision_graph(f, rel))
        projector, output = (tower, output) if rel.vision == "gpu0" else (0, output + tower)
    first = max(f.layer(g) or 0 for g in f.groups) if rel.largest_buffer and f.groups else None
    partial, full = graph.partial or gqa_share(f, sum(graph.kv)), graph.full
    full = full or partial
    if devices and devices[0].library == "Metal":  # "on metal there's no partial offload overhead"
        partial = full
    elif len(devices) > 1:  # "multigpu should always use the partial graph size"
        full = partial
    return Sizes(blocks, graph.kv, output, projector, partial, full, first)


def estimate(s: Sizes, devices: Sequence[Device], overhead: int, num_gpu: int = -1, rel: Release = NEWEST) -> Estimate:
    """``estimateGPULayers``: the layers placed on ``devices`` (all of one library), in its order."""
    graph = max(s.partial, s.full)
    first = s.first if s.first is not None else s.blocks[0] if s.blocks and s.blocks[0] is not None else 0
    buffer = first + (s.kv[0] if s.kv else 0)
    alloc, room = [0] * len(devices), []
    for i, d in enumerate(devices):  # GPUs that hold the overheads, the buffer and one more layer
        gzo = s.projector if not room else 0
        if d.free < overhead + gzo + graph + d.minimum + 2 * buffer:
            continue
        room.append(i)
        alloc[i] += d.minimum + buffer
    overflow = 0
    if room:
        alloc[room[0]] += s.projector
    elif rel.projector_overflow:
        overflow += s.projector
    split, count, overflow = _blocks(s, devices, alloc, room, (overhead, graph, buffer, num_gpu, overflow), rel)
    fully = count >= len(s.blocks)
    placed, output_placed = count, False
    wanted = num_gpu < 0 or count < num_gpu
    if s.output > 0:
        if wanted:
            output_placed = _place(len(room), count, devices, alloc, room, overhead + graph, s.output, split)
            count += output_placed
        if count < len(s.blocks) + 1 and (wanted or rel.output_overflow):  # before v0.7.1 only when wanted
            fully, overflow = False, overflow + s.output
    return _finish(s, alloc, split, count, fully, buffer, placed, output_placed, overflow)


def _blocks(s, devices, alloc, room, at, rel):
    """The loop over blocks, last to first (from blk.0 up before v0.7.0): each goes to
    ``room[i % j]`` if it fits there, and a GPU it does not fit on leaves ``room`` for good.
    Before v0.7.0 what did not fit is counted after the loop, at the last block's size."""
    overhead, graph, buffer, num_gpu, overflow = at
    split, count, size = [0] * len(devices), 0, buffer
    order = range(len(s.blocks) - 1, -1, -1) if rel.blocks_down else range(len(s.blocks))
    for i in order:
        if s.blocks[i] is not None:  # "some models have inconsistent layer sizes"
            size = s.blocks[i] + s.kv[i]
        if 0 <= num_gpu <= count:  # the user's num_gpu reached
            overflow += size if rel.blocks_down else 0
            continue
        for j in range(len(room), 0, -1):
            g = room[i % j]
            if devices[g].free > overhead + alloc[g] + graph + size:
                alloc[g] += size
                split[g] += 1
                count += 1
                break
            del room[i % j]
        if not room and rel.blocks_down:
            overflow += size
    if not rel.blocks_down:
        overflow += max(len(s.blocks) - count, 0) * size
    return split, count, overflow


def _place(j0, count, devices, alloc, room, reserve, size, split) -> bool:
    """The output layer: on ``room[count % j]`` if it fits there (no GPU is dropped here)."""
    for j in range(j0, 0, -1):
        g = room[count % j]
        if devices[g].free > reserve + alloc[g] + size:
            alloc[g] += size
            split[g] += 1
            return True
    return False


def _finish(s, alloc, split, count, fully, buffer, placed, output_placed, overflow) -> Estimate:
    graph = s.full if fully else s.partial
    alloc = [a + graph if n > 0 else a for a, n in zip(alloc, split, strict=True)]
    vram = sum(alloc)
    if count == 0:  # "insufficient VRAM to load any model layers": no layers, nothing on the GPU
        return Estimate(0, 0, 0, vram + overflow, (), (), False, buffer, 0, False, overflow)
    return Estimate(
        count, graph, vram, vram + overflow, tuple(split), tuple(alloc), fully, buffer, placed, output_placed, overflow
    )
