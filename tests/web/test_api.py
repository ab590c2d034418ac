"""The JSON API answers what the library answers, for every kind of source, and refuses bad input
with a message and a field; it never reads a path a client names."""

from __future__ import annotations

import base64
import json

import pytest

import paramcount
from paramcount.frontends import catalog
from paramcount.frontends.printout import from_text
from paramcount.web.app import create_app

from .conftest import BLOOM_TEXT, ROOT, gguf_header, safetensors_header, upload_body


def post(client, source, **extra):
    return client.post("/api/model", json={"source": source, **extra})


def catalog_source(name):
    return {"kind": "catalog", "name": name}


def check_tree_sums(node):
    """Every block's count is its copies times the sum of its children, as the library counts."""
    if node["type"] != "block":
        assert node["count"] == (0 if node["type"] == "tie" else _prod(node["shape"]))
        return
    copies = node["repeat"] if node["repeat"] is not None else 1
    assert node["count"] == copies * sum(c["count"] for c in node["children"])
    for child in node["children"]:
        check_tree_sums(child)


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


# --- the catalog and the counts -------------------------------------------------------------


def test_catalog_lists_every_entry_with_the_library_totals(client):
    rows = client.get("/api/catalog").json()
    assert [r["id"] for r in rows] == [e.id for e in catalog.entries()]
    for r in rows:
        m = paramcount.load(r["id"])
        assert (r["class_name"], r["total"], r["backbone_total"]) == (m.class_name, m.total, m.backbone_total)


def test_bert_base_chinese_backbone_and_derivation(client):
    r = post(client, catalog_source("bert-base-chinese"))
    assert r.status_code == 200, r.text
    m, lib = r.json(), paramcount.load("bert-base-chinese")
    assert m["backbone_total"] == 102_267_648 == lib.backbone_total
    assert m["total"] == lib.total and m["class_name"] == "BertForMaskedLM"
    assert {c["kind"]: c["count"] for c in m["components"]} == lib.components()
    assert sum(c["count"] for c in m["components"]) == m["total"]
    assert m["tree"]["count"] == m["total"] and m["tree"]["name"] == "BertForMaskedLM"
    check_tree_sums(m["tree"])
    assert m["ties"] == [{"name": n, "target": t, "count": c} for n, t, c in lib.ties()]
    title = m["derivation"]["blocks"][0]["cells"][0]
    assert {"t": "num", "v": "102,267,648", "text": None} in title  # the backbone, as `explain` derives
    pieces = [p for b in m["derivation"]["blocks"] for c in b["cells"] for p in c]
    assert any(p["t"] == "math" and "\\cdot" in p["v"] for p in pieces)  # formulas go out as TeX


def test_derivation_of_the_chosen_class_and_in_chinese(client):
    m = post(client, catalog_source("bert-base-chinese"), derive="class", lang="zh").json()
    title = m["derivation"]["blocks"][0]["cells"][0]
    assert {"t": "num", "v": "102,290,312", "text": None} in title
    assert any("个参数" in p["v"] for p in title)


def test_class_choice_and_num_labels_go_through_the_library(client):
    m = post(client, catalog_source("bert-base-chinese"), model_class="BertForSequenceClassification", num_labels=3)
    lib = paramcount.load("bert-base-chinese", "BertForSequenceClassification", 3)
    assert m.json()["total"] == lib.total and m.json()["class_name"] == "BertForSequenceClassification"
    assert "base" in m.json()["classes"] and "BertForMaskedLM" in m.json()["classes"]
    bad = post(client, catalog_source("bert-base-chinese"), model_class="GPT2Model")
    assert bad.status_code == 400 and bad.json()["field"] == "class" and "choose one of" in bad.json()["error"]


def test_a_moe_model_reports_active_parameters(client):
    m = post(client, catalog_source("mixtral-8x7b")).json()
    assert m["active"] == paramcount.load("mixtral-8x7b").active_total < m["total"]
    check_tree_sums(m["tree"])


def test_a_catalog_scope_comes_with_the_count(client):
    """What the page shows under the headline: Llama 4 Scout is its text model only."""
    m = post(client, catalog_source("llama-4-scout")).json()
    assert m["scope"] == list(paramcount.load("llama-4-scout").scope) and "text model only" in m["scope"][0]
    assert post(client, catalog_source("bert-base-uncased")).json()["scope"] == []


def test_config_json_counts_as_the_catalog_does_and_takes_set_fields(client):
    config = catalog.get("meta-llama/Meta-Llama-3-8B").config
    m = post(client, {"kind": "config", "config": config}).json()
    assert m["total"] == 8_030_261_248 == paramcount.load(config).total
    m = post(
        client, {"kind": "config", "config": config}, overrides=["num_hidden_layers=8", "tie_word_embeddings=true"]
    )
    assert (
        m.json()["total"]
        == paramcount.load(config, overrides={"num_hidden_layers": 8, "tie_word_embeddings": True}).total
    )
    bad = post(client, {"kind": "config", "config": config}, overrides=["num_hidden_layers"])
    assert bad.status_code == 400 and bad.json() == {
        "error": "--set: expected name=value, got 'num_hidden_layers'",
        "field": "--set",
        "source": None,
        "bug": False,
    }


def test_bad_config_values_are_named(client):
    r = post(client, {"kind": "config", "config": {"model_type": "llama", "hidden_size": -3}})
    assert r.status_code == 400
    assert r.json()["field"] == "hidden_size" and "out of range" in r.json()["error"]
    r = post(client, {"kind": "config", "config": {"model_type": "no-such-family"}})
    assert r.status_code == 400 and r.json()["field"] == "model_type"


def test_bloom_printout_counts_and_offers_tied_and_untied(client):
    m = post(client, {"kind": "printout", "text": BLOOM_TEXT}).json()
    assert m["total"] == 1_303_111_680 == from_text(BLOOM_TEXT).model.total
    assert m["classes"] == ["base"] and m["class_name"] == "BloomForCausalLM"
    untied = post(client, {"kind": "printout", "text": BLOOM_TEXT, "tied": False}).json()
    assert untied["total"] == 1_397_616_640
    base = post(client, {"kind": "printout", "text": BLOOM_TEXT}, model_class="base").json()
    assert base["class_name"] == "BloomModel" and base["total"] == 1_303_111_680
    assert base["derivation"]["blocks"][0]["cells"][0][1]["v"] == "1,303,111,680"


def test_printout_errors_say_where(client):
    r = post(client, {"kind": "printout", "text": "BloomForCausalLM(\n(lm_head): Linear(in_features=2"})
    assert r.status_code == 400 and "line 2, column 18: '(' of Linear is never closed" in r.json()["error"]
    r = post(client, {"kind": "printout", "text": BLOOM_TEXT}, overrides=["n_layer=2"])
    assert r.status_code == 400 and r.json()["field"] == "overrides"


def test_a_superscript_layer_key_is_counted_not_a_bug(client):
    """``(²)``: "²".isdigit() is true and int("²") raises; the page counts it as a module named ²."""
    text = "Net(\n  (layers): ModuleList(\n    (²): Linear(in_features=4, out_features=4, bias=True)\n  )\n)\n"
    r = post(client, {"kind": "printout", "text": text})
    assert r.status_code == 200 and r.json()["total"] == 20, r.json()


@pytest.mark.parametrize(
    ("source", "overrides", "said"),
    [
        (catalog_source("LiquidAI/LFM2-1.2B"), ["block_ffn_dim_multiplier=NaN"], "'NaN' holds NaN or infinity"),
        (catalog_source("OpenGVLab/InternVL3-8B-hf"), ["downsample_ratio=5e-324"], "5e-324 is out of range"),
        ({"kind": "config", "config": {"model_type": "lfm2", "block_ffn_dim_multiplier": 1e308}}, [], "1e+308 is out"),
    ],
)
def test_float_fields_past_their_range_are_named(client, source, overrides, said):
    body = post(client, source, overrides=overrides).json()
    assert said in body["error"] and body["field"] and not body["bug"], body


# --- never a server path ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "tests/fixtures/bloom-1b4-zh.txt",  # a file that exists where the tests run
        "pyproject.toml",
        str(ROOT / "tests" / "fixtures" / "bloom-1b4-zh.txt"),
        "../../../../etc/passwd",
        "src/paramcount/catalog",
        "some-org/some-model",  # a hub id: the page never goes to the network
    ],
)
def test_catalog_names_are_never_paths_or_hub_ids(client, name, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = post(client, catalog_source(name))
    assert r.status_code == 400, r.text
    assert "not in the catalog" in r.json()["error"] and r.json()["field"] == "name"


def test_unknown_name_gets_suggestions(client):
    r = post(client, catalog_source("bert-base-chinse"))
    assert r.status_code == 400 and "did you mean bert-base-chinese" in r.json()["error"]


# --- header bytes from the browser ----------------------------------------------------------


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    from ..ckpt import TINY_LLAMA, build, torch

    folder = tmp_path_factory.mktemp("llama")
    model = build(TINY_LLAMA, dtype=torch.float16)
    model.save_pretrained(folder)
    return folder, model, TINY_LLAMA


def upload(client, fmt, path, header, config=None):
    r = client.post("/api/upload", json=upload_body(fmt, path, header, config))
    assert r.status_code == 200, r.text
    return {"kind": "upload", "id": r.json()["id"]}


def test_safetensors_header_counts_as_the_file_does(client, llama_folder):
    folder, model, config = llama_folder
    path = folder / "model.safetensors"
    header = safetensors_header(path)
    alone = post(client, upload(client, "safetensors", path, header)).json()
    lib = paramcount.load(path)  # the command line's reading of the whole file (with config.json beside it)
    assert alone["total"] == lib.total == sum(p.numel() for p in model.parameters())
    assert alone["storage"]["by_dtype"] == [
        {"name": k, "tensors": t, "elements": e, "bytes": b} for k, (t, e, b) in lib.checkpoint.by_dtype().items()
    ]
    assert alone["storage"]["file_bytes"] == path.stat().st_size
    assert alone["storage"]["header_bytes"] == len(header)
    with_config = post(client, upload(client, "safetensors", path, header, config)).json()
    assert with_config["class_name"] == lib.class_name == "LlamaForCausalLM"
    from_config = post(client, {"kind": "config", "config": config}).json()
    assert with_config["components"] == from_config["components"]
    assert "LlamaModel" in with_config["classes"]
    # the derivation: the family's tree with its symbols where the config is there, else said not to be
    assert with_config["breakdown_exact"] and tables(with_config["derivation"]) == tables(from_config["derivation"])
    assert not alone["breakdown_exact"] and "no config.json" in alone["breakdown_why"]
    assert "No symbols" in words(alone["derivation"]) and "Symbols" in words(with_config["derivation"])


def tables(derivation) -> list:
    return [b for b in derivation["blocks"] if b["kind"] == "table"]


def words(derivation) -> str:
    return " ".join(p["v"] for b in derivation["blocks"] for c in b["cells"] for p in c)


def test_gguf_header_counts_as_the_file_does(client, tmp_path):
    from ..test_gguf import LLAMA, META, write

    path = write(tmp_path / "tiny.gguf", LLAMA, meta=META)
    m = post(client, upload(client, "gguf", path, gguf_header(path))).json()
    lib = paramcount.load(path)
    assert m["breakdown_exact"] and "Symbols: " in words(m["derivation"])  # the family's, from the metadata
    assert m["total"] == lib.total and m["components"] == [
        {"kind": k, "label": k.replace("_", " ").replace("feed forward", "feed-forward"), "count": n}
        for k, n in lib.components().items()
    ]
    from paramcount.gguf.reader import read_header

    info = read_header(path)
    assert m["storage"]["data_bytes"] == info.nbytes
    assert {r["name"]: r["bytes"] for r in m["storage"]["by_dtype"]} == {s.type_name: s.nbytes for s in info.by_type()}
    cut = client.post("/api/upload", json=upload_body("gguf", path, gguf_header(path)[:-40]))
    assert cut.status_code == 400 and "runs past the" in cut.json()["error"]
    other = post(client, upload(client, "gguf", path, gguf_header(path)), model_class="LlamaModel")
    assert other.status_code == 400 and other.json()["field"] == "model_class"


@pytest.mark.parametrize(
    ("header", "size", "message"),
    [
        (b"", 0, "fewer than 8"),
        ((2**40).to_bytes(8, "little"), 2**41, "is absurd"),
        ((10).to_bytes(8, "little") + b'{"a":', 100, "the header is 8 + 10 bytes; 13 were sent"),
        ((2).to_bytes(8, "little") + b"[]", 10, "not a JSON object"),
        ((2).to_bytes(8, "little") + b"{}", 5, "smaller than the 10 header bytes"),
    ],
)
def test_hostile_safetensors_headers_are_named(client, header, size, message, tmp_path):
    body = {"format": "safetensors", "name": "../../x.safetensors", "size": size}
    r = client.post("/api/upload", json={**body, "header": base64.b64encode(header).decode()})
    assert r.status_code == 400 and message in r.json()["error"], r.text
    assert r.json()["source"] in (None, "x.safetensors")  # the client's name, never a path


def test_upload_refuses_what_is_not_base64_and_forgets_old_ids(client):
    r = client.post("/api/upload", json={"format": "gguf", "name": "a", "size": 9, "header": "!!!"})
    assert r.status_code == 400 and r.json()["field"] == "header"
    r = post(client, {"kind": "upload", "id": "0" * 32})
    assert r.status_code == 400 and "drop the file again" in r.json()["error"]


# --- limits and headers -----------------------------------------------------------------------


def test_body_limit_counts_bytes_not_content_length(client):
    r = client.post("/api/model", content=b"x" * (3 << 20), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "at most 2,097,152" in r.json()["error"]
    chunks = (b"x" * (1 << 20) for _ in range(3))  # chunked: no Content-Length at all
    r = client.post("/api/model", content=chunks, headers={"content-type": "application/json"})
    assert r.status_code == 413


async def _call(app, headers, chunks):
    sent, messages = [], [{"type": "http.request", "body": c, "more_body": True} for c in chunks]
    messages[-1]["more_body"] = False

    async def receive():
        return messages.pop(0)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/api/model", "headers": headers, "query_string": b""}
    await app(scope, receive, send)
    return sent[0]["status"], json.loads(sent[1]["body"])


def test_a_content_length_that_lies_does_not_get_a_big_body_past():
    import asyncio

    app = create_app()
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-length", b"10"), (b"content-type", b"application/json")]
    status, body = asyncio.run(_call(app, headers, [b"{" * (1 << 20)] * 3))
    assert status == 413 and "over 2,097,152 bytes" in body["error"]
    status, body = asyncio.run(_call(app, [(b"host", b"localhost"), (b"content-length", b"1e9")], [b"{}"]))
    assert status == 400 and body["field"] == "content-length"
    status, body = asyncio.run(_call(app, [(b"host", b"localhost"), (b"content-length", b"\xb2")], [b"{}"]))
    assert status == 400 and body["field"] == "content-length"  # "²" (latin-1): isdigit(), yet int() raises


def test_other_hosts_are_refused():
    from fastapi.testclient import TestClient

    c = TestClient(create_app(), base_url="http://127.0.0.1:8000")
    assert c.get("/api/catalog").status_code == 200
    assert c.get("/api/catalog", headers={"host": "localhost:8000"}).status_code == 200
    r = c.get("/api/catalog", headers={"host": "attacker.example"})
    assert r.status_code == 400 and "does not answer to host" in r.json()["error"]
    for port in ("99999", "65536", "0", "8000x", "-1"):  # issue 32 item 7
        r = c.get("/api/catalog", headers={"host": f"localhost:{port}"})
        assert (r.status_code, r.json()["field"], r.json()["bug"]) == (400, "host", False), port
        assert "a port is 1 to 65535" in r.json()["error"]
    assert c.get("/api/catalog", headers={"host": "localhost:65535"}).status_code == 200


def test_page_and_assets_are_local_with_a_strict_policy(client):
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "script-src 'self';" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    for asset in ("/static/app.js", "/static/charts.js", "/static/style.css", "/static/vendor/katex/katex.min.js"):
        assert client.get(asset).status_code == 200, asset
    assert "http://" not in page.text and "https://" not in page.text


def test_validation_errors_name_the_field(client):
    r = post(client, catalog_source("gpt2"), num_labels=0)
    assert r.status_code == 422 and r.json()["field"] == "num_labels"
    r = client.post("/api/model", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]
    r = client.get("/no/such/page")
    assert r.status_code == 404 and r.json()["error"] == "Not Found"


def test_openapi_schema_is_published_without_cdn_docs(client):
    schema = client.get("/openapi.json").json()
    assert {"/api/catalog", "/api/model", "/api/upload"} <= set(schema["paths"])
    assert client.get("/docs").status_code == 404  # the interactive docs would load scripts from a CDN


def test_every_page_asset_is_package_data():
    """A wheel ships the page: each file under web/static/ matches a package-data glob."""
    from fnmatch import fnmatch

    tomllib = pytest.importorskip("tomllib")
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    static = ROOT / "src" / "paramcount" / "web" / "static"
    files = [p.relative_to(static.parent.parent).as_posix() for p in static.rglob("*") if p.is_file()]
    assert len(files) > 20
    missed = [f for f in files if not any(fnmatch(f, g) and f.count("/") == g.count("/") for g in globs["paramcount"])]
    assert not missed


# ---- GGUF files by name (issue 24): Ollama's store and a Hub repository, as the CLI reads them ------

from ..gguf_files import llama_spec, write  # noqa: E402
from ..test_hub_gguf import REPO  # noqa: E402
from ..test_stores import blob  # noqa: E402


def ollama_store(home, name="tiny", tag="1b", params=None):
    """A 4-block Llama with its vocabulary (what Ollama's estimate reads) as ``ollama pull`` leaves
    it: the blob by digest, a manifest naming it and the modelfile's parameters."""
    root = home / "ollama"
    path = write(llama_spec("tiny", 4, 256, 8, 2, 512, 1000, context=8192), home / "tiny.gguf")
    found = [{"mediaType": "application/vnd.ollama.image.model", **blob(root, path.read_bytes())}]
    if params is not None:
        found.append({"mediaType": "application/vnd.ollama.image.params", **blob(root, json.dumps(params).encode())})
    folder = root / "manifests" / "registry.ollama.ai" / "library" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / tag).write_text(json.dumps({"schemaVersion": 2, "layers": found}))


def store(name):
    return {"kind": "store", "name": name}


def test_an_ollama_name_counts_and_plans_as_the_cli_does(client, home, monkeypatch):
    from paramcount.memory.core.gpus import gpu
    from paramcount.memory.runtimes import inference
    from paramcount.memory.runtimes.ollama import Asked
    from paramcount.memory.runtimes.ollama_vs_llamacpp import plan

    for key in [k for k in __import__("os").environ if k.startswith("OLLAMA_") and k != "OLLAMA_MODELS"]:
        monkeypatch.delenv(key)
    ollama_store(home, params={"num_ctx": 2048})
    lib = paramcount.load("ollama:tiny:1b")
    got = post(client, store("ollama:tiny:1b")).json()
    assert (got["total"], got["name"]) == (lib.total, "ollama:tiny:1b")
    body = {"source": store("ollama:tiny:1b"), "scheme": "stored", "context": 1024, "gpu": "rtx3060"}
    llama = client.post("/api/memory", json=body).json()
    assert llama["runtime"] == "llama.cpp" and llama["total"] == inference(lib, "stored", 1024).total
    mine = client.post("/api/memory", json={**body, "runtime": "ollama"}).json()
    o = plan(lib, gpu("rtx3060"), Asked(context=1024))  # the store's blob, projector and modelfile options
    assert (mine["ollama"]["num_gpu"], mine["total"]) == (o.num_gpu, o.plan.total) and mine["ollama_now"] == o.current


def test_a_hub_quant_counts_from_its_header_by_range_requests(client, repo, hub):
    lib = paramcount.load(f"{REPO}:Q8_0")
    asked = len(hub.requests)
    got = post(client, store(f"{REPO}:Q8_0"))
    assert got.status_code == 200, got.text
    assert got.json()["total"] == lib.total and got.json()["towers"]
    fetched = hub.requests[asked:]
    assert all(r is not None for m, p, r in fetched if m == "GET" and p.endswith(".gguf"))  # ranges, never whole files
    assert not hub.ranges_of("Tiny-F16.gguf")  # only the named file and its projector
    plan = client.post("/api/memory", json={"source": store(f"{REPO}:Q8_0"), "scheme": "stored"}).json()
    assert plan["runtime"] == "llama.cpp"
    r = client.post("/api/memory", json={"source": store(f"{REPO}:Q8_0"), "scheme": "stored", "runtime": "ollama"})
    assert r.status_code == 400 and "Ollama's plan reads a GGUF file on disk or ollama:NAME" in r.json()["error"]


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("ollama:../../etc/passwd", "not an Ollama model name"),
        ("ollama:../x", "is not a part of an Ollama model name"),
        ("ollama:missing:7b", "missing"),
        (f"{REPO}", "expected ollama:NAME or org/repo:QUANT"),  # a repository lists files: the page needs one
        ("/etc/passwd:Q4_K_M", "expected ollama:NAME or org/repo:QUANT"),
        (f"{REPO}:../secret.gguf", "expected ollama:NAME or org/repo:QUANT"),
        (f"{REPO}:Q2_K", "Q2_K"),
    ],
)
def test_bad_store_names_are_one_line(client, home, repo, hub, name, said):
    r = post(client, store(name))
    body = r.json()
    assert r.status_code == 400 and said in body["error"] and "\n" not in body["error"] and not body["bug"], body


def test_a_page_served_beyond_loopback_reads_no_store_and_no_hub(home, repo, hub):
    from fastapi.testclient import TestClient

    ollama_store(home)
    asked = len(hub.requests)
    with TestClient(create_app(hosts=None)) as exposed:
        for name in ("ollama:tiny:1b", f"{REPO}:Q8_0"):
            r = post(exposed, store(name))
            assert r.status_code == 400 and r.json()["field"] == "name", r.text
            assert "only on a page served to this machine" in r.json()["error"]
    assert len(hub.requests) == asked
