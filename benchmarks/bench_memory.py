"""Memory plans against measured memory: paramcount.memory's terms next to a real run's bytes.

For each model (a catalog name, optionally with config fields changed: ``NAME:field=value``) the
script builds the transformers class with random weights and measures:

- inference: one prefill forward (``use_cache=True``, ``logits_to_keep=1`` as ``generate``
  does, under ``torch.no_grad``) at bf16, against :func:`paramcount.memory.inference` at bf16.
  Weights are the parameters' storage (exact); the KV cache the storage the returned cache
  holds; activations the forward's peak less the bytes before it and less that KV cache;
  ``kv+act`` the peak less the bytes before; total the peak.
- training: one steady-state step (the optimizer's states made by a warm-up step first)
  against :func:`paramcount.memory.train` at the same precision, overhead excluded:
  ``autocast`` is fp32 parameters under bf16 autocast (what Trainer(bf16=True) does, and what
  the ``mixed`` plan models without ZeRO: fp32 weights and gradients, 4 + 4 + 8 bytes a
  parameter; its activations include autocast's cached bf16 copies of the weights); ``mixed``
  keeps the model in bf16 with bf16 gradients and an fp32 master copy that AdamW updates
  (ZeRO §3.1: 2 + 2 + 4 + 8 bytes a parameter; the step runs one tensor at a time so only one
  fp32 gradient exists at once), held to the ``mixed`` plan with ZeRO stage 1 on one GPU, which
  lays the states out so; ``bf16`` is pure bf16 AdamW; ``fp32`` is fp32 throughout. Model
  states are the tensors' storage; activations what the forward leaves allocated for the
  backward (the loss kept); total the step's peak. AdamW runs its for-loop implementation
  (``foreach=False``), one tensor's temporaries at a time, where the plan counts the default
  foreach path's (one moment's size): a step whose peak is the optimizer's is over here.

Where the bytes come from. On CUDA, ``torch.cuda.memory_allocated`` and
``torch.cuda.max_memory_allocated`` (the CUDA context and the allocator's cached blocks are not
in them, nor in the compared terms). On CPU, the storage of live tensors tracked op by op by a
TorchDispatchMode (as tests/test_plan.py measures the working set), on top of the storage of
the tensors that exist before the measured call (parameters, buffers, inputs, master copies,
optimizer states); kernels' internal scratch is not seen.

    python benchmarks/bench_memory.py                       # CUDA when available, else CPU
    python benchmarks/bench_memory.py --device cuda --out benchmarks/memory_cuda.md
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import sys
import time
import weakref
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CUDA_MODELS = (
    "openai-community/gpt2",
    "Qwen/Qwen2.5-0.5B",
    "Qwen/Qwen3-0.6B",
    "meta-llama/Llama-3.2-1B",
    "google/gemma-2-2b",
    "Qwen/Qwen1.5-MoE-A2.7B",
    "meta-llama/Llama-3.1-8B",
)
# CPU: the same configs cut to 2 layers (gemma-2 keeps one sliding and one global layer); gemma-2
# and the MoE also to a 32,768-token vocabulary, gemma-2 to a 512-token window (so that the
# points pass it) and the MoE to 8 of its 60 experts: a run takes about two minutes on 2 cores
# and under 10 GB.
CPU_MODELS = (
    "openai-community/gpt2",
    "Qwen/Qwen2.5-0.5B:num_hidden_layers=2",
    "Qwen/Qwen3-0.6B:num_hidden_layers=2",
    "meta-llama/Llama-3.2-1B:num_hidden_layers=2",
    "google/gemma-2-2b:num_hidden_layers=2:vocab_size=32768:sliding_window=512",
    "Qwen/Qwen1.5-MoE-A2.7B:num_hidden_layers=2:num_experts=8:vocab_size=32768",
)
POINTS = {
    ("cuda", "inference"): "512x1,2048x1,8192x1,2048x8",
    ("cuda", "training"): "512x1,2048x1,1024x4",
    ("cpu", "inference"): "256x1,1024x1,512x4",
    ("cpu", "training"): "256x2",
}
PRECISIONS = ("mixed", "bf16", "fp32", "autocast")
DEFAULT_PRECISIONS = {"cuda": "autocast,mixed,bf16", "cpu": "autocast,bf16"}
BUDGET = {"cuda": 0.9, "cpu": 0.6}  # of free memory a point's plan may use before it is skipped
LR = 1e-5


class Refusal(Exception):
    """A setting or environment the run cannot use: printed as one line, exit 2."""


# ---- setup ---------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--models", help="comma-separated NAME[:field=value...] (default: per device)")
    p.add_argument("--inference", help="context x batch points, e.g. 512x1,2048x4 ('' for none)")
    p.add_argument("--training", help="context x batch points for a training step ('' for none)")
    p.add_argument("--precision", help=f"training precisions, any of {','.join(PRECISIONS)}")
    p.add_argument("--out", type=Path, help="write the results: .md for Markdown, else JSON")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def need_frameworks() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as e:
        raise Refusal(f"bench_memory needs torch and transformers (pip install -e '.[test]'): {e}") from e
    transformers.logging.set_verbosity_error()
    return torch, transformers


def pick_device(torch: Any, wanted: str) -> str:
    if wanted == "cuda" and not torch.cuda.is_available():
        raise Refusal("--device cuda: torch.cuda.is_available() is False on this machine")
    if wanted == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return wanted


def points(text: str) -> list[tuple[int, int]]:
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        context, _, batch = item.partition("x")
        if not (context.isdigit() and batch.isdigit() and int(context) > 0 and int(batch) > 0):
            raise Refusal(f"a point is CONTEXTxBATCH with positive integers, not {item!r}")
        out.append((int(context), int(batch)))
    return out


def precisions(text: str) -> list[str]:
    out = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in out if s not in PRECISIONS]
    if bad:
        raise Refusal(f"--precision takes {', '.join(PRECISIONS)}, not {', '.join(bad)}")
    return out


def model_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``NAME[:field=value...]``: a catalog name and the config fields to change (JSON values)."""
    name, *changes = spec.split(":")
    overrides = {}
    for change in changes:
        key, eq, value = change.partition("=")
        if not eq or not key:
            raise Refusal(f"{spec!r}: a change is field=value, not {change!r}")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    return name, overrides


# ---- measuring ---------------------------------------------------------------------------------


def storage_bytes(tensors: Any) -> int:
    """Bytes of the distinct storages behind ``tensors`` (a tied weight once)."""
    seen = {}
    for t in tensors:
        if t is not None:
            s = t.untyped_storage()
            seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())


class CudaMeter:
    """The caching allocator's own counts (the CUDA context is outside them)."""

    def __init__(self, torch: Any):
        self.torch = torch

    def track(self, before: int) -> Any:
        return nullcontext()

    def allocated(self) -> int:
        self.torch.cuda.synchronize()
        return self.torch.cuda.memory_allocated()

    def reset_peak(self) -> None:
        self.torch.cuda.synchronize()
        self.torch.cuda.reset_peak_memory_stats()

    def peak(self) -> int:
        self.torch.cuda.synchronize()
        return self.torch.cuda.max_memory_allocated()

    def free(self) -> int:
        return self.torch.cuda.mem_get_info()[0]


class CpuMeter:
    """Storage of live tensors, tracked op by op, on top of the storage that existed before."""

    def __init__(self, torch: Any):
        self.torch, self.mode, self.before = torch, None, 0

    @contextmanager
    def track(self, before: int) -> Any:
        self.before, self.mode = before, live_storage(self.torch)
        with self.mode:
            yield
        self.mode = None

    def allocated(self) -> int:
        return self.before + self.mode.live

    def reset_peak(self) -> None:
        self.mode.peak = self.mode.live

    def peak(self) -> int:
        return self.before + self.mode.peak

    def free(self) -> int:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
        return 8 << 30


def live_storage(torch: Any) -> Any:
    """A TorchDispatchMode counting the bytes of storages created while it is on and still alive."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Live(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.refs: dict[int, int] = {}
            self.size: dict[int, int] = {}
            self.live = self.peak = 0

        def _drop(self, key: int) -> None:
            self.refs[key] -= 1
            if not self.refs[key]:
                self.live -= self.size.pop(key)
                del self.refs[key]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            flat = tree_flatten((args, kwargs))[0]
            inputs = {a.untyped_storage().data_ptr() for a in flat if isinstance(a, torch.Tensor)}
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor):
                    self._count(t, inputs)
            return out

        def _count(self, t: Any, inputs: set[int]) -> None:
            key = t.untyped_storage().data_ptr()
            if key in inputs and key not in self.refs:  # a view of, or written into, an older tensor
                return
            if key not in self.refs:
                self.refs[key], self.size[key] = 0, t.untyped_storage().nbytes()
                self.live += self.size[key]
                self.peak = max(self.peak, self.live)
            self.refs[key] += 1
            weakref.finalize(t, self._drop, key)

    return Live()


# ---- the models ----------------------------------------------------------------------------------


@dataclass
class Subject:
    """A counted model and the live transformers module built from the same config."""

    spec: str
    model: Any  # paramcount Model
    module: Any
    attention: str  # the attention implementation transformers runs
    experts: str | None
    built_s: float


def count(spec: str) -> Any:
    """The paramcount model of ``NAME[:field=value...]``; a bad name or field is refused up front."""
    import paramcount
    from paramcount.errors import ParamcountError

    name, overrides = model_spec(spec)
    try:
        model = paramcount.load(name, overrides=overrides or None)
    except ParamcountError as e:
        raise Refusal(f"{spec}: {e}") from e
    if model.class_name not in causal_classes():
        raise Refusal(f"{spec}: {model.class_name} is not a causal language model (prefill and loss need one)")
    return model


def causal_classes() -> set[str]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES as names

    return {c for v in names.values() for c in ((v,) if isinstance(v, str) else v)}


def build(spec: str, model: Any, torch: Any, transformers: Any, device: str) -> Subject:
    """The model's own transformers class at bf16 with random weights, SDPA where it has it."""
    cls = getattr(transformers, model.class_name)
    config = transformers.AutoConfig.for_model(
        model.model_type, **{k: v for k, v in model.config.items() if k != "model_type"}
    )
    attention = "sdpa" if getattr(cls, "_supports_sdpa", False) else "eager"
    start = time.perf_counter()
    with torch.device(device), skipped_init(transformers):  # transformers' own init is slow on CPU
        module = cls._from_config(config, dtype=torch.bfloat16, attn_implementation=attention)
    with torch.no_grad():
        for p in module.parameters():
            p.uniform_(-0.02, 0.02)
    module.tie_weights()  # skipping the init skips the tying too
    experts = getattr(module.config, "_experts_implementation", None)
    return Subject(spec, model, module.eval(), attention, experts, time.perf_counter() - start)


def skipped_init(transformers: Any) -> Any:
    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # transformers 4
        from transformers.modeling_utils import no_init_weights
    return no_init_weights()


def cache_bytes(cache: Any) -> int:
    """Storage of the keys and values the returned cache holds (transformers 5 cache layers; a
    sliding layer's window-size tensor is not cache)."""
    layers = getattr(cache, "layers", ())
    return storage_bytes(getattr(layer, name, None) for layer in layers for name in ("keys", "values"))


# ---- comparisons -------------------------------------------------------------------------------


@dataclass
class Run:
    """One (model, mode, precision, context, batch) point: its rows or why it has none."""

    model: str
    mode: str
    precision: str
    context: int
    batch: int
    status: str = "ok"
    rows: list[dict[str, Any]] = field(default_factory=list)
    phases: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, term: str, estimate: int, measured: int, how: str = "") -> None:
        """A compared term: the plan's bytes, the measured bytes (``how``: what was measured)."""
        error = None if measured == 0 else estimate / measured - 1
        self.rows.append({"term": term, "estimate": estimate, "measured": measured, "error": error, "how": how})

    def row(self, term: str) -> dict[str, Any] | None:
        return next((r for r in self.rows if r["term"] == term), None)


def plan_bytes(plan: Any, *keys: str) -> int:
    return sum(plan.term(k).bytes for k in keys if any(t.key == k for t in plan.terms))


def planned_without_overhead(plan: Any) -> int:
    return sum(t.bytes for t in plan.terms if t.key != "overhead")


def fits(run: Run, s: Subject, need: int, meter: Any, device: str, held: int = 0) -> bool:
    """Whether the model takes the context, and the point's planned bytes beyond what is already
    ``held`` fit in the free memory (a position past the table is a device-side assert on CUDA)."""
    from paramcount.memory.core.limits import max_positions

    limit = max_positions(s.model)
    if limit is not None and run.context > limit:
        run.status = f"skipped: the model takes {limit:,} positions"
        return False
    room = int(meter.free() * BUDGET[device]) + held
    if need > room:
        run.status = f"skipped: the plan needs {need / 1e9:.1f} GB, {room / 1e9:.1f} GB may be used here"
    return need <= room


# ---- inference -----------------------------------------------------------------------------------


def inference_run(run: Run, s: Subject, meter: Any, torch: Any, device: str) -> None:
    from paramcount.memory import inference

    context, batch = run.context, run.batch
    plan = inference(s.model, "bf16", context=context, batch=batch)
    if not fits(run, s, planned_without_overhead(plan) - plan.term("weights").bytes, meter, device):
        return
    weights = storage_bytes(s.module.parameters())
    ids = torch.randint(0, s.module.config.vocab_size, (batch, context), device=device)
    before_known = storage_bytes([*s.module.parameters(), *s.module.buffers(), ids])
    with meter.track(before_known):
        before = meter.allocated()
        meter.reset_peak()
        with torch.no_grad():
            out = s.module(input_ids=ids, use_cache=True, logits_to_keep=1)
        peak, kv = meter.peak(), cache_bytes(out.past_key_values)
        del out
    compare_inference(run, plan, weights, kv, peak - before, peak)
    if s.attention != "sdpa":
        run.notes.append(f"{s.attention} attention: the T×T scores are held, and planned")


def compare_inference(run: Run, plan: Any, weights: int, kv: int, working: int, peak: int) -> None:
    run.add("weights", plan_bytes(plan, "weights"), weights, "parameter storage")
    run.add("kv_cache", plan_bytes(plan, "kv_cache"), kv, "storage of the returned cache")
    run.add("activations", plan_bytes(plan, "activations"), working - kv, "peak - before - KV cache")
    run.add("kv+act", plan_bytes(plan, "kv_cache", "activations"), working, "peak - before")
    run.add("total", planned_without_overhead(plan), peak, "peak (plan: overhead excluded)")


# ---- training ------------------------------------------------------------------------------------


@dataclass
class Trainer:
    """A model at one precision, its optimizer, and (mixed) the fp32 master copies."""

    precision: str
    params: list[Any]
    masters: list[Any]
    optimizer: Any
    autocast: bool


def forward_loss(s: Subject, t: Trainer, torch: Any, ids: Any) -> Any:
    device = ids.device.type
    with torch.autocast(device, dtype=torch.bfloat16) if t.autocast else nullcontext():
        return s.module(input_ids=ids, labels=ids).loss


def optimizer_step(t: Trainer, torch: Any) -> None:
    """Mixed: each bf16 gradient becomes its master's fp32 gradient, the master is stepped and
    copied back, one tensor at a time; else the optimizer steps the parameters themselves."""
    if not t.masters:
        t.optimizer.step()
        t.optimizer.zero_grad(set_to_none=True)
        return
    with torch.no_grad():
        for p, m in zip(t.params, t.masters, strict=True):
            m.grad, p.grad = p.grad.float(), None
            t.optimizer.step()  # only m has a gradient now
            p.copy_(m)
            m.grad = None


def state_tensors(t: Trainer) -> list[Any]:
    return [v for state in t.optimizer.state.values() for v in state.values() if hasattr(v, "untyped_storage")]


def training_plan(s: Subject, precision: str, context: int, batch: int) -> Any:
    """The plan a step at ``precision`` is held to; eager attention planned with its s×s matrices."""
    from paramcount.memory import train

    modelled = "mixed" if precision == "autocast" else precision
    zero = 1 if precision == "mixed" else 0  # ZeRO's layout (bf16 weights, fp32 master); without: autocast's
    return train(s.model, precision=modelled, context=context, batch=batch, zero=zero, flash=s.attention == "sdpa")


def training_runs(s: Subject, meter: Any, torch: Any, device: str, precision: str, todo: list[Run]) -> None:
    """Every point at one precision, with one optimizer (its states made once, by a warm-up step)."""
    t = None
    for run in todo:
        plan = training_plan(s, precision, run.context, run.batch)
        held = storage_bytes(s.module.parameters()) + (storage_bytes([*t.masters, *state_tensors(t)]) if t else 0)
        if not fits(run, s, planned_without_overhead(plan), meter, device, held):
            continue
        t = t or trainer(s, torch, precision)
        guarded(run, s, torch, measure_step, s, t, meter, torch, device)
        t.optimizer.zero_grad(set_to_none=True)  # what a step cut short by OOM left behind
        if run.status == "ok":
            compare_training(run, plan, t)
            if s.attention != "sdpa":
                run.notes.append(f"{s.attention} attention: planned with flash=False (s×s matrices stored)")
    del t
    release(s, torch)


def compare_training(run: Run, plan: Any, t: Trainer) -> None:
    ph, weights = run.phases, storage_bytes(t.params)
    run.add("weights", plan_bytes(plan, "weights"), weights, "parameter storage")
    if t.precision == "autocast":
        run.notes.append("autocast: the activations include its cached bf16 copies of the weights")
    if t.masters:
        run.add("master_weights", plan_bytes(plan, "master_weights"), storage_bytes(t.masters), "fp32 copies")
    run.add("gradients", plan_bytes(plan, "gradients"), ph["gradients"], ".grad storage after backward")
    run.add("optimizer", plan_bytes(plan, "optimizer"), storage_bytes(state_tensors(t)), "optimizer.state tensors")
    states = sum(r["measured"] for r in run.rows)
    run.add("states", sum(r["estimate"] for r in run.rows), states, "the four above")
    kept = ph["after_forward"] - ph["before"]
    run.add("activations", plan_bytes(plan, "activations"), kept, "after forward - before (loss kept)")
    phase = max(("forward", "backward", "step"), key=lambda k: ph[f"{k}_peak"])
    run.add("total", planned_without_overhead(plan), ph[f"{phase}_peak"], f"step peak, in the {phase}")
    run.phases["peak_phase"] = phase


def trainer(s: Subject, torch: Any, precision: str) -> Trainer:
    dtype = torch.float32 if precision in ("fp32", "autocast") else torch.bfloat16
    s.module.to(dtype).train()
    params = [p for p in s.module.parameters() if p.requires_grad]
    masters = [p.detach().float() for p in params] if precision == "mixed" else []
    optimizer = torch.optim.AdamW(masters or params, lr=LR, foreach=False)
    t = Trainer(precision, params, masters, optimizer, precision == "autocast")
    warm = torch.randint(0, s.module.config.vocab_size, (1, 8), device=params[0].device)
    forward_loss(s, t, torch, warm).backward()
    optimizer_step(t, torch)
    return t


def measure_step(run: Run, s: Subject, t: Trainer, meter: Any, torch: Any, device: str) -> None:
    """One step in three phases, the peak of each and the bytes between them."""
    ids = torch.randint(0, s.module.config.vocab_size, (run.batch, run.context), device=device)
    known = [*s.module.parameters(), *s.module.buffers(), *t.masters, *state_tensors(t), ids]
    with meter.track(storage_bytes(known)):
        before = meter.allocated()
        meter.reset_peak()
        loss = forward_loss(s, t, torch, ids)
        run.phases.update(before=before, after_forward=meter.allocated(), forward_peak=meter.peak())
        meter.reset_peak()
        loss.backward()
        del loss
        run.phases.update(gradients=storage_bytes(p.grad for p in t.params), backward_peak=meter.peak())
        meter.reset_peak()
        optimizer_step(t, torch)
        run.phases.update(step_peak=meter.peak(), after_step=meter.allocated())


# ---- the run -----------------------------------------------------------------------------------------


def guarded(run: Run, s: Subject, torch: Any, measure: Any, *args: Any) -> None:
    """One point; running out of memory is a result, not the end of the run."""
    try:
        measure(run, *args)
    except torch.cuda.OutOfMemoryError:
        run.status, run.rows = "out of memory", []
    release(s, torch)


def release(s: Subject, torch: Any) -> None:
    for p in s.module.parameters():
        p.grad = None
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def subject_runs(s: Subject, meter: Any, torch: Any, device: str, args: argparse.Namespace) -> list[Run]:
    out = []
    for context, batch in args.inference_points:
        run = Run(s.spec, "inference", "bf16", context, batch)
        guarded(run, s, torch, inference_run, s, meter, torch, device)
        out.append(show(run))
    for precision in args.precision_list:
        todo = [Run(s.spec, "training", precision, c, b) for c, b in args.training_points]
        training_runs(s, meter, torch, device, precision, todo)
        out += [show(r) for r in todo]
    return out


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    torch, transformers = need_frameworks()
    device = pick_device(torch, args.device)
    settle(args, device)
    torch.manual_seed(args.seed)
    meter = CudaMeter(torch) if device == "cuda" else CpuMeter(torch)
    header = environment(torch, transformers, device, args)
    print(render_header(header), flush=True)
    runs, models, start = [], [], time.perf_counter()
    for spec in args.model_list:
        s = build_or_skip(spec, torch, transformers, device)
        if isinstance(s, Run):
            runs.append(show(s))
            continue
        models.append(described(s))
        print(f"\n{spec}: " + ", ".join(f"{k} {v}" for k, v in models[-1].items() if k != "model"))
        began = time.perf_counter()
        runs += subject_runs(s, meter, torch, device, args)
        print(f"  ({time.perf_counter() - began:.1f} s)")
        del s
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
    header["seconds"] = round(time.perf_counter() - start, 1)
    return {**header, "models": models, "runs": [vars(r) for r in runs]}


def described(s: Subject) -> dict[str, Any]:
    """What ran: the class and the kernels transformers chose."""
    return {
        "model": s.spec,
        "class": s.model.class_name,
        "parameters": s.model.total,
        "attention": s.attention,
        "experts": s.experts,
        "built_s": round(s.built_s, 1),
    }


def settle(args: argparse.Namespace, device: str) -> None:
    """The defaults of the chosen device for whatever was not given."""
    args.model_list = [m.strip() for m in (args.models or ",".join(MODELS[device])).split(",") if m.strip()]
    args.inference_points = points(POINTS[device, "inference"] if args.inference is None else args.inference)
    args.training_points = points(POINTS[device, "training"] if args.training is None else args.training)
    args.precision_list = precisions(args.precision or DEFAULT_PRECISIONS[device]) if args.training_points else []
    for spec in args.model_list:
        count(spec)


def build_or_skip(spec: str, torch: Any, transformers: Any, device: str) -> Subject | Run:
    """The built model, or a run saying why this transformers could not build it."""
    try:
        return build(spec, count(spec), torch, transformers, device)
    except (AttributeError, TypeError, ValueError, ImportError) as e:  # a class or option it lacks
        return Run(spec, "build", "", 0, 0, status=f"not built by transformers {transformers.__version__}: {e}")
    except torch.cuda.OutOfMemoryError:
        return Run(spec, "build", "", 0, 0, status="out of memory while building")


def environment(torch: Any, transformers: Any, device: str, args: argparse.Namespace) -> dict[str, Any]:
    name = torch.cuda.get_device_name() if device == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    return {
        "schema": "paramcount.bench_memory/1",
        "date": datetime.date.today().isoformat(),
        "command": "python benchmarks/bench_memory.py " + " ".join(sys.argv[1:]),
        "device": name,
        "measured_by": MEASURED_BY[device],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }


MODELS = {"cuda": CUDA_MODELS, "cpu": CPU_MODELS}
MEASURED_BY = {
    "cuda": "torch.cuda.memory_allocated / max_memory_allocated (CUDA context and cached blocks excluded)",
    "cpu": "storage of live tensors tracked by a TorchDispatchMode, plus the storage existing before",
}


# ---- rendering ---------------------------------------------------------------------------------------


def gb(n: int) -> str:
    return f"{n / 1e9:.4f}" if abs(n) < 1e9 else f"{n / 1e9:.3f}"


def pct(error: float | None) -> str:
    return "n/a" if error is None else f"{error:+.1%}"


def versus(row: dict[str, Any] | None, exact: bool = False) -> str:
    """``estimate / measured (error)`` in GB, or the error alone for an identity that held."""
    if row is None:
        return ""
    if exact and row["estimate"] == row["measured"]:
        return f"{gb(row['measured'])} (exact)"
    return f"{gb(row['estimate'])} / {gb(row['measured'])} ({pct(row['error'])})"


INFERENCE = ("model", "T×B", "weights", "KV cache", "activations", "KV + activations", "total")
TRAINING = ("model", "precision", "T×B", "weights, grads, optimizer", "activations", "total (peak)", "peak in")


def inference_cells(run: Run) -> list[str]:
    where = [run.model, f"{run.context}×{run.batch}"]
    if run.status != "ok":
        return [*where, run.status, "", "", "", ""]
    exact = [versus(run.row(k), exact=True) for k in ("weights", "kv_cache")]
    return [*where, *exact, versus(run.row("activations")), versus(run.row("kv+act")), versus(run.row("total"))]


def training_cells(run: Run) -> list[str]:
    where = [run.model, run.precision, f"{run.context}×{run.batch}"]
    if run.status != "ok":
        return [*where, run.status, "", "", ""]
    states, act, total = (versus(run.row(k), exact=k == "states") for k in ("states", "activations", "total"))
    return [*where, states, act, total, run.phases["peak_phase"]]


def table(columns: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    lines = [columns, ["---"] * len(columns), *rows]
    return ["| " + " | ".join(cells) + " |" for cells in lines]


def render_header(h: dict[str, Any]) -> str:
    return f"{h['device']}; torch {h['torch']}, transformers {h['transformers']}; bytes: {h['measured_by']}"


def show(run: Run) -> Run:
    """The run's rows on the terminal as they come: term, estimate, measured, error."""
    where = f"{run.mode} {run.precision} {run.context}×{run.batch}"
    if run.status != "ok":
        print(f"  {where}: {run.status}")
    for r in run.rows:
        print(f"  {where} | {r['term']:<14} | {gb(r['estimate']):>9} | {gb(r['measured']):>9} | {pct(r['error']):>7}")
    for note in run.notes:
        print(f"    note: {note}")
    return run


def markdown(result: dict[str, Any]) -> str:
    """Two tables, estimate / measured GB (error = estimate / measured - 1), and the notes."""
    runs = [Run(**r) for r in result["runs"]]
    head = [f"Measured {result['date']} on {render_header(result)}.", "", f"`{result['command']}`", ""]
    inference = table(INFERENCE, [inference_cells(r) for r in runs if r.mode == "inference"])
    training = table(TRAINING, [training_cells(r) for r in runs if r.mode == "training"])
    failed = [f"- {r.model}: {r.status}" for r in runs if r.mode == "build"]
    notes = sorted({f"- {r.model}: {n}" for r in runs for n in r.notes})
    return "\n".join([*head, *inference, "", *training, "", *failed, *notes]) + "\n"


def write(result: dict[str, Any], out: Path) -> None:
    text = markdown(result) if out.suffix == ".md" else json.dumps(result, indent=2) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"\nwrote {out}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        result = run_all(args)
    except Refusal as e:
        print(f"bench_memory: {e}", file=sys.stderr)
        return 2
    print(f"\n{len(result['runs'])} points in {result['seconds']} s")
    if args.out:
        write(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
