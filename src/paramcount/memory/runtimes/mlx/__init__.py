"""Memory as MLX (mlx-lm) allocates it on Apple Silicon: weights as mlx-lm quantises them, its KV
caches as they grow, and the peak ``mx.get_peak_memory()`` reports over a generation.

Modelled on mlx 0.32 and mlx-lm 0.32 (:data:`paramcount.memory.runtimes.mlx.plan.MLX_VERSION`) and
held to runs of random-weight models recorded by tools/record_mlx.py (tests/fixtures/mlx_runs.json):

- :mod:`.quant`: the schemes (bf16, fp16, fp32, ``mlx-Nbit`` with a group size), a model folder's
  ``quantization`` block, and the bytes of each tensor (mlx_lm/utils.py ``quantize_model``);
- :mod:`.cache`: ``KVCache``, ``RotatingKVCache`` and ``QuantizedKVCache`` (mlx_lm/models/cache.py)
  stepped through ``generate_step``'s chunked prefill and decode (mlx_lm/generate.py);
- :mod:`.peak`: what sits above the weights and the cache at the peak (the attention scores of
  the CPU fallback or the fused Metal kernel, the chunk's intermediates, the old cache buffer);
- :mod:`.plan`: the planner the ``--runtime mlx`` flag picks.
"""
