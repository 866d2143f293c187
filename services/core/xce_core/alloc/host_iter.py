"""Lazy host-candidate iterator for one plan (``xce_host_iter_t``, Req 3).

It yields, in host order, the hosts that pass the plan's host filter: an ok status
and at least the plan's smallest per-host demand of free slots (one for a packed
plan). Candidates come from
the free-slot index, so hosts that cannot take the plan are never looked at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from xce_core.alloc.free_index import FreeSlotIndex
from xce_core.plugins import AllocPlan, HostInfo, HostIter


class SlotHostIter:
    """Hosts with room for ``plan``'s smallest share, lazily, in host order.

    Args:
        plan: the plan the hosts are for.
        hosts: every host, indexed by position (host order).
        index: the free-slot index of those hosts (must not change while iterating).
        check_cancel: a cancellation point, called before each host is returned.

    Attributes:
        evaluated: how many hosts ``next()`` has looked at so far.
    """

    __slots__ = ("_check_cancel", "_hosts", "_positions", "evaluated")

    def __init__(
        self,
        plan: AllocPlan,
        hosts: Sequence[HostInfo],
        index: FreeSlotIndex,
        check_cancel: Callable[[], None],
    ) -> None:
        self._hosts = hosts
        self._positions: Iterator[int] | None = index.positions_at_least(plan.min_share())
        self._check_cancel = check_cancel
        self.evaluated = 0

    def next(self) -> HostInfo | None:
        """The next candidate host, or None when there are no more."""
        if self._positions is None:
            return None
        self._check_cancel()
        position = next(self._positions, None)
        if position is None:
            self._positions = None
            return None
        self.evaluated += 1
        return self._hosts[position]

    def close(self) -> None:
        """Drop the candidate stream; ``next()`` returns None from now on."""
        self._positions = None

    def __iter__(self) -> Iterator[HostInfo]:
        # ``next()`` written out (this walks every host a job takes), step for step:
        # the same hosts, cancellation points and count; ``close()`` ends it.
        positions, hosts, check_cancel = self._positions, self._hosts, self._check_cancel
        if positions is None:
            return
        while self._positions is not None:
            check_cancel()
            position = next(positions, None)
            if position is None:
                self._positions = None
                return
            self.evaluated += 1
            yield hosts[position]


_: type[HostIter] = SlotHostIter
