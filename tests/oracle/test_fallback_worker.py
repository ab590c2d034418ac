"""The fallback's worker process (frontends/fallback_worker.py, fallback_build.py): transformers
builds in a child with a module budget, a memory limit and a time limit, never reaches the
network, and is killed when its caller stops waiting. Every limit is checked by the work it
bounds (modules built, bytes mapped), or by a limit no child can meet (a hundredth of a second
to start Python), never by timing a build."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

import paramcount
from paramcount import ParamcountError
from paramcount.frontends import fallback_build
from paramcount.frontends import fallback_worker as fw

from .oracle import differences, ours, torch, truth

CODEGEN = {"model_type": "codegen", "n_embd": 64, "n_layer": 3, "n_head": 4, "vocab_size": 300, "rotary_dim": 8}


@pytest.fixture
def worker(monkeypatch):
    """A worker of the test's own, closed after it."""
    mine = fw.Worker()
    monkeypatch.setattr(fw, "WORKER", mine)
    yield mine
    mine.close()


@pytest.fixture(scope="module")
def warm():
    """One worker for the tests that leave their child serving: each fresh child imports torch
    and transformers (seconds)."""
    mine = fw.Worker()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fw, "WORKER", mine)
        yield mine
    mine.close()


@pytest.fixture
def shared(warm, monkeypatch):
    monkeypatch.setattr(fw, "WORKER", warm)
    return warm


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_count_comes_from_the_worker(shared):
    model = paramcount.load(CODEGEN)
    assert shared.pid is not None and shared.pid != os.getpid()
    assert model.counted_by == "transformers"
    assert not differences(ours(model), truth(CODEGEN, model.class_name, "codegen"))


def test_a_real_answer_is_kept_and_used_without_the_worker(shared, monkeypatch, tmp_path):
    """The cache (fallback_cache.py) takes transformers' own answer: written once, then read back
    through every check with no worker to ask."""
    monkeypatch.delenv("PARAMCOUNT_NO_CACHE")
    monkeypatch.setenv("PARAMCOUNT_CACHE_DIR", str(tmp_path))
    first = paramcount.load(CODEGEN)
    assert len(list((tmp_path / "fallback").glob("*.json"))) == 1

    def no_worker(request):
        raise AssertionError("the worker was asked")

    monkeypatch.setattr(fw, "ask", no_worker)
    again = paramcount.load(CODEGEN)
    assert again.total == first.total and again.tree == first.tree and again.backbone == first.backbone


def test_the_worker_is_offline(shared):
    paramcount.load(CODEGEN)
    with open(f"/proc/{shared.pid}/environ", "rb") as f:
        env = dict(x.split(b"=", 1) for x in f.read().split(b"\0") if b"=" in x)
    assert env[b"HF_HUB_OFFLINE"] == b"1" and env[b"TRANSFORMERS_OFFLINE"] == b"1"


def test_the_module_budget_stops_a_build(shared, monkeypatch):
    monkeypatch.setattr(fw, "MAX_MODULES", 20)
    with pytest.raises(ParamcountError, match="built more than 20 modules for CodeGenModel and was stopped"):
        paramcount.load(CODEGEN)
    monkeypatch.setattr(fw, "MAX_MODULES", 1 << 17)
    assert paramcount.load(CODEGEN).total  # the same child goes on serving


def test_the_memory_limit_ends_in_one_line(worker, monkeypatch):
    monkeypatch.setattr(fw, "MEMORY_LIMIT", 64 << 20)  # less than importing torch maps
    with pytest.raises(ParamcountError, match=r"0\.0625 GiB") as e:
        paramcount.load(CODEGEN)
    assert "\n" not in str(e.value)


def test_the_time_limit_kills_the_child(monkeypatch):
    slow = fw.Worker(limit=0.01)  # no child can start Python, let alone torch, in 10 ms
    monkeypatch.setattr(fw, "WORKER", slow)
    with pytest.raises(fw.TooSlow, match=r"took longer than 0\.01 s; the worker was stopped"):
        paramcount.load(CODEGEN)
    assert slow.child is None


def test_a_stop_kills_the_child(worker):
    stop = threading.Event()
    seen: list[int] = []

    def cancel() -> None:  # as the web server does when its client goes away
        end = time.monotonic() + 60  # a bound on the wait, not an assertion on time
        while worker.pid is None and time.monotonic() < end:
            time.sleep(0.01)
        seen.append(worker.pid)
        stop.set()

    threading.Thread(target=cancel, daemon=True).start()
    token = fw.STOP.set(stop)
    try:
        with pytest.raises(fw.Stopped, match="cancelled"):
            paramcount.load({**CODEGEN, "n_layer": 4})
    finally:
        fw.STOP.reset(token)
    assert seen and gone(seen[0]) and worker.child is None


@pytest.fixture
def no_sockets(monkeypatch):
    """Every connect or name lookup in this process is recorded, and fails."""
    tried: list[tuple] = []

    def record(*args, **kwargs):
        tried.append(args)
        raise OSError("a test forbids the network")

    for name in ("getaddrinfo", "create_connection"):
        monkeypatch.setattr(socket, name, record)
    monkeypatch.setattr(socket.socket, "connect", record)
    monkeypatch.setattr(socket.socket, "connect_ex", record)
    return tried


BACKBONE_NAMED = [
    ("detr", "DetrModel", {"backbone": "microsoft/resnet-50", "use_timm_backbone": False}, "names the backbone"),
    ("dpt", "DPTModel", {"backbone": "microsoft/resnet-50", "is_hybrid": False}, "names the backbone"),
    ("upernet", "UperNetForSemanticSegmentation", {"backbone": "microsoft/resnet-50"}, "names the backbone"),
    ("detr", "DetrModel", {}, "uses a timm backbone"),  # DETR's default: timm's resnet50
]


@pytest.mark.parametrize("model_type,cls,config,message", BACKBONE_NAMED)
def test_a_build_never_opens_a_socket(no_sockets, model_type, cls, config, message):
    """In the worker's own code (run here, with sockets recorded), whatever the parent let by."""
    request = {"model_type": model_type, "config": config, "class": cls, "base": cls, "max_modules": 1 << 17}
    with pytest.raises(ParamcountError, match=message):
        fallback_build.build(request)
    assert no_sockets == []


def test_a_local_backbone_with_use_pretrained_backbone_builds_offline(no_sockets):
    stages = ["stage1", "stage2", "stage3", "stage4"]
    config = {"backbone_config": {"model_type": "resnet", "out_features": stages}, "use_pretrained_backbone": True}
    cls = "UperNetForSemanticSegmentation"
    request = {"model_type": "upernet", "config": config, "class": cls, "base": cls, "max_modules": 1 << 17}
    init = torch.nn.Module.__init__
    answer = fallback_build.build(request)
    assert answer["params"] and no_sockets == []
    assert torch.nn.Module.__init__ is init  # the module budget is off again: later builds here are not counted


def test_a_build_stopped_by_its_budget_takes_the_counter_off(no_sockets):
    """Run in a process that goes on building models (this suite's oracle tests), a stopped
    build must not leave its module budget on nn.Module for the modules built after it."""
    init = torch.nn.Module.__init__
    request = {"model_type": "codegen", "config": {"n_layer": 2}, "class": "CodeGenModel", "base": "CodeGenModel"}
    with pytest.raises(ParamcountError, match="built more than 3 modules for CodeGenModel"):
        fallback_build.build({**request, "max_modules": 3})
    assert torch.nn.Module.__init__ is init
    torch.nn.Linear(2, 2, device="meta")  # not counted: no budget to run into


def test_the_worker_process_refuses_the_network():
    code = (
        "from paramcount.frontends.fallback_worker import no_network\n"
        "no_network()\nimport socket\n"
        "try: socket.getaddrinfo('huggingface.co', 443)\n"
        "except OSError as e: print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "never uses the network" in done.stdout, done.stderr
