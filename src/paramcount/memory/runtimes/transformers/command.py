"""The one line that loads a model in transformers as a plan assumes it: ``from_pretrained`` with
the dtype, the device and, for bitsandbytes, the ``BitsAndBytesConfig`` the weights term models
(4-bit: NF4 or FP4 with nested quantisation of the absmax scales, bf16 compute; 8-bit: LLM.int8).
"""

from __future__ import annotations

_BNB = {
    "nf4": "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4', bnb_4bit_use_double_quant=True,"
    " bnb_4bit_compute_dtype='bfloat16')",
    "fp4": "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='fp4', bnb_4bit_use_double_quant=True,"
    " bnb_4bit_compute_dtype='bfloat16')",
    "bnb-int8": "BitsAndBytesConfig(load_in_8bit=True)",
}
_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def load_command(ref: str, scheme: str, cls: str = "AutoModelForCausalLM") -> str:
    """``python -c "from transformers import …; m = AutoModelForCausalLM.from_pretrained(…)"``
    (``ref``: a Hub id or a local folder)."""
    names = [cls] + (["BitsAndBytesConfig"] if scheme in _BNB else [])
    args = [repr(ref), "device_map='cuda'"]
    args.append(f"quantization_config={_BNB[scheme]}" if scheme in _BNB else f"dtype='{_DTYPE.get(scheme, 'auto')}'")
    code = f"from transformers import {', '.join(names)}; m = {cls}.from_pretrained({', '.join(args)})"
    return f'python -c "{code}"'
