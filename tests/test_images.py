"""Images in the memory plan: the tokens each becomes, held to the models' own processors in
transformers (run offline at their defaults, or a published checkpoint's settings where the
defaults cannot fit its tower), and what the plan does with them.

Tested against the processors, each tokenizing its own expansion over a tokenizer that knows
the markers as single tokens: Qwen2-VL and Qwen2.5-VL (Qwen2VLImageProcessorPil's image grid,
merged 2×2 as Qwen2VLProcessor expands it), LLaVA (LlavaProcessor's own count, with
llava-1.5-hf's processor settings), Step 3.7 (Step3p7ImageProcessor's tiling and
Step3p7Processor's expansion), LLaVA-OneVision (LlavaOnevisionImageProcessorPil and
LlavaOnevisionProcessor, one image and several), Llama 3.2 Vision (MllamaImageProcessorPil and
MllamaProcessor; the cross-attention cache held to a tiny MllamaForConditionalGeneration's
DynamicCache), Idefics3 and SmolVLM (their PIL image processors and processors), InternVL
(GotOcr2ImageProcessorPil and InternVLProcessor), Mistral 3 and Pixtral 12B (PixtralImageProcessorPil
and PixtralProcessor), Llama 4 (Llama4ImageProcessor's tiling and Llama4Processor) and Gemma 4
(Gemma4ImageProcessorPil and Gemma4Processor).

Stood in for, because transformers needs torchvision there (PyPI's torchvision cannot be
installed beside this torch): the class check of the video processor (BaseVideoProcessor) in the
processors that also take videos, given none; Step 3.7's and Llama 4's resizes and padding
(zeros of the size they make; Llama4ImageProcessor's module imports torchvision, so a stand-in
module holds that pad); the one function processing_pixtral imports from the torchvision image
processor's module (get_resize_output_image_size, taken from the PIL module's identical copy);
and num2words, which SmolVLMProcessor will not start without but reads only for videos.
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
from paramcount.memory.context.images import images
from paramcount.memory.runtimes.transformers.plan import InferencePlanner

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


# --- the families whose processors tile, crop or pool ------------------------------------------

MORE_SIZES = [*SIZES, (1, 1), (33, 4000), (8192, 600), (1023, 769), (385, 383), (2305, 1537)]


def tokenizer(markers, **named):
    """A tokenizer that knows each marker as one token (and nothing else: text is [UNK])."""
    from tokenizers import AddedToken, Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, **{m: i + 1 for i, m in enumerate(markers)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.add_special_tokens([AddedToken(m, normalized=False, special=True) for m in markers])
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", **named)


@pytest.fixture
def no_video(monkeypatch):
    """Processors that also take videos check their video processor's class, BaseVideoProcessor,
    which needs torchvision: that one check is skipped and no video processor given."""
    from transformers.processing_utils import ProcessorMixin

    check = ProcessorMixin.check_argument_for_proper_class
    monkeypatch.setattr(
        ProcessorMixin,
        "check_argument_for_proper_class",
        lambda self, name, arg: None if name == "video_processor" else check(self, name, arg),
    )


def prompt_tokens(processor, image, marker: str) -> tuple[int, object]:
    """Tokens the processor makes of a prompt that is one image's marker, and its pixel values."""
    out = processor(images=[image], text=[marker], return_tensors=None)
    return len(out["input_ids"][0]), out["pixel_values"]


ONEVISION = {"model_type": "llava_onevision"}  # llava-onevision-qwen2-7b-ov-hf's tower and pinpoints


def onevision_processor():
    from transformers.models.llava_onevision.image_processing_pil_llava_onevision import (
        LlavaOnevisionImageProcessorPil,
    )
    from transformers.models.llava_onevision.processing_llava_onevision import LlavaOnevisionProcessor

    # the published processor_config.json: 729 tokens a view, the config's "full" strategy
    return LlavaOnevisionProcessor(
        image_processor=LlavaOnevisionImageProcessorPil(),
        tokenizer=tokenizer(["<image>", "<video>"]),
        video_processor=None,
        num_image_tokens=729,
        vision_feature_select_strategy="full",
    )


@pytest.mark.parametrize("size", [*MORE_SIZES, (1, 5000), (2304, 384), (770, 384)])
def test_llava_onevision_image_tokens_are_the_processors(no_video, size):
    """One image alone: the base view, its anyres crops unpadded, the row newlines; three in one
    prompt: each padded square, one view and a newline."""
    processor, model = onevision_processor(), paramcount.load(ONEVISION)
    count, pixels = prompt_tokens(processor, PIL.new("RGB", size), "<image>")
    got = images(model, 1, size).each
    assert got.tokens == count and got.patches == len(pixels[0]) * 729
    three = processor(images=[[PIL.new("RGB", size)] * 3], text=["<image>" * 3], return_tensors=None)
    assert images(model, 3, size).each.tokens * 3 == len(three["input_ids"][0])


def test_llava_onevision_pinpoints_are_the_configs():
    from paramcount.arch.llava_onevision import PINPOINTS

    assert transformers.LlavaOnevisionConfig().image_grid_pinpoints == PINPOINTS


MLLAMA = {  # Llama-3.2-11B-Vision's shapes
    "model_type": "mllama",
    "text_config": {
        "model_type": "mllama_text_model",
        "hidden_size": 4096,
        "num_hidden_layers": 40,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38],
    },
    "vision_config": {"model_type": "mllama_vision_model", "image_size": 560, "patch_size": 14, "max_num_tiles": 4},
}


@pytest.mark.parametrize("size", MORE_SIZES)
def test_mllama_image_tokens_are_the_processors(size):
    """MllamaProcessor puts one <|image|> token in the prompt (and the text's <|begin_of_text|>
    after it); the image processor pads every image to max_image_tiles tiles."""
    from transformers.models.mllama.image_processing_pil_mllama import MllamaImageProcessorPil
    from transformers.models.mllama.processing_mllama import MllamaProcessor

    text = tokenizer(["<|image|>", "<|python_tag|>", "<|begin_of_text|>"], bos_token="<|begin_of_text|>")
    image = MllamaImageProcessorPil(size={"height": 560, "width": 560})  # the published preprocessor_config
    processor = MllamaProcessor(image_processor=image, tokenizer=text)
    count, pixels = prompt_tokens(processor, PIL.new("RGB", size), "<|image|>")
    got = images(paramcount.load(MLLAMA), 1, size).each
    assert got.tokens == count - 1 == 1  # less the text's <|begin_of_text|>
    tiles = len(pixels[0][0])
    assert tiles == image.max_image_tiles == 4
    assert [k.source for k in got.cross] == [tiles * ((560 // 14) ** 2 + 1)]


def test_mllama_plans_the_cache_transformers_keeps():
    """A tiny Llama 3.2 Vision run on two images: the KV cache the plan gives (self-attention
    over the prompt, cross-attention over every image's padded tiles) is the DynamicCache's."""
    torch = pytest.importorskip("torch")
    vision = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_global_layers": 1,
        "attention_heads": 2,
        "image_size": 56,
        "patch_size": 14,
        "max_num_tiles": 4,
        "intermediate_layers_indices": [0],
        "vision_output_dim": 64,
    }
    text = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "cross_attention_layers": [1, 3],
        "vocab_size": 300,
        **{"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2},
    }
    config = transformers.MllamaConfig(vision_config=vision, text_config=text, image_token_index=299)
    model = transformers.MllamaForConditionalGeneration(config).eval()
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor([[299, 299, 5, 6, 7]]),
            pixel_values=torch.zeros(1, 2, 4, 3, 56, 56),
            aspect_ratio_ids=torch.tensor([[1, 1]]),
            aspect_ratio_mask=torch.tensor([[[1, 0, 0, 0], [1, 0, 0, 0]]]),
            cross_attention_mask=torch.ones(1, 5, 2, 4),
            use_cache=True,
        )
    held = sum(layer.keys.numel() + layer.values.numel() for layer in out.past_key_values.layers)
    counted = paramcount.load(
        {
            "model_type": "mllama",
            "vision_config": {**vision, "model_type": "mllama_vision_model"},
            "text_config": {**text, "model_type": "mllama_text_model"},
        }
    )
    plan = InferencePlanner(counted, "fp32", images=2, image_size=(100, 80)).plan(3)  # 3 text tokens
    kv = plan.term("kv_cache")
    assert kv.bytes == 4 * held
    cross = next(p for p in kv.parts if p.key == "kv_cache.cross")
    assert cross.bytes == 2 * 2 * 2 * 8 * (2 * 4 * 17) * 4  # L · 2 · n_kv · d · images · tiles · (patches + 1) · b


def test_mllama_images_fix_what_the_cross_attention_layers_hold():
    with pytest.raises(ParamcountError) as e:
        InferencePlanner(paramcount.load(MLLAMA), images=1, image_size=(64, 64), encoder_length=100)
    assert e.value.field == "--encoder-length"
    text = InferencePlanner(paramcount.load(MLLAMA), "bf16", images=2, image_size="800x600").plan(1000)
    kv = text.term("kv_cache")
    assert "1,002 tokens + 12,808 vision states" in kv.label and "12,808 vision states" in kv.assumption


IDEFICS_MARKERS = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>", "\n\n", "\n"]
IDEFICS_MARKERS += [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]
IDEFICS3 = {  # Idefics3-8B-Llama3's tower: 364-px crops of 14-px patches, shuffled 2×2
    "model_type": "idefics3",
    "scale_factor": 2,
    "vision_config": {"image_size": 364, "patch_size": 14, "hidden_size": 1152, "intermediate_size": 4304},
}
SMOLVLM = {  # SmolVLM-256M's tower: 512-px crops of 16-px patches, shuffled 4×4
    "model_type": "smolvlm",
    "scale_factor": 4,
    "vision_config": {"image_size": 512, "patch_size": 16, "hidden_size": 768, "intermediate_size": 3072},
}


@pytest.mark.parametrize("size", MORE_SIZES)
def test_idefics3_image_tokens_are_the_processors(size):
    """Idefics3Processor at its defaults (Idefics3-8B's: 1,456 px, 364-px crops, 169 tokens a
    crop), over a tokenizer that makes '\\n\\n' one token as Llama 3's does."""
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil
    from transformers.models.idefics3.processing_idefics3 import Idefics3Processor

    processor = Idefics3Processor(image_processor=Idefics3ImageProcessorPil(), tokenizer=tokenizer(IDEFICS_MARKERS))
    count, pixels = prompt_tokens(processor, PIL.new("RGB", size), "<image>")
    got = images(paramcount.load(IDEFICS3), 1, size).each
    assert got.tokens == count and got.patches == len(pixels[0]) * 26 * 26
    assert count == processor._get_num_multimodal_tokens(image_sizes=[size[::-1]]).num_image_tokens[0]


@pytest.mark.parametrize("size", MORE_SIZES)
def test_smolvlm_image_tokens_are_the_processors(no_video, monkeypatch, size):
    """SmolVLMProcessor with SmolVLM-256M's settings (2,048 px, 512-px crops, 64 tokens a crop).
    It will not start without num2words, which it reads only for video prompts: a stand-in."""
    from transformers.models.smolvlm import processing_smolvlm
    from transformers.models.smolvlm.image_processing_pil_smolvlm import SmolVLMImageProcessorPil

    monkeypatch.setattr(processing_smolvlm, "num2words", str)
    image = SmolVLMImageProcessorPil(size={"longest_edge": 2048}, max_image_size={"longest_edge": 512})
    processor = processing_smolvlm.SmolVLMProcessor(
        image_processor=image,
        tokenizer=tokenizer([*IDEFICS_MARKERS, "<video>"]),
        video_processor=None,
        image_seq_len=64,
    )
    count, pixels = prompt_tokens(processor, PIL.new("RGB", size), "<image>")
    got = images(paramcount.load(SMOLVLM), 1, size).each
    assert got.tokens == count and got.patches == len(pixels[0]) * 32 * 32


@pytest.mark.parametrize("size", MORE_SIZES)
def test_internvl_image_tokens_are_the_processors(no_video, size):
    """InternVLProcessor (crop_to_patches on) over GotOcr2ImageProcessor with InternVL3's 448-px
    tiles and 256 tokens a tile (its processor_config.json)."""
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil
    from transformers.models.internvl.processing_internvl import InternVLProcessor

    names = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>"}
    text = tokenizer([*names.values(), "<video>"], extra_special_tokens={**names, "video_token": "<video>"})
    image = GotOcr2ImageProcessorPil(size={"height": 448, "width": 448})
    processor = InternVLProcessor(image_processor=image, tokenizer=text, video_processor=None, image_seq_length=256)
    count, pixels = prompt_tokens(processor, PIL.new("RGB", size), "<IMG_CONTEXT>")
    got = images(paramcount.load({"model_type": "internvl"}), 1, size).each
    assert got.tokens == count and got.patches == len(pixels) * (32 * 32 + 1)


@pytest.fixture
def pixtral_processor(monkeypatch):
    """transformers' PixtralProcessor. Its module imports get_resize_output_image_size from the
    torchvision-backed image processor's module; that one function is taken from the PIL
    module's copy (the same code), so the processor itself runs as it is."""
    import importlib
    import sys
    import types

    from transformers.models.pixtral import image_processing_pil_pixtral as pil

    stand_in = types.ModuleType("transformers.models.pixtral.image_processing_pixtral")
    stand_in.get_resize_output_image_size = pil.get_resize_output_image_size
    monkeypatch.setitem(sys.modules, stand_in.__name__, stand_in)
    monkeypatch.delitem(sys.modules, "transformers.models.pixtral.processing_pixtral", raising=False)
    module = importlib.import_module("transformers.models.pixtral.processing_pixtral")
    yield module.PixtralProcessor, pil.PixtralImageProcessorPil
    sys.modules.pop(module.__name__, None)


PIXTRAL_12B = {  # mistral-community/pixtral-12b: LLaVA over a Pixtral tower
    "model_type": "llava",
    "text_config": {"model_type": "mistral"},
    "vision_config": {"model_type": "pixtral", "image_size": 1024, "patch_size": 16},
}


@pytest.mark.parametrize("size", MORE_SIZES)
@pytest.mark.parametrize(
    "name, merge, longest",
    [("mistralai/Mistral-Small-3.1-24B-Instruct-2503", 2, 1540), ("pixtral-12b", 1, 1024)],
)
def test_pixtral_image_tokens_are_the_processors(pixtral_processor, size, name, merge, longest):
    """PixtralProcessor as Mistral Small 3.1 sets it (14-px patches merged 2×2, 1,540 px) and as
    Pixtral 12B does (its defaults: 16-px patches, 1,024 px)."""
    processor_class, image_class = pixtral_processor
    patch = 16 if merge == 1 else 14
    processor = processor_class(
        image_processor=image_class(size={"longest_edge": longest}),
        tokenizer=tokenizer(["[IMG]", "[IMG_BREAK]", "[IMG_END]"]),
        patch_size=patch,
        spatial_merge_size=merge,
    )
    out = processor(images=[PIL.new("RGB", size)], text=["[IMG]"], return_tensors=None)
    height, width = out["image_sizes"][0]
    got = images(paramcount.load(PIXTRAL_12B if merge == 1 else name), 1, size).each
    assert got.tokens == len(out["input_ids"][0])
    assert got.patches == (height // patch) * (width // patch)


def test_pixtral_refuses_what_its_processor_cannot_resize(pixtral_processor):
    processor_class, image_class = pixtral_processor
    processor = processor_class(
        image_processor=image_class(size={"longest_edge": 1540}),
        tokenizer=tokenizer(["[IMG]", "[IMG_BREAK]", "[IMG_END]"]),
        patch_size=14,
        spatial_merge_size=2,
    )
    with pytest.raises(ValueError):
        processor(images=[PIL.new("RGB", (1, 20000))], text=["[IMG]"], return_tensors=None)
    with pytest.raises(ParamcountError, match="cannot resize"):
        images(paramcount.load("mistralai/Mistral-Small-3.1-24B-Instruct-2503"), 1, (1, 20000))


@pytest.fixture
def llama4_processor(monkeypatch):
    """Llama4ImageProcessor exists only torchvision-backed and its module imports torchvision: a
    stand-in torchvision whose ``pad`` returns zeros of the padded shape, and the processor's
    ``resize`` zeros of the asked size. Its tiling (find_supported_resolutions, get_best_fit,
    split_to_tiles in _preprocess) and Llama4Processor's expansion are transformers' own code."""
    import importlib
    import itertools
    import sys
    import types

    import torch

    def pad(images, padding, fill=0):
        left, top, right, bottom = padding
        return torch.zeros(*images.shape[:-2], images.shape[-2] + top + bottom, images.shape[-1] + left + right)

    names = (
        "torchvision",
        "torchvision.transforms",
        "torchvision.transforms.v2",
        "torchvision.transforms.v2.functional",
    )
    stand_ins = [types.ModuleType(n) for n in names]
    for parent, child in itertools.pairwise(stand_ins):
        setattr(parent, child.__name__.rsplit(".", 1)[1], child)
    stand_ins[-1].pad = pad
    for module in stand_ins:
        monkeypatch.setitem(sys.modules, module.__name__, module)
    name = "transformers.models.llama4.image_processing_llama4"
    monkeypatch.delitem(sys.modules, name, raising=False)
    llama4 = importlib.import_module(name)
    image = llama4.Llama4ImageProcessor.__new__(llama4.Llama4ImageProcessor)  # its __init__ asks for torchvision
    image.resize = lambda images, size, **_: torch.zeros(*images.shape[:-2], size.height, size.width)
    markers = ["<|image|>", "<|image_start|>", "<|image_end|>", "<|patch|>", "<|tile_x_separator|>"]
    text = tokenizer([*markers, "<|tile_y_separator|>"])
    yield image, transformers.models.llama4.processing_llama4.Llama4Processor(image_processor=image, tokenizer=text)
    sys.modules.pop(name, None)


LLAMA4 = {"model_type": "llama4", "vision_config": {"image_size": 336, "patch_size": 14, "pixel_shuffle_ratio": 0.5}}


@pytest.mark.parametrize("size", [*MORE_SIZES, (336, 336), (337, 336), (672, 5376), (20000, 5)])
def test_llama4_image_tokens_are_the_processors(llama4_processor, size):
    """Llama4ImageProcessor at its defaults (336-px tiles, Llama 4 Scout's tower, up to 16) and
    Llama4Processor's expansion, tokenized."""
    import torch
    from transformers.image_utils import SizeDict

    image, processor = llama4_processor
    width, height = size
    out = image._preprocess(
        [torch.zeros(3, height, width)],
        do_resize=True,
        size=SizeDict(height=336, width=336),
        resample=None,
        do_rescale=False,
        rescale_factor=1.0,
        do_normalize=False,
        image_mean=None,
        image_std=None,
        max_patches=image.max_patches,
        resize_to_max_canvas=image.resize_to_max_canvas,
        disable_grouping=None,
        return_tensors=None,
    )
    text = processor.replace_image_token(out, 0)
    got = images(paramcount.load(LLAMA4), 1, size).each
    assert got.tokens == len(processor.tokenizer(text, add_special_tokens=False)["input_ids"])
    assert got.patches == len(out["pixel_values"][0]) * (24 * 24 + 1)


GEMMA4 = {"model_type": "gemma4", "text_config": {}, "vision_config": {}, "audio_config": {}}


def gemma4_processor():
    """Gemma4Processor over Gemma4ImageProcessorPil and Gemma4AudioFeatureExtractor at their defaults."""
    from transformers.models.gemma4.feature_extraction_gemma4 import Gemma4AudioFeatureExtractor
    from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil
    from transformers.models.gemma4.processing_gemma4 import Gemma4Processor

    names = {"image_token": "<|image|>", "boi_token": "<|image>", "eoi_token": "<image|>"}
    names |= {"audio_token": "<|audio|>", "boa_token": "<|audio>", "eoa_token": "<audio|>"}
    text = tokenizer([*names.values(), "<|video|>"], pad_token="[UNK]", extra_special_tokens=names)
    return Gemma4Processor(
        feature_extractor=Gemma4AudioFeatureExtractor(),
        image_processor=Gemma4ImageProcessorPil(),
        tokenizer=text,
        video_processor=None,
    )


@pytest.mark.parametrize("size", [*MORE_SIZES, (1, 20000), (20000, 1), (300, 2), (48, 48), (4000, 47)])
def test_gemma4_image_tokens_are_the_processors(no_video, size):
    """280 soft tokens at most, between the begin- and end-of-image tokens; the encoder runs
    over all 2,520 patch slots."""
    count, pixels = prompt_tokens(gemma4_processor(), PIL.new("RGB", size), "<|image|>")
    got = images(paramcount.load(GEMMA4), 1, size).each
    assert got.tokens == count and got.patches == len(pixels[0]) == 2520


def test_gemma4_without_a_tower_is_refused():
    with pytest.raises(ParamcountError, match="no vision_config"):
        images(paramcount.load({"model_type": "gemma4", "text_config": {}}), 1, (64, 64))


@pytest.mark.parametrize("size", [*SIZES, (1, 1), (33, 4000), (8192, 600), (6000, 5000), (100, 27)])
def test_glm4v_moe_image_tokens_are_the_processors(size):
    """GLM-4.5V: Glm4vImageProcessor at its defaults (14-px patches merged 2x2, two frames), its
    grid as Glm4vProcessor counts it (grid_t·grid_h·grid_w / merge²)."""
    from transformers.models.glm4v.image_processing_pil_glm4v import Glm4vImageProcessorPil

    grid = Glm4vImageProcessorPil()(images=[PIL.new("RGB", size)], return_tensors="np")["image_grid_thw"][0]
    got = images(paramcount.load("zai-org/GLM-4.5V"), 1, size).each
    assert got.tokens == int(grid.prod()) // 4 and got.patches == int(grid.prod())


def test_glm4v_moe_refuses_an_aspect_ratio_the_processor_refuses():
    from transformers.models.glm4v.image_processing_pil_glm4v import Glm4vImageProcessorPil

    with pytest.raises(ValueError, match="aspect ratio"):
        Glm4vImageProcessorPil()(images=[PIL.new("RGB", (6000, 28))], return_tensors="np")
    with pytest.raises(ParamcountError, match="aspect ratio past 200") as e:
        images(paramcount.load("zai-org/GLM-4.5V"), 1, (6000, 28))
    assert e.value.field == "--image-size"
