"""Weights in memory: precision and quantisation schemes, checkpoints as stored, per-module layouts."""
