"""The llama.cpp compute buffer of three files made apart from the fixtures (issue 35).

Oracle: tests/fixtures/llamacpp_unseen35.json, transcribed from the configs and the figures
recorded for issue 35: random-weight Granite 4.0-H, LFM2 and Llama models made from these
configs, converted by llama.cpp's own convert_hf_to_gguf.py (F16, Q8_0, and Q4_K_M quantised
from F16) and loaded by llama.cpp (v0.5.0 and ggml-org/llama.cpp@0c1e57098, byte-identical) on
its CPU backend; ``compute_bytes`` is the bytes behind its "CPU compute buffer size" line, the
same for the three file types. The plan is made from the config: the file type does not change
the compute buffer, and the compute term reads only the widths a config and its converted file
share (n_embd, heads, the feed-forward, n_vocab, the layer kinds).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import paramcount
from paramcount.cli import main
from paramcount.memory import inference
from paramcount.memory.core.terms import Term

DOC = json.loads((Path(__file__).parent / "fixtures" / "llamacpp_unseen35.json").read_text())
CASES = DOC["cases"]

# rows the plan holds within 1%, and for the others the band of today's error (a known miss,
# kept from growing; see the docstring of test_open_rows_stay_where_they_are)
HELD = {("lfm2", 4096, 1, "on"), ("lfm2", 4096, 4, "on"), ("lfm2", 512, 4, "off")}
OPEN = {
    ("granitemoehybrid", 4096, 1, "on"): (-0.10, -0.09),
    ("granitemoehybrid", 4096, 4, "on"): (-0.10, -0.09),
    ("lfm2", 512, 1, "on"): (-0.12, -0.11),
    ("llama", 512, 4, "off"): (-0.12, -0.11),
}


def key(case: dict) -> tuple[str, int, int, str]:
    return case["config"], case["context"], case["parallel"], case["flash_attn"]


def compute(case: dict) -> Term:
    model = paramcount.load(DOC["configs"][case["config"]])
    plan = inference(
        model, context=case["context"], batch=case["parallel"], runtime="llama.cpp", ubatch=512,
        flash_attn=case["flash_attn"], device="cpu", cpu="none",
    )  # fmt: skip
    return plan.term("compute")


def test_every_row_is_either_held_or_open():
    assert {key(c) for c in CASES} == HELD | set(OPEN)


@pytest.mark.parametrize("case", [c for c in CASES if key(c) in HELD], ids=lambda c: "-".join(map(str, key(c))))
def test_compute_within_one_percent(case):
    """LFM2, whose last layer attends: the logits lie over inp_embd and the hidden state only
    (the last layer's input lands in the attention's freed block), at 4,096 cells with one and
    four sequences and at 512 cells × 4 without flash attention: 37,752,832 B planned,
    37,750,784 logged (+0.005%; 39,849,984 before, +5.6%)."""
    term = compute(case)
    assert abs(term.bytes / case["compute_bytes"] - 1) <= 0.01
    assert term.estimate


@pytest.mark.parametrize("case", [c for c in CASES if key(c) in OPEN], ids=lambda c: "-".join(map(str, key(c))))
def test_open_rows_stay_where_they_are(case):
    """Not yet held (issue 35): Granite 4.0-H at 4,096 cells (−9.9%: what lies under its logits
    is more than inp_embd, the hidden state, the last input and the shared expert's input),
    LFM2 at 512 cells with one sequence (−11.1%: the 0.5 MiB f16 mask's freed block is too small
    for what the larger masks' blocks take in), Llama at 512 cells × 4 sequences without flash
    attention (−11.8%). The plan stays an estimate, under by the error recorded here.

    What the logged figures decompose into (arithmetic on the fixture, not yet a rule): Llama's
    is, to the byte, the logits, every graph input (token ids, positions and out_ids, 2,048 B
    each; k_idxs 4,096; the f32 mask 1,048,576; the transposed V's v_idxs 524,288) and five
    n_embd-wide blocks; Granite's the logits, its f16 mask and three n_embd blocks plus 12,320 B;
    LFM2's at 512 × 1 the logits, its mask and four n_embd blocks plus 14,368 B."""
    low, high = OPEN[key(case)]
    term = compute(case)
    assert low <= term.bytes / case["compute_bytes"] - 1 <= high
    assert term.estimate


def test_the_cli_gives_the_same_compute_term(tmp_path, capsys):
    """``paramcount memory CONFIG --runtime llama.cpp ... --json``: the compute term above."""
    case = next(c for c in CASES if key(c) == ("lfm2", 4096, 1, "on"))
    folder = tmp_path / "lfm2"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(DOC["configs"]["lfm2"]))
    argv = ["memory", str(folder / "config.json"), "--runtime", "llama.cpp", "--context", "4096", "--parallel", "1"]
    argv += ["--flash-attn", "on", "--ubatch", "512", "--device", "cpu", "--cpu-features", "none", "--json"]
    assert main(argv) == 0
    terms = {t["key"]: t for t in json.loads(capsys.readouterr().out)["terms"]}
    assert terms["compute"]["bytes"] == compute(case).bytes
    assert terms["compute"]["estimate"] is True
