"""The transformers fallback's worker: a child process that builds a model on the meta device
and sends back its parameters as JSON rows, within a time, memory and module budget.

Why a process: transformers builds every module in Python, so a config within its bounds can
still take seconds and a few hundred MB (torch and transformers alone: ~6 s of CPU, ~340 MB).
In a child, that work has a memory limit (``RLIMIT_AS``), a module budget (counted as
``nn.Module.__init__`` runs: deterministic, whatever the machine's speed) and a time limit (the
parent kills it), and it is killed when the caller stops waiting (a web client that went away).
The child is kept for the next request (one import of torch per process), and started again
after it was killed or failed.

The child never reaches the network: ``HF_HUB_OFFLINE`` and ``TRANSFORMERS_OFFLINE`` are set
before transformers is imported, and every socket connect and name lookup raises. Only JSON
crosses the pipe, one line each way: the request (model_type, config, class) and the rows.

Run as ``python -m paramcount.frontends.fallback_worker`` (the parent does this).
"""

from __future__ import annotations

import atexit
import contextvars
import json
import os
import selectors
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import ParamcountError

TIME_LIMIT = 120.0  # seconds for one build, starting the child included (the import: ~6 s of CPU)
MEMORY_LIMIT = 4 << 30  # the child's address space (torch and transformers map ~0.7 GB of it)
MAX_MODULES = 1 << 17  # nn.Modules one build may create: ~15 s of CPU (a 1,024-layer decoder: ~12,000)
MAX_REPLY = 256 << 20  # bytes of one answer (a row per parameter tensor)
REQUESTS_PER_CHILD = 200  # a fresh child after this many builds, so that none grows for ever
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}

# Set by a caller that may stop waiting (the web server, when its client disconnects).
STOP: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("paramcount_stop", default=None)


class Stopped(ParamcountError):
    """The caller stopped waiting (its client went away): the worker was killed."""


class TooSlow(ParamcountError):
    """A build past its time limit: the worker was killed."""


# --- the parent's side ---------------------------------------------------------------------


class Worker:
    """One child at a time, kept between requests; requests wait their turn within their limit."""

    def __init__(self, limit: float = TIME_LIMIT):
        self.limit = limit
        self.lock = threading.Lock()
        self.child: subprocess.Popen | None = None
        self.served = 0

    @property
    def pid(self) -> int | None:
        """The running child's process id (None when there is none)."""
        child = self.child
        return child.pid if child is not None and child.poll() is None else None

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """The child's answer to ``request``; it is killed past the limit or when STOP is set."""
        deadline = time.monotonic() + self.limit
        stop = STOP.get()
        if not self.lock.acquire(timeout=self.limit):
            raise TooSlow(f"waited {self.limit:g} s for the transformers worker", field="transformers")
        try:
            child = self._child()
            try:
                child.stdin.write(json.dumps({**request, "max_modules": MAX_MODULES}).encode() + b"\n")
                child.stdin.flush()
            except OSError:
                raise self._died() from None
            return self._answer(child, deadline, stop)
        finally:
            self.lock.release()

    def _child(self) -> subprocess.Popen:
        if self.child is not None and (self.child.poll() is not None or self.served >= REQUESTS_PER_CHILD):
            self.close()
        if self.child is None:
            env = {**os.environ, **OFFLINE, "PYTHONPATH": _path()}
            self.child = subprocess.Popen(
                [sys.executable, "-m", "paramcount.frontends.fallback_worker", str(MEMORY_LIMIT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
            self.served = 0
        self.served += 1
        return self.child

    def _answer(self, child: subprocess.Popen, deadline: float, stop: threading.Event | None) -> dict[str, Any]:
        line = self._line(child, deadline, stop)
        try:
            answer = json.loads(line)
        except ValueError:
            self.close()
            raise self._died() from None
        if answer.get("restart"):
            self.close()  # out of memory: a fresh child for the next request
        if "error" in answer:
            raise ParamcountError(answer["error"], field=answer.get("field"))
        return answer

    def _line(self, child: subprocess.Popen, deadline: float, stop: threading.Event | None) -> bytes:
        """One line from the child, read in slices so that a stop or the deadline is seen."""
        chunks: list[bytes] = []
        size = 0
        with selectors.DefaultSelector() as sel:
            sel.register(child.stdout, selectors.EVENT_READ)
            while not chunks or not chunks[-1].endswith(b"\n"):
                if stop is not None and stop.is_set():
                    self.close()
                    raise Stopped("the request was cancelled; the transformers worker was stopped")
                left = deadline - time.monotonic()
                if left <= 0:
                    self.close()
                    raise TooSlow(f"transformers took longer than {self.limit:g} s; the worker was stopped")
                if not sel.select(min(left, 0.1)):
                    continue
                chunk = os.read(child.stdout.fileno(), 1 << 20)
                if not chunk:
                    self.close()
                    raise self._died()
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_REPLY:
                    self.close()
                    raise ParamcountError(f"transformers' answer is over {MAX_REPLY:,} bytes")
        return b"".join(chunks)

    def _died(self) -> ParamcountError:
        return ParamcountError(
            f"the transformers worker stopped without an answer (past its memory limit of {_gib(MEMORY_LIMIT)}, "
            "or killed)",
            field="transformers",
        )

    def close(self) -> None:
        """Kill the child (a fresh one starts on the next request)."""
        child, self.child = self.child, None
        if child is not None:
            child.kill()
            child.wait()
            for pipe in (child.stdin, child.stdout):
                pipe.close()


def _path() -> str:
    """PYTHONPATH for the child: this paramcount first, whatever the parent runs from."""
    here = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)


WORKER = Worker()
atexit.register(WORKER.close)  # an idle child would end on its own (stdin closes); this waits for it


def ask(request: dict[str, Any]) -> dict[str, Any]:
    """The shared worker's answer to ``request``."""
    return WORKER.ask(request)


# --- the child's side ----------------------------------------------------------------------


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.3g} GiB"


def main(memory: int) -> None:
    """Serve requests from stdin, one JSON line each, until stdin closes."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever transformers prints goes to stderr, never into the answers
    _sandbox(memory)
    for line in sys.stdin.buffer:
        answer = _serve(line, memory)
        out.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
        out.flush()
        if answer.get("restart"):
            return


def _sandbox(memory: int) -> None:
    """A memory limit and no network, before transformers is imported."""
    import resource

    os.environ.update(OFFLINE)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory if hard == resource.RLIM_INFINITY else min(memory, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    no_network()


def no_network() -> None:
    """Every connect and name lookup in this process raises."""
    import socket

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError("paramcount's transformers fallback never uses the network")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    socket.getaddrinfo = refuse
    socket.create_connection = refuse


def _serve(line: bytes, memory: int) -> dict[str, Any]:
    try:
        from .fallback_build import build

        return build(json.loads(line))
    except ParamcountError as e:
        return {"error": e.message, "field": e.field}
    except MemoryError:
        return {"error": f"transformers needed more than {_gib(memory)} to build it", "restart": True}
    except Exception as e:  # torch failing to load its libraries within the memory limit, say
        text = " ".join(str(e).split())[:200]
        said = f"the transformers worker failed (its memory limit: {_gib(memory)})"
        return {"error": f"{said}: {type(e).__name__}: {text}", "restart": True}


if __name__ == "__main__":
    main(int(sys.argv[1]))
