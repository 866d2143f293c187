"""Queue and job readiness: what holds a pending job before any host is looked at.

A queue dispatches while it is active and inside one of its run windows (virtual
time, UTC); a job waits while its queue's running jobs, or its user's in that queue,
hold as many slots as the queue allows (LSF ``QJOB_LIMIT``, ``UJOB_LIMIT``). Each
blocked job gets its own pending reason; none of these is a resource shortage, so
none fills the unsatisfiable-request cache or triggers preemption.
"""

from __future__ import annotations

from xce_schemas import PendingCode, in_window

from xce_core.alloc.primary import Unsatisfied
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
    """Why ``job``'s ``tasks`` slots would pass a slot limit of ``queue``, or None."""
    slots = job.tasks
    limit = queue.max_running
    if limit is not None and state.queue_slots.get(queue.name, 0) + slots > limit:
        return Unsatisfied(
            PendingCode.QUEUE_SLOT_LIMIT, resolvable=False, detail=f"limit {limit} slots"
        )
    limit = queue.user_slot_limit
    if limit is not None and state.user_slots.get((queue.name, job.user), 0) + slots > limit:
        return Unsatisfied(
            PendingCode.QUEUE_USER_SLOT_LIMIT,
            resolvable=False,
            detail=f"limit {limit} slots per user",
        )
    return None
