"""Hub ids read through huggingface_hub, against a local cache laid out the way it lays one out.

No test touches the network: offline mode reads the cache; the online path is exercised with
huggingface_hub's own metadata classes standing in for its range requests.
"""

import hashlib
import json
import sys

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.frontends import hub

from .ckpt import TINY_LLAMA, build, save, state, torch, total
from .hub_server import COMMIT, FakeHub, pointed_at

huggingface_hub = pytest.importorskip("huggingface_hub")
REPO = "tiny-org/tiny-llama"
REVISION = "0123456789abcdef0123456789abcdef01234567"


def cache_repo(cache, files: dict[str, bytes], repo=REPO):
    """models--org--name/{blobs,refs/main,snapshots/<rev>/…}, snapshot files linking to blobs."""
    root = cache / f"models--{repo.replace('/', '--')}"
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(REVISION)
    snapshot = root / "snapshots" / REVISION
    snapshot.mkdir(parents=True, exist_ok=True)
    (root / "blobs").mkdir(exist_ok=True)
    for name, data in files.items():
        blob = root / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / name).symlink_to(f"../../blobs/{blob.name}")
    return snapshot


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """config.json and model.safetensors bytes of a tiny llama, and its true total."""
    folder = tmp_path_factory.mktemp("src")
    model = build(TINY_LLAMA, dtype=torch.float16)
    save(folder / "model.safetensors", state(model))
    config = json.dumps(TINY_LLAMA).encode()
    return {"config.json": config, "model.safetensors": (folder / "model.safetensors").read_bytes()}, total(model)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hub"


def test_offline_reads_config_and_headers_from_the_cache(cache, tiny):
    files, expected = tiny
    cache_repo(cache, files)
    m = paramcount.load(REPO)
    assert m.total == expected and m.name == REPO
    assert m.source == "Hub cache: model.safetensors"
    assert m.checkpoint.differences == ()


def test_offline_with_only_config_cached(cache, tiny):
    files, _ = tiny
    cache_repo(cache, {"config.json": files["config.json"]})
    m = paramcount.load(REPO)
    assert m.total == paramcount.load(TINY_LLAMA).total
    assert "HF_HUB_OFFLINE is set" in m.notes[-1] and "config.json alone" in m.notes[-1]


def test_offline_and_not_cached_is_a_clear_error(cache, capsys):
    with pytest.raises(ParamcountError, match="not in the local Hugging Face cache and HF_HUB_OFFLINE is set"):
        hub.load(REPO)
    assert main([REPO]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"paramcount: error: {REPO}: not in the local") and err.count("\n") == 1


def test_partial_shard_set_in_cache_falls_back_to_config(cache, tiny):
    files, _ = tiny
    index = {"metadata": {}, "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors"}}
    cache_repo(cache, {"config.json": files["config.json"], "model.safetensors.index.json": json.dumps(index).encode()})
    m = hub.load(REPO)
    assert m.total == paramcount.load(TINY_LLAMA).total and "config.json alone" in m.notes[-1]


@pytest.fixture
def served(tmp_path, monkeypatch, tiny):
    """The tiny llama on a local server that answers as the Hub does, and an empty cache."""
    files, _ = tiny
    folder = tmp_path / "repo"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    server = FakeHub()
    server.repos[REPO] = {p.name: p for p in folder.iterdir()}
    pointed_at(server, monkeypatch, tmp_path / "hub")
    yield server
    server.close()


def test_online_reads_headers_by_range_requests(served, tmp_path, tiny):
    """config.json is fetched (and then cached as huggingface_hub caches it); the weights'
    header comes by range requests, never the weights."""
    files, expected = tiny
    m = hub.load(REPO)
    assert m.total == expected and m.checkpoint.differences == ()
    assert m.source.startswith("Hub: model.safetensors (1 file, headers by range requests)")
    assert m.checkpoint.file_bytes is None and m.checkpoint.data_bytes == 2 * expected
    gets = [(p.rsplit("/", 1)[-1], r) for m_, p, r in served.requests if m_ == "GET"]
    assert gets == [("config.json", None), ("model.safetensors", "bytes=0-99999")]
    cached = tmp_path / "hub" / "models--tiny-org--tiny-llama" / "snapshots" / COMMIT / "config.json"
    assert cached.read_bytes() == files["config.json"] and cached.is_symlink()
    assert (cached.parent.parent.parent / "refs" / "main").read_text() == COMMIT


def test_a_cached_config_is_read_offline_afterwards(served, monkeypatch, tiny):
    hub.load(REPO)
    served.close()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "config.json alone" in hub.load(REPO).notes[-1]


def test_a_sharded_checkpoint_is_read_shard_by_shard(served, tmp_path, tiny):
    _, expected = tiny
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(tmp_path / "repo" / "model.safetensors"))
    names = sorted(tensors)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    for shard, members in shards.items():
        save_file({n: tensors[n] for n in members}, str(tmp_path / "repo" / shard))
    index = {"metadata": {}, "weight_map": {n: s for s, ms in shards.items() for n in ms}}
    (tmp_path / "repo" / "model.safetensors.index.json").write_text(json.dumps(index))
    (tmp_path / "repo" / "model.safetensors").unlink()
    served.repos[REPO] = {p.name: p for p in (tmp_path / "repo").iterdir()}
    m = hub.load(REPO)
    assert m.total == expected and m.source.startswith("Hub: model.safetensors.index.json (2 files")


def test_hub_errors_are_one_line(served, capsys):
    assert main(["nobody/nothing"]) == 2
    err = capsys.readouterr().err
    assert "nobody/nothing: no such model on the Hub" in err and err.count("\n") == 1


def test_custom_code_is_reported_never_run(cache, tiny):
    files, _ = tiny
    config = {**TINY_LLAMA, "auto_map": {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}}
    cache_repo(cache, {**files, "config.json": json.dumps(config).encode()})
    m = paramcount.load(REPO)
    assert "never run" in m.notes[-1]


def test_without_huggingface_hub_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(ParamcountError, match=r"pip install 'paramcount\[hub\]'"):
        hub.load(REPO)


@pytest.mark.parametrize(
    "name, expected",
    [
        *[("org/name", True), ("Qwen/Qwen2.5-7B", True), ("bert-base-uncased", False), ("a/b/c", False)],
        *[("../x", False), ("org/name\n", False)],  # $ passes a final newline: fullmatch (issue 32 item 7)
    ],
)
def test_repo_id_shape(name, expected):
    assert hub.looks_like_repo_id(name) == expected


def test_cli_counts_a_cached_hub_model(cache, tiny, capsys):
    files, expected = tiny
    cache_repo(cache, files)
    assert main([REPO, "--width", "120"]) == 0
    out = capsys.readouterr().out
    assert f"{expected:,}" in out and "parameters by storage" in out


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_hub_is_one_quick_line(tmp_path, monkeypatch, capsys):
    """No retry storm: one probe (every socket's connect counted), then the cache, then one line.
    (huggingface_hub's own download functions, not used, would try once more for its user
    agent's registry, utils/_detect_agent.py _fetch_registry, even with local_files_only.)"""
    import socket

    from paramcount.cli import main

    attempts = []
    connect = socket.socket.connect
    monkeypatch.setattr(socket.socket, "connect", lambda s, address: attempts.append(address) or connect(s, address))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    code = main([REPO])
    err = capsys.readouterr().err
    assert code == 2 and len(attempts) == 1, attempts
    assert err.count("\n") == 1 and "refused the connection" in err and "Retry" not in err


def test_an_unresolved_name_is_said_so_not_a_timeout(monkeypatch):
    import socket

    def no_dns(*args, **kwargs):
        raise socket.gaierror(-3, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "create_connection", no_dns)
    why = hub.unreachable("https://hub.invalid")
    assert why is not None and "did not resolve" in why and "hub.invalid" in why and "within" not in why


def test_reachable_gives_up_at_its_limit(monkeypatch):
    """A connection (its name lookup has no timeout of its own) that never answers: reachable
    says no at its limit and leaves the attempt behind. The attempt here answers only when the
    test releases it, so a reachable that waited for it would hang, then wrongly say yes."""
    import io
    import socket
    import threading

    released, asked = threading.Event(), []

    def never(address, timeout=None):
        asked.append(timeout)
        released.wait(60)
        return io.BytesIO()  # a "connection": reachable closes it

    monkeypatch.setattr(socket, "create_connection", never)
    try:
        assert hub.reachable("http://hub.invalid", seconds=0.01) is False
        while not asked:  # the attempt's thread may start after reachable has given up
            threading.Event().wait(0.001)
        assert asked == [0.01]
    finally:
        released.set()
