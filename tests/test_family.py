"""Every input kind × every command against the config route on the same model.

A dense (llama), an MoE (mixtral), a hybrid (lfm2) and an image+text family (llava), each at tiny
widths, reach paramcount as a catalog name, a config.json, a model folder (config + safetensors), a
bare safetensors file, a GGUF file, a print(model) text and --arch dimensions. count, explain,
compute, compare and memory --json read each: a figure marked exact must equal the config
route's; one that cannot be derived (a tree read from names) must say it is not exact, and why.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import paramcount
from paramcount.cli import main
from paramcount.compute_report import STRUCTURE_FREE, report
from paramcount.family import resolve
from paramcount.memory.runtimes import inference
from paramcount.render.docs_json import derivation_dict

from . import gguf_files
from .ckpt import TINY_LLAMA

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
st = pytest.importorskip("safetensors.torch")
pytest.importorskip("gguf")

FIXTURES = Path(__file__).parent / "fixtures"
CATALOG = Path(__file__).parent.parent / "src" / "paramcount" / "catalog"
CONTEXT = "64"  # every compute at one context: a GGUF file states its own limit, a config its own

LLAMA = {k: v for k, v in TINY_LLAMA.items() if k != "torch_dtype"}  # the dtype a checkpoint leaves out
MIXTRAL = {
    **LLAMA,
    "model_type": "mixtral",
    "architectures": ["MixtralForCausalLM"],
    "intermediate_size": 32,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
}
LFM2 = json.loads((FIXTURES / "llamacpp_hybrid.json").read_text())["families"]["lfm2"]["small"]
LLAVA = {
    "model_type": "llava",
    "architectures": ["LlavaForConditionalGeneration"],
    "image_token_index": 63,
    "text_config": {k: v for k, v in LLAMA.items() if k != "architectures"},
    "vision_config": {
        "model_type": "clip_vision_model",
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": 28,
        "patch_size": 14,
        "projection_dim": 32,
    },
}
LLAMA_TEXT = {**LLAMA}  # llava's language model alone: what its GGUF file holds (the vision tower is an mmproj)


@dataclass(frozen=True)
class Family:
    name: str
    config: dict[str, Any]
    catalog: str  # a catalog entry of the family (its own config is its reference)
    gguf: dict[str, Any]  # a gguf_files spec
    gguf_config: dict[str, Any]  # the config of what the GGUF file holds


def _spec(cfg: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return gguf_files.llama_spec(
        cfg["model_type"], cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"],
        cfg["num_key_value_heads"], cfg["intermediate_size"], cfg["vocab_size"], context=128, **kw,
    )  # fmt: skip


FAMILIES = {
    "llama": Family("llama", LLAMA, "meta-llama/Llama-3.2-1B", _spec(LLAMA), LLAMA),
    "mixtral": Family("mixtral", MIXTRAL, "mistralai/Mixtral-8x7B-v0.1", _spec(MIXTRAL, experts=4, used=2), MIXTRAL),
    "lfm2": Family("lfm2", LFM2["config"], "LiquidAI/LFM2-1.2B", LFM2["spec"], LFM2["config"]),
    "llava": Family("llava", LLAVA, "llava-hf/llava-1.5-7b-hf", _spec(LLAMA_TEXT), LLAMA_TEXT),
}
# input kind -> whether its tree is the family's (False: read from names, figures flagged). A folder
# is save_pretrained's; safetensors, a file of transformers' in-memory names with config.json beside.
KINDS = {"config": True, "folder": True, "safetensors": True, "bare": False, "gguf": True, "printout": False}


# ---- making the inputs ------------------------------------------------------------------------


def meta_module(raw: dict[str, Any]) -> Any:
    kwargs = {k: v for k, v in raw.items() if k not in ("model_type", "architectures")}
    config = transformers.AutoConfig.for_model(raw["model_type"], **kwargs)
    with torch.device("meta"):
        return getattr(transformers, raw["architectures"][0])(config)


def write_weights(module: Any, path: Path) -> Path:
    """The module's unique parameters as zeros in fp16: what save_pretrained stores, by name."""
    seen, tensors = set(), {}
    for name, p in module.named_parameters():
        if id(p) not in seen:
            seen.add(id(p))
            tensors[name] = torch.zeros(p.shape, dtype=torch.float16)
    path.parent.mkdir(parents=True, exist_ok=True)
    st.save_file(tensors, str(path), {"format": "pt"})
    return path


def saved(raw: dict[str, Any], folder: Path) -> Path:
    """What a user has: ``save_pretrained``'s folder (its config.json, published tensor names:
    Mixtral's experts one by one) of a tiny model with random weights."""
    from .ckpt import build

    build(raw, dtype=torch.float16).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """Per family, a path per input kind (and ``gguf_config``: the config of the GGUF's model)."""
    out = {}
    for fam in FAMILIES.values():
        root = tmp_path_factory.mktemp(fam.name)
        paths = {"config": root / "config" / "config.json", "gguf_config": root / "gguf_config" / "config.json"}
        for key, raw in (("config", fam.config), ("gguf_config", fam.gguf_config)):
            paths[key].parent.mkdir()
            paths[key].write_text(json.dumps(raw))
        module = meta_module(fam.config)
        paths["folder"] = saved(fam.config, root / "folder")
        paths["safetensors"] = write_weights(module, root / "in_memory" / "model.safetensors")
        shutil.copy(paths["config"], root / "in_memory" / "config.json")
        paths["bare"] = root / "bare" / "model.safetensors"
        paths["bare"].parent.mkdir()
        shutil.copy(paths["safetensors"], paths["bare"])
        paths["gguf"] = gguf_files.write(fam.gguf, root / f"{fam.name}.gguf")
        paths["printout"] = root / "printout.txt"
        paths["printout"].write_text(str(module))
        out[fam.name] = paths
    return out


# ---- running the commands ---------------------------------------------------------------------


def cli(capsys, *argv: str) -> dict[str, Any]:
    code = main([*argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def documents(capsys, source: str) -> dict[str, Any]:
    """What every command says of ``source``, as JSON."""
    return {
        "count": cli(capsys, source, "--json"),
        "explain": cli(capsys, "explain", source, "--json"),
        "compute": cli(capsys, "compute", source, "--json", "--context", CONTEXT),
        "memory": cli(capsys, "memory", source, "--json", "--context", CONTEXT),
    }


_REFERENCES: dict[str, dict[str, Any]] = {}


def reference(capsys, config: Path) -> dict[str, Any]:
    key = str(config)
    if key not in _REFERENCES:
        _REFERENCES[key] = documents(capsys, key)
    return _REFERENCES[key]


# ---- what must agree --------------------------------------------------------------------------

BREAKDOWN = ("active", "backbone", "towers", "components")
COMPUTE_PARAMETERS = ("total", "active", "non_embedding", "matmul")
COMPUTE_FORWARD = ("matmul_params", "attention_width", "dense", "attention", "attention_causal", "per_token")


def check_count(doc: dict[str, Any], ref: dict[str, Any], family_tree: bool) -> None:
    if doc["exact"]:
        assert doc["total"] == ref["total"]
    else:  # a printout: hidden parameters (Mixtral's experts print no shape) make a lower bound; a tie
        # it cannot show makes two totals, the config's among them; either is said so
        reason = doc["inexact_reason"]
        assert reason and not family_tree
        assert doc["total"] < ref["total"] or ("cannot show whether" in reason and f"{ref['total']:,}" in reason)
    assert doc["breakdown_exact"] is family_tree
    if family_tree:
        assert {k: doc[k] for k in BREAKDOWN} == {k: ref[k] for k in BREAKDOWN}
        assert [x["total"] for x in doc["layers"]] == [x["total"] for x in ref["layers"]]
    else:
        assert doc["breakdown_why"]


def check_explain(doc: dict[str, Any], ref: dict[str, Any], family_tree: bool) -> None:
    assert doc["symbols_from_config"] is family_tree
    assert sum(doc["sum"]) == doc["total"] == doc["closed_form"]["value"]  # the sections add up, always
    if family_tree:
        for key in ("class", "total", "active", "sum", "inside"):
            assert doc[key] == ref[key], key
        # the same dimensions; a GGUF file states LFM2's MLP width after adjusting it (I, not I_ff)
        assert sorted(x["value"] for x in doc["symbols"]) == sorted(x["value"] for x in ref["symbols"])
    else:
        assert doc["why_no_symbols"] and not doc["symbols"]


def check_compute(doc: dict[str, Any], ref: dict[str, Any], family_tree: bool) -> None:
    assert doc["exact"] is family_tree
    if family_tree:
        assert {k: doc["parameters"][k] for k in COMPUTE_PARAMETERS} == {
            k: ref["parameters"][k] for k in COMPUTE_PARAMETERS
        }
        assert {k: doc["forward"][k] for k in COMPUTE_FORWARD} == {k: ref["forward"][k] for k in COMPUTE_FORWARD}
        assert doc["attention_exact"] == ref["attention_exact"]
        assert all(f["inexact"] is None for f in doc["figures"])
        return
    why = doc["why_not_exact"]
    assert why and not doc["attention_exact"] and any(why in note for note in doc["notes"])
    for f in doc["figures"]:  # never a figure that reads the tree's structure marked exact
        assert (f["inexact"] is None) is (f["key"] in STRUCTURE_FREE), f["key"]


def check_all(docs: dict[str, Any], ref: dict[str, Any], family_tree: bool) -> None:
    check_count(docs["count"], ref["count"], family_tree)
    check_explain(docs["explain"], ref["explain"], family_tree)
    check_compute(docs["compute"], ref["compute"], family_tree)
    total = docs["count"]["total"]  # the config's, or a lower bound that says so
    assert docs["compute"]["parameters"]["total"] == docs["memory"]["model"]["parameters"] == total


def check_compare(capsys, config: Path, source: Path, family_tree: bool) -> None:
    doc = cli(capsys, "compare", str(config), str(source), "--json")
    a, b = doc["models"]
    assert a["exact"] and b["exact"] is family_tree
    assert b["total"] == a["total"] or not family_tree
    if family_tree:
        for key in ("components", "backbone_total", "active", "layers"):
            assert b[key] == a[key], key
        assert sorted(b["symbols"].values()) == sorted(a["symbols"].values())  # LFM2's I_ff: see check_explain
        assert all(d == 0 for diffs in doc["differences"].values() for d in diffs)
    else:
        assert b["why_not_exact"]


# ---- the matrix -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", FAMILIES)
def test_every_input_kind_agrees_with_the_config_route(capsys, made, name, kind):
    paths = made[name]
    config = {"gguf": paths["gguf_config"], "folder": paths["folder"] / "config.json"}.get(kind, paths["config"])
    ref = reference(capsys, config)
    check_all(documents(capsys, str(paths[kind])), ref, KINDS[kind])
    check_compare(capsys, config, paths[kind], KINDS[kind])


@pytest.mark.parametrize("name", FAMILIES)
def test_a_catalog_name_is_its_config(capsys, tmp_path, name):
    entry = FAMILIES[name].catalog
    config = tmp_path / "config.json"
    config.write_text(json.dumps(json.loads((CATALOG / f"{entry.replace('/', '--')}.json").read_text())["config"]))
    check_all(documents(capsys, entry), reference(capsys, config), True)


@pytest.mark.parametrize("name", FAMILIES)
def test_dimensions_are_the_config(capsys, made, name):
    """--arch with every field set: count on the command line; compute and explain on
    :func:`paramcount.from_dims`, which is what --arch builds."""
    raw = FAMILIES[name].config
    raw = {CURRENT.get(k, k): v for k, v in raw.items()}
    fields = {k: v for k, v in raw.items() if k not in ("model_type", "architectures") and settable(raw, k)}
    sets = [x for k, v in fields.items() for x in ("--set", f"{k}={json.dumps(v)}")]
    cls = raw["architectures"][0]
    ref = reference(capsys, made[name]["config"])
    check_count(cli(capsys, "--arch", raw["model_type"], "--class", cls, *sets, "--json"), ref["count"], True)
    model = paramcount.from_dims(raw["model_type"], model_class=cls, **fields)
    assert resolve(model).is_family
    doc = report(model, int(CONTEXT)).to_dict()
    assert doc["parameters"] == ref["compute"]["parameters"] and doc["forward"] == ref["compute"]["forward"]
    base = paramcount.from_dims(raw["model_type"], model_class="base", **fields)
    explained = derivation_dict(paramcount.derive(base))
    for key in ("class", "total", "sum", "symbols"):
        assert explained[key] == ref["explain"][key], key
    plan = inference(model, context=int(CONTEXT))
    assert plan.model.total == ref["memory"]["model"]["parameters"]


# LFM2's older field names, which Lfm2Config reads into the current ones (--set takes only these)
CURRENT = {"block_ff_dim": "intermediate_size", "tie_embedding": "tie_word_embeddings"}


def settable(raw: dict[str, Any], key: str) -> bool:
    """Whether --set takes the field (LFM2's recorded config also holds names transformers drops)."""
    from paramcount.arch import family
    from paramcount.errors import ParamcountError
    from paramcount.frontends.config import check_fields

    try:
        check_fields(family(raw["model_type"]), [key], "--set")
    except ParamcountError:
        return False
    return True


def test_the_family_from_a_folder_is_checked_against_what_is_stored(capsys, made, tmp_path):
    """A folder whose weights are not what its config builds keeps the tree of its names, and says why."""
    folder = tmp_path / "other"
    folder.mkdir()
    shutil.copy(made["llama"]["safetensors"], folder / "model.safetensors")
    (folder / "config.json").write_text(json.dumps({**LLAMA, "intermediate_size": 96}))
    r = resolve(paramcount.load(folder))
    assert not r.is_family and "disagree" in r.why and "shape" in r.why
    doc = cli(capsys, "compute", str(folder), "--json", "--context", CONTEXT)
    assert not doc["exact"] and "disagree" in doc["why_not_exact"]


def test_explain_of_a_folder_is_the_backbone_of_its_family(capsys, made):
    """The issue's case: the folder's explain was headed by the whole count, with no symbols."""
    doc = cli(capsys, "explain", str(made["llama"]["folder"]), "--json")
    assert (doc["class"], doc["total"], doc["inside"]["class"]) == ("LlamaModel", 78_144, "LlamaForCausalLM")
    assert doc["sections"][0]["kind"] == "embeddings" and doc["symbols"]


def test_check_reads_the_family_tree_of_a_file(capsys, made):
    """A GGUF file's backbone is the family's, not "GGUF without output.weight"."""
    backbone = paramcount.load(made["mixtral"]["config"]).backbone_total
    doc = cli(capsys, "check", str(made["mixtral"]["gguf"]), str(backbone), "--json")
    assert doc["exact"] and doc["class"] == "MixtralForCausalLM"
    assert doc["backbone"] == {"class": "MixtralModel", "total": backbone}


def test_a_quantised_folder_computes_as_its_config(tmp_path):
    """GPTQ packs eight 4-bit values per int32: the stored shapes are not the config's, but the
    counted ones are, so the folder has its family's tree."""
    from .ckpt import TINY_LLAMA
    from .test_quantized import gptq, write

    m = write(tmp_path, gptq(), {"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False})
    assert resolve(m).is_family
    mine, config = report(m, int(CONTEXT)).to_dict(), report(paramcount.load(TINY_LLAMA), int(CONTEXT)).to_dict()
    assert mine["exact"] and mine["parameters"] == config["parameters"] and mine["forward"] == config["forward"]


# each command's argv before --class, and where its JSON says the total of the class it read
CLASS_ARGV = {
    "explain": ["{source}"],
    "compute": ["{source}"],
    "check": ["{source}", "1"],
    "compare": ["{config}", "{source}"],
}
CLASS_TOTAL = {
    "explain": lambda d: d["total"],
    "compute": lambda d: d["parameters"]["total"],
    "check": lambda d: d["total"],
    "compare": lambda d: d["models"][1]["total"],
}


@pytest.mark.parametrize("kind", ["folder", "gguf"])
@pytest.mark.parametrize("command", CLASS_ARGV)
def test_class_of_a_file_is_picked_from_its_family(capsys, made, kind, command):
    """--class picks within the class the files hold: loaded as LlamaModel, the folder would be
    held to the backbone alone and disagree (its lm_head)."""
    paths = {"source": str(made["llama"][kind]), "config": str(made["llama"]["config"])}
    argv = [command, *(a.format(**paths) for a in CLASS_ARGV[command])]
    for cls, total in (("base", 78_144), ("LlamaModel", 78_144), ("LlamaForCausalLM", 82_240)):
        code = main([*argv, "--class", cls, "--json"])
        doc = json.loads(capsys.readouterr().out)
        assert code == (1 if command == "check" else 0)  # check: 1 is not the count
        assert CLASS_TOTAL[command](doc) == total, cls
        assert doc["exact"] if command == "compute" else True
    assert main([*argv, "--class", "LlamaForSequenceClassification"]) == 2
    err = capsys.readouterr().err
    assert "--class: the files hold LlamaForCausalLM: --class takes it, base or LlamaModel" in err


def test_explain_reads_a_printout_on_stdin_once(capsys, monkeypatch):
    """``paramcount explain -``: the whole (for the class it sits in) and the backbone derived
    come from one read of stdin."""
    import io

    text = (FIXTURES / "bloom-1b4-zh.txt").read_text(encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    doc = cli(capsys, "explain", "-", "--json")
    assert (doc["class"], doc["inside"]["class"]) == ("BloomModel", "BloomForCausalLM")
    assert doc["why_no_symbols"] and doc["total"] == 1_303_111_680
