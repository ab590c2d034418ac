"""``paramcount serve``: the page and its API on a local port, through uvicorn.

It binds to 127.0.0.1 unless told otherwise; binding anywhere else is said out loud, since
then anyone who can reach the machine can use the page.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import threading
from typing import Any

from ..errors import ParamcountError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
HEADER_TIMEOUT = 10.0  # seconds from connecting (or the last answer) to a request's complete headers
BODY_TIMEOUT = 30.0  # seconds for a whole request body: the largest upload is ~45 MB of base64


def need_extra() -> None:
    """fastapi and uvicorn are the ``web`` extra; say how to get them."""
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        raise ParamcountError(f"the web page needs {e.name}: pip install 'paramcount[web]'", field="serve") from None


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free port), or a one-line error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except (OSError, OverflowError) as e:
        sock.close()
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ParamcountError(f"cannot listen on {host}:{port}: {why}", field="--port") from None
    return sock


def url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def protocol(header_timeout: float = HEADER_TIMEOUT) -> type:
    """uvicorn's h11 protocol with a deadline for request headers, and TCP_NODELAY.

    uvicorn waits for headers without limit (slow clients held their connections), and the
    sockets it accepts from a socket handed to it keep Nagle's algorithm: an answer written as
    headers then body waited on the client's delayed ACK, 40 ms a request on a kept-alive
    connection."""
    import asyncio

    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().connection_made(transport)
            self._header_timer: asyncio.TimerHandle | None = None
            self._arm()

        def _arm(self) -> None:
            """Wait ``header_timeout`` for the next request's headers (self.cycle changes)."""
            self._disarm()
            self._waiting_since = self.cycle
            self._header_timer = self.loop.call_later(header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _too_slow(self) -> None:
            self._header_timer = None
            idle = self.cycle is None or self.cycle.response_complete  # not mid-answer (pipelining)
            if self.cycle is self._waiting_since and idle and not self.transport.is_closing():
                self.transport.close()

        def handle_events(self) -> None:
            super().handle_events()
            if self._header_timer is not None and self.cycle is not self._waiting_since:
                self._disarm()  # a request's headers arrived: the body has its own deadline

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return Protocol


def server(
    sock: socket.socket,
    host: str,
    log_level: str = "warning",
    header_timeout: float = HEADER_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    workers: Any = None,
) -> Any:
    """A uvicorn server for the app, answering to loopback names only when bound to loopback;
    ``workers`` (a web.work.Workers) run its counts and plans with a time limit."""
    import uvicorn

    from .app import LOOPBACK, create_app
    from .work import Workers

    workers = workers or Workers()
    app = create_app(LOOPBACK if is_loopback(host) else None, body_timeout=body_timeout, workers=workers)
    config = uvicorn.Config(
        app,
        http=protocol(header_timeout),
        log_level=log_level,
        timeout_graceful_shutdown=GRACE,
        server_header=False,
    )
    return stopping(uvicorn.Server)(config, workers)


GRACE = 2  # seconds uvicorn gives open requests once told to stop
STOP_WITHIN = 4.5  # seconds from SIGTERM or Ctrl+C to the process's end, whatever is running


def stopping(base: type) -> type:
    """uvicorn's Server that, told to stop, stops the work too: every worker is killed (a request
    waiting on one is answered at once), the transformers fallback's child with them, and should
    the process still run STOP_WITHIN seconds later, it exits there (uvicorn alone waited for
    every request's thread, and a request's thread for its worker's deadline)."""

    class Server(base):  # type: ignore[misc, valid-type]
        def __init__(self, config: Any, workers: Any):
            super().__init__(config)
            self.workers = workers

        def handle_exit(self, sig: int, frame: Any) -> None:
            if not self.should_exit:
                _deadline(128 + sig)
                self.workers.close()
                from ..frontends import fallback_worker

                threading.Thread(target=fallback_worker.WORKER.close, daemon=True).start()
            super().handle_exit(sig, frame)

    return Server


def _deadline(code: int) -> None:
    """Exit with ``code`` STOP_WITHIN seconds from now unless the process has ended by then."""
    timer = threading.Timer(STOP_WITHIN, os._exit, (code,))
    timer.daemon = True
    timer.start()


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, open_browser: bool = False, workers: Any = None) -> None:
    """Serve the page until interrupted; ``workers`` (a web.work.Workers) run its counts and plans."""
    if not host.strip():  # bind("") listens on every interface: an unset variable in a script says --host ""
        raise ParamcountError(
            f"an empty address would listen on every interface; leave --host out for {DEFAULT_HOST} (this machine "
            "only), or name the address to serve on (0.0.0.0 for every interface)",
            field="--host",
        )
    need_extra()
    if not is_loopback(host):
        print(
            f"paramcount: warning: serving on {host}, not loopback: anyone who can reach this machine "
            "can use the page, and the page says so (use --host 127.0.0.1 to keep it local)",
            file=sys.stderr,
        )
    sock = bind(host, port)
    address = url(sock)
    print(f"paramcount: serving on {address}  (Ctrl+C stops)", file=sys.stderr)
    if open_browser:
        import webbrowser

        webbrowser.open(address)
    running = server(sock, host, workers=workers)
    running.workers.warm()
    running.run(sockets=[sock])
    if running.should_exit:  # Ctrl+C, which uvicorn's handler took: said as a shell says it (130),
        raise KeyboardInterrupt  # whether or not asyncio gave uvicorn's re-raised signal back
