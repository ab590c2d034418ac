"""The plan every runtime's figures are made of: terms, plans, context limits, overhead, GPUs."""
