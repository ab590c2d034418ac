"""Hardware as data: GPUs, Apple chips and CPUs with their memory, bandwidth and peak FLOP/s, each
figure citing its datasheet (:mod:`.catalog`), and what this machine has (:mod:`.detect`).

    >>> from paramcount.hardware import lookup
    >>> lookup("NVIDIA GeForce RTX 3060").key
    'rtx3060-12gb'

This package sits below memory: it imports only :mod:`paramcount.errors`.
"""

from .catalog import candidates, catalog, lookup
from .row import DTYPES, KINDS, VENDORS, Hardware

__all__ = ["DTYPES", "KINDS", "VENDORS", "Hardware", "candidates", "catalog", "lookup"]
