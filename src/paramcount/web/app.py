"""The JSON API and the page: a FastAPI app over the public library calls.

Every route reads a typed body (see schemas.py, published as /openapi.json), makes the same
library calls the command line makes, and answers JSON. Bad input is a ParamcountError,
answered 400 with its message and field, which the page shows beside the input at fault.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import threading
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from .. import __version__
from ..errors import ParamcountError
from ..frontends import fallback_worker
from . import planner, schemas, sources, views, work
from .guard import BODY_TIMEOUT, MAX_BODY, Guard
from .work import Bug

STATIC = Path(__file__).parent / "static"
UPLOAD_BODY = sources.MAX_HEADER_UPLOAD * 4 // 3 + MAX_BODY  # base64 of the largest header, and a config
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
ERRORS = {400: {"model": schemas.Error}, 413: {"model": schemas.Error}, 422: {"model": schemas.Error}}


class Answer(JSONResponse):
    """JSON that always encodes: a lone surrogate from a name or a config (which the CLI also
    accepts) goes out as a JSON escape (``\\ud800``) instead of failing the response (a 500)."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


@contextlib.contextmanager
def counting() -> Iterator[None]:
    try:
        yield
    except ParamcountError:
        raise
    except Exception as e:  # a library bug on this input: the page says so plainly
        raise Bug(f"paramcount could not read this input ({type(e).__name__}: {str(e)[:300]}); please report it") from e


def create_app(
    hosts: Sequence[str] | None = LOOPBACK, body_timeout: float = BODY_TIMEOUT, workers: work.Workers | None = None
) -> Any:
    """The ASGI app; ``hosts`` are the Host names it answers to (None: any, for a public bind);
    ``workers`` read heavy inputs in child processes with a time limit (web/work.py)."""
    workers = workers or work.Workers()
    api = FastAPI(
        lifespan=_closing(workers),
        title="paramcount",
        version=__version__,
        description="Exact parameter counts, derivations and memory plans of Transformer models.",
        docs_url=None,  # the interactive docs load scripts from a CDN; /openapi.json is the schema
        redoc_url=None,
    )
    api.state.exposed = hosts is None  # bound beyond loopback: the page says it is reachable from elsewhere
    api.state.uploads = sources.Uploads()
    api.state.workers = workers
    _handlers(api)
    _routes(api)
    api.mount("/static", StaticFiles(directory=STATIC), name="static")
    return Guard(
        api, None if hosts is None else [*hosts, *LOOPBACK], limits={"/api/upload": UPLOAD_BODY}, timeout=body_timeout
    )


def _closing(workers: work.Workers) -> Any:
    """The app's lifespan: its workers killed when it stops (a test's app, or the server), and
    taking jobs again if it starts again (a test harness runs one lifespan per client)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        workers.open()
        yield
        workers.close()

    return lifespan


def _error(
    status: int,
    message: str,
    field: str | None = None,
    source: str | None = None,
    bug: bool = False,
    headers: dict[str, str] | None = None,
):
    body = {"error": message, "field": field, "source": source, "bug": bug}
    return Answer(body, status_code=status, headers=headers)


def _handlers(api: FastAPI) -> None:
    @api.exception_handler(ParamcountError)
    async def bad_input(request: Request, e: ParamcountError):
        return _error(400, str(e), e.field, e.source)

    @api.exception_handler(work.TooSlow)
    @api.exception_handler(fallback_worker.TooSlow)
    async def too_slow(request: Request, e: ParamcountError):
        return _error(503, str(e), e.field, e.source)

    @api.exception_handler(Bug)
    async def bug(request: Request, e: Bug):
        return _error(422, str(e), bug=True)

    @api.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError):
        first = e.errors()[0] if e.errors() else {}
        where = field_path(first.get("loc", ()))
        return _error(422, f"{where or 'request'}: {plain(first)}", where or None)

    @api.exception_handler(HTTPException)
    async def http(request: Request, e: HTTPException):
        return _error(e.status_code, str(e.detail), headers=getattr(e, "headers", None))  # 405 keeps Allow


# pydantic's error types in the words the CLI uses for a bad flag value (never pydantic's own text,
# which names Python types and URLs): one line, the field first.
PLAIN = {
    "missing": "missing",
    "extra_forbidden": "not a field this request takes",
    "int_parsing": "not a whole number",
    "int_type": "not a whole number",
    "int_from_float": "not a whole number",
    "float_parsing": "not a number",
    "float_type": "not a number",
    "bool_parsing": "not true or false",
    "bool_type": "not true or false",
    "string_type": "not text",
    "dict_type": "not a JSON object",
    "list_type": "not a list",
    "model_type": "not a JSON object",
    "model_attributes_type": "not a JSON object",
    "string_pattern_mismatch": "not in the form this field takes",
    "json_invalid": "not valid JSON",
    "union_tag_not_found": "no kind given",
}
BOUNDS = {
    "greater_than_equal": ("at least", "ge"),
    "greater_than": ("more than", "gt"),
    "less_than_equal": ("at most", "le"),
    "less_than": ("less than", "lt"),
    "string_too_short": ("at least {} characters", "min_length"),
    "string_too_long": ("at most {} characters", "max_length"),
    "too_short": ("at least {} items", "min_length"),
    "too_long": ("at most {} items", "max_length"),
}


def field_path(loc: Sequence[Any]) -> str:
    """The field as the request names it (``source.name``, ``overrides.3``), without pydantic's
    ``body`` prefix or the tags it adds for a union's member (``catalog``, ``int``, ``str``)."""
    tags = {"catalog", "config", "printout", "upload", "store", "int", "str", "float", "bool"}
    kept = [str(p) for p in loc if p != "body" and not (isinstance(p, str) and (p in tags or "[" in p))]
    return ".".join(kept)


def plain(err: dict[str, Any]) -> str:
    """One pydantic error in plain words: what the value must be, never pydantic's message."""
    kind, ctx = err.get("type", ""), err.get("ctx") or {}
    if kind in PLAIN:
        return PLAIN[kind]
    if kind in BOUNDS:
        words, key = BOUNDS[kind]
        value = ctx.get(key)
        number = f"{value:,}" if isinstance(value, int) else f"{value:g}" if isinstance(value, float) else str(value)
        if kind == "string_too_short" and value == 1:
            return "empty"
        return words.format(number) if "{}" in words else f"{words} {number}"
    if kind == "value_error" and ctx.get("error") is not None:  # our own validators' words (schemas.py)
        return str(ctx["error"]).splitlines()[0][:300]
    if kind in ("literal_error", "union_tag_invalid"):
        expected = str(ctx.get("expected", "")).replace("'", "")
        return f"one of {expected}" if expected else "not a value this field takes"
    return "not a value this field takes"


@cache
def catalog() -> list[dict[str, Any]]:
    from ..frontends import catalog
    from ..frontends.config import from_config

    rows = []
    for e in catalog.entries():
        m = from_config(e.config, f"catalog:{e.id}", name=e.id)
        rows.append(
            {
                "id": e.id,
                "aliases": list(e.aliases),
                "model_type": m.model_type,
                "class_name": m.class_name,
                "total": m.total,
                "backbone_class": m.backbone_class,
                "backbone_total": m.backbone_total,
                "note": e.note,
            }
        )
    return rows


def describe(q: schemas.ModelRequest, uploads: Any, loaded: tuple | None = None) -> dict[str, Any]:
    """Everything the page shows of a model but its memory plan; ``loaded``: the model and its
    classes, already built (by transformers, in the server's thread)."""
    with counting():
        model, classes = loaded or load(q, uploads)
        data = {**views.summary(model), "classes": classes, "tree": views.root(model)}
        data["derivation"], data["derivation_error"] = _derivation(model, q)
        data["storage"] = _storage(model, q, uploads)
    return data


def memory_plan(q: schemas.MemoryRequest, uploads: Any, loaded: tuple | None = None) -> dict[str, Any]:
    with counting():
        model, _ = loaded or load(q, uploads)
        return planner.plan(model, q, sources.gguf_header(q.source, uploads))


def recommend_plan(q: schemas.RecommendRequest, uploads: Any, loaded: tuple | None = None) -> dict[str, Any]:
    with counting():
        model, _ = loaded or load(q, uploads)
        return planner.recommendations(model, q)


def speed_plan(q: schemas.SpeedRequest, uploads: Any, loaded: tuple | None = None) -> dict[str, Any]:
    with counting():
        model, _ = loaded or load(q, uploads)
        return planner.speed(model, q)


def load(q: Any, uploads: Any) -> tuple:
    return sources.load(q.source, q.model_class, q.num_labels, q.overrides, uploads)


def parse_upload(*args: Any) -> sources.Upload:
    with counting():
        return sources.parse_upload(*args)


def check_upload(*args: Any) -> sources.Upload:
    with counting():
        return sources.heavy_safetensors(*args)


def answer(request: Request, job: Any, q: Any) -> Answer:
    """``job(q, uploads)`` in a worker process with a time limit (web/work.py), whatever the
    source: no count or plan runs in the server's threads, where it could hold them. A config
    only transformers can count is built here (by the fallback's own worker, with its limits)
    and sent to a worker to be counted and planned."""
    workers, uploads = request.app.state.workers, request.app.state.uploads
    if q.source.kind == "store" and request.app.state.exposed:  # the server's own files and network, not a visitor's
        raise ParamcountError("Ollama's store and the Hub are read only on a page served to this machine", field="name")
    held = work.Ref(q.source.id, uploads.get(q.source.id)) if q.source.kind == "upload" else None
    try:
        return Answer(workers.run(job, q, held))
    except work.InThread:  # transformers builds it here (in its own worker), a worker counts and plans it
        with counting():
            loaded = load(q, uploads)
    try:
        return Answer(workers.run(job, q, held, loaded))
    except work.InThread:
        return Answer(job(q, uploads, loaded))


async def watched(request: Request, job: Any, *args: Any) -> Any:
    """``job(*args)`` in a worker thread, while the client is watched: when it disconnects
    first, STOP is set, and the worker process serving the job (a heavy input's, or the
    transformers fallback's) is killed instead of working on for no one."""
    import anyio

    limiter = anyio.to_thread.current_default_thread_limiter()
    if limiter.total_tokens < work.THREADS:  # requests wait in threads: more of them than anyio's 40
        limiter.total_tokens = work.THREADS
    stop = threading.Event()

    def run() -> Any:
        token = fallback_worker.STOP.set(stop)
        try:
            return job(*args)
        finally:
            fallback_worker.STOP.reset(token)

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        stop.set()

    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        try:
            done = (True, await anyio.to_thread.run_sync(run))
        except Exception as e:  # raised below, outside the group (which would wrap it in a group)
            done = (False, e)
        group.cancel_scope.cancel()
    if done[0]:
        return done[1]
    raise done[1]


def _derivation(model, q: schemas.ModelRequest) -> tuple[dict[str, Any] | None, str | None]:
    from ..family import backbone_of, resolve

    try:
        resolved = resolve(model)
        return views.derivation(backbone_of(resolved) if q.derive == "backbone" else resolved, q.lang), None
    except ParamcountError as e:
        return None, str(e)


def _storage(model, q: schemas.ModelRequest, uploads: sources.Uploads | None) -> dict[str, Any] | None:
    if q.source.kind == "upload" and uploads is not None:
        up = uploads.get(q.source.id)
        if up.format == "gguf":
            return views.gguf_storage(up.parsed)
    return views.checkpoint(model)


def _routes(api: FastAPI) -> None:
    @api.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})

    @api.get("/api/catalog", response_model=list[schemas.CatalogEntry])
    def list_catalog() -> list[dict[str, Any]]:
        """The bundled catalog: each entry's class and backbone with their totals."""
        return catalog()

    @api.post("/api/model", response_model=schemas.ModelResponse, responses=ERRORS)
    async def count_model(q: schemas.ModelRequest, request: Request) -> dict[str, Any]:
        """Count a model: totals, components, layers, ties, the tree and the derivation."""
        return await watched(request, answer, request, describe, q)  # already plain JSON: schemas.py documents it

    @api.post("/api/upload", response_model=schemas.UploadResponse, responses=ERRORS)
    async def upload(u: schemas.UploadRequest, request: Request) -> dict[str, Any]:
        """Header bytes of a safetensors or GGUF file (never the weights), parsed and held for /api/model."""
        return await watched(request, hold_upload, u, request)

    @api.get("/api/info", response_model=schemas.Info)
    def info(request: Request) -> dict[str, Any]:
        return {"version": __version__, "exposed": request.app.state.exposed}

    @api.get("/api/memory/options", response_model=schemas.MemoryOptions)
    def memory_options() -> dict[str, Any]:
        """What the memory planner offers: precisions, cache dtypes, optimizers and GPUs."""
        return planner.options()

    @api.post("/api/memory", response_model=schemas.MemoryResponse, responses=ERRORS)
    async def memory(q: schemas.MemoryRequest, request: Request) -> dict[str, Any]:
        """A memory plan: its terms, memory against context, and the fit on the GPU at each precision."""
        return await watched(request, answer, request, memory_plan, q)

    @api.post("/api/recommend", response_model=schemas.RecommendResponse, responses=ERRORS)
    async def recommend(q: schemas.RecommendRequest, request: Request) -> dict[str, Any]:
        """One recommendation per runtime: the scheme, context and command to paste, as
        `paramcount fit MODEL --gpu GPU --json` gives them under ``recommendations``."""
        return await watched(request, answer, request, recommend_plan, q)

    @api.post("/api/speed", response_model=schemas.SpeedResponse, responses=ERRORS)
    async def speed(q: schemas.SpeedRequest, request: Request) -> dict[str, Any]:
        """Decode, prefill and time to first token, as `paramcount speed --json` gives them, and
        decode against the KV depth: each figure an estimate with its expected error, or a bound."""
        return await watched(request, answer, request, speed_plan, q)


def hold_upload(u: schemas.UploadRequest, request: Request) -> dict[str, Any]:
    """Parse an upload (past HEAVY_BYTES in a worker) and keep it for /api/model."""
    try:
        header = base64.b64decode(u.header, validate=True)
    except (binascii.Error, ValueError):
        raise ParamcountError("header is not base64", field="header") from None
    args = (u.format, u.name, u.size, header, u.config)
    if len(header) > work.HEAVY_BYTES and u.format == "safetensors":  # checked in a worker, held as bytes
        parsed = request.app.state.workers.run(check_upload, *args, what="header")
    elif len(header) > work.HEAVY_BYTES:  # seconds of parsing: in a worker, beside the server
        parsed = request.app.state.workers.run(parse_upload, *args, what="header")
    else:
        parsed = parse_upload(*args)
    key = sources.Uploads.key(u.format, parsed.name, u.size, header, u.config)
    request.app.state.uploads.put(key, parsed, len(header))
    return {"id": key, "name": parsed.name, "format": u.format}
