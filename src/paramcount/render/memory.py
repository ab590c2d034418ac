"""Memory plans and fits in the terminal (rich) and as JSON (schemas paramcount.memory/1, paramcount.fit/1)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..memory.core.gpus import CUDA_TOTAL, GPU
from ..memory.core.plan import Plan
from ..memory.core.terms import GB, GIB, Term
from ..memory.fit import Fit, Overview, Row, gpu_dict, host_bytes
from .text import LABELS, Command, n


def gb(b: int) -> str:
    return f"{b / GB:,.2f}"


def gib(b: int) -> str:
    return f"{b / GIB:,.2f}"


def unit(g: GPU) -> str:
    """The unit a table beside this GPU states its figures in: the card's own (GiB for GDDR, HBM
    and unified memory, whose "80 GB" is 80 GiB; GB for a size given as GB), one per table."""
    return g.unit


def sized(b: int, g: GPU) -> str:
    """``b`` bytes in the GPU's unit, two decimals (the figure alone; the unit is in the header)."""
    return gib(b) if unit(g) == "GiB" else gb(b)


def capacity(g: GPU) -> str:
    """``GeForce RTX 3060: 12 GB GDDR6 = 12 GiB (12,884,901,888 B)`` and what one program may use."""
    amount = f"{g.memory // GIB} GiB" if g.unit == "GiB" else f"{gb(g.memory)} GB"
    line = f"{g.name}: {g.stated} = {amount} ({n(g.memory)} B)"
    if g.usable != g.memory and g.capability is None:
        line += f", usable {gib(g.usable)} GiB ({n(g.usable)} B)"
    elif g.usable != g.memory:  # NVIDIA: the total CUDA reports, measured or estimated (gpus.py)
        about = "" if g.key in CUDA_TOTAL else "≈"  # measured, or the largest share kept back seen
        line += f", usable {about}{gib(g.usable)} GiB as CUDA reports"
    return line


def heading(plan: Plan) -> Group:
    m, s = plan.model, plan.settings
    head = Text(m.name, style="bold")
    head.append(f"  {m.class_name} · {n(m.total)} parameters", style="dim")
    if plan.mode == "inference" and plan.partial:
        return Group(head, Text(f"inference · {weights_text(s)} · weights and overhead only (no KV cache)"))
    if plan.mode == "inference":
        what = f"inference · {weights_text(s)} · {_caches(s)} · {n(s['context'])} tokens × batch {n(s['batch'])}"
        what += f" · runtime {s['runtime']}" if s.get("runtime") else ""
    else:
        what = _training_line(s)
    why = s.get("context_from")
    return Group(head, Text(what + (f" (context: {why})" if why and why != "--context" else "")))


def _caches(s: Mapping[str, Any]) -> str:
    """``KV cache f16 (llama.cpp)``, and a recurrent state where the plan keeps one (llama.cpp's
    hybrid and state-space models: ``state_dtype``)."""
    said = []
    if s.get("kv_dtype") is not None:
        said.append(f"KV cache {s['kv_dtype']}" + ("" if s["kv_cache"] == "dynamic" else f" ({s['kv_cache']})"))
    if s.get("state_dtype"):
        said.append(f"recurrent state {s['state_dtype']}")
    return " + ".join(said) or "no cache"


def weights_text(s: Mapping[str, Any]) -> str:
    """``weights int4``, or for a checkpoint ``weights as stored (Q4_K_M GGUF file)``."""
    return f"weights as stored ({s['stored_as']})" if s.get("stored_as") else f"weights {s['scheme']}"


def _training_line(s: Mapping[str, Any]) -> str:
    gpus = f"{n(s['gpus'])} GPU{'s' * (s['gpus'] != 1)}"
    said = [f"training, per GPU · {s['precision']}", s["optimizer"], f"ZeRO-{s['zero']} on {gpus}"]
    said.append(f"{n(s['context'])} tokens × batch {n(s['batch'])}")
    recipe = (
        " (the LoRA recipes' default)"
        if s.get("recompute_from", "--recompute") not in ("--recompute", "Trainer's default")
        else ""
    )
    said.append(f"recompute {s['recompute']}{recipe}" + ("" if s["flash"] else ", no flash attention"))
    return " · ".join(said + ([f"LoRA {s['lora']}"] if s.get("lora") else []))


def _many(count: int, noun: str) -> str:
    """``1 sequence``, ``16 sequences``."""
    return f"{n(count)} {noun}{'' if count == 1 else 's'}"


def _row_label(t: Term, indent: int = 0) -> Text:
    label = Text("  " * indent + ("· " if indent else "") + t.label, style="dim" if indent else "")
    return label


def terms_table(plan: Plan, gpu: GPU | None = None) -> Table:
    """Each term's bytes, in GB and GiB side by side, or beside a GPU in its unit alone."""
    units = tuple((u, gib if u == "GiB" else gb) for u in ((unit(gpu),) if gpu else ("GB", "GiB")))
    t = Table(show_edge=False)
    t.add_column("term")
    t.add_column("bytes", justify="right")
    for u, _ in units:
        t.add_column(u, justify="right")
    t.add_column("figure")
    host = plan.host_terms
    for term in plan.device_terms:
        _term_rows(t, term, units)
    bold = "bold"
    total = plan.total
    name = "total on the GPU" if host else "total"
    t.add_row(Text(name, bold), Text(n(total), bold), *(Text(f(total), bold) for _, f in units), "")
    for term in host:  # below the total, which leaves them out
        _term_rows(t, term, units)
    return t


def _term_rows(t: Table, term: Term, units: tuple) -> None:
    t.add_row(_row_label(term), n(term.bytes), *(f(term.bytes) for _, f in units), _kind(term))
    for part in term.parts:
        cells = (Text(x, "dim") for x in (n(part.bytes), *(f(part.bytes) for _, f in units)))
        t.add_row(_row_label(part, 1), *cells, "")


def _kind(t: Term) -> Text:
    kind = Text("estimate", style="yellow") if t.estimate else Text("exact")
    return kind.append(", host", style="cyan") if t.host else kind


def how(plan: Plan) -> list[Any]:
    """Each term's formula, assumption and, for an estimate, where its formula comes from."""
    return how_terms(plan.terms)


def how_terms(terms: Iterable[Term]) -> list[Any]:
    out: list[Any] = []
    for t in terms:
        marks = (" [estimate]" if t.estimate else "") + (" [host memory, not in the total]" if t.host else "")
        out.append(Text(t.label + marks, style="bold"))
        g = Table.grid(padding=(0, 1))
        g.add_column(style="dim", no_wrap=True)
        g.add_column(overflow="fold")
        g.add_row("  formula", t.formula)
        if t.assumption:
            g.add_row("  assumes", t.assumption)
        if t.estimate and t.source:
            g.add_row("  source", t.source)
        out.append(g)
    return out


def render_plan(plan: Plan, gpu: GPU | None = None, ram: int | None = None) -> Group:
    parts: list[Any] = [heading(plan), Text(""), terms_table(plan, gpu), Text("")]
    share = plan.estimated / plan.total if plan.total else 0
    estimated = ", ".join(t.key for t in plan.device_terms if t.estimate)
    said = f"estimates ({estimated}) are {share:.1%} of the total" if estimated else "no estimates: every term is exact"
    parts.append(Text(f"{said}; how each term is computed:"))
    parts += how(plan)
    parts += [Text(f"note: {note}", style="yellow") for note in plan.notes]
    if gpu is not None:
        parts += [Text(""), fits_line(plan.total, gpu)]
        if plan.settings.get("runtime") == "vllm":
            parts.append(_vllm_line(plan, gpu))
    if plan.settings.get("runtime") == "vllm" and plan.settings.get("device") == "cpu":
        parts.append(_vllm_cpu_line(plan))
    if ram is not None:
        parts.append(ram_line(plan, ram))
    return Group(*parts)


def _vllm_cpu_line(plan: Plan) -> Text:
    """What vLLM-CPU logs: its KV cache in tokens and blocks, and the concurrency as it prints it."""
    s = plan.planner.serving(0, plan.settings["context"])
    if s is None:
        return Text("vLLM on CPUs: give --kv-cache-space or --ram for the KV cache it logs", "yellow")
    at = n(plan.settings["context"])
    bound = "" if s["exact"] else " (upper bound: the worker's memory beyond its weights not counted)"
    if not s["starts"]:
        return Text(f"vLLM would not start: its KV cache holds less than one sequence of {at} tokens{bound}", "red")
    return Text(
        f"vLLM on CPUs logs: CPU KV cache size: {n(s['kv_tokens'])} tokens ({n(s['kv_blocks'])} blocks of "
        f"{s['block_size']}), Maximum concurrency for {at} tokens per request: {s['max_concurrency']:.2f}x{bound}"
    )


def _vllm_line(plan: Plan, g: GPU) -> Text:
    """What vLLM logs on this GPU: its KV cache in tokens and blocks, and the sequences it admits."""
    s = plan.planner.serving(g.memory, plan.settings["context"])
    if not s["starts"] and s["kv_blocks"] <= s["blocks_per_sequence"]:
        room = gib(s["kv_cache_bytes"])
        return Text(f"vLLM would not start: {room} GiB of KV cache is less than one sequence", "red")
    if not s["starts"]:
        room = gib(s["outside_claim_bytes"])
        return Text(
            f"vLLM would not start: the {room} GiB outside its claim cannot hold the CUDA context, cuBLAS and NCCL",
            "red",
        )
    return Text(
        f"vLLM on it: KV cache {gib(s['kv_cache_bytes'])} GiB = {n(s['kv_tokens'])} tokens ({n(s['kv_blocks'])} "
        f"blocks); at {n(plan.settings['context'])} tokens, {_many(s['max_sequences'], 'sequence')} at once"
    )


def fits(plan: Plan, g: GPU, ram: int | None = None) -> bool:
    """Whether the plan fits the GPU as the fits line says: its total within what one program may
    use, its host part within ``ram`` (when given), and under vLLM a start (the claim's KV cache
    holds one sequence: the planner's ``serving``, after vLLM's kv_cache_utils.py get_kv_cache_configs)."""
    if plan.total > g.usable or (ram is not None and host_bytes(plan) > ram):
        return False
    return plan.settings.get("runtime") != "vllm" or plan.planner.serving(g.memory, plan.settings["context"])["starts"]


def fits_line(total: int, g: GPU) -> Text:
    left, u = g.usable - total, unit(g)
    verdict = "fits" if left >= 0 else "does not fit"
    room = f"{sized(left, g)} {u} to spare" if left >= 0 else f"{sized(-left, g)} {u} short"
    return Text(f"{verdict} on {capacity(g)}: {room}", style="green" if left >= 0 else "red")


# ---- --replay ------------------------------------------------------------------------------------


def render_replay(r: Any, gpu: GPU | None = None) -> Group:
    """``memory --replay`` (a :class:`~paramcount.memory.runtimes.transformers.replay.Replay`): the
    total's terms, the peak allocated and the peak's op beside it, each term's figure, and what
    the replay is (a model of the allocator, and how close it held the measured runs)."""
    s = r.step.settings()
    shown = ", ".join(f"{k} {v}" for k, v in s.items() if k not in ("runtime", "replay", "step") and v is not None)
    title = Text(f"{r.model.name} · transformers, {s['step']} replayed · {shown}", style="bold")
    units = tuple((u, gib if u == "GiB" else gb) for u in ((unit(gpu),) if gpu else ("GB", "GiB")))
    t = Table(show_edge=False)
    for name, justify in (("term", "left"), ("bytes", "right"), *((u, "right") for u, _ in units), ("figure", "left")):
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for term in r.terms():
        t.add_row(term.label, n(term.bytes), *(f(term.bytes) for _, f in units), term.formula)
    t.add_row(Text("total", "bold"), Text(n(r.total), "bold"), *(Text(f(r.total), "bold") for _, f in units), "")
    for term in r.beside():  # below the total, which leaves them out
        t.add_row(Text(term.label, "dim"), n(term.bytes), *(f(term.bytes) for _, f in units), term.formula)
    parts: list[Any] = [title, Text(""), t, Text("")]
    parts += [Text(f"note: {note}", style="yellow") for note in (*r.notes(), r.held)]
    if gpu is not None:
        parts += [Text(""), fits_line(r.total, gpu)]
    return Group(*parts)


def dumps_replay(r: Any, gpu: GPU | None = None) -> str:
    """``memory --replay --json``: schema paramcount.memory/1 with ``exact: false``; with ``gpu``,
    whether the total fits it."""
    data = r.to_dict()
    if gpu is not None:
        data["gpu"] = {**gpu_dict(gpu), "fits": r.total <= gpu.usable, "headroom": gpu.usable - r.total}
    return json.dumps(data, indent=2, ensure_ascii=False)


# ---- fit ----------------------------------------------------------------------------------------


def _context_cell(r: Row) -> str:
    if r.plan.partial:
        return "n/a"
    if r.max_context is None:
        return "none"
    if r.context_limit is not None and r.max_context == r.context_limit:
        return f"{n(r.max_context)} (model max)"
    return n(r.max_context)


def fit_table(fit: Fit) -> Table:
    t = Table(show_edge=False)
    u = unit(fit.gpu)
    for col, just in (("precision", "left"), (f"needs {u}", "right"), ("fits", "left"), (f"headroom {u}", "right")):
        t.add_column(col, justify=just)
    t.add_column("max context", justify="right")
    t.add_column("max batch", justify="right")
    if fit.mode == "training":
        t.add_column("min GPUs", justify="right")
    ram = any(r.ram is not None for r in fit.rows)
    if ram:
        t.add_column(f"host {u} / RAM", justify="right")
    for r in fit.rows:
        cells = [
            r.precision,
            sized(r.plan.total, fit.gpu),
            Text("yes" if r.fits else "no", "green" if r.fits else "red"),
        ]
        batch = "n/a" if r.plan.partial else n(r.max_batch) if r.max_batch else "none"
        cells += [sized(r.headroom, fit.gpu), _context_cell(r), batch]
        if fit.mode == "training":
            cells.append(n(r.gpus) if r.gpus else "none")
        if ram:
            cells.append(_ram_cell(r.plan, r.ram, fit.gpu))
        t.add_row(*cells)
    return t


def _ram_cell(plan: Plan, ram: int | None, unit_gpu: GPU) -> Text:
    """``9.30 / 64.00``: the host part beside RAM, red when it does not fit."""
    if ram is None:
        return Text("")
    held = host_bytes(plan)
    return Text(f"{sized(held, unit_gpu)} / {sized(ram, unit_gpu)}", "green" if held <= ram else "red")


def ram_line(plan: Plan, ram: int) -> Text:
    """--ram: the host part (what the runtime keeps in host memory) against RAM."""
    held = host_bytes(plan)
    verdict = "fits in" if held <= ram else "does not fit in"
    return Text(
        f"host part {gb(held)} GB {verdict} {gb(ram)} GB of RAM (--ram)", style="green" if held <= ram else "red"
    )


def serving_table(fit: Fit) -> Table:
    """vLLM: per precision, the fewest GPUs, the memory of each, its KV cache and the speed bounds."""
    t = Table(show_edge=False)
    per = f"{unit(fit.gpu)}/GPU"
    heads = ("precision", "GPUs", per, "KV tokens per GPU", "max sequences", "decode tok/s ≤", "prefill ≤")
    for i, col in enumerate(heads):
        t.add_column(col, justify="left" if i == 0 else "right")
    for r in fit.rows:
        s = r.serving or {}
        if not r.fits:
            split = f"TP {s.get('tried_tp')}" + (f"×PP {s['pp']}" if s.get("pp", 1) > 1 else "")
            t.add_row(r.precision, Text(f"no: {split} short", "red"), sized(r.plan.total, fit.gpu), "", "", "", "")
            continue
        split = f"{r.gpus} (TP {s['tp']}" + (f", PP {s['pp']})" if s["pp"] > 1 else ")")
        d, p = s.get("decode"), s.get("prefill")
        t.add_row(
            r.precision,
            Text(split, "green"),
            sized(r.plan.total, fit.gpu),
            n(s["kv_tokens"]),
            n(s["max_sequences"]),
            f"{d['tokens_per_s']:,.0f} ({d['bound_by']})" if d else "n/a",
            f"{p['seconds']:,.2f} s" if p else "n/a",
        )
    return t


def _serving_notes(fit: Fit) -> list[Text]:
    from ..memory.runtimes.vllm.plan import DRIVER_SEEN

    g = fit.gpu
    out = [
        Text(
            "GPUs: the fewest tensor-parallel GPUs (1, 2, 4, 8, …) vLLM starts on and admits "
            f"{_many(fit.batch, 'sequence')} of {n(fit.context)} tokens; "
            f"{unit(g)}/GPU: what that takes on the busiest GPU, over "
            "--gpu-memory-utilization"
        ),
        Text(
            "KV tokens per GPU and max sequences: what vLLM logs (GPU KV cache size; maximum concurrency)"
            + (
                f", from the stated {g.memory / 2**30:,.2f} GiB; vLLM claims a share of what the driver reports, a "
                f"little less ({DRIVER_SEEN}): give that size as --gpu for its own figures"
                if g.kind != "custom"
                else ""
            )
        ),
    ]
    if g.bandwidth and g.tflops:
        out.append(
            Text(
                f"decode: an upper bound, {g.bandwidth:g} GB/s and {g.tflops:g} TFLOPS at their peaks, all sequences "
                f"at {n(fit.context)} tokens; prefill: the least time for one prompt of {n(fit.context)} tokens, "
                "compute-bound"
            )
        )
    else:
        out.append(Text(f"no speed bound: {g.name} has no bandwidth or FLOPS figure here", style="yellow"))
    return out


def _listed(items: Any) -> str:
    """ "a", "a and b", "a, b and c"."""
    items = list(items)
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def fit_params_lines(fit: Fit) -> list[Text]:
    """llama.cpp: what llama-fit-params would choose on this GPU, as arguments to paste: for the
    types that do not fit whole on one GPU (where one does, the table's max context is the figure,
    and the recommendation's command sets it), and for every type over several GPUs."""
    rows = [r for r in fit.rows if r.fit_params is not None and (r.fit_params.per_device or not r.fits)]
    if not rows:
        return []
    f = rows[0].fit_params
    out = [
        Text(""),
        Text(
            f"where not every layer fits: what llama.cpp's --fit (on by default) picks with -c and -ngl unset, leaving"
            f" {f.margin // 2**20:,} MiB free of {f.free // 2**20:,} MiB (the GPU less the CUDA context)"
        ),
    ]
    if f.per_device:
        out[-1] = Text(
            f"llama-fit-params (llama.cpp's --fit, on by default) over {len(f.per_device)} GPUs: what it would choose"
            f" with {_margins(f.per_device)} (each GPU less its CUDA"
            " context); -c unset is the trained context; no GPU at hand: it follows llama.cpp's source"
        )
    for r in rows:
        f = r.fit_params
        on = "the GPUs (split by free memory)" if f.per_device else "the GPU"
        longest = f"every layer on {on} up to -c {n(f.longest)}" if f.longest else "not every layer at any context"
        if f.failed:
            out.append(Text(f"  {r.precision}: failed: {f.failed}; {longest}", style="red"))
            continue
        where, host = "the GPUs" if f.per_device else "the GPU", f.devices().get("host", 0)
        used = f"{f.used // 2**20:,} MiB on {where}, {host // 2**20:,} MiB in host memory"
        out.append(Text(f"  {r.precision}: {used}; {longest}"))
        out.append(Command(f"    {f.arguments()}"))
        out += [Text(f"    {_device_line(d)}") for d in f.per_device]
    return out


def _margins(per_device: Any) -> str:
    """``1,024 MiB left free on each`` or ``512, 2,048 MiB left free`` (-fitt per GPU)."""
    found = [d["margin_bytes"] // 2**20 for d in per_device]
    if len(set(found)) == 1:
        return f"{found[0]:,} MiB left free on each"
    return ", ".join(f"{m:,}" for m in found) + " MiB left free"


def _device_line(d: dict) -> str:
    """One GPU of a llama-fit-params split: its layers, projected use and what it leaves free."""
    layers = "every layer by free memory (-ts unset)" if d["layers"] is None else f"{d['layers']} layers"
    free, used = d["free_bytes"] // 2**20, d["projected_bytes"] // 2**20
    left = (d["free_bytes"] - d["projected_bytes"]) // 2**20
    short = "" if d.get("keeps_margin", True) else f", short of its {d['margin_bytes'] // 2**20:,} MiB margin"
    return f"{d['device']}: {layers}, {used:,} MiB used, {left:,} MiB of {free:,} MiB left free{short}"


def render_fit(fit: Fit) -> Group:
    m = fit.model
    if fit.mode == "serving":
        head = Text(m.name, style="bold")
        head.append(f"  {m.class_name} · {n(m.total)} parameters", style="dim")
        what = f"served by vLLM: {_many(fit.batch, 'sequence')} × {n(fit.context)} tokens" + _options_of(fit.settings)
        parts: list[Any] = [head, Text(f"on {capacity(fit.gpu)}"), Text(what), Text(""), serving_table(fit), Text("")]
        parts += [Text(f"left out: {why}", style="yellow") for why in fit.skipped]
        parts += _serving_notes(fit)
        estimated = _listed(dict.fromkeys(t.label for r in fit.rows for t in r.plan.terms if t.estimate))
        parts.append(
            Text(f"every figure includes the estimated {estimated}; `paramcount memory --runtime vllm` itemises them")
        )
        return Group(*parts)
    head = Text(m.name, style="bold")
    head.append(f"  {m.class_name} · {n(m.total)} parameters", style="dim")
    what = f"{fit.mode} at {n(fit.context)} tokens × batch {n(fit.batch)}" + _options_of(fit.settings)
    parts: list[Any] = [head, Text(f"on {capacity(fit.gpu)}"), Text(what), Text(""), fit_table(fit), Text("")]
    if fit.gpu.note:
        parts.append(Text(f"note: {fit.gpu.note}", style="yellow"))
    parts += [Text(f"left out: {why}", style="yellow") for why in fit.skipped]
    parts += unquantised_notes({r.precision: r.plan for r in fit.rows})
    parts.append(
        Text(f"max context: at batch {n(fit.batch)}; max batch: at {n(fit.context)} tokens; none: not even one")
    )
    parts += fit_params_lines(fit)
    if fit.mode == "training":
        parts.append(
            Text("min GPUs: data parallel with ZeRO-3 (weights, gradients, optimizer states sharded over them)")
        )
        parts += _recipe_note(r.plan.settings for r in fit.rows)
    partial = _partial(r.plan for r in fit.rows)
    estimated = _listed(dict.fromkeys(t.key for r in fit.rows for t in r.plan.device_terms if t.estimate))
    parts += partial or [Text(f"every figure includes the estimated {estimated}; `paramcount memory` itemises them")]
    ram = next((r.ram for r in fit.rows if r.ram is not None), None)
    if ram is not None:
        said = "what the runtime keeps in host memory (llama.cpp's input layer, tensors overridden to the CPU; all of"
        u = unit(fit.gpu)
        parts.append(
            Text(
                f"host {u}: {said} it on --device cpu) against {sized(ram, fit.gpu)} {u} of RAM;"
                " a row fits when both do"
            )
        )
        return Group(*parts)
    return Group(*parts, *_host_note(r.plan for r in fit.rows))


def _recipe_note(settings: Iterable[Mapping[str, Any]]) -> list[Text]:
    """Say so where checkpointing is on because the LoRA recipes turn it on, not because it was asked."""
    from ..memory.training.optimizer import RECIPE

    if not any(s.get("recompute_from") == RECIPE for s in settings):
        return []
    return [
        Text(f"gradient checkpointing: on, as {RECIPE[: RECIPE.index(' (')]} set it; --recompute none plans without")
    ]


def _options_of(settings: Mapping[str, Any]) -> str:
    from ..memory.runtimes.llamacpp.placement import override_flags

    shown = [
        override_flags(v) if k == "overrides" else f"{k.replace('_', '-')} {v}"
        for k, v in settings.items()
        if v is not None
    ]
    return " · " + ", ".join(shown) if shown else ""


# ---- JSON -----------------------------------------------------------------------------------------


def dumps(
    obj: Plan | Fit | Overview, gpu: GPU | None = None, ram: int | None = None, extra: Mapping[str, Any] | None = None
) -> str:
    """The JSON document; a plan with ``gpu`` also says whether it fits there (``"gpu"``), and
    with ``ram`` whether its host part fits in RAM (``"ram"``); ``extra``: keys a layer above adds
    (``fit``'s recommendations)."""
    data = {**obj.to_dict(), **(extra or {})}
    if ram is not None and isinstance(obj, Plan):
        held = host_bytes(obj)
        data["ram"] = {"bytes": ram, "host": held, "fits": held <= ram}
    if isinstance(obj, Plan) and obj.settings.get("device") == "cpu" and obj.settings.get("runtime") == "vllm":
        data["serving"] = obj.planner.serving(0, obj.settings["context"])  # vLLM-CPU: its budget, no GPU
    if gpu is not None and isinstance(obj, Plan):
        data["gpu"] = {**gpu_dict(gpu), "fits": obj.total <= gpu.usable, "headroom": gpu.usable - obj.total}
        if obj.settings.get("runtime") == "vllm":
            data["gpu"]["serving"] = obj.planner.serving(gpu.memory, obj.settings["context"])
    return json.dumps(data, indent=2, ensure_ascii=False)


def overview_table(o: Overview) -> Table:
    t = Table(show_edge=False)
    t.add_column("--gpu", no_wrap=True)
    t.add_column("usable GiB", justify="right")
    for p in o.plans:
        t.add_column(p, justify="right")
    u, size = _overview_unit(o)
    needs = [Text(size(plan.total), "bold") for plan in o.plans.values()]
    t.add_row(Text(f"needs ({u})", "bold"), "", *needs)
    for g in o.gpus:
        cells = []
        for p in o.plans:
            left = o.headroom(g, p)
            cells.append(Text(f"{'+' if left >= 0 else '-'}{size(abs(left))}", "green" if left >= 0 else "red"))
        t.add_row(g.key, gib(g.usable), *cells)
    return t


def _overview_unit(o: Overview) -> tuple[str, Any]:
    """GiB, as the cards listed are stated (and their usable column is), unless one is not."""
    return ("GiB", gib) if all(unit(g) == "GiB" for g in o.gpus) else ("GB", gb)


def render_overview(o: Overview) -> Group:
    m = o.model
    head = Text(m.name, style="bold")
    head.append(f"  {m.class_name} · {n(m.total)} parameters", style="dim")
    what = f"{o.mode} at {n(o.context)} tokens × batch {n(o.batch)}" + _options_of(o.settings)
    legend = (
        f"cells: {_overview_unit(o)[0]} to spare (+) or short (-) on each GPU's usable memory; --gpu NAME for "
        "context and batch limits"
    )
    skipped = [Text(f"left out: {why}", style="yellow") for why in o.skipped]
    partial = _partial(o.plans.values())
    footnotes = unquantised_notes(o.plans)
    hosted = _host_note(o.plans.values())
    return Group(
        head, Text(what), Text(""), overview_table(o), Text(""), Text(legend), *footnotes, *skipped, *partial, *hosted
    )


def unquantised_notes(plans: Mapping[str, Plan]) -> list[Text]:
    """A footnote for each scheme that leaves a large part of the model unquantised: its
    figure is not what the scheme's name suggests (nf4 on transformers 5's fused experts)."""
    out = []
    for name, plan in plans.items():
        held, kinds = getattr(plan.planner, "unquantised", (0, ()))
        total = plan.model.total
        if total and held * 20 > total:  # more than 5%
            said = ", ".join(LABELS.get(k, k) for k in kinds)
            share = f"{held:,} of {total:,} parameters ({100 * held / total:.1f}%)"
            out.append(Text(f"{name}: {share} stay unquantised: {said}; see memory --dtype {name}", style="yellow"))
    return out


def _partial(plans: Any) -> list[Text]:
    """The reason once, when the figures are weights and overhead alone."""
    why = next((p.partial for p in plans if p.partial), None)
    return [Text(f"n/a, and every figure is weights + overhead only: {why}", style="yellow")] if why else []


def _host_note(plans: Any) -> list[Text]:
    """Once, where the figures leave out what the runtime holds in host memory beside the GPU."""
    if not any(p.host for p in plans):
        return []
    return [
        Text(
            "figures are GPU memory: llama.cpp keeps its input layer (the token embeddings) in host memory "
            "beside them, not counted here; `paramcount memory` itemises it"
        )
    ]
