"""What the context costs: the KV cache and its per-layer layout, image and audio tokens."""
