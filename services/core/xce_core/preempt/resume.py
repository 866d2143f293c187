"""Resuming preempted jobs (DESIGN "Suspended jobs come back").

A job suspended by a preemption is resumed on the hosts it held once they have room
again, its queue's slot limits allow it, its preemption is no longer in flight, and
no pending job of higher priority that waits for resources could use that room.
"""

from __future__ import annotations

from collections.abc import Iterable

from xce_schemas import SLOTS, HostStatus, JobState, PendingCode

from xce_core.alloc.job import job_never_fits
from xce_core.alloc.primary import compiled
from xce_core.preempt.trial import primaries, shared_wanted
from xce_core.readiness import exceeds_limits, limit_hold
from xce_core.resreq.model import Primary, Resreq, ResreqError
from xce_core.state import EPSILON, ClusterState, Host, Job

#: Main reasons of a pending job that waits for resources (or slot limits) to free up.
WAITING = frozenset(
    {
        PendingCode.NOT_ENOUGH_SLOTS,
        PendingCode.NOT_ENOUGH_HOSTS_FOR_SPAN,
        PendingCode.NOT_ENOUGH_RESOURCE,
        PendingCode.PREEMPT_WAIT,
        PendingCode.PREEMPT_GIVEN_UP,
        PendingCode.QUEUE_SLOT_LIMIT,
        PendingCode.QUEUE_USER_SLOT_LIMIT,
    }
)


def suspended_by_preemption(state: ClusterState, *, in_flight: bool = True) -> list[Job]:
    """Preempted jobs, the first to resume first: priority descending, then the
    earliest suspended, then jobid (``in_flight`` False: not those still victims of
    a preemption in flight)."""
    if not state.to_resume:
        return []  # (asked twice a session: most have none)
    jobs: Iterable[Job] = state.to_resume.values()
    if not in_flight:
        victims = {v for record in state.preemptions.values() for v in record.victims}
        jobs = [job for job in jobs if job.jobid not in victims]
    return sorted(jobs, key=lambda job: (-job.priority, job.suspend_ts, job.jobid))


def has_room(state: ClusterState, job: Job) -> bool:
    """Whether ``job`` could take back everything it held (its hosts ok, enough free
    on each, shared pools), within its queue's slot limits, and is not a victim of
    a preemption still in flight."""
    if any(job.jobid in record.victims for record in state.preemptions.values()):
        return False
    assert job.alloc is not None
    hosts = state.hosts
    # Slots first, stopping at the first host without them: on a busy cluster that
    # is where almost every check ends, at the cost of one host.
    for host_alloc in job.alloc.hosts:
        host = hosts[host_alloc.host]
        slots = sum(int(item.value) for item in host_alloc.allocs if item.name == SLOTS)
        if host.status is not HostStatus.OK or host.free < slots:
            return False
    for _, _, amount, free in state.needs(job.alloc, skip=job.released):
        if free is None or free + EPSILON < amount:
            return False
    return limit_hold(state, job, state.queues[job.queue]) is None


def _fits_empty(state: ClusterState, primary: Primary, host: Host) -> bool:
    """Whether one task of ``primary`` could ever be placed on ``host``: the host's
    capacity of every host resource it reserves covers one task's amount."""
    for usage in primary.rusage:
        if usage.resource == "mem":
            capacity: object = host.max_mem
        else:
            resource = state.resources.get(usage.resource)
            if resource is not None and resource.shared:
                continue
            capacity = state.resvals.get((usage.resource, host.name))
        if not isinstance(capacity, int | float) or isinstance(capacity, bool):
            return False
        if capacity + EPSILON < usage.value:
            return False
    return True


class Waiting:
    """The pending jobs that wait for resources or slot limits, by distinct request:
    for each, the highest priority among them and that job. Jobs that can never
    start (asking more slots than their queue's limit, or than the hosts they can
    use could hold: ``job_never_fits``) do not wait. Built once per session, when
    first needed."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        best: dict[int, tuple[int, Resreq, int]] = {}
        never: dict[tuple[int, int], bool] = {}  # by (request identity, tasks)
        for job in state.jobs.values():
            if job.state is not JobState.PEND or isinstance(job.request, ResreqError):
                continue
            reason = job.pend_reason
            if reason is not None and reason.main not in WAITING:
                continue  # held by something no room would cure
            if exceeds_limits(job, state.queues[job.queue]):
                continue
            shape = (id(job.request), job.tasks)
            if shape not in never:
                never[shape] = job_never_fits(job, job.request, state) is not None
            if never[shape]:
                continue
            key = id(job.request)
            known = best.get(key)
            if known is None or known[0] < job.priority:
                best[key] = (job.priority, job.request, job.jobid)
        self.requests = sorted(best.values(), key=lambda item: (-item[0], item[2]))

    def blocker(self, job: Job) -> int | None:
        """A waiting job of higher priority than ``job`` that could use a host ``job``
        held (passes its select, and one task fits the host's capacity) or a pool
        it held a share of; None when there is none, and ``job`` may resume."""
        state = self.state
        assert job.alloc is not None
        pools = {item.name for item in job.alloc.shared}
        hosts = [state.hosts[host_alloc.host] for host_alloc in job.alloc.hosts]
        for priority, request, jobid in self.requests:
            if priority <= job.priority:
                break
            if pools & shared_wanted(request, state):
                return jobid
            for primary in primaries(request):
                select = None if primary.select is None else compiled(primary.select)
                for host in hosts:
                    if (select is None or select(state.host_values(host))) and _fits_empty(
                        state, primary, host
                    ):
                        return jobid
        return None
