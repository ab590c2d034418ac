"""Images in the memory plan: the tokens each becomes, held to the models' own processors in
transformers (run offline at their defaults), and what the plan does with them.

Tested against the processors: Qwen2-VL and Qwen2.5-VL (Qwen2VLImageProcessorPil's image grid,
merged 2×2 as Qwen2VLProcessor expands it), LLaVA (LlavaProcessor's own count, with
llava-1.5-hf's processor settings) and Step 3.7 (Step3p7ImageProcessor's tiling and
Step3p7Processor's expansion, tokenized; its resizes, which need torchvision, kept to shapes).
Not run, for want of their tokenizers offline: PaliGemma's and Gemma 3's processors; their
counts are held to the config fields the processors read (PaliGemmaConfig's num_image_tokens,
Gemma3Config's mm_tokens_per_image).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import paramcount
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.memory.images import images
from paramcount.memory.plan import InferencePlanner

transformers = pytest.importorskip("transformers")
PIL = pytest.importorskip("PIL.Image")

SIZES = [(1024, 1024), (640, 480), (20, 20), (4000, 3000), (3000, 40), (1920, 1080), (28, 28)]


@pytest.mark.parametrize("name", ["Qwen/Qwen2-VL-7B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct"])
@pytest.mark.parametrize("size", SIZES)
def test_qwen_vl_image_tokens_are_the_processors(name, size):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    processor = Qwen2VLImageProcessorPil()
    grid = processor(images=[PIL.new("RGB", size)], return_tensors="np")["image_grid_thw"][0]
    expected = int(grid.prod()) // processor.merge_size**2  # Qwen2VLProcessor's placeholder count
    got = images(paramcount.load(name), 1, size).each
    assert got.tokens == expected and got.patches == int(grid.prod())


@pytest.mark.parametrize("size", [(640, 480), (336, 336), (2000, 100)])
def test_llava_image_tokens_are_the_processors(size):
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil
    from transformers.models.llava.processing_llava import LlavaProcessor

    image = LlavaImageProcessorPil.from_dict(
        {"crop_size": {"height": 336, "width": 336}, "size": {"shortest_edge": 336}}
    )
    # llava-1.5-hf's processor_config.json: one additional token (the class token), strategy "default"
    settings = {"patch_size": 14, "num_additional_image_tokens": 1, "vision_feature_select_strategy": "default"}
    stub = SimpleNamespace(image_processor=image, _merge_kwargs=lambda **kw: {"images_kwargs": {}}, **settings)
    expected = LlavaProcessor._get_num_multimodal_tokens(stub, image_sizes=[size[::-1]]).num_image_tokens[0]
    assert images(paramcount.load("llava-hf/llava-1.5-7b-hf"), 1, size).each.tokens == expected == 576


def test_paligemma_and_gemma3_take_the_config_fields_their_processors_read():
    pali = transformers.PaliGemmaConfig()
    assert (
        images(paramcount.load("google/paligemma-3b-pt-224"), 1, (800, 600)).each.tokens
        == pali.text_config.num_image_tokens
    )
    gemma = paramcount.load("google/gemma-3-4b-it")
    assert images(gemma, 1, (800, 600)).each.tokens == transformers.Gemma3Config().mm_tokens_per_image == 256


def test_a_plan_holds_the_image_tokens_in_its_cache():
    """Four 1024×1024 images join each sequence: the KV cache and activations are the text-only
    plan's at context + 4 × 1,225 tokens, and the vision encoder's activations are added."""
    model = paramcount.load("Qwen/Qwen2.5-VL-7B-Instruct")
    with_images = InferencePlanner(model, "bf16", images=4, image_size="1024x1024").plan(4096)
    text = InferencePlanner(model, "bf16").plan(4096 + 4 * 1225)
    assert with_images.term("kv_cache").bytes == text.term("kv_cache").bytes
    assert with_images.term("activations").bytes == text.term("activations").bytes
    assert with_images.term("vision_activations").estimate
    assert with_images.settings["image_tokens"] == 4900 and with_images.settings["context"] == 4096
    planner = InferencePlanner(model, "bf16", images=4, image_size=(1024, 1024))
    assert planner.total(4096, 2) == planner.plan(4096, 2).total


def test_the_cli_plans_images(capsys):
    import json

    code = main(["memory", "Qwen/Qwen2.5-VL-7B-Instruct", "--images", "4", "--image-size", "1024x1024", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["image_tokens"] == 4900


@pytest.mark.parametrize(
    "args, field",
    [
        (["--images", "2"], "--images"),
        (["--image-size", "10x10"], "--image-size"),
        (["--images", "2", "--image-size", "0x5"], "--image-size"),
        (["--images", "2", "--image-size", "big"], "--image-size"),
        (["--images", "2", "--image-size", "999999x10"], "--image-size"),
        (["--images", "2", "--image-size", "6000x20"], "--image-size"),  # aspect ratio past 200
    ],
)
def test_bad_image_flags_are_one_line(capsys, args, field):
    assert main(["memory", "Qwen/Qwen2.5-VL-7B-Instruct", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and field in err


def test_a_model_without_a_rule_is_refused():
    with pytest.raises(ParamcountError, match="no image-token rule for 'gpt2'"):
        images(paramcount.load("gpt2"), 1, (64, 64))
    with pytest.raises(ParamcountError) as e:
        InferencePlanner(paramcount.load("Qwen/Qwen2.5-VL-7B-Instruct"), images=9999, image_size=(8, 8))
    assert e.value.field == "--images"


@pytest.mark.parametrize("model_type", ["qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe"])
@pytest.mark.parametrize("size", SIZES)
def test_qwen3_vl_and_qwen3_5_image_tokens_are_the_processors(model_type, size):
    """Qwen2VLImageProcessor with the model's 16-px patches (its preprocessor_config.json sets
    them), at the processor's pixel bounds."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    processor = Qwen2VLImageProcessorPil(patch_size=16, merge_size=2)
    grid = processor(images=[PIL.new("RGB", size)], return_tensors="np")["image_grid_thw"][0]
    got = images(paramcount.load({"model_type": model_type}), 1, size).each
    assert got.tokens == int(grid.prod()) // 4 and got.patches == int(grid.prod())


def step3p7_processor():
    """Step3p7ImageProcessor at its defaults with its torchvision resizes and padding replaced by
    tensors of the size they make (the tiling is the processor's own code), and Step3p7Processor
    over a tokenizer that knows its markers as one token each."""
    import torch
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast
    from transformers.models.step3p7.image_processing_step3p7 import Step3p7ImageProcessor
    from transformers.models.step3p7.processing_step3p7 import Step3p7Processor

    markers = ["<im_patch>", "<patch_start>", "<patch_end>", "<patch_newline>", "<im_start>", "<im_end>"]
    vocab = {"[UNK]": 0, **{m: i + 1 for i, m in enumerate(markers)}}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")),
        unk_token="[UNK]",
        additional_special_tokens=markers,
    )
    image = Step3p7ImageProcessor.__new__(Step3p7ImageProcessor)  # its __init__ asks for torchvision
    image.resize = lambda images, size, **_: torch.zeros(*images.shape[:-2], size.height, size.width)
    image.pad = lambda images, pad_size, **_: [
        torch.zeros(*i.shape[:-2], pad_size.height, pad_size.width) for i in images
    ]
    return image, Step3p7Processor(image_processor=image, tokenizer=tokenizer), tokenizer


STEP_SIZES = [
    *SIZES,
    (728, 300),
    (729, 729),
    (1000, 200),
    (10, 2000),
    (32, 5000),
    (3025, 3025),
    (504, 1100),
    (1300, 520),
]


@pytest.mark.parametrize("size", STEP_SIZES)
def test_step3p7_image_tokens_are_the_processors(size):
    """The tokens Step3p7Processor puts in for one image (its tiles, the global view and their
    markers), and the patches the vision model runs over (52² for the view, 36² a tile)."""
    import torch
    from transformers.image_utils import SizeDict

    image, processor, tokenizer = step3p7_processor()
    width, height = size
    out = image._preprocess(
        [torch.zeros(3, height, width)],
        do_rescale=False,
        rescale_factor=1.0,
        do_normalize=False,
        image_mean=None,
        image_std=None,
        resample=None,
        size=SizeDict(**image.size),
        patch_size=image.patch_size,
        disable_grouping=None,
        return_tensors=None,
    )
    text = processor.replace_image_token(out, 0)
    got = images(paramcount.load({"model_type": "step3p7"}), 1, size).each
    assert got.tokens == len(tokenizer(text, add_special_tokens=False)["input_ids"])
    assert got.patches == 52 * 52 + out["num_local_patches"][0] * 36 * 36
