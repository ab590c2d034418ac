"""Training compute: FLOPs per token, 6·N·D, the Chinchilla token budget, and wall-clock time.

A forward pass multiplies every token by every weight matrix it passes through: 2 FLOPs (a
multiply and an add) per weight, so ``2·N_matmul`` per token, where ``N_matmul`` counts the
linear layers (tied output heads included, routers included, k of E routed experts, ALBERT's
shared layers once per use) and leaves out embedding lookups, norms and biases. Attention adds
QKᵀ and the attention-weighted sum of values: ``4·T·d_attn`` per token and layer over a
context of T, as a dense kernel computes both (d_attn = heads × head dim, read as the output
projection's input width). A causal mask leaves ``2·(T+1)·d_attn`` of it useful.

Kaplan et al. 2020 (arXiv:2001.08361, Table 1) write the forward cost as
``C_forward ≈ 2·N + 2·n_layer·n_ctx·d_attn`` with N the non-embedding parameters; their
attention term is half the dense count above, about what a causal mask leaves. PaLM (Chowdhery et al.
2022, App. B) and nanoGPT count training as ``6·N + 12·L·H·Q·T`` per token: three times the
dense forward, a backward pass costing twice the forward (input and weight gradients).
Training compute is usually quoted as ``6·N·D`` (Kaplan §2.1): :func:`training_flops` gives
it for both choices of N beside the exact count and the error of each.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

from ..errors import ParamcountError, bounded_exponent, bounded_number
from ..ir import Tensor
from ..model import Model

CHINCHILLA_TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022 (arXiv:2203.15556): ~20 tokens per parameter


@dataclass(frozen=True)
class Forward:
    """FLOPs of one forward pass over ``batch`` sequences of ``context`` tokens.

    ``matmul_params``: weights each token is multiplied by; ``attention_width``: Σ over the
    layers run of d_attn; ``non_embedding``: Kaplan's N (the parameters a token uses but the
    embedding tables and an untied output embedding).
    """

    context: int
    batch: int
    matmul_params: int
    attention_width: int
    non_embedding: int

    @property
    def dense(self) -> int:
        """Matrix-multiply FLOPs per token: 2·N_matmul."""
        return 2 * self.matmul_params

    @property
    def attention(self) -> int:
        """QKᵀ and attention·V per token over the whole context, as dense kernels compute them."""
        return 4 * self.context * self.attention_width

    @property
    def attention_causal(self) -> int:
        """The same under a causal mask: token t attends to t + 1 positions, on average (T+1)/2."""
        return 2 * (self.context + 1) * self.attention_width

    @property
    def per_token(self) -> int:
        return self.dense + self.attention

    @property
    def per_token_causal(self) -> int:
        return self.dense + self.attention_causal

    @property
    def kaplan(self) -> int:
        """Kaplan et al.'s C_forward = 2·N + 2·n_layer·n_ctx·d_attn per token."""
        return 2 * self.non_embedding + 2 * self.context * self.attention_width

    @property
    def total(self) -> int:
        """FLOPs of the whole pass: per token × context × batch."""
        return self.per_token * self.context * self.batch

    @property
    def formula(self) -> str:
        return (
            f"(2·{self.matmul_params:,} + 4·{self.context:,}·{self.attention_width:,}) × {self.context:,}"
            f" × {self.batch} = {self.total:,} FLOPs"
        )


@dataclass(frozen=True)
class TrainingFlops:
    """Training compute for ``tokens`` tokens at sequence length ``context``.

    ``exact`` = 3 × the dense forward count per token × tokens (backward = 2 × forward);
    ``flops`` = 6·N·D with N all parameters (k of E experts for a mixture of experts);
    ``approximations`` gives 6·N·D for each N with its relative error against ``exact``.
    """

    tokens: int
    context: int
    params: int
    non_embedding: int
    forward: Forward

    @property
    def flops(self) -> int:
        return 6 * self.params * self.tokens

    @property
    def exact(self) -> int:
        return 3 * self.forward.per_token * self.tokens

    @property
    def exact_causal(self) -> int:
        return 3 * self.forward.per_token_causal * self.tokens

    @property
    def approximations(self) -> dict[str, tuple[int, float | None]]:
        """``{"6·N·D (N total)": (flops, error), "6·N·D (N non-embedding)": ...}``; error = approx/exact − 1
        (None when the exact figure is 0)."""
        out = {}
        for what, n in (("N total", self.params), ("N non-embedding", self.non_embedding)):
            flops = 6 * n * self.tokens
            out[f"6·N·D ({what})"] = (flops, relative_error(flops, self.exact))
        return out


def relative_error(approx: int, exact: int) -> float | None:
    """approx / exact − 1; None where the exact figure is 0 (a model with no matrix multiply:
    a checkpoint of one embedding), when no ratio exists."""
    return approx / exact - 1 if exact else None


def forward_flops(model: Model, context: int, batch: int = 1) -> Forward:
    """FLOPs of a forward pass over ``batch`` sequences of ``context`` tokens (see the module)."""
    context, batch = _positive(context, "context"), _positive(batch, "batch")
    width = sum(width * runs for width, runs in attention_widths(model).items())
    return Forward(context, batch, matmul_params(model), width, non_embedding(model))


def attention_widths(model: Model) -> dict[int, int]:
    """``{d_attn: attention blocks run per forward pass}``: GPT-3's ``{12288: 96}``, T5-small's
    ``{512: 18}`` (6 encoder, 6 decoder self- and 6 cross-attention blocks)."""
    from .tree.layers import layers

    out: dict[int, int] = {}
    for g in layers(model):
        for a in g.attention:
            out[a.width] = out.get(a.width, 0) + g.runs
    return out


def training_flops(model: Model, tokens: int, context: int = 2048) -> TrainingFlops:
    """Training compute for ``tokens`` tokens: 6·N·D and the exact count beside it."""
    tokens = _positive(tokens, "tokens")
    return TrainingFlops(tokens, context, model.active_total, non_embedding(model), forward_flops(model, context))


def chinchilla_tokens(model: Model) -> int:
    """Compute-optimal training tokens, 20 per parameter (Hoffmann et al. 2022, Table 3)."""
    return CHINCHILLA_TOKENS_PER_PARAM * model.total


def train_time(flops: float, peak_flops: float, utilisation: float = 0.4, gpus: int = 1) -> float:
    """Seconds to spend ``flops`` on ``gpus`` devices of ``peak_flops`` FLOP/s each at
    ``utilisation`` (model FLOPs utilisation, MFU; the default 0.4 is an assumption to replace)."""
    for value, name in ((flops, "flops"), (peak_flops, "peak_flops")):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
            raise ParamcountError(f"{name} must be a positive number, not {value!r}", field=name)
    if isinstance(utilisation, bool) or not isinstance(utilisation, (int, float)) or not 0 < utilisation <= 1:
        raise ParamcountError(f"utilisation must be in (0, 1], not {utilisation!r}", field="utilisation")
    if utilisation < MIN_UTILISATION:  # 1e-320 is no share of a peak, and its quotient overflows
        raise ParamcountError(f"utilisation {utilisation:g} is below {MIN_UTILISATION:g}", field="utilisation")
    try:
        seconds = flops / (peak_flops * utilisation * _positive(gpus, "gpus"))
    except OverflowError:  # FLOPs past 10^308 (a printout of nested repeats)
        seconds = math.inf
    if not seconds < MAX_SECONDS:
        raise ParamcountError(f"{flops:.3g} FLOPs take more than {MAX_SECONDS:g} seconds at this rate", field="flops")
    return seconds


MIN_UTILISATION = 1e-6
MAX_SECONDS = 1e30  # 10^22 times the age of the universe: past it the figure is only noise


_TOKENS = re.compile(r"(\d+(?:\.\d+)?)(?:e\+?(\d{1,2}))?([kmbt]?)")
_TOKEN_SCALES = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def parse_tokens(text: str | int) -> int:
    """A token count as people write it: ``300B``, ``2T``, ``1.4e12``, ``2_000_000``, ``2,000,000``
    (k, M, B, T are 10^3, 10^6, 10^9, 10^12); a whole number ≥ 1, else a ParamcountError."""
    raw = str(text)
    m = _TOKENS.fullmatch(re.sub(r"[\s,_]", "", raw).lower())
    if m:
        bounded_number(m.group(1), "--tokens", "a count of tokens")
    exp = bounded_exponent(m.group(2), "--tokens") if m else 0
    value = Fraction(m.group(1)) * 10**exp * _TOKEN_SCALES[m.group(3)] if m else None
    if value is None or value.denominator != 1 or value < 1:
        raise ParamcountError(
            f"expected a whole number of tokens ≥ 1 like 300B, 2T, 1.4e12 or 2_000_000, got {raw!r}", field="--tokens"
        )
    return int(value)


# ---- counting ---------------------------------------------------------------------------------


def matmul_params(model: Model) -> int:
    """Weights one token is multiplied by in a forward pass (see the module docstring)."""
    from .tree.modules import CONV1D, LINEAR, walk

    total = 0
    for m in walk(model):
        if m.type in (LINEAR, CONV1D):
            total += m.d_in * m.d_out * m.runs
        elif m.kind == "router" and m.type is None:  # transformers 5's router modules (not nn.Linear)
            total += sum(_numel(t) for t in m.tensors() if t.name == "weight") * m.runs
        elif m.block.active is not None:  # fused experts (E, out, in): k of E per token
            k, e = m.block.active
            total += (
                sum(_numel(t) for t in m.tensors() if isinstance(t, Tensor) and len(t.shape) == 3) * k // e * m.runs
            )
    return total


def non_embedding(model: Model) -> int:
    """Kaplan's N: the parameters a token uses (all of them, or k of E experts) less the
    embedding tables and an untied output embedding."""
    from .tree.modules import EMBEDDING, output_embedding, walk

    out = output_embedding(model)
    tables = 0
    for m in walk(model):
        if m.type == EMBEDDING or m.name == out:
            tables += sum(t.count for t in m.tensors() if t.name == "weight") * m.copies
    return model.active_total - tables


def _numel(t) -> int:
    return math.prod(int(d) for d in t.shape)


def _positive(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParamcountError(f"{field} must be a whole number ≥ 1, not {value!r}", field=field)
    return value


__all__ = [
    "CHINCHILLA_TOKENS_PER_PARAM",
    "Forward",
    "TrainingFlops",
    "attention_widths",
    "chinchilla_tokens",
    "forward_flops",
    "matmul_params",
    "non_embedding",
    "parse_tokens",
    "train_time",
    "training_flops",
]
