"""Record llama.cpp's AMX buffer on a CPU with AMX, for tests/test_llamacpp_repack.py.

Not part of CI. Three steps, the middle one on a machine whose CPU has AMX (``amx_int8`` in
/proc/cpuinfo: Sapphire Rapids and later):

    python tools/record_amx.py write DIR          # small Llama-shaped GGUF files, one per type
    bash tools/llamacpp_amx.sh LLAMA_CPP_SRC DIR  # builds llama.cpp there, loads each on the CPU
    python tools/record_amx.py fixture LOG ...    # the logged buffer sizes -> the fixture

The files are tests/gguf_files.py's (real tensor names and shapes, zero data): two layers of
width 512, 8 heads, 2 key/value heads, feed-forward 1,536, in each type the AMX buffer takes.
Output: tests/fixtures/llamacpp_amx.json, the CPU_Mapped and AMX sizes llama.cpp logged (MiB,
two decimals). Recorded with llama-cpp-python 0.3.36's vendored llama.cpp on an Intel Xeon with
amx_bf16, amx_int8 and amx_tile.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.gguf_files import llama_spec, write  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "llamacpp_amx.json"
# type -> vocabulary (the first run's files had 4,096 tokens; the second's 1,024 kept the
# machine's working tree under its limit)
TYPES = {"Q4_0": 4096, "Q4_K": 4096, "Q8_0": 4096}
TYPES |= {"F16": 1024, "Q5_K": 1024, "Q6_K": 1024, "IQ4_XS": 1024, "Q4_1": 1024}


def spec(ftype: str) -> dict:
    return llama_spec(f"amx-{ftype.lower()}", 2, 512, 8, 2, 1536, TYPES[ftype], ftype=ftype)


def write_files(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for ftype in TYPES:
        print(write(spec(ftype), folder / f"amx-{ftype.lower()}.gguf"))


def fixture(logs: list[Path]) -> None:
    cases: dict[str, dict[str, float]] = {}
    current = None
    for log in logs:
        for line in log.read_text().splitlines():
            m = re.search(r"tensor 'token_embd\.weight' \((\w+)\)", line)
            if m:
                current = m.group(1).upper()
            m = re.search(r"load_tensors:\s+(\w+) model buffer size =\s+([\d.]+) MiB", line)
            if m and current:
                cases.setdefault(current, {})[m.group(1)] = float(m.group(2))
    doc = {
        "source": "llama.cpp vendored by llama-cpp-python 0.3.36 (ggml 0.25.3), built with GGML_NATIVE on an "
        "Intel Xeon with amx_bf16 amx_int8 amx_tile, examples/simple loading each file on the CPU (extra buffer "
        "types on, llama.cpp's default); the model buffer sizes it logged, MiB with two decimals",
        "how": "tools/record_amx.py write, tools/llamacpp_amx.sh, tools/record_amx.py fixture",
        "cases": [{"ftype": k, "vocab": TYPES[k], "buffers_mib": v} for k, v in sorted(cases.items())],
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(cases)} files -> {OUT}")


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write_files(Path(sys.argv[2]))
    else:
        fixture([Path(a) for a in sys.argv[2:]])
