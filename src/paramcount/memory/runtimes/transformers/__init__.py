"""transformers on PyTorch: the inference planner, attention kernels, working set, quantised loading."""
