"""Record the releases that read ggml type 4 as MXFP4 on Ollama's own gpt-oss file, as a test fixture.

Not part of CI. Ollama v0.11.0 … v0.11.7 wrote gpt-oss's experts as ggml type 4 (convert/reader.go
``tensorKindMXFP4 = 4``). This script writes test_ollama_logs.py's gpt-oss:20b with its MXFP4
tensors' type ids set to 4 (the header patched in place; the data a sparse hole), runs the
estimates that build.sh built (``BUILD_DIR/go-TAG/est``, as record.py leaves them) over record.py's
free-memory grid at 8,192 tokens, and writes tests/fixtures/ollama_type_4.json.

    GO=… python tools/ollama_versions/record_type_4.py BUILD_DIR
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.test_ollama_gguf import type_4_file  # noqa: E402
from tools.ollama_versions.record import FREE  # noqa: E402

RELEASES = ("v0.11.2", "v0.11.4", "v0.11.8")  # v0.11.0 on reads type 4; those built by build.sh here


def main(build: str) -> None:
    path = type_4_file(Path(tempfile.mkdtemp()))
    cases = []
    for release, (free, num_gpu) in itertools.product(RELEASES, itertools.product(FREE, (-1, 5))):
        argv = [str(Path(build) / f"go-{release}" / "est"), "-model", str(path), "-free", ",".join(map(str, free)),
                "-num-ctx", "8192", "-num-gpu", str(num_gpu)]  # fmt: skip
        got = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
        cases.append({"release": release, "model": "gpt-oss:20b", "free": free, "num_ctx": 8192, "num_gpu": num_gpu,
                      "env": {}, "ollama": {**got, "per_gpu": got["per_gpu"] or []}})  # fmt: skip
    out = ROOT / "tests" / "fixtures" / "ollama_type_4.json"
    doc = {"about": __doc__.split("\n\n")[1].replace("\n", " "), "releases": list(RELEASES), "cases": cases}
    out.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"{len(cases)} cases -> {out}")


if __name__ == "__main__":
    main(sys.argv[1])
