"""The CUDA caching allocator replayed (tools/alloc_sim.py): its rules, one by one, on sequences
whose outcome can be worked by hand from c10/cuda/CUDACachingAllocator.cpp."""

import pytest
from tools import alloc_sim as sim

MiB = 1 << 20


def test_rounding_and_segment_sizes():
    assert sim.round_size(1) == 512 and sim.round_size(513) == 1024
    assert sim.allocation_size(MiB) == 2 * MiB  # small pool
    assert sim.allocation_size(MiB + 512) == 20 * MiB  # 1-10 MiB: a 20 MiB segment
    assert sim.allocation_size(10 * MiB) == 10 * MiB
    assert sim.allocation_size(11 * MiB + 1) == 12 * MiB  # rounded up to 2 MiB


def test_small_requests_share_a_2_mib_segment():
    a = sim.Allocator()
    a.malloc(1000)
    a.malloc(1000)
    assert (a.reserved, a.allocated) == (2 * MiB, 2 * 1024)


def test_mid_requests_split_a_20_mib_segment():
    a = sim.Allocator()
    a.malloc(3 * MiB)
    a.malloc(5 * MiB)  # from the 17 MiB left of the first segment
    assert (a.reserved, a.allocated) == (20 * MiB, 8 * MiB)


def test_best_fit_takes_the_smallest_block_and_keeps_a_remainder_of_1_mib():
    a = sim.Allocator()
    big, small = a.malloc(100 * MiB), a.malloc(50 * MiB)
    a.free(big)
    a.free(small)
    b = a.malloc(49 * MiB + MiB // 2)  # the 50 MiB block; 0.5 MiB left is not split off
    assert b.size == 50 * MiB and a.allocated == 50 * MiB
    assert a.reserved == 150 * MiB


def test_freed_neighbours_merge():
    a = sim.Allocator()
    a.free(a.malloc(100 * MiB))
    x, y = a.malloc(40 * MiB), a.malloc(40 * MiB)  # one segment, split three ways
    a.free(x)
    a.free(y)
    a.malloc(90 * MiB)  # the merged 100 MiB block serves it
    assert a.reserved == 100 * MiB


def test_a_split_block_that_no_longer_fits_reserves_a_new_segment():
    a = sim.Allocator()
    a.free(a.malloc(100 * MiB))
    a.malloc(60 * MiB)  # splits the cached block: 40 MiB stay cached
    a.malloc(50 * MiB)  # fits in no cached block
    assert (a.reserved, a.peak_allocated) == (150 * MiB, 110 * MiB)


def test_replay_gives_each_phase_its_peaks():
    events = [("A", 1, 100 * MiB), ("F", 1), ("A", 2, 60 * MiB), ("A", 3, 50 * MiB), ("F", 2), ("F", 3)]
    first, second = sim.replay(events, [2])
    assert first == {"peak_alloc": 100 * MiB, "peak_reserved": 100 * MiB}
    assert second == {"peak_alloc": 110 * MiB, "peak_reserved": 150 * MiB}


@pytest.mark.parametrize(("place", "reserved"), [(sim.upward, 5), (sim.downward, 3)])
def test_where_segments_lie_decides_what_best_fit_splits(place, reserved):
    """Equal sizes go to the lowest address, so the same requests split one cached block or the
    other, and whether a later request finds a whole one depends on where the driver put the
    segments: something a plan cannot know (test_alloc_trace.py shows it in eager attention)."""
    S = 64 * MiB
    a = sim.Allocator(place())
    x, y = a.malloc(2 * S), a.malloc(S)  # segments A (2S) and B (S)
    a.free(x)
    u = a.malloc(S)  # A's lower half; its upper half stays cached
    a.free(y)  # two free blocks of S: A's upper half and B
    a.malloc(S // 2)  # splits the one at the lower address
    a.free(u)  # A is whole again only if its upper half was not split
    a.malloc(2 * S)
    assert a.reserved == reserved * S
