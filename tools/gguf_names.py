"""Write src/paramcount/gguf/names.json: gguf-py's tensor name map, as data.

llama.cpp's converter names every tensor it writes through gguf-py's ``TensorNameMap``
(``tensor_mapping.py``): a table of the checkpoint names each GGUF tensor has had
(``model.layers.{bid}.self_attn.q_proj`` → ``blk.{bid}.attn_q``), of which an architecture
keeps the tensors its ``MODEL_TENSORS`` entry lists (``constants.py``). paramcount's core does
not import gguf at run time, so ``paramcount diff`` reads this copy. Not run in CI; for example:

    python tools/gguf_names.py /path/to/llama_cpp_python-0.3.36/vendor/llama.cpp/gguf-py

The order of each table is gguf-py's: where two tensors of one architecture list the same
checkpoint name, the later one wins, as in ``TensorNameMap.__init__``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src/paramcount/gguf/names.json"


def table(gguf) -> dict:
    tm, c = gguf.tensor_mapping.TensorNameMap, gguf.constants

    def rows(cfg):
        return {t.name: [c.TENSOR_NAMES[t], list(keys)] for t, keys in cfg.items()}

    return {
        "source": "gguf-py as vendored by llama-cpp-python 0.3.36 (tensor_mapping.py, constants.py)",
        "tensors": rows(tm.mappings_cfg),
        "blocks": rows(tm.block_mappings_cfg),
        "arch_blocks": {c.MODEL_ARCH_NAMES[a]: rows(cfg) for a, cfg in tm.arch_block_mappings_cfg.items()},
        "archs": {c.MODEL_ARCH_NAMES[a]: [t.name for t in ts] for a, ts in c.MODEL_TENSORS.items()},
    }


def _dumps(data: dict) -> str:
    """One line per tensor or architecture, so a new gguf-py shows as a readable diff."""

    def table(value) -> str:
        if not isinstance(value, dict):
            return json.dumps(value)
        rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in value.items())
        return "{\n" + rows + "\n }"

    return "{\n" + ",\n".join(f" {json.dumps(k)}: {table(v)}" for k, v in data.items()) + "\n}"


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    import gguf

    data = table(gguf)
    OUT.write_text(_dumps(data) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(data['tensors']) + len(data['blocks'])} tensors, {len(data['archs'])} architectures")


if __name__ == "__main__":
    main()
