"""The free-slot index against a plain list of free slots per host: counts, totals
and the hosts with at least k free, in host order, after any series of updates."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from xce_core.alloc.free_index import FreeSlotIndex

#: (host position, its new free slots) updates over a small cluster, so that hosts
#: fill up, empty and share free counts often.
updates = st.lists(st.tuples(st.integers(0, 11), st.integers(0, 6)), max_size=80)


@settings(max_examples=300, deadline=None)
@given(updates)
def test_index_answers_as_a_scan_of_every_host_would(changes: list[tuple[int, int]]) -> None:
    """Every query equals the brute-force answer over the hosts' free slots, for
    each slot count asked (1, counts below and above the fewest free held)."""
    index = FreeSlotIndex()
    free = [0] * 12
    for position, slots in changes:
        index.update(position, slots)
        free[position] = slots
        assert index.total_free == sum(free)
        for want in range(1, 8):
            expected = [p for p, f in enumerate(free) if f >= want]
            assert index.count_at_least(want) == len(expected)
            assert list(index.positions_at_least(want)) == expected
    assert [index.free_of(p) for p in range(12)] == free


@settings(max_examples=200, deadline=None)
@given(updates, updates)
def test_index_asked_late_answers_as_a_scan(
    first: list[tuple[int, int]], then: list[tuple[int, int]]
) -> None:
    """Asked only after a series of updates (the list of every held host is made
    then, from the buckets), and again after more, it still answers as a scan."""
    index = FreeSlotIndex()
    free = [0] * 12
    for changes in (first, then):
        for position, slots in changes:
            index.update(position, slots)
            free[position] = slots
        for want in range(1, 8):
            expected = [p for p, f in enumerate(free) if f >= want]
            assert index.count_at_least(want) == len(expected)
            assert list(index.positions_at_least(want)) == expected
