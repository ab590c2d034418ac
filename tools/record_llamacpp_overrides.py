"""Record which tensors llama.cpp's ``-ot`` patterns match, as a test fixture.

Not part of CI: it needs llama-cpp-python (built from source) and gguf-py in the Python that
runs it (see tools/record_llamacpp.py), for example:

    /work/venvs/llcpp/bin/python tools/record_llamacpp_overrides.py

A CPU build cannot offload, but it applies tensor buffer overrides all the same: it loads a
small MoE GGUF file (tests/gguf_files.py, 12 layers so that ``blk\\.1\\.`` meets ``blk.10``)
with ``llama_model_params.tensor_buft_overrides`` set to each list of patterns below, every one
to the CPU buffer type, and reads back the tensors ``llama_model_loader::create_tensor`` logs as
"buffer type overridden" (``std::regex_search`` over the GGUF name). The patterns are those
``--cpu-moe``, ``--n-cpu-moe`` and ``llama-fit-params`` write (common.h, common/fit.cpp) and a
few a user would.

Output: tests/fixtures/llamacpp_overrides.json, with the llama.cpp version. Each case runs in
its own process.
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

from tests.gguf_files import llama_spec, write  # noqa: E402

EXPS = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"  # common.h LLM_FFN_EXPS_REGEX
SPEC = llama_spec("moe-12", 12, 256, 4, 2, 256, 1000, experts=4, used=2)
CASES = [
    [EXPS],  # --cpu-moe
    [f"blk\\.{i}{EXPS}" for i in range(2)],  # --n-cpu-moe 2
    ["blk\\.3\\.ffn_(gate|up|gate_up|down).*"],  # fit.cpp LAYER_FRACTION_ATTN
    ["blk\\.3\\.ffn_(gate|gate_up|down).*"],  # LAYER_FRACTION_UP
    ["blk\\.3\\.ffn_down.*"],  # LAYER_FRACTION_GATE
    ["blk\\.1\\.ffn_(up|down|gate_up|gate)_(ch|)exps"],  # LAYER_FRACTION_MOE
    ["blk\\.\\d+\\.ffn_(up|down|gate_up|gate)_(ch|)exps"],  # fit.cpp: every layer's experts
    ["attn_(q|k)"],
    ["^token_embd", "output"],
    ["blk\\.(1[01])\\."],
    ["exps$"],
    ["norm\\.weight$"],
]


def one_case(path: str, patterns: list[str]) -> list[str]:
    """The tensors llama.cpp overrides with ``patterns``, each to the CPU buffer type."""
    import ctypes

    import llama_cpp

    lines: list[str] = []

    @llama_cpp.llama_log_callback
    def callback(level: int, text: bytes, user: ctypes.c_void_p) -> None:
        lines.append(text.decode("utf-8", "replace"))

    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()
    base = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so"))
    base.ggml_backend_cpu_buffer_type.restype = ctypes.c_void_p
    cpu = base.ggml_backend_cpu_buffer_type()

    class Override(ctypes.Structure):
        _fields_ = [("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p)]

    given = (Override * (len(patterns) + 1))(*[Override(p.encode(), cpu) for p in patterns], Override(None, None))
    params = llama_cpp.llama_model_default_params()
    params.tensor_buft_overrides = ctypes.cast(given, ctypes.c_void_p)
    model = llama_cpp.llama_model_load_from_file(path.encode(), params)
    if not model:
        raise RuntimeError("llama_model_load_from_file failed")
    llama_cpp.llama_model_free(model)
    return sorted(re.findall(r"tensor (\S+) \(.*?\) buffer type overridden to CPU", "".join(lines)))


def main() -> None:
    import llama_cpp

    with tempfile.TemporaryDirectory() as tmp:
        path = write(SPEC, Path(tmp) / "moe-12.gguf")
        cases = []
        for patterns in CASES:
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(path), json.dumps(patterns)],
                capture_output=True, text=True, check=True, timeout=600,
            )  # fmt: skip
            found = json.loads(out.stdout.split("RESULT ", 1)[1])
            cases.append({"patterns": patterns, "overridden": found})
            print(len(found), patterns)
    doc = {
        "llama_cpp_python": llama_cpp.__version__,
        "spec": {"name": SPEC["name"], "layers": 12, "experts": 4},
        "tensors": [name for name, _, _ in SPEC["tensors"]],
        "cases": cases,
    }
    (ROOT / "tests" / "fixtures" / "llamacpp_overrides.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print("RESULT " + json.dumps(one_case(sys.argv[2], json.loads(sys.argv[3]))))
    else:
        main()
