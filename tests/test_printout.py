"""print(model) text: the seed's Bloom printout, real transformers printouts, torch modules, junk."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paramcount.errors import ParamcountError
from paramcount.frontends import printout

from .budget import calls, lines

FUZZ_CALLS = 50_000  # calls to read a junk text of a few hundred characters (3,396 the most measured)
FIXTURES = Path(__file__).parent / "fixtures"
CATALOG = Path(__file__).parent.parent / "src" / "paramcount" / "catalog"
SEED = FIXTURES / "bloom-1b4-zh.txt"  # copied from the seed article: indentation lost in the paste


def seed_text() -> str:
    return SEED.read_text(encoding="utf-8")


# --- the seed article ----------------------------------------------------------------------


def test_seed_printout_gives_both_totals_and_explains_the_tie():
    p = printout.from_text(seed_text(), str(SEED))
    assert p.tied_total == 1_303_111_680
    assert p.untied_total == 1_397_616_640
    assert p.likely_tied and not p.lower_bound
    assert p.ties == (("lm_head.weight", "transformer.word_embeddings.weight"),)
    m = p.model
    assert (m.total, m.total_with_ties) == (1_303_111_680, 1_397_616_640)
    assert m.class_name == "BloomForCausalLM" and m.model_type == "bloom"
    assert (m.backbone_class, m.backbone_total) == ("BloomModel", 1_303_111_680)
    note = " ".join(m.notes)
    assert "1,303,111,680" in note and "1,397,616,640" in note and "tie_word_embeddings=True" in note
    assert m.ties() == [("lm_head.weight", "transformer.word_embeddings.weight", 46145 * 2048)]


def test_seed_names_follow_named_parameters():
    m = printout.from_text(seed_text()).model
    shapes = {leaf.name: tuple(leaf.shape) for leaf in m.tensors()}
    assert shapes["transformer.h.0.self_attention.query_key_value.weight"] == (6144, 2048)
    assert shapes["transformer.h.23.mlp.dense_4h_to_h.bias"] == (2048,)
    assert shapes["transformer.word_embeddings_layernorm.bias"] == (2048,)
    assert len(shapes) == 3 + 24 * 12 + 2 + 1
    assert [(g.path, g.copies, g.each) for g in m.layers()] == [("transformer.h", 24, 50_358_272)]
    assert m.components() == {
        "embeddings": 94_504_960,
        "attention": 402_849_792,
        "feed_forward": 805_552_128,
        "norms": 204_800,
        "output_head": 0,
    }


def test_seed_matches_the_config_count_exactly():
    import paramcount

    from_config = paramcount.load("Langboat/bloom-1b4-zh")
    m = printout.from_text(seed_text()).model
    assert {(t.name, tuple(t.shape), t.tied_to) for t in m.tensors()} == {
        (t.name, tuple(t.shape), t.tied_to) for t in from_config.tensors()
    }
    assert m.components() == from_config.components()


def test_layout_does_not_matter():
    """Indented, flattened onto one line, or with CRLF line ends: the same count."""
    text = seed_text()
    depth, lines = 0, []
    for line in text.splitlines():
        depth -= line.startswith(")")
        lines.append("  " * depth + line)
        depth += line.endswith("(")
    for variant in ("\n".join(lines), " ".join(text.split()), text.replace("\n", "\r\n")):
        assert printout.from_text(variant).tied_total == 1_303_111_680


def test_asked_tie_overrides_the_family_default():
    p = printout.from_text(seed_text(), tied=False)
    assert p.model.total == 1_397_616_640 and p.model.ties() == []
    assert "Counted untied, as asked" in p.model.notes[-1]


# --- real transformers printouts against the oracle ----------------------------------------

EXACT = [
    ("bigscience--bloom-560m.json", None),
    ("openai-community--gpt2.json", None),
    ("meta-llama--Llama-3.1-8B.json", None),
    ("meta-llama--Llama-3.2-1B.json", None),  # ties, though LlamaConfig's default does not
    ("Qwen--Qwen2.5-0.5B.json", None),
    ("Qwen--Qwen3-0.6B.json", None),
    ("google-bert--bert-base-uncased.json", "BertForMaskedLM"),  # MLM head's own bias
    ("FacebookAI--roberta-base.json", "RobertaForMaskedLM"),
    ("FacebookAI--xlm-roberta-base.json", "XLMRobertaForMaskedLM"),  # lm_head printed first: it keeps the name
    ("albert--albert-base-v2.json", "AlbertForMaskedLM"),
    ("distilbert--distilbert-base-uncased.json", "DistilBertForMaskedLM"),
    ("google--electra-base-discriminator.json", None),
    ("facebook--bart-base.json", "BartForConditionalGeneration"),
    ("facebook--opt-125m.json", None),
    ("EleutherAI--pythia-160m.json", None),
    ("EleutherAI--gpt-j-6b.json", None),
    ("tiiuae--falcon-7b.json", None),
    ("microsoft--phi-2.json", None),
    ("microsoft--Phi-3-mini-4k-instruct.json", None),
    ("mistralai--Mistral-7B-v0.1.json", None),
    ("google--gemma-2-2b.json", None),
    ("google--gemma-3-1b-pt.json", None),
    ("bigcode--starcoder2-3b.json", None),
    ("allenai--OLMo-1B-hf.json", None),
    # norms that print no shape, filled from the family (T5LayerNorm: d_model; Cohere's: hidden)
    ("google-t5--t5-small.json", None),
    ("google--mt5-base.json", None),
    ("CohereForAI--c4ai-command-r7b-12-2024.json", None),
    ("swiss-ai--Apertus-8B-2509.json", None),  # XIELUActivation's alpha_p and alpha_n
    ("Qwen--Qwen3.5-27B.json", None),  # Qwen3_5RMSNormGated: linear_value_head_dim, solved
    ("google--siglip-base-patch16-224.json", "SiglipModel"),  # logit_scale, logit_bias, probe
    # towers that name their widths alike: the family's default tells the vision h from the text's
    ("google--gemma-3-4b-it.json", None),  # mm_input_projection_weight: vision h × text h
    ("llava-hf--llava-onevision-qwen2-0.5b-ov-hf.json", None),  # image_newline: the text's h
    # Mamba-2 heads (A_log, D, dt_bias): in_proj's width less the convolution's and d_inner
    ("mistralai--Mamba-Codestral-7B-v0.1.json", None),
    ("tiiuae--Falcon-H1-7B-Instruct.json", None),
    ("nvidia--NVIDIA-Nemotron-Nano-9B-v2.json", None),  # only its Mamba mixers hold them, not attention's
    # fused experts: the router (an nn.Linear) prints E, the shared expert the experts' width;
    # Llama4TextL2Norm(eps=…) holds nothing, as transformers' source shows
    ("meta-llama--Llama-4-Scout-17B-16E.json", None),
    # the position table's rows, (image_size/patch_size)² + 1, solved from the tile table's width
    ("meta-llama--Llama-3.2-90B-Vision-Instruct.json", None),
]

LOWER_BOUND = [
    ("mistralai--Mixtral-8x7B-v0.1.json", None, {"MixtralExperts", "MixtralTopKRouter"}),
    ("Qwen--Qwen1.5-MoE-A2.7B.json", None, {"Qwen2MoeExperts", "Qwen2MoeTopKRouter"}),
]


def real(file: str, cls: str | None):
    """The meta-device model of a catalog config, its print(model) text, and its truth."""
    oracle = pytest.importorskip("tests.oracle.oracle")
    raw = json.loads((CATALOG / file).read_text())["config"]
    cls = cls or raw["architectures"][0]
    module = oracle.instantiate(raw, cls, raw["model_type"])
    return str(module), oracle.truth(raw, cls, raw["model_type"])


@pytest.mark.parametrize("file, cls", EXACT)
def test_real_printout_counts_exactly(file, cls):
    text, truth = real(file, cls)
    guess = printout.from_text(text, file)
    assert truth.total in (guess.tied_total, guess.untied_total)
    assert not guess.unknown
    actually_tied = any(name in truth.ties for name, _ in guess.ties)
    p = printout.from_text(text, file, tied=actually_tied)
    mine = {leaf.name: tuple(leaf.shape) for leaf in p.model.tensors() if not leaf.tied_to}
    ties = {leaf.name: leaf.tied_to for leaf in p.model.tensors() if leaf.tied_to}
    assert mine == truth.shapes
    assert ties == truth.ties
    assert p.model.total == truth.total


@pytest.mark.parametrize("file, cls, unknown", LOWER_BOUND)
def test_real_printout_is_a_lower_bound_naming_what_it_cannot_see(file, cls, unknown):
    text, truth = real(file, cls)
    p = printout.from_text(text, file)
    assert p.lower_bound and {u.class_name for u in p.unknown} == unknown
    assert p.model.total < truth.total
    mine = {leaf.name: tuple(leaf.shape) for leaf in p.model.tensors() if not leaf.tied_to}
    assert all(truth.shapes[name] == shape for name, shape in mine.items())
    # every tensor we could not see lies under a module we named as unknown
    pattern = re.compile("|".join(re.escape(re.sub(r"\.\d+", ".N", u.path)) for u in p.unknown))
    for name in truth.shapes.keys() - mine.keys():
        assert pattern.match(re.sub(r"\.\d+", ".N", name)), name
    note = p.model.notes[-1]
    floor = min(p.tied_total, p.untied_total)  # where the text leaves a tie open, only the smaller is a floor
    assert note.startswith(f"lower bound: at least {floor:,}") and all(c in note for c in unknown)


def test_family_default_decides_the_likely_tie():
    text, _ = real("meta-llama--Llama-3.2-1B.json", None)
    p = printout.from_text(text)
    assert not p.likely_tied and p.model.total == p.untied_total == 1_498_482_688
    assert p.tied_total == 1_235_814_400  # the real Llama-3.2-1B, which ties
    assert any("tie_word_embeddings=False" in n for n in p.model.notes)
    # a guess between two totals is never exact: it says both, and how to settle it
    assert not p.model.exact and "1,498,482,688 counts it untied; tied, 1,235,814,400" in p.model.inexact
    settled = printout.from_text(text, tied=True).model
    assert settled.exact and settled.total == 1_235_814_400


def test_t5_names_all_three_embedding_ties():
    text, truth = real("google-t5--t5-small.json", None)
    p = printout.from_text(text)
    assert dict(p.ties) == truth.ties


# --- torch modules: every layer type the grammar knows -------------------------------------


def torch_zoo():
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Custom(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv1d(4, 8, 3, bias=False),
                nn.Conv2d(8, 16, (3, 5), groups=2),
                nn.Conv3d(16, 4, 2, padding=1),
                nn.ConvTranspose2d(4, 6, 3, groups=2),
                nn.BatchNorm2d(6),
                nn.BatchNorm1d(6, affine=False),
                nn.GroupNorm(2, 6),
                nn.InstanceNorm2d(6, affine=True),
                nn.PReLU(6),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Flatten(),
                nn.Dropout(0.1),
                nn.Unfold(kernel_size=(2, 3)),  # kernel_size, but no parameters
                nn.Fold(output_size=(4, 4), kernel_size=2),
            )
            self.norms = nn.ModuleDict(
                {
                    "ln": nn.LayerNorm(12),
                    "ln_nobias": nn.LayerNorm((3, 4), bias=False),
                    "ln_plain": nn.LayerNorm(12, elementwise_affine=False),
                    "rms": nn.RMSNorm(12),
                }
            )
            self.emb = nn.Embedding(100, 12, padding_idx=0)
            self.bag = nn.EmbeddingBag(50, 12, mode="mean")
            self.blocks = nn.ModuleList([nn.ModuleList([nn.Linear(12, 12) for _ in range(2)]) for _ in range(3)])
            self.mixed = nn.ModuleList([nn.Linear(12, 4), nn.Linear(12, 4, bias=False), nn.Linear(12, 4)])
            self.attn = nn.MultiheadAttention(12, 3)
            self.unset = None
            self.gelu = nn.GELU(approximate="tanh")

    with torch.device("meta"):
        return Custom()


def test_torch_layers_count_exactly():
    module = torch_zoo()
    p = printout.from_text(str(module))
    truth = {name: tuple(t.shape) for name, t in module.named_parameters()}
    mine = {leaf.name: tuple(leaf.shape) for leaf in p.model.tensors() if not leaf.tied_to}
    assert mine == truth
    assert p.model.total == sum(t.numel() for t in module.parameters())
    assert p.model.inexact is None  # Unfold's kernel_size is no parameter
    assert any("MultiheadAttention" in n for n in p.model.notes)


def test_unknown_custom_module_makes_a_lower_bound():
    text = """Net(
      (a): Linear(in_features=4, out_features=2, bias=True)
      (b): ModuleList(
        (0-2): 3 x FancyScale()
      )
      (c): MyNorm((4,), eps=1e-05)
    )"""
    p = printout.from_text(text)
    assert p.model.total == 10 and p.lower_bound
    assert [(u.path, u.class_name, u.copies) for u in p.unknown] == [
        ("b.0", "FancyScale", 3),
        ("c", "MyNorm", 1),
    ]
    assert "FancyScale ×3 (e.g. b.0" in p.model.notes[-1]


# --- reading files and standard input ------------------------------------------------------


def test_read_sniffs_files(tmp_path):
    txt = tmp_path / "model.txt"
    txt.write_text(seed_text(), encoding="utf-8")
    other = tmp_path / "printout.log"
    other.write_text("\ufeff" + seed_text(), encoding="utf-8")
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "bert"}')
    assert printout.read(txt).total == 1_303_111_680
    assert printout.read(other).total == 1_303_111_680
    assert printout.read(config) is None
    json_txt = tmp_path / "config.txt"
    json_txt.write_text('  {"model_type": "bert"}')
    assert printout.read(json_txt) is None
    assert printout.read(tmp_path) is None
    assert printout.read(tmp_path / "missing.txt") is None


def test_read_stdin(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(seed_text().encode())))
    m = printout.read("-")
    assert (m.total, m.source) == (1_303_111_680, "<stdin>")


def test_txt_file_that_is_not_a_printout_says_so(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello there\n")
    with pytest.raises(ParamcountError, match=r"notes\.txt: not a print\(model\) printout: line 1"):
        printout.read(path)
    path.write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(ParamcountError, match="not UTF-8"):
        printout.read(path)


# --- junk, truncation, unbalanced brackets -------------------------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "expected a module such as Linear"),
        ("{}", "expected a module such as Linear"),
        ("Net(", "'(' of Net is never closed"),
        ("Net(\n(a): Linear(in_features=2, out_features=3, bias=True)\n", "'(' of Net is never closed"),
        ("Net()\n)", "text after the model's closing bracket"),
        ("Net(\n(h): ModuleList(\n(0-3): 3 x Block()\n)\n)", "range (0-3) holds 4 entries, not 3"),
        ("Net(\n(h): ModuleList(\n(0-3): Block()\n)\n)", "without its 'N x' count"),
        ("Net(\n(h): ModuleList(\n(a): 3 x Block()\n)\n)", "needs a range"),
        ("Net(\n(a): Identity()\n(a): Identity()\n)", "Net has two children named (a)"),
        ("Net(\n(0-3): 4 x Identity()\n(2): Identity()\n)", "entry (2) of Net comes after (0-3)"),
        ("LayerNorm((4,], eps=1e-05)", "expected ')' but found ']'"),
        ("LayerNorm((4,, eps=1e-05)", "'(' of LayerNorm is never closed"),
        ("Net(\n(a): Foo(x=(1, 2", "line 2, column 12: '(' is never closed"),
        ("Foo(a=1] )", "unbalanced ']'"),
        ("Net(\n(a): " * 70 + "Linear()" + ")" * 70, "nested more than 64 deep"),
        ("Net(" + "(" * 300 + ")" * 300 + ")", "brackets nested more than"),
    ],
)
def test_bad_printouts_fail_with_one_line(text, message):
    with pytest.raises(ParamcountError) as e:
        printout.from_text(text, "model.txt")
    assert str(e.value).startswith("model.txt: not a print(model) printout")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_huge_numbers_do_not_break_the_parser():
    p = printout.from_text("Net(\n(a): Linear(in_features=" + "9" * 5000 + ", out_features=2, bias=True)\n)")
    assert p.lower_bound and p.unknown[0].class_name == "Linear"


# --- linear time: a hostile text costs what a normal one of its size costs ------------------

LAYER = (
    "({i}): Block(\n(q): Linear(in_features={i}, out_features=64, bias=True)\n"
    "(norm): LayerNorm((64,), eps=1e-05, elementwise_affine=True)\n(act): GELU(approximate='none')\n)\n"
)


def normal_printout(size: int) -> str:
    """A ModuleList of unlike layers (none collapses into a run), ``size`` characters long."""
    body, total, i = [], 0, 1
    while total < size:
        body.append(LAYER.format(i=i))
        total, i = total + len(body[-1]), i + 1
    return "Net(\n(h): ModuleList(\n" + "".join(body) + ")\n)"


def siblings(size: int) -> str:
    """Named siblings, ``size`` characters: each one once rescanned its earlier siblings (200,000: > 120 s)."""
    return "Net(\n" + "".join(f"(a{i}): Tanh()\n" for i in range(size // 14)) + ")"


def numbers(size: int) -> str:
    """Arguments of 4,000 digits, ``size`` characters (the float pattern once backtracked: 0.58 s each)."""
    digits = "9" * 4000
    return "Net(\n" + "".join(f"(a{j}): Foo(x={digits}x, y={digits}.5e)\n" for j in range(size // 8020)) + ")"


def work(text: str) -> int:
    """The lines of Python that parsing ``text`` runs: the same on any machine, under any load."""
    with lines(10_000_000) as done:
        printout.from_text(text)
    return done.n


@pytest.mark.parametrize("make", [siblings, numbers, normal_printout])
def test_hostile_printouts_parse_in_work_linear_in_their_size(make):
    """Doubling a text at most doubles its parse's work (a rescan of earlier siblings quadruples
    it), and a hostile text costs no more than a normal printout of its size. What runs inside
    ``re`` no line counts: benchmarks/bench_bounds.py times these texts against a normal one."""
    printout.from_text(normal_printout(1000))  # imports and caches warmed outside the count
    small, big = work(make(20_000)), work(make(40_000))
    assert small > 0 and big <= 2.2 * small, (small, big)
    assert small <= 1.5 * work(normal_printout(20_000)), small


def mutations():
    seed = seed_text()
    cut = st.tuples(st.integers(0, len(seed)), st.integers(0, 40), st.text(max_size=8))
    return st.one_of(
        st.text(max_size=300),
        st.text(alphabet="()[]{}:,=x 0123456789-\n'\"LinearNet", max_size=300),
        cut.map(lambda c: seed[: c[0]] + c[2] + seed[c[0] + c[1] :]),
        st.integers(0, len(seed)).map(lambda n: seed[:n]),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutations())
def test_fuzz_junk_is_a_paramcount_error_or_a_count(text):
    try:
        with calls(FUZZ_CALLS):
            p = printout.from_text(text, "fuzz.txt")
    except ParamcountError as e:
        assert str(e).startswith("fuzz.txt: ") and "\n" not in str(e)
    else:
        assert p.model.total >= 0 and p.untied_total >= p.tied_total


# --- the command line (needs load() to try printout.read) ----------------------------------


def test_cli_counts_the_seed_printout(capsys):
    from paramcount.cli import main

    assert main([str(SEED), "--width", "200"]) == 0
    out = capsys.readouterr().out
    assert "BloomForCausalLM" in out and "1,303,111,680" in out and "1,397,616,640" in out
    assert "tie_word_embeddings=True" in out


def test_cli_reads_standard_input(monkeypatch, capsys):
    from paramcount.cli import main

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(seed_text().encode())))
    assert main(["-", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["total"], data["total_with_ties"], data["source"]) == (1_303_111_680, 1_397_616_640, "<stdin>")


def test_cli_bad_printout_is_one_line_exit_2(tmp_path, capsys):
    from paramcount.cli import main

    path = tmp_path / "model.txt"
    path.write_text(seed_text()[:-40], encoding="utf-8")
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: not a print(model) printout" in err and "never closed" in err


def test_fused_experts_are_named_alike_whether_printed_as_a_leaf_or_not():
    """GptOssExperts() prints as a leaf, MixtralExperts with its activation: both hide E and the
    width, and say so with the one reason the corpus counts apart (tools/printout_corpus.py)."""
    text = (
        "Net(\n  (a): GptOssExperts()\n  (b): MixtralExperts(\n    (act_fn): SiLUActivation()\n  )\n"
        "  (c): Linear(in_features=2, out_features=2, bias=False)\n)"
    )
    p = printout.from_text(text)
    assert [(u.path, u.reason) for u in p.unknown] == [("a", printout.FUSED), ("b", printout.FUSED)]
    assert p.lower_bound and p.model.total == 4
