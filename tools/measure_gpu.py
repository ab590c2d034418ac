"""Measure what PyTorch + transformers allocate on a CUDA GPU, for the cases in tools/gpu_cases.json.

The method of the measurements behind issue 22 (one forward with ``use_cache=True,
logits_to_keep=1`` for inference; two AdamW steps for training; peft LoRA on bf16 weights),
with random weights built on the GPU from the catalog's published configs
(src/paramcount/catalog/*.json, by id): nothing is downloaded. Beyond that script it takes
``attn`` (the attention implementation), ``dtype`` ``fp16`` and ``targets`` ``all-linear``/null
(peft's default), and it keeps the training step's phases (peak allocation after the forward
and after the backward) so a case whose total is off can be read by phase.

Run it where a CUDA GPU, torch, transformers and peft are at hand, from the repository root:

    python tools/measure_gpu.py [tools/gpu_cases.json]

It writes ``gpu_results.jsonl`` into ``$OUT`` (or the current folder): a first line with the
versions, the card and ``context_used`` (the card's use after CUDA's start and one cuBLAS
matmul, before any model), then one line a case. tools/record_gpu.py turns it into a fixture.
Not part of CI.
"""

import gc
import json
import os
import sys
import time
import traceback
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "src" / "paramcount" / "catalog"
OUT = Path(os.environ.get("OUT", "."))
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def config(model_id: str) -> dict:
    return json.loads((CATALOG / (model_id.replace("/", "--") + ".json")).read_text())["config"]


def used() -> int:
    free, total = torch.cuda.mem_get_info()
    return total - free


def reset() -> None:
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()


def peaks() -> dict:
    return dict(peak_alloc=torch.cuda.max_memory_allocated(), peak_reserved=torch.cuda.max_memory_reserved())


def build(model_id: str, dtype: torch.dtype, attn: str | None = None, device: str = "cuda"):
    cfg = AutoConfig.for_model(**config(model_id))
    kw = {"attn_implementation": attn} if attn else {}
    with torch.device(device):
        return AutoModelForCausalLM.from_config(cfg, dtype=dtype, **kw)


def cache_bytes(cache) -> int:
    n = 0
    for layer in getattr(cache, "layers", []):
        for attr in ("keys", "values"):
            t = getattr(layer, attr, None)
            if isinstance(t, torch.Tensor):
                n += t.numel() * t.element_size()
    return n


def infer(model_id: str, T: int, B: int, dtype: str = "bf16", cache: str | None = None, attn: str | None = None):
    m = build(model_id, DTYPES[dtype], attn).eval()
    torch.cuda.synchronize()
    weights = torch.cuda.memory_allocated()
    ids = torch.randint(0, m.config.vocab_size, (B, T), device="cuda")
    torch.cuda.reset_peak_memory_stats()
    with torch.inference_mode():
        if cache == "static":
            out = m.generate(
                ids, max_new_tokens=1, do_sample=False, cache_implementation="static", return_dict_in_generate=True
            )
        else:
            out = m(input_ids=ids, use_cache=True, logits_to_keep=1)
        torch.cuda.synchronize()
        r = dict(weights=weights, kv=cache_bytes(out.past_key_values), **peaks(), used_after=used())
    r["attn"] = m.config._attn_implementation
    del out, m, ids
    return r


def train(model_id: str, T: int, B: int, precision: str, recompute: str = "none"):
    m = build(model_id, torch.float32 if precision == "mixed" else torch.bfloat16).train()
    if recompute == "full":
        m.gradient_checkpointing_enable()
    m.config.use_cache = False
    torch.cuda.synchronize()
    weights = torch.cuda.memory_allocated()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-5)
    steps = two_steps(m, opt, T, B, autocast=precision == "mixed")
    r = dict(weights=weights, steps=steps, attn=m.config._attn_implementation)
    del m, opt
    return r


def two_steps(m, opt, T: int, B: int, autocast: bool = False) -> list[dict]:
    """Two AdamW steps (the second with the optimizer's states), each with its phases' peaks."""
    ids = torch.randint(0, m.config.vocab_size, (B, T), device="cuda")
    steps = []
    for _ in range(2):
        torch.cuda.reset_peak_memory_stats()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = m(input_ids=ids, labels=ids).loss
        torch.cuda.synchronize()
        phase = dict(forward_peak_alloc=torch.cuda.max_memory_allocated(), after_forward=torch.cuda.memory_allocated())
        loss.backward()
        torch.cuda.synchronize()
        phase["backward_peak_alloc"] = torch.cuda.max_memory_allocated()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        steps.append(dict(**peaks(), used_after=used(), alloc_after=torch.cuda.memory_allocated(), **phase))
    return steps


def lora(model_id: str, T: int, B: int, r: int, targets=None, recompute: str = "none"):
    from peft import LoraConfig, get_peft_model

    m = build(model_id, torch.bfloat16)
    if recompute == "full":
        m.gradient_checkpointing_enable()
        m.enable_input_require_grads()
    m = get_peft_model(m, LoraConfig(r=r, lora_alpha=2 * r, target_modules=targets, lora_dropout=0.0))
    m.train()
    m.config.use_cache = False
    torch.cuda.synchronize()
    weights = torch.cuda.memory_allocated()
    trainable = sum(p.numel() for p in m.parameters() if p.requires_grad)
    opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-4)
    steps = two_steps(m, opt, T, B)
    out = dict(weights=weights, trainable=trainable, steps=steps, attn=m.config._attn_implementation)
    del m, opt
    return out


def run(kind: str, model_id: str, T: int, B: int, o: dict) -> dict:
    if kind == "infer":
        return infer(model_id, T, B, o.get("dtype", "bf16"), o.get("cache"), o.get("attn"))
    if kind == "train":
        return train(model_id, T, B, o["precision"], o.get("recompute", "none"))
    return lora(model_id, T, B, o["r"], o.get("targets"), o.get("recompute", "none"))


def main() -> None:
    cases = json.loads(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "tools" / "gpu_cases.json").read_text())
    torch.zeros(1, device="cuda")
    a = torch.randn(256, 256, device="cuda")
    (a @ a).sum().item()
    del a
    reset()
    meta = dict(
        torch=torch.__version__,
        transformers=transformers.__version__,
        gpu=torch.cuda.get_device_name(),
        total=torch.cuda.mem_get_info()[1],
        context_used=used(),
    )
    print(json.dumps(meta), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "gpu_results.jsonl", "w") as f:
        f.write(json.dumps({"meta": meta}) + "\n")
        for kind, model_id, T, B, o in cases:
            reset()
            t0 = time.time()
            try:
                r, err = run(kind, model_id, T, B, o), None
            except Exception:  # record it and go on to the next case
                r, err = {}, traceback.format_exc(limit=3)
            row = dict(kind=kind, id=model_id, T=T, B=B, extra=o, secs=round(time.time() - t0, 1), error=err, **r)
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(json.dumps(row)[:300], flush=True)
            reset()


if __name__ == "__main__":
    main()
