"""A GGUF file's metadata and tensor shapes as the planners read them (gguf/meta.py).

Every key a planner reads goes through one view (``Meta``): a whole number in range, or an array
of them with one entry per block. The corpus below gives each key that each architecture's
planner reads (recorded while planning the architecture's good file) every kind of bad value:
the wrong type, NaN, infinity, out of range, an empty array, an array of the wrong length, of
strings or of NaNs. Each must end in one line naming the file, the key and the value, exit 2, on
``memory``, ``fit``, their ``--json`` and the other runtimes, through the CLI's main() in-process.
A tensor whose rank does not fit its role is refused the same way, and a hypothesis probe gives
the keys random GGUF types and values.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paramcount.cli import main
from paramcount.gguf.meta import Meta
from paramcount.memory.tree import widths as gguf_widths

from .gguf_files import Spec, llama_spec, write_raw
from .test_llamacpp_mtp import deepseek2_spec

FIXTURES = Path(__file__).parent / "fixtures"

# What the CLI plans a GGUF file with: llama.cpp (its default runtime) and the two others.
COMMANDS = {
    "memory": ["memory", "--width", "100"],
    "memory --json": ["memory", "--json"],
    "fit": ["fit", "--gpu", "h100", "--width", "100"],
    "fit --json": ["fit", "--gpu", "h100", "--json"],
    "vllm": ["memory", "--runtime", "vllm", "--json"],
    "transformers": ["memory", "--runtime", "transformers", "--json"],
}


def _specs() -> dict[str, Spec]:
    """A small file of every architecture the planners know: the hybrid and state-space ones as
    llama.cpp's converter wrote them (tests/fixtures/llamacpp_hybrid.json), the others as the
    test suite's small llama, Gemma 3 and DeepSeek-2 (MLA) files."""
    hybrid = json.loads((FIXTURES / "llamacpp_hybrid.json").read_text())
    specs = {r["small"]["spec"]["arch"]: r["small"]["spec"] for r in hybrid["families"].values()}
    specs["nemotron_h_moe"] = hybrid["configs"]["nemotron_h_moe"]["spec"]
    specs["glm4moe"] = hybrid["mtp"]["glm4_moe"]["spec"]
    specs.update({arch: llama_spec(arch, 2, 256, 4, 2, 512, 512, arch=arch) for arch in ("llama", "phi3")})
    specs["qwen3moe"] = llama_spec("qwen3moe", 2, 256, 4, 2, 256, 512, experts=4, used=2, arch="qwen3moe")
    gemma = json.loads((FIXTURES / "llamacpp_quant.json").read_text())["models"]["gemma3-640"]
    specs["gemma3"] = gemma
    specs["gemma2"] = {**gemma, "arch": "gemma2"}
    specs["deepseek2"] = deepseek2_spec(3, 1)
    return specs


SPECS = _specs()


def run(path: Path, command: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([COMMANDS[command][0], str(path), *COMMANDS[command][1:]])
    said = out.getvalue()
    if rc == 2 and said.startswith("{"):  # under --json the error is a document on stdout: read as the line
        doc = json.loads(said)
        return rc, "", f"paramcount: error: {doc['source']}: {doc['error']}\n"
    return rc, said, err.getvalue()


@pytest.fixture(scope="module")
def reads(tmp_path_factory) -> dict[str, dict[str, set[str]]]:
    """For each architecture, the keys each command reads through Meta's checked accessors,
    recorded while planning its good file (which llama.cpp's memory and fit must plan; vLLM
    refuses the hybrid files in one line: it has no layout for them)."""
    seen: set[str] = set()
    checked = ("integer", "per_layer", "flags")
    originals = {name: getattr(Meta, name) for name in checked}

    def recording(name):
        def read(self, key, *args, **kw):
            seen.add(key)
            return originals[name](self, key, *args, **kw)

        return read

    folder, out = tmp_path_factory.mktemp("good"), {}
    with pytest.MonkeyPatch.context() as mp:
        for name in checked:
            mp.setattr(Meta, name, recording(name))
        for arch, spec in SPECS.items():
            path, out[arch] = write_raw(spec, folder / f"{arch}.gguf"), {}
            for command in ("memory --json", "fit --json", "vllm", "transformers"):
                seen.clear()
                rc, _, err = run(path, command)
                assert rc == 0 or (rc == 2 and command in ("vllm", "transformers")), (arch, command, err)
                out[arch][command] = set(seen)
    for by in out.values():  # the text renderings read what their --json does
        by["memory"], by["fit"] = by["memory --json"], by["fit --json"]
    return out


def test_every_architecture_plans_and_reads_its_keys(reads):
    for arch, by in reads.items():
        assert "block_count" in by["memory --json"], arch
    assert "expert_count" in reads["qwen3moe"]["fit --json"]  # the q4_k_m mix's n_expert
    assert "attention.recurrent_layers" in reads["qwen35"]["memory --json"]
    assert "attention.kv_lora_rank" in reads["deepseek2"]["memory --json"]
    assert "ssm.state_size" in reads["mamba2"]["memory --json"]


def bad_values(n_layers: int, i: int = 0) -> dict[str, object]:
    """A value of every wrong kind for a key that holds a whole number or one per block (the
    ``i``-th key read: out of range below for even ones, above for odd ones)."""
    return {
        "a string": "\x1b[2J" + "x" * 300,
        "NaN": math.nan,
        "infinity": math.inf,
        "out of range": (-3, 1 << 40)[i % 2],
        "an empty array": [],
        "an array too long": [2] * (n_layers + 1),
        "an array of strings": ["a", "b"],
        "an array of NaNs": [math.nan] * n_layers,
    }


def cases():
    for arch in SPECS:
        for kind in bad_values(1):
            yield pytest.param(arch, kind, id=f"{arch}-{kind.replace(' ', '_')}")


@pytest.mark.parametrize(("arch", "kind"), list(cases()))
def test_a_bad_value_of_any_key_read_is_one_line_exit_2(reads, tmp_path, arch, kind):
    """Each key a command reads, with this kind of bad value, on the commands that read it in
    turn: the commands share every step up to the read, so each (key, kind) runs once, and over
    the kinds each key meets every command that reads it."""
    spec, turn = SPECS[arch], list(bad_values(1)).index(kind)
    keys = sorted(set().union(*reads[arch].values()))
    for i, key in enumerate(keys):
        value = bad_values(spec["meta"]["block_count"], i)[kind]
        readers = [c for c in COMMANDS if key in reads[arch][c]]
        command = readers[(i + turn) % len(readers)]
        path = write_raw(spec, tmp_path / f"{arch}.gguf", {**spec["meta"], key: value})
        rc, out, err = run(path, command)
        assert rc == 2 and out == "" and err.count("\n") == 1, (key, command, err)
        assert err.startswith(f"paramcount: error: {path}: {arch}.{key}: expected "), (command, err)
        assert "\x1b" not in err and len(err) < 400


PER_BLOCK = "expected 2 whole numbers, one per block (block_count), got"


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("attention.head_count", math.nan, "expected a whole number from 0 to 67,108,864, got nan"),
        ("attention.head_count", "\x1b[2J" + "x" * 100, r"got '\x1b[2J" + "x" * 32 + "…"),
        ("attention.head_count", ["a", "b"], f"{PER_BLOCK} an array of 2 string values"),
        ("attention.head_count_kv", [2] * 5, f"{PER_BLOCK} an array of 5: [2, 2, 2, 2, 2]"),
        ("attention.head_count_kv", [], f"{PER_BLOCK} an empty array"),
        ("expert_count", [4, 4], "expected a whole number from 0 to 67,108,864, got an array of 2: [4, 4]"),
        ("embedding_length", -1, "expected a whole number from 1 to 67,108,864, got -1"),
        ("block_count", 1 << 40, "expected a whole number from 1 to 67,108,864, got 1099511627776"),
        # past LLAMA_MAX_LAYERS, a per-block array is never built (2^26 of them took 565 MB)
        ("block_count", 1 << 26, "expected a whole number from 1 to 512, got 67108864"),
        ("context_length", math.inf, "got inf"),
        ("attention.key_length", [[1], [1]], "got an array of 2 array values"),
        ("attention.sliding_window", True, "got True"),
        ("nextn_predict_layers", 2**64 - 1, "got 18446744073709551615"),
    ],
)
def test_the_message_names_the_file_the_key_and_the_value(tmp_path, key, value, said):
    spec = llama_spec("moe", 2, 256, 4, 2, 256, 512, experts=4, used=2)
    path = write_raw(spec, tmp_path / "bad.gguf", {**spec["meta"], key: value})
    rc, _, err = run(path, "fit --json")
    assert rc == 2 and err.startswith(f"paramcount: error: {path}: llama.{key}: expected ") and err.count("\n") == 1
    assert err.endswith(f"{said}\n"), err


def test_a_context_length_is_a_limit_up_to_uint32(tmp_path):
    """context_length only caps the context planned: any uint32 is taken, as llama.cpp takes it."""
    spec = SPECS["llama"]
    path = write_raw(spec, tmp_path / "long.gguf", {**spec["meta"], "context_length": 2**32 - 1})
    rc, out, _ = run(path, "memory --json")
    assert rc == 0 and json.loads(out)["settings"]["context_from"] == "the default; the model allows 4,294,967,295"
    write_raw(spec, path, {**spec["meta"], "context_length": 2**32})
    rc, _, err = run(path, "memory --json")
    assert rc == 2 and err.endswith("context_length: expected a whole number from 1 to 4,294,967,295, got 4294967296\n")


# ---- tensor shapes that do not fit their role ------------------------------------------------------


def shape_cases():
    for arch, spec in SPECS.items():
        roles = {re.sub(r"^blk\.\d+\.|\.weight$", "", name) for name, _, _ in spec["tensors"]}
        for role in sorted(roles & set(gguf_widths.RANKS)):
            yield pytest.param(arch, role, id=f"{arch}-{role}")


@pytest.mark.parametrize(("arch", "role"), list(shape_cases()))
def test_a_tensor_of_the_wrong_rank_is_one_line_exit_2(reads, tmp_path, arch, role):
    """Each role's weight, one dimension short (a 1-D ffn_up) or one too many, in every block,
    where the plan reads the widths (a weights-only plan, as of glm4moe, reads no shape)."""
    spec = SPECS[arch]
    if "embedding_length" not in reads[arch]["memory --json"]:
        pytest.skip(f"{arch}: a weights-only plan")
    rank = gguf_widths.RANKS[role]
    for shape_of in (lambda s: s[-1:], lambda s: [2, *s]):
        tensors = [
            [n, shape_of(s) if re.fullmatch(rf"(blk\.\d+\.)?{role}\.weight", n) else s, q]
            for n, s, q in spec["tensors"]
        ]
        path = write_raw({**spec, "tensors": tensors}, tmp_path / f"{arch}.gguf")
        rc, out, err = run(path, "memory --json")
        assert rc == 2 and out == "" and err.count("\n") == 1, err
        assert re.match(
            rf"paramcount: error: {re.escape(str(path))}: tensor (blk\.\d+\.)?{role}\.weight has shape \[", err
        ), err
        assert err.endswith(f"; {role} is a {rank}-D tensor in llama.cpp\n"), err


# ---- the probe: random types and values for the keys each planner reads -----------------------------

_SCALARS = (
    st.integers(-(1 << 63), (1 << 64) - 1)
    | st.integers(0, 4096)
    | st.floats(allow_nan=True, allow_infinity=True, width=32)
    | st.booleans()
    | st.text(max_size=20)
)
_ARRAYS = st.one_of(
    *(st.lists(s, max_size=10) for s in (st.integers(0, 64), st.floats(width=32), st.booleans(), st.text(max_size=4)))
)
VALUES = _SCALARS | _ARRAYS | st.lists(st.lists(st.integers(0, 8), max_size=3), min_size=1, max_size=3)


def files(keys: dict[str, list[str]]) -> st.SearchStrategy:
    """An architecture and up to three of the keys its planners read, each with a random value."""

    def changed(arch: str) -> st.SearchStrategy:
        return st.tuples(st.just(arch), st.dictionaries(st.sampled_from(keys[arch]), VALUES, min_size=1, max_size=3))

    return st.sampled_from(sorted(keys)).flatmap(changed)


def test_random_metadata_ends_in_a_plan_or_one_line(reads, tmp_path_factory):
    """Any GGUF type and value for up to three keys a planner reads: a plan (JSON that parses)
    or one line and exit 2; never a traceback. Bounded by the number of examples."""
    folder = tmp_path_factory.mktemp("probe")
    keys = {arch: sorted(set().union(*by.values())) for arch, by in reads.items()}

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(case=files(keys), command=st.sampled_from(sorted(COMMANDS)))
    def probe(case, command):
        arch, changed = case
        spec = SPECS[arch]
        path = write_raw(spec, folder / f"{arch}.gguf", {**spec["meta"], **changed})
        rc, out, err = run(path, command)
        assert rc in ((0, 1, 2) if command.startswith("fit") else (0, 2)), (changed, err)  # fit: 1 when it does not fit
        if rc == 2:
            assert out == "" and err.count("\n") == 1 and err.startswith("paramcount: error: "), err
        elif command.endswith("json") or command in ("vllm", "transformers"):
            assert json.loads(out)["model"]["source"] == str(path)

    probe()
