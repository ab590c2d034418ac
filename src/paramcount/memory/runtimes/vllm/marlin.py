"""GPTQ and AWQ linear layers as vLLM holds them after loading, by the kernel it picks on the GPU.

vLLM loads a GPTQ or AWQ checkpoint's ``qweight``, ``scales``, ``qzeros`` (and GPTQ's
``g_idx``), then hands each layer to the kernel ``choose_mp_linear_kernel`` picks
(vllm/model_executor/layers/quantization/kernels/mixed_precision/__init__.py: Machete, then
Marlin, then the rest, the first that can implement the layer), whose
``process_weights_after_loading`` repacks it:

- Marlin (``MarlinLinearKernel``, SM80 and up): ``qweight`` repacked and ``scales`` permuted at
  their sizes; a symmetric GPTQ layer's ``qzeros`` replaced by an empty tensor
  (``marlin_make_empty_g_idx``) and AWQ's repacked at their size (``marlin_zero_points``);
  ``g_idx`` emptied unless the checkpoint orders activations (``desc_act``), where it is kept
  with ``g_idx_sort_indices`` (int32, one per input, ``marlin_sort_g_idx``). With act order,
  row-parallel scales are whole on every rank (``marlin_repeat_scales_on_all_ranks``);
- Machete (``MacheteLinearKernel``, SM90 only; group -1, 64 or 128; inputs per rank a multiple
  of 64, outputs of 128; no act order when the inputs are split over ranks): ``qweight``
  prepacked at its size, ``scales`` kept; a GPTQ layer's ``qzeros`` and ``g_idx`` stay as loaded,
  and act order adds a permutation (int32, one per input); zero points (AWQ) become one
  value per group and output in the scales' dtype (``transform_w_zp``: −scale × zero);
- before SM80 (Exllama for GPTQ, AWQ's own kernel): the checkpoint's tensors as loaded
  (``GPTQLinearMethod`` keeps a row-parallel act-order layer's scales and zeros whole).

Whatever the kernel, GPTQ's ``g_idx`` (one per input) is whole on a column-parallel rank.

AWQ reaches ``choose_mp_linear_kernel`` only from 0.21, the 0.32 and latest lines (``AWQMarlinLinearMethod``
converting to the standard layout first); up to 0.20 its own Marlin path repacks each tensor
at its size. Routed experts (the fused-MoE Marlin methods) are held as stored. The kernels'
workspaces (``marlin_make_workspace_new``: an int32 per SM, per GPU) are not counted.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ....records import replace
from ...weights.layouts import Part

SRC_MARLIN = (
    "vllm/model_executor/layers/quantization/kernels/mixed_precision/__init__.py choose_mp_linear_kernel; "
    "marlin.py MarlinLinearKernel.process_weights_after_loading; machete.py MacheteLinearKernel.can_implement, "
    "process_weights_after_loading; utils/marlin_utils.py marlin_sort_g_idx, marlin_repeat_scales_on_all_ranks; "
    "gptq_marlin.py GPTQMarlinLinearMethod, awq_marlin.py AWQMarlinLinearMethod"
)
MACHETE_GROUPS = (-1, 64, 128)  # machete_utils.py query_machete_supported_group_sizes (fp16/bf16)
MACHETE_BLOCK = (64, 128)  # MACHETE_PREPACKED_BLOCK_SHAPE: (inputs, outputs) per rank
ZEROS = ("qzeros", "GPTQ zeros", "AWQ zeros")
G_IDX = ("g_idx", "GPTQ g_idx")
SCALES = ("scales", "GPTQ scales", "AWQ scales")


def settings(model: Any, scheme: str, rows: list[Any]) -> tuple[str, int, bool]:
    """(method, group size, act order): the checkpoint's quantization_config (GPTQ's defaults: group
    128, no act order), else the scheme planned (``--dtype gptq-int4``: group 128), else a stored
    checkpoint's GPTQ/AWQ tensors."""
    q = (getattr(model, "config", None) or {}).get("quantization_config") or {}
    method = str(q.get("quant_method", "")).lower() if isinstance(q, dict) else ""
    if method not in ("gptq", "awq"):
        q = {}
        method = next((m for m in ("gptq", "awq") if scheme.startswith(m)), "") or _stored_method(rows)
    group = q.get("group_size", q.get("q_group_size", 128))
    group = group if isinstance(group, int) and not isinstance(group, bool) else 128
    return method, group, bool(q.get("desc_act", False)) and method == "gptq"


def _stored_method(rows: list[Any]) -> str:
    whats = {p.what for r in rows for p in r.parts}
    return "gptq" if "GPTQ zeros" in whats else "awq" if "AWQ zeros" in whats else ""


def kernel(method: str, capability: tuple[int, int] | None, version: str) -> str:
    """The kernel family vLLM's loader ends at for a linear layer, before the per-layer check."""
    cap = capability or (9, 0)
    if cap < (8, 0):
        return "checkpoint"
    if cap == (9, 0) and (method == "gptq" or version in ("0.32", "latest")):
        return "machete"
    return "marlin"


def _machete_fits(row: Any, group: int, act_order: bool, split_in: bool, share: Fraction) -> bool:
    """MacheteLinearKernel.can_implement for one layer holding ``share`` of it on a rank."""
    n, k = int(row.shape[0]), int(row.shape[1])
    k_rank = k * share if split_in else k
    n_rank = n if split_in else n * share
    if act_order and split_in and share < 1:
        return False
    fits = k_rank % MACHETE_BLOCK[0] == 0 and n_rank % MACHETE_BLOCK[1] == 0
    return group in MACHETE_GROUPS and fits


def held_rows(
    rows: Any, model: Any, scheme: str, gpu: tuple[tuple[int, int] | None, str], placement: Any
) -> tuple[list[Any], str | None]:
    """The rows with each GPTQ/AWQ linear layer as its kernel holds it (unchanged for other rows);
    ``placement(row)`` is (whether vLLM splits the layer's inputs over the ranks, the share of
    it one rank holds); ``gpu`` the GPU's capability (None: an H100's) and the vLLM line."""
    rows = list(rows)
    method, group, act_order = settings(model, scheme, rows)
    if method not in ("gptq", "awq"):
        return rows, None
    chosen = kernel(method, *gpu)
    out, used = [], set()
    for r in rows:
        if not _linear(r):
            out.append(r)
            continue
        split_in, share = placement(r)
        k = chosen
        if k == "machete" and not _machete_fits(r, group, act_order, split_in, share):
            k = "marlin"
        used.add(KERNELS[(method, k)])
        out.append(_held(r, method, k, act_order, split_in, share))
    if not used:
        return rows, None
    order = " with act order (desc_act)" if act_order else ""
    return out, f"{method.upper()} layers{order} as vLLM's {' and '.join(sorted(used))} hold them"


KERNELS = {
    ("gptq", "checkpoint"): "Exllama kernel (GPTQLinearMethod)",
    ("awq", "checkpoint"): "AWQ kernel (AWQLinearMethod)",
    ("gptq", "marlin"): "Marlin kernel",
    ("awq", "marlin"): "Marlin kernel",
    ("gptq", "machete"): "Machete kernel",
    ("awq", "machete"): "Machete kernel",
}


def _linear(r: Any) -> bool:
    """A GPTQ/AWQ linear layer outside the routed experts (those keep their stored layout)."""
    names = {p.what for p in r.parts}
    return bool(names & set(SCALES)) and bool(names & set(ZEROS)) and ".experts." not in f".{r.name}."


def _held(r: Any, method: str, kernel: str, act_order: bool, split_in: bool, share: Fraction) -> Any:
    """One layer's parts after its kernel's process_weights_after_loading (per tensor; a part every
    rank holds whole is scaled by 1/share so that the row's share on a rank is all of it). g_idx,
    one per input, is never split on a column-parallel rank; with act order a row-parallel rank
    holds every group's scales (Marlin: marlin_repeat_scales_on_all_ranks; GPTQLinearMethod: and
    its zeros, scale_and_zero_input_dim None)."""
    scales = next(p for p in r.parts if p.what in SCALES)
    gidx = next((p for p in r.parts if p.what in G_IDX), None)
    repeated = act_order and split_in and kernel != "machete"
    parts = []
    for p in r.parts:
        if p.what in ZEROS:
            p = _zeros(p, method, kernel, scales)
            p = _whole(p, share) if p is not None and repeated and kernel == "checkpoint" else p
        elif p.what in G_IDX:
            p = None if kernel == "marlin" and not act_order else p if split_in else _whole(p, share)
        elif p.what in SCALES and repeated:
            p = _whole(p, share)
        if p is not None:
            parts.append(p)
    if act_order and gidx is not None and kernel != "checkpoint":
        what = "act-order permutation (Machete)" if kernel == "machete" else "g_idx_sort_indices (Marlin)"
        extra = Part(what, "int32", gidx.elements, gidx.bytes)
        parts.append(extra if split_in else _whole(extra, share))
    return replace(r, parts=tuple(parts))


def _zeros(p: Part, method: str, kernel: str, scales: Part) -> Part | None:
    if method == "gptq":
        return None if kernel == "marlin" else p  # symmetric GPTQ: Marlin empties qzeros; others leave them
    if kernel == "machete":  # transform_w_zp: −scale × zero, one per group and output, in the scales' dtype
        return Part("zero points × scales (Machete)", scales.dtype, scales.elements, scales.bytes)
    return p


def _whole(p: Part, share: Fraction) -> Part:
    """A part every rank holds whole: its bytes over the row's share, so that the share is all of it."""
    return Part(p.what, p.dtype, int(p.elements / share), int(p.bytes / share))
