"""Requests off the server: every count and plan whose work depends on the input runs in a
worker process with a deadline, so no request can hold the server.

Why a process and not a thread: counting and planning are pure Python (and Python's ``re``), so
a thread holds the GIL that every other request needs, and a thread cannot be stopped at a
deadline. A worker runs beside the server on another core and is killed when its time is up
(or its client goes away, or the server stops); a fresh one takes its place.

Why a pool: a child per request costs a fork and cold caches (the catalog, the planner's
imports). Workers come from a forkserver (a clean process, never the threaded server itself)
preloaded with the planner, and serve request after request; ``keep`` of them wait idle, and
up to ``slots`` run at once: one more request waits for a slot within its own time limit.
A worker keeps the last few uploads it was sent (by id), so asking again about a dropped file
sends only its id. What stays in the server's threads is bounded without a deadline: the
catalog, the planner's options, an upload's header parsed up to HEAVY_BYTES, and the build of
a config only transformers can count (in the fallback's own worker, with its deadline; the
model built is then counted and planned in a worker like any other).

Under a flood (requests that spin until their deadline, more than there are slots): a job past
LOWER_AFTER runs at nice 19, a freed slot goes to the request that came last (LIFO), a job past
CUT_AFTER is stopped when a request waits for its slot, and past WAITING waiters the one
waiting longest is refused: the requests that keep arriving are answered, the flood's are not.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..errors import ParamcountError
from ..frontends.fallback_worker import STOP, Stopped

HEAVY_CHARS = 200_000  # a printout longer than this was read in a child (Llama-3.1-8B's is ~3,000)
HEAVY_BYTES = 4 << 20  # an uploaded header past this is parsed in a child (Llama 3's GGUF header: ~8 MB)
TIME_LIMIT = 20.0  # seconds a request may take in a worker, waiting for a slot included
SLOTS = 8  # requests running in workers at once (more wait for a slot within their limit)
WAITING = 24  # requests waiting for a slot at most: past it the one waiting longest is refused (503)
THREADS = 64  # the server's threads for requests (anyio's default, 40, is less than SLOTS + WAITING + others)
KEEP = 2  # idle workers kept for the next requests (and started ahead by ``paramcount serve``)
JOBS_PER_WORKER = 500  # a fresh worker after this many requests, so that none grows for ever
HELD_PER_WORKER = 4  # uploads a worker keeps parsed, by id
LOWER_AFTER = 1.0  # seconds of work after which a worker yields the CPU to newer requests (nice 19)
CUT_AFTER = 2.0  # seconds of work after which a job may be stopped for a request waiting for its slot
MEMORY_LIMIT = 4 << 30  # each worker's address space: a request past it is refused, not the machine's memory
PRELOAD = ["paramcount.web.app", "paramcount.web.planner", "paramcount.memory.fit", "paramcount.frontends.printout"]


class Bug(Exception):
    """The library failed on an input in a way it should have named: said as such, never a 500."""


class TooSlow(ParamcountError):
    """A request past its time limit: answered 503, its worker killed."""


class InThread(Exception):
    """The job needs the transformers fallback, whose own worker the server's thread drives."""


class _ParentOnly(BaseException):
    """Raised in a worker where the job would start the transformers fallback: past every
    ``except Exception`` on the way back, and answered as InThread."""


class Ref:
    """An upload sent with a job: whole the first time a worker gets it, then by id alone."""

    def __init__(self, key: str, up: Any):
        self.key, self.up = key, up


class _Slots:
    """``n`` slots; a freed slot goes to the request that began waiting last (LIFO): after a
    burst of requests that spin, the requests that come next are served first, and the burst's
    wait out their own deadlines."""

    def __init__(self, n: int):
        self.free, self.lock, self.waiting = n, threading.Lock(), []
        self.dropped: set[threading.Event] = set()

    def ticket(self) -> threading.Event:
        """A ticket already set when a slot was free; else one set when a slot is handed over
        (or when it was dropped: WAITING others came after it)."""
        ticket = threading.Event()
        with self.lock:
            if self.free > 0:
                self.free -= 1
                ticket.set()
                return ticket
            self.waiting.append(ticket)
            if len(self.waiting) > WAITING:
                oldest = self.waiting.pop(0)
                self.dropped.add(oldest)
                oldest.set()
        return ticket

    def was_dropped(self, ticket: threading.Event) -> bool:
        with self.lock:
            if ticket in self.dropped:
                self.dropped.discard(ticket)
                return True
            return False

    def newest(self, ticket: threading.Event) -> bool:
        """Whether ``ticket`` is the next to be served."""
        with self.lock:
            return bool(self.waiting) and self.waiting[-1] is ticket

    def give_up(self, ticket: threading.Event) -> None:
        """A waiter that stops waiting: its ticket withdrawn, or its slot passed on if it came."""
        with self.lock:
            if ticket in self.waiting or ticket in self.dropped:
                self.waiting = [t for t in self.waiting if t is not ticket]
                self.dropped.discard(ticket)
                return
        self.release()

    def release(self) -> None:
        with self.lock:
            if self.waiting:
                self.waiting.pop().set()
            else:
                self.free += 1


class _Worker:
    """One worker process, its end of the pipe, the uploads it holds and the jobs it served."""

    def __init__(self, ctx: Any):
        self.conn, theirs = ctx.Pipe()
        self.process = ctx.Process(target=_loop, args=(theirs, MEMORY_LIMIT), daemon=True)
        self.process.start()
        theirs.close()
        self.held: OrderedDict[str, None] = OrderedDict()
        self.jobs = 0
        self.env = dict(os.environ)  # what it serves under: a library read a variable once, on import
        self.lowered = False  # its priority lowered (which only root could raise again): not reused
        self.cut = False  # killed to free its slot for a waiting request
        self.since = 0.0  # when its current job was sent

    def send(self, fn: Callable[..., Any], args: tuple) -> None:
        """The job, with the server's environment and folder as they are now (the OLLAMA_*
        variables a plan reads; the forkserver's copy dates from its start)."""
        self.jobs += 1
        self.since = time.monotonic()
        self.conn.send((fn, tuple(self._ref(a) for a in args), self.env, os.getcwd()))

    def _ref(self, arg: Any) -> Any:
        """An upload it holds goes as its id; the held ones are kept as the worker keeps them."""
        if not isinstance(arg, Ref):
            return arg
        sent = Ref(arg.key, None if arg.key in self.held else arg.up)
        self.held[arg.key] = None
        self.held.move_to_end(arg.key)
        while len(self.held) > HELD_PER_WORKER:
            self.held.popitem(last=False)
        return sent

    def lower(self) -> None:
        """Nice 19: a request still working after LOWER_AFTER seconds (a hostile one, or a very
        large input) leaves the CPU to the short ones that keep arriving."""
        if not self.lowered:
            self.lowered = True
            with contextlib.suppress(OSError):  # gone already
                os.setpriority(os.PRIO_PROCESS, self.process.pid, 19)

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(1)
        self.conn.close()


class Workers:
    """Runs ``fn(*args)`` in a worker process within ``limit`` seconds, at most ``slots`` at once."""

    def __init__(self, limit: float = TIME_LIMIT, slots: int = SLOTS, keep: int = KEEP):
        self.limit, self.keep = limit, keep
        self.slots = _Slots(slots)
        self._context: Any = None
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self.closing = threading.Event()
        self.runs = 0  # jobs run
        self.started = 0  # worker processes started

    @property
    def pids(self) -> set[int]:
        """The workers running a request now."""
        with self._lock:
            return {w.process.pid for w in self._busy}

    def context(self) -> Any:
        with self._lock:
            if self._context is None:
                self._context = multiprocessing.get_context("forkserver")
                self._context.set_forkserver_preload(PRELOAD)
            return self._context

    def warm(self) -> None:
        """Start ``keep`` workers ahead of the first requests (in the background: a forkserver
        imports the planner once, seconds on a loaded machine)."""
        threading.Thread(target=self._warm, daemon=True).start()

    def _warm(self) -> None:
        for _ in range(self.keep):
            worker = self._start()
            with self._lock:
                if self.closing.is_set() or len(self._idle) >= self.keep:
                    worker.kill()
                    return
                self._idle.append(worker)

    def run(self, fn: Callable[..., Any], *args: Any, what: str = "source") -> Any:
        deadline = time.monotonic() + self.limit
        self._slot(deadline, what)
        try:
            worker = self._take(args)
            try:
                ok, value = self._ask(worker, fn, args, deadline, what)
            except BaseException:
                self._drop(worker)
                raise
            self._give_back(worker)
        finally:
            self.slots.release()
        if ok == "parent":
            raise InThread()
        if ok:
            return value
        raise value

    def _slot(self, deadline: float, what: str) -> None:
        """A slot, waited for in slices (as the answer is: see _wait)."""
        stop, ticket = STOP.get(), self.slots.ticket()
        try:
            while not ticket.wait(min(0.1, max(0.0, deadline - time.monotonic()))):
                self._check(stop, deadline, what, "waiting for a worker")
                if self.slots.newest(ticket):
                    self._cut_longest()
            if self.closing.is_set():
                raise self._stopping(what)
        except BaseException:
            self.slots.give_up(ticket)
            raise
        if self.slots.was_dropped(ticket):
            raise TooSlow(f"the server is busy: {WAITING} newer requests wait for a worker; try again", field=what)

    def _cut_longest(self) -> None:
        """Every slot taken while a request waits: the job running longest, if it has run past
        CUT_AFTER, is stopped (a 503 saying so) and its slot goes to the newest waiting request.
        So requests that spin until their deadline cannot fill the pool and keep others out."""
        now = time.monotonic()
        with self._lock:
            long = [w for w in self._busy if now - w.since > CUT_AFTER and not w.cut]
            worker = min(long, key=lambda w: w.since, default=None)
            if worker is not None:
                worker.cut = True
        if worker is not None and worker.process.is_alive():
            worker.process.kill()

    def _check(self, stop: threading.Event | None, deadline: float, what: str, doing: str) -> None:
        if stop is not None and stop.is_set():
            raise Stopped("the request was cancelled; its worker was stopped", field=what)
        if self.closing.is_set():
            raise self._stopping(what)
        if time.monotonic() >= deadline:
            raise self._too_slow(what, doing)

    def _take(self, args: tuple) -> _Worker:
        """An idle worker (one holding the job's upload first), else a fresh one. A worker
        serves one environment (huggingface_hub reads HF_ENDPOINT once): where the server's
        changed, a fresh worker takes it."""
        keys = {a.key for a in args if isinstance(a, Ref)}
        env = dict(os.environ)
        with self._lock:
            alive = [w for w in self._idle if w.process.is_alive() and w.env == env]
            for w in self._idle:
                if w not in alive:
                    w.kill()
            held = [w for w in alive if keys & w.held.keys()]
            worker = (held or alive or [None])[-1]
            self._idle = [w for w in alive if w is not worker]
            if worker is not None:
                self._busy.add(worker)
                return worker
        worker = self._start()
        with self._lock:
            self._busy.add(worker)
        return worker

    def _start(self) -> _Worker:
        try:
            worker = _Worker(self.context())
        except OSError as e:  # out of processes or descriptors: the request's failure, not a 500
            raise TooSlow(f"the server could not start a worker ({e.strerror or e}); try again") from None
        self.started += 1
        return worker

    def _ask(self, worker: _Worker, fn: Callable[..., Any], args: tuple, deadline: float, what: str) -> Any:
        self.runs += 1
        try:
            worker.send(fn, args)
            self._wait(worker, deadline, what)
            return worker.conn.recv()
        except (EOFError, OSError):  # the worker died without answering (killed for memory, say)
            if self.closing.is_set():
                raise self._stopping(what) from None
            if worker.cut:
                said = f"still working after {CUT_AFTER:g} s while other requests waited for a worker"
                raise TooSlow(f"{said}; the server stopped it (try again when it is less busy)", field=what) from None
            raise ParamcountError("the worker reading this input stopped without an answer", field=what) from None

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            self._busy.discard(worker)
            fresh = worker.jobs < JOBS_PER_WORKER and not worker.lowered
            if len(self._idle) < self.keep and fresh and not self.closing.is_set():
                self._idle.append(worker)
                return
        worker.kill()

    def _drop(self, worker: _Worker) -> None:
        with self._lock:
            self._busy.discard(worker)
        worker.kill()

    def _wait(self, worker: _Worker, deadline: float, what: str) -> None:
        """Until the worker answers: in slices, so that a client gone (STOP), the server
        stopping or the deadline is seen; each ends the wait, and the caller kills the worker.
        Past LOWER_AFTER seconds the worker's priority is lowered."""
        stop, lower = STOP.get(), time.monotonic() + LOWER_AFTER
        while not worker.conn.poll(min(0.1, max(0.0, deadline - time.monotonic()))):
            self._check(stop, deadline, what, "reading it")
            if time.monotonic() >= lower:
                worker.lower()

    def open(self) -> None:
        """Take jobs (again, after a close: a new lifespan of the same app)."""
        self.closing.clear()

    def close(self) -> None:
        """Stop: every worker killed (a request waiting on one is answered 503), none started."""
        self.closing.set()
        with self._lock:
            workers, self._idle = [*self._idle, *self._busy], []
        for w in workers:
            if w.process.is_alive():
                w.process.kill()

    def _too_slow(self, what: str, doing: str) -> TooSlow:
        return TooSlow(f"took longer than {self.limit:g} s {doing}; the server stopped it", field=what)

    def _stopping(self, what: str) -> TooSlow:
        return TooSlow("the server is stopping; this request was not finished", field=what)


class Inline(Workers):
    """Jobs run in the calling thread, without a deadline: for tests that patch the library in
    this process, where a worker would not see it."""

    def __init__(self) -> None:
        super().__init__(keep=0)
        self._held: OrderedDict[str, Any] = OrderedDict()

    def open(self) -> None:  # nothing to start or stop: jobs run in the caller's thread
        pass

    def close(self) -> None:
        pass

    def run(self, fn: Callable[..., Any], *args: Any, what: str = "source") -> Any:
        self.runs += 1
        return fn(*(_resolve(a, self._held) for a in args))


# --- in a worker -----------------------------------------------------------------------------


def _loop(conn: Any, memory: int) -> None:
    """Serve jobs from the pipe until it closes: each job's answer or error sent back."""
    _sandbox(memory)
    held: OrderedDict[str, Any] = OrderedDict()
    while True:
        try:
            fn, args, env, cwd = conn.recv()
        except (EOFError, OSError):
            return
        _as_server(env, cwd)
        answer = _serve(fn, tuple(_resolve(a, held) for a in args))
        try:
            conn.send(answer)
        except Exception as e:  # an answer that does not pickle: a bug, said as such
            conn.send((False, Bug(f"paramcount could not send this answer ({type(e).__name__})")))
        if answer[0] is False and isinstance(answer[1], _OutOfMemory):
            return  # a fresh worker for the next request


def _sandbox(memory: int) -> None:
    """An address-space limit, death with the forkserver (which ends with the server: a worker
    spinning in C would otherwise outlive a server killed with SIGKILL), and the transformers
    fallback left to the server's thread."""
    import resource

    from ..frontends import fallback_worker

    _die_with_parent()
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (memory if hard == resource.RLIM_INFINITY else min(memory, hard), hard))
    fallback_worker.WORKER = _NoFallback()  # type: ignore[assignment]


def _as_server(env: dict[str, str], cwd: str) -> None:
    """The server's environment and folder for the next job (changed only where they differ)."""
    if env != os.environ:
        os.environ.clear()
        os.environ.update(env)
    if cwd != os.getcwd():
        os.chdir(cwd)


def _die_with_parent() -> None:
    """prctl(PR_SET_PDEATHSIG, SIGKILL) on Linux; elsewhere nothing (the server's SIGTERM and
    atexit still kill its workers)."""
    import signal
    import sys

    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1: PR_SET_PDEATHSIG


class _NoFallback:
    """The fallback's worker, as a pool worker sees it: never started here."""

    pid = 0  # "running": no notice that torch is being imported

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        raise _ParentOnly()

    def close(self) -> None:
        return None


def _resolve(arg: Any, held: OrderedDict[str, Any]) -> Any:
    """A Ref as the upload it names (sources.Held), kept for the next job on it."""
    if not isinstance(arg, Ref):
        return arg
    from .sources import Held

    if arg.up is not None:
        held[arg.key] = Held(arg.key, arg.up)
    held.move_to_end(arg.key)
    while len(held) > HELD_PER_WORKER:
        held.popitem(last=False)
    return held[arg.key]


class _OutOfMemory(ParamcountError):
    """A job past the worker's memory limit."""


def _serve(fn: Callable[..., Any], args: tuple) -> tuple[Any, Any]:
    """One call: (True, its answer), (False, its error: a ParamcountError or a Bug), or
    ("parent", None) for a job the server's thread must run (the transformers fallback)."""
    try:
        return True, fn(*args)
    except _ParentOnly:
        return "parent", None
    except ParamcountError as e:
        return False, e
    except MemoryError:
        return False, _OutOfMemory(f"needed more than {MEMORY_LIMIT >> 30} GiB of memory; the server refused it")
    except RecursionError:
        return False, ParamcountError("nested too deeply to read")
    except Exception as e:  # a library bug on this input: said as such by the app
        return False, Bug(f"paramcount could not read this input ({type(e).__name__}: {str(e)[:300]})")


def heavy(source: Any) -> bool:
    """Whether a printout is long enough that even its parse was sent to a child before every
    request went to a worker (kept for callers that size their inputs by it)."""
    return source.kind == "printout" and len(source.text) > HEAVY_CHARS
