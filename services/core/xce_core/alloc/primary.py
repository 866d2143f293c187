"""The PRIMARY leaf of allocation: plan iterator × host iterator × try (Reqs 2-4).

``allocate_primary`` is the spec's composition algorithm: walk the plans most
preferred first; for each, walk the candidate hosts in host order and add each to the
allocation until the plan is complete; the first complete plan wins and no further
plan is looked at (Req 4 AC 3). The allocators differ only in their plan iterator:
``seqjob`` (one task, Req 9 AC 1) and ``parjob`` (N tasks, Req 4).

The free-slot index answers two questions before a single host is touched: can the
cluster hold the job at all right now (total free slots), and can it hold this plan
(enough hosts with enough free slots). Nothing here changes any state: the core
commits a ``Placement``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from xce_schemas import PendingCode

from xce_core.alloc.free_index import FreeSlotIndex
from xce_core.alloc.host_iter import SlotHostIter
from xce_core.alloc.plan_iter import ParPlanIter, SeqPlanIter
from xce_core.plugins import AllocPlan, AllocPlanIter, HostInfo, JobInfo


@dataclass(frozen=True, slots=True)
class Placement:
    """A successful allocation: ``(host, slots)`` shares in the order they were taken."""

    shares: tuple[tuple[HostInfo, int], ...]


@dataclass(frozen=True, slots=True)
class Unsatisfied:
    """A failed allocation (Req 4 AC 4's not-satisfied signal) with its main reason.

    ``resolvable`` tells whether freeing running jobs' slots could ever help
    (preemption, Req 6); False means no plan can fit whatever runs (the cluster is
    too small, or has no hosts).
    """

    code: PendingCode
    resolvable: bool


Outcome = Placement | Unsatisfied


class Allocator(Protocol):
    """A primary allocator: it proposes plans for a job; ``allocate_primary`` fits them."""

    name: ClassVar[str]

    def plans(self, job: JobInfo) -> AllocPlanIter:
        """A fresh plan iterator for ``job``."""
        ...


class SeqJob:
    """``seqjob_allocator``: one task, first host in host order with a free slot."""

    name: ClassVar[str] = "seqjob"

    def plans(self, job: JobInfo) -> AllocPlanIter:
        """The single plan 1 host × 1 slot."""
        return SeqPlanIter()


class ParJob:
    """``parjob_allocator``: N tasks over the plans 1×N, 2×⌈N/2⌉, …, N×1 (Req 4)."""

    name: ClassVar[str] = "parjob"

    def plans(self, job: JobInfo) -> AllocPlanIter:
        """The combinatorial plan sequence for ``job.tasks``."""
        return ParPlanIter(job.tasks)


SEQJOB = SeqJob()
PARJOB = ParJob()


def allocator_for(job: JobInfo) -> Allocator:
    """``seqjob`` for one task, ``parjob`` for more (the spec's routing by maxTasks)."""
    return SEQJOB if job.tasks == 1 else PARJOB


def _plan_fits_index(plan: AllocPlan, index: FreeSlotIndex) -> bool:
    """Whether enough hosts have enough free slots for ``plan`` (an upper bound)."""
    last = plan.last_host_slots
    if last == plan.slots_per_host:
        return index.count_at_least(last) >= plan.nhosts
    return (
        index.count_at_least(plan.slots_per_host) >= plan.nhosts - 1
        and index.count_at_least(last) >= plan.nhosts
    )


def try_plan(host_iter: SlotHostIter, plan: AllocPlan) -> Placement | None:
    """Fill ``plan`` from the hosts ``host_iter`` yields (the spec's ``try_alloc``).

    Each host with ``slots_per_host`` free takes a full share until ``nhosts - 1`` (or
    ``nhosts``) hosts have one; the first other host with room for the last share
    takes it. Returns the placement, or None when the hosts run out first.
    """
    per_host, last = plan.slots_per_host, plan.last_host_slots
    full_needed = plan.nhosts if last == per_host else plan.nhosts - 1
    tail_needed = last != per_host
    shares: list[tuple[HostInfo, int]] = []
    for host in host_iter:
        if full_needed and host.free >= per_host:
            shares.append((host, per_host))
            full_needed -= 1
        elif tail_needed:
            shares.append((host, last))
            tail_needed = False
        else:
            continue
        if not full_needed and not tail_needed:
            return Placement(tuple(shares))
    return None


#: The outcomes that need no search, made once (outcomes are frozen values).
_NO_HOSTS = Unsatisfied(PendingCode.NO_HOSTS, resolvable=False)
_TOO_LARGE = Unsatisfied(PendingCode.JOB_LARGER_THAN_CLUSTER, resolvable=False)
_SHORT = Unsatisfied(PendingCode.NOT_ENOUGH_SLOTS, resolvable=True)
_NO_PLAN = Unsatisfied(PendingCode.NOT_ENOUGH_HOSTS_FOR_SPAN, resolvable=True)


def allocate_primary(
    job: JobInfo,
    hosts: Sequence[HostInfo],
    index: FreeSlotIndex,
    capacity: int,
    check_cancel: Callable[[], None],
    allocator: Allocator | None = None,
) -> Outcome:
    """Allocate ``job``'s slots: the composition algorithm of the spec (Reqs 2-4).

    Args:
        job: the job (``tasks`` slots).
        hosts: every host by position (host order).
        index: the free-slot index of ``hosts``.
        capacity: slots of every host, whatever its status.
        check_cancel: cancellation point, called before each plan and host.
        allocator: proposes the plans; default ``allocator_for(job)``.

    Returns:
        ``Placement`` when a plan fits, else ``Unsatisfied`` with the reason:
        NO_HOSTS, JOB_LARGER_THAN_CLUSTER (both unresolvable), NOT_ENOUGH_SLOTS (fewer
        free slots than tasks) or NOT_ENOUGH_HOSTS_FOR_SPAN (enough slots, no plan fits).

    Raises:
        SessionCancelled: the session was cancelled; nothing was changed.
    """
    tasks = job.tasks
    if index.total_free < tasks:  # the common case on a busy cluster: decided in O(1)
        if not hosts:
            return _NO_HOSTS
        return _TOO_LARGE if tasks > capacity else _SHORT
    plans = (allocator or allocator_for(job)).plans(job)
    try:
        while (plan := plans.next()) is not None:
            check_cancel()
            if not _plan_fits_index(plan, index):
                continue
            host_iter = SlotHostIter(plan, hosts, index, check_cancel)
            try:
                placement = try_plan(host_iter, plan)
            finally:
                host_iter.close()
            if placement is not None:
                return placement
    finally:
        plans.close()
    return _NO_PLAN
