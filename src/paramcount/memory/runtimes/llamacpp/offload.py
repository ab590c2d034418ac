"""A llama.cpp plan with its buffers per backend, where ``-ngl``, ``-ot`` or ``-ts`` place them.

What each GPU holds and what stays in host memory, by the placement rules of
:mod:`.placement`:

* model buffers: each GPU's tensors as ggml-cuda allocates them (``cuda_padding``); the host's
  (the input layer, the layers not offloaded, the tensors ``-ot`` sends to the CPU): with mmap
  (the default) the file's own pages, CPU_Mapped (``llama_model_loader::create_tensor``: "avoid
  using a host buffer when using mmap" turns CUDA_Host, which the CPU list offers first, into
  CPU, so no CPU_REPACK copy is made beside a GPU);
* KV buffers: each layer's K and V on its layer's device, or all on the CPU with
  ``--no-kv-offload`` (``llama_kv_cache::llama_kv_cache``: ``offload ? model.dev_layer(il) :
  CPU``); -ot moves no cache;
* compute buffers, one per backend (``llama_context::sched_reserve``), estimates: for the
  graphs :mod:`.splits` emits (llama, qwen2, qwen3, qwen3moe), the scheduler's splits replayed
  and each backend's buffer placed by ggml-alloc (:func:`sched_replay`; to the byte over RPC
  devices). Otherwise, in closed form: the GPUs' follow the whole-graph model of
  :func:`.plan.compute`, each over the layers it runs, without ``inp_embd`` (``build_inp_embd``
  makes it a graph input: the CPU's); the first GPU also runs the layers left in host memory on a prompt
  (``ggml_backend_sched_backend_id_from_cur`` offloads an op on a host weight to the first backend
  whose ``offload_op`` takes it: ggml-cuda's takes batches of 32 or more); the weights copied in
  for a split are freed after it (``ggml_backend_sched_split_graph``: with one copy a split's
  inputs are ordinary nodes to ggml-alloc), so with no layer on a GPU its peak is the output op.
  With pipeline parallelism (``llama_context::llama_context``'s ``pipeline_parallel``) the
  scheduler keeps ``GGML_SCHED_MAX_COPIES`` = 4 copies of every input, never freed. The CPU
  backend's buffer is the first GPU's host buffer type, CUDA_Host (``llama_context::llama_context``),
  on one GPU too: the graph inputs (``GGML_TENSOR_FLAG_INPUT`` tensors go to the last backend, the
  CPU), ``inp_embd`` and the input layer's rows (GET_ROWS, never offloaded);
* the output buffer: the host buffer of the output layer's device (``output_reserve``), host
  memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ....errors import ParamcountError
from ....records import replace
from ...core.terms import Term
from . import plan as lcp
from .placement import CPU, INPUT_LAYER, PLACEMENT_OPTIONS, Placed, Placement, layer_range, place, placement
from .sched import SCHED_MAX_COPIES, Inputs, pipeline_copies, received


@dataclass(frozen=True)
class Layers:
    """The file's layer counts: ``n_layer_all`` (llama_hparams: every block, multi-token
    prediction ones too) and ``n_layer`` (the ones run, which cache)."""

    n_layer_all: int
    n_layer: int


# ---- names ------------------------------------------------------------------------------------

_RANGE = re.compile(r"(?<=\.)(\d+)(?:–(\d+))?(?=\.)")
_EXPERTS_ONLY = re.compile(r"_\(ch\|\)exps$")  # LLM_FFN_EXPS_REGEX's and fit.cpp's expert patterns end so
_COPY = "token_embd.weight as the output head"
_HEAD = re.compile(r"^output\.weight$|^token_embd\.weight as the output head$")
_EXPERT = {"gate_up_proj": "gate_up", "down_proj": "down", "up_proj": "up", "gate_proj": "gate", "w1": "gate"}


def namer(arch: str | None, gguf: bool, inputs: set[int], towers: tuple[str, ...]):
    """``place``'s ``names``: a row's GGUF name template and layers. A config's names come from
    gguf-py's map (:mod:`paramcount.gguf.names`); stacked experts without one are named as llama.cpp's
    ``ffn_{gate,up,down,gate_up}_exps`` (what --cpu-moe and --n-cpu-moe match), and any other
    such tensor ``blk.N.`` and its checkpoint name (``unnamed`` counts them)."""
    from ....gguf.names import name_map

    names = name_map(arch) if arch and not gguf else None
    unnamed: list[str] = []

    def names_of(r: Any) -> tuple[str, int, int] | None:
        if towers and r.name.startswith(towers):
            return None
        if gguf:
            span = layer_range(r.name)
            return (r.name, -1, -1) if span is None else (re.sub(r"^blk\.[\d–]+\.", "blk.{}.", r.name), *span)
        return _config_name(r, names, id(r) in inputs, unnamed)

    return names_of, unnamed


# an image+text model's language model under its own prefix: the converter names it as the text model's
_LANGUAGE = re.compile(r"^(model\.language_model\.|language_model\.model\.|model\.text_model\.)")


def _gguf(names: Any, name: str) -> str | None:
    if names is None:
        return None
    return names.gguf(name) or (names.gguf(_LANGUAGE.sub("model.", name)) if _LANGUAGE.match(name) else None)


def _config_name(r: Any, names: Any, is_input: bool, unnamed: list[str]) -> tuple[str, int, int]:
    m = _RANGE.search(r.name)
    if is_input or m is None:
        found = _gguf(names, r.name)
        if is_input and (found is None or not INPUT_LAYER.match(found)):
            found = "token_embd.weight"
        return found or ("output.weight" if r.kind == "output_head" else r.name), -1, -1
    lo, hi = int(m[1]), int(m[2] or m[1])
    one = r.name[: m.start()] + str(lo) + r.name[m.end() :]
    found = _gguf(names, one)
    if found is not None and found.startswith(f"blk.{lo}."):
        return "blk.{}." + found[len(f"blk.{lo}.") :], lo, hi
    tail = r.name[m.end() + 1 :]
    proj = tail.split(".")[-1] if r.kind == "experts" else None
    if proj in _EXPERT:
        return "blk.{}.ffn_" + _EXPERT[proj] + "_exps.weight", lo, hi
    unnamed.append(r.name)
    return "blk.{}." + tail, lo, hi


# ---- the model buffers ------------------------------------------------------------------------

_DEVICE_SRC = (
    "llama.cpp src/llama-model.cpp llama_model_base::load_tensors (i_gpu_start = n_layer_all + 1 - n_gpu_layers,"
    " get_layer_buft_list: the -ts split points), llama_model::n_gpu_layers; src/llama-model-loader.cpp"
    " create_tensor (tensor_buft_overrides: std::regex_search, first match), common/arg.cpp (--cpu-moe,"
    " --n-cpu-moe: common.h llm_add_n_cpu_ffn_overrides); ggml-cuda get_alloc_size (row padding, 128 B)"
)
_HOST_SRC = (
    "llama.cpp src/llama-model.cpp load_tensors (dev_input: the CPU; layers below i_gpu_start: the CPU list),"
    " make_cpu_buft_list (CUDA_Host before the CPU's extra buffers); src/llama-model-loader.cpp create_tensor"
    " (with mmap a host buffer type becomes the CPU's: CPU_Mapped)"
)


@dataclass(frozen=True)
class Offload:
    """The weights placed once per planner: which rows each GPU and the host hold."""

    placement: Placement
    layers: Layers
    placed: tuple[Placed, ...]
    unnamed: tuple[str, ...]  # config tensors whose GGUF name is not known here
    gguf: bool = True

    def on(self, device: int | None) -> list[Any]:
        return [pl.row for pl in self.placed if pl.device == device]

    def output_device(self) -> int | None:
        return self.placement.layer_gpu(self.layers.n_layer_all, self.layers.n_layer_all, self.placement.splits())

    def layer_devices(self) -> list[int | None]:
        """The device of each layer that runs (0 .. n_layer - 1)."""
        p, splits, n_all = self.placement, self.placement.splits(), self.layers.n_layer_all
        return [p.layer_gpu(il, n_all, splits) for il in range(self.layers.n_layer)]

    def output_weight(self) -> int:
        """The bytes of the output head in host memory (output.weight, or token_embd loaded
        again as the head), which the output op reads when no layer is on a GPU."""
        heads = [pl for pl in self.placed if pl.device is None and _HEAD.match(pl.name)]
        return sum(pl.row.bytes // max(pl.row.count, 1) for pl in heads[:1])

    def unsure(self) -> bool:
        """Whether an -ot pattern meets a config tensor whose GGUF name is not known here: any
        pattern but those that name experts only (--cpu-moe's, --n-cpu-moe's, fit's), which no
        such tensor's name matches whatever it is."""
        return bool(self.unnamed) and any(not _EXPERTS_ONLY.search(pt) for pt, _ in self.placement.overrides)

    def _halves(self, pl: Placed) -> int:
        """2 for a config's fused gate_up experts, which the converter writes as two tensors."""
        return 2 if not self.gguf and "_gate_up_exps" in pl.name else 1

    def fused_differ(self) -> bool:
        """Whether an -ot pattern treats a layer's gate and up experts apart, where a config's
        row holds them fused (the file llama.cpp loads has them as two tensors)."""
        fused = {int(pl.name.split(".")[1]) for pl in self.placed if self._halves(pl) == 2}
        p = self.placement
        for il in sorted(fused):
            seen = {p.override(f"blk.{il}.ffn_{t}_exps.weight") for t in ("gate", "up", "gate_up")}
            if len(seen) > 1:
                return True
        return False


def build(model: Any, w: Any, every: Any, arch: str | None, gguf: bool, p: Placement, copy: Any) -> Offload:
    """Place ``w``'s rows (the loaded weights; ``every``: the file's, multi-token-prediction
    blocks too, which count in n_layer_all) and ``copy``, the token embedding llama.cpp loads
    again as the output head (None: none)."""
    towers = () if gguf else lcp._towers(model.tree)
    layers = _layers(every, towers, lcp._mtp_first(model))
    inputs = {id(r) for r in lcp._input_layer(model, w, gguf)}
    names, unnamed = namer(arch, gguf, inputs, towers)
    placed = place(w.rows, names, layers.n_layer_all, p)
    if copy is not None:  # create_tensor: TENSOR_DUPLICATED token_embd is placed as LLM_TENSOR_OUTPUT
        buft = p.override("token_embd.weight")
        dev = p.layer_gpu(layers.n_layer_all, layers.n_layer_all, p.splits()) if buft is None else None
        if buft not in (None, CPU):
            dev = p.names().index(buft)
        placed.append(Placed(copy, dev, _COPY))
    return Offload(p, layers, tuple(placed), tuple(unnamed), gguf)


def layers_of(planner: Any) -> Layers:
    """The layer counts of a planner's model."""
    towers = () if planner.gguf else lcp._towers(planner.model.tree)
    return _layers(planner.every, towers, lcp._mtp_first(planner.model))


def _layers(every: Any, towers: tuple[str, ...], mtp: tuple[str, int] | None) -> Layers:
    """n_layer_all: the highest block number of the file plus one (an mmproj tower's are
    another file's); n_layer: up to the first multi-token-prediction block, which llama.cpp
    skips (llama_hparams::n_layer)."""
    found = [_last(r.name) for r in every.rows if not (towers and r.name.startswith(towers))]
    n_all = max((n for n in found if n is not None), default=-1) + 1
    return Layers(n_all, mtp[1] if mtp is not None else n_all)


def _last(name: str) -> int | None:
    m = _RANGE.search(name)
    return None if m is None else int(m[2] or m[1])


def weight_terms(off: Offload, w: Any, model: Any = None, every: Any = None) -> tuple[Term, Term | None]:
    """The GPUs' model buffers (one term, a part per GPU when there are several) and the host's."""
    names = off.placement.names()
    per = []
    for d, name in enumerate(names):
        rows = off.on(d)
        padding = lcp.cuda_padding(rows)
        t = replace(w, rows=tuple(rows)).term()
        pad = Term("weights.padding", "ggml-cuda padding and alignment", padding, f"{padding:,} B", "", False)
        parts = t.parts + ((pad,) if padding else ())
        per.append(
            replace(t, key=f"weights.{name}", label=f"{name} model buffer", bytes=t.bytes + padding, parts=parts)
        )
    total = sum(t.bytes for t in per)
    n = sum(pl.row.count for pl in off.placed if pl.device is not None)
    formula = (
        " + ".join(f"{t.bytes:,} B ({t.label})" for t in per) + f" = {total:,} B"
        if len(per) > 1
        else (f"{n:,} tensors on the GPU, with ggml-cuda's row padding and 128 B alignment = {total:,} B")
    )
    label = f"weights, {names[0]} model buffer" if len(names) == 1 else f"weights, model buffers on {len(names)} GPUs"
    said = _placed_said(off)
    guess = off.unsure() or off.fused_differ()
    if off.fused_differ():
        said += (
            "; an -ot pattern places a layer's gate and up experts apart, which this config holds as one fused"
            " tensor: it is placed as a whole, by ffn_gate_up_exps"
        )
    device = Term("weights", label, total, formula, said, guess, _DEVICE_SRC,
                  tuple(per) if len(per) > 1 else per[0].parts)  # fmt: skip
    return device, _host_weights(off, w, model, every)


def _host_weights(off: Offload, w: Any, model: Any, every: Any) -> Term | None:
    """The host's model buffer: with mmap, what llama.cpp maps and logs, the file's span from the
    first host tensor to the end of the last (:func:`mapped_span`; the tensors' sum where the
    file's order is not known). A token_embd loaded again as the output head is the same file
    data (``create_tensor`` TENSOR_DUPLICATED: one mapping), counted once."""
    rows = [pl.row for pl in off.placed if pl.device is None and pl.name != _COPY]
    if not rows:
        return None
    t = replace(w, rows=tuple(rows)).term()
    span = mapped_span(model, every.rows, rows) if model is not None else None
    size, formula = t.bytes, t.formula
    if span is not None:
        size, formula = span, f"the file's span over them, each tensor padded to general.alignment = {span:,} B"
    said = (
        "the input layer, the layers -ngl leaves on the CPU and the tensors -ot sends there; with mmap (the"
        " default) the file's own pages, CPU_Mapped: llama.cpp logs the file's span from the first of them to the"
        " end of the last, which may hold GPU tensors between them (mapped, never read); host RAM, not in the GPU"
        " total" + ("" if span is not None else "; the file's order is not known here: the tensors' sum")
    )
    label = "host model buffer (CPU_Mapped)"
    return Term("host_weights", label, size, formula, said, t.estimate, _HOST_SRC, t.parts, host=True)


def mapped_span(model: Any, every: Any, rows: list[Any]) -> int | None:
    """The CPU_Mapped buffer llama.cpp logs for a GGUF file: from the first of ``rows``' tensors
    in the file to the end of the last (``every``: the file's rows), each tensor's data padded to
    general.alignment (llama_model_loader::get_mapping_range); None without the file's order."""
    from ....gguf.reader import DATA_ORDER

    order = (model.config or {}).get(DATA_ORDER)
    if not order:
        return None
    held = lcp._tensors(rows)
    at = [i for i, name in enumerate(order) if name in held]
    if not at:
        return None
    sizes = lcp._tensors(list(every))
    names = order[at[0] : at[-1] + 1]
    if any(n not in sizes for n in names):
        return None
    align = model.config.get("general.alignment", lcp.ALIGNMENT)
    return sum(-(-sizes[n] // align) * align for n in names[:-1]) + sizes[names[-1]]


def _placed_said(off: Offload) -> str:
    p, layers = off.placement, off.layers
    n_all, ngl = layers.n_layer_all, p.ngl(layers.n_layer_all)
    start = max(n_all + 1 - ngl, 0)
    gpu = "GPUs" if p.devices > 1 else "GPU"
    run = f"layers {start}–{n_all - 1} and the output layer on the {gpu}" if start < n_all else ""
    run = run or (f"the output layer alone on the {gpu}" if ngl >= 1 else "nothing on the GPU")
    said = (
        f"-ngl {ngl if p.gpu_layers is not None else 'all'} of {n_all} repeating layers + the output layer"
        f" (llama.cpp offloads from the last, the output layer first): {run}; the input layer on the CPU"
    )
    if p.devices > 1:
        said += f"; layers split over {', '.join(p.names())} by -ts {','.join(f'{v:g}' for v in p.tensor_split)}"
    if p.overrides:
        said += f"; {len(p.overrides)} tensor override(s), the first matching pattern wins"
    if off.unsure():
        said += (
            f"; {len(off.unnamed)} tensor row(s) of this config have no GGUF name known here and were matched as"
            f" blk.N. and their checkpoint name (first: {off.unnamed[0]})"
        )
    return said


# ---- the context's buffers --------------------------------------------------------------------

_KV_SRC = (
    "llama.cpp src/llama-kv-cache.cpp llama_kv_cache::llama_kv_cache (each layer's K and V in offload ?"
    " model.dev_layer(il) : the CPU buffer type; --no-kv-offload: offload false)"
)


def shares(off: Offload, n: int, where: str = "") -> tuple[dict[int | None, int], bool]:
    """How many of ``n`` caching layers each device holds, and whether that is exact: it is when
    every layer caches, or ``where`` (the layout's words) lists them; otherwise they are taken
    spread evenly over the stack (largest remainder)."""
    devs = off.layer_devices() if off.placement.kv_offload else [None] * off.layers.n_layer
    at = _indices(where, n, len(devs)) if n != len(devs) else range(n)
    counts: dict[int | None, int] = {}
    for d in devs if at is None else (devs[i] for i in at):
        counts[d] = counts.get(d, 0) + 1
    if at is not None:
        return counts, True
    total = max(len(devs), 1)
    share = {d: c * n // total for d, c in counts.items()}
    left = n - sum(share.values())
    for d in sorted(counts, key=lambda d: -(counts[d] * n % total))[:left]:
        share[d] += 1
    return share, len(counts) == 1


_RUNS = re.compile(r"\d+(–\d+)?(, \d+(–\d+)?)*")


def _indices(where: str, n: int, layers: int) -> list[int] | None:
    """The layer indices a layout's ``where`` lists in full (``0–3, 5–8, 10``; not one cut short
    with …), when they are ``n`` of the ``layers``."""
    if not _RUNS.fullmatch(where):
        return None
    out: list[int] = []
    for run in where.split(", "):
        a, _, b = run.partition("–")
        out += range(int(a), int(b or a) + 1)
    return out if len(out) == n and out[-1] < layers else None


def split_term(off: Offload, t: Term, pieces: list[tuple[int, int]], host_key: str, host_label: str):
    """A cache term cut into the GPUs' part and the host's (None where a side holds none);
    ``pieces``: (bytes per layer, caching layers, which: the layout's words) per kind of layer."""
    names = off.placement.names()
    gpu: dict[str, int] = {}
    host, exact, counts = 0, True, {}
    for per_layer, layers, where in pieces:
        share, ok = shares(off, layers, where)
        exact &= ok
        for d, c in share.items():
            counts[d] = counts.get(d, 0) + c
            if d is None:
                host += c * per_layer
            elif c:
                gpu[names[d]] = gpu.get(names[d], 0) + c * per_layer
    said = (
        ", ".join(f"{counts.get(d, 0)} caching layers on {n}" for d, n in enumerate(names))
        + f", {counts.get(None, 0)} on the CPU"
        + ("" if exact else " (which layers cache is not known here by index: taken spread evenly)")
    )
    parts = tuple(Term(f"{t.key}.{n}", n, b, f"{b:,} B", "", not exact) for n, b in gpu.items())
    total = sum(gpu.values())
    on_gpu = off_gpu = None
    if total:
        formula = " + ".join(f"{b:,} B ({n})" for n, b in gpu.items()) + f" = {total:,} B"
        on_gpu = replace(t, bytes=total, formula=formula, assumption=t.assumption + "; " + said,
                         estimate=t.estimate or not exact, parts=parts if len(names) > 1 else t.parts)  # fmt: skip
    if host:
        off_gpu = Term(host_key, host_label, host, f"{host:,} B", said, t.estimate or not exact, _KV_SRC, host=True)
    return on_gpu, off_gpu


# the moments of :func:`.plan.compute` that count ``inp_embd`` (the attention's residual, the
# output's ``below_logits``): on a GPU it is not there (it is a graph input, on the CPU). The
# feed-forward's third n_embd block is there: the GPU's copy of inp_embd, or of the hidden state
# from the GPU before. Measured (tests/fixtures/llamacpp_multidev.json): an attention-peaked GPU
# (no flash attention) holds the one-CPU moment less n_embd, a feed-forward-peaked first GPU the
# one-CPU moment, each with its small inputs
_EMBD_MOMENTS = ("compute.attention", "compute.output")


@dataclass(frozen=True)
class Graph:
    """What the reserved graph's scheduler moves between backends, in bytes: ``inputs`` (token
    ids and positions), ``masks`` (the KQ masks), ``embd`` (one n_embd × n_tokens F32 block),
    ``logits`` (n_vocab × n_tokens F32), ``positions`` (n_tokens I32), ``idxs`` (each KV cache's
    k_idxs and v_idxs, I64) and ``out_ids`` (n_tokens I32)."""

    inputs: int
    masks: int
    embd: int
    logits: int
    positions: int
    idxs: int = 0
    out_ids: int = 0

    def small(self) -> Inputs:
        """The split inputs beside the n_embd blocks (:class:`.sched.Inputs`)."""
        return Inputs(self.positions, self.idxs, self.masks, self.out_ids)


def compute_terms(off: Offload, base: Term, g: Graph, shape: Any = None) -> tuple[Term, Term]:
    """The GPUs' compute buffers and the CPU backend's (CUDA_Host), estimates; ``shape``: the
    model's widths (:class:`.plan.Shape`), for what -ot sends to another GPU."""
    parts = on_gpu(base, g)
    moments = {p.key: p.bytes for p in parts}
    per = _per_gpu(off, moments, g, received(off, shape, g.positions // 4) if shape is not None else {})
    total = sum(t.bytes for t in per)
    many = len(per) > 1
    formula = " + ".join(f"{t.bytes:,} B ({t.label})" for t in per) + f" = {total:,} B" if many else per[0].formula
    src = (
        base.source
        + "; ggml/src/ggml-backend.cpp ggml_backend_sched_backend_id_from_cur, ggml_backend_sched_split_graph;"
        " held to llama.cpp over 2 RPC devices in tests/fixtures/llamacpp_multidev.json"
    )
    gpu = replace(base, bytes=total, formula=formula, assumption=base.assumption + _compute_said(off), source=src,
                  parts=tuple(per) if many else parts)  # fmt: skip
    return gpu, host_compute(g, pipeline(off))


def on_gpu(base: Term, g: Graph) -> tuple[Term, ...]:
    """:func:`.plan.compute`'s moments as a GPU holds them: without ``inp_embd``, which
    ``build_inp_embd`` makes a graph input (``ggml_set_input``), so the scheduler places it on
    the CPU (``ggml_backend_sched_backend_id_from_cur``); the GPU's copy of it is a split input,
    freed after the first layer."""
    out = []
    for p in base.parts:
        if p.key in _EMBD_MOMENTS:
            p = replace(p, bytes=p.bytes - g.embd, formula=p.formula + f" − inp_embd {g.embd:,} B (on the CPU)")
        out.append(p)
    return tuple(out)


def one_gpu(planner: Any, found: tuple[Term, ...], cells: Any, attention: Any, comp: Term | None) -> tuple[Term, ...]:
    """Every layer on one GPU (no placement given): its compute buffer without ``inp_embd``
    (:func:`on_gpu`) and the CPU backend's, CUDA_Host (:func:`host_compute`), which
    ``llama_context::sched_reserve`` allocates beside it."""
    if comp is None or planner.options.device != "gpu":
        return found
    every = _every_layer(planner)
    found_sizes = sched_replay(every, cells)
    if found_sizes is not None:  # the graph the split replay emits: as on several GPUs (-ts 1 places the same)
        device, host = replayed_terms(every.offload, comp, *found_sizes)
        return (*(device if t is comp else t for t in found), host)
    g = graph(planner, cells, attention)
    parts = on_gpu(comp, g)
    key, size = gpu_peak({p.key: p.bytes for p in parts}, g)
    formula = f"the largest moment on the GPU, {key.split('.')[-1]}, with its inputs = {size:,} B"
    said = comp.assumption + "; inp_embd, a graph input, is on the CPU (ggml_backend_sched_backend_id_from_cur)"
    device = replace(comp, bytes=size, formula=formula, assumption=said, parts=parts)
    return (*(device if t is comp else t for t in found), host_compute(g))


def _every_layer(planner: Any) -> Any:
    """The planner with its (default) placement's offload built: every layer on the one GPU."""
    import copy

    other = copy.copy(planner)
    out = lcp._output_copy(planner.loaded, planner.arch, planner.gguf)
    other.offload = build(planner.model, planner.loaded, planner.every, planner.arch, planner.gguf,
                          planner.placement, out)  # fmt: skip
    return other


def gpu_peak(moments: dict[str, int], g: Graph) -> tuple[str, int]:
    """A GPU's largest moment and its bytes: at a layer's moment the positions and the KV
    indices are there too (split inputs, live to the split's last layer; the token ids stay on
    the CPU); at the output's they are freed (measured, tests/fixtures/llamacpp_multidev.json)."""
    sized = {k: v + (0 if k == "compute.output" else g.positions + g.idxs) for k, v in moments.items()}
    key = max(sized, key=sized.get)
    return key, sized[key]


def pipeline(off: Offload) -> bool:
    """Whether the scheduler runs with pipeline parallelism (``llama_context::llama_context``:
    several devices, n_gpu_layers past n_layer, -sm layer, offload_kqv, no tensor overrides),
    so keeping ``GGML_SCHED_MAX_COPIES`` copies of its inputs (``ggml_backend_sched_new``:
    n_copies)."""
    p = off.placement
    every = None not in off.layer_devices() and off.output_device() is not None
    return p.devices > 1 and every and p.split_mode == "layer" and p.kv_offload and not p.overrides


def _per_gpu(off: Offload, moments: dict[str, int], g: Graph, got: dict[int, int]) -> list[Term]:
    """Each GPU's buffer: the largest moment among the layers it runs (the first GPU also those
    in host memory, on a prompt), with its inputs (:func:`gpu_peak`). The copies of host weights
    and K/V it makes for those splits are freed after their split (``ggml_backend_sched_split_graph``:
    with one copy the split inputs are ordinary graph nodes to ggml-alloc), so they add nothing,
    but where no layer and no output is on a GPU: the peak is then the output op, reading the
    logits, the output weight and one n_embd block. With pipeline parallelism each GPU keeps
    4 copies of its split inputs (:func:`.sched.pipeline_copies`); ``got``: what a GPU runs
    for layers on another device (:func:`.sched.received`)."""
    p, devs, out = off.placement, off.layer_devices(), off.output_device()
    on_host = None in devs
    layer_keys = [k for k in moments if k != "compute.output" and (p.kv_offload or k != "compute.attention")]
    parallel, first = pipeline(off), next((d for d in devs if d is not None), out)
    per = []
    for d, name in enumerate(p.names()):
        keys = (layer_keys if d in devs or (d == 0 and on_host) else []) + (
            ["compute.output"] if out == d or (d == 0 and out is None) else []
        )
        key, size = gpu_peak({k: moments[k] for k in keys if k in moments}, g) if keys else ("", 0)
        formula = f"peak {key.split('.')[-1]} with its inputs {size:,} B" if keys else "no work"
        if d == 0 and out is None and not any(x is not None for x in devs):
            weight = off.output_weight()
            size = g.logits + weight + g.embd
            formula = f"logits {g.logits:,} B + output weight {weight:,} B + n_embd block {g.embd:,} B"
        elif parallel and keys:
            copies = pipeline_copies(d == first, out == d, key != "compute.output", g.embd, g.small())
            size += copies
            formula += f" + {SCHED_MAX_COPIES} copies of its split inputs, less the one its peak held, {copies:,} B"
        if got.get(d, 0) > size:
            size, formula = got[d], f"the feed-forward work -ot sends it from another device's layer {got[d]:,} B"
        per.append(Term(f"compute.{name}", f"{name} compute buffer", size, formula + f" = {size:,} B", "", True))
    return per


def _compute_said(off: Offload) -> str:
    p, devs = off.placement, off.layer_devices()
    said = (
        "; each GPU's largest moment among the layers it runs (the output moment where the output layer runs),"
        " without inp_embd (a graph input: on the CPU)"
    )
    if None in devs:
        said += (
            "; the first GPU also runs a prompt's ops on weights left in host memory (ggml-cuda's offload_op: batches"
            " of 32 or more); the weights and K/V copied in for a split are freed after it"
        )
    if not any(x is not None for x in devs) and off.output_device() is None:
        said += "; no layer on a GPU: its peak is the output op (logits, the output weight, one n_embd block)"
    if not p.kv_offload:
        said += "; attention on the CPU (--no-kv-offload)"
    if pipeline(off):
        said += (
            "; pipeline parallelism is on (llama_context: several GPUs, every layer, -sm layer, no -ot): the"
            " scheduler keeps GGML_SCHED_MAX_COPIES = 4 copies of each GPU's split inputs"
        )
    if p.overrides and p.devices > 1:
        said += (
            "; a feed-forward tensor -ot puts on another GPU than its layer's runs there, on its input copied in"
            " (ggml_backend_sched_split_graph): that GPU's buffer is at least that moment"
        )
    return said


_HOST_COMPUTE_SRC = (
    "llama.cpp src/llama-context.cpp llama_context::llama_context (backend_buft: the CPU backend's is the first"
    " GPU's host buffer type; pipeline_parallel), sched_reserve; src/llama-graph.cpp build_inp_embd (inp_tokens and"
    " inp_embd, both ggml_set_input); ggml/src/ggml-backend.cpp ggml_backend_sched_backend_id_from_cur (inputs on"
    " the last backend, the CPU), ggml_backend_sched_split_graph (n_copies > 1: each graph input kept n_copies times)"
)


def host_compute(g: Graph, parallel: bool = False) -> Term:
    """The CPU backend's compute buffer (the host-side split's): the graph's inputs, token ids
    and positions, the KQ masks, ``inp_embd`` (F32, n_embd × n_tokens, an input) and the input
    layer's GET_ROWS rows beside it, the KV indices and the output ids (inputs too). With
    --no-kv-offload no more (the attention's ops on a prompt are offloaded). With pipeline
    parallelism 3 more copies of every graph input (measured over 2 RPC devices, to the byte)."""
    inputs = g.inputs + g.masks + g.embd + g.idxs + g.out_ids
    size = inputs + g.embd
    formula = (
        f"token ids and positions {g.inputs:,} B + KQ masks {g.masks:,} B + inp_embd {g.embd:,} B + KV indices"
        f" {g.idxs:,} B + output ids {g.out_ids:,} B + the input layer's rows {g.embd:,} B"
    )
    if parallel:
        size += (SCHED_MAX_COPIES - 1) * inputs
        formula += f" + {SCHED_MAX_COPIES - 1} more copies of the graph inputs {(SCHED_MAX_COPIES - 1) * inputs:,} B"
    said = (
        "the CPU backend's buffer: the graph's inputs (ggml_backend_sched_backend_id_from_cur: GGML_TENSOR_FLAG_INPUT"
        " on the last backend, the CPU), inp_embd and the input layer's GET_ROWS; per-layer embedding inputs"
        " (Gemma 3n, 4) and the one-token graph's CPU work are not counted; from the scheduler's source, held to"
        " llama.cpp over RPC devices (tests/fixtures/llamacpp_multidev.json)"
    )
    label = "CUDA_Host compute buffer"
    return Term("host_compute", label, size, formula + f" = {size:,} B", said, True, _HOST_COMPUTE_SRC, host=True)


def output_term(off: Offload, out: Term) -> Term:
    """``output_reserve``: the host buffer type of the output layer's device (pinned host memory)."""
    where = "CUDA_Host" if off.output_device() is not None else "CPU"
    said = out.assumption + f"; in {where}: the host buffer of the output layer's device (output_reserve), host RAM"
    return replace(out, label=f"output buffer (logits), {where}", assumption=said, host=True)


# ---- the plan ---------------------------------------------------------------------------------


def terms(planner: Any, cells: Any, attention: Any, kv: Term | None, state: Term | None, comp: Term | None,
          out: Term | None) -> tuple[Term, ...]:  # fmt: skip
    """The plan's terms with the buffers split by device (the GPUs' in the total, the host's
    marked ``host``). ``kv``, ``state``, ``comp``, ``out``: the whole model's, as one GPU would
    hold them (None: not planned)."""
    off, o = planner.offload, planner.options
    weights, host_weights = planner.placed_weights
    gpu: list[Term | None] = [weights]
    host: list[Term | None] = [host_weights]
    if kv is not None:
        pieces = [(lcp.kv_term(replace(attention, kinds=(replace(k, layers=1),)), cells, o).bytes, k.layers, k.where)
                  for k in attention.kinds]  # fmt: skip
        on, off_gpu = split_term(off, kv, pieces, "host_kv", "KV cache, CPU buffer")
        gpu.append(on)
        host.append(off_gpu)
    if state is not None:
        n = sum(k.layers for k in planner.layout.kinds if k.attention == "state")
        on, off_gpu = split_term(off, state, [(state.bytes // n, n, "")], "host_state", "recurrent states, CPU buffer")
        gpu.append(on)
        host.append(off_gpu)
    if comp is not None:
        found = sched_replay(planner, cells)
        if found is None:  # a graph the split replay does not emit: the scheduler's rules in closed form
            on, host_c = compute_terms(off, comp, graph(planner, cells, attention), planner.shape)
        else:
            on, host_c = replayed_terms(off, comp, *found)
        gpu.append(on)
        host.append(host_c)
    if out is not None:
        host.append(output_term(off, out))
    kept = [t for t in gpu if t is not None]
    return (*kept, *_overheads(planner, kept), *(t for t in host if t is not None))


_SPLIT_ARCHS = ("llama", "qwen2", "qwen3", "qwen3moe")  # the graphs the split replay emits and places


def sched_replay(planner: Any, cells: Any) -> tuple[list[int], list[str]] | None:
    """Each backend's compute buffer (the GPUs in order, the CPU last) by :func:`.splits.replayed`,
    and the tensor each tops out allocating,
    for a dense llama, qwen2 or qwen3 decoder or a qwen3moe one (every layer routed: no shared
    expert, ``build_moe_ffn`` with softmax gating and normalised weights) with -sm layer or none;
    None: another graph (the closed form of :func:`compute_terms`)."""
    from . import splits

    off, o = planner.offload, planner.options
    if planner.arch not in _SPLIT_ARCHS or off.placement.split_mode not in ("layer", "none") or off.unsure():
        return None
    dense = _split_dense(planner)
    if dense is None:
        return None
    tokens = -(-cells.n_tokens // cells.streams) * cells.streams  # graph_reserve: a multiple of n_seqs
    d = replace(dense, n_kv=cells.n_ctx_seq, tokens=tokens, streams=cells.streams, flash=o.flash,
                outputs=cells.n_tokens)  # fmt: skip
    t = splits.tensors(off, off.placement.kv_offload)
    n_copies = SCHED_MAX_COPIES if pipeline(off) else 1
    try:
        peaks: list[str] = []
        return splits.replayed(d, t, len(off.placement.names()), n_copies, peaks), peaks
    except KeyError:  # a tensor the graph reads that the file's table does not name: not placed here
        return None


def _split_dense(planner: Any) -> Any:
    """The replay's model (:class:`.replay.Dense`) of a llama, qwen2, qwen3 or qwen3moe file."""
    o = replace(planner.options, device="cpu")
    if planner.arch != "qwen3moe":
        d = lcp.dense_of(planner.model, planner.layout, planner.shape, planner.recurrent, o)
        return d if d is not None and not d.recurrent else None
    if planner.shape is None:
        return None
    if planner.gguf:
        meta = lcp.metadata(planner.model)
        keys = ("expert_count", "expert_used_count", "expert_feed_forward_length")
        n_exp, used, ff = (meta.integer(k, 0, low=0) for k in keys)
    else:  # convert_hf_to_gguf.py's Qwen3MoeModel writes these three
        c = dict(planner.model.config or {})
        n_exp, used, ff = (c.get(k) for k in ("num_experts", "num_experts_per_tok", "moe_intermediate_size"))
        if c.get("mlp_only_layers") or c.get("decoder_sparse_step", 1) != 1:  # some dense layers: not emitted
            return None
        if not all(isinstance(v, int) and v > 0 for v in (n_exp, used, ff)):
            return None
    kinds = [k for k in planner.layout.kinds if k.attention != "state"]
    if not (n_exp and used and ff) or len(kinds) != 1 or kinds[0].attention != "full":
        return None
    k, sh = kinds[0], planner.shape
    return lcp.Dense("qwen3moe", sh.hidden, sh.heads, k.kv_heads, k.key_dim, k.value_dim, ff, sh.vocab, k.layers, 0, 0,
                     moe=(n_exp, used, ff, 0))  # fmt: skip


def replayed_terms(off: Offload, base: Term, sizes: list[int], peaks: list[str]) -> tuple[Term, Term]:
    """The GPUs' compute buffers and the CPU backend's from the split replay (:mod:`.splits`)."""
    names = off.placement.names()
    gpus = zip(names, sizes, peaks, strict=False)  # the CPU's is last
    per = [Term(f"compute.{n}", f"{n} compute buffer", b, _topped(b, at), "", True) for n, b, at in gpus]
    total = sum(t.bytes for t in per)
    many = len(per) > 1
    formula = " + ".join(f"{t.bytes:,} B ({t.label})" for t in per) + f" = {total:,} B" if many else per[0].formula
    said = (
        "; replayed as llama.cpp's scheduler splits the prompt graph (ggml_backend_sched_split_graph: each op on its"
        " weights' backend, host weights' ops offloaded to the first GPU on a prompt, the copies each split needs,"
        f" {SCHED_MAX_COPIES} of each with pipeline parallelism) and ggml-alloc places it, one buffer per backend"
        " (ggml_gallocr_alloc_graph_impl), as ggml_backend_sched_reserve_size sizes it (--fit, llama-fit-params):"
        " to the byte on RPC devices allocating as ggml-cuda; an estimate on CUDA, whose fusions keep some tensors"
        " longer (ggml_backend_cuda_graph_optimize), and a run's own reserve also places each layer's norm on its"
        " layer's device (llama_context::graph_get_cb) and keeps the one-token graph's buffers if larger"
    )
    if pipeline(off):
        said += (
            "; pipeline parallelism is on (llama_context: several GPUs, every layer, -sm layer, no -ot): the"
            f" scheduler keeps GGML_SCHED_MAX_COPIES = {SCHED_MAX_COPIES} copies of each graph and split input"
        )
    src = lcp._REPLAY_SRC + _SPLITS_SRC
    settings = base.assumption.replace("; the buffer is the largest moment (its parts do not add up)", "")
    gpu = replace(base, bytes=total, formula=formula, assumption=settings + said, source=src,
                  parts=tuple(per) if many else ())  # fmt: skip
    host = sizes[-1]
    host_said = (
        "the CPU backend's buffer (CUDA_Host): the graph inputs, inp_embd, the input layer's rows and the work the"
        " scheduler leaves on the CPU, replayed with the GPUs' (ggml_backend_sched_split_graph, ggml-alloc);"
        " as ggml_backend_sched_reserve_size sizes it, to the byte on RPC devices; a run's own reserve also keeps the"
        " one-token graph's CPU work if larger"
    )
    host_src = "llama.cpp src/llama-context.cpp llama_context::llama_context (the CPU backend's buffer type: the first"
    host_src += " GPU's host one, CUDA_Host), sched_reserve; src/llama-graph.cpp build_inp_embd" + _SPLITS_SRC
    host_c = Term("host_compute", "CUDA_Host compute buffer", host, _topped(host, peaks[-1]), host_said, True,
                  host_src, host=True)  # fmt: skip
    return gpu, host_c


def _topped(size: int, at: str) -> str:
    where = f"ggml-alloc's buffer tops out allocating {at.split('#')[0]!r}{' (a copy)' if '#' in at else ''}, "
    return (where if at else "no work: ") + f"{size:,} B"


_SPLITS_SRC = (
    "; src/models/qwen3moe.cpp; ggml/src/ggml-backend.cpp ggml_backend_sched_backend_id_from_cur,"
    " ggml_backend_sched_split_graph,"
    " ggml_backend_sched_reserve_size; ggml/src/ggml-alloc.c ggml_gallocr_alloc_graph_impl"
    " (paramcount.memory.runtimes.llamacpp.splits); held to tests/fixtures/llamacpp_multidev.json"
)


def graph(planner: Any, cells: Any, attention: Any) -> Graph:
    """The sizes the scheduler moves, for ``cells``' reserved micro-batch."""
    t, shape = cells.n_tokens, planner.shape
    masks = _masks(attention, cells, planner.options) if attention.kinds else 0
    return Graph(2 * t * 4, masks, shape.hidden * t * 4, shape.vocab * t * 4, t * 4,
                 _idxs(attention, t, shape, planner.options), t * 4)  # fmt: skip


def _idxs(attention: Any, t: int, shape: Any, o: Any) -> int:
    """Each KV cache's ``k_idxs`` and ``v_idxs`` (I64; llama_kv_cache::build_input_k_idxs,
    build_input_v_idxs: without flash attention V is stored transposed, one index per value
    element), graph inputs: one cache, or two for a model with sliding-window layers."""
    caches = len({k.window is None for k in attention.kinds})
    return caches * t * 8 * (1 + (1 if o.flash else shape.v))


def _masks(attention: Any, cells: Any, o: Any) -> int:
    """The KQ masks the graph takes as inputs (``build_attn_inp_kq_mask``: one per cache kind)."""
    n_kv = {k.window is None: cells.layer(k, o) for k in attention.kinds}
    return sum(n * cells.n_tokens * (2 if o.flash else 4) for n in n_kv.values())


def _overheads(planner: Any, kept: list[Term]) -> tuple[Term, ...]:
    """The CUDA context, once per GPU."""
    found = planner._overhead(sum(t.bytes for t in kept))
    n = planner.offload.placement.devices
    if not found or n == 1:
        return found
    t = found[0]
    return (replace(t, bytes=t.bytes * n, formula=f"{n} GPUs · {t.formula}"),)


def devices(plan_terms: tuple[Term, ...], names: tuple[str, ...]) -> dict[str, int]:
    """Bytes on each GPU, and in host memory: a term's part per GPU where it has them."""
    out = dict.fromkeys(names, 0)
    for t in plan_terms:
        if t.host:
            continue
        by_device = {p.key.rsplit(".", 1)[-1]: p.bytes for p in t.parts if p.key.rsplit(".", 1)[-1] in out}
        if len(names) == 1 or not by_device:
            share = t.bytes // len(names)  # one GPU; the overhead, once per GPU
            for n in names:
                out[n] += share
        else:
            for n, b in by_device.items():
                out[n] += b
    out["host"] = sum(t.bytes for t in plan_terms if t.host)
    return out


# ---- the planner ------------------------------------------------------------------------------


class PlacedPlanner(lcp.LlamaCppPlanner):
    """llama.cpp's planner with -ngl, -ot, --n-cpu-moe, -ts, -sm and -nkvo (the placement
    options, :data:`.placement.PLACEMENT_OPTIONS`): the plan's buffers split by device. With none
    given, the plan is :class:`.plan.LlamaCppPlanner`'s, every layer on one GPU."""

    def __init__(self, model: Any, scheme: str | None = None, *args: Any, **given: Any):
        chosen = placement(**{k: given.pop(k) for k in PLACEMENT_OPTIONS if k in given})
        super().__init__(model, scheme, *args, **given)
        self._use(chosen)

    def _use(self, p: Placement) -> None:
        if p.given and self.options.device == "cpu":
            raise ParamcountError("-ngl, -ot, -ts and -nkvo place weights on GPUs: drop --device cpu", field="--device")
        self.placement, self.offload = p, None
        if p.given:
            copy = lcp._output_copy(self.loaded, self.arch, self.gguf)
            self.offload = build(self.model, self.loaded, self.every, self.arch, self.gguf, p, copy)
            self.placed_weights = weight_terms(self.offload, self.loaded, self.model if self.gguf else None, self.every)

    def placed(self, p: Placement) -> PlacedPlanner:
        """This planner with the weights placed by ``p`` instead (fit tries many placements)."""
        import copy

        other = copy.copy(self)
        other._use(p)
        return other

    def _arranged(self, found: tuple[Term, ...], *whole: Any) -> tuple[Term, ...]:
        if self.offload is None:
            cells, attention, _, _, comp, _ = whole
            return one_gpu(self, found, cells, attention, comp)
        return terms(self, *whole)

    def _placement_settings(self, found: Any) -> dict[str, Any]:
        """-ngl, -ot, -ts as placed, and the bytes on each GPU and in host memory."""
        if self.offload is None:
            return {}
        p, layers = self.placement, self.offload.layers
        return {
            "n_gpu_layers": p.ngl(layers.n_layer_all),
            "n_layer": layers.n_layer_all,
            "split_mode": p.split_mode,
            "tensor_split": list(p.tensor_split),
            "overrides": [f"{pattern}={b}" for pattern, b in p.overrides],
            "kv_offload": p.kv_offload,
            "arguments": p.arguments(),
            "devices": devices(tuple(found), p.names()),
        }
