"""What sits above the weights and the KV cache at a generation's peak, as ``mx.get_peak_memory()``
counts it (MLX arrays only: mlx/backend/cpu/allocator and metal/allocator.cpp ``peak_memory_``).

MLX evaluates lazily: a prefill chunk's call builds the whole graph, and ``generate_step`` evaluates
only the caches' state (``mx.eval([c.state for c in prompt_cache])``, mlx_lm/generate.py). The last
layer's keys and values need nothing of that layer's attention, so a chunk computes the attention of
every layer but the last (a one-layer model none) and neither the final norm nor the logits.
Within a chunk of C tokens attending to K keys (the cache's offset after it; a rotating cache's
min(size, M − 1) + C), one layer's working set is live at a time:

- the attention scores. On a CPU ``mx.fast.scaled_dot_product_attention`` falls back to
  matmul-softmax-matmul (mlx/fast.cpp ``scaled_dot_product_attention``, its ``fallback``): H_q × C × K
  scores in the activation dtype, and for a causal or windowed mask a C × K bool mask; softmax and
  the masking write over the scores. On an Apple GPU the fused kernel runs instead
  (mlx/backend/metal/scaled_dot_product_attention.cpp: ``sdpa_full_self_attention_metal`` for chunks,
  ``sdpa_vector`` for single tokens), tiling the scores in threadgroup memory: no H_q × C × K array;
  a mask given as an array (a sliding window's, mlx_lm/models/base.py ``create_causal_mask``) is
  still C × K bools.
- per token, the chunk's other intermediates: measured on mlx 0.32's CPU backend (tools/record_mlx.py,
  and probes varying one width at a time) as 32 B per unit of the hidden width (8 float32 arrays,
  whatever the model's dtype), and in the activation dtype 5 arrays of the query projection's (q,
  its rotation, its scaling, the attention output and its transpose), 3 of the key/value
  projection's, 2 of the MLP's (gate and up; SwitchGLU: the routed experts' k × width), and one
  more of q's and k's where the model normalises them (Qwen3, Gemma 3).
- the cache's old buffer, where the chunk grows it, until the concatenation is done
  (mlx_lm/models/cache.py ``KVCache.update_and_fetch``).

A single-token call (the last prompt token and each generated one) computes every layer and the
logits (vocabulary × the dtype, and their log-softmax); it is the peak only where the prompt is
short.
"""

from __future__ import annotations

from dataclasses import dataclass

SRC_PEAK = (
    "mlx/fast.cpp scaled_dot_product_attention (the CPU fallback: matmul, where, softmax, matmul); "
    "mlx/backend/metal/scaled_dot_product_attention.cpp (the fused kernels on Apple GPUs); "
    "mlx_lm/generate.py generate_step (chunks evaluate the caches' state only); "
    "mlx_lm/models/cache.py KVCache.update_and_fetch (the old buffer beside the new)"
)
# Arrays per token of each width live at a chunk's peak, measured on mlx 0.32.4's CPU backend
# (tools/record_mlx.py; see the module docstring): the hidden width's in float32 whatever the
# model's dtype (8 × 4 B: bf16, fp16 and fp32 models alike measured 30-33 B per token per unit of
# width), the others in the activation dtype.
HIDDEN_BYTES, QUERY, KEYVALUE, MLP = 32, 5, 3, 2
NORM_BYTES = 4  # one more float32 array of the hidden width per norm past two (Gemma 3's four: 15.7-16.1 kB/token)


@dataclass(frozen=True)
class Widths:
    """The widths a layer's working set follows: hidden, query (H_q·d), key/value (n_kv·d), the
    MLP's per-token width (dense: intermediate; MoE: experts per token × their width), whether q
    and k are normalised, the query heads and the vocabulary."""

    hidden: int
    norms: int  # norms a layer applies to the hidden width (2; Gemma 3: 4)
    query: int
    keyvalue: int
    mlp: int
    qk_norm: bool
    heads: int
    vocab: int
    layers: int

    def per_token(self, b: int) -> int:
        """Bytes per token of a chunk's intermediates beside the scores, at ``b`` bytes a value."""
        qk = (self.query + self.keyvalue) if self.qk_norm else 0
        hidden = (HIDDEN_BYTES + NORM_BYTES * (self.norms - 2)) * self.hidden
        return hidden + b * (QUERY * self.query + KEYVALUE * self.keyvalue + MLP * self.mlp + qk)


def chunk_bytes(w: Widths, chunk: int, keys: int, b: int, fused: bool, windowed: bool) -> tuple[int, int, int]:
    """(scores, mask, intermediates) bytes of a prefill chunk of ``chunk`` tokens over ``keys``."""
    attends = w.layers > 1  # the last layer's attention is never evaluated in a chunk
    scores = w.heads * chunk * keys * b if attends and not fused else 0
    mask = chunk * keys if attends and (windowed or not fused) else 0
    return scores, mask, chunk * w.per_token(b)


def token_bytes(w: Widths, keys: int, b: int, fused: bool) -> int:
    """A single-token call: one token's intermediates, its scores over ``keys``, the logits (and
    their log-softmax: ``logits - mx.logsumexp(logits)`` in generate_step's ``_step``)."""
    scores = 0 if fused else w.heads * keys * b
    return w.per_token(b) + scores + 2 * w.vocab * b
