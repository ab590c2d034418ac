"""The replay over a sweep of (model, context, batch, precision, mode): the fixture the closed
form is held to (tests/test_replay_sweep.py).

Each case is traced and replayed as ``paramcount memory --replay`` does it
(src/paramcount/memory/runtimes/transformers/replay/worker.py ``replay_case``), here in one
process: the peak allocated after the build, and the peak reserved under each placement of the
segments. Appends one JSON line a case to the output, skipping cases it already holds, so it
can be stopped and run again.

    python tools/replay_sweep.py tests/fixtures/replay_sweep.jsonl
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from paramcount.memory.runtimes.transformers.replay.worker import replay_case

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tools.alloc_trace import config

MODELS = (
    "Qwen/Qwen2.5-0.5B",
    "Qwen/Qwen3-0.6B",
    "meta-llama/Llama-3.2-1B",
    "google/gemma-3-1b-pt",
    "allenai/OLMo-1B-hf",
    "EleutherAI/pythia-410m",
    "Qwen/Qwen2.5-1.5B",
    "HuggingFaceTB/SmolLM3-3B",
)
MODES = (
    ("infer", {"dtype": "bf16"}),
    ("infer", {"dtype": "bf16", "attn": "eager"}),
    ("infer", {"dtype": "fp32"}),
    ("train", {"precision": "mixed", "recompute": "none"}),
    ("train", {"precision": "bf16", "recompute": "none"}),
    ("train", {"precision": "bf16", "recompute": "full"}),
    ("lora", {"r": 16, "targets": None, "recompute": "full"}),
)
SHAPES = ((512, 1), (2048, 1), (2048, 2), (4096, 2), (8192, 1))
# GPT-2's family (Conv1D, a split c_attn, NewGELU, dropout masks): training, within its 1,024 positions
GPT2 = ("openai-community/gpt2", "openai-community/gpt2-medium")
GPT2_MODES = MODES[3:6]
GPT2_SHAPES = ((512, 1), (1024, 2), (1024, 8))


# GPT-2's LoRA: peft's default targets for gpt2 are c_attn, a Conv1D (peft's lora.Linear with
# fan_in_fan_out), checkpointed as the LoRA mode above
GPT2_LORA = MODES[6:]
# NewGELU (gelu_new) and dropout outside GPT-2: GPT-J and GPT-Neo (no dropout in their configs) and
# Phi-2 (resid_pdrop 0.1), run, trained and adapted, within their 2,048 positions
NEWGELU = ("EleutherAI/gpt-neo-1.3B", "microsoft/phi-2", "EleutherAI/gpt-j-6b")
NEWGELU_MODES = (MODES[0], *MODES[3:7])
NEWGELU_SHAPES = ((512, 1), (2048, 1))
# Eager by default (their classes set _supports_sdpa = False): BLOOM's and MPT's ALiBi attention
# (baddbmm of the bias, an fp32 softmax), run and, for the small one, trained
EAGER = ("bigscience/bloom-560m", "mosaicml/mpt-7b")
EAGER_MODES = (MODES[0], MODES[2])
EAGER_TRAIN = ("bigscience/bloom-560m",)
EAGER_SHAPES = ((512, 1), (2048, 1))


def cases() -> list[list]:
    """Every model at a shape and mode before the next shape: a stopped run covers them all."""
    sweep = [[kind, m, T, B, o] for T, B in SHAPES for kind, o in MODES for m in MODELS]
    sweep += [[kind, m, T, B, o] for T, B in GPT2_SHAPES for kind, o in GPT2_MODES for m in GPT2]
    sweep += [[kind, m, T, B, o] for T, B in GPT2_SHAPES for kind, o in GPT2_LORA for m in GPT2]
    sweep += [[kind, m, T, B, o] for T, B in NEWGELU_SHAPES for kind, o in NEWGELU_MODES for m in NEWGELU]
    sweep += [[kind, m, T, B, o] for T, B in EAGER_SHAPES for kind, o in MODES[4:5] for m in EAGER_TRAIN]
    return sweep + [[kind, m, T, B, o] for T, B in EAGER_SHAPES[::-1] for kind, o in EAGER_MODES for m in EAGER]


def main(out: Path) -> None:
    done = {json.dumps(json.loads(line)["case"]) for line in out.read_text().splitlines()} if out.exists() else set()
    with out.open("a") as f:
        for case in cases():
            if json.dumps(case) in done:
                continue
            kind, model_id, T, B, options = case
            t = time.time()
            try:
                a = replay_case({"kind": kind, "config": config(model_id), "T": T, "B": B, "options": options})
            except ValueError as e:  # peft has no default targets for the model type: not a case
                print(case, e, file=sys.stderr, flush=True)
                continue
            keep = {k: a[k] for k in ("allocated_peak", "reserved", "peak_op")}
            f.write(json.dumps({"case": case, **keep, "secs": round(time.time() - t, 1)}) + "\n")
            f.flush()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
