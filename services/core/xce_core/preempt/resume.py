"""Resuming preempted jobs (DESIGN "Suspended jobs come back").

A job suspended by a preemption is resumed on the hosts it held once they have room
again, its queue's slot limits allow it, its preemption is no longer in flight, and
no pending job of higher priority that waits for resources could use that room.
"""

from __future__ import annotations

from collections.abc import Iterator

from xce_schemas import HostStatus, JobState, PendingCode

from xce_core.alloc.primary import compiled
from xce_core.preempt.trial import primaries, shared_wanted
from xce_core.readiness import limit_hold
from xce_core.resreq.model import Resreq, ResreqError
from xce_core.state import EPSILON, ClusterState, Job

#: Main reasons of a pending job that waits for resources to free up.
SHORTAGE = frozenset(
    {
        PendingCode.NOT_ENOUGH_SLOTS,
        PendingCode.NOT_ENOUGH_HOSTS_FOR_SPAN,
        PendingCode.NOT_ENOUGH_RESOURCE,
        PendingCode.PREEMPT_WAIT,
        PendingCode.PREEMPT_GIVEN_UP,
    }
)


def suspended_by_preemption(state: ClusterState) -> list[Job]:
    """Preempted jobs, the first to resume first: priority descending, then the
    earliest suspended, then jobid."""
    return sorted(
        state.to_resume.values(), key=lambda job: (-job.priority, job.suspend_ts, job.jobid)
    )


def has_room(state: ClusterState, job: Job) -> bool:
    """Whether ``job`` could take back everything it held (its hosts ok, enough free
    on each, shared pools), within its queue's slot limits, and is not a victim of
    a preemption still in flight."""
    if any(job.jobid in record.victims for record in state.preemptions.values()):
        return False
    assert job.alloc is not None
    for host_alloc in job.alloc.hosts:
        if state.hosts[host_alloc.host].status is not HostStatus.OK:
            return False
    for _, _, amount, free in state.needs(job.alloc, skip=job.released):
        if free is None or free + EPSILON < amount:
            return False
    return limit_hold(state, job, state.queues[job.queue]) is None


class Waiting:
    """The pending jobs that wait for resources, by distinct request: for each, the
    highest priority among them. Built once per session, when first needed."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        best: dict[int, tuple[int, Resreq]] = {}
        for job in state.jobs.values():
            if job.state is not JobState.PEND or isinstance(job.request, ResreqError):
                continue
            reason = job.pend_reason
            if reason is not None and reason.main not in SHORTAGE:
                continue  # held by something no room would cure
            key = id(job.request)
            known = best.get(key)
            if known is None or known[0] < job.priority:
                best[key] = (job.priority, job.request)
        self.requests = sorted(best.values(), key=lambda item: -item[0])

    def _above(self, priority: int) -> Iterator[Resreq]:
        for waiting_priority, request in self.requests:
            if waiting_priority <= priority:
                return
            yield request

    def need_room_of(self, job: Job) -> bool:
        """Whether a waiting job of higher priority than ``job`` could use any host
        ``job`` held, or a pool it held a share of."""
        state = self.state
        assert job.alloc is not None
        pools = {item.name for item in job.alloc.shared}
        hosts = [state.hosts[host_alloc.host] for host_alloc in job.alloc.hosts]
        for request in self._above(job.priority):
            if pools & shared_wanted(request, state):
                return True
            for primary in primaries(request):
                select = None if primary.select is None else compiled(primary.select)
                for host in hosts:
                    if select is None or select(state.host_values(host)):
                        return True
        return False
