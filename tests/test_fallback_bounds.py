"""The transformers fallback's refusals that need nothing imported: the config's numbers and lists
(frontends/fallback_bounds.py), backbones to fetch, unknown model_types and classes outside
transformers' own tables. Each ends in one line and exit 2 before torch or transformers is
imported (the cases of issue 25, which ran for a minute and more, or reached the network)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from paramcount import ParamcountError
from paramcount.cli import main
from paramcount.frontends import catalog, fallback, fallback_bounds
from paramcount.frontends.fallback_bounds import MAX_ALL_LAYERS, MAX_EXPERTS, MAX_LAYERS, MAX_LIST, MAX_WORK, check

HOSTILE = {
    "convnext_depths": (
        {"model_type": "convnext", "depths": [1_000_000, 3, 9, 3]},
        r"depths\[0\]: 1,000,000 is over 1,024",
    ),
    "convnext_sum": (
        {"model_type": "convnext", "depths": [600, 600]},
        "depths: 1,200 layers in all stages is over 1,024",
    ),
    "swin": ({"model_type": "swin", "depths": [2, 2, 1_000_000, 2]}, r"depths\[2\]: 1,000,000 is over 1,024"),
    "switch": ({"model_type": "switch_transformers", "num_experts": 100_000}, "num_experts: 100,000 is over 32,768"),
    "nllb_moe": ({"model_type": "nllb-moe", "num_experts": 1 << 26}, "num_experts: 67,108,864 is over 32,768"),
    "llava_swin": (
        {"model_type": "llava", "vision_config": {"model_type": "swin", "depths": [1_000_000]}},
        r"vision_config.depths\[0\]: 1,000,000 is over 1,024",
    ),
    "perceiver": (
        {"model_type": "perceiver", "num_self_attends_per_block": 1_000_000},
        "num_self_attends_per_block: 1,000,000 is over 1,024",
    ),
    "funnel": ({"model_type": "funnel", "block_sizes": [1_000_000, 4]}, r"block_sizes\[0\]: 1,000,000 is over"),
    "levit": ({"model_type": "levit", "depth": [4, 4, 2000]}, r"depth\[2\]: 2,000 is over 1,024"),
    "reformer": (
        {"model_type": "reformer", "attn_layers": ["local"] * 2000},
        "attn_layers: 2,000 entries is over 1,024",
    ),
    "negative": ({"model_type": "xglm", "num_layers": -5}, "num_layers: -5 is negative; a count or size is at least 0"),
    "negative_size": ({"model_type": "codegen", "n_embd": -64}, "n_embd: -64 is negative"),
    "float_layers": ({"model_type": "codegen", "n_layer": 1e9}, "n_layer: 1,000,000,000.0 is over 1,024"),
    "nan": ({"model_type": "codegen", "n_embd": float("nan")}, "n_embd: nan is not a finite number"),
    "inf_count": ({"model_type": "codegen", "n_layer": float("inf")}, "n_layer: inf is not a finite number"),
    "nan_bound": ({"model_type": "mamba2", "time_step_limit": [0.0, float("nan")]}, r"time_step_limit\[1\]: nan is"),
    "work": (
        {"model_type": "switch_transformers", "num_experts": 30_000, "num_layers": 40, "num_decoder_layers": 40},
        "layers × experts of 2,400,000 is over 1,048,576",
    ),
    "all_layers": (
        {"model_type": "t5", "text_config": {f"x{i}": {"num_layers": 1000} for i in range(5)}},
        "5,000 layers in all is over 4,096",
    ),
    "long_list": ({"model_type": "whisper", "suppress_tokens": [1] * 5000}, "a list of 5,000 elements is over 4,096"),
    "deep": ({"model_type": "llava", "a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": {}}}}}}}}}}, "nested more"),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_sizes_are_refused_in_one_line(case):
    raw, message = HOSTILE[case]
    with pytest.raises(ParamcountError, match=message) as e:
        check(raw, "config.json")
    assert "\n" not in str(e.value)


def test_the_bounds_themselves_pass():
    check({"model_type": "convnext", "depths": [MAX_LAYERS - 3, 1, 1, 1]}, "c")
    check({"model_type": "switch_transformers", "num_experts": MAX_EXPERTS, "num_layers": 16}, "c")
    assert 16 * MAX_EXPERTS <= MAX_WORK and 4 * MAX_LAYERS <= MAX_ALL_LAYERS
    check({"model_type": "whisper", "suppress_tokens": list(range(MAX_LIST))}, "c")


def test_an_infinite_bound_that_sizes_nothing_passes():
    """Mamba-2's time_step_limit is (0.0, inf) by default and config.json files save it as Infinity
    (NVIDIA-Nemotron-Nano-12B-v2's does): it counts nothing, so it is no reason to refuse."""
    check({"model_type": "mamba2", "time_step_limit": [0.0, float("inf")]}, "c")


def test_indices_and_ids_may_be_negative():
    check({"vision_feature_layer": [-2, -5], "pad_token_id": -1, "ignore_index": -100, "sliding_window": -1}, "c")


@pytest.mark.parametrize("entry", catalog.entries(), ids=lambda e: e.id)
def test_every_real_config_in_the_catalog_passes(entry):
    """The catalog holds real config.json files: the fallback's bounds refuse none of them
    (every default config of transformers passes too: tests/oracle/test_every_model_type.py)."""
    check(entry.config, entry.id)


@pytest.mark.parametrize(
    "raw",
    [
        {"model_type": "detr", "backbone": "microsoft/resnet-50", "use_timm_backbone": False},
        {"model_type": "dpt", "backbone": "microsoft/resnet-50", "is_hybrid": False},
        {"model_type": "upernet", "backbone": "microsoft/resnet-50"},
        {"model_type": "llava", "vision_config": {"model_type": "upernet", "backbone": "microsoft/resnet-50"}},
    ],
)
def test_a_backbone_to_fetch_is_refused(raw):
    with pytest.raises(ParamcountError, match="names the backbone 'microsoft/resnet-50', which transformers would"):
        fallback_bounds.offline(raw, "config.json")


@pytest.mark.parametrize(
    "raw",
    [
        {"model_type": "detr", "use_timm_backbone": True},
        {"model_type": "timm_wrapper"},
        {"model_type": "timm_backbone"},
    ],
)
def test_a_timm_backbone_is_refused(raw):
    with pytest.raises(ParamcountError, match="a timm backbone, which paramcount does not build"):
        fallback_bounds.offline(raw, "config.json")


def test_a_class_transformers_does_not_map_is_refused():
    with pytest.raises(
        ParamcountError, match="no class 'Trainer' for codegen; choose one of: base, CodeGenForCausalLM"
    ):
        fallback.pick_class("codegen", "Trainer", [], "config.json")


def test_architectures_outside_the_mapped_classes_are_passed_over():
    assert fallback.pick_class("codegen", None, ["Trainer", "CodeGenForCausalLM"], "c") == (
        "CodeGenForCausalLM",
        "CodeGenModel",
    )


@pytest.mark.parametrize(
    "raw,args,message",
    [
        ({"model_type": "convnext", "depths": [1_000_000]}, [], "depths[0]: 1,000,000 is over 1,024"),
        ({"model_type": "xglm", "num_layers": -5}, [], "num_layers: -5 is negative"),
        ({"model_type": "codegen"}, ["--class", "Trainer"], "transformers has no class 'Trainer' for codegen"),
        ({"model_type": "../x"}, [], "unknown model_type '../x': transformers " + fallback.types()["transformers"]),
        ({"model_type": "upernet", "backbone": "microsoft/resnet-50"}, [], "names the backbone"),
    ],
)
def test_the_command_line_says_one_line_and_exits_2(tmp_path, capsys, raw, args, message):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    assert main([str(path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "raw",
    [
        {"model_type": "../x"},
        {"model_type": "convnext", "depths": [1_000_000]},
        {"model_type": "codegen", "architectures": ["Trainer"], "n_layer": -1},
    ],
)
def test_refusing_imports_neither_torch_nor_transformers(raw):
    code = (
        "import json, sys, paramcount\n"
        f"try: paramcount.load(json.loads({json.dumps(raw)!r}))\n"
        "except paramcount.ParamcountError as e: print('refused:', e)\n"
        "print(json.dumps([m for m in ('torch', 'transformers') if m in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("refused:"), done.stdout + done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_the_list_of_model_types_is_shipped():
    data = fallback.types()
    assert data["transformers"] and len(data["types"]) > 700
    assert fallback.known("codegen") and not fallback.known("../x")
    assert "CodeGenForCausalLM" in fallback.classes("codegen")


def test_another_installed_transformers_is_named(monkeypatch):
    monkeypatch.setattr(fallback, "available", lambda: True)
    monkeypatch.setattr(fallback, "_installed", lambda: "9.0.0")
    message = str(fallback.unknown("brand_new", "config.json", ("llama",)))
    listed = fallback.types()["transformers"]
    assert f"transformers {listed} does not know it either" in message and "transformers 9.0.0 is installed" in message
