"""vLLM: what ``vllm serve`` holds on each GPU, and its pages for state layers."""
