"""What one training step of transformers on PyTorch holds for its backward pass (an estimate).

Autograd saves, per op, only what the gradients of its inputs need, so the tensors kept are
read off transformers' modules (Llama-style decoder layers, ``models/llama/modeling_llama.py``)
for N = B·T tokens, activations of p bytes, per layer and token:

- each RMSNorm (``LlamaRMSNorm.forward``): its fp32 upcast (saved by ``pow`` and the multiply
  by ``rsqrt``, 4h), the normalised value cast back (saved by the multiply with the weight,
  p·h) and its output, saved by the projections that read it (p·h); in fp32 the upcast is no
  copy and the three are 4h each; under ``torch.autocast`` (``mixed``: fp32 weights, so an fp32
  residual stream) each projection saves its own bf16 cast of the fp32 output (2h per
  projection: q, k, v after the attention norm; gate and up after the MLP's; GPT-NeoX's one each);
- a LayerNorm (torch's, GPT-NeoX; OLMo's parameter-free one): its input, not its output, is what
  ``native_layer_norm``'s backward needs (p·h, or 4h for OLMo's fp32 cast and an fp32 stream),
  and its output saved by its readers; GPT-NeoX's parallel residual feeds both norms one input,
  and its value, a view of the fused q/k/v output, keeps that output alive (p·3h);
- attention (sdpa's flash or efficient kernel): the query, key and value it was called with
  and its output, p·(q + k + v + o) (rotary embeddings save only the shared cos and sin; the
  output projection reads the kernel's output without a copy); per-head q/k norms (Qwen3,
  OLMo 2, Gemma 3) add their own upcast and cast, (4 + p)·(q + k); a sliding-window mask the
  context reaches adds the additive bias the efficient kernel saves, p·B·T² per such layer
  (an attention call; this project's reading); eager attention saves the fp32 softmax and its
  cast, (4 + p)·H·T² per sequence and layer;
- a gated MLP: gate (SiLU's input), its activation and up (the product's), the product (the
  down projection's): 4·p·I; a plain one 2·p·I, GPT-2's NewGELU (``gelu_new``) 5·p·I;
- GPT-2 (:func:`_gpt2`): its ``Conv1D`` projections save their input as ``nn.Linear`` does,
  one fused ``c_attn`` reads each ``ln_1`` and its q/k/v views are what sdpa saves; the
  dropouts save bool masks (1 B an element: two a layer, the embeddings', eager's T×T);
- k of E routed experts (``integrations/moe.py grouped_mm_experts_forward`` after a top-k
  router such as ``OlmoeTopKRouter``): k·(2·p·h + 4·p·I + p + 24) + 4·E + 8·k, the gathered
  input and down output, the gated MLP's tensors, the routing weight and three int64 index
  tensors per pair, the router's fp32 softmax and top-k indices per token; p = 4 under
  ``mixed``, since ``grouped_mm`` is not autocast-enabled;
- the final norm as above, and the loss (``loss/loss_utils.ForCausalLMLoss``): logits upcast to
  fp32, ``log_softmax`` saved; its backward holds the saved output, the gradient from
  ``nll_loss`` and its own result: 12·N·V bytes, the step's peak;
- ``mixed``: autocast's bf16 copies of the weights its matmuls use, 2 B per parameter,
  saved until each layer's backward; under checkpointing the output head's alone (a
  checkpointed layer saves no cast, and the cache is cleared as autocast's context exits);
- ``gradient_checkpointing_enable()`` (``torch.utils.checkpoint`` around each decoder layer):
  each layer's input only (4h in ``mixed``, else p·h), and one layer rebuilt in full;
- LoRA as peft builds it (``peft/tuners/lora/layer.py Linear.forward``): a frozen projection
  saves nothing; each adapted one an fp32 cast of its input for ``lora_A`` (4·d_in, one per
  adapter: q, k and v each cast their shared input) and ``lora_A``'s output (4r); the frozen
  MLP keeps 3·p·I (its product goes to a frozen projection), the norms 4h + p·h.

Checked against the peak of live tensor storage in a CPU training step (tests/test_saved.py)
and the H100 runs in tests/fixtures/gpu_h100.json. Not modelled: log-sum-exp and ``rsqrt``
vectors (a few bytes per token), dropout masks outside GPT-2 (the other families train without
dropout), fused q/k/v or gate/up projections outside GPT-NeoX and GPT-2 (counted as separate
casts under autocast).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...errors import ParamcountError
from ...model import Model
from ..core.terms import Term
from ..tree.layers import FeedForward, Layer, layers
from ..tree.modules import Module, output_embedding, walk

SOURCE = (
    "transformers 5.23 models/llama/modeling_llama.py (LlamaRMSNorm, LlamaAttention, LlamaMLP), "
    "loss/loss_utils.py ForCausalLMLoss, peft tuners/lora/layer.py; PyTorch autograd's saved tensors; "
    "checked against tests/fixtures/gpu_h100.json (H100) and a CPU training step (tests/test_saved.py)"
)
_QK_NORMS = ("q_norm", "k_norm", "q_layernorm", "k_layernorm")
RECOMPUTE = ("none", "selective", "full")


@dataclass(frozen=True)
class Step:
    """One training step's setting: ``precision`` (``mixed`` = fp32 weights under autocast),
    ``recompute`` (``none``/``full``), ``eager`` attention, ``window`` reached by the context
    (sliding layers get a mask), ``adapters`` (a peft LoRA or None), ``weight_in_fp32``: the
    RMSNorms scale by their weight before the cast back (Gemma's, :func:`_norm`)."""

    context: int
    batch: int
    precision: str
    recompute: str = "none"
    eager: bool = False
    heads: int = 1
    masked_layers: int = 0
    adapters: object = None
    weight_in_fp32: bool = False
    layer_norm: str = ""
    parallel: bool = False
    fused_view: bool = False
    fused_split: bool = False
    new_gelu: bool = False
    dropouts: int = 0
    attn_dropout: bool = False

    @property
    def p(self) -> int:
        return 4 if self.precision == "fp32" else 2

    @property
    def tokens(self) -> int:
        return self.context * self.batch


def _norm(h: int, s: Step, readers: int) -> int:
    """One RMSNorm's saved bytes per token, with the projections' saved inputs (``readers``).

    Gemma's (``Gemma3RMSNorm.forward``, models/gemma3/modeling_gemma3.py; Gemma and Gemma 2 the
    same) multiplies by ``1 + weight`` in fp32 before ``type_as``: that multiply saves the fp32
    normalised value (4h) where Llama's saves its 16-bit cast (p·h); in fp32 and under autocast
    (an fp32 stream) the two are the same bytes."""
    if s.layer_norm:
        return _layer_norm(h, s, readers)
    if s.adapters is not None:
        return 4 * h + s.p * h
    if s.precision == "mixed":
        return 8 * h + 2 * h * readers
    if s.precision == "fp32":
        return 12 * h
    return (8 + s.p) * h if s.weight_in_fp32 else (4 + 2 * s.p) * h


def _layer_norm(h: int, s: Step, readers: int) -> int:
    """A LayerNorm's saved bytes per token, with its readers'. ``native_layer_norm``'s backward
    needs its input, mean and rstd, not its output (torch/csrc/autograd derivatives.yaml
    ``native_layer_norm``): ``torch.nn.LayerNorm`` (GPT-NeoX) saves its p-byte input, OLMo's
    ``OlmoLayerNorm.forward`` (models/olmo/modeling_olmo.py) ``F.layer_norm`` of the input cast to
    fp32 (4h), then casts back. Its output is saved by the projections that read it (p·h); under
    ``torch.autocast`` (``layer_norm`` runs in fp32, an fp32 stream) each projection saves its own
    bf16 cast (2h per reader) and the fp32 output is saved by none."""
    upcast = 4 * h if s.layer_norm == "olmo" or s.precision in ("mixed", "fp32") else s.p * h
    if s.adapters is None and s.precision == "mixed":
        return upcast + 2 * h * readers
    return upcast + s.p * h


def _shared_input(h: int, s: Step) -> int:
    """GPT-NeoX with ``use_parallel_residual`` (``GPTNeoXLayer.forward``): both norms read the
    layer's input, so the MLP's norm saves the tensor the attention's already holds."""
    if not (s.parallel and s.layer_norm):
        return 0
    return 4 * h if s.layer_norm == "olmo" or s.precision in ("mixed", "fp32") else s.p * h


def _post_norm(h: int, s: Step) -> int:
    """A norm whose output only joins the residual stream (Gemma 2 and 3's ``post_attention_layernorm``
    and ``post_feedforward_layernorm``, ``Gemma3DecoderLayer.forward``): its upcast, saved by ``pow``
    and the ``rsqrt`` multiply (4h), and what the weight multiply saves (the fp32 normalised value
    for Gemma's norm, else its p-byte cast; 4h in fp32 or an fp32 stream); no reader saves its
    output. Frozen (LoRA), the weight multiply saves nothing."""
    if s.adapters is not None:
        return 4 * h
    return 8 * h if s.weight_in_fp32 or s.precision in ("mixed", "fp32") else (4 + s.p) * h


def per_token(g: Layer, s: Step, qk_norm: bool) -> int:
    """Bytes one layer saves per token (without the T×T terms)."""
    p, frozen = s.p, s.adapters is not None
    # the projections reading a norm: q, k, v (one fused), gate and up (a plain MLP's one, where
    # the LayerNorms are read as the replay holds them: _layer_norms)
    ups = 1 if s.layer_norm and not any(f.gated for f in g.ffn) else 2
    n = sum(_norm(g.hidden, s, 1 if s.fused_view or s.fused_split else 3) for _ in g.attention) + (
        _norm(g.hidden, s, ups) if g.ffn else 0
    )
    n -= _shared_input(g.hidden, s) if g.attention and g.ffn else 0
    n += max(0, g.norms - len(g.attention) - len(g.ffn)) * _post_norm(g.hidden, s)  # sandwich norms
    for a in g.attention:
        n += p * (a.qkv + a.width) + (2 if s.precision == "mixed" else p) * a.qkv * s.fused_view
        if qk_norm:  # q and k: the attention width and one of k/v; Gemma's norm keeps 4 B more
            qk = (8 + p if s.precision != "fp32" else 8) if s.weight_in_fp32 and not frozen else 4 + p
            n += qk * (a.qkv - (a.qkv - a.width) // 2)
    for f in g.ffn:
        n += _routed(f, g.hidden, s) if f.experts else _inner(f, p, frozen)
        # NewGELUActivation.forward (transformers activations.py, GPT-2's ``gelu_new``) written as
        # elementwise ops: ``pow`` saves its input (the c_fc output, counted), the product saves
        # ``0.5 * input`` and ``1 + tanh(...)``, ``tanh`` its output: three more p·I tensors
        n += 3 * p * f.inner * f.times if s.new_gelu and not f.gated and not f.experts else 0
    # bool masks of the residual dropouts (GPT2Attention's resid_dropout, GPT2MLP's dropout):
    # CUDA's fused kernel, native_dropout, saves its mask (1 B an element) for the backward
    return n + s.dropouts * g.hidden


def _inner(f: FeedForward, p: int, frozen: bool) -> int:
    """A feed-forward's saved tensors between its projections, per token and copy run."""
    return f.times * ((3 if frozen else 4) * p * f.inner if f.gated else (1 if frozen else 2) * p * f.inner)


def _routed(f: FeedForward, h: int, s: Step) -> int:
    """k of E experts per token as transformers runs them (``integrations/moe.py``
    ``grouped_mm_experts_forward``, its default; the eager loop over experts saves the same) after
    a top-k router (``OlmoeTopKRouter``). Per token-expert pair: the gathered input and the down
    projection's output (p·h each), the gate/up output, its activation and product (4·p·I), the
    routing weight (p) and three int64 index tensors (``perm``, ``perm // k``, ``inv_perm``); per
    token the router's fp32 softmax (4·E) and its top-k indices (8·k). ``grouped_mm`` is not
    autocast-enabled: under ``mixed`` the experts compute in their fp32 weights' dtype."""
    p = 4 if s.precision in ("mixed", "fp32") else s.p
    pairs = f.times * (2 * p * h + _inner(replace(f, times=1), p, s.adapters is not None) + p + 3 * 8)
    return pairs + 4 * f.experts + 8 * f.times


def quadratic(g: Layer, s: Step) -> int:
    """The T×T tensors one layer saves: eager's softmax and its cast."""
    if not s.eager:
        return 0
    mask = 1 if s.attn_dropout else 0  # dropout on the attention weights: its bool mask
    return len(g.attention) * (4 + s.p + mask) * s.heads * s.batch * s.context * s.context


def activations(
    model: Model,
    batch: int = 1,
    context: int = 2048,
    *,
    precision: str = "bf16",
    recompute: str = "none",
    flash: bool = True,
    adapters: object = None,
) -> Term:
    """What one training step of transformers holds for its backward at its peak (an estimate):
    ``batch`` sequences of ``context`` tokens, ``precision`` ``mixed``/``bf16``/``fp32``,
    ``recompute`` ``none``/``selective``/``full`` (``gradient_checkpointing_enable()``),
    ``flash`` False for eager attention, ``adapters`` a :func:`~paramcount.memory.training.lora.lora`."""
    from ..tree.widths import shape_model

    batch, context = _positive(batch, "batch"), _positive(context, "context")
    s = step(model, context, batch, precision, recompute=recompute, flash=flash, adapters=adapters)
    return of_step(shape_model(model), s)


def step(
    model: Model,
    context: int,
    batch: int,
    precision: str,
    *,
    recompute: str = "none",
    flash: bool = True,
    adapters: object = None,
) -> Step:
    """The step as transformers runs it: attention from transformers' default (eager where
    ``flash`` is False), the sliding-window layers the context reaches (sdpa gets their mask)."""
    if recompute not in RECOMPUTE:
        raise ParamcountError(f"recompute must be one of {', '.join(RECOMPUTE)}, not {recompute!r}", field="recompute")
    eager, heads, windows = _attending(model, flash)
    masked = 0 if eager else sum(n for window, n in windows if window <= context)
    return Step(context, batch, precision, recompute, eager, heads, masked, adapters)


def _attending(model: Model, flash: bool) -> tuple[bool, int, tuple[tuple[int, int], ...]]:
    """Eager attention or not, the query heads, and (window, layers) of the sliding layers."""
    from ..context.kv_layout import layout_of
    from ..runtimes.transformers.attention import implementation, query_heads

    def build() -> tuple[bool, int, tuple[tuple[int, int], ...]]:
        eager = implementation(model, None if flash else "eager")[0] == "eager"
        kinds = getattr(layout_of(model, "latent")[0], "kinds", ())
        windows = tuple((k.window, k.layers) for k in kinds if k.attention == "sliding" and k.window)
        return eager, query_heads(model) or 1, windows

    return model.derived(("training attention", flash), build)


def _positive(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParamcountError(f"{field} must be a whole number ≥ 1, not {value!r}", field=field)
    return value


def of_step(model: Model, s: Step) -> Term:
    """Everything the step holds for its backward at its peak, the start of the loss's backward."""
    # GemmaRMSNorm, Gemma2RMSNorm, Gemma3RMSNorm (and Gemma 3n's) scale before the cast (_norm)
    s = replace(s, weight_in_fp32=model.model_type.startswith("gemma"), **_layer_norms(model))
    groups = layers(model)
    qk = any(m.name.rsplit(".", 1)[-1] in _QK_NORMS for m in walk(model))
    loss = 12 * s.tokens * vocab(model)
    parts = [_layers(groups, s, qk, loss), *_extras(model, groups, s)]
    parts = [t for t in parts if t.bytes]
    total = sum(t.bytes for t in parts)
    label = f"activations ({s.precision}, {s.context:,} tokens × {s.batch}, recompute {s.recompute})"
    formula = " + ".join(f"{t.bytes:,}" for t in parts) + f" = {total:,} B"
    said = "tensors autograd saves in transformers' modules, at the loss's backward (--precision, --recompute)"
    if s.recompute == "selective":
        said += "; transformers has no selective recomputation: planned as none (sdpa keeps no T×T anyway)"
    return Term("activations", label, total, formula, said, True, SOURCE, tuple(parts))


def _layer_norms(model: Model) -> dict[str, object]:
    """The LayerNorms read as the replay holds them (:func:`_layer_norm`): GPT-NeoX's
    ``torch.nn.LayerNorm`` with its parallel residual (``use_parallel_residual``, True by default
    in ``GPTNeoXConfig``), and OLMo's parameter-free ``OlmoLayerNorm``."""
    if model.model_type == "olmo":
        return {"layer_norm": "olmo"}
    if model.model_type == "gpt2":
        return _gpt2(model)
    if model.model_type != "gpt_neox":
        # Other LayerNorm models save tensors this module does not read yet: their norms keep
        # the RMSNorm count rather than plan less.
        return {}
    parallel = bool(model.config.get("use_parallel_residual", True))
    # GPTNeoXAttention.forward: ``qkv.chunk(3, dim=-1)`` of the fused projection's output; sdpa
    # saves the value it is called with, a view, which keeps the whole fused output alive beside
    # the q, k (rotated) and v (made contiguous) copies the kernel saves
    return {"layer_norm": "torch", "parallel": parallel, "fused_view": True}


def _gpt2(model: Model) -> dict[str, object]:
    """GPT-2 (transformers models/gpt2/modeling_gpt2.py) as the replay holds it: ``nn.LayerNorm``
    (saves its input) before one fused ``c_attn``, a ``Conv1D`` (pytorch_utils.py ``Conv1D.forward``:
    ``torch.addmm`` on a view of its input, which it saves as ``nn.Linear`` does; autocast casts
    it to bf16); ``GPT2Attention.forward`` splits the output into q/k/v views that sdpa saves as
    they are (no rotary, no copy), so the fused output is the q, k and v counted; NewGELU for
    ``gelu_new``; the dropouts of ``resid_pdrop`` (two a layer), ``embd_pdrop`` and, under eager
    attention, ``attn_pdrop`` save bool masks (sdpa's flash kernel keeps only its RNG state)."""
    c = model.config
    return {
        "layer_norm": "torch",
        "fused_split": True,
        "new_gelu": c.get("activation_function", "gelu_new") == "gelu_new",
        "dropouts": 2 if c.get("resid_pdrop", 0.1) else 0,
        "attn_dropout": bool(c.get("attn_pdrop", 0.1)),
    }


def _layers(groups: list[Layer], s: Step, qk: bool, loss: int) -> Term:
    n = s.tokens
    if s.recompute == "full":
        width = 4 if s.precision == "mixed" else s.p
        kept = sum(g.runs * n * width * g.hidden for g in groups)
        one = max(n * per_token(g, s, qk) + quadratic(g, s) for g in groups)
        more = max(0, one - loss)  # a layer is rebuilt after the loss's buffers are freed
        formula = f"layer inputs {kept:,} + max(0, one layer rebuilt {one:,} − the loss's {loss:,}) = {kept + more:,} B"
        said = "gradient checkpointing: each layer's input; one layer at a time rebuilt once the loss is done"
        return Term("activations.layers", "layers (checkpointed)", kept + more, formula, said, True, SOURCE)
    each = [(g, n * per_token(g, s, qk) + quadratic(g, s)) for g in groups]
    total = sum(g.runs * b for g, b in each)
    formula = " + ".join(f"{g.runs} × {b:,}" for g, b in each) + f" = {total:,} B"
    return Term("activations.layers", "layers' saved tensors", total, formula, "per layer, per token", True, SOURCE)


def _extras(model: Model, groups: list[Layer], s: Step) -> list[Term]:
    n, h = s.tokens, groups[-1].hidden
    v = vocab(model)
    out = [
        Term("activations.norm", "final norm", n * _norm(h, s, 1), f"{n:,} × {_norm(h, s, 1)}", "", True, SOURCE),
        *_embedding_dropout(model, s, h),
        Term(
            "activations.loss",
            "loss: fp32 logits' log-softmax and its backward",
            12 * n * v,
            f"12 · N · V = 12 · {n:,} · {v:,}",
            "ForCausalLMLoss upcasts the logits",
            True,
            SOURCE,
        ),
    ]
    if s.masked_layers and s.recompute != "full":
        bias = s.masked_layers * s.p * s.batch * s.context * s.context
        out.append(
            Term(
                "activations.bias",
                "sliding-window masks' additive bias",
                bias,
                f"{bias:,} B",
                "saved by the memory-efficient kernel per masked layer",
                True,
                SOURCE,
            )
        )
    if s.adapters is not None:
        per = sum(r.copies * (4 * r.d_in + 4 * r.a[0]) for r in s.adapters.rows if r.module != "Embedding")
        if s.recompute == "full":
            per //= max(1, sum(g.runs for g in groups))
        out.append(
            Term(
                "activations.adapters",
                "LoRA inputs cast to fp32 and lora_A outputs",
                n * per,
                f"{n:,} × {per:,}",
                "peft casts each adapter's input to the adapter dtype",
                True,
                SOURCE,
            )
        )
    elif s.precision == "mixed":
        # Checkpointed layers save no cast, and autocast's cache is cleared as its context exits
        # (torch.autocast.__exit__, before the backward): only the output head's cast, taken
        # outside every checkpoint, is still held at the loss's backward.
        full = s.recompute == "full"
        copies = 2 * (_head_params(model) if full else _matmul_params(model))
        said = "the output head's, saved by its matmul" if full else "backward keeps them"
        out.append(
            Term(
                "activations.autocast",
                "autocast's bf16 weight copies",
                copies,
                f"2 B × {copies // 2:,}",
                f"torch.autocast casts each weight once per forward; {said}",
                True,
                SOURCE,
            )
        )
    return out


def _embedding_dropout(model: Model, s: Step, h: int) -> list[Term]:
    """GPT-2's ``drop`` after the embeddings (``GPT2Model.forward``, ``embd_pdrop``): its bool
    mask, 1 B an element, saved by native_dropout for the backward."""
    if model.model_type != "gpt2" or not model.config.get("embd_pdrop", 0.1):
        return []
    n = s.tokens * h
    return [Term("activations.dropout", "embedding dropout's mask", n, f"{n:,} × 1 B", "", True, SOURCE)]


def _head(model: Model) -> Module | None:
    """The output head's module, or None."""
    name = output_embedding(model)
    return next((m for m in walk(model) if m.name == name), None) if name else None


def _head_params(model: Model) -> int:
    head = _head(model)
    return head.d_in * head.d_out if head else 0


def vocab(model: Model) -> int:
    """Rows of the output head (the loss's V), 0 without one."""
    head = _head(model)
    return head.d_out if head else 0


def _matmul_params(model: Model) -> int:
    """Weights the matmuls read: every linear layer's (GPT-2's ``Conv1D`` too: autocast casts
    ``torch.addmm``'s weight as ``linear``'s), and a tied output head's."""
    from ..tree.modules import CONV1D, LINEAR

    mods = list(walk(model))
    n = sum(m.d_in * m.d_out * m.copies for m in mods if m.type in (LINEAR, CONV1D))
    head = output_embedding(model)
    if head and not any(m.name == head and m.type == LINEAR for m in mods):
        n += next((m.d_in * m.d_out for m in mods if m.name == head), 0)
    return n
