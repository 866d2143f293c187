"""What an allocation attempt gives: a ``Placement`` to hold, or ``Unsatisfied``
with its reason (STYLE 4: outcomes are values with a code).

``Unsatisfied.resolvable`` is Kubernetes' split between *unschedulable* (freeing what
running jobs hold could help: preemption may, Req 6) and *unschedulable and
unresolvable* (no plan can ever fit: skip preemption, Req 7's cache).
"""

from __future__ import annotations

from dataclasses import dataclass

from xce_schemas import PendingCode

from xce_core.plugins import HostInfo

#: A reservation to make: (resource, amount, duration s or -1).
Reservation = tuple[str, float, int]


@dataclass(frozen=True, slots=True)
class Placement:
    """A successful allocation of one primary.

    Attributes:
        shares: ``(host, slots, reservations on that host)`` in the order taken.
        shared: reservations from cluster-wide pools.
    """

    shares: tuple[tuple[HostInfo, int, tuple[Reservation, ...]], ...]
    shared: tuple[Reservation, ...] = ()


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
