"""Training: the training plan, model and optimizer states, saved activations, LoRA adapters."""
