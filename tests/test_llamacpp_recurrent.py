"""The llama.cpp plan of the hybrid and state-space families, held to llama.cpp itself.

Oracles:

* tests/fixtures/llamacpp_hybrid.json, recorded by tools/record_llamacpp_hybrid.py: llama.cpp's
  own converter (llama-cpp-python 0.3.36's vendored conversion/) run on each family's catalog
  config and on a small and a published-width config of it; the small and published-width files
  (kept as tests/gguf_files.py specs) loaded by llama-cpp-python 0.3.36 built from source, and the
  buffers it logs at several settings: model, RS (recurrent state), KV, output and compute.
  llama.cpp logs MiB with two decimals, so "equal" is: our bytes print as its figure; the
  skipped MTP tensors' bytes it logs one by one, so the model buffer is held to the byte.
* The formulas restated below from llama.cpp's source, written from the config's fields:
  ``llama_hparams::n_embd_r`` / ``n_embd_s`` (src/llama-hparams.cpp) with each converter's keys
  (conversion/*.py), the recurrent and attention layers of each ``load_arch_hparams``
  (src/models/*.cpp) and ``create_memory``'s filters (src/llama-model.cpp).
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
from pathlib import Path

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.memory import inference
from paramcount.memory.runtimes.llamacpp.recurrent import converted_meta
from paramcount.memory.weights.schemes import weights

from .gguf_files import write

pytest.importorskip("gguf")
DOC = json.loads((Path(__file__).parent / "fixtures" / "llamacpp_hybrid.json").read_text())
FAMILIES = DOC["families"]
SIZES = ("small", "medium")


def mib(n: int) -> float:
    return round(n / 2**20, 2)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[tuple[str, str], paramcount.Model]:
    folder = tmp_path_factory.mktemp("hybrid")
    out = {}
    for fam, rec in FAMILIES.items():
        for size in SIZES:
            out[fam, size] = paramcount.load(str(write(rec[size]["spec"], folder / f"{fam}-{size}.gguf")))
    mtp = DOC["mtp"]["glm4_moe"]
    out["glm4_moe", "small"] = paramcount.load(str(write(mtp["spec"], folder / "glm4_moe.gguf")))
    return out


def plan_of(model, case: dict, **kw):
    return inference(
        model, context=case["context"], batch=case["parallel"], runtime="llama.cpp", ubatch=case["ubatch"],
        flash_attn=case["flash_attn"], kv_unified=case["kv_unified"], device="cpu", **kw,
    )  # fmt: skip


def recorded(size: str):
    return [
        pytest.param(fam, size, i, id=f"{fam}-{size}-{c['context']}x{c['parallel']}")
        for fam, rec in FAMILIES.items()
        for i, c in enumerate(rec[size]["cases"])
        if "error" not in c  # Kimi-Linear without flash attention: llama.cpp 0.3.36 crashes
    ]


# ---- the converter's metadata -------------------------------------------------------------------


@pytest.mark.parametrize("fam", list(FAMILIES))
def test_metadata_from_a_config_is_the_converters(fam):
    """Every key the plan reads from a config, as llama.cpp's converter wrote it for the catalog
    config and for the small and published-width ones."""
    rec = FAMILIES[fam]
    for config, meta, arch in (
        (paramcount.load(rec["hub"]), rec["full_meta"], rec["small"]["spec"]["arch"]),
        *((paramcount.load(rec[s]["config"]), rec[s]["spec"]["meta"], rec[s]["spec"]["arch"]) for s in SIZES),
    ):
        got_arch, got = converted_meta(config)
        assert got_arch == arch
        assert {k: meta.get(k) for k in got} == got, config.name


# ---- held to llama.cpp's buffers ------------------------------------------------------------------


@pytest.mark.parametrize(("fam", "size", "i"), recorded("small") + recorded("medium"))
def test_buffers_equal_llama_cpps(files, fam, size, i):
    case = FAMILIES[fam][size]["cases"][i]
    model = files[fam, size]
    plan = plan_of(model, case)
    terms = {t.key: t for t in plan.terms}
    assert plan.partial is None
    assert weights(model, "stored").bytes == case["llama_model_size"]  # the file
    loaded = case["llama_model_size"] - case["skipped_bytes"]  # what is loaded, in its mapped span
    assert terms["weights"].bytes == loaded + twin_span_padding(fam, size)
    assert mib(terms["weights"].bytes) == float(case["model_buffers_mib"]["CPU_Mapped"])
    assert [mib(terms["state"].bytes)] == case["rs_buffers_mib"]
    cells, _, seqs = case["rs_cells_layers_seqs"]
    assert cells == seqs == max(1, case["parallel"]) and f"{cells} cell" in terms["state"].label
    assert ([mib(terms["kv_cache"].bytes)] if "kv_cache" in terms else []) == case["kv_buffers_mib"]
    assert plan.settings["n_ctx"] == case["n_ctx"]
    assert mib(terms["output"].bytes) == case["output_mib"]
    assert list(terms) == [k for k in ("weights", "kv_cache", "state", "compute", "output") if k in terms]


@functools.cache  # one read per family and size: it serves every recorded case
def twin_span_padding(fam: str, size: str) -> int:
    """:func:`span_padding` of the family's file as written with a one-token vocabulary: a GGUF
    tensor's offset counts from the start of the data section, so the metadata before it cannot
    move the span, and gguf-py's reader parses a vocabulary one element at a time (10 to 25 s for
    the published widths' 100k to 248k tokens). The test below holds the twin to the file."""
    with tempfile.TemporaryDirectory() as folder:
        return span_padding(str(write({**FAMILIES[fam][size]["spec"], "vocab": 1}, Path(folder) / "twin.gguf")))


@pytest.mark.parametrize("fam", list(FAMILIES))
def test_the_twin_with_one_token_has_the_files_span(files, fam):
    """The small files' 1,024 tokens read quickly: their span, read whole, is the twin's."""
    assert span_padding(files[fam, "small"].source) == twin_span_padding(fam, "small")


def span_padding(path: str) -> int:
    """What llama.cpp's CPU_Mapped buffer holds beyond the tensors it loads: the file's span from
    the first loaded tensor to the end of the last (llama_model_loader::get_mapping_range), read
    with gguf-py; the MTP blocks (the last nextn_predict_layers) are not loaded."""
    import gguf

    r = gguf.GGUFReader(path)
    arch = r.fields["general.architecture"].contents()
    n = r.fields[f"{arch}.block_count"].contents()
    nextn = r.fields.get(f"{arch}.nextn_predict_layers")
    first_mtp = n - (nextn.contents() if nextn else 0)
    kept = sorted(
        (t for t in r.tensors if not (m := re.match(r"blk\.(\d+)\.", t.name)) or int(m[1]) < first_mtp),
        key=lambda t: t.data_offset,
    )
    return kept[-1].data_offset + int(kept[-1].n_bytes) - kept[0].data_offset - sum(int(t.n_bytes) for t in kept)


def test_the_model_buffer_leaves_out_the_mtp_block_llama_cpp_skips(files):
    """GLM-4.5's block 46 (here 2) and Qwen's MTP layer: TENSOR_SKIP unless load_mtp."""
    for model, case in (
        (files["glm4_moe", "small"], DOC["mtp"]["glm4_moe"]["cases"][0]),
        (files["qwen3_5_text", "small"], FAMILIES["qwen3_5_text"]["small"]["cases"][0]),
    ):
        plan = plan_of(model, case)
        w = plan.term("weights")
        loaded = case["llama_model_size"] - case["skipped_bytes"]
        assert case["skipped_tensors"] > 0 and w.bytes == loaded + span_padding(model.source)
        assert "not loaded: the file's multi-token-prediction block(s)" in w.assumption
        assert f"({case['skipped_tensors']:,} tensors, {case['skipped_bytes']:,} B)" in w.assumption


def compute_error(files, fam, size, case) -> float:
    return plan_of(files[fam, size], case).term("compute").bytes / 2**20 / case["compute_mib"] - 1


@pytest.mark.parametrize(("fam", "size", "i"), recorded("medium"))
def test_compute_estimate_at_published_widths(files, fam, size, i):
    """The compute buffer, an estimate (LFM2's and Granite 4.0-H's replayed, but over a unified
    cache: Granite's rows were −4.5% to +2.5% before): within 5% at the published widths, at every recorded
    setting (1 to 32 sequences, flash attention on and off, micro-batch 256), where the logits,
    the attention scores, a Mamba-2 mixer (Codestral: 116.37 planned, 116.49 MiB measured;
    248.00 and 251.75 with 32 sequences, the scan's output above the convolution input's block)
    or Jamba's routed feed-forward (196.00 planned, 196.03 measured) are the peak."""
    case = FAMILIES[fam][size]["cases"][i]
    err = compute_error(files, fam, size, case)
    assert abs(err) <= 0.05, f"{err:+.1%}"
    replayed = _replayed(fam, case)
    assert plan_of(files[fam, size], case).term("compute").estimate is not replayed
    if replayed:  # to the logged MiB's rounding
        assert abs(err) <= 0.001


def _replayed(fam: str, case: dict) -> bool:
    """replay.py: LFM2's and Granite 4.0-H's graphs, one stream per sequence."""
    return fam in ("lfm2", "granitemoehybrid") and not case["kv_unified"]


@pytest.mark.parametrize(("fam", "size", "i"), recorded("small"))
def test_compute_estimate_at_toy_widths(files, fam, size, i):
    """At widths far below any published model (hidden 256, a vocabulary of 1,024) the holes
    ggml-alloc leaves under the largest tensors are a larger share: within 6% for one to three
    sequences (Falcon-H1, its input normed once for each branch: 0.1%); with 32 sequences of 8
    tokens the holes that layers leave for the next are not modelled (the routed experts' sum
    of the gated DeltaNet MoE shapes lands above their weighted outputs: 14.5% under), within
    15%."""
    case = FAMILIES[fam][size]["cases"][i]
    err = compute_error(files, fam, size, case)
    assert abs(err) <= (0.15 if case["parallel"] == 32 else 0.06), f"{err:+.1%}"
    if _replayed(fam, case):  # Granite's small rows: −3.4% to −0.9% before the replay
        assert abs(err) <= 0.001


# ---- the formulas, from a config --------------------------------------------------------------------


def _kinds(c: dict, n: int) -> tuple[list[int], list[int]]:
    """(recurrent layers, attention layers) of a family's config, as the converter writes the
    per-layer head counts and each load_arch_hparams / create_memory reads them."""
    t = c["model_type"]
    if t in ("mamba", "mamba2"):
        return list(range(n)), []
    if t == "falcon_h1":
        return list(range(n)), list(range(n))
    if t == "jamba":
        attn = [i for i in range(n) if i % c["attn_layer_period"] == c["attn_layer_offset"]]
    elif t == "granitemoehybrid":
        attn = [i for i, x in enumerate(c["layer_types"]) if x == "attention"]
    elif t == "nemotron_h":
        pattern = c["hybrid_override_pattern"]
        return [i for i, x in enumerate(pattern) if x == "M"], [i for i, x in enumerate(pattern) if x == "*"]
    elif t == "lfm2":
        attn = list(c["full_attn_idxs"])
    elif t == "kimi_linear":
        attn = [i - 1 for i in c["linear_attn_config"]["full_attn_layers"]]
    else:  # Qwen: every full_attention_interval-th (4 unless stated)
        every = c.get("full_attention_interval", 4)
        attn = [i for i in range(n) if (i + 1) % every == 0]
    return [i for i in range(n) if i not in attn], attn


def _widths(c: dict) -> tuple[int, int]:
    """llama_hparams::n_embd_r() and n_embd_s() for the config, through the converter's keys."""
    t, h = c["model_type"], c["hidden_size"]
    if t == "mamba":  # d_inner = intermediate_size (2h), d_state, no groups
        d = c.get("intermediate_size") or 2 * h
        return (c["conv_kernel"] - 1) * d, c["state_size"] * d
    if t == "jamba":
        d = c["mamba_expand"] * h
        return (c["mamba_d_conv"] - 1) * d, c["mamba_d_state"] * d
    if t == "lfm2":  # the short convolution's last l_cache − 1 inputs; no S
        return h * (c["conv_L_cache"] - 1), 0
    if t == "kimi_linear":  # three convolutions (q, k, v) over n_head · head_dim; head_dim² a head
        own, heads = c["linear_attn_config"], c["num_attention_heads"]
        return 3 * (own["short_conv_kernel_size"] - 1) * heads * own["head_dim"], own["head_dim"] ** 2 * heads
    if t.startswith("qwen3"):  # gated DeltaNet in Mamba's keys: d_inner = v heads · v dim, groups = k heads
        d, groups, state = (
            c["linear_value_head_dim"] * c["linear_num_value_heads"],
            c["linear_num_key_heads"],
            c["linear_key_head_dim"],
        )
        return (c["linear_conv_kernel_dim"] - 1) * (d + 2 * groups * state), state * d
    d, groups, state, kernel = {
        "mamba2": lambda: (c["expand"] * h, c["n_groups"], c["state_size"], c["conv_kernel"]),
        "falcon_h1": lambda: (c["mamba_d_ssm"], c["mamba_n_groups"], c["mamba_d_state"], c["mamba_d_conv"]),
        "granitemoehybrid": lambda: (c["mamba_expand"] * h, c["mamba_n_groups"], c["mamba_d_state"], c["mamba_d_conv"]),
        "nemotron_h": lambda: (c["mamba_num_heads"] * c["mamba_head_dim"], c["n_groups"], c["ssm_state_size"],
                               c["conv_kernel"]),
    }[t]()  # fmt: skip
    return (kernel - 1) * (d + 2 * groups * state), state * d


def _kv_row(c: dict) -> int:
    """f16 bytes one attention layer's K and V add per cell: MLA's latent and rope key only."""
    if c["model_type"] == "kimi_linear":
        return 2 * (c["kv_lora_rank"] + c["qk_rope_head_dim"])
    d = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    return 2 * 2 * c["num_key_value_heads"] * d


def expected(c: dict, parallel: int, context: int, device: str) -> tuple[int, int]:
    """(RS bytes, KV bytes) at ``context`` tokens × ``parallel`` sequences, unified off."""
    n = len(c["hybrid_override_pattern"]) if c["model_type"] == "nemotron_h" else c["num_hidden_layers"]
    recurrent, attention = _kinds(c, n)
    r, s = _widths(c)
    align = 32 if device == "cpu" else 128
    pad = lambda b: -(-b // align) * align  # noqa: E731
    state = len(recurrent) * (pad(r * 4 * parallel) + pad(s * 4 * parallel))
    n_ctx = -(-context * parallel // 256) * 256  # llama_context: n_ctx, then n_ctx_seq, padded to 256
    n_ctx_seq = -(-(n_ctx // parallel) // 256) * 256
    return state, (len(attention) * _kv_row(c) * n_ctx_seq * parallel if attention else 0)


@pytest.mark.parametrize("fam", list(FAMILIES))
@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_state_and_kv_of_a_catalog_config_from_the_formulas(fam, device, tmp_path):
    """The catalog's config, planned from the config and from a GGUF file with the metadata
    llama.cpp's converter wrote for it: the RS and KV buffers the formulas give."""
    rec = FAMILIES[fam]
    model = paramcount.load(rec["hub"])
    c = dict(model.config)
    spec = {"name": fam, "arch": rec["small"]["spec"]["arch"], "meta": rec["full_meta"], "vocab": 1024,
            "tensors": [["token_embd.weight", [1024, c["hidden_size"]], "F16"]]}  # fmt: skip
    gguf_model = paramcount.load(str(write(spec, tmp_path / "full.gguf")))
    for context, parallel in ((4096, 1), (32768, 3)):
        state, kv = expected(c, parallel, context, device)
        for m in (model, gguf_model):
            plan = inference(m, context=context, batch=parallel, runtime="llama.cpp", device=device)
            terms = {t.key: t.bytes for t in plan.terms}
            assert terms["state"] == state, (m.source, context, parallel)
            assert terms.get("kv_cache", 0) == kv, (m.source, context, parallel)


@pytest.mark.parametrize("fam", list(FAMILIES))
def test_a_config_plans_as_its_converted_file(files, fam):
    """The small config and the file the converter wrote from it: the same KV and RS buffers."""
    config = paramcount.load(FAMILIES[fam]["small"]["config"])
    for case in FAMILIES[fam]["small"]["cases"]:
        a, b = plan_of(config, case), plan_of(files[fam, "small"], case)
        for key in ("state", "kv_cache"):
            assert {t.key: t.bytes for t in a.terms}.get(key) == {t.key: t.bytes for t in b.terms}.get(key), key


# ---- the model buffer of a planned mix ----------------------------------------------------------------


@pytest.mark.parametrize("hub", ["Qwen/Qwen3.5-27B", "Qwen/Qwen3-Next-80B-A3B-Instruct", "zai-org/GLM-4.5-Air"])
def test_a_planned_mix_loads_without_its_mtp_block(hub):
    """From a config, the q4_k_m file holds the MTP layer (the weights plan); llama.cpp's model
    buffer does not: the file's bytes less those of its tensors named at blocks ≥ num_hidden_layers
    (model.layers.N…, mtp.*) — the weights plan's rows, summed here by name."""
    model = paramcount.load(hub)
    n = model.config["num_hidden_layers"]
    rows = weights(model, "q4_k_m").rows

    def mtp(name: str) -> bool:
        m = re.search(r"\.layers\.(\d+)", name)
        return name.startswith("mtp.") or (m is not None and int(m[1]) >= n)

    skipped = sum(r.bytes for r in rows if mtp(r.name))
    plan = inference(model, "q4_k_m", context=4096, runtime="llama.cpp", device="cpu")  # every tensor in one buffer
    assert skipped > 0
    assert plan.term("weights").bytes == sum(r.bytes for r in rows) - skipped
    with pytest.raises(ParamcountError, match="GGUF type"):  # a GGUF type is llama.cpp's, not transformers'
        inference(model, "q4_k_m", context=4096)


def test_nemotron_h_moe_as_llama_cpp_allocates_it(tmp_path):
    """NemotronHModel writes a config with experts as nemotron_h_moe, its MTP step folded into one
    last block (attention and MoE: neither a KV nor a recurrent layer for create_memory's
    filters). The converter's metadata and llama.cpp's buffers, from the config and from the file."""
    rec = DOC["configs"]["nemotron_h_moe"]
    config = paramcount.load(rec["config"])
    arch, meta = converted_meta(config)
    assert arch == rec["spec"]["arch"] == "nemotron_h_moe"
    assert {k: rec["spec"]["meta"].get(k) for k in meta} == meta
    model = paramcount.load(str(write(rec["spec"], tmp_path / "nemotron_h_moe.gguf")))
    for case in rec["cases"]:
        plans = [plan_of(m, case) for m in (model, config)]
        for plan in plans:
            terms = {t.key: t for t in plan.terms}
            assert [mib(terms["state"].bytes)] == case["rs_buffers_mib"]
            assert [mib(terms["kv_cache"].bytes)] == case["kv_buffers_mib"]
            assert mib(terms["output"].bytes) == case["output_mib"]
        loaded = case["llama_model_size"] - case["skipped_bytes"]
        assert plans[0].term("weights").bytes == loaded + span_padding(model.source)
    assert plans[1].term("state").parts[0].assumption == "layers 0, 2, 5, 7"  # the M blocks, not the MTP step


# ---- the CLI -----------------------------------------------------------------------------------------


def test_cli_plans_a_hybrid_in_full(capsys):
    assert (
        main(["memory", "Qwen/Qwen3.5-27B", "--runtime", "llama.cpp", "--dtype", "q4_k_m", "-np", "2", "--json"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert "partial" not in doc
    keys = ["weights", "kv_cache", "state", "compute", "output", "overhead", "host_weights", "host_compute"]
    assert [t["key"] for t in doc["terms"]] == keys
    state = next(t for t in doc["terms"] if t["key"] == "state")
    assert state["estimate"] is False and "create_memory" in state["source"]
    assert main(["memory", "state-spaces/mamba-2.8b-hf", "--runtime", "llama.cpp", "--width", "120"]) == 0
    out = capsys.readouterr().out
    assert "recurrent state" in out and "KV cache" not in out


def test_granite_80_byte_tensors_are_padded_in_the_mapped_span(tmp_path):
    """Granite 4.0-H with 20 Mamba heads: ssm_a, ssm_d and ssm_dt.bias are 80 B, and each tensor's
    data starts on general.alignment (32 B), so llama.cpp's CPU_Mapped buffer holds 16 B more after
    each: 192 B for four Mamba layers. From the file (its span, read with gguf-py) and from the
    config (the converter pads every tensor; its last, output_norm, fills its 32 B)."""
    rec = FAMILIES["granitemoehybrid"]["small"]
    spec = {**rec["spec"], "tensors": [list(t) for t in rec["spec"]["tensors"]]}
    for t in spec["tensors"]:
        if t[0].endswith(("ssm_a", "ssm_d", "ssm_dt.bias")):
            t[1] = [20, 1] if t[0].endswith(("ssm_a", "ssm_d")) else [20]
    spec["meta"] = {**spec["meta"], "ssm.time_step_rank": 20}
    model = paramcount.load(str(write(spec, tmp_path / "granite-20.gguf")))
    mamba = sum(t[0].endswith("ssm_a") for t in spec["tensors"])
    plan = plan_of(model, rec["cases"][0])
    w = plan.term("weights")
    assert span_padding(model.source) == 3 * mamba * 16 > 0
    assert w.bytes == weights(model, "stored").bytes + 3 * mamba * 16
    assert "general.alignment 32" in w.assumption
    config = {**rec["config"], "hidden_size": 640, "mamba_n_heads": 20, "layer_types": ["mamba"] * 4}
    w = plan_of(paramcount.load(config), rec["cases"][0], scheme="q8_0").term("weights")
    assert w.parts[-1].bytes == 4 * 3 * 16 == 192
    assert "padded to 32 B" in w.assumption


# ---- files at widths other than the fixtures' (issue 20) -------------------------------------------
UNSEEN = DOC.get("unseen", {})


@pytest.mark.parametrize(
    ("name", "i"), [(n, i) for n, rec in UNSEEN.items() for i in range(len(rec["cases"]))], ids=lambda v: str(v)
)
def test_files_made_apart_from_the_fixtures(tmp_path, name, i):
    """LFM2-1.2B at full depth and Granite 4.0-H small at 12 layers, converted by llama.cpp's
    converter (tools/record_llamacpp_hybrid.py UNSEEN) and loaded by llama.cpp at 512 to
    4,096 cells, flash attention on and off: the mapped model buffer, RS, KV and output equal
    llama.cpp's logged MiB, the compute buffer within 5%."""
    rec = UNSEEN[name]
    case = rec["cases"][i]
    model = paramcount.load(str(write(rec["spec"], tmp_path / f"{name}.gguf")))
    plan = plan_of(model, case)
    terms = {t.key: t for t in plan.terms}
    assert mib(terms["weights"].bytes) == float(case["model_buffers_mib"]["CPU_Mapped"])
    assert [mib(terms["state"].bytes)] == case["rs_buffers_mib"]
    assert ([mib(terms["kv_cache"].bytes)] if "kv_cache" in terms else []) == case["kv_buffers_mib"]
    assert mib(terms["output"].bytes) == case["output_mib"]
    err = terms["compute"].bytes / 2**20 / case["compute_mib"] - 1
    assert abs(err) <= 0.05, f"{err:+.1%}"
