"""What an allocation attempt gives: a ``Placement`` to hold, or ``Unsatisfied``
with its reason (STYLE 4: outcomes are values with a code); and what the planner
gives a job that does not fit now: a ``Reservation`` of room from a later start.

``Unsatisfied.resolvable`` is Kubernetes' split between *unschedulable* (freeing what
running jobs hold could help: preemption may, Req 6) and *unschedulable and
unresolvable* (no plan can ever fit: skip preemption, Req 7's cache).
"""

from __future__ import annotations

from dataclasses import dataclass

from xce_schemas import PendingCode

from xce_core.plugins import HostInfo

#: An rusage amount to reserve: (resource, amount, duration s or -1).
RusageHold = tuple[str, float, int]


@dataclass(frozen=True, slots=True)
class Placement:
    """A successful allocation of one primary.

    Attributes:
        shares: ``(host, slots, reservations on that host)`` in the order taken.
        shared: reservations from cluster-wide pools.
    """

    shares: tuple[tuple[HostInfo, int, tuple[RusageHold, ...]], ...]
    shared: tuple[RusageHold, ...] = ()


@dataclass(frozen=True, slots=True)
class Unsatisfied:
    """A failed allocation (Req 4 AC 4's not-satisfied signal) with its main reason.

    ``resolvable`` tells whether freeing running jobs' resources could ever help
    (preemption, Req 6); False means no plan can fit whatever runs. ``resources``
    names the resources found short; ``detail`` says more in words.
    """

    code: PendingCode
    resolvable: bool
    resources: tuple[str, ...] = ()
    detail: str = ""


Outcome = Placement | Unsatisfied


#: No end: a run limit not known.
FOREVER = 1 << 127


@dataclass(frozen=True, slots=True)
class Reservation:
    """Room promised to one job from a future start (core state; DESIGN "Reservations
    are allocator state").

    Attributes:
        jobid: the job the room is for.
        start_ts: when the job is expected to start, ns.
        end_ts: when it is expected to end (start + run limit), ns; None: no run
            limit, it holds the room from its start on.
        hosts: ``(host, slots)`` it is expected to start on, in the order taken
            (none for a reservation on counts).
        running: how many running jobs' expected ends the estimate rests on.
        count: slots held on no host in particular: a reservation on counts
            (``backfill.profile``), whose hosts are chosen when the job starts.
    """

    jobid: int
    start_ts: int
    end_ts: int | None
    hosts: tuple[tuple[str, int], ...]
    running: int = 0
    count: int = 0

    @property
    def until(self) -> int:
        """``end_ts``, or ``FOREVER`` when the job has no run limit."""
        return FOREVER if self.end_ts is None else self.end_ts

    def overlaps(self, start: int, end: int) -> bool:
        """Whether this reservation holds its room at some time in ``[start, end)``."""
        return self.start_ts < end and self.until > start

    @property
    def slots(self) -> int:
        """Slots it holds in all."""
        return sum(slots for _, slots in self.hosts) + self.count
