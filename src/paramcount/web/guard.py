"""ASGI middleware in front of the API: bounded request bodies, known hosts, safe headers.

The body limit counts the bytes as they arrive: a Content-Length that lies (or none, with a
chunked body) cannot get more than the limit past it. Requests whose Host is not one the
server answers to are refused, so a web page on another site cannot reach this server
through a DNS name rebound to 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]
ASGI = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

MAX_BODY = 2 << 20  # a config.json is a few KB, a printout well under 1 MB
BODY_TIMEOUT = 30.0  # seconds for a whole body; the largest upload is ~45 MB, instant on loopback
# Where the page loads everything from: this server only. KaTeX sets inline styles, hence
# 'unsafe-inline' for styles (never for scripts).
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


async def _answer(send, status: int, error: str, field: str | None = None) -> None:
    body = json.dumps({"error": error, "field": field, "source": None, "bug": False}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *HEADERS]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def host_name(host: str) -> str:
    """``127.0.0.1:8000`` → ``127.0.0.1``; ``[::1]:8000`` → ``[::1]``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def port_ok(tail: str) -> bool:
    """What follows the name in a Host header: nothing, or ``:`` and a port of 1..65535 (RFC 3986
    allows an empty one)."""
    if tail in ("", ":"):
        return True
    digits = tail[1:]
    return tail[0] == ":" and digits.isascii() and digits.isdigit() and len(digits) <= 5 and 1 <= int(digits) <= 65535


class Guard:
    """Limits request bodies (``limits`` maps a path to its own limit) in size and in time,
    checks Host, adds headers."""

    def __init__(
        self,
        app: ASGI,
        hosts: Sequence[str] | None,
        limit: int = MAX_BODY,
        limits: Mapping[str, int] = (),
        timeout: float = BODY_TIMEOUT,
    ):
        self.app, self.limit, self.limits, self.timeout = app, limit, dict(limits), timeout
        self.hosts = None if hosts is None else {h.lower() for h in hosts}

    async def __call__(self, scope: Scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        raw = (_header(scope, b"host") or "").strip().lower()
        host = host_name(raw)
        if self.hosts is not None and host not in self.hosts:
            return await _answer(send, 400, f"this server does not answer to host {host[:100]!r}", "host")
        if not port_ok(raw[len(host) :]):
            return await _answer(send, 400, f"no port {raw[len(host) + 1 :][:20]!r}: a port is 1 to 65535", "host")
        limit = self.limits.get(scope.get("path", ""), self.limit)
        said = _header(scope, b"content-length")
        if said is not None and not (said.strip().isascii() and said.strip().isdigit() and len(said.strip()) < 20):
            return await _answer(send, 400, "Content-Length is not a number", "content-length")
        if said is not None and int(said) > limit:
            return await _answer(send, 413, f"request body of {int(said):,} bytes; at most {limit:,} accepted")
        body = await _read(receive, limit, self.timeout)
        if body is _SLOW:
            return await _answer(send, 408, f"request body not received within {self.timeout:g} s")
        if body is None:
            return await _answer(send, 413, f"request body over {limit:,} bytes; at most {limit:,} accepted")
        if body is _GONE:
            return None
        return await self.app(scope, _replay(body, receive), _with_headers(send))


_GONE = object()  # the client went away before its body arrived
_SLOW = object()  # the body did not arrive in time


async def _read(receive, limit: int, timeout: float) -> Any:
    """The whole body, or None past ``limit``, _GONE when the client disconnected, or _SLOW
    when it took longer than ``timeout`` seconds in all (a slow client holds nothing longer)."""
    chunks, size = [], 0
    deadline = time.monotonic() + timeout
    while True:
        try:
            message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            return _SLOW
        if message["type"] == "http.disconnect":
            return _GONE
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive):
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def _with_headers(send):
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            names = {k.lower() for k, _ in message.get("headers", ())}
            message = {**message, "headers": [*message.get("headers", ()), *(h for h in HEADERS if h[0] not in names)]}
        await send(message)

    return wrapped
