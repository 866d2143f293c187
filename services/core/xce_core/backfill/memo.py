"""What one session's planning leaves the next to reuse (caches, not state): plans
made by counting hosts, checks of kept reservations, the numbering of reservation
lists (*chains*) and of whom they are for (*names*), and what running jobs give back.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import count
from typing import TypeVar

from xce_schemas import JobAlloc

from xce_core.alloc.outcome import Reservation
from xce_core.alloc.planner import Frees
from xce_core.state import ClusterState

#: A job's plan in a session: its reservation (None: no instant in view), the room
#: of it free now to hold ``(host, slots)``, when it was planned (ns), the instant
#: until which a later session may reuse it (ns, exclusive), and the instant before
#: which a start was looked for (ns; ``FOREVER``: any).
Plan = tuple[Reservation | None, tuple[tuple[str, int], ...], int, int, int]

#: Plans made by counting in a session, for the next one to reuse, by (jobid,
#: tasks, run limit ns, plan version, hosts version, chain of the earlier
#: reservations).
Plans = dict[tuple[object, ...], Plan]

#: What a session found of a job's kept reservation (its reservation of the round
#: before) under a plan's key: the reservation (the same object: ``previous``
#: hands the last session's on), whether it still fits bar its start having come
#: (``ReservationBook._still_fits``), and its room free now (``_room_now``; None:
#: not looked at). Both rest only on what the key holds, as the plan does.
Check = tuple[Reservation, bool, tuple[tuple[str, int], ...] | None]

#: A session's reservations as made in turn, for the next session to name the same
#: list by the same number (a *chain*: 0 is the empty list): ``(chain of the list
#: before, the reservation added) → chain``. A plan's key holds the chain of the
#: reservations before it, so each reservation is hashed once, when it is added,
#: and not once per later plan's key; a match is exact (compared by value).
Chains = dict[tuple[int, Reservation], int]

#: The same for whom the reservations are, alone (*names*): ``(names before, jobid,
#: the priority its room yields to or None) → names``. A job parked for reserved
#: room (``ParkingPicker``) pends for the reservations of these jobs.
Names = dict[tuple[int, int, int | None], int]


_Link = TypeVar("_Link", tuple[int, Reservation], tuple[int, int, int | None])


@dataclass(slots=True)
class PlanMemo:
    """What one session's planning leaves the next to reuse, owned by the core.

    Caches, not state: a snapshot leaves them out, and a session without them plans
    afresh, to the same reservations.

    Attributes:
        plans: the last session's plans made by counting (``ReservationBook.plans_made``).
        checks: the last session's checks of kept reservations, by the same keys
            (``ReservationBook.checks_made``).
        chains: the last session's chains (``ReservationBook.chains_made``).
        names: the last session's names (``ReservationBook.names_made``).
        chain_ids: the numbers of new chains and names (never one twice).
        frees: for running jobs, the hosts each gives back on ending that take jobs
            (one-slot hosts, ``alloc.planner._Counted``): ``jobid → (allocation,
            (host names, host positions))``, valid while the allocation is the
            job's and the hosts keep their shape (``hosts_version``).
        hosts_version: ``ClusterState.hosts_version`` when ``frees`` was begun.
    """

    plans: Plans = field(default_factory=dict)
    checks: dict[tuple[object, ...], Check] = field(default_factory=dict)
    chains: Chains = field(default_factory=dict)
    names: Names = field(default_factory=dict)
    chain_ids: Iterator[int] = field(default_factory=lambda: count(1))
    frees: Frees = field(default_factory=dict)
    hosts_version: int = -1
    #: For running jobs, the slots each gives back on ending on hosts that take
    #: jobs: ``jobid → (allocation, slots)``, valid as ``frees`` is.
    gives_back: dict[int, tuple[JobAlloc, int]] = field(default_factory=dict)
    #: The slots of the hosts that take jobs (``ReservationBook.could_run``), with the
    #: ``ClusterState.hosts_version`` they were counted at.
    usable: tuple[int, int] = (-1, 0)

    def number(self, last: dict[_Link, int], made: dict[_Link, int], link: _Link) -> int:
        """The number of a chain (or names) extended by ``link``: the last session's
        for an equal link, else a new one; noted in this session's ``made``."""
        known = last.get(link)
        number = made[link] = next(self.chain_ids) if known is None else known
        return number

    def begin(self, state: ClusterState) -> None:
        """A session begins on ``state``: forget what its hosts' shape no longer
        supports, and the jobs that no longer run (amortised: when they outnumber
        the running ones)."""
        frees = self.frees
        if self.hosts_version != state.hosts_version:
            frees.clear()
            self.gives_back.clear()
            self.hosts_version = state.hosts_version
        elif len(frees) > 2 * len(state.running) + 1024:
            running = state.running
            self.frees = {jobid: pair for jobid, pair in frees.items() if jobid in running}
        if len(self.gives_back) > 2 * len(state.running) + 1024:
            running = state.running
            self.gives_back = {j: pair for j, pair in self.gives_back.items() if j in running}
