"""``import paramcount`` and counting a config stay free of heavy libraries."""

import json
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


def test_a_count_loads_only_what_it_needs():
    """The slip checker, the derivation and the formula engine load on first use, not on import;
    none of the ~80 family modules but the one asked for."""
    code = (
        "import json, sys, paramcount; paramcount.load('bert-base-chinese');"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('paramcount.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out)
    assert not {"paramcount.check", "paramcount.derive", "paramcount.formula", "paramcount.compare"} & set(loaded)
    assert [m for m in loaded if m.startswith("paramcount.arch.") and m.count(".") == 2] == [
        "paramcount.arch.bert",
        "paramcount.arch.blocks",
        "paramcount.arch.config",
    ]


def test_the_lazy_names_are_the_functions():
    import paramcount
    from paramcount.check import check
    from paramcount.derive import derive

    assert paramcount.check is check and paramcount.derive is derive


def test_a_cli_count_imports_no_slow_standard_modules():
    """Start-up (issue 12): ``paramcount NAME --json`` needs none of typing, pathlib,
    importlib.resources (zipfile, tempfile), difflib or shutil; each was a twentieth or more of
    the CLI's start; nor dataclasses, which imports inspect (a third of it: records.py).
    benchmarks/bench_count.py measures the whole start against a bare python."""
    code = (
        "import io, contextlib, sys; from paramcount.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['bert-base-uncased', '--json'])\n"
        "print(sorted(m for m in ('typing', 'pathlib', 'importlib.resources', 'zipfile', 'difflib', 'shutil',"
        " 'dataclasses', 'inspect')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
