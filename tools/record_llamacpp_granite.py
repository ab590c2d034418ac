"""Record llama.cpp's CPU compute buffer for Granite 4.0-H (granitehybrid) files, as a held-out
fixture for the replay of its graph (``paramcount.memory.runtimes.llamacpp.replay``), and
ggml-alloc's log of one prompt graph, allocation by allocation, for the trace test.

Not part of CI. Needs llama-cpp-python 0.3.36's Python package with ``LLAMA_CPP_LIB_PATH``
pointing at a CPU build of its vendored llama.cpp (libllama 0.5.0) with ``#define
GGML_ALLOCATOR_DEBUG`` at the top of ``ggml/src/ggml-alloc.c`` (tools/record_llamacpp_landing.py
loads the files the same way, n_batch 2,048, ``kv_unified`` off, one thread):

    python tools/record_llamacpp_granite.py

Specs: issue 35's Granite file (tests/fixtures/llamacpp_unseen35.json) and Granite files of
other widths and layer patterns made here (:func:`granite_spec`): one with rotary positions, the
muP multipliers (embedding, residual, logit, attention scale), one routed expert per token and
a Mamba last layer; one without experts (a dense feed-forward). Output:
tests/fixtures/llamacpp_granite.json (``compute_bytes``: the top of the largest ``max_size``
line, the "CPU compute buffer size") and ``traces``: one prompt graph of each file
(:data:`TRACED`), [kind, offset, bytes] in log order.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

from tests.gguf_files import write  # noqa: E402

from record_llamacpp_landing import CHILD  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "llamacpp_granite.json"
UNSEEN = json.loads((ROOT / "tests" / "fixtures" / "llamacpp_unseen35.json").read_text())["specs"]


def granite_spec(name: str, hidden: int, pattern: str, heads: int, kv: int, ffn: int, experts: tuple[int, int, int],
                 ssm: tuple[int, int, int], vocab: int, extra: dict | None = None) -> dict:  # fmt: skip
    """A granitehybrid GGUF spec as convert_hf_to_gguf.py lays one out: ``pattern`` one letter a
    layer (m: Mamba-2, a: attention); ``experts`` (n_expert, n_expert_used, n_ff_shexp), n_expert 0
    for a dense feed-forward of ``ffn``; ``ssm`` (d_state, n_group, n_head), d_inner = 2 · hidden."""
    n_exp, used, shexp = experts
    d_state, groups, n_head = ssm
    d_inner, hd = 2 * hidden, hidden // heads
    xbc = d_inner + 2 * groups * d_state
    meta = {"block_count": len(pattern), "context_length": 16384, "embedding_length": hidden,
            "feed_forward_length": ffn, "attention.head_count": heads,
            "attention.head_count_kv": [kv if c == "a" else 0 for c in pattern],
            "attention.layer_norm_rms_epsilon": 1e-6, "vocab_size": vocab, "rope.dimension_count": hd,
            "ssm.conv_kernel": 4, "ssm.state_size": d_state, "ssm.group_count": groups,
            "ssm.inner_size": d_inner, "ssm.time_step_rank": n_head, **(extra or {})}  # fmt: skip
    if n_exp:
        meta |= {"expert_count": n_exp, "expert_used_count": used, "expert_shared_feed_forward_length": shexp}
    tensors = [["token_embd.weight", [vocab, hidden], "F16"]]
    for il, c in enumerate(pattern):
        b = f"blk.{il}."
        rows = [["attn_norm.weight", [hidden]], ["ffn_norm.weight", [hidden]]]
        if c == "m":
            rows += [["ssm_in.weight", [d_inner + xbc + n_head, hidden]], ["ssm_conv1d.weight", [xbc, 4]],
                     ["ssm_conv1d.bias", [xbc]], ["ssm_dt.bias", [n_head]], ["ssm_a", [n_head, 1]],
                     ["ssm_d", [n_head, 1]], ["ssm_norm.weight", [groups, d_inner // groups]],
                     ["ssm_out.weight", [hidden, d_inner]]]  # fmt: skip
        else:
            rows += [["attn_q.weight", [heads * hd, hidden]], ["attn_k.weight", [kv * hd, hidden]],
                     ["attn_v.weight", [kv * hd, hidden]], ["attn_output.weight", [hidden, heads * hd]]]  # fmt: skip
        if n_exp:
            rows += [
                ["ffn_gate_inp.weight", [n_exp, hidden]],
                ["ffn_gate_exps.weight", [n_exp, ffn, hidden]],
                ["ffn_up_exps.weight", [n_exp, ffn, hidden]],
                ["ffn_down_exps.weight", [n_exp, hidden, ffn]],
            ]
            if shexp:
                rows += [["ffn_gate_shexp.weight", [shexp, hidden]], ["ffn_up_shexp.weight", [shexp, hidden]],
                         ["ffn_down_shexp.weight", [hidden, shexp]]]  # fmt: skip
        else:
            rows += [["ffn_gate.weight", [ffn, hidden]], ["ffn_up.weight", [ffn, hidden]],
                     ["ffn_down.weight", [hidden, ffn]]]  # fmt: skip
        for n, shape in rows:
            f32 = n.endswith(("norm.weight", "bias", "ssm_a", "ssm_d", "conv1d.weight", "gate_inp.weight"))
            tensors.append([b + n, shape, "F32" if f32 else "F16"])
    tensors.append(["output_norm.weight", [hidden], "F32"])
    return {"name": name, "arch": "granitehybrid", "vocab": vocab, "meta": meta, "tensors": tensors}


MUP = {"rope.scaling.finetuned": True, "embedding_scale": 12.0, "residual_scale": 0.22, "logit_scale": 6.0,
       "attention.scale": 0.0078125}  # fmt: skip
SPECS = {
    "granitemoehybrid": UNSEEN["granitemoehybrid"],
    "granite-mup": granite_spec("granite-mup", 512, "ammmam", 8, 2, 384, (4, 1, 768), (64, 2, 16), 8192, MUP),
    "granite-dense": granite_spec(
        "granite-dense", 768, "mamm", 12, 4, 1536, (0, 0, 0), (128, 1, 24), 12288, {"rope.scaling.finetuned": False}
    ),
}
# (context per sequence, sequences, n_ubatch, flash attention)
SETTINGS = {
    "granitemoehybrid": [(3072, 1, 512, "on"), (12288, 1, 512, "on"), (1024, 2, 512, "off"), (2048, 3, 512, "on"),
                         (4096, 1, 256, "on"), (2048, 1, 1024, "off"), (8192, 2, 128, "on")],
    "granite-mup": [(512, 1, 512, "on"), (4096, 1, 512, "on"), (2048, 2, 512, "off"), (1024, 1, 256, "off")],
    "granite-dense": [(512, 1, 512, "on"), (6144, 1, 512, "on"), (1024, 4, 512, "off"), (2048, 1, 1024, "on")],
}  # fmt: skip
# the settings whose prompt graph is kept allocation by allocation (``traces``)
TRACED = {"granitemoehybrid": (4096, 1, 512, "on"), "granite-mup": (2048, 1, 512, "on"),
          "granite-dense": (1024, 1, 512, "off")}  # fmt: skip
EVENT = re.compile(
    r"ggml_dyn_tallocr_alloc: allocating .* \((\d+) bytes\) - block \d+, offset (\d+)|"
    r"ggml_gallocr_free_node: freeing .* at \{chunk=0, offset=(\d+)\} \((\d+) bytes\)"
)


def child() -> str:
    code = CHILD.replace("2048, 512, par", "2048, int(sys.argv[5]), par")
    return code.replace('print(json.dumps({"compute_mib"', 'print(json.dumps({"log": text, "compute_mib"')


def events(log: str) -> list[list]:
    """The first graph's (the prompt's) allocations and frees, as [kind, offset, bytes]."""
    out: list[list] = []
    for line in log.splitlines():
        if "allocating inp_tokens" in line and out:
            break
        m = EVENT.match(line)
        if m and m.group(1):
            out.append(["alloc", int(m.group(2)), int(m.group(1))])
        elif m:
            out.append(["free", int(m.group(3)), int(m.group(4))])
    return out


def main() -> None:
    doc = {"source": "tools/record_llamacpp_granite.py: llama.cpp as vendored by llama-cpp-python 0.3.36 (libllama "
           "0.5.0), CPU build with GGML_ALLOCATOR_DEBUG, n_batch 2048, kv_unified off, use_extra_bufts off; "
           "recorded after the replay of granitehybrid was written, held out from it",
           "specs": {k: v for k, v in SPECS.items() if k != "granitemoehybrid"}, "cases": []}  # fmt: skip
    traces: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in SPECS.items():
            path = write(spec, Path(tmp) / f"{name}.gguf")
            for per, par, ub, fa in SETTINGS[name] + [TRACED[name]]:
                run = [sys.executable, "-c", child(), str(path), str(per), str(par), str(int(fa == "on")), str(ub)]
                out = subprocess.run(run, capture_output=True, text=True, check=True).stdout
                got = json.loads(out.splitlines()[-1])
                if (per, par, ub, fa) == TRACED[name]:
                    case = {"spec": name, "context": per, "parallel": par, "flash_attn": fa}
                    traces.append({**case, "events": events(got["log"])})
                    continue
                top = max(end for _, _, end in got["peak"])
                case = {"spec": name, "context": per, "parallel": par, "ubatch": ub, "flash_attn": fa}
                doc["cases"].append({**case, "compute_bytes": top, "compute_mib": got["compute_mib"]})
                print(name, per, par, ub, fa, top, got["compute_mib"], flush=True)
    doc["traces"] = traces
    text = json.dumps(doc, indent=1) + "\n"
    FIXTURE.write_text(re.sub(r"\[\n\s+(\"(?:alloc|free)\"),\n\s+(\d+),\n\s+(\d+)\n\s+\]", r"[\1, \2, \3]", text))


if __name__ == "__main__":
    main()
