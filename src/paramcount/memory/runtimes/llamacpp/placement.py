"""Where llama.cpp puts each weight: ``-ngl``, ``-ot``, ``--n-cpu-moe``, ``-ts`` and ``-sm``.

Read from llama.cpp as vendored by llama-cpp-python 0.3.36 (each rule cites its function):

* ``llama_model::n_gpu_layers``: ``-ngl N`` (N >= 0) or, for ``auto``, ``all`` and any negative
  value, ``n_layer_all + 1`` (the repeating layers and the output layer).
* ``llama_model_base::load_tensors``: ``i_gpu_start = max(n_layer_all + 1 - ngl, 0)``, ``act =
  min(ngl, n_layer_all + 1)``; layer ``il`` is on the CPU when ``il < i_gpu_start`` or ``il -
  i_gpu_start >= act``, else on the GPU ``upper_bound(splits, (il - i_gpu_start) / act)`` (float
  arithmetic), where ``splits`` are the cumulative ``-ts`` fractions normalised to 1. The output
  layer is placed as layer ``n_layer_all``: the first one offloaded (on the GPU for any ``-ngl`` of
  1 or more). The input layer is always on the CPU ("there is very little benefit to offloading
  the input layer").
* ``llama_model_loader::create_tensor``: the first ``-ot`` pattern found in the tensor's GGUF name
  (``std::regex_search``) chooses its buffer type, before the layer's own; a token embedding
  loaded again as the output head (``TENSOR_DUPLICATED``) is placed as the output layer.
* ``common/arg.cpp``: ``--cpu-moe`` adds ``\\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU``
  (``llm_ffn_exps_cpu_override``), ``--n-cpu-moe N`` one ``blk\\.i\\.ffn_…_exps=CPU`` for each
  ``i < N`` (``llm_add_n_cpu_ffn_overrides``), in the order given on the command line with ``-ot``.
* ``src/llama.cpp`` ``llama_model_load_from_file_impl``: ``-sm none`` keeps only the main GPU
  (``-mg``). ``-sm row`` needs the backend's ``ggml_backend_split_buffer_type``, which ggml-cuda
  no longer exports: ``make_gpu_buft_list`` throws "device CUDA0 does not support split
  buffers", so it is refused here.
"""

from __future__ import annotations

import bisect
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ....errors import ParamcountError
from ....pattern import Budget, Pattern, PatternError, budget, charge
from ....pattern import compile as compile_pattern

EXPS = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"  # common/common.h LLM_FFN_EXPS_REGEX
SPLIT_MODES = ("none", "layer", "row")
MAX_DEVICES = 16  # llama_max_devices() with ggml-cuda (GGML_CUDA_MAX_DEVICES); -ts takes fewer values
MAX_PATTERN = 256  # a bound on one -ot pattern's length (llama.cpp has none)
# steps (a pattern tried, a byte its automaton reads, an NFA state it visits) one placement's -ot
# searches may take together: a few seconds; a pattern is linear in the name, this bounds them all
MAX_MATCH_STEPS = 1 << 23
FLT_MAX, FLT_MIN = 3.4028234663852886e38, 1.1754943508222875e-38  # a C float's range (-ts: std::stof)
MAX_OVERRIDES = 4096  # src/llama.cpp llama_max_tensor_buft_overrides (common/arg.cpp pads the list to it for --fit)
CPU = "CPU"
# the planner's keyword arguments a Placement takes, and the flag that sets each
PLACEMENT_OPTIONS = {
    "gpu_layers": "--n-gpu-layers",
    "overrides": "--override-tensor",
    "tensor_split": "--tensor-split",
    "split_mode": "--split-mode",
    "main_gpu": "--main-gpu",
    "kv_offload": "--no-kv-offload",
}
# the tensors of LLM_TENSOR_LAYER_INPUT by GGUF name (llama-arch.cpp LLM_TENSOR_INFOS)
INPUT_LAYER = re.compile(r"^(token_embd|position_embd|token_types|per_layer_token_embd)\.weight$")
# rope_freqs, rope_factors_long/short: repeating-layer tensors without a block number (llama-arch.cpp)
ROPE = re.compile(r"^rope_(freqs|factors_long|factors_short)\.weight$")
_BLK = re.compile(r"^blk\.(\d+)(?:–(\d+))?\.")
_ONE_LAYER = re.compile(rb"blk\.(\d+)\.")  # a pattern every match of which begins blk.N.: one layer's


@dataclass(frozen=True)
class Placement:
    """llama.cpp's placement flags: ``gpu_layers`` [-ngl] (None: all, llama.cpp's ``auto`` and
    ``all``), ``overrides`` [-ot, --cpu-moe, --n-cpu-moe] as (pattern, buffer type) in order,
    ``tensor_split`` [-ts] (empty: one GPU), ``split_mode`` [-sm], ``main_gpu`` [-mg] and
    ``kv_offload`` (False: --no-kv-offload)."""

    gpu_layers: int | None = None
    overrides: tuple[tuple[str, str], ...] = ()
    tensor_split: tuple[float, ...] = ()
    split_mode: str = "layer"
    main_gpu: int = 0
    kv_offload: bool = True

    @property
    def devices(self) -> int:
        """The GPUs the model is placed on: one per -ts value, one with -sm none."""
        return 1 if self.split_mode == "none" else max(1, len(self.tensor_split))

    @property
    def given(self) -> bool:
        return self != Placement()

    def names(self) -> tuple[str, ...]:
        """The GPUs' buffer type names, as -ot takes them (CUDA0, CUDA1, ...)."""
        if self.split_mode == "none":
            return (f"CUDA{self.main_gpu}",)
        return tuple(f"CUDA{i}" for i in range(self.devices))

    def ngl(self, n_layer_all: int) -> int:
        """``llama_model::n_gpu_layers``."""
        return n_layer_all + 1 if self.gpu_layers is None or self.gpu_layers < 0 else self.gpu_layers

    def splits(self) -> list[float]:
        """load_tensors' split points: the cumulative -ts fractions over their sum, in float32
        (all zero: by each GPU's free memory, taken equal here)."""
        shares = list(self.tensor_split) if any(self.tensor_split) else [1.0] * self.devices
        if self.split_mode == "none":
            shares = [1.0]
        total, points = 0.0, []
        for s in shares:
            total = f32(total + f32(s))
            points.append(total)
        return [f32(p / total) for p in points]

    def layer_gpu(self, il: int, n_layer_all: int, splits: Sequence[float]) -> int | None:
        """The GPU (its index in :meth:`names`) of layer ``il`` (``n_layer_all``: the output
        layer), or None for the CPU: load_tensors' ``get_layer_buft_list``."""
        ngl = self.ngl(n_layer_all)
        start, act = max(n_layer_all + 1 - ngl, 0), min(ngl, n_layer_all + 1)
        if il < start or il - start >= act:
            return None
        return bisect.bisect_right(splits, f32((il - start) / act))

    def override(self, name: str) -> str | None:
        """The buffer type the first matching -ot pattern gives ``name`` (None: none matches)."""
        m = _BLK.match(name)
        fixed, free = self._by_layer
        order = _merged(fixed.get(int(m[1]), ()) if m else (), free)
        charge(len(order))  # a step a pattern; the bytes a pattern's automaton reads, it counts
        for i in order:
            if self._compiled[i].search(name):
                return self.overrides[i][1]
        return None

    @cached_property
    def _compiled(self) -> tuple[Pattern, ...]:
        return tuple(_compiled(pattern, "--override-tensor") for pattern, _ in self.overrides)

    @cached_property
    def _by_layer(self) -> tuple[dict[int, tuple[int, ...]], tuple[int, ...]]:
        """The patterns every match of which begins ``blk.N.`` (their parsed prefix: ``blk\\.1\\.*``
        is not one, it matches blk.10 too), by layer, and the others: a tensor of layer N is tested
        against the first and the second only, in their order (fit and --n-cpu-moe give one
        pattern per layer)."""
        fixed: dict[int, list[int]] = {}
        free = []
        for i, compiled in enumerate(self._compiled):
            m = _ONE_LAYER.match(compiled.prefix)
            fixed.setdefault(int(m[1]), []).append(i) if m else free.append(i)
        return {k: tuple(v) for k, v in fixed.items()}, tuple(free)

    def arguments(self) -> str:
        """The llama.cpp arguments that give this placement."""
        out = []
        if self.gpu_layers is not None:
            out.append(f"-ngl {self.gpu_layers if self.gpu_layers >= -1 else 'all'}")
        if self.split_mode != "layer":
            out.append(f"-sm {self.split_mode}")
        if self.tensor_split:
            out.append("-ts " + ",".join(f"{v:g}" for v in self.tensor_split))
        if self.main_gpu:
            out.append(f"-mg {self.main_gpu}")
        rest, moe = self.overrides, _leading_cpu_moe(self.overrides)
        if moe:
            out.append(f"--n-cpu-moe {moe}")
            rest = rest[moe:]
        if rest:
            out.append(f'-ot "{compact_overrides(rest)}"')
        if not self.kv_offload:
            out.append("-nkvo")
        return " ".join(out)


_LAYER = re.compile(r"blk\\\.(0|[1-9]\d*)(\\\..*)")  # a per-layer pattern: blk\.N then \. and the rest


def compact_overrides(given: Sequence[tuple[str, str]]) -> str:
    """``-ot``'s argument, with neighbouring per-layer patterns that differ only in the layer
    merged into one (``blk\\.(1[7-9]|2[0-9])\\.ffn_…=CPU`` for twelve items): the same buffer
    for every tensor, as the patterns name disjoint layers and their order among the others is
    kept (llama_model_loader::create_tensor takes the first match); short enough to paste."""
    out: list[tuple[str, list[int], str]] = []  # (rest of the pattern, layers, buffer)
    for pattern, buft in given:
        m = _LAYER.fullmatch(pattern)
        if m and out and out[-1][0] == m[2] and out[-1][2] == buft and out[-1][1][-1] + 1 == int(m[1]):
            out[-1][1].append(int(m[1]))
        else:
            out.append((m[2], [int(m[1])], buft) if m else (pattern, [], buft))
    return ",".join(f"blk\\.{_numbers(ls[0], ls[-1])}{rest}={b}" if ls else f"{rest}={b}" for rest, ls, b in out)


def _numbers(lo: int, hi: int) -> str:
    """A regex for the whole numbers lo..hi: ``7``, ``(1[7-9]|[2-3][0-9]|4[0-8])``."""
    if lo == hi:
        return str(lo)
    parts = []
    while lo <= hi:  # split at each power of ten: numbers of one length
        top = min(hi, 10 ** len(str(lo)) - 1)
        parts += _same_length(str(lo), str(top))
        lo = top + 1
    return "(" + "|".join(parts) + ")"


def _same_length(lo: str, hi: str) -> list[str]:
    """Regexes for lo..hi, two numbers of one length, most significant digit first."""
    if len(lo) == 1:
        return [lo if lo == hi else f"[{lo}-{hi}]"]
    if lo[0] == hi[0]:
        return [lo[0] + p for p in _same_length(lo[1:], hi[1:])]
    tail, zeros, nines = len(lo) - 1, "0" * (len(lo) - 1), "9" * (len(lo) - 1)
    out = [] if lo[1:] == zeros else [lo[0] + p for p in _same_length(lo[1:], nines)]
    first = int(lo[0]) + (lo[1:] != zeros)
    last = int(hi[0]) - (hi[1:] != nines)
    if first <= last:
        out.append((str(first) if first == last else f"[{first}-{last}]") + "[0-9]" * tail)
    if hi[1:] != nines:
        out += [hi[0] + p for p in _same_length(zeros, hi[1:])]
    return out


def _leading_cpu_moe(given: Sequence[tuple[str, str]]) -> int:
    """N where the overrides begin with --n-cpu-moe N's (printed back as that flag)."""
    n = 0
    while n < len(given) and given[n] == (f"blk\\.{n}{EXPS}", CPU):
        n += 1
    return n


def _merged(a: Sequence[int], b: Sequence[int]) -> list[int]:
    return sorted((*a, *b))


def f32(x: float) -> float:
    """``x`` rounded to a C float (load_tensors computes its splits in float)."""
    return struct.unpack("f", struct.pack("f", x))[0]


# ---- parsing the flags ------------------------------------------------------------------------


def gpu_layers(text: Any) -> int | None:
    """``-ngl``: a whole number, ``auto`` or ``all`` (common/arg.cpp): auto is -1, the default
    (None here), all is -2; any negative value offloads every layer (llama_model::n_gpu_layers)."""
    value = text.strip().lower() if isinstance(text, str) else text
    if value in ("auto", None):
        return None
    if value == "all":
        return -2
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ParamcountError(
            f"expected a number of layers, auto or all, not {text!r}", field="--n-gpu-layers"
        ) from None
    return None if n == -1 else n


def overrides(text: str, field: str = "--override-tensor") -> tuple[tuple[str, str], ...]:
    """``-ot PATTERN=BUFFER,...`` (common/arg.cpp parse_tensor_buffer_overrides: split at each
    comma, then at the first ``=``)."""
    out = []
    for item in text.split(","):
        pattern, eq, buft = item.partition("=")
        if not eq:
            raise ParamcountError(f"expected PATTERN=BUFFER_TYPE, not {item!r}", field=field)
        out.append((checked_pattern(pattern, field), buft))
    return tuple(out)


def checked_pattern(pattern: str, field: str) -> str:
    """A tensor-name pattern bounded in length that :mod:`paramcount.pattern` compiles: std::regex's
    ECMAScript syntax, matched in time linear in the name (no backreferences, no lookahead)."""
    _compiled(pattern, field)
    return pattern


def _compiled(pattern: Any, field: str) -> Pattern:
    if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN:
        size = len(pattern) if isinstance(pattern, str) else type(pattern).__name__
        raise ParamcountError(f"a tensor pattern is 1 to {MAX_PATTERN} characters, not {size}", field=field)
    try:
        return compile_pattern(pattern)
    except PatternError as e:
        raise ParamcountError(f"bad tensor pattern {pattern!r}: {e}", field=field) from None


def n_cpu_moe(n: int) -> tuple[tuple[str, str], ...]:
    """``--n-cpu-moe N``: common.h llm_add_n_cpu_ffn_overrides(N, LLM_FFN_EXPS_REGEX)."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_OVERRIDES:
        raise ParamcountError(f"expected 0..{MAX_OVERRIDES:,} layers, got {n!r}", field="--n-cpu-moe")
    return tuple((f"blk\\.{i}{EXPS}", CPU) for i in range(n))


def override_flags(found: tuple[tuple[str, str], ...]) -> str:
    """The shortest llama.cpp flags that give these overrides: ``--cpu-moe``, ``--n-cpu-moe N``
    (what the flag expands to, read back), else ``-ot PATTERN=BUFFER,...`` as common/arg.cpp reads it."""
    if found == ((EXPS, CPU),):
        return "--cpu-moe"
    if found and found == n_cpu_moe(len(found)):
        return f"--n-cpu-moe {len(found)}"
    return f"-ot {compact_overrides(found)}"


def tensor_split(text: str) -> tuple[float, ...]:
    """``-ts 3,1`` (or ``3/1``): proportions per GPU (common/arg.cpp splits at , and /)."""
    parts = [p for p in re.split(r"[,/]+", text.strip()) if p != ""]
    if not parts:
        raise ParamcountError("expected proportions per GPU like 3,1", field="--tensor-split")
    if len(parts) >= MAX_DEVICES:
        raise ParamcountError(
            f"got {len(parts)} values; llama.cpp takes fewer than {MAX_DEVICES} (llama_max_devices)",
            field="--tensor-split",
        )
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise ParamcountError(f"expected numbers like 3,1, not {text!r}", field="--tensor-split") from None
    return _shares(values, text)


def _shares(values: tuple[float, ...], text: Any) -> tuple[float, ...]:
    """-ts values as llama.cpp takes them: ``std::stof`` (common/arg.cpp) throws out_of_range past
    a C float's range, and load_tensors sums them in float (an infinite sum: NaN splits)."""
    if any(not v >= 0 or v == float("inf") for v in values):
        raise ParamcountError(f"proportions are finite and not negative, not {text!r}", field="--tensor-split")
    if any(v > FLT_MAX or 0 < v < FLT_MIN for v in values):
        raise ParamcountError(
            f"each proportion is 0 or between 1.2e-38 and 3.4e38 (a C float, std::stof), not {text!r}",
            field="--tensor-split",
        )
    total = 0.0
    for v in values:
        total += f32(v)
        if total > FLT_MAX:
            raise ParamcountError(f"the proportions add up past a C float's 3.4e38: {text!r}", field="--tensor-split")
        total = f32(total)
    return values


# ggml/include/ggml-cuda.h: the most devices ggml-cuda takes. -sm none -mg N without -ts names one of
# the devices llama.cpp finds (common/arg.cpp --main-gpu; llama_model_load checks it against them):
# without -ts their number is not known here, so any of these is taken
CUDA_MAX_DEVICES = 16


def placement(**given: Any) -> Placement:
    """A checked :class:`Placement` from keyword arguments (None: the default)."""
    p = Placement(**{k: v for k, v in given.items() if v is not None})
    if p.split_mode not in SPLIT_MODES:
        raise ParamcountError(f"split mode is none, layer or row, not {p.split_mode!r}", field="--split-mode")
    if p.split_mode == "row":
        raise ParamcountError(
            "llama.cpp's CUDA backend has no row split buffer (make_gpu_buft_list: 'does not support split buffers'):"
            " use -sm layer",
            field="--split-mode",
        )
    if p.gpu_layers is not None and (isinstance(p.gpu_layers, bool) or not -(1 << 20) <= p.gpu_layers <= 1 << 20):
        raise ParamcountError(f"expected at most 1,048,576 layers, got {p.gpu_layers!r}", field="--n-gpu-layers")
    _shares(tuple(p.tensor_split), p.tensor_split)
    gpus = len(p.tensor_split) or (CUDA_MAX_DEVICES if p.split_mode == "none" else 1)
    if isinstance(p.main_gpu, bool) or not isinstance(p.main_gpu, int) or not 0 <= p.main_gpu < gpus:
        raise ParamcountError(f"no GPU {p.main_gpu!r} among {gpus}", field="--main-gpu")
    if len(p.overrides) > MAX_OVERRIDES:
        raise ParamcountError(
            f"{len(p.overrides):,} tensor overrides; at most {MAX_OVERRIDES:,} (llama_max_tensor_buft_overrides)",
            field="--override-tensor",
        )
    known = (CPU, *p.names())
    for pattern, buft in p.overrides:
        checked_pattern(pattern, "--override-tensor")
        if buft not in known:
            raise ParamcountError(
                f"unknown buffer type {buft!r} for {pattern!r}: {', '.join(known)}", field="--override-tensor"
            )
    return p


# ---- placing the rows -------------------------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    """A row's tensors for a run of layers, and where they go: ``device`` a GPU index or None
    (host memory)."""

    row: Any
    device: int | None
    name: str  # the GGUF name of the first tensor


def place(
    rows: Iterable[Any], names: Callable[[Any], tuple[str, int, int] | None], n_layer_all: int, p: Placement
) -> list[Placed]:
    """Each row's tensors where load_tensors and create_tensor put them. ``names(row)`` gives
    the GGUF name template (``blk.{}.attn_q.weight``, or a plain name) and the row's first and
    last layer (-1, -1 for a tensor outside the repeating layers); None for a tensor that goes to
    the main GPU whatever the flags (an mmproj tower's, which mtmd loads)."""
    try:
        with budget(MAX_MATCH_STEPS):
            return _place(rows, names, n_layer_all, p)
    except Budget:
        raise ParamcountError(
            f"matching the tensor patterns against this model's tensor names takes more than {MAX_MATCH_STEPS:,}"
            " steps; use fewer or simpler patterns",
            field="--override-tensor",
        ) from None


def _place(
    rows: Iterable[Any], names: Callable[[Any], tuple[str, int, int] | None], n_layer_all: int, p: Placement
) -> list[Placed]:
    splits = p.splits()
    out: list[Placed] = []
    for r in rows:
        named = names(r)
        if named is None:
            out.append(Placed(r, 0, r.name))
            continue
        template, lo, hi = named
        if lo < 0:
            out.append(Placed(r, _device(template, None, n_layer_all, p, splits), template))
            continue
        out += _runs(r, template, lo, hi, n_layer_all, p, splits)
    return out


def _device(name: str, il: int | None, n_layer_all: int, p: Placement, splits: Sequence[float]) -> int | None:
    """One tensor's device: its -ot override, else its layer's (input: CPU, output: layer
    n_layer_all)."""
    buft = p.override(name)
    if buft is not None:
        return None if buft == CPU else p.names().index(buft)
    if il is None and INPUT_LAYER.match(name):
        return None
    if il is None and ROPE.match(name):  # LLM_TENSOR_LAYER_REPEATING, created first in layer 0's loop
        il = 0
    return p.layer_gpu(n_layer_all if il is None else il, n_layer_all, splits)


def _runs(r: Any, template: str, lo: int, hi: int, n_layer_all: int, p: Placement, splits: Sequence[float]) -> list:
    """A repeated row cut where its device changes (one regex test per layer and pattern: the
    layers are few, and a pattern may name any of them)."""
    from ....records import replace

    per = r.count // (hi - lo + 1)
    runs: list[list[Any]] = []
    for il in range(lo, hi + 1):
        dev = _device(template.format(il), il, n_layer_all, p, splits)
        if runs and runs[-1][0] == dev:
            runs[-1][2] = il
        else:
            runs.append([dev, il, il])
    if len(runs) == 1:
        return [Placed(r, runs[0][0], template.format(lo))]
    return [
        Placed(replace(r, name=_renamed(r.name, a, b), count=per * (b - a + 1)), dev, template.format(a))
        for dev, a, b in runs
    ]


def _renamed(name: str, a: int, b: int) -> str:
    """A row's name with its layer range narrowed to ``a``–``b``."""
    return re.sub(r"(?<=\.)\d+(?:–\d+)?(?=\.)", f"{a}–{b}" if b > a else str(a), name, count=1)


def layer_range(name: str) -> tuple[int, int] | None:
    """The first and last layer of a GGUF row's name (``blk.0–15.``), None outside the layers."""
    m = _BLK.match(name)
    return None if m is None else (int(m[1]), int(m[2] or m[1]))
