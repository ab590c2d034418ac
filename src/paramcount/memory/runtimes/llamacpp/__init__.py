"""llama.cpp: its buffers (model, KV, recurrent state, compute, output) as it allocates them."""
