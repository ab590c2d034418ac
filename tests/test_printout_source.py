"""Printouts of transformers classes no family defines: raw parameters named from the source
(frontends/printout_source), so such a count is a lower bound, never silently short."""

from __future__ import annotations

import subprocess
import sys

import pytest

from paramcount.frontends.printout import from_text, parse
from paramcount.frontends.printout_source import expand, parameter_free


def _printed(model_type: str, cls: str, **fields):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        model = getattr(transformers, cls)(config)
    return str(model), sum(p.numel() for p in model.parameters())


def test_position_table_of_an_unknown_vision_family_is_named():
    text, real = _printed(
        "ijepa", "IJepaModel", hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        image_size=32, patch_size=8,
    )  # fmt: skip
    m = from_text(text, "ijepa").model
    assert m.total < real and m.inexact
    # mask_token is made only with use_mask_token: the source names it all the same (at least ...)
    assert "embeddings: mask_token, position_embeddings" in m.inexact


def test_an_unknown_family_without_raw_parameters_stays_exact():
    text, real = _printed(
        "xglm", "XGLMModel", d_model=32, num_layers=1, attention_heads=2, ffn_dim=64, vocab_size=100,
        max_position_embeddings=16,
    )  # fmt: skip
    m = from_text(text, "xglm").model
    assert m.inexact is None and m.total == real


def test_a_root_transformers_would_not_name_never_imports_it():
    code = (
        "import sys; from paramcount.frontends.printout import from_text;"
        "m = from_text('Net(\\n  (fc): Linear(in_features=2, out_features=3, bias=True)\\n)').model;"
        "print(m.total, 'transformers' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["9", "False", "False"]


# --- sharing: what print(model) prints at every place it is used ---------------------------


def _default(model_type: str):
    """transformers' default config of ``model_type`` built on the meta device (as the corpus of
    tools/printout_corpus.py does): its printout, its count, and whether it shares a parameter."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(transformers.AutoConfig.for_model(model_type))
    shared = len(list(model.named_parameters(remove_duplicate=False))) > len(list(model.named_parameters()))
    return str(model), sum(p.numel() for p in model.parameters()), shared


# The nine printouts of tools/printout_corpus.py that were silently wrong (a lower bound above the
# truth, or GraniteSpeech5's exact-looking total), and what each is now.
SHARED = [
    ("granite_speech5_ctc", "exact"),  # ctc_head is encoder.out: a tie its _tied_weights_keys declares
    ("seamless_m4t", "lower bound"),  # shared, encoder, decoder and lm_head tied as declared
    ("seamless_m4t_v2", "lower bound"),
    ("udop", "lower bound"),  # the patch embedding shared by the encoder
    ("csm", "lower bound"),  # the depth decoder's embedding is the backbone's audio embedding
    ("zamba", "not a bound"),  # one shared_transf handed to every hybrid layer
    ("zamba2", "not a bound"),
    ("bark", "not a bound"),  # BarkFineModel sets its ties in __init__: not readable as data
    ("pp_doclayout_v3", "not a bound"),  # ties whole heads with a run of alike layers
]


@pytest.mark.parametrize("model_type, kind", SHARED, ids=[m for m, _ in SHARED])
def test_shared_modules_are_counted_once_or_flagged(model_type, kind):
    text, real, shared = _default(model_type)
    p = from_text(text, model_type, tied=shared)
    m = p.model
    if kind == "exact":
        assert m.inexact is None and m.total == real
    elif kind == "lower bound":
        assert p.lower_bound and m.total <= real and m.inexact.startswith("lower bound")
    else:  # counted with a module the model holds once: above the truth, and said so
        assert not p.lower_bound and m.total > real
        assert m.inexact.startswith(f"not exact: {m.total:,} may count a shared module more than once")


def test_zamba_says_which_modules_may_be_shared():
    text, _, _ = _default("zamba")
    note = from_text(text, "zamba", tied=True).model.inexact
    assert "ZambaHybridLayer is handed linear, mamba_decoder, shared_transf by its caller" in note
    assert "(e.g. layers.2.linear)" in note


def test_declared_ties_replace_the_guess_from_shapes():
    """GraniteSpeech5's CTC head has the encoder's output shape but is no embedding: only the
    source says they are one tensor; untied, both totals are still given."""
    text, real, _ = _default("granite_speech5_ctc")
    p = from_text(text, "g", tied=False)
    assert set(p.ties) == {("ctc_head.weight", "encoder.out.weight"), ("ctc_head.bias", "encoder.out.bias")}
    assert p.tied_total == real < p.untied_total == p.model.total and p.model.inexact is None


def test_expand_follows_transformers():
    names = {f"{p}.{t}": False for p in ("enc", "dec.head", "dec.body") for t in ("weight", "bias")}
    # a module named for its tensors, paired in sorted order
    assert expand({"dec.head": "enc"}, "", names) == {"dec.head.bias": "enc.bias", "dec.head.weight": "enc.weight"}
    # under a model's prefix; a key naming nothing printed, or a tensor of a run, cannot be placed
    assert expand({"head.weight": "body.weight"}, "dec", names) == {"dec.head.weight": "dec.body.weight"}
    assert expand({"lm_head.weight": "enc.weight"}, "", names) is None
    assert expand({"dec.head": "enc"}, "", {**names, "dec.head.weight": True}) is None
    # sources cycle over targets: three heads, one embedding
    heads = {"e.weight": False, **{f"h.{i}.weight": False for i in range(3)}}
    assert expand({r"h\.\d+\.weight": "e.weight"}, "", heads) == {f"h.{i}.weight": "e.weight" for i in range(3)}


def test_leaves_whose_source_makes_no_parameter_hold_none():
    pytest.importorskip("transformers")
    root = parse("Llama4TextModel(\n  (norm): Llama4TextRMSNorm((8,), eps=1e-06)\n)")
    classes = {"Llama4TextL2Norm", "Llama4TextRMSNorm", "Llama4Router", "Llama4TextRotaryEmbedding", "NoSuchNorm"}
    # Llama4TextRMSNorm makes a Parameter; Llama4Router is an nn.Linear; NoSuchNorm is not transformers'
    assert parameter_free(root, classes) == {"Llama4TextL2Norm", "Llama4TextRotaryEmbedding"}
    assert parameter_free(parse("Net(\n  (a): Identity()\n)"), {"Llama4TextL2Norm"}) == set()


def test_a_parameter_free_leaf_keeps_a_count_exact():
    text = (
        "Llama4TextModel(\n  (proj): Linear(in_features=8, out_features=8, bias=False)\n"
        "  (qk_norm): Llama4TextL2Norm(eps=1e-05)\n  (odd): FancyScale()\n)"
    )
    pytest.importorskip("transformers")
    m = from_text(text).model
    assert m.total == 64 and "FancyScale" in m.inexact and "Llama4TextL2Norm" not in m.inexact
