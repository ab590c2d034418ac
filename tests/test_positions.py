"""The position limit of a config that leaves it out: its config class's default, as
transformers and llama.cpp's converter give it (arch/config_positions.json)."""

import pytest

import paramcount
from paramcount.memory.core.limits import max_positions


@pytest.mark.parametrize(
    ("name", "limit"),
    [
        ("google/gemma-3-4b-it", 131072),  # text_config without it: Gemma3TextConfig's default
        ("llava-hf/llava-onevision-qwen2-7b-ov-hf", 32768),  # Qwen2Config's
        ("google/paligemma-3b-pt-224", 8192),  # GemmaConfig's
        ("tiiuae/falcon-7b", 2048),  # FalconConfig's
        ("bigscience/bloom-560m", None),  # ALiBi: no limit in the config class
        ("meta-llama/Llama-3.1-8B", 131072),  # stated
    ],
)
def test_a_config_without_its_position_limit_gets_its_class_default(name, limit):
    """transformers fills a left-out field from its config class, and so does llama.cpp's
    converter (AutoConfig), whose context_length is llama.cpp's default -c."""
    assert max_positions(paramcount.load(name)) == limit
