"""Record llama.cpp's own buffer sizes and quantisation mixes as test fixtures.

Not part of CI: it needs llama-cpp-python (built from source, about 25 minutes on 2 cores) and
gguf-py in the Python that runs it, for example a venv outside the repository:

    python3 -m venv /work/llcpp && nice -n 19 /work/llcpp/bin/pip install llama-cpp-python gguf
    /work/llcpp/bin/python tools/record_llamacpp.py [buffers|quant]

It writes small GGUF files (tests/gguf_files.py: real architectures, sparse zero data) to a
temporary folder, and through llama-cpp-python's low-level API:

* loads each with ``llama_model_load_from_file`` and creates contexts with
  ``llama_init_from_model`` at several settings (context, ``n_seq_max``, ``n_ubatch``, flash
  attention on/off/auto, ``swa_full``, ``kv_unified``, cache types), and records the buffers
  llama.cpp logs: model, KV (with cells), output and compute, and ``llama_model_size``;
* quantises F16 files with ``llama_model_quantize`` (``dry_run``: the types are chosen and
  logged, nothing is written, so the IQ types need no importance matrix) for each ftype, with
  and without ``pure``, and records every tensor's type.

Output: tests/fixtures/llamacpp_buffers.json and tests/fixtures/llamacpp_quant.json, each with
the llama.cpp version (``llama_cpp.__version__``) and the specs of the files; both fixtures
now hold llama-cpp-python 0.3.36's figures. Every case runs
in its own process, so one context's memory never stays for the next.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.gguf_files import gemma3_spec, llama_spec, write  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"

# Files for buffer sizes: Gemma 3 270M's shape, Llama 3.2 1B's shape in a Q4_0 file (output
# Q6_K, as llama.cpp writes it), and a small Mixtral-style MoE.
BUFFER_MODELS = {
    "gemma3-270m": gemma3_spec("gemma3-270m", 18, 640, 4, 1, 256, 2048, 262144, window=512),
    "llama-1b-q4_0": llama_spec("llama-1b-q4_0", 16, 2048, 32, 8, 8192, 128256, context=131072, ftype="Q4_0"),
    "moe-tiny": llama_spec("moe-tiny", 4, 512, 8, 2, 1024, 32000, experts=8, used=2),
}
BUFFER_MODELS["llama-1b-q4_0"]["tensors"][-1][2] = "Q6_K"


def _case(model: str, context: int, **kw: Any) -> dict[str, Any]:
    base = {
        "parallel": 1,
        "ubatch": 512,
        "flash_attn": "on",
        "swa_full": False,
        "kv_unified": False,
        "embeddings": False,
    }
    return {"model": model, "context": context, **base, "type_k": "f16", "type_v": "f16", **kw}


BUFFER_CASES = [
    *(
        _case("gemma3-270m", c, flash_attn=fa, swa_full=swa)
        for c in (4096, 32768)
        for fa in ("on", "off")
        for swa in (False, True)
    ),
    _case("gemma3-270m", 4096, flash_attn="auto"),
    _case("gemma3-270m", 4096, parallel=2),
    _case("gemma3-270m", 4096, parallel=2, kv_unified=True),
    _case("gemma3-270m", 1000, ubatch=256),
    *(_case("llama-1b-q4_0", c, flash_attn=fa) for c in (4096, 32768) for fa in ("on", "off")),
    _case("llama-1b-q4_0", 4096, ubatch=256, flash_attn="off"),
    _case("llama-1b-q4_0", 4096, parallel=4),
    _case("llama-1b-q4_0", 32768, type_k="q8_0", type_v="q8_0"),
    _case("llama-1b-q4_0", 8192, type_k="q4_0", type_v="q4_0"),
    *(_case("moe-tiny", c, flash_attn=fa) for c in (4096, 131072) for fa in ("on", "off")),
    _case("llama-1b-q4_0", 4096, parallel=2, embeddings=True),
    # issue 20: flash attention off with a cache of one micro-batch (n_kv == n_ubatch == 512), and 1,024
    *(_case("llama-1b-q4_0", c, flash_attn="off") for c in (512, 1024)),
]

# F16 files for quantisation mixes: GQA (n_gqa 4) and MHA, tied and untied, Gemma 3's 640-wide
# rows, eight experts, and the 80-layer "70B" rule.
QUANT_MODELS = {
    "llama-gqa": llama_spec("llama-gqa", 16, 256, 8, 2, 512, 2048),
    "llama-mha-tied": llama_spec("llama-mha-tied", 8, 512, 8, 8, 768, 2048, tied=True),
    "gemma3-640": gemma3_spec("gemma3-640", 6, 640, 4, 1, 256, 2048, 4096),
    "moe-8": llama_spec("moe-8", 4, 256, 8, 2, 256, 1024, experts=8, used=2),
    "llama-80": llama_spec("llama-80", 80, 256, 8, 2, 256, 512),
}
FTYPES = [
    "Q2_K", "Q2_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K",
    "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS",
    "IQ3_S", "IQ3_M", "IQ1_S", "IQ1_M", "IQ4_NL", "IQ4_XS",
]  # fmt: skip
PURE = ["Q4_K_M", "Q4_0", "Q2_K"]

_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "iq4_nl": 20, "bf16": 30}
_FLASH = {"auto": -1, "off": 0, "on": 1}


def _log_to(lines: list[str]) -> Any:
    """Route llama.cpp's log into ``lines`` (the callback must outlive the calls)."""
    import ctypes

    import llama_cpp

    @llama_cpp.llama_log_callback
    def callback(level: int, text: bytes, user: ctypes.c_void_p) -> None:
        lines.append(text.decode("utf-8", "replace"))

    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))
    return callback


def _mib(pattern: str, log: str) -> list[float]:
    return [float(m) for m in re.findall(pattern, log)]


def one_buffer_case(path: str, case: dict[str, Any]) -> dict[str, Any]:
    """Load the file, create one context, and read back every buffer size llama.cpp logged."""
    import llama_cpp

    lines: list[str] = []
    keep = _log_to(lines)
    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(path.encode(), mp)
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = case["context"] * case["parallel"]
    cp.n_batch = 2048
    cp.n_ubatch = case["ubatch"]
    cp.n_seq_max = case["parallel"]
    cp.flash_attn_type = _FLASH[case["flash_attn"]]
    cp.swa_full = case["swa_full"]
    cp.kv_unified = case["kv_unified"]
    cp.embeddings = case["embeddings"]
    cp.type_k, cp.type_v = _TYPES[case["type_k"]], _TYPES[case["type_v"]]
    cp.n_threads = cp.n_threads_batch = 1
    ctx = llama_cpp.llama_init_from_model(model, cp)
    size = llama_cpp.llama_model_size(model)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    log = "".join(lines)
    del keep
    return {
        **case,
        "llama_model_size": int(size),
        "model_buffers_mib": dict(re.findall(r"(\S+) model buffer size =\s+([\d.]+) MiB", log)),
        "kv_buffers_mib": _mib(r"KV buffer size =\s+([\d.]+) MiB", log),
        "kv_cells": [int(c) for c in re.findall(r"llama_kv_cache: size =.*?\(\s*(\d+) cells", log)],
        "output_mib": _mib(r"output buffer size =\s+([\d.]+) MiB", log)[0],
        "compute_mib": _mib(r"compute buffer size is\s+([\d.]+) MiB", log)[0],
        "n_ctx": int(re.findall(r"n_ctx\s+= (\d+)", log)[-1]),
        "flash_attn_resolved": "on" if re.search(r"flash_attn\s+= enabled|Flash Attention enabled", log) else "off",
    }  # fmt: skip


def one_quant_case(path: str, ftype: str, pure: bool) -> dict[str, str]:
    """Every tensor's type under ``ftype``, from llama_model_quantize's dry run."""
    import llama_cpp

    lines: list[str] = []
    keep = _log_to(lines)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    params.pure = pure
    params.dry_run = True
    params.nthread = 1
    with tempfile.TemporaryDirectory() as out:
        rc = llama_cpp.llama_model_quantize(path.encode(), str(Path(out) / "q.gguf").encode(), params)
    del keep
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize returned {rc}")
    types = {}
    for line in "".join(lines).splitlines():
        m = re.search(r"\]\s+(\S+)\s+- \[.*?\], type =\s+(\S+), size = .*?(?:\((\w+)\))?\s*$", line)
        if m:
            types[m.group(1)] = (m.group(3) or m.group(2)).upper()
    return types


def _child(argv: list[str]) -> None:
    """One case in this process; its JSON on stdout."""
    kind, path, payload = argv
    args = json.loads(payload)
    result = one_buffer_case(path, args) if kind == "buffer" else one_quant_case(path, *args)
    print("RESULT " + json.dumps(result))


def _run(kind: str, path: Path, payload: Any) -> Any:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(path), json.dumps(payload)],
        capture_output=True, text=True, check=True, timeout=1800,
    )  # fmt: skip
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def record(folder: Path, only: str | None = None) -> None:
    import llama_cpp

    version = llama_cpp.__version__
    if only == "cells":
        record_cells(folder, version)
        return
    if only != "quant":
        record_buffers(folder, version)
    if only != "buffers":
        record_quant(folder, version)


# Caches no longer than the micro-batch (512 cells, 256), flash attention on and off: issue 20's
# "dense Llama, flash attention off, 512 cells" case, on files the buffer cases do not load there.
CELL_MODELS = {
    "llama-1b-q4_0": BUFFER_MODELS["llama-1b-q4_0"],
    "llama-gqa": QUANT_MODELS["llama-gqa"],
}
CELL_CASES = [
    _case(m, ctx, flash_attn=fa)
    for m in CELL_MODELS
    for ctx, fa in ((512, "off"), (512, "on"), (1024, "off"), (256, "off"))
]


def record_cells(folder: Path, version: str) -> None:
    cases = _buffer_cases(folder, CELL_MODELS, CELL_CASES, "cells")
    _write_compact(FIXTURES / "llamacpp_cells.json", {"llama_cpp_python": version, "models": CELL_MODELS}, cases)


def record_buffers(folder: Path, version: str) -> None:
    cases = _buffer_cases(folder, BUFFER_MODELS, BUFFER_CASES, "buffers")
    doc = {"llama_cpp_python": version, "models": BUFFER_MODELS, "cases": cases}
    (FIXTURES / "llamacpp_buffers.json").write_text(json.dumps(doc, indent=1) + "\n")


def _buffer_cases(folder: Path, models: dict[str, Any], cases: list[dict[str, Any]], what: str) -> list[dict[str, Any]]:
    """Each case's buffers, llama.cpp loading each model's file in a process of its own."""
    files = {name: write(spec, folder / f"{name}.gguf") for name, spec in models.items()}
    out = []
    for case in cases:
        print(what, case, flush=True)
        out.append(_run("buffer", files[case["model"]], case))
    return out


def record_quant(folder: Path, version: str) -> None:
    quant = []
    for name, spec in QUANT_MODELS.items():
        path = write(spec, folder / f"{name}.gguf")
        for ftype, pure in [(f, False) for f in FTYPES] + [(f, True) for f in PURE]:
            print("quant", name, ftype, pure, flush=True)
            types = _run("quant", path, [ftype, pure])
            order = [types[t[0]] for t in spec["tensors"]]  # the spec's tensor order
            quant.append({"model": name, "ftype": ftype, "pure": pure, "types": order})
    _write_compact(FIXTURES / "llamacpp_quant.json", {"llama_cpp_python": version, "models": QUANT_MODELS}, quant)


def _write_compact(path: Path, head: dict[str, Any], cases: list[dict[str, Any]]) -> None:
    """One line per tensor of a spec and per case: small, and diffs stay readable."""
    lines = [json.dumps(head)[:-1] + ', "cases": [']
    lines += [json.dumps(c) + ("," if i < len(cases) - 1 else "") for i, c in enumerate(cases)]
    path.write_text("\n".join([*lines, "]}"]) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2:])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            record(Path(tmp), sys.argv[1] if len(sys.argv) > 1 else None)  # "buffers", "quant" or "cells"
