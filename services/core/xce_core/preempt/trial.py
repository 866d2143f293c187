"""The trial of a victim set on a copy of the allocation state (Req 6 AC 3).

The real cluster state never changes during a victim search: the trial copies the
hosts that matter (every host with a free slot, and every host a candidate victim
holds something on) and the shared pools, and answers ``fits(victims)`` by giving
the victims' holdings back in the copy and allocating the preemptor there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from xce_schemas import HostStatus, JobAlloc

from xce_core.alloc.job import allocate_job
from xce_core.alloc.outcome import Placement
from xce_core.alloc.primary import compiled
from xce_core.alloc.records import build_records
from xce_core.resreq.model import Compound, Primary, Resreq, ResreqError
from xce_core.state import ClusterState, Job


def primaries(request: Resreq) -> Iterable[Primary]:
    """Every simple requirement in ``request`` (parts and alternatives, in order)."""
    if isinstance(request, Primary):
        yield request
    elif isinstance(request, Compound):
        yield from (part.primary for part in request.parts)
    else:
        for alternative in request.alternatives:
            yield from primaries(alternative)


class Trial:
    """``fits(victims)`` for one preemptor, on a private copy of the state.

    Args:
        state: the real cluster state (read, never changed).
        job: the preemptor; its request must have parsed.
        candidates: the jobs the search may choose from (running, with allocations).
        check_cancel: the session's cancellation point (allocation calls it).
    """

    def __init__(
        self,
        state: ClusterState,
        job: Job,
        candidates: Sequence[Job],
        check_cancel: Callable[[], None],
    ) -> None:
        self.job = job
        assert not isinstance(job.request, ResreqError), "a preemptor's request parsed"
        self.request: Resreq = job.request
        self._check_cancel = check_cancel
        self._jobs = {victim.jobid: victim for victim in candidates}
        wanted = {
            host_alloc.host
            for victim in candidates
            if victim.alloc is not None
            for host_alloc in victim.alloc.hosts
        }
        copy = self.copy = ClusterState(
            config=state.config,
            resources=state.resources,
            resvals=state.resvals,
            shared_in_use=dict(state.shared_in_use),
            capacity=state.capacity,
        )
        for host in state.host_order:
            if host.usable_free > 0 or host.name in wanted:
                twin = copy.add_host(
                    host.name, host.slots, host.status, host.type, host.model, host.max_mem
                )
                twin.reserved = dict(host.reserved)
                copy.take_slots(twin, host.used)
        copy.capacity = state.capacity  # a job larger than the cluster stays so
        self._released: set[int] = set()
        self._next_instid = 1  # the trial's own records' ids: unique, never seen

    def _set(self, victims: Iterable[int]) -> None:
        """Make the copy show exactly ``victims`` released."""
        wanted = set(victims)
        for jobid in sorted(self._released - wanted):
            victim = self._jobs[jobid]
            assert victim.alloc is not None
            self.copy.hold(victim.alloc, skip=victim.released)
        for jobid in sorted(wanted - self._released):
            victim = self._jobs[jobid]
            assert victim.alloc is not None
            self.copy.release(victim.alloc, skip=victim.released)
        self._released = wanted

    def fits(self, victims: Sequence[int]) -> bool:
        """Whether the preemptor allocates once ``victims`` gave back what they hold.

        Raises:
            KeyError: a jobid that is not a candidate.
            SessionCancelled: the session was cancelled (the real state is untouched).
        """
        for jobid in victims:
            if jobid not in self._jobs:
                raise KeyError(f"job {jobid} is not a preemption candidate")
        self._set(victims)
        outcome = allocate_job(self.job, self.request, self.copy, self._check_cancel, self._build)
        if isinstance(outcome, JobAlloc):
            self.copy.release(outcome)
            return True
        return False

    def _build(self, placement: Placement) -> JobAlloc:
        alloc, self._next_instid = build_records(self.job.jobid, placement, 0, self._next_instid)
        return alloc

    def useful(self, victim: Job, shared: frozenset[str]) -> bool:
        """Whether ``victim`` holds something the preemptor could use: a share of a
        pool in ``shared``, or a place on a host that takes jobs and passes the
        preemptor's select once every candidate is gone (call ``release_all`` first)."""
        alloc = victim.alloc
        assert alloc is not None
        if any(item.name in shared for item in alloc.shared):
            return True
        selects = [primary.select for primary in primaries(self.request)]
        for host_alloc in alloc.hosts:
            host = self.copy.hosts[host_alloc.host]
            if host.status is not HostStatus.OK:
                continue
            values = self.copy.host_values(host)
            if any(select is None or compiled(select)(values) for select in selects):
                return True
        return False

    def release_all(self) -> None:
        """Show every candidate released (what ``useful`` judges by)."""
        self._set(self._jobs)


def shared_wanted(request: Resreq, state: ClusterState) -> frozenset[str]:
    """The shared (cluster-wide) resources ``request`` reserves."""
    names = set()
    for primary in primaries(request):
        for usage in primary.rusage:
            resource = state.resources.get(usage.resource)
            if resource is not None and resource.shared:
                names.add(usage.resource)
    return frozenset(names)
