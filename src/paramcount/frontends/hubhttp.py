"""A bounded HTTP client for the Hugging Face Hub: what every Hub request of a command (or of a
web request) goes through.

- One :class:`Deadline` for all of it: connecting, headers, body, redirects and retries
  together. The connection (name lookup and TLS included, ``_connect``) and every read of the
  socket (``_Reader``) are given what is left of it, so a server that trickles a byte a second,
  never answers or sends headers without end is cut off when the deadline passes;
  ``PARAMCOUNT_HUB_TIMEOUT`` sets it (DEFAULT_SECONDS). It also holds the command's byte budget
  (MAX_RECEIVED over all answers).
- A byte limit on every response, checked against Content-Length before the body is read and
  counted while it arrives, after gzip has inflated it (a small gzip body that inflates to a
  gigabyte stops at the limit).
- Redirects and next pages followed only to HF_ENDPOINT's own scheme, host and port (the
  public Hub's file downloads go on to its own hosts under hf.co, https only, never with the
  token), at most MAX_REDIRECTS in a row; HF_ENDPOINT itself checked first (:func:`endpoint`).
- Retries of 429 and 5xx answers: at most TRIES, and only while the deadline leaves time.

The standard library's http.client carries it (huggingface_hub's own session gives each read
its own timeout, never one for the whole exchange). Like the reachability probe before it, it
connects directly: no proxy is used.
"""

from __future__ import annotations

import http.client
import io
import math
import os
import re
import time
import zlib
from collections.abc import Iterator
from functools import partial
from typing import Any
from urllib.parse import urljoin, urlsplit

from ..errors import ParamcountError

ENV = "PARAMCOUNT_HUB_TIMEOUT"
DEFAULT_SECONDS = 7.0  # every Hub read of a command: with start-up, a hostile server ends it within 10 s
MAX_SECONDS = 3600.0
MAX_REDIRECTS = 5
TRIES = 3  # attempts of one request answered 429 or 5xx
BACKOFF = 0.25  # seconds before the second attempt, doubled before the third
RETRY = frozenset({429, 500, 502, 503, 504})
REDIRECT = frozenset({301, 302, 303, 307, 308})
CHUNK = 1 << 16  # bytes read (and inflated) at a time
PUBLIC_HUB = "huggingface.co"
PUBLIC_DOWNLOADS = (".hf.co", ".huggingface.co")  # where the public Hub sends its file downloads


MAX_RECEIVED = 256 << 20  # bytes of all a command's answers: 25 headers of Llama 3's 8 MB vocabulary fit


class Deadline:
    """The time every Hub request of one command or web request shares, and the bytes all
    their answers may bring (MAX_RECEIVED, counted as they arrive: what a command holds of
    them, headers of a thousand shards or of 64 models, stays below it)."""

    def __init__(self, seconds: float | None = None):
        self.seconds = configured() if seconds is None else seconds
        self.end = time.monotonic() + self.seconds
        self.received = 0

    def spend(self, n: int, source: str) -> None:
        self.received += n
        if self.received > MAX_RECEIVED:
            why = f"the Hub's answers to this command pass {MAX_RECEIVED:,} bytes in all; not read further"
            raise ParamcountError(why, source=source)

    def left(self) -> float:
        return self.end - time.monotonic()

    def error(self, source: str) -> ParamcountError:
        why = f"the Hub did not finish answering within {self.seconds:g} s (set {ENV} to wait longer)"
        return ParamcountError(why, source=source)


def configured() -> float:
    """PARAMCOUNT_HUB_TIMEOUT in seconds, read now; DEFAULT_SECONDS when unset."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return DEFAULT_SECONDS
    try:
        value = float(raw[:40])
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_SECONDS:  # also NaN
        raise ParamcountError(f"{raw[:40]!r} is not a number of seconds in (0, {MAX_SECONDS:g}]", field=ENV)
    return value


def endpoint(raw: str) -> str:
    """HF_ENDPOINT as a base address (no trailing slash), or one line saying why it is none."""
    why = _bad_endpoint(raw)
    if why:
        raise ParamcountError(f"{raw[:200]!r} {why}", field="HF_ENDPOINT")
    return raw.rstrip("/")


def _bad_endpoint(raw: str) -> str | None:
    if not isinstance(raw, str) or any(c.isspace() or not c.isprintable() for c in raw):
        return "is not an address (it holds spaces or control characters)"
    try:
        url = urlsplit(raw)
        port = url.port
    except ValueError as e:
        return f"is not a URL ({e})"
    if url.scheme not in ("http", "https"):
        return "is not an http:// or https:// address"
    if not url.hostname or url.username is not None or url.password is not None:
        return "names no host (or names a user)"
    if port == 0:
        return "names port 0"
    if url.query or url.fragment:
        return "has a query or fragment; give the Hub's base address"
    return None


def origin(url: str) -> tuple[str, str, int]:
    """Scheme, host and port of an address, the port spelled out."""
    u = urlsplit(url)
    return u.scheme, (u.hostname or "").lower(), u.port or (443 if u.scheme == "https" else 80)


class Client:
    """Requests to one Hub endpoint under one deadline; ``token`` goes only to the endpoint."""

    def __init__(self, base: str, deadline: Deadline, token: str | None = None, agent: str = "paramcount"):
        self.endpoint, self.deadline, self.token = endpoint(base), deadline, token
        self.origin = origin(self.endpoint)
        self.agent = agent
        self.requests = 0  # sent, redirects and retries included

    def allowed(self, url: str) -> bool:
        """Whether ``url`` may be followed: the endpoint's origin, or (for the public Hub only)
        an https download host of its own."""
        try:
            scheme, host, _ = there = origin(url)
            named = urlsplit(url).username is not None
        except ValueError:
            return False
        if named or there == self.origin:
            return not named
        return self.origin[1] == PUBLIC_HUB and scheme == "https" and host.endswith(PUBLIC_DOWNLOADS)

    def open(self, url: str, source: str, headers: dict[str, str] | None = None) -> Response:
        """The answer to a GET of ``url`` after redirects and retries, its body not yet read."""
        for _ in range(MAX_REDIRECTS + 1):
            answer = self._retried(url, source, headers or {})
            location = answer.header("Location") if answer.status in REDIRECT else None
            if location is None:
                return answer
            answer.close()
            url = self._next(url, location, source)
        raise ParamcountError(f"the Hub redirected more than {MAX_REDIRECTS} times in a row", source=source)

    def _next(self, url: str, location: str, source: str) -> str:
        try:
            target = urljoin(url, location)
        except ValueError:
            target = location
        if not self.allowed(target):
            where = f"{self.origin[1]}:{self.origin[2]}"
            why = f"the Hub redirected to {target[:200]!r}, not {where} (HF_ENDPOINT): not followed"
            raise ParamcountError(why, source=source)
        return target

    def _retried(self, url: str, source: str, headers: dict[str, str]) -> Response:
        wait = BACKOFF
        for attempt in range(1, TRIES + 1):
            answer = self._send(url, source, headers)
            if answer.status not in RETRY or attempt == TRIES or self.deadline.left() <= wait:
                return answer
            answer.close()
            time.sleep(wait)
            wait *= 2
        raise AssertionError("unreachable")  # the loop returns on its last attempt

    def _send(self, url: str, source: str, headers: dict[str, str]) -> Response:
        left = self.deadline.left()
        if left <= 0:
            raise self.deadline.error(source)
        u = urlsplit(url)
        sent = {"User-Agent": self.agent, "Accept-Encoding": "gzip", "Connection": "close", **headers}
        if self.token and origin(url) == self.origin:
            sent["Authorization"] = f"Bearer {self.token}"
        self.requests += 1
        conn = _connection(u, left)
        conn.response_class = partial(_Timed, deadline=self.deadline)
        try:
            _connect(conn, self.deadline)
            conn.request("GET", (u.path or "/") + (f"?{u.query}" if u.query else ""), headers=sent)
            return Response(conn, conn.getresponse(), self.deadline, source)
        except BaseException as e:
            conn.close()
            raise _failure(e, self.deadline, source) from None


def _connection(u: Any, seconds: float) -> http.client.HTTPConnection:
    if u.scheme == "https":
        return http.client.HTTPSConnection(u.hostname, u.port, timeout=seconds, context=_tls())
    return http.client.HTTPConnection(u.hostname, u.port, timeout=seconds)


def _connect(conn: http.client.HTTPConnection, deadline: Deadline) -> None:
    """``conn.connect()`` (the name lookup, which has no timeout of its own, the connection and
    a TLS handshake) given only what is left of the deadline: it runs in a thread that is left
    behind when the deadline passes, ending by itself at its socket's timeout."""
    import threading

    done: list[BaseException | None] = []

    def attempt() -> None:
        try:
            conn.connect()
            done.append(None)
        except BaseException as e:  # handed to the caller
            done.append(e)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(max(0.0, deadline.left()))
    if not done:
        raise TimeoutError("connecting took past the deadline")
    if done[0] is not None:
        raise done[0]


_TLS: list[Any] = []


def _tls() -> Any:
    """The system's certificates, and certifi's where it is installed (huggingface_hub brings it:
    a python.org build on macOS has none of its own)."""
    if not _TLS:
        import ssl

        context = ssl.create_default_context()
        try:
            import certifi

            context.load_verify_locations(certifi.where())
        except (ImportError, OSError):
            pass
        _TLS.append(context)
    return _TLS[0]


def _failure(e: BaseException, deadline: Deadline, source: str) -> BaseException:
    """One line for what the socket or http.client raised; anything else as it was."""
    if isinstance(e, ParamcountError) or not isinstance(e, Exception):
        return e
    if isinstance(e, TimeoutError) or deadline.left() <= 0:
        return deadline.error(source)
    if isinstance(e, ConnectionRefusedError):
        return ParamcountError("the Hub refused the connection", source=source)
    if isinstance(e, OSError):  # before ValueError: a certificate that fails is both
        why = getattr(e, "reason", None) or e.strerror or type(e).__name__
        return ParamcountError(f"the Hub could not be read ({str(why)[:120]})", source=source)
    if isinstance(e, (http.client.HTTPException, ValueError)):
        first = (str(e).strip().splitlines() or [""])[0][:120]
        return ParamcountError(f"the Hub sent a broken answer ({type(e).__name__}: {first})", source=source)
    return e


class _Reader(io.RawIOBase):
    """The socket as http.client reads it, each read given what is left of the deadline. It
    reads through the socket's own file object, which keeps the socket open after http.client
    has closed the connection (as its own reader does, for an answer that ends with the
    connection)."""

    def __init__(self, sock: Any, deadline: Deadline):
        self.sock, self.file, self.deadline = sock, sock.makefile("rb", buffering=0), deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline.left()
        if left <= 0:
            raise TimeoutError("deadline passed")
        self.sock.settimeout(left)
        return self.file.readinto(buffer)

    def close(self) -> None:
        self.file.close()
        super().close()


class _Timed(http.client.HTTPResponse):
    """http.client's response reading the status line, headers and body through ``_Reader``."""

    def __init__(self, sock: Any, *args: Any, deadline: Deadline, **kwargs: Any):
        super().__init__(sock, *args, **kwargs)
        self.fp = io.BufferedReader(_Reader(sock, deadline), CHUNK)


class Response:
    """A status and headers; the body read only through :meth:`chunks`, within a limit."""

    def __init__(self, conn: Any, raw: Any, deadline: Deadline, source: str):
        self.conn, self.raw, self.deadline, self.source = conn, raw, deadline, source
        self.status: int = raw.status

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    def header(self, name: str) -> str | None:
        return self.raw.getheader(name)

    def read(self, limit: int, what: str) -> bytes:
        """The whole body, at most ``limit`` bytes once decoded."""
        return b"".join(self.chunks(limit, what))

    def chunks(self, limit: int, what: str) -> Iterator[bytes]:
        """The body as it arrives, decoded; refused once past ``limit`` bytes, or Content-Length
        says it will be."""
        encoding = (self.header("Content-Encoding") or "identity").strip().lower()
        if encoding not in ("identity", "gzip", "deflate"):
            raise ParamcountError(
                f"the Hub sent {what} in the {encoding[:40]!r} encoding, which is not read", source=self.source
            )
        if self.raw.length is not None and self.raw.length > limit:
            raise self._over(limit, what, "")
        inflate = zlib.decompressobj(47) if encoding != "identity" else None  # 47: gzip or zlib header
        got = sent = 0
        for raw in self._raw():
            sent += len(raw)
            self.deadline.spend(len(raw), self.source)
            if sent > limit + CHUNK:  # bytes after a gzip stream's end inflate to nothing
                raise self._over(limit, what, "")
            for piece in _inflated(inflate, raw, self.source):
                if self.deadline.left() <= 0:  # a body all here already can still take long to inflate and parse
                    raise self.deadline.error(self.source)
                got += len(piece)
                if got > limit:
                    raise self._over(limit, what, " once inflated" if inflate else "")
                yield piece

    def _raw(self) -> Iterator[bytes]:
        try:
            while chunk := self.raw.read1(CHUNK):
                yield chunk
        except BaseException as e:
            raise _failure(e, self.deadline, self.source) from None

    def _over(self, limit: int, what: str, how: str) -> ParamcountError:
        return ParamcountError(f"{what} runs past {limit:,} bytes{how}; not read further", source=self.source)


def _inflated(inflate: Any, raw: bytes, source: str) -> Iterator[bytes]:
    """``raw`` decoded, CHUNK bytes at a time, so a bomb never inflates further than asked."""
    if inflate is None:
        yield raw
        return
    try:
        piece = inflate.decompress(raw, CHUNK)
        while piece:
            yield piece
            piece = inflate.decompress(inflate.unconsumed_tail, CHUNK) if inflate.unconsumed_tail else b""
    except zlib.error as e:
        raise ParamcountError(f"the Hub sent a broken gzip body ({e})", source=source) from None


_NEXT = re.compile(r'<([^>]*)>\s*;[^,]*\brel="?next"?', re.I)


MAX_LINK = 8192  # characters of a Link header searched (the search is not linear in a hostile one)


def next_page(link: str | None, source: str) -> str | None:
    """The ``rel="next"`` address of a Link header, as the Hub paginates its listings; a header
    too long to search is refused, not taken for the last page."""
    if link and len(link) > MAX_LINK:
        raise ParamcountError(f"the Hub's Link header runs past {MAX_LINK:,} characters", source=source)
    m = _NEXT.search(link) if link else None
    return m[1] if m else None


def refusal(answer: Response, what: str) -> ParamcountError:
    """One line for an answer other than the one asked for, as the Hub's X-Error-Code names it
    (huggingface_hub's utils/_http.py hf_raise_for_status reads the same header)."""
    code, status = (answer.header("X-Error-Code") or "")[:40], answer.status
    if code == "RepoNotFound" or (status == 401 and not code):
        why = "no such model on the Hub (or it is private; log in with HF_TOKEN)"
    elif code == "GatedRepo":
        why = "is gated: accept its licence on the Hub and log in (HF_TOKEN)"
    elif code == "RevisionNotFound":
        why = "no such revision on the Hub"
    elif status == 404:
        why = f"no {what} on the Hub (HTTP 404)"
    elif status in (401, 403):
        why = f"HTTP {status}: gated or private; log in (HF_TOKEN)"
    else:
        why = f"the Hub answered HTTP {status} to the request for {what}"
    return ParamcountError(why, source=answer.source)


MAX_ITEM = 64 << 10  # bytes of one entry of a listing: a file's is a few hundred


def json_items(chunks: Iterator[bytes], source: str) -> Iterator[Any]:
    """The objects of a JSON array, each parsed as soon as its bytes have arrived: a listing is
    never held whole, so a caller's cap on entries bounds the memory it costs."""
    import codecs
    import json

    decoder, text = json.JSONDecoder(), codecs.getincrementaldecoder("utf-8")("replace")
    buf, state = "", "start"
    for chunk in chunks:
        new = text.decode(chunk)
        buf += new
        if state in ("item", "first") and buf.lstrip().startswith("{") and "}" not in new:
            _check_item(len(buf), source)
            continue  # an entry still arriving: nothing could end it
        state, buf, items = _parse(decoder, buf, state, source)
        yield from items
        if state == "end":
            return
    if state != "end" or buf.strip():
        raise ParamcountError("the Hub's listing is not a complete JSON array", source=source)


# What may come next: start "[", first an entry or "]", item an entry, after "," or "]".
_EXPECT = {"start": "[", "first": "{]", "item": "{", "after": ",]"}
_AFTER = {"[": "first", "]": "end", ",": "item"}


def _parse(decoder: Any, buf: str, state: str, source: str) -> tuple[str, str, list[Any]]:
    """What ``buf`` holds whole: the state after it, the rest, and the entries parsed."""
    items, at = [], 0
    while state != "end" and (at := _skip(buf, at)) < len(buf):
        c = buf[at]
        if c not in _EXPECT[state]:
            raise ParamcountError(f"the Hub's listing is not a JSON array of objects (at {c!r})", source=source)
        if c != "{":
            state, at = _AFTER[c], at + 1
            continue
        try:
            item, at = decoder.raw_decode(buf, at)
        except ValueError:  # not all there yet, or broken: more bytes tell which
            break
        except RecursionError:
            raise ParamcountError("an entry of the Hub's listing nests too deeply", source=source) from None
        items.append(item)
        state = "after"
    _check_item(len(buf) - at, source)
    return state, buf[at:], items


def _check_item(size: int, source: str) -> None:
    if size > MAX_ITEM:
        raise ParamcountError(f"an entry of the Hub's listing runs past {MAX_ITEM:,} bytes", source=source)


_SPACE = re.compile(r"[ \t\r\n]*")


def _skip(buf: str, at: int) -> int:
    return _SPACE.match(buf, at).end()
