"""PyTorch's CUDA caching allocator, replayed: the package's own (``paramcount memory --replay``).

Kept under this name for the tests and scripts that import it:
src/paramcount/memory/runtimes/transformers/replay/allocator.py holds the rules.
"""

from paramcount.memory.runtimes.transformers.replay.allocator import (  # noqa: F401
    Allocator,
    allocation_size,
    downward,
    replay,
    round_size,
    shuffled,
    upward,
)
