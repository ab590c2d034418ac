"""Ollama's estimate as the named release printed it, held to logs users pasted in public threads.

``tests/fixtures/ollama_logs.json`` keeps each log's ``offload`` line as it appears, with the
release it came from and why. The models are rebuilt here as GGUF headers from their published
shapes and the types Ollama's files carry (llama.cpp's Q4_K_M mix, gpt-oss's MXFP4 experts), so
the figures come from the same tensor bytes Ollama summed. Bar: the layers offloaded equal, and
every logged size within 2% (64 MiB for small terms; the log rounds to one decimal).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.gguf.mix import use_more_bits
from paramcount.memory.core.gpus import gpu
from paramcount.memory.runtimes.ollama import Asked, estimate_plan
from paramcount.memory.runtimes.ollama.ggml import OllamaGGUF, graph_size, vision_graph
from paramcount.memory.runtimes.ollama.versions import parse, release

from .gguf_files import gemma3_spec, llama_spec, write

LOGS = json.loads((Path(__file__).parent / "fixtures" / "ollama_logs.json").read_text())["logs"]
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def q4_k_m(spec: dict, blocks: int) -> dict:
    """llama.cpp's Q4_K_M mix on a spec written in Q4_K: attn_v and ffn_down in Q6_K on the
    layers ``use_more_bits`` names, the token embedding (the output head when tied) in Q6_K."""
    for t in spec["tensors"]:
        name = t[0]
        if name.startswith("blk.") and name.endswith(("attn_v.weight", "ffn_down.weight")):
            t[2] = "Q6_K" if use_more_bits(int(name.split(".")[1]), blocks) else "Q4_K"
        elif name == "token_embd.weight" or name == "output.weight":
            t[2] = "Q6_K"
    return spec


def gemma3_12b() -> dict:
    """gemma3:12b as Ollama's library ships it: Q4_K_M text, the SigLIP tower (27 blocks of 1152,
    F16) in the same file under ``v.``; 262,144 tokens; windows of 1,024."""
    spec = q4_k_m(gemma3_spec("gemma3:12b", 48, 3840, 16, 8, 256, 15360, 262144, window=1024, context=131072,
                              ftype="Q4_K"), 48)  # fmt: skip
    spec["meta"].update({
        "vision.block_count": 27, "vision.embedding_length": 1152, "vision.feed_forward_length": 4304,
        "vision.attention.head_count": 16, "vision.image_size": 896, "vision.patch_size": 14, "vision.num_channels": 3,
    })  # fmt: skip
    w, f = 1152, 4304
    tower = [["v.patch_embd.weight", [w, 3, 14, 14], "F16"], ["v.patch_embd.bias", [w], "F32"],
             ["v.position_embd.weight", [4096, w], "F16"]]  # fmt: skip
    for i in range(27):
        b = f"v.blk.{i}."
        for part in ("attn_q", "attn_k", "attn_v", "attn_out"):
            tower += [[b + part + ".weight", [w, w], "F16"], [b + part + ".bias", [w], "F32"]]
        tower += [[b + "ffn_up.weight", [f, w], "F16"], [b + "ffn_up.bias", [f], "F32"]]
        tower += [[b + "ffn_down.weight", [w, f], "F16"], [b + "ffn_down.bias", [w], "F32"]]
        tower += [[b + n, [w], "F32"] for n in ("ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias")]
    tower += [["v.post_layernorm.weight", [w], "F32"], ["v.post_layernorm.bias", [w], "F32"]]
    tower += [["mm.mm_input_projection.weight", [3840, w], "F16"], ["mm.mm_soft_emb_norm.weight", [w], "F32"]]
    spec["tensors"] += tower
    return spec


def gpt_oss_20b() -> dict:
    """gpt-oss:20b as Ollama's library ships it (architecture ``gptoss``): 24 blocks of 2,880,
    64 query heads and 8 KV heads of 64, 32 experts in MXFP4, attention and head in BF16."""
    e, n, hd, x = 2880, 24, 64, 32
    meta = {
        "context_length": 131072, "embedding_length": e, "block_count": n, "feed_forward_length": e,
        "attention.head_count": 64, "attention.head_count_kv": 8, "attention.key_length": hd,
        "attention.value_length": hd, "attention.sliding_window": 128, "expert_count": x, "expert_used_count": 4,
        "attention.layer_norm_rms_epsilon": 1e-5, "rope.freq_base": 150000.0,
    }  # fmt: skip
    tensors = [["token_embd.weight", [201088, e], "BF16"]]
    for i in range(n):
        b = f"blk.{i}."
        tensors += [[b + "attn_norm.weight", [e], "F32"], [b + "post_attention_norm.weight", [e], "F32"],
                    [b + "attn_q.weight", [64 * hd, e], "BF16"], [b + "attn_q.bias", [64 * hd], "F32"],
                    [b + "attn_k.weight", [8 * hd, e], "BF16"], [b + "attn_k.bias", [8 * hd], "F32"],
                    [b + "attn_v.weight", [8 * hd, e], "BF16"], [b + "attn_v.bias", [8 * hd], "F32"],
                    [b + "attn_out.weight", [e, 64 * hd], "BF16"], [b + "attn_out.bias", [e], "F32"],
                    [b + "attn_sinks", [64], "F32"], [b + "ffn_gate_inp.weight", [x, e], "F32"],
                    [b + "ffn_gate_inp.bias", [x], "F32"]]  # fmt: skip
        for part in ("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"):
            tensors += [[b + part + ".weight", [x, e, e], "MXFP4"], [b + part + ".bias", [x, e], "F32"]]
    tensors += [["output_norm.weight", [e], "F32"], ["output.weight", [201088, e], "BF16"]]
    return {"name": "gpt-oss:20b", "arch": "gptoss", "meta": meta, "tensors": tensors, "vocab": 201088}


def llama32_3b() -> dict:
    """llama3.2:3b as Ollama's library ships it: Q4_K_M, tied head (token_embd Q6_K), rope_freqs."""
    spec = q4_k_m(llama_spec("llama3.2:3b", 28, 3072, 24, 8, 8192, 128256, context=131072, ftype="Q4_K", tied=True), 28)
    spec["tensors"].append(["rope_freqs.weight", [64], "F32"])
    return spec


MODELS = {"gemma3:12b": gemma3_12b, "gpt-oss:20b": gpt_oss_20b, "llama3.2:3b": llama32_3b}


def logged(line: str) -> dict:
    """The offload line's fields: sizes in bytes (HumanBytes2: B, KiB, MiB, GiB), counts as ints."""
    out = {}
    for key, value in re.findall(r'([\w.]+)=("\[?[^"]*\]?"|\S+)', line):
        v = value.strip('"[]')
        m = re.fullmatch(r"([\d.]+) (B|KiB|MiB|GiB)", v)
        out[key] = round(float(m[1]) * UNITS[m[2]]) if m else int(v) if re.fullmatch(r"-?\d+", v) else v
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("logs")
    return {name: write(build(), folder / f"{name.replace(':', '-')}.gguf") for name, build in MODELS.items()}


def ours(files, log, version: str | None):
    """paramcount's plan for the log's model on one GPU with the logged free memory."""
    got = logged(log["line"])
    model = paramcount.load(str(files[log["model"]]))
    asked = Asked(version=version, **log["asked"])
    return estimate_plan(model, gpu("rtx4090"), asked, free=got["memory.available"]), got


def near(mine: int, theirs: int) -> bool:
    """Within 2%, or 64 MiB for a small term, of a figure the log rounded to one decimal."""
    return abs(mine - theirs) <= max(theirs * 2 // 100, 64 << 20)


@pytest.mark.parametrize("log", LOGS, ids=lambda g: f"{g['model']}-v{g['ollama']}-{g['url'].rsplit('/', 1)[1]}")
def test_the_named_release_prints_what_the_log_shows(files, log):
    o, got = ours(files, log, log["ollama"])
    assert o.estimate.layers == got["layers.offload"] and o.layers_model == got["layers.model"]
    assert near(o.estimate.total, got["memory.required.full"])
    assert near(o.estimate.vram, got["memory.required.partial"])
    assert near(sum(o.sizes.kv), got["memory.required.kv"])
    for key, mine in (("memory.graph.full", o.sizes.full), ("memory.graph.partial", o.sizes.partial)):
        assert key not in got or near(mine, got[key]), key
    if "projector.weights" in got:  # the vision tower in the model's file: GGML.VisionGraphSize
        weights, graph = vision_graph(OllamaGGUF(paramcount.gguf.reader.read_header(files[log["model"]])),
                                      release(log["ollama"]))  # fmt: skip
        assert near(weights, got["projector.weights"]) and near(graph, got["projector.graph"])


def test_the_scheduler_tries_four_sequences_then_one(files):
    """v0.5.x's llama3.2 fits at 4 sequences (the runner's --parallel 4, --ctx-size 8192);
    v0.6.5's gemma3 does not fit at 4 on 11.5 GiB and loads at 1 (608 MiB of cache at 2,048)."""
    llama = next(g for g in LOGS if g["model"] == "llama3.2:3b")
    gemma = next(g for g in LOGS if g["ollama"] == "0.6.5")
    assert ours(files, llama, "0.5.1")[0].settings.parallel == 4
    assert ours(files, gemma, "0.6.5")[0].settings.parallel == 1
    assert ours(files, llama, "0.10.0")[0].settings.parallel == 1  # defaultParallel 1 from v0.10.0


def test_the_newest_release_still_refuses_the_ollama_engine(files):
    with pytest.raises(ParamcountError, match="runs gptoss on its own engine"):
        ours(files, LOGS[0], None)
    with pytest.raises(ParamcountError, match="runs gemma3 on its own engine"):
        ours(files, LOGS[1], "0.11.11")


def test_each_release_applies_the_changes_up_to_it():
    old, new = release("0.2.8"), release("0.12.10")
    assert (old.default_context, old.auto_parallel, old.gpu_overhead, old.kv_types) == (2048, 4, False, False)
    assert (new.default_context, new.auto_parallel, new.gpu_overhead, new.kv_types) == (4096, 1, True, True)
    assert not old.llama_full_vocab and release("0.3.10").llama_full_vocab
    assert "chatglm" not in release("0.2.0").graphs and "chatglm" in old.graphs
    assert (release("0.7.0").largest_buffer, release("0.7.1").largest_buffer) == (True, False)
    assert [release(v).gptoss for v in ("0.10.1", "0.11.0", "0.11.3", "0.11.8")] == ["", "2x", "1x", "flash"]
    assert parse("0.6") == (0, 6, 8) and parse("v0.11.4") == (0, 11, 4) and parse(None) == (0, 12, 10)


@pytest.mark.parametrize(
    "version, message",
    [("0.2.9", "unknown Ollama release '0.2.9'"), ("1.0", "unknown Ollama release"), ("0.1.48", "unknown"),
     ("0.13.1", "does not estimate layers"), ("0.12.11", "does not estimate layers"), ("x", "unknown")],
)  # fmt: skip
def test_an_unknown_release_is_one_line(files, capsys, version, message):
    args = ["fit", str(files["llama3.2:3b"]), "--runtime", "ollama", "--gpu", "rtx3060", "--ollama-version", version]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--ollama-version" in err and message in err


def test_the_cli_names_the_release(files, capsys):
    args = ["memory", str(files["llama3.2:3b"]), "--runtime", "ollama", "--gpu", "a100-80gb", "--json"]
    main([*args, "--ollama-version", "0.5.1"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["ollama"]["version"] == "v0.5.1" and doc["settings"]["num_parallel"] == 4
    assert doc["settings"]["num_ctx"] == 2048  # api.DefaultOptions before v0.6.7
    main(args)
    doc = json.loads(capsys.readouterr().out)
    assert doc["ollama"]["version"] == "v0.12.10" and doc["settings"]["num_ctx"] == 4096


# ---- rules no log above reaches, each worked out by hand from that release's Go source


def test_llamas_full_graph_had_no_vocabulary_term_before_0_3_10(files):
    """llm/ggml.go GraphSize, case "llama": ``4·b·(1 + 4e + c·(1 + h))`` alone until v0.3.10 added
    ``max(…, 4·b·(e + vocab))``; at 512 tokens the vocabulary's term is the larger."""
    f = OllamaGGUF(paramcount.gguf.reader.read_header(files["llama3.2:3b"]))
    b, c, e, h, v = 512, 512, 3072, 24, 128256
    assert graph_size(f, c, b, 1, "", release("0.3.9")).full == 4 * b * (1 + 4 * e + c * (1 + h))
    assert graph_size(f, c, b, 1, "", release("0.3.10")).full == 4 * b * (e + v)


def test_gpt_oss_graph_with_flash_attention_from_0_11_8(files):
    """v0.11.8: flash attention on by default for gptoss (GGML.FlashAttention) and its partial
    graph ``(4·num_parallel + context/1024 + 110) MiB``, no full graph (memory.go takes the partial)."""
    o = ours(files, LOGS[0], "0.11.8")[0]
    assert o.settings.flash and o.settings.kv_type == "q4_0"  # the log's OLLAMA_KV_CACHE_TYPE, now applied
    assert o.sizes.partial == o.sizes.full == (4 + 8192 // 1024 + 110) << 20
    cell = (64 + 64) * 8 // 2  # q4_0: half a byte an element, per token and layer
    assert sum(o.sizes.kv) == 12 * cell * (4096 + 512) + 12 * cell * 8192


def test_blocks_from_the_first_up_and_no_overhead_before_0_3_10(files):
    """v0.2.8 reads no OLLAMA_GPU_OVERHEAD and places blk.0 first, counting what did not fit at
    the last block's size; v0.7.0's buffer is the largest layer group (here token_embd)."""
    model = paramcount.load(str(files["llama3.2:3b"]))
    old = estimate_plan(model, gpu("rtx3060"), Asked(version="0.2.8", overhead=1 << 30), free=2 << 30)
    assert old.settings.overhead == 0 and any("OLLAMA_GPU_OVERHEAD" in n for n in old.plan.notes)
    f = OllamaGGUF(paramcount.gguf.reader.read_header(files["llama3.2:3b"]))
    block = f.layer("blk.27") + old.sizes.kv[27]
    assert old.estimate.total - old.estimate.vram == (28 - old.estimate.placed) * block + old.sizes.output
    new = estimate_plan(model, gpu("rtx3060"), Asked(version="0.7.0"), free=2 << 30)
    assert max(f.layer(g) or 0 for g in f.groups) == f.layer("token_embd") > f.layer("blk.0")
    assert new.estimate.buffer == f.layer("token_embd") + new.sizes.kv[0]


@pytest.mark.parametrize("version, cells", [("0.6.5", 512), ("0.9.0", 2048), ("0.11.4", 2048), ("0.11.5", 512)])
def test_every_estimate_took_2048_cells_at_least_from_0_7_1_to_0_11_4(files, version, cells):
    """llm/memory.go v0.7.1…v0.11.4: ``opts.NumCtx = max(opts.NumCtx, 2048)`` for any model without
    a projector file; before, only with one; from v0.11.5 only for a vision model (GetRunner)."""
    model = paramcount.load(str(files["llama3.2:3b"]))
    o = estimate_plan(model, gpu("a100-80gb"), Asked(version=version, context=512, parallel=1))
    assert sum(o.sizes.kv) == cells * 28 * (128 + 128) * 8 * 2  # f16 K and V of 8 heads of 128, 28 layers


def test_mxfp4_before_ollama_knew_ggml_type_39(files):
    """fs/ggml/type.go: MXFP4 arrived with gpt-oss (v0.11.0) as ggml type 4, the type Ollama's own
    files use; type 39 (llama.cpp's) sized from v0.11.5. Between, a type-39 tensor is counted as
    its type-4 twin and the plan says so; before v0.11.0 Ollama sizes it 0 bytes: refused. BF16
    (the attention here) is not sized before v0.3.14."""
    o = ours(files, LOGS[0], "0.11.4")[0]
    assert o.plan.settings["mxfp4_as_type_4"] is True and any("as type 4" in n for n in o.plan.notes)
    assert "mxfp4_as_type_4" not in ours(files, LOGS[0], "0.11.5")[0].plan.settings
    with pytest.raises(ParamcountError, match=r"Ollama v0\.3\.13 sizes tensor type BF16 as 0 bytes"):
        ours(files, LOGS[0], "0.3.13")
    with pytest.raises(ParamcountError, match=r"Ollama v0\.10\.1 sizes tensor type MXFP4 as 0 bytes"):
        ours(files, LOGS[0], "0.10.1")
