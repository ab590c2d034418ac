"""Reading a GGUF file needs nothing beyond the base install: the header parser, the ggml type
ids and sizes and the file-type names are paramcount's own (the gguf package only writes the
test files here)."""

from __future__ import annotations

import subprocess
import sys

from .test_gguf import write_sparse_llama_3_8b

BLOCKED = "import sys; sys.modules['gguf'] = None; sys.modules['numpy'] = None"


def test_a_gguf_file_counts_and_plans_without_gguf_or_numpy(tmp_path):
    path = tmp_path / "llama-3-8b.Q4_K_M.gguf"
    write_sparse_llama_3_8b(path)
    code = (
        f"{BLOCKED}; import paramcount; from paramcount.memory import inference; "
        f"m = paramcount.load({str(path)!r}); print(m.total, inference(m, context=4096).total > 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["8030261248", "True"]
