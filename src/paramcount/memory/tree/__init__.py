"""What a model's tree stands for as torch modules, and the widths of its layers."""
