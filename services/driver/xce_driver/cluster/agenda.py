"""The agenda: what is due when, in a deterministic order (SimPy's event queue).

An ``Agenda`` is a heap of entries ``(at, priority, seq, action)``: ``at`` the time,
ns; ``priority`` orders the entries of one instant (lower first); ``seq`` comes
from a counter, so two entries never compare their actions and ties come out in
the order they were scheduled, in every process and under any ``PYTHONHASHSEED``.
Stepping an entry moves ``now`` to its time and calls its action, which may
schedule more. Nothing here knows what an entry means, nor how fast time goes:
the simulation jumps from one entry to the next (``run``), the live emulator waits
for the wall clock to get there (``xce_driver.cluster.realtime``).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable

#: What an entry does when it is due: a call without arguments (bind them with
#: ``functools.partial``).
Action = Callable[[], None]


class EmptyAgenda(IndexError):
    """``step`` found nothing left to do (SimPy's ``EmptySchedule``)."""


class Agenda:
    """A time-ordered queue of actions, with explicit tie-breaks.

    Args:
        now: the time it starts at, ns.

    Attributes:
        now: the time of the entry stepped last (or the ``until`` of the last
            ``run``), ns; it never goes back.

    Example:
        >>> agenda, seen = Agenda(), []
        >>> _ = agenda.schedule(5, lambda: seen.append("b"), priority=1)
        >>> _ = agenda.schedule(5, lambda: seen.append("a"), priority=0)
        >>> agenda.run()
        >>> seen, agenda.now
        (['a', 'b'], 5)
    """

    __slots__ = ("_cancelled", "_heap", "_seq", "now")

    def __init__(self, now: int = 0) -> None:
        self.now = now
        self._heap: list[tuple[int, int, int, Action]] = []
        self._seq = itertools.count()
        self._cancelled: set[int] = set()  # ids of entries still in the heap, called off

    def __len__(self) -> int:
        """How many entries are still to come (cancelled ones left out)."""
        return len(self._heap) - len(self._cancelled)

    def schedule(self, at: int, action: Action, priority: int = 0) -> int:
        """Put ``action`` in the agenda at time ``at`` (ns), after every entry of the
        same time and a lower or equal ``priority`` already in it.

        Returns:
            The entry's id (its ``seq``): what ``cancel`` takes.

        Raises:
            ValueError: ``at`` is before ``now`` (the past cannot be scheduled).
        """
        if at < self.now:
            raise ValueError(f"cannot schedule at {at} ns, before now ({self.now} ns)")
        seq = next(self._seq)
        heapq.heappush(self._heap, (at, priority, seq, action))
        return seq

    def cancel(self, entry: int) -> None:
        """Call off an entry still to come (its id from ``schedule``): it is never
        stepped. The caller keeps the id of an entry only while it is to come; an
        entry already stepped or cancelled must not be cancelled (it would count
        as one less to come)."""
        self._cancelled.add(entry)

    def peek(self) -> float:
        """The time of the next entry, ns; ``math.inf`` when nothing is left."""
        heap = self._heap
        while heap:
            at, _, seq, _ = heap[0]
            if seq not in self._cancelled:
                return at
            heapq.heappop(heap)  # a cancelled entry is dropped when it comes up
            self._cancelled.discard(seq)
        return math.inf

    def step(self) -> None:
        """Step the next entry: ``now`` becomes its time, then its action runs.

        Raises:
            EmptyAgenda: nothing is left to do.
        """
        if self.peek() == math.inf:
            raise EmptyAgenda("the agenda is empty")
        at, _, _, action = heapq.heappop(self._heap)
        self.now = at
        action()

    def run(self, until: int | None = None) -> None:
        """Step entries in order, SimPy's ``Environment.run``.

        Args:
            until: None: until nothing is left (``now`` stays at the last entry's
                time). A time, ns: every entry due before it (not at it), then
                ``now`` becomes ``until``; an entry an action schedules before
                ``until`` is stepped too.

        Raises:
            ValueError: ``until`` is before ``now``.
        """
        if until is not None and until < self.now:
            raise ValueError(f"until ({until} ns) is before now ({self.now} ns)")
        # The loop of ``step``, written out: it runs once per entry of a whole run.
        heap, cancelled, pop = self._heap, self._cancelled, heapq.heappop
        bound = math.inf if until is None else until
        while heap and heap[0][0] < bound:
            at, _, seq, action = pop(heap)
            if cancelled and seq in cancelled:
                cancelled.discard(seq)
                continue
            self.now = at
            action()
        if until is not None:
            self.now = until
