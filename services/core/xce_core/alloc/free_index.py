"""An index of hosts by free slots, so allocation never scans every host.

Hosts that take jobs (status ok) and have at least one free slot are kept as bits
of one integer per free-slot count (bit ``p`` set: the host at position ``p`` has
that many free), so host order is bit order. From it the allocators get, in
O(distinct free counts):

* how many hosts have at least ``k`` free slots (to skip a plan that cannot fit
  without looking at a single host), and
* the total of free slots (to fail a job that needs more at once),

and, lazily and in host order, the hosts with at least ``k`` free slots.

Why bits, not sorted lists of positions: every host a job takes or frees updates
the index (twice per host and job), and flipping a bit in a Python integer costs a
fraction of inserting into or removing from a sorted list, while the hosts with at
least ``k`` free are the OR of a few integers, read in order without a merge.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

_WORD = (1 << 64) - 1


class FreeSlotIndex:
    """Host positions grouped by their free-slot count, as bit masks.

    Host positions are the hosts' places in host order (0, 1, ...). Only hosts with
    ``free >= 1`` are held. The caller keeps it in step with every change of a
    host's free slots through ``update``.

    Besides the mask of each count, ``_all`` holds every held position: a request
    that any held host can take (one slot, or no more than the fewest free slots
    held) is answered from it and ``_held`` in O(1). That is the common case: most
    jobs ask for one slot, and on a cluster of one-slot hosts every held host has
    one free slot.
    """

    __slots__ = ("_all", "_free", "_held", "_masks", "_preferred", "_total")

    #: Slots that only cache what ``_free`` holds, as ``CACHE`` marks a state
    #: dataclass's fields: not state of their own (their dicts' order is the order
    #: free counts were first seen, which a snapshot load does not repeat).
    CACHE_SLOTS: ClassVar[frozenset[str]] = frozenset({"_all", "_held", "_masks"})

    def __init__(self) -> None:
        self._masks: dict[int, int] = {}  # free slots → bit mask of positions (never 0)
        self._all = 0  # bit mask of every position with free >= 1
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
        return max(self._masks) if self._masks else 0

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
        bit = 1 << position
        masks = self._masks
        if old:
            rest = masks[old] ^ bit
            if rest:
                masks[old] = rest
            else:
                del masks[old]
            if not free:
                self._held -= 1
                self._all ^= bit
        if free > 0:
            masks[free] = masks.get(free, 0) | bit
            if not old:
                self._held += 1
                self._all |= bit

    def _all_qualify(self, slots: int) -> bool:
        """Whether every indexed host has at least ``slots`` free."""
        return slots <= 1 or not self._masks or slots <= min(self._masks)

    def count_at_least(self, slots: int) -> int:
        """How many hosts have at least ``slots`` free (``slots`` ≥ 1)."""
        if self._all_qualify(slots):
            return self._held
        return sum(bits.bit_count() for free, bits in self._masks.items() if free >= slots)

    def positions_at_least(self, slots: int) -> Iterator[int]:
        """Lazily, in host order, the positions of hosts with at least ``slots`` free.

        The index must not change while the iterator is in use.
        """
        if self._preferred:
            return self._preferred_first(slots)
        if self._all_qualify(slots):
            return _positions(self._all)
        mask = 0
        for free, bits in self._masks.items():
            if free >= slots:
                mask |= bits
        return _positions(mask)

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


def _positions(mask: int) -> Iterator[int]:
    """The set bits of ``mask``, lowest first: a run of clear bits is skipped in one
    shift, then each 64-bit word is read bit by bit."""
    base = 0
    while mask:
        skip = (mask & -mask).bit_length() - 1
        mask >>= skip
        base += skip
        word = mask & _WORD
        while word:
            low = word & -word
            yield base + low.bit_length() - 1
            word ^= low
        mask >>= 64
        base += 64
