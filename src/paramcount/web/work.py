"""Heavy requests off the server: a large ``print(model)`` text, or a large uploaded header, is
read in a child process with a time limit, so one slow request never stalls the others.

Why a process and not a thread: parsing is pure Python, so a thread holds the GIL that every
other request needs, and a thread cannot be stopped at a deadline. A child process runs beside
the server on another core and is killed when its time is up. Children come from a forkserver
(a clean process, never the threaded server itself), preloaded with the parser, and at most
``slots`` run at once: more heavy requests wait for a slot within their own time limit.

A normal printout (a few KB: repeated layers are printed once) stays in the request's thread;
only texts past ``HEAVY_CHARS`` go to a child.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import ParamcountError
from ..frontends.fallback_worker import STOP, Stopped

HEAVY_CHARS = 200_000  # a printout longer than this is read in a child (Llama-3.1-8B's is ~3,000)
HEAVY_BYTES = 4 << 20  # an uploaded header past this is parsed in a child (Llama 3's GGUF header: ~8 MB)
TIME_LIMIT = 20.0  # seconds a heavy request may take, waiting for a slot included
SLOTS = 2  # heavy requests running at once (the machine this was measured on has 2 cores)
PRELOAD = ["paramcount.frontends.printout", "paramcount.web.app"]


class Bug(Exception):
    """The library failed on an input in a way it should have named: said as such, never a 500."""


class TooSlow(ParamcountError):
    """A heavy request past its time limit: answered 503, its child killed."""


class Workers:
    """Runs ``fn(*args)`` in a child process within ``limit`` seconds, at most ``slots`` at once."""

    def __init__(self, limit: float = TIME_LIMIT, slots: int = SLOTS):
        self.limit = limit
        self.slots = threading.BoundedSemaphore(slots)
        self._context: Any = None
        self._lock = threading.Lock()
        self.pids: set[int] = set()  # the children running now
        self.runs = 0  # children started

    def context(self) -> Any:
        with self._lock:
            if self._context is None:
                self._context = multiprocessing.get_context("forkserver")
                self._context.set_forkserver_preload(PRELOAD)
            return self._context

    def run(self, fn: Callable[..., Any], *args: Any, what: str = "source") -> Any:
        deadline = time.monotonic() + self.limit
        if not self.slots.acquire(timeout=self.limit):
            raise self._too_slow(what, "waiting for a worker")
        try:
            return self._child(fn, args, deadline, what)
        finally:
            self.slots.release()

    def _child(self, fn: Callable[..., Any], args: tuple, deadline: float, what: str) -> Any:
        ctx = self.context()
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_serve, args=(send, fn, args), daemon=True)
        child.start()
        self.pids.add(child.pid)
        self.runs += 1
        send.close()
        try:
            self._wait(receive, deadline, what)
            ok, value = receive.recv()
        except EOFError:  # the child died without answering (killed for memory, say)
            raise ParamcountError("the worker reading this input stopped without an answer", field=what) from None
        finally:
            receive.close()
            if child.is_alive():
                child.kill()
            child.join(1)
            self.pids.discard(child.pid)
        if ok:
            return value
        raise value

    def _wait(self, receive: Any, deadline: float, what: str) -> None:
        """Until the child answers: in slices, so that a client gone (STOP) or the deadline is
        seen; either ends the wait, and the caller kills the child."""
        stop = STOP.get()
        while not receive.poll(min(0.1, max(0.0, deadline - time.monotonic()))):
            if stop is not None and stop.is_set():
                raise Stopped("the request was cancelled; its worker was stopped", field=what)
            if time.monotonic() >= deadline:
                raise self._too_slow(what, "reading it")

    def _too_slow(self, what: str, doing: str) -> TooSlow:
        return TooSlow(f"took longer than {self.limit:g} s {doing}; the server stopped it", field=what)


def _serve(send: Any, fn: Callable[..., Any], args: tuple) -> None:
    """In the child: one call, its answer or its error (a ParamcountError, or a Bug) sent back."""
    try:
        send.send((True, fn(*args)))
    except ParamcountError as e:
        send.send((False, e))
    except Exception as e:  # a library bug on this input: said as such by the app
        send.send((False, Bug(f"paramcount could not read this input ({type(e).__name__}: {str(e)[:300]})")))
    finally:
        send.close()


def heavy(source: Any) -> bool:
    """Whether a request's source goes to a child: a printout text past HEAVY_CHARS."""
    return source.kind == "printout" and len(source.text) > HEAVY_CHARS
