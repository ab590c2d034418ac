"""PyTorch's CUDA caching allocator, replayed: what a sequence of allocations reserves.

Pure Python, no torch. The rules are those of c10/cuda/CUDACachingAllocator.cpp with its
defaults (no ``max_split_size_mb``, no expandable segments, one stream, no memory pressure):

- a request is rounded up to 512 bytes (``round_size``); up to 1 MiB it is served from the
  small pool, whose segments are 2 MiB; larger ones from the large pool;
- the smallest cached block of the pool that fits is taken, the lowest address among equal
  sizes (``get_free_block``: the pool is ordered by size, then address);
- failing that, a new segment is reserved (``alloc_block``): 20 MiB for requests under 10 MiB,
  else the request rounded up to 2 MiB (``get_allocation_size``);
- the block is split when what remains is over 1 MiB (large pool) or at least 512 bytes (small
  pool), the request taking the lower addresses (``should_split``, ``alloc_found_block``);
- a freed block merges with free neighbours of its segment (``free_block``); segments are
  never returned (no ``empty_cache``, no out-of-memory retry).

``allocated`` counts each block's size as the allocator's ``allocated_bytes`` stat does (a
block not split keeps its remainder); ``reserved`` the segments.

    replay(events, marks)  # events: ("A", key, bytes[, op]) and ("F", key), as trace.py writes

Each phase's result also says which event set its peaks (``alloc_at``, ``reserved_at``: indices
into ``events``), so that the caller can name the op.
"""

from __future__ import annotations

import random
from bisect import bisect_left, insort
from collections.abc import Callable

SMALL = 1 << 20  # kSmallSize
SMALL_BUFFER = 2 << 20  # kSmallBuffer
LARGE_BUFFER = 20 << 20  # kLargeBuffer
MIN_LARGE_ALLOC = 10 << 20  # kMinLargeAlloc
ROUND_LARGE = 2 << 20  # kRoundLarge
MIN_BLOCK = 512  # kMinBlockSize


class Block:
    __slots__ = ("allocated", "next", "prev", "ptr", "size", "small")

    def __init__(self, ptr: int, size: int, small: bool) -> None:
        self.ptr, self.size, self.small = ptr, size, small
        self.allocated = False
        self.prev: Block | None = None
        self.next: Block | None = None


def round_size(n: int) -> int:
    return MIN_BLOCK if n < MIN_BLOCK else -(-n // MIN_BLOCK) * MIN_BLOCK


def allocation_size(n: int) -> int:
    if n <= SMALL:
        return SMALL_BUFFER
    if n < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-n // ROUND_LARGE) * ROUND_LARGE


GAP = 1 << 30  # between segments: they never adjoin, so never merge


def upward() -> Callable[[int], int]:
    """Each new segment above the last (the default here)."""
    top = 0

    def place(size: int) -> int:
        nonlocal top
        top += size + GAP
        return top - size - GAP

    return place


def downward() -> Callable[[int], int]:
    """Each new segment below the last."""
    bottom = 1 << 62

    def place(size: int) -> int:
        nonlocal bottom
        bottom -= size + GAP
        return bottom

    return place


def shuffled(seed: int) -> Callable[[int], int]:
    """Segments wherever a seeded draw puts them: the driver's virtual addresses depend on what
    the process allocated and freed before, which a plan cannot know."""
    rng = random.Random(seed)
    return lambda size: rng.getrandbits(40) << 22


class Allocator:
    """One device's caching allocator; ``malloc`` and ``free`` as the caller sees them."""

    def __init__(self, place: Callable[[int], int] | None = None) -> None:
        self.pools: dict[bool, list[tuple[int, int, Block]]] = {True: [], False: []}
        self.place = place or upward()
        self.allocated = self.reserved = 0
        self.peak_allocated = self.peak_reserved = 0
        self.clock = 0  # the caller's event index, so that a peak says which event set it
        self.allocated_at = self.reserved_at = -1

    def _insert(self, b: Block) -> None:
        insort(self.pools[b.small], (b.size, b.ptr, b))

    def _remove(self, b: Block) -> None:
        pool = self.pools[b.small]
        i = bisect_left(pool, (b.size, b.ptr), key=lambda e: (e[0], e[1]))
        assert pool[i][2] is b
        del pool[i]

    def malloc(self, nbytes: int) -> Block:
        size = round_size(nbytes)
        small = size <= SMALL
        pool = self.pools[small]
        i = bisect_left(pool, size, key=lambda e: e[0])
        if i < len(pool):
            block = pool.pop(i)[2]
        else:
            block = Block(self.place(allocation_size(size)), allocation_size(size), small)
            self.reserved += block.size
            if self.reserved > self.peak_reserved:
                self.peak_reserved, self.reserved_at = self.reserved, self.clock
        remaining = block.size - size
        if remaining >= MIN_BLOCK if small else remaining > SMALL:
            rest = Block(block.ptr + size, remaining, small)
            rest.prev, rest.next = block, block.next
            if block.next:
                block.next.prev = rest
            block.next, block.size = rest, size
            self._insert(rest)
        block.allocated = True
        self.allocated += block.size
        if self.allocated > self.peak_allocated:
            self.peak_allocated, self.allocated_at = self.allocated, self.clock
        return block

    def free(self, block: Block) -> None:
        block.allocated = False
        self.allocated -= block.size
        for other in (block.prev, block.next):
            if other is None or other.allocated:
                continue
            self._remove(other)
            if other is block.prev:
                block.ptr, block.prev = other.ptr, other.prev
                if other.prev:
                    other.prev.next = block
            else:
                block.next = other.next
                if other.next:
                    other.next.prev = block
            block.size += other.size
        self._insert(block)

    def reset_peaks(self) -> None:
        self.peak_allocated, self.peak_reserved = self.allocated, self.reserved
        self.allocated_at = self.reserved_at = self.clock

    def peaks(self, where: bool = False) -> dict:
        out = dict(peak_alloc=self.peak_allocated, peak_reserved=self.peak_reserved)
        return {**out, "alloc_at": self.allocated_at, "reserved_at": self.reserved_at} if where else out


def replay(
    events: list[tuple], marks: list[int] | int | None = None, place: Callable | None = None, where: bool = False
) -> list[dict]:
    """Each phase's peaks (phases begin at ``marks``; the first runs from the start); ``where``:
    with the indices of the events that set them."""
    starts = {0, *([marks] if isinstance(marks, int) else marks or [])}
    a, live, out = Allocator(place), {}, []
    for i, e in enumerate(events):
        a.clock = i
        if i in starts and i:
            out.append(a.peaks(where))
            a.reset_peaks()
        if e[0] == "A":
            if e[2]:
                live[e[1]] = a.malloc(e[2])
        elif e[1] in live:
            a.free(live.pop(e[1]))
    out.append(a.peaks(where))
    return out
