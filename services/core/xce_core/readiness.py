"""Queue and job readiness: what holds a pending job before any host is looked at.

A queue dispatches while it is active and inside one of its run windows (virtual
time, UTC); a job waits while its queue's running jobs, or its user's in that queue,
hold as many slots as the queue allows (LSF ``QJOB_LIMIT``, ``UJOB_LIMIT``). Each
blocked job gets its own pending reason; none of these is a resource shortage, so
none fills the unsatisfiable-request cache or triggers preemption.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from xce_schemas import PendingCode, in_window

from xce_core.alloc.outcome import Unsatisfied
from xce_core.state import ClusterState, Job, Queue


def queue_hold(queue: Queue, now_s: int) -> Unsatisfied | None:
    """Why ``queue`` dispatches nothing at ``now_s`` (epoch seconds), or None."""
    if not queue.active:
        return Unsatisfied(PendingCode.QUEUE_INACTIVE, resolvable=False)
    if queue.windows and not any(in_window(window, now_s) for window in queue.windows):
        windows = " ".join(queue.run_windows)
        return Unsatisfied(PendingCode.QUEUE_WINDOW, resolvable=False, detail=windows)
    return None


def limit_hold(state: ClusterState, job: Job, queue: Queue) -> Unsatisfied | None:
    """Why ``job``'s ``tasks`` slots would pass a slot limit of ``queue``, or None.

    A limit counts the slots running jobs hold and those promised to the queue's
    jobs whose preemptions are in flight (they start once their victims suspend):
    several jobs preempting in one round cannot together pass the limit.
    """
    slots = job.tasks
    limit = queue.max_running
    if limit is not None:
        used = state.queue_slots.get(queue.name, 0)
        used += _promised(state, job, lambda other: other.queue == queue.name)
        if used + slots > limit:
            return _over(PendingCode.QUEUE_SLOT_LIMIT, slots, limit, "slots")
    limit = queue.user_slot_limit
    if limit is not None:
        used = state.user_slots.get((queue.name, job.user), 0)
        used += _promised(
            state, job, lambda other: other.queue == queue.name and other.user == job.user
        )
        if used + slots > limit:
            return _over(PendingCode.QUEUE_USER_SLOT_LIMIT, slots, limit, "slots per user")
    return None


def exceeds_limits(job: Job, queue: Queue) -> bool:
    """Whether ``job`` asks for more slots than a slot limit of ``queue`` allows at
    all: it can never start in that queue."""
    limits = (queue.max_running, queue.user_slot_limit)
    return any(limit is not None and job.tasks > limit for limit in limits)


def _promised(state: ClusterState, job: Job, same: Callable[[Job], bool]) -> int:
    """Slots of the other jobs that ``same`` picks whose preemptions are in flight."""
    if not state.preemptions:
        return 0
    jobs = state.jobs
    return sum(
        jobs[jobid].tasks
        for jobid in state.preemptions
        if jobid != job.jobid and jobid in jobs and same(jobs[jobid])
    )


@lru_cache(maxsize=4096)
def _over(code: PendingCode, slots: int, limit: int, unit: str) -> Unsatisfied:
    """The (shared, immutable) outcome of a job of ``slots`` held by ``limit``."""
    if slots > limit:
        detail = f"the job's {slots} slots exceed the limit of {limit} {unit}"
    else:
        detail = f"limit {limit} {unit}"
    return Unsatisfied(code, resolvable=False, detail=detail)
