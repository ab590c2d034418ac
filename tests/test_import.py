"""``import paramcount`` and counting a config stay free of heavy libraries."""

import subprocess
import sys

HEAVY = ("torch", "transformers", "numpy", "rich")


def test_import_and_count_load_nothing_heavy():
    code = (
        "import sys, paramcount; m = paramcount.load('bert-base-chinese'); m.components(); m.tensors();"
        f"print([k for k in {HEAVY!r} if k in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
