"""The ``llama-server`` command line for a plan: one unwrapped line that, fed back to ``paramcount
memory`` with the same flags, gives the same plan.

Every flag that decides memory is written out, so llama.cpp's ``--fit`` (on by default) leaves
it as it is: ``common_params_fit_impl`` changes neither a ``-c`` nor an ``-ngl`` set by hand
(common/fit.cpp: "n_gpu_layers already set by user, abort"). ``-np 1``: one sequence, since
llama-server's own default (``-np -1``: 4 slots, ``--kv-unified``) splits the context.
"""

from __future__ import annotations

import shlex
from typing import Any

from ....gguf.meta import is_gguf

# LLAMA_FTYPE names as llama-quantize writes them into file names (``Qwen3-8B-Q4_K_M.gguf``)
_FILE_TYPE = {"fp16": "F16", "bf16": "BF16", "fp32": "F32"}


def gguf_file(model: Any, scheme: str, ref: str) -> str:
    """The GGUF file ``-m`` names: the file itself for a GGUF source, else the name llama.cpp's
    convert_hf_to_gguf.py + llama-quantize give the model ``ref`` names (``{name}-{TYPE}.gguf``)."""
    source = str(getattr(model, "source", ""))
    if is_gguf(model) and source.endswith(".gguf"):
        return source
    base = ref.rstrip("/").split("/")[-1] or "model"
    return f"{base}-{_FILE_TYPE.get(scheme, scheme.upper())}.gguf"


def server_command(file: str, context: int, arguments: str, flash: str = "on", text_only: bool = False) -> str:
    """``llama-server -m FILE -c N -np 1 -fa on [--no-mmproj]`` and the placement's own arguments
    (:meth:`.placement.Placement.arguments`: ``-ngl``, ``--n-cpu-moe``, ``-ot``)."""
    words = ["llama-server", "-m", shlex.quote(file), "-c", str(context), "-np", "1"]
    words += ["-fa", flash] + (["--no-mmproj"] if text_only else [])
    return " ".join(words + ([arguments] if arguments else []))
