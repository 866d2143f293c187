"""An index of hosts by free slots, so allocation never scans every host.

Hosts that take jobs (status ok) and have at least one free slot are kept in one
sorted bucket per free-slot count, ordered by host order. From it the allocators get,
in O(distinct free counts):

* how many hosts have at least ``k`` free slots (to skip a plan that cannot fit
  without looking at a single host), and
* the total of free slots (to fail a job that needs more at once),

and, lazily and in host order, the hosts with at least ``k`` free slots.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import ClassVar

from sortedcontainers import SortedDict, SortedList


class FreeSlotIndex:
    """Host positions bucketed by their free-slot count.

    Host positions are the hosts' places in host order (0, 1, ...). Only hosts with
    ``free >= 1`` are held. The caller keeps it in step with every change of a
    host's free slots through ``update``.

    Besides the buckets, every held position is also in one sorted list, ``_any``: a
    request that any held host can take (one slot, or no more than the fewest free
    slots held) is answered from it in O(1) (the count) and without merging buckets
    (the hosts in order). That is the common case: most jobs ask for one slot. The
    list is a cache made the first time hosts of two free counts are held: while
    every held host has the same count (a cluster of one-slot hosts, always) the one
    bucket is that list, and each update moves a position in one sorted list, not two.
    """

    __slots__ = ("_any", "_buckets", "_free", "_held", "_preferred", "_total")

    #: Slots that only cache what the others hold, as ``CACHE`` marks a state
    #: dataclass's fields: not state, so a copy may have them made or not.
    CACHE_SLOTS: ClassVar[frozenset[str]] = frozenset({"_any"})

    def __init__(self) -> None:
        self._buckets: SortedDict = SortedDict()  # free slots → SortedList of positions
        self._any: SortedList | None = None  # every position with free >= 1, once made
        self._free: list[int] = []  # by position; dense, since positions are 0, 1, ...
        self._total = 0
        self._held = 0  # positions with free >= 1
        self._preferred: tuple[int, ...] = ()

    def prefer(self, positions: tuple[int, ...]) -> None:
        """Offer the hosts at ``positions`` (sorted) first, then the others, each in
        host order, until ``prefer(())`` (a backfilled job takes the room reserved
        for a later start before unreserved room)."""
        self._preferred = positions

    @property
    def total_free(self) -> int:
        """Free slots summed over every indexed host (slots)."""
        return self._total

    @property
    def most_free(self) -> int:
        """The most free slots any indexed host has (0 when none has any)."""
        return self._buckets.peekitem(-1)[0] if self._buckets else 0

    def free_of(self, position: int) -> int:
        """The indexed free slots of the host at ``position`` (0 when not indexed)."""
        return self._free[position] if position < len(self._free) else 0

    def update(self, position: int, free: int) -> None:
        """Record that the host at ``position`` now has ``free`` usable slots (≥ 0)."""
        frees = self._free
        try:
            old = frees[position]
        except IndexError:
            frees.extend([0] * (position + 1 - len(frees)))
            old = 0
        if old == free:
            return
        frees[position] = free
        self._total += free - old
        buckets = self._buckets
        every = self._any
        if old:
            bucket = buckets[old]
            bucket.remove(position)
            if not bucket:
                del buckets[old]
            if not free:
                self._held -= 1
                if every is not None:
                    every.remove(position)
        if free > 0:
            bucket = buckets.get(free)
            if bucket is None:
                bucket = buckets[free] = SortedList()
            bucket.add(position)
            if not old:
                self._held += 1
                if every is not None:
                    every.add(position)

    def _all_qualify(self, slots: int) -> bool:
        """Whether every indexed host has at least ``slots`` free."""
        return slots <= 1 or not self._buckets or slots <= self._buckets.peekitem(0)[0]

    def count_at_least(self, slots: int) -> int:
        """How many hosts have at least ``slots`` free (``slots`` ≥ 1)."""
        if self._all_qualify(slots):
            return self._held
        buckets = self._buckets
        return sum(len(buckets[free]) for free in buckets.irange(minimum=slots))

    def positions_at_least(self, slots: int) -> Iterator[int]:
        """Lazily, in host order, the positions of hosts with at least ``slots`` free.

        The index must not change while the iterator is in use.
        """
        if self._preferred:
            return self._preferred_first(slots)
        buckets = self._buckets
        if len(buckets) == 1 and slots <= buckets.peekitem(0)[0]:
            return iter(buckets.peekitem(0)[1])
        if self._all_qualify(slots):
            if self._any is None:
                self._any = SortedList(p for bucket in buckets.values() for p in bucket)
            return iter(self._any)
        merged: list[Iterator[int]] = [
            iter(buckets[free]) for free in buckets.irange(minimum=slots)
        ]
        if len(merged) == 1:
            return merged[0]
        return heapq.merge(*merged)

    def _preferred_first(self, slots: int) -> Iterator[int]:
        preferred = self._preferred
        free = self._free
        for position in preferred:
            if position < len(free) and free[position] >= slots:
                yield position
        chosen = set(preferred)
        saved, self._preferred = preferred, ()
        try:
            rest = self.positions_at_least(slots)
        finally:
            self._preferred = saved
        for position in rest:
            if position not in chosen:
                yield position
