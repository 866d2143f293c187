"""Free slots over time: the profile reservations on counts are planned on.

Where a job may take any free slots (a plain request: no select, rusage or span),
the hosts it will get do not matter while it waits: only how many slots are free
at each instant does. Its reservation is then a count over a window, ``[start,
start + run limit)``, on a profile of free room over time (Flux's planner, in
counts; Mu'alem and Feitelson's conservative backfilling, IEEE TPDS 12(6), 2001);
which hosts it gets is decided when it starts. Every running job started before
every reservation, so binding at start always succeeds.

``FreeProfile`` is that profile: a step function of free slots (slots, ns), made
from the slots free now and the instants running jobs are expected to give theirs
back, less every reservation's window and every job started since.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from xce_core.alloc.outcome import FOREVER


class FreeProfile:
    """Free slots over time from ``now`` on (slots, ns).

    ``times[i]`` is an instant (ns) and ``free[i]`` the slots free from it until
    ``times[i + 1]`` (the last step lasts for ever). ``times[0]`` is now. The
    steps are few (the running jobs and reservations: hundreds), so plain lists
    and ``bisect`` beat a tree here.

    Args:
        now: the session's time, ns.
        free_now: the slots free now that jobs may take (slots).
        gives_back: ``(expected end ns, slots)`` of each running job: the slots it
            gives back then (an end at or before now counts as now; ``FOREVER``:
            never).
    """

    __slots__ = ("free", "now", "times")

    def __init__(self, now: int, free_now: int, gives_back: Iterable[tuple[int, int]]) -> None:
        self.now = now
        steps: dict[int, int] = {now: free_now}
        for end, slots in gives_back:
            if end < FOREVER and slots:
                at = end if end > now else now
                steps[at] = steps.get(at, 0) + slots
        self.times = sorted(steps)
        free = 0
        self.free = []
        for at in self.times:
            free += steps[at]
            self.free.append(free)

    def _step(self, at: int) -> int:
        """The index of the step that begins at ``at`` (ns, at or after now), made
        when there is none (it then holds what was free just before)."""
        times = self.times
        index = bisect.bisect_left(times, at)
        if index == len(times) or times[index] != at:
            times.insert(index, at)
            self.free.insert(index, self.free[index - 1])
        return index

    def take(self, start: int, end: int, slots: int) -> None:
        """Hold ``slots`` over ``[start, end)`` (ns; ``end`` ``FOREVER``: from
        ``start`` on): a reservation's window, or a job started now until its
        expected end. A start before now counts from now."""
        if slots > 0:
            self._change(start, end, -slots)

    def give(self, start: int, end: int, slots: int) -> None:
        """Give back ``slots`` held over ``[start, end)`` with ``take`` (a standing
        reservation taken out to be planned again)."""
        if slots > 0:
            self._change(start, end, slots)

    def _change(self, start: int, end: int, delta: int) -> None:
        start = max(start, self.now)
        if end <= start:
            return
        first = self._step(start)
        last = len(self.times) if end >= FOREVER else self._step(end)
        free = self.free
        for index in range(first, last):
            free[index] += delta

    def least(self, start: int, end: int) -> int:
        """The fewest slots free at any instant of ``[start, end)`` (ns)."""
        times, free = self.times, self.free
        index = max(bisect.bisect_right(times, max(start, self.now)) - 1, 0)
        least = free[index]
        index += 1
        while index < len(times) and times[index] < end:
            if free[index] < least:
                least = free[index]
            index += 1
        return least

    def earliest(self, slots: int, length: int, before: int = FOREVER) -> int | None:
        """The earliest instant from now, before ``before`` (ns), from which
        ``slots`` are free for ``length`` ns (``FOREVER``: for ever); None when
        there is none (more than the cluster will ever have free then).

        The instants tried are now and each step's start, in order; a window that
        meets too few slots at a step is not tried again before it."""
        times, free = self.times, self.free
        steps = len(times)
        index = 0
        while index < steps:
            if free[index] < slots:
                index += 1
                continue
            start = times[index]
            if start >= before:
                return None
            end = start + length if length < FOREVER else FOREVER
            after = index + 1
            while after < steps and times[after] < end and free[after] >= slots:
                after += 1
            if after == steps or times[after] >= end:
                return start
            index = after + 1
        return None
