"""The transformers fallback's cache: the first count of a model_type with no native family
against the same count asked again, each in a fresh process as a user's command runs.

Run: python benchmarks/bench_fallback_cache.py   (needs the test extras: torch and transformers)

Each model is counted once with an empty cache (the worker imports torch and transformers and
builds the model on the meta device), then REPEAT times more from the cache, and REPEAT times
with the cache off (PARAMCOUNT_NO_CACHE=1: what every call cost before). The totals are
asserted equal. Figures: seconds for ``import paramcount`` + ``paramcount.load(config)`` inside
the process, and the whole process's wall time (``python -c …``), and whether the worker
started. The ratio first / repeated is the point: it holds across machines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEAT = 3

# model_types with no native family, at their published sizes (configs as on the Hub)
MODELS = {
    "Salesforce/codegen-350M-mono": {
        "model_type": "codegen",
        "architectures": ["CodeGenForCausalLM"],
        "n_embd": 1024,
        "n_layer": 20,
        "n_head": 16,
        "n_positions": 2048,
        "rotary_dim": 32,
        "vocab_size": 51200,
    },
    "tiiuae/falcon-mamba-7b": {
        "model_type": "falcon_mamba",
        "architectures": ["FalconMambaForCausalLM"],
        "hidden_size": 4096,
        "num_hidden_layers": 64,
        "state_size": 16,
        "vocab_size": 65024,
        "intermediate_size": 8192,
    },
    "microsoft/biogpt": {
        "model_type": "biogpt",
        "architectures": ["BioGptForCausalLM"],
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "vocab_size": 42384,
    },
}

CHILD = """
import json, sys, time
t = time.perf_counter()
import paramcount
model = paramcount.load(json.load(open(sys.argv[1])))
print(json.dumps({"seconds": time.perf_counter() - t, "total": model.total}))
"""


def once(config: Path, env: dict[str, str]) -> dict:
    """One count in a fresh process: its in-process seconds, wall seconds, total, worker or not."""
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, str(config)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if done.returncode:
        raise SystemExit(done.stderr)
    out = json.loads(done.stdout)
    return {**out, "wall": wall, "worker": "importing torch" in done.stderr}


def measure(name: str, config: dict, folder: Path) -> dict:
    path = folder / f"{name.replace('/', '--')}.json"
    path.write_text(json.dumps(config))
    cache = folder / f"cache-{path.stem}"
    env = {**os.environ, "PARAMCOUNT_CACHE_DIR": str(cache)}
    env.pop("PARAMCOUNT_NO_CACHE", None)
    first = once(path, env)
    again = [once(path, env) for _ in range(REPEAT)]
    off = [once(path, {**env, "PARAMCOUNT_NO_CACHE": "1"}) for _ in range(REPEAT)]
    assert first["worker"] and not any(r["worker"] for r in again) and all(r["worker"] for r in off)
    assert {r["total"] for r in (first, *again, *off)} == {first["total"]}
    best = min(again, key=lambda r: r["seconds"])
    entry = sum(p.stat().st_size for p in (cache / "fallback").glob("*.json"))
    return {"first": first, "again": best, "off": min(off, key=lambda r: r["seconds"]), "entry": entry}


def main() -> None:
    from importlib import metadata

    print(f"transformers {metadata.version('transformers')}, torch {metadata.version('torch')}, best of {REPEAT}")
    head = ("model", "total", "first s (wall)", "cached s (wall)", "no cache s", "first / cached", "entry bytes")
    print(" | ".join(head))
    with tempfile.TemporaryDirectory() as tmp:
        for name, config in MODELS.items():
            r = measure(name, config, Path(tmp))
            f, a, o = r["first"], r["again"], r["off"]
            print(
                f"{name} | {f['total']:,} | {f['seconds']:.3f} ({f['wall']:.3f}) | {a['seconds']:.3f} ({a['wall']:.3f})"
                f" | {o['seconds']:.3f} | {f['seconds'] / a['seconds']:.0f}x | {r['entry']:,}"
            )


if __name__ == "__main__":
    main()
