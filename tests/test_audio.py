"""Audio in the memory plan (``--audio SECONDS``): the tokens a clip becomes, held to Gemma 4's
own feature extractor and processor in transformers (Gemma4AudioFeatureExtractor, numpy only,
and Gemma4Processor, run offline at their defaults over a tokenizer that knows the markers),
and what the plan and the command line do with them. Whisper is refused with the reason: its
feature extractor pads or cuts every clip to 30 s, so the encoder's 1,500 frames never change.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.memory.context.audio import audio, parse_seconds
from paramcount.memory.runtimes.transformers.plan import InferencePlanner

from .test_images import GEMMA4, gemma4_processor, no_video  # noqa: F401 (a fixture)

transformers = pytest.importorskip("transformers")
np = pytest.importorskip("numpy")


@pytest.mark.parametrize(
    "seconds", ["0.01", "0.02", "0.0301", "0.05", "1", "5", "12.5", "29.99", "30", "30.01", "45", "120"]
)
def test_gemma4_audio_tokens_are_the_processors(no_video, seconds):  # noqa: F811
    """The soft tokens Gemma4Processor puts in for the feature extractor's valid mel frames
    (clips cut at 30 s), with the begin- and end-of-audio tokens."""
    processor = gemma4_processor()
    samples = round(Fraction(seconds) * 16_000)
    out = processor(audio=[np.zeros(samples)], text=["<|audio|>"], return_tensors=None)
    got = audio(paramcount.load(GEMMA4), seconds).each
    assert got.tokens == len(out["input_ids"][0])
    assert got.frames == got.tokens - 2


def test_a_plan_holds_the_audio_tokens_in_its_cache():
    model = paramcount.load(GEMMA4)
    with_audio = InferencePlanner(model, "bf16", audio="30").plan(4096)
    text = InferencePlanner(model, "bf16").plan(4096 + 752)
    assert with_audio.term("kv_cache").bytes == text.term("kv_cache").bytes
    assert with_audio.term("audio_activations").estimate
    assert with_audio.settings["audio_tokens"] == 752 and with_audio.settings["audio_seconds"] == 30
    both = InferencePlanner(model, "bf16", images=2, image_size="640x480", audio=12.5)
    seen = 1024 + both.images.tokens + 315
    assert both.plan(1024).term("kv_cache").bytes == InferencePlanner(model, "bf16").plan(seen).term("kv_cache").bytes
    assert both.total(1024, 2) == both.plan(1024, 2).total


def test_the_cli_plans_audio(capsys, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(GEMMA4))
    assert main(["memory", str(config), "--audio", "12.5", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["audio_tokens"] == 315
    assert any(t["key"] == "audio_activations" for t in doc["terms"])


@pytest.mark.parametrize(
    "args, said",
    [
        (["--audio", "0"], "more than 0"),
        (["--audio", "-3"], "expected seconds"),
        (["--audio", "ten"], "expected seconds"),
        (["--audio", "1e3"], "expected seconds"),
        (["--audio", "100000"], "at most 86,400 s"),
        (["--audio", "10", "--train"], "only for inference"),
        (["--audio", "10", "--runtime", "vllm"], "--audio is a transformers setting"),
    ],
)
def test_bad_audio_flags_are_one_line(capsys, tmp_path, args, said):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(GEMMA4))
    assert main(["memory", str(config), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--audio" in err and said in err


@pytest.mark.parametrize(
    "model, said",
    [
        ("openai/whisper-small", "pads or cuts every clip to 30 s"),
        ("gpt2", "no audio-token rule for 'gpt2'"),
        ("google/gemma-3-4b-it", "no audio-token rule for 'gemma3'"),
    ],
)
def test_models_without_an_audio_rule_are_refused(capsys, model, said):
    assert main(["memory", model, "--audio", "10"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err


def test_gemma4_without_an_audio_tower_is_refused():
    with pytest.raises(ParamcountError, match="no audio_config"):
        audio(paramcount.load({"model_type": "gemma4", "text_config": {}, "vision_config": {}}), 10)


@pytest.mark.parametrize(
    ("text", "value"), [("30", 30), ("12.5", Fraction(25, 2)), ("90s", 90), (7, 7), (0.1, Fraction(1, 10))]
)
def test_seconds_parse_exactly(text, value):
    assert parse_seconds(text) == value
