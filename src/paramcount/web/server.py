"""``paramcount serve``: the page and its API on a local port, through uvicorn.

It binds to 127.0.0.1 unless told otherwise; binding anywhere else is said out loud, since
then anyone who can reach the machine can use the page.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Any

from ..errors import ParamcountError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


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


def server(sock: socket.socket, host: str, log_level: str = "warning") -> Any:
    """A uvicorn server for the app, answering to loopback names only when bound to loopback."""
    import uvicorn

    from .app import LOOPBACK, create_app

    app = create_app(LOOPBACK if is_loopback(host) else None)
    config = uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=2, server_header=False)
    return uvicorn.Server(config)


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, open_browser: bool = False) -> None:
    """Serve the page until interrupted."""
    need_extra()
    if not is_loopback(host):
        print(
            f"paramcount: warning: serving on {host}, not loopback: anyone who can reach this machine "
            "can use the page (use --host 127.0.0.1 to keep it local)",
            file=sys.stderr,
        )
    sock = bind(host, port)
    address = url(sock)
    print(f"paramcount: serving on {address}  (Ctrl+C stops)", file=sys.stderr)
    if open_browser:
        import webbrowser

        webbrowser.open(address)
    server(sock, host).run(sockets=[sock])
