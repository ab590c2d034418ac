"""`paramcount serve` as a user runs it: a real process on a port, loopback unless told otherwise."""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from paramcount import __version__
from paramcount.cli import main

HANG = 120  # seconds before a request counts as hung: far past a loaded machine (httpx's default is 5)


def get(url: str, **kwargs) -> httpx.Response:
    return httpx.get(url, timeout=HANG, **kwargs)


def _ctrl_c_as_in_a_terminal() -> None:
    """SIGINT at its default in the child, as a shell's foreground job has it: a suite started in
    the background by a script inherits it ignored, and Python then leaves it ignored, so the
    server, stopped by uvicorn's own handler, re-raised an ignored signal and exited 0."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(*args: str) -> tuple[subprocess.Popen, str, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "paramcount", "serve", *args],
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    lines = []
    for line in proc.stderr:
        lines.append(line)
        found = re.search(r"serving on (http://\S+)", line)
        if found:
            return proc, found.group(1), lines
    proc.wait(10)
    pytest.fail("".join(lines))


def stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(HANG)
    finally:
        proc.stderr.close()


def test_serve_binds_loopback_and_answers_page_and_api():
    proc, url, lines = start("--port", "0")
    try:
        assert url.startswith("http://127.0.0.1:")
        assert not any("warning" in line for line in lines)
        assert get(url + "api/info").json() == {"version": __version__, "exposed": False}
        page = get(url)
        assert page.status_code == 200 and "<title>paramcount</title>" in page.text
        assert get(url + "api/catalog", headers={"host": "evil.example"}).status_code == 400
    finally:
        assert stop(proc) == 130  # stopped by Ctrl+C, as a shell reports it


def test_serving_beyond_loopback_says_so():
    proc, url, lines = start("--host", "0.0.0.0", "--port", "0")
    try:
        assert any("warning: serving on 0.0.0.0, not loopback" in line for line in lines)
        port = url.rsplit(":", 1)[1].strip("/")
        assert get(f"http://127.0.0.1:{port}/api/info").json()["exposed"] is True  # the page's notice
        page = get(f"http://127.0.0.1:{port}/").text
        assert 'id="exposed"' in page and "This page is reachable from other machines" in page
    finally:
        stop(proc)


@pytest.mark.parametrize("host", ["", "   ", "\t"])
def test_an_empty_host_is_refused_not_every_interface(capsys, host):
    """An unset variable in a script (--host "$HOST") must not open the page to the network."""
    assert main(["serve", "--host", host, "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("paramcount: error: --host: an empty address would listen on every")


def test_a_busy_port_is_one_line_and_exit_2(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"paramcount: error: --port: cannot listen on 127.0.0.1:{port}: ")


def test_without_the_web_extra_it_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if not installed
    assert main(["serve", "--port", "0"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == "paramcount: error: serve: the web page needs uvicorn: pip install 'paramcount[web]'"
    )


SERVE_SPINNING = """
import sys
from paramcount.web.server import serve
from tests.web.test_work import Spinning
serve("127.0.0.1", 0, workers=Spinning(limit=600))
"""


def test_sigterm_stops_the_server_with_a_request_busy(tmp_path):
    """``paramcount serve``'s serve() in a process of its own, whose plans with ``-ot spin=CPU``
    spin in one C call that holds their worker's GIL (a regex that backtracks for ever, as a
    hostile -ot did): while one spins the server answers, and SIGTERM ends it within 5 s (a
    bound on the wait, generous: past it the process is killed and the test fails)."""
    import os
    import threading
    import time

    from .test_work import SPIN, hostile_plan

    mark = tmp_path / "spinning"
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE_SPINNING],
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
        env={**os.environ, SPIN: str(mark)},
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    try:
        url = re.search(r"serving on (http://\S+)", proc.stderr.readline())[1]
        threading.Thread(target=lambda: _quietly(url + "api/memory", hostile_plan()), daemon=True).start()
        for _ in range(HANG * 20):
            if mark.exists():
                break
            time.sleep(0.05)
        assert mark.exists(), "the hostile plan never reached its worker"
        assert get(url + "api/info").status_code == 200  # the server answers beside it
        proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {time.monotonic() - start:.1f} s after SIGTERM")
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()


def _quietly(url: str, body: dict) -> None:
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(url, json=body, timeout=HANG)
