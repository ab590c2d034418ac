"""The page in a real headless Chromium (Debian's, driven by Playwright), against a live server.

Every figure checked on the page is compared with what the library computes in this process.
Screenshots go to tests/web/artifacts/ (git-ignored); UPDATE_SCREENSHOTS=1 also rewrites the
README's docs/web-page.png.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

import paramcount
from paramcount.frontends.printout import from_text

from .conftest import BLOOM_TEXT, ROOT

ARTIFACTS = Path(__file__).parent / "artifacts"
DOCS_SHOT = ROOT / "docs" / "web-page.png"
TIMEOUT = 120_000  # ms before any one thing counts as never appearing: a hang guard, not a speed limit


def chromium() -> str:
    """Debian's chromium; installed with apt when the tests run as root on a machine without it."""
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=False, capture_output=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"],
            env=env,
            check=False,
            capture_output=True,
        )
        if shutil.which("chromium"):
            return shutil.which("chromium")
    pytest.fail(
        "the browser tests need Debian's chromium: apt-get install chromium (as root they install it themselves)",
        pytrace=False,
    )


def running(host: str):
    """The real server (uvicorn, the app `paramcount serve` runs) on a free loopback port, in a
    thread, built as `serve --host host` builds it (beyond loopback: the page says it is exposed)."""
    from paramcount.web.server import bind, server, url

    sock = bind("127.0.0.1", 0)
    srv = server(sock, host)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not srv.started and thread.is_alive():  # no deadline to race: a server that fails ends its thread
        time.sleep(0.02)
    assert srv.started, "the server did not start"
    yield url(sock).rstrip("/")
    srv.should_exit = True
    thread.join()
    sock.close()


@pytest.fixture(scope="module")
def live_server():
    yield from running("127.0.0.1")


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser tests need playwright: pip install -e '.[test]'", pytrace=False)
    path = chromium()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield b
        b.close()


@pytest.fixture
def page(browser, live_server, request):
    """A fresh page that records every request it makes and every script error."""
    yield from fresh_page(browser, live_server, request, 1280)


WIDTHS = {"desktop": 1280, "tablet": 768, "phone": 390}


@pytest.fixture(params=list(WIDTHS.values()), ids=list(WIDTHS))
def sized(browser, live_server, request):
    """The same fresh page at each width the page is laid out for."""
    yield from fresh_page(browser, live_server, request, request.param)


def fresh_page(browser, live_server, request, width):
    context = browser.new_context(viewport={"width": width, "height": 900}, device_scale_factor=1)
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT)
    pg.requests, pg.errors = [], []
    pg.on("request", lambda r: pg.requests.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    # a refused request (400) is logged by the browser; the page shows it, so it is no script error
    pg.on(
        "console", lambda m: m.type == "error" and "Failed to load resource" not in m.text and pg.errors.append(m.text)
    )
    pg.base = live_server
    yield pg
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    local = (live_server + "/", "blob:" + live_server + "/", "data:")  # a download or a chart drawn in the page
    elsewhere = [u for u in pg.requests if not u.startswith(local)]
    assert not elsewhere, f"the page loaded from another host: {elsewhere}"
    assert not pg.errors, pg.errors


def fmt(n: int) -> str:
    return f"{n:,}"


def text_of(pg, selector: str) -> str:
    return pg.locator(selector).inner_text().strip()


def expect(locator):
    """Playwright's assertions: they poll from Playwright's own injected script, where
    ``wait_for_function`` evals its predicate in the page, which the page's CSP (no
    'unsafe-eval') refuses once it has to poll (seen on a loaded CI machine)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def wait_text(pg, selector: str, expected: str) -> None:
    pattern = re.compile(r"^\s*" + re.escape(expected) + r"\s*$")  # textContent, trimmed
    expect(pg.locator(selector).first).to_have_text(pattern, timeout=TIMEOUT)


def wait_contains(pg, selector: str, part: str) -> None:
    expect(pg.locator(selector).first).to_contain_text(part, timeout=TIMEOUT)


def wait_memory(pg, model, scheme: str, mode: str = "inference") -> None:
    """Until the planner has drawn ``model`` at ``scheme``."""
    pg.wait_for_selector(f'#memory[data-total="{model.total}"][data-scheme="{scheme}"][data-mode="{mode}"]')


def test_three_actions_bert_then_llama_3_8b_on_a_24_gb_gpu(page):
    from paramcount.memory.fit import fit

    page.goto(page.base + "/")  # action 1: open the page
    bert = paramcount.load("bert-base-chinese")
    wait_text(page, "#backbone-total", fmt(bert.backbone_total))
    assert bert.backbone_total == 102_267_648
    assert text_of(page, "#total") == fmt(bert.total) and text_of(page, "#backbone-class") == "BertModel"
    assert page.locator("#sunburst path").count() > 20  # the chart of where the parameters live
    title = text_of(page, "#derivation-body .d-title")
    assert title == "BertModel: 102,267,648 parameters"
    assert page.locator("#derivation-body .katex").count() > 20  # formulas rendered by KaTeX
    for c in page.locator("#components tbody tr").all()[:-1]:
        assert c.inner_text()  # one row per component

    page.fill("#search", "Llama-3-8B")  # action 2: type the name
    page.keyboard.press("Enter")  # action 3: pick it
    llama = paramcount.load("llama-3-8b")
    wait_text(page, "#total", fmt(llama.total))
    assert text_of(page, "#model-name") == "meta-llama/Meta-Llama-3-8B"
    wait_memory(page, llama, "bf16")
    gpu_label = page.locator("#gpu option:checked").inner_text()
    assert gpu_label.startswith("GeForce RTX 4090") and "24 GB" in gpu_label
    expected = fit(llama, "rtx4090")
    rows = page.locator("#precisions tbody tr")
    assert rows.count() == len(expected.rows)
    for i, row in enumerate(expected.rows):
        cells = rows.nth(i).locator("td").all_inner_texts()
        assert cells[0] == row.precision
        assert cells[2] == f"{row.plan.total / 2**30:.2f} GiB"
        assert cells[3] == ("✓ fits" if row.fits else "✗ no")
    assert not expected.row("fp32").fits  # 32 GB of weights alone: no
    if os.environ.get("UPDATE_SCREENSHOTS"):
        page.wait_for_selector('#advice[data-model="meta-llama/Meta-Llama-3-8B"]')  # its own recommendations
        page.locator("#input").scroll_into_view_if_needed()
        DOCS_SHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(DOCS_SHOT), clip={"x": 0, "y": 0, "width": 1280, "height": 1900}, full_page=True)


def test_the_recommendations_never_show_the_last_models_lines(page):
    """Switching model clears the recommendations until the new ones arrive: BERT's transformers
    line (BertForMaskedLM) once stood under Llama-3-8B's heading for the length of the request."""
    page.goto(page.base + "/")
    page.wait_for_selector('#advice[data-model="google-bert/bert-base-chinese"] #advice-list li[data-runtime]')
    assert "BertForMaskedLM" in text_of(page, "#advice-list")
    page.fill("#search", "Llama-3-8B")
    page.keyboard.press("Enter")
    shown = page.evaluate(
        """() => new Promise((done) => {
          const seen = [];
          const note = () => seen.push([
            document.getElementById("model-name").innerText, document.getElementById("advice-list").innerText,
          ]);
          const look = () => {
            note();
            if (document.getElementById("advice").dataset.model === "meta-llama/Meta-Llama-3-8B") done(seen);
            else requestAnimationFrame(look);
          };
          new MutationObserver(note).observe(document.body, { childList: true, subtree: true, characterData: true });
          look();
        })"""
    )
    stale = [(name, said) for name, said in shown if "Llama-3-8B" in name and "BertForMaskedLM" in said]
    assert any("Llama-3-8B" in name for name, _ in shown) and "LlamaForCausalLM" in shown[-1][1]
    assert not stale, stale[0]  # under Llama-3-8B's heading, never BERT's lines


def test_bloom_printout_then_change_the_precision(page):
    from paramcount.memory.weights.schemes import weights

    page.goto(page.base + "/")
    wait_text(page, "#backbone-total", fmt(paramcount.load("bert-base-chinese").backbone_total))
    page.click("#tab-printout")
    page.fill("#printout-text", BLOOM_TEXT)
    page.click("#count-printout")
    bloom = from_text(BLOOM_TEXT).model
    wait_text(page, "#total", fmt(bloom.total))
    assert bloom.total == 1_303_111_680
    assert text_of(page, "#class-name") == "BloomForCausalLM"
    assert page.locator("#sunburst path").count() > 20

    wait_memory(page, bloom, "bf16")
    first = page.locator('#terms tr[data-key="weights"] td').nth(1).inner_text()
    assert first == f"{weights(bloom, 'bf16').bytes / 2**30:.2f}"
    page.select_option("#scheme", "nf4")  # transformers loads bitsandbytes' 4 bits, not an idealised int4
    wait_memory(page, bloom, "nf4")
    int4 = weights(bloom, "nf4").bytes
    assert page.locator('#terms tr[data-key="weights"] td').nth(1).inner_text() == f"{int4 / 2**30:.2f}"
    assert text_of(page, "#verdict .big") == f"{int4 / 2**30:.2f} GiB"
    assert "weights only" in text_of(page, "#verdict")  # a printout has no config: no KV cache layout
    assert "scheme=nf4" in page.url and "model=" not in page.url  # the settings, not the printout
    assert "a pasted printout cannot be put in a URL" in text_of(page, "#url-note")


def test_a_catalog_model_redraws_as_the_controls_change(page):
    from paramcount.memory.runtimes import inference

    page.goto(page.base + "/")
    page.fill("#search", "qwen2.5-7b")
    page.keyboard.press("Enter")
    qwen = paramcount.load("Qwen/Qwen2.5-7B")
    wait_text(page, "#total", fmt(qwen.total))
    wait_memory(page, qwen, "bf16")
    page.select_option("#scheme", "nf4")
    wait_memory(page, qwen, "nf4")
    page.fill("#batch", "4")
    plan = inference(qwen, "nf4", 4096, batch=4)
    wait_text(page, "#verdict .big", f"{plan.total / 2**30:.2f} GiB")
    kv = page.locator('#terms tr[data-key="kv_cache"] td').nth(1).inner_text()
    assert kv == f"{plan.term('kv_cache').bytes / 2**30:.2f}"
    assert page.locator("#memplot polygon").count() == len(plan.terms)

    from paramcount.memory.training.plan import train

    page.click('#mode button[data-value="training"]')
    wait_memory(page, qwen, "mixed", "training")
    full = train(qwen, precision="mixed", context=4096, batch=4)
    assert text_of(page, "#verdict .big") == f"{full.total / 2**30:.2f} GiB"
    assert page.locator('#terms tr[data-key="optimizer"]').count() == 1
    page.click('#mode button[data-value="lora"]')
    wait_memory(page, qwen, "qlora", "lora")
    qlora = train(qwen, precision="qlora", lora=8, context=4096, batch=4)
    assert text_of(page, "#verdict .big") == f"{qlora.total / 2**30:.2f} GiB"
    assert page.locator('#terms tr[data-key="adapters"]').count() == 1


def sparse_llama_3_8b(path: Path) -> Path:
    """Llama-3-8B as a Q4_K/Q6_K GGUF with its 128,256-token vocabulary: a real multi-MB header
    and a hole where its 4.9 GB of tensor data would be (nothing is written or read there)."""
    from ..test_gguf import write_sparse_llama_3_8b

    write_sparse_llama_3_8b(path, token_list=True)
    return path


def test_a_gguf_file_is_read_by_its_header_only(page, tmp_path):
    from paramcount.gguf.reader import read_header

    path = sparse_llama_3_8b(tmp_path / "llama-3-8b.Q4_K_M.gguf")
    info = read_header(path)
    assert info.data_offset > 1 << 20  # more than the page's first read: it reads on as the header goes on
    page.goto(page.base + "/")
    wait_text(page, "#backbone-total", fmt(paramcount.load("bert-base-chinese").backbone_total))
    page.click("#tab-file")
    with page.expect_request("**/api/upload") as sent:
        page.set_input_files("#file", str(path))
    lib = paramcount.load(path)
    wait_text(page, "#total", fmt(lib.total))
    assert lib.total == 8_030_261_248
    import base64

    header = base64.b64decode(json.loads(sent.value.post_data)["header"])
    assert info.data_offset - 32 < len(header) <= info.data_offset  # the header, to the end of its tensor infos
    assert path.stat().st_size > 4_000_000_000 and f"read {fmt(len(header))} header bytes" in text_of(
        page, "#file-status"
    )
    assert page.locator("#storage tbody tr").count() == len(info.by_type())
    page.wait_for_selector('#memory[data-runtime="llama.cpp"][data-scheme="stored"]')  # llama.cpp reads a GGUF
    assert page.locator("#runtime").input_value() == "llama.cpp" and page.locator("#flash-attn").is_visible()
    from paramcount.memory.runtimes import inference

    plan = inference(lib, "stored", 4096)  # no head_count in this header: its weights alone, as the page says
    assert plan.settings["runtime"] == "llama.cpp" and plan.partial
    wait_text(page, "#verdict .big", f"{plan.term('weights').bytes / 2**30:.2f} GiB")


def test_a_safetensors_file_with_its_config_beside_it(page, tmp_path):
    np = pytest.importorskip("numpy")
    st = pytest.importorskip("safetensors.numpy")
    from ..ckpt import TINY_LLAMA

    expected = paramcount.load(TINY_LLAMA)
    path = tmp_path / "model.safetensors"
    st.save_file({t.name: np.zeros(t.shape, dtype=np.float16) for t in expected.tensors()}, str(path))
    page.goto(page.base + "/")
    wait_text(page, "#backbone-total", fmt(paramcount.load("bert-base-chinese").backbone_total))
    page.click("#tab-file")
    page.click("details.beside summary")
    page.fill("#file-config", json.dumps(TINY_LLAMA))
    page.set_input_files("#file", str(path))
    wait_text(page, "#total", fmt(expected.total))
    assert text_of(page, "#class-name") == "LlamaForCausalLM" and text_of(page, "#backbone-class") == "LlamaModel"
    assert page.locator("#storage tbody tr").all_inner_texts() == [
        f"F16\t{len(expected.tensors())}\t{fmt(expected.total)}\t{fmt(2 * expected.total)}"
    ]


def test_bad_input_is_said_on_the_page(page):
    page.goto(page.base + "/")
    wait_text(page, "#backbone-total", fmt(paramcount.load("bert-base-chinese").backbone_total))
    page.fill("#search", "bert-base-chinse")
    page.keyboard.press("Enter")
    page.wait_for_selector("#error:not([hidden])")
    assert "not in the catalog; did you mean bert-base-chinese" in text_of(page, "#error")
    page.click("#tab-config")
    page.fill("#config-text", '{"model_type": "llama", "hidden_size": -3}')
    page.click("#count-config")
    wait_contains(page, "#error", "out of range")
    assert "hidden_size" in text_of(page, "#error .field")


def test_after_an_error_the_previous_results_are_marked_stale(page):
    page.goto(page.base + "/")
    wait_text(page, "#backbone-total", fmt(paramcount.load("bert-base-chinese").backbone_total))
    page.fill("#search", "no-such-model-anywhere")
    page.keyboard.press("Enter")
    page.wait_for_selector("#error:not([hidden])")
    assert "google-bert/bert-base-chinese" in text_of(page, "#stale-note")
    for section in ("#overview", "#memory", "#tensors"):
        assert "stale" in page.locator(section).get_attribute("class")
    page.fill("#search", "gpt2")
    page.keyboard.press("Enter")
    wait_text(page, "#total", fmt(paramcount.load("gpt2").total))
    assert page.locator("#stale-note").is_hidden()
    assert "stale" not in (page.locator("#overview").get_attribute("class") or "")


def test_a_composite_model_shows_its_parts(page):
    page.goto(page.base + "/")
    page.fill("#search", "llava-1.5-7b")
    page.keyboard.press("Enter")
    llava = paramcount.load("llava-hf/llava-1.5-7b-hf")
    wait_text(page, "#total", fmt(llava.total))
    assert page.locator("#towers-part").is_visible()
    rows = page.locator("#towers tbody tr")
    assert [rows.nth(i).get_attribute("data-tower") for i in range(rows.count())] == list(llava.towers())
    for i, (tower, count) in enumerate(llava.towers().items()):
        assert rows.nth(i).locator("td").nth(1).inner_text() == fmt(count), tower
    assert page.locator("#towerbar rect").count() == len(llava.towers())
    page.fill("#search", "gpt2")  # one tower: no parts shown
    page.keyboard.press("Enter")
    wait_text(page, "#total", fmt(paramcount.load("gpt2").total))
    assert page.locator("#towers-part").is_hidden()


def test_a_catalog_scope_is_said_under_the_headline(page):
    """Llama 4 Scout counts its text model only: the page says so under the model's name, and
    a model whose count is what its name says shows no such line."""
    page.goto(page.base + "/")
    page.fill("#search", "llama-4-scout")
    page.keyboard.press("Enter")
    scout = paramcount.load("llama-4-scout")
    wait_text(page, "#total", fmt(scout.total))
    assert page.locator("#scope").is_visible()
    assert [text_of(page, "#scope li")] == [f"scope: {s}" for s in scout.scope]
    page.fill("#search", "gpt2")
    page.keyboard.press("Enter")
    wait_text(page, "#total", fmt(paramcount.load("gpt2").total))
    assert page.locator("#scope").is_hidden() and page.locator("#scope li").count() == 0


def test_vllm_with_tensor_parallel_2_says_what_vllm_would_log(page):
    """vLLM with TP 2 on an H100: the plan, the serving line and the precisions are the library's."""
    from paramcount.memory.core.gpus import gpu
    from paramcount.memory.fit import VLLM_INFERENCE
    from paramcount.memory.runtimes import planner

    page.goto(page.base + "/")
    page.fill("#search", "Llama-3-8B")
    page.keyboard.press("Enter")
    llama = paramcount.load("llama-3-8b")
    wait_memory(page, llama, "bf16")
    page.select_option("#gpu", "h100")
    page.select_option("#runtime", "vllm")
    page.wait_for_selector('#memory[data-runtime="vllm"]')
    assert page.locator("#flash-attn").is_hidden() and page.locator("#tp").is_visible()
    page.select_option("#tp", "2")
    vllm = planner(llama, "bf16", "vllm", tp=2, gpu="h100")
    serving = vllm.serving(gpu("h100").memory, 4096)
    wait_text(page, "#kv-tokens", fmt(serving["kv_tokens"]))
    line = text_of(page, "#serving")
    assert line.startswith("vLLM on H100") and "(TP 2)" in line, line
    assert text_of(page, "#kv-blocks") == fmt(serving["kv_blocks"])
    assert text_of(page, "#max-seqs") == fmt(serving["max_sequences"])
    plan = vllm.plan(4096)
    assert text_of(page, "#verdict .big") == f"{plan.total / 2**30:.2f} GiB"
    assert page.locator('#terms tr[data-key="cuda_context"]').count() == 1  # the outside term's parts
    rows = page.locator("#precisions tbody tr")
    assert [rows.nth(i).get_attribute("data-scheme") for i in range(rows.count())] == list(VLLM_INFERENCE)


LAYOUT_PROBE = """() => {
  const doc = document.documentElement;
  const inside = (el) => {
    const card = el.closest('.card, .stat');
    if (!card) return true;
    const a = el.getBoundingClientRect(), b = card.getBoundingClientRect();
    return a.left >= b.left - 1 && a.right <= b.right + 1;
  };
  const reachable = (el) => {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height) return false;
    el.scrollIntoView({block: 'center', behavior: 'instant'});
    const s = el.getBoundingClientRect();
    const hit = document.elementFromPoint(s.left + s.width / 2, s.top + s.height / 2);
    return hit === el || el.contains(hit);
  };
  const controls = [...document.querySelectorAll(
    '.tab, #mode button, #scheme, #gpu, #batch, #context, #runtime, #tp, #utilization, #flash-attn')]
    .filter((c) => !c.closest('[hidden]'));
  const figures = [...document.querySelectorAll('#sunburst, #membar, #memplot, #components, #precisions, #terms')];
  const names = [...document.querySelectorAll('.tree .nm')];
  return {
    scroll: [doc.scrollWidth, doc.clientWidth],
    controls: controls.map((c) => c.id),
    unreachable: controls.filter((c) => !reachable(c)).map((c) => c.id || c.textContent.trim()),
    outside: figures.filter((f) => !inside(f)).map((f) => f.id),
    names: names.map((n) => [n.textContent, n.getBoundingClientRect().width, n.scrollWidth, n.clientWidth]),
    gpu: document.querySelector('#gpu').getBoundingClientRect().width,
  };
}"""


def check_layout(probe: dict, controls: set[str]) -> None:
    assert controls <= set(probe["controls"]), probe  # drawn, so the checks below cover them
    assert probe["scroll"][0] <= probe["scroll"][1], probe
    assert not probe["unreachable"], probe
    assert not probe["outside"], probe
    assert probe["names"], probe
    for name, width, scrolled, client in probe["names"]:  # drawn, and none cut short
        assert width > 0 and scrolled <= client, (name, width, scrolled, client)
    assert probe["gpu"] > 200, probe


@pytest.mark.parametrize("size", [(390, 844), (768, 1024)], ids=["phone", "tablet"])
def test_the_page_fits_a_phone_and_a_tablet(browser, live_server, size):
    """No sideways scroll; every tab and planner control reachable where it is drawn (the runtime's
    own controls under vLLM and under llama.cpp, and vLLM's serving line); the charts and tables
    inside their cards; the tensor tree's names visible; the GPU select wide enough to read.
    Screenshots of both sizes go to tests/web/artifacts/."""
    width, height = size
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT)
    pg.goto(live_server + "/")
    bert = paramcount.load("bert-base-chinese")
    wait_memory(pg, bert, "bf16")
    check_layout(pg.evaluate(LAYOUT_PROBE), {"runtime"})
    ARTIFACTS.mkdir(exist_ok=True)
    pg.evaluate("() => window.scrollTo(0, 0)")
    pg.screenshot(path=str(ARTIFACTS / f"page-{width}.png"), full_page=True)
    if os.environ.get("UPDATE_SCREENSHOTS") and width == 390:
        pg.screenshot(
            path=str(ROOT / "docs" / "web-page-phone.png"),
            clip={"x": 0, "y": 0, "width": 390, "height": 1700},
            full_page=True,
        )
    pg.fill("#search", "Llama-3-8B")  # a decoder: vLLM pages its KV cache (BERT keeps none)
    pg.keyboard.press("Enter")
    wait_memory(pg, paramcount.load("llama-3-8b"), "bf16")
    pg.select_option("#runtime", "vllm")
    pg.wait_for_selector('#memory[data-runtime="vllm"]')
    pg.wait_for_selector("#serving:not([hidden])")
    check_layout(pg.evaluate(LAYOUT_PROBE), {"runtime", "tp", "utilization"})
    pg.screenshot(path=str(ARTIFACTS / f"page-{width}-vllm.png"), full_page=True)
    pg.select_option("#runtime", "llama.cpp")
    pg.wait_for_selector('#memory[data-runtime="llama.cpp"]')
    check_layout(pg.evaluate(LAYOUT_PROBE), {"runtime", "flash-attn"})
    pg.screenshot(path=str(ARTIFACTS / f"page-{width}-llamacpp.png"), full_page=True)  # host memory's line
    context.close()


# ---- issue 23 item 5: the tree, the bar, errors, the address, downloads, any context; at each width


TREE_PROBE = """() => {
  const box = document.querySelector('#tree').getBoundingClientRect();
  const shown = (el) => {  // every character of its text inside its own box and the tree's
    const range = document.createRange();
    range.selectNodeContents(el);
    const r = range.getBoundingClientRect();
    return el.scrollWidth <= el.clientWidth + 1 && r.left >= box.left - 1 && r.right <= box.right + 1;
  };
  const rows = [...document.querySelectorAll('#tree summary, #tree .leaf')];
  return {
    names: rows.map((r) => r.querySelector('.nm').textContent),
    cut: rows.filter((r) => ![...r.querySelectorAll('.nm, .rep, .ct')].every(shown))
      .map((r) => r.textContent),
  };
}"""

BAR_PROBE = """() => {
  const svg = document.querySelector('#membar');
  const width = svg.viewBox.baseVal.width;
  const labels = [...svg.querySelectorAll('text.seg')].map((t) => {
    const seg = svg.querySelector(`rect[data-key="${t.dataset.key}"]`);
    const b = t.getBBox(), x = Number(seg.getAttribute('x')), w = Number(seg.getAttribute('width'));
    return {text: t.textContent, inside: b.x >= x && b.x + b.width <= x + w};
  });
  const cap = svg.querySelector('text.capacity').getBBox();
  return {labels, capacity: [cap.x, cap.x + cap.width, width], keys: [...svg.querySelectorAll('rect[data-key]')]
    .map((r) => r.dataset.key)};
}"""


def test_tree_names_bar_labels_and_training_gpus_are_whole(sized):
    """DeepSeek-V3's tree keeps every name, layer range and `× 58` whole; vLLM's bar labels a
    segment whole or not at all; training says `none` where `paramcount fit` does, and the GPU's
    capacity label stays inside the bar."""
    from paramcount.memory.fit import fit

    pg = sized
    pg.goto(pg.base + "/?model=deepseek-ai/DeepSeek-V3")
    wait_text(pg, "#total", fmt(paramcount.load("deepseek-ai/DeepSeek-V3").total))
    pg.click("#expand-all")
    pg.wait_for_selector("#tree .nm:text('shared_experts')")  # depth 4: the MoE layers' MLP is open
    tree = pg.evaluate(TREE_PROBE)
    assert not tree["cut"], tree["cut"]
    ARTIFACTS.mkdir(exist_ok=True)
    pg.locator("#tensors").screenshot(path=str(ARTIFACTS / f"tree-{pg.viewport_size['width']}.png"))
    assert "layers.0–2× 3" in tree["names"] and "layers.3–60× 58" in tree["names"], tree["names"]
    assert {"self_attn", "mlp", "kv_a_proj_with_mqa", "post_attention_layernorm"} <= set(tree["names"])

    llama = paramcount.load("llama-3-8b")
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B&runtime=vllm&gpu=h100")
    pg.wait_for_selector(f'#memory[data-runtime="vllm"][data-total="{llama.total}"]')
    bar = pg.evaluate(BAR_PROBE)
    pg.locator("#membar").screenshot(path=str(ARTIFACTS / f"bar-vllm-{pg.viewport_size['width']}.png"))
    assert "cuda_graphs" in bar["keys"] and bar["labels"], bar
    for label in bar["labels"]:
        assert label["inside"], bar
    assert all(re.fullmatch(r"([a-z ]+ )?\d+\.\d", label["text"]) for label in bar["labels"]), bar

    pg.select_option("#gpu", "rtx3060")
    pg.click('#mode button[data-value="training"]')
    wait_memory(pg, llama, "mixed", "training")
    low, high, width = pg.evaluate(BAR_PROBE)["capacity"]
    assert low >= 0 and high <= width, (low, high, width)
    expected = {r.precision: r.gpus for r in fit(llama, "rtx3060", mode="training").rows}
    for row in pg.locator("#precisions tbody tr").all():
        gpus = expected[row.get_attribute("data-scheme")]
        assert row.locator("td").nth(5).inner_text() == ("none" if gpus is None else fmt(gpus))
    assert "none" in text_of(pg, "#precisions tbody")  # 8B parameters, 4,096 tokens: too much for 12 GB


def download(pg, button: str) -> bytes:
    with pg.expect_download() as d:
        pg.click(button)
    return Path(d.value.path()).read_bytes()


def test_a_plan_takes_any_context_lives_in_the_address_and_downloads(sized):
    """vLLM, TP 2, an H100, 5,000 tokens × 3: the number input takes a context the slider's powers
    of two cannot and refuses one the API would; the address carries it all (loading it again
    draws the same plan); the plan downloads as JSON and CSV and the chart as SVG and PNG."""
    from paramcount.memory.runtimes import planner

    pg = sized
    llama = paramcount.load("llama-3-8b")
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B")
    wait_memory(pg, llama, "bf16")
    pg.select_option("#gpu", "h100")
    pg.select_option("#runtime", "vllm")
    pg.wait_for_selector('#memory[data-runtime="vllm"]')
    pg.select_option("#tp", "2")
    for bad in ("0", "1.5", str(2**30 + 1)):  # outside the API's bounds (options.context_bounds): not sent
        pg.fill("#context-num", bad)
        assert pg.get_attribute("#context-num", "aria-invalid") == "true", bad
    pg.fill("#context-num", "5000")
    pg.fill("#batch", "3")
    plan = planner(llama, "bf16", "vllm", tp=2, gpu="h100").plan(5000, batch=3)
    wait_text(pg, "#verdict .big", f"{plan.total / 2**30:.2f} GiB")
    assert pg.get_attribute("#context-num", "aria-invalid") == "false"
    assert text_of(pg, "#context-value") == "5,000 tokens"
    shown = {k: text_of(pg, k) for k in ("#verdict", "#serving", "#precisions tbody", "#terms tbody")}
    address = pg.url
    for pair in ("model=meta-llama%2FMeta-Llama-3-8B", "runtime=vllm", "tp=2", "gpu=h100", "context=5000", "batch=3"):
        assert pair in address, (pair, address)

    saved = json.loads(download(pg, "#dl-json"))
    assert saved["address"] == address and saved["model"]["total"] == llama.total
    assert saved["request"]["context"] == 5000 and saved["plan"]["total"] == plan.total
    rows = list(csv.DictReader(io.StringIO(download(pg, "#dl-csv").decode())))
    assert [(r["key"], int(r["bytes"])) for r in rows if not r["part_of"]] == [
        *((t.key, t.bytes) for t in plan.terms),
        ("total", plan.total),
    ]
    assert {r["part_of"] for r in rows} > {""}  # the outside term's parts, each under its term
    import xml.etree.ElementTree as ET

    svg = ET.fromstring(download(pg, "#dl-svg"))
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(svg.findall(".//{http://www.w3.org/2000/svg}polygon")) == len(plan.terms)  # the curve's areas
    assert download(pg, "#dl-png").startswith(b"\x89PNG\r\n\x1a\n")

    pg.goto(address)  # the same plan, from the address alone
    wait_text(pg, "#verdict .big", f"{plan.total / 2**30:.2f} GiB")
    pg.wait_for_selector("#serving:not([hidden])")
    assert {k: text_of(pg, k) for k in shown} == shown
    controls = {c: pg.input_value(c) for c in ("#runtime", "#tp", "#gpu", "#context-num", "#batch")}
    assert controls == {"#runtime": "vllm", "#tp": "2", "#gpu": "h100", "#context-num": "5000", "#batch": "3"}


def test_every_error_dims_and_labels_the_old_results(sized):
    """A junk GGUF file, then a config that is not JSON: each says what is wrong, leaves no
    progress line behind, and dims the previous model's results under a line that names it."""
    pg = sized
    pg.goto(pg.base + "/?model=gpt2")
    wait_text(pg, "#total", fmt(paramcount.load("gpt2").total))
    pg.click("#tab-file")
    junk = {"name": "junk.gguf", "mimeType": "application/octet-stream", "buffer": b"GGUF" + b"\xff" * 60}
    pg.set_input_files("#file", files=[junk])
    pg.wait_for_selector("#error:not([hidden])")
    assert_stale(pg, "openai-community/gpt2")
    assert "reading the header" not in text_of(pg, "#file-status")
    pg.click("#tab-config")
    pg.fill("#config-text", "{not json")
    pg.click("#count-config")
    wait_contains(pg, "#error", "not valid JSON")
    assert_stale(pg, "openai-community/gpt2")


def assert_stale(pg, name: str) -> None:
    assert pg.locator("#loading").is_hidden()
    assert f"still those of {name}" in text_of(pg, "#stale-note")
    for section in ("#overview", "#memory", "#derivation", "#tensors"):
        assert "stale" in pg.locator(section).get_attribute("class"), section
        assert float(pg.eval_on_selector(section, "e => getComputedStyle(e).opacity")) < 0.5, section


def test_a_page_served_beyond_loopback_says_it_is_reachable(browser, live_server):
    """`serve --host 0.0.0.0` keeps its warning on stderr, and the page shows it too."""
    context = browser.new_context(viewport={"width": 390, "height": 800})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT)
    try:
        for base in running("0.0.0.0"):
            pg.goto(base + "/")
            pg.wait_for_selector("#exposed", state="visible")
            assert "This page is reachable from other machines" in text_of(pg, "#exposed")
            assert text_of(pg, ".top .local") == "reachable from other machines"
            ARTIFACTS.mkdir(exist_ok=True)
            pg.screenshot(path=str(ARTIFACTS / "exposed-390.png"))
        pg.goto(live_server + "/")
        expect(pg.locator("#version")).not_to_have_text("", timeout=TIMEOUT)  # /api/info answered
        assert not pg.locator("#exposed").is_visible() and text_of(pg, ".top .local") == "runs locally"
    finally:
        context.close()


# ---- issue 24 on the page: Ollama's own plan beside llama.cpp's, at each width ---------------------


def tiny_llama_gguf(path: Path) -> Path:
    """A 4-block Llama GGUF (the one tests/test_ollama.py works out by hand)."""
    from ..gguf_files import llama_spec, write

    return write(llama_spec("tiny", 4, 256, 8, 2, 512, 1000, context=8192), path)


def test_ollama_says_its_num_gpu_beside_llama_cpps_plan(sized, tmp_path, monkeypatch):
    """A GGUF file dropped on the page, the runtime Ollama, 540 MiB free on an RTX 3060: num_gpu
    and the comparison are the library's (render/ollama.py's for the CLI); a catalog model is
    not offered Ollama (it runs GGUF files)."""
    from paramcount.memory.core.gpus import gpu
    from paramcount.memory.runtimes.ollama import Asked
    from paramcount.memory.runtimes.ollama_vs_llamacpp import plan

    for key in [k for k in os.environ if k.startswith("OLLAMA_")]:
        monkeypatch.delenv(key)
    pg = sized
    pg.goto(pg.base + "/")
    wait_text(pg, "#backbone-total", fmt(paramcount.load("bert-base-chinese").backbone_total))
    assert pg.locator('#runtime option[value="ollama"]').is_disabled()
    path = tiny_llama_gguf(tmp_path / "tiny.gguf")
    pg.click("#tab-file")
    pg.set_input_files("#file", str(path))
    pg.wait_for_selector('#memory[data-runtime="llama.cpp"][data-scheme="stored"]')
    pg.select_option("#gpu", "rtx3060")
    pg.select_option("#runtime", "ollama")
    pg.wait_for_selector('#memory[data-runtime="ollama"]')
    assert pg.locator("#num-gpu").is_visible() and pg.locator("#tp").is_hidden()
    pg.fill("#free-vram", "540MiB")
    pg.press("#free-vram", "Enter")
    o = plan(paramcount.load(path), gpu("rtx3060"), Asked(), free=540 << 20)
    assert 0 < o.num_gpu < o.layers_model
    wait_text(pg, "#num-gpu-said", fmt(o.num_gpu))
    line = text_of(pg, "#ollama p")
    assert line.startswith("Ollama v0.12.10: num_gpu") and f"{o.num_gpu} of {o.layers_model} layers" in line, line
    rows = pg.locator("#ollama-compared tbody tr")
    assert [rows.nth(i).get_attribute("data-term") for i in range(rows.count())] == [r["term"] for r in o.compared]
    assert text_of(pg, "#verdict .big") == f"{o.plan.total / 2**30:.2f} GiB"
    assert f"{o.free / 2**30:.2f} GiB free on GeForce RTX 3060" in text_of(pg, "#verdict")  # not the card's size
    assert pg.locator("#memplot").is_hidden() and "free_vram=540MiB" in pg.url and "runtime=ollama" in pg.url
    box = pg.locator("#ollama").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= pg.viewport_size["width"]  # within the page at each width
    pg.fill("#num-gpu", "1")
    pg.press("#num-gpu", "Enter")
    wait_text(pg, "#num-gpu-said", "1")
    assert "num_gpu=1" in pg.url


def test_llama_cpp_placement_lives_in_the_address_and_says_each_device(sized):
    """-ngl 20 -ts 1,1 -ot on Llama-3-8B at Q4_K_M from the address alone: the controls show
    them, the plan and each device's buffers are the library's (the options the CLI builds);
    a new -ngl replans and goes into the address; a bad one is said beside the planner."""
    from paramcount.cli import placement_options
    from paramcount.memory.runtimes import inference

    pg = sized
    llama = paramcount.load("llama-3-8b")
    ot = "blk\\.3\\.ffn_up=CPU"
    query = "&".join(["model=meta-llama/Meta-Llama-3-8B", "scheme=q4_k_m", "gpu=rtx3060", "runtime=llama.cpp",
                      "ngl=20", "ts=1,1", "ot=" + ot.replace("\\", "%5C")])  # fmt: skip
    pg.goto(pg.base + "/?" + query)

    def planned(**flags):
        return inference(llama, "q4_k_m", 4096, runtime="llama.cpp", **placement_options(flags))

    plan = planned(gpu_layers="20", tensor_split="1,1", overrides=[("ot", ot)])
    wait_text(pg, "#verdict .big", f"{plan.total / 2**30:.2f} GiB")
    controls = {c: pg.input_value(c) for c in ("#runtime", "#ngl", "#ts", "#ot", "#ncmoe")}
    assert controls == {"#runtime": "llama.cpp", "#ngl": "20", "#ts": "1,1", "#ot": ot, "#ncmoe": ""}
    devices = " · ".join(f"{d} {b / 2**30:.2f} GiB" for d, b in plan.settings["devices"].items())
    assert text_of(pg, "#devices") == f"{devices} ({plan.settings['arguments']})"
    box = pg.locator("#ot").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= pg.viewport_size["width"]  # within the page at each width
    pg.fill("#ngl", "8")
    pg.press("#ngl", "Enter")
    fewer = planned(gpu_layers="8", tensor_split="1,1", overrides=[("ot", ot)])
    wait_text(pg, "#verdict .big", f"{fewer.total / 2**30:.2f} GiB")
    assert "ngl=8" in pg.url and "ts=1%2C1" in pg.url and "runtime=llama.cpp" in pg.url
    pg.fill("#ngl", "most")
    pg.press("#ngl", "Enter")
    wait_contains(pg, "#memory-error", "not 'most'")


def test_an_ollama_name_typed_in_the_search_counts_plans_and_stays_in_the_address(sized, home, monkeypatch):
    """``ollama:tiny:1b`` typed in the search box: the count is the library's, Ollama is offered
    (a GGUF file), its num_gpu is the library's, and the address brings it all back."""
    from paramcount.memory.core.gpus import gpu
    from paramcount.memory.runtimes.ollama import Asked
    from paramcount.memory.runtimes.ollama_vs_llamacpp import plan

    from .test_api import ollama_store

    for key in [k for k in os.environ if k.startswith("OLLAMA_") and k != "OLLAMA_MODELS"]:
        monkeypatch.delenv(key)
    ollama_store(home)
    pg = sized
    pg.goto(pg.base + "/?gpu=rtx3060")
    wait_text(pg, "#backbone-total", fmt(paramcount.load("bert-base-chinese").backbone_total))
    pg.fill("#search", "ollama:tiny:1b")
    pg.keyboard.press("Enter")
    lib = paramcount.load("ollama:tiny:1b")
    wait_text(pg, "#total", fmt(lib.total))
    pg.wait_for_selector('#memory[data-runtime="llama.cpp"]')
    assert not pg.locator('#runtime option[value="ollama"]').is_disabled()
    pg.select_option("#runtime", "ollama")
    o = plan(lib, gpu("rtx3060"), Asked())
    wait_text(pg, "#num-gpu-said", fmt(o.num_gpu))
    assert "model=ollama%3Atiny%3A1b" in pg.url and "runtime=ollama" in pg.url
    address = pg.url
    pg.goto(address)
    wait_text(pg, "#num-gpu-said", fmt(o.num_gpu))
    assert pg.input_value("#search") == "ollama:tiny:1b" and pg.input_value("#runtime") == "ollama"


# ---- issue 33 items 2 and 10: the page's recommendation, schemes per runtime, and its fixes; at each width


def test_vllm_after_a_gguf_type_plans_its_default_and_says_so(sized):
    """q4_k_m under llama.cpp, then vLLM: the page plans vLLM's default (bf16), says so, and offers
    vLLM's schemes alone; transformers offers no GGUF type either, llama.cpp no bitsandbytes."""
    from paramcount.memory.runtimes import inference
    from paramcount.web.planner import runtime_schemes

    pg = sized
    llama = paramcount.load("llama-3-8b")
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B&gpu=h100&runtime=llama.cpp&scheme=q4_k_m")
    wait_memory(pg, llama, "q4_k_m")
    pg.select_option("#runtime", "vllm")
    pg.wait_for_selector('#memory[data-runtime="vllm"][data-scheme="bf16"]')
    plan = inference(llama, "bf16", 4096, runtime="vllm", gpu="h100")
    wait_text(pg, "#verdict .big", f"{plan.total / 2**30:.2f} GiB")  # drawn, not blank
    assert text_of(pg, "#scheme-note") == "q4_k_m is not a scheme vLLM loads: planned at bf16, its default"
    offered = runtime_schemes()
    options = lambda: pg.eval_on_selector_all("#scheme option", "os => os.map(o => o.value)")  # noqa: E731
    assert set(options()) == set(offered["vllm"]) - {"stored"} and pg.input_value("#scheme") == "bf16"
    pg.select_option("#runtime", "transformers")
    pg.wait_for_selector('#memory[data-runtime="transformers"][data-scheme="bf16"]')
    assert "q4_k_m" not in options() and {"bnb-int8", "nf4", "fp4"} <= set(options())
    pg.select_option("#runtime", "llama.cpp")
    pg.wait_for_selector('#memory[data-runtime="llama.cpp"]')
    assert "q4_k_m" in options() and "nf4" not in options()
    assert text_of(pg, "#memory-error") == ""


def test_the_headings_follow_the_gpu_chosen(sized):
    pg = sized
    text_of = lambda pg, sel: pg.locator(sel).text_content().strip()  # noqa: E731  (as written, not as styled)
    llama = paramcount.load("llama-3-8b")
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B&gpu=rtx4090")
    wait_memory(pg, llama, "bf16")
    assert "GeForce RTX 4090" in text_of(pg, "#precisions-title")
    pg.select_option("#gpu", "rtx3060")
    assert "GeForce RTX 3060" in text_of(pg, "#precisions-title")  # at once, before the plan answers
    wait_contains(pg, "#verdict", "GeForce RTX 3060")
    for heading in ("#precisions-title", "#advice-title"):
        wait_contains(pg, heading, "GeForce RTX 3060")
        assert "4090" not in text_of(pg, heading)


def test_ollama_fills_or_hides_each_section_at_the_modelfiles_context(sized, home, monkeypatch):
    """ollama:tiny:1b, whose modelfile says num_ctx 8192: llama.cpp's plan is at 8,192 tokens (as
    `paramcount memory ollama:tiny:1b` plans it), and Ollama's view shows no empty section."""
    from paramcount.memory.runtimes import inference

    from .test_api import ollama_store

    for key in [k for k in os.environ if k.startswith("OLLAMA_") and k != "OLLAMA_MODELS"]:
        monkeypatch.delenv(key)
    ollama_store(home, params={"num_ctx": 8192})
    pg = sized
    pg.goto(pg.base + "/?model=ollama:tiny:1b&gpu=rtx3060")
    lib = paramcount.load("ollama:tiny:1b")
    pg.wait_for_selector('#memory[data-runtime="llama.cpp"]')
    plan = inference(lib, "stored", 8192, runtime="llama.cpp")
    wait_text(pg, "#verdict .big", f"{plan.total / 2**30:.2f} GiB")
    assert text_of(pg, "#context-value") == "8,192 tokens"
    pg.select_option("#runtime", "ollama")
    pg.wait_for_selector('#memory[data-runtime="ollama"]')
    pg.wait_for_selector("#ollama:not([hidden])")
    for part in ("#plot-part", "#precisions-part", "#memory-grid"):
        assert pg.locator(part).is_hidden(), part
    pg.wait_for_selector("#advice-list li[data-runtime]")  # the recommendations answer beside the plan, not before it
    for part in ("#verdict", "#ollama", "#terms tbody", "#advice-list"):
        assert text_of(pg, part), part  # what is shown is filled
    assert pg.locator('#advice-list li[data-runtime="ollama"]').count() == 1
    pg.goto(pg.url)  # the address alone: Ollama's plan of the stored file, no scheme note
    pg.wait_for_selector('#memory[data-runtime="ollama"][data-scheme="stored"]')
    assert pg.locator("#scheme-note").is_hidden() and pg.input_value("#scheme") == "stored"


X_TICKS = """() => [...document.querySelectorAll('#memplot text.xtick')].map((t) => {
  const b = t.getBBox();
  return [t.textContent, b.x, b.x + b.width];
})"""


def test_axis_labels_never_collide_and_the_parameter_column_stays_on_screen(sized):
    """Qwen3-30B-A3B's curve ends at its 40,960-token limit: the labels kept do not overlap ("32K40K")
    and the limit's is one of them; each derivation table's parameter column is inside the screen."""
    pg = sized
    qwen = paramcount.load("Qwen/Qwen3-30B-A3B")
    pg.goto(pg.base + "/?model=Qwen/Qwen3-30B-A3B&gpu=h100")
    wait_memory(pg, qwen, "bf16")
    ticks = pg.evaluate(X_TICKS)
    assert "40K" in [t[0] for t in ticks] and len(ticks) >= 3, ticks
    spans = sorted((a, b) for _, a, b in ticks)
    assert all(b1 + 2 <= a2 for (_, b1), (a2, _) in itertools.pairwise(spans)), ticks
    pg.wait_for_selector("#derivation-body td.count")
    width = pg.viewport_size["width"]
    edges = "cs => cs.map(c => { const r = c.getBoundingClientRect(); return [r.left, r.right]; })"
    cells = pg.eval_on_selector_all("#derivation-body td.count", edges)
    assert cells and all(left >= 0 and right <= width for left, right in cells), (width, cells)
    assert pg.evaluate("document.documentElement.scrollWidth") <= width


def test_a_hand_edited_address_says_one_plain_line(sized):
    pg = sized
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B&batch=many")
    wait_contains(pg, "#memory-error", "batch: not a whole number")
    assert text_of(pg, "#memory-error") == "batch: not a whole numberbatch"  # the line, then its field's tag
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B&runtime=vllm2")
    wait_contains(pg, "#memory-error", "runtime: one of transformers, llama.cpp, vllm, ollama or mlx")
    assert "Input should" not in text_of(pg, "#memory-error")


def test_one_recommendation_per_runtime_with_a_command_to_copy(sized):
    """Llama-3-8B on an RTX 3060: one line per runtime, as advise.recommend says it (the CLI's fit),
    each command whole on one line, and the copy button puts exactly it on the clipboard (and, where
    the Clipboard API is absent, in the page's textarea, copied by execCommand)."""
    from paramcount.advise import recommend

    pg = sized
    recs = recommend(paramcount.load("llama-3-8b"), "rtx3060")
    pg.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=pg.base)
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B&gpu=rtx3060")
    pg.wait_for_selector('#advice[data-gpu="rtx3060"][data-model="meta-llama/Meta-Llama-3-8B"]')
    lines = pg.locator("#advice-list li")
    assert [lines.nth(i).get_attribute("data-runtime") for i in range(lines.count())] == [r.runtime for r in recs]
    for r in recs:
        li = pg.locator(f'#advice-list li[data-runtime="{r.runtime}"]')
        said = li.locator(".said").inner_text()
        if not r.fits:
            assert r.why in said and li.locator(".cmd").count() == 0
            continue
        assert f"{r.scheme} at {r.context:,} tokens: {r.gpu_bytes / 2**30:.2f} GiB GPU" in said, said
        cmd = li.locator("code.cmd")
        assert cmd.text_content() == r.command
        box = cmd.evaluate(
            "c => [c.getClientRects().length, c.scrollHeight, c.clientHeight, c.getBoundingClientRect().right]"
        )
        assert box[0] == 1 and box[1] <= box[2] + 1, box  # one line, never wrapped
        assert box[3] <= pg.viewport_size["width"], box  # scrolled within its card, never off the page
        li.locator("button.copy").click()
        expect(li.locator("button.copy")).to_have_text("copied")
        assert pg.evaluate("navigator.clipboard.readText()") == r.command
    assert "GB " not in text_of(pg, "#precisions") and text_of(pg, "#terms-unit") == "GiB"  # one unit: the card's
    pg.evaluate("() => Object.defineProperty(navigator, 'clipboard', { value: undefined })")
    first = next(r for r in recs if r.fits)
    button = pg.locator(f'#advice-list li[data-runtime="{first.runtime}"] button.copy')
    button.click()
    expect(button).to_have_text("copied")
    assert pg.input_value("#clip") == first.command
    other = pg.context.new_page()  # the system clipboard, read where the Clipboard API is still there
    other.goto(pg.base + "/static/favicon.svg")
    assert other.evaluate("navigator.clipboard.readText()") == first.command != recs[-1].command
    other.close()


# ---- issue 33 (host RAM, vLLM's version and CPUs, MLX) and 34 (speed on the page); at each width

CONTROLS_PROBE = """(ids) => {
  const doc = document.documentElement;
  const width = doc.clientWidth;
  return {
    scroll: [doc.scrollWidth, doc.clientWidth],
    off: ids.filter((id) => {
      const el = document.getElementById(id);
      const r = el.getBoundingClientRect();
      return el.closest('[hidden]') || !r.width || r.left < 0 || r.right > width;
    }),
  };
}"""

SPEED_PROBE = """() => {
  const svg = document.querySelector('#speedplot');
  const card = svg.closest('.card').getBoundingClientRect(), box = svg.getBoundingClientRect();
  const spans = (cls) => [...svg.querySelectorAll('text.' + cls)].map((t) => {
    const b = t.getBBox();
    return [t.textContent, b.x, b.x + b.width, b.y, b.y + b.height];
  });
  return {
    inside: box.left >= card.left - 1 && box.right <= card.right + 1 && box.width > 0,
    x: spans('xtick'), y: spans('ytick'),
    series: [...svg.querySelectorAll('polyline[data-series]')].map((p) => [p.dataset.series, p.points.length]),
    figures: [...document.querySelectorAll('.speed-figure')].map((f) => {
      const r = f.getBoundingClientRect();
      return [f.dataset.phase, r.left >= card.left - 1 && r.right <= card.right + 1];
    }),
  };
}"""


def layout_ok(pg, ids: list[str]) -> None:
    probe = pg.evaluate(CONTROLS_PROBE, ids)
    assert probe["scroll"][0] <= probe["scroll"][1], probe  # nothing off-screen sideways
    assert not probe["off"], probe


def test_host_ram_is_held_to_the_host_part_and_the_recommendations(sized):
    """RAM typed beside the GPU: llama.cpp's host part at -ngl 16 against it (2GB: no; the
    recommendations asked with it, as `fit --ram`), kept in the address; a bad size is one line."""
    from paramcount.advise import recommend
    from paramcount.memory.fit import host_bytes
    from paramcount.memory.runtimes import inference

    pg = sized
    llama = paramcount.load("llama-3-8b")
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B&runtime=llama.cpp&scheme=q4_k_m&ngl=16&gpu=rtx4090")
    wait_memory(pg, llama, "q4_k_m")
    layout_ok(pg, ["ram", "gpu", "batch"])
    pg.fill("#ram", "2GB")
    pg.press("#ram", "Enter")
    plan = inference(llama, "q4_k_m", 4096, runtime="llama.cpp", gpu_layers=16)
    held = host_bytes(plan)
    wait_text(pg, "#ram-check", f"host part {held / 2**30:.2f} GiB does not fit in {2e9 / 2**30:.2f} GiB of RAM (2GB)")
    assert held > 2e9 and text_of(pg, "#verdict .tag") == "does not fit" and "ram=2GB" in pg.url
    recs = recommend(llama, "rtx4090", ram=2_000_000_000)
    pg.wait_for_selector('#advice[data-gpu="rtx4090"]')
    for r in (r for r in recs if r.fits):
        said = pg.locator(f'#advice-list li[data-runtime="{r.runtime}"] .said')
        expect(said).to_contain_text(f"{r.scheme} at {r.context:,} tokens")
    layout_ok(pg, ["ram", "ram-check"])
    pg.fill("#ram", "lots")
    pg.press("#ram", "Enter")
    wait_contains(pg, "#memory-error", "ram: expected a size like 24GB or 20GiB, got 'lots'")
    assert text_of(pg, "#memory-error") == "ram: expected a size like 24GB or 20GiB, got 'lots'ram"  # its field's tag


def test_vllm_version_vllm_on_cpus_and_mlx_plan_as_the_cli(sized):
    """--vllm-version 0.6 from the address, then --device cpu with 64GB of RAM, then MLX at
    mlx-4bit, group 32, 4-bit KV on an M2 Max: each figure the library's, each control on screen."""
    from paramcount.memory.core.gpus import gpu
    from paramcount.memory.runtimes import inference, planner

    pg = sized
    llama = paramcount.load("llama-3-8b")
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B&runtime=vllm&vllm=0.6&gpu=h100")
    old = planner(llama, "bf16", "vllm", vllm_version="0.6", gpu="h100").serving(gpu("h100").memory, 4096)
    wait_text(pg, "#kv-tokens", fmt(old["kv_tokens"]))
    assert pg.input_value("#vllm-version") == "0.6" and pg.locator("#kv-space").is_hidden()
    layout_ok(pg, ["vllm-version", "device", "tp", "utilization"])
    pg.fill("#ram", "64GB")
    pg.press("#ram", "Enter")
    pg.select_option("#device", "cpu")
    cpu = inference(llama, "bf16", 4096, runtime="vllm", device="cpu", ram=64_000_000_000, vllm_version="0.6")
    wait_text(pg, "#verdict .big", f"{cpu.total / 2**30:.2f} GiB")
    assert text_of(pg, "#verdict .tag") == "fits in RAM" and text_of(pg, "#serving").startswith("vLLM on CPUs")
    assert pg.locator("#precisions-part").is_hidden()  # a fit is on a GPU
    wait_contains(pg, "#speed-error", "vLLM's speed is modelled on GPUs only")  # the CLI's refusal, not a blank
    layout_ok(pg, ["device", "kv-space", "ram"])
    assert "device=cpu" in pg.url and "vllm=0.6" in pg.url
    pg.select_option("#gpu", "m2-max-64gb")
    pg.select_option("#runtime", "mlx")
    pg.wait_for_selector('#memory[data-runtime="mlx"]')
    pg.select_option("#scheme", "mlx-4bit")
    pg.wait_for_selector('#memory[data-scheme="mlx-4bit"]')
    pg.select_option("#group-size", "32")
    pg.select_option("#kv-bits", "4")
    expect(pg).to_have_url(re.compile("group=32.*kvbits=4"), timeout=TIMEOUT)  # written once that plan is drawn
    mlx = inference(llama, "mlx-4bit", 4096, runtime="mlx", group_size=32, kv_bits=4)
    assert text_of(pg, "#verdict .big") == f"{mlx.total / 2**30:.2f} GiB"
    layout_ok(pg, ["group-size", "kv-bits", "runtime", "scheme"])
    pg.select_option("#scheme", "bf16")  # a float scheme has no group: the control goes
    pg.wait_for_selector('#memory[data-scheme="bf16"]')
    assert pg.locator("#group-size").is_hidden()


def test_speed_against_context_says_estimates_and_bounds(sized):
    """Llama-3-8B at Q4_K_M on an RTX 4090 under llama.cpp: decode, prefill and TTFT as
    `paramcount speed` predicts them, the estimate with its expected error and the bound as a bound;
    the curve one point per depth, its labels apart, inside its card. transformers has only the
    bound, drawn alone; MLX on an NVIDIA card is one plain line."""
    from paramcount.memory.speed import speed

    pg = sized
    llama = paramcount.load("llama-3-8b")
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B&runtime=llama.cpp&scheme=q4_k_m&gpu=rtx4090")
    pg.wait_for_selector('#speed-part[data-state="drawn"][data-scheme="q4_k_m"]')
    s = speed(llama, ["RTX 4090"], "llama.cpp", "q4_k_m", 4096, 512, 1)
    decode = pg.locator('.speed-figure[data-phase="decode"]')
    assert decode.locator(".speed-value").inner_text() == f"{s.decode.tokens_per_s:,.1f} tok/s"
    e = s.decode.error
    assert decode.locator(".speed-sub").inner_text() == (
        f"estimate ±{round(e['median'] * 100)}% (p90 {round(e['p90'] * 100)}%, {e['rows']} runs)"
    )
    bound = decode.locator(".speed-bound").inner_text()
    assert bound.startswith(f"upper bound {s.decode.bound_tokens_per_s:,.1f} tok/s"), bound
    ttft = pg.locator('.speed-figure[data-phase="ttft"] .speed-value').inner_text()
    assert ttft == f"{s.ttft.seconds * 1e3:,.0f} ms", ttft
    least = pg.locator('.speed-figure[data-phase="ttft"] .speed-bound').inner_text()
    assert least.startswith("no less than "), least  # a time's bound is the shortest it can take
    probe = pg.evaluate(SPEED_PROBE)
    assert probe["inside"] and all(ok for _, ok in probe["figures"]) and len(probe["figures"]) == 3, probe
    assert dict(probe["series"]) == {"estimate": 7, "bound": 7}, probe  # 128 … 8,192 tokens
    for spans in (sorted(probe["x"], key=lambda t: t[1]), sorted(probe["y"], key=lambda t: t[3])):
        assert len(spans) >= 3, probe
    xs = sorted((a, b) for _, a, b, _, _ in probe["x"])
    assert all(b1 + 2 <= a2 for (_, b1), (a2, _) in itertools.pairwise(xs)), probe
    ys = sorted((a, b) for *_, a, b in probe["y"])
    assert all(b1 <= a2 for (_, b1), (a2, _) in itertools.pairwise(ys)), probe
    layout_ok(pg, ["speedplot", "speed-figures"])
    pg.select_option("#runtime", "transformers")
    pg.wait_for_selector('#speed-part[data-state="drawn"][data-runtime="transformers"]')
    assert text_of(pg, '.speed-figure[data-phase="decode"] .speed-value') == "no estimate"
    assert dict(pg.evaluate(SPEED_PROBE)["series"]) == {"bound": 7}  # the bound alone, labelled as such
    assert "upper bound (dashed)" in text_of(pg, "#speed-legend") and "estimate" not in text_of(pg, "#speed-legend")
    pg.select_option("#runtime", "mlx")
    pg.wait_for_selector('#speed-part[data-state="error"]')
    assert text_of(pg, "#speed-error") == "runtime: MLX runs on Apple silicon, not NVIDIA GeForce RTX 4090runtime"


def test_the_prompt_sets_prefill_and_ttft_and_lives_in_the_address(sized):
    """The prompt field is `speed --prompt`: 2,048 tokens give the library's prefill and TTFT for
    that prompt (decode stays the KV depth's), the field stays on screen and in the address, an
    address with it draws it again, and a bad value is one line under Speed, the plan kept."""
    from paramcount.memory.speed import speed

    pg = sized
    llama = paramcount.load("llama-3-8b")
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B&runtime=llama.cpp&scheme=q4_k_m&gpu=rtx4090")
    pg.wait_for_selector('#speed-part[data-state="drawn"][data-scheme="q4_k_m"]')
    assert pg.input_value("#prompt") == "512" and "prompt=" not in pg.url  # the CLI's default, unsaid
    layout_ok(pg, ["prompt", "speed-figures"])
    pg.fill("#prompt", "2048")
    pg.press("#prompt", "Enter")
    s = speed(llama, ["RTX 4090"], "llama.cpp", "q4_k_m", 4096, 2048, 1)
    wait_text(pg, '.speed-figure[data-phase="prefill"] .stat-label', "prefill of 2,048 tokens")
    assert text_of(pg, '.speed-figure[data-phase="ttft"] .speed-value') == f"{s.ttft.seconds * 1e3:,.0f} ms"
    prefill = text_of(pg, '.speed-figure[data-phase="prefill"] .speed-value')
    assert prefill == f"{s.prefill.tokens_per_s:,.1f} tok/s"
    assert text_of(pg, '.speed-figure[data-phase="decode"] .speed-value') == f"{s.decode.tokens_per_s:,.1f} tok/s"
    expect(pg).to_have_url(re.compile("prompt=2048"), timeout=TIMEOUT)
    pg.goto(pg.url)  # the address alone
    wait_text(pg, '.speed-figure[data-phase="prefill"] .stat-label', "prefill of 2,048 tokens")
    assert pg.input_value("#prompt") == "2048"
    pg.fill("#prompt", "0")
    pg.press("#prompt", "Enter")
    pg.wait_for_selector('#speed-part[data-state="error"]')
    assert text_of(pg, "#speed-error") == "prompt: at least 1prompt"  # the line, then its field's tag
    assert pg.get_attribute("#prompt", "aria-invalid") == "true" and text_of(pg, "#verdict .tag")
    assert pg.locator("#speedplot").is_hidden() and not pg.locator(".speed-figure").count()
    layout_ok(pg, ["prompt", "speed-error"])
    pg.goto(pg.base + "/?model=meta-llama/Meta-Llama-3-8B&runtime=llama.cpp&scheme=q4_k_m&prompt=many")
    wait_text(pg, "#speed-error", "prompt: not a whole numberprompt")
