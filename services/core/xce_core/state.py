"""The core's mutable scheduling state. ``ClusterState`` is its one owner.

Plugins never see these classes directly: they read them through the read-only
protocols of ``xce_core.plugins`` (``JobInfo``, ``QueueInfo``, ``HostInfo``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from sortedcontainers import SortedList
from xce_schemas import (
    SLOTS,
    Alloc,
    HostStatus,
    JobAlloc,
    JobState,
    PendingReason,
    QueueSpec,
    QueueStatus,
    ResourceDef,
    SchedulerConfig,
    parse_window,
)

from xce_core.alloc.free_index import FreeSlotIndex
from xce_core.alloc.outcome import FOREVER, Reservation
from xce_core.resreq.model import EMPTY, Resreq, ResreqError
from xce_core.runtime import NS, effective_run_limit_s

if TYPE_CHECKING:  # (the backfill package reads this module: no import loop)
    from xce_core.backfill.policy import Policy

K = TypeVar("K")

#: Field metadata of values that only key caches: not state, not snapshotted.
CACHE = {"cache": True}

#: Reserved amounts closer to zero than this are zero: float sums of amounts given
#: back in another order than taken leave residues like 1e-15 (MB, licences).
EPSILON = 1e-9

#: Resource names the core defines itself; a user resource may not take them.
BUILTIN_RESOURCES = frozenset({"slots", "maxslots", "mem", "maxmem", "type", "model", "hname"})


def entries(alloc: JobAlloc) -> Iterator[tuple[tuple[int, int], str | None, Alloc]]:
    """Every record of an allocation as ``((host index, alloc index), host name, record)``;
    shared records have host index -1 and host None. The keys are what ``Job.released``
    and the ``skip`` arguments hold."""
    for h, host_alloc in enumerate(alloc.hosts):
        for a, item in enumerate(host_alloc.allocs):
            yield (h, a), host_alloc.host, item
    for a, item in enumerate(alloc.shared):
        yield (-1, a), None, item


def _add(amounts: dict[str, float], name: str, delta: float) -> None:
    """Add ``delta`` to ``amounts[name]``, dropping the entry when it comes to zero."""
    left = amounts.get(name, 0.0) + delta
    if abs(left) < EPSILON:
        amounts.pop(name, None)
    else:
        amounts[name] = left


def _count(counts: dict[K, int], key: K, delta: int) -> None:
    left = counts.get(key, 0) + delta
    if left:
        counts[key] = left
    else:
        counts.pop(key, None)


@dataclass(slots=True)
class Queue:
    """A queue (``xce_sched_queue_t``): every field of its ``QueueSpec`` (which see),
    plus its run windows parsed (``windows``, a cache of ``run_windows``) and whether
    it has a slot limit (``limited``)."""

    name: str
    priority: int
    job_pick_plugin: str | None = None
    project_name: str | None = None
    preemptible_queues: tuple[str, ...] = ()
    preemptible: bool = False
    preempt_policy: str | None = None
    status: QueueStatus = QueueStatus.OPEN
    active: bool = True
    run_windows: tuple[str, ...] = ()
    max_running: int | None = None
    user_slot_limit: int | None = None
    run_limit_s: int | None = None
    backfill: str | None = None
    reservation_depth: int | None = None
    backfill_params: dict[str, bool | int] = field(default_factory=dict)
    windows: tuple[tuple[int, int, int], ...] = field(default=(), metadata=CACHE)
    limited: bool = field(default=False, metadata=CACHE)

    @classmethod
    def from_spec(cls, spec: QueueSpec) -> Queue:
        """The queue a wire definition describes."""
        queue = cls(spec.name, spec.priority)
        queue.update(spec)
        return queue

    def update(self, spec: QueueSpec) -> None:
        """Take every field of ``spec`` (a redefinition of this queue)."""
        for name in QueueSpec.model_fields:
            setattr(self, name, getattr(spec, name))
        self.windows = tuple(parse_window(window) for window in spec.run_windows)
        self.limited = spec.max_running is not None or spec.user_slot_limit is not None

    def spec(self) -> QueueSpec:
        """The wire definition of this queue (what a snapshot writes)."""
        return QueueSpec(**{name: getattr(self, name) for name in QueueSpec.model_fields})


@dataclass(slots=True)
class Host:
    """A host (``xce_worker_t``): its slots, how many are used, its status.

    Attributes:
        name: host name.
        position: place in host order (the order hosts were first pushed).
        slots: capacity in job slots.
        used: slots held by running jobs.
        status: only ``ok`` hosts take new jobs.
        type, model: the host's type and model (select ``type``, ``model``).
        max_mem: memory jobs may reserve, MB (``maxmem``).
        reserved: amounts of consumable resources running jobs reserve here
            (``mem`` in MB, user resources in their unit).
        values: the host's resource values as select expressions see them (a cache,
            rebuilt after any change of the host).
    """

    name: str
    position: int
    slots: int
    used: int = 0
    status: HostStatus = HostStatus.OK
    type: str = "LINUX"
    model: str = "generic"
    max_mem: float = 0.0
    reserved: dict[str, float] = field(default_factory=dict)
    values: dict[str, float | str | bool] | None = field(default=None, metadata=CACHE)

    @property
    def free(self) -> int:
        """Free slots: ``slots - used`` (never negative)."""
        return self.slots - self.used

    @property
    def usable_free(self) -> int:
        """Free slots a new job may take: ``free`` on an ok host, else 0."""
        return self.slots - self.used if self.status is HostStatus.OK else 0


@dataclass(slots=True)
class Job:
    """A job the core knows (``xce_sched_job_t``), pending, running or suspended.

    Attributes:
        jobid, queue, user, project, priority, tasks, resreq: as submitted (or updated).
        submit_ts: submission time, ns.
        queue_ts: time it (re)entered the queue, ns; FCFS orders by it.
        state: PEND, RUN or SUSP (finished jobs leave the core).
        alloc: the allocation it runs on, while RUN or SUSP.
        rusage: latest measured usage (resource name → value).
        pend_reason: the pending reason last emitted for it in a PEND decision, while
            it pends; a PEND is emitted only when the reason differs from this one.
        request: ``resreq`` parsed (or the parser's refusal); equal requests are one
            shared object.
        released: allocation entries ``(host index, alloc index)`` whose ``rusage``
            duration is over and that were given back (shared entries: index -1).
        start_ts: when it was dispatched, ns (0 before); victims are ranked by it.
        suspend_ts: when it was last suspended, ns (0 before).
        preempted: suspended by a preemption, so the core resumes it (RESUME) once
            its hosts have room; a job the controller suspended on its own is not.
        ignored_preemption: it was a victim of a preemption given up because it did
            not suspend in time; it is not chosen as a victim again.
        run_limit_s: its own run limit, s of running (LSF ``-W``; None: not given);
            ``xce_core.runtime`` combines it with its queue's.
        suspended_ns: time spent suspended since its start, ns, over the
            suspensions ended so far (0 again at each start), so that the time it
            has run is known (``xce_core.runtime.ran_ns``).
    """

    jobid: int
    queue: str
    user: str
    project: str | None
    priority: int
    tasks: int
    resreq: str
    submit_ts: int
    queue_ts: int
    state: JobState = JobState.PEND
    alloc: JobAlloc | None = None
    rusage: dict[str, float] = field(default_factory=dict)
    pend_reason: PendingReason | None = None
    request: Resreq | ResreqError = EMPTY
    released: frozenset[tuple[int, int]] = frozenset()
    start_ts: int = 0
    suspend_ts: int = 0
    preempted: bool = False
    ignored_preemption: bool = False
    run_limit_s: int | None = None
    suspended_ns: int = 0


@dataclass(frozen=True, slots=True)
class Preemption:
    """A preemption in flight: ``preemptor`` waits for ``victims`` to suspend.

    Attributes:
        preemptor: the pending job the victims make room for.
        victims: the running jobs asked to suspend, in the policy's order.
        session: the session number that issued the PREEMPT (rounds are counted
            from it for the give-up timeout).
    """

    preemptor: int
    victims: tuple[int, ...]
    session: int


@dataclass(slots=True)
class ClusterState:
    """Every piece of mutable scheduling state, owned by one ``SchedCore``.

    ``hosts_version`` increases whenever a host is added or its capacity or status
    changes, or resource values or definitions change (not when jobs take or give
    slots), so memos of what depends only on the hosts' shape stay correct.
    ``plan_version`` increases whenever what a reservation rests on may have changed:
    a job starts, stops or resumes (``charge``), or the core takes any event but a
    submission, a round or a usage report. Both are cache keys, not state: their
    values are never compared, only whether they moved (``CACHE`` marks such fields).

    ``preemptions`` holds the preemptions in flight by preemptor jobid.
    ``reservations`` holds the last session's reservations by jobid (each job's
    expected start), ``unplanned`` the jobs that session tried to reserve for and
    could not: the planner found no instant in view at which they could start.
    ``queue_slots`` and ``user_slots`` are the slots running jobs hold per queue and
    per (queue, user), for the queues' slot limits; ``running`` indexes the running
    jobs, ``running_on`` them by host (host → their jobids, in start order), and
    ``to_resume`` the jobs suspended by a preemption, and ``deadlines`` the running
    jobs by the instant their run limit in force runs out (``expected_end``). All six
    follow from the jobs (``charge``, ``set_preempted``, ``reindex_deadlines``) and
    are rebuilt, not saved, by a snapshot load.
    """

    config: SchedulerConfig = field(default_factory=SchedulerConfig)
    queues: dict[str, Queue] = field(default_factory=dict)
    hosts: dict[str, Host] = field(default_factory=dict)
    host_order: list[Host] = field(default_factory=list)
    jobs: dict[int, Job] = field(default_factory=dict)
    resources: dict[str, ResourceDef] = field(default_factory=dict)
    resvals: dict[tuple[str, str], float | bool | str] = field(default_factory=dict)
    free_index: FreeSlotIndex = field(default_factory=FreeSlotIndex)
    shared_in_use: dict[str, float] = field(default_factory=dict)
    expiries: SortedList = field(default_factory=SortedList)  # (expiry s, jobid)
    capacity: int = 0
    next_instid: int = 1
    sessions: int = 0
    preemptions: dict[int, Preemption] = field(default_factory=dict)
    unplanned: tuple[int, ...] = ()
    reservations: dict[int, Reservation] = field(default_factory=dict)
    hosts_version: int = field(default=0, metadata=CACHE)
    multi_slot_hosts: int = field(default=0, metadata=CACHE)  # hosts of other than one slot
    plan_version: int = field(default=0, metadata=CACHE)
    queue_slots: dict[str, int] = field(default_factory=dict, metadata=CACHE)
    user_slots: dict[tuple[str, str], int] = field(default_factory=dict, metadata=CACHE)
    running: dict[int, Job] = field(default_factory=dict, metadata=CACHE)
    running_on: dict[str, dict[int, None]] = field(default_factory=dict, metadata=CACHE)
    to_resume: dict[int, Job] = field(default_factory=dict, metadata=CACHE)
    # (deadline ns, jobid, job) of each running job, sorted: kept as jobs start and
    # stop (Flux's planner keeps its availability so), not rebuilt every session.
    deadlines: SortedList = field(default_factory=SortedList, metadata=CACHE)
    deadline_of: dict[int, int] = field(default_factory=dict, metadata=CACHE)  # jobid → it
    # The backfill policy of each domain (None: the scheduler's; a queue's name: the
    # queue that overrides), made by the core from the configuration through its
    # registry (``SchedCore.resolve_backfill``); empty: ``greedy`` everywhere.
    policies: dict[str | None, Policy] = field(default_factory=dict, metadata=CACHE)

    def add_host(
        self,
        name: str,
        slots: int,
        status: HostStatus,
        type: str = "LINUX",
        model: str = "generic",
        max_mem: float = 0.0,
    ) -> Host:
        """Append a new host at the end of host order."""
        host = Host(name, len(self.host_order), slots, 0, status, type, model, max_mem)
        self.hosts[name] = host
        self.host_order.append(host)
        self.capacity += slots
        self.multi_slot_hosts += slots != 1
        self.hosts_version += 1
        self._reindex(host)
        return host

    def set_host(
        self,
        host: Host,
        slots: int,
        status: HostStatus,
        type: str = "LINUX",
        model: str = "generic",
        max_mem: float = 0.0,
    ) -> None:
        """Change a host's capacity, status or attributes (``slots`` ≥ its used slots)."""
        self.capacity += slots - host.slots
        self.multi_slot_hosts += (slots != 1) - (host.slots != 1)
        host.slots, host.status = slots, status
        host.type, host.model, host.max_mem = type, model, max_mem
        self.hosts_version += 1
        self._reindex(host)

    # --- resources ---------------------------------------------------------------------

    def host_values(self, host: Host) -> dict[str, float | str | bool]:
        """The host's resource values as select expressions see them.

        Built-ins: ``slots`` (free slots), ``maxslots``, ``mem`` (MB left to reserve),
        ``maxmem``, ``type``, ``model``, ``hname``; then every resource value the host
        was given (a consumable's value less what is reserved). Cached on the host until
        it changes.
        """
        values = host.values
        if values is None:
            values = {
                "slots": host.slots - host.used,
                "maxslots": host.slots,
                "mem": host.max_mem - host.reserved.get("mem", 0.0),
                "maxmem": host.max_mem,
                "type": host.type,
                "model": host.model,
                "hname": host.name,
            }
            for (resource, where), value in self.resvals.items():
                if where == host.name:
                    reserved = host.reserved.get(resource)
                    values[resource] = value if reserved is None else value - reserved  # type: ignore[operator]
            host.values = values
        return values

    def forget_values(self) -> None:
        """Drop every host's cached select values (resource values or definitions
        changed); memos of what depends on them go too (``hosts_version``)."""
        for host in self.host_order:
            host.values = None
        self.hosts_version += 1

    def available(self, host: Host, resource: str) -> float | None:
        """How much of a consumable host resource is left on ``host`` (None: the host
        has none of it). ``mem`` is the built-in memory (``maxmem`` less reserved)."""
        if resource == "mem":
            return host.max_mem - host.reserved.get("mem", 0.0)
        value = self.resvals.get((resource, host.name))
        if value is None or isinstance(value, bool | str):
            return None
        return value - host.reserved.get(resource, 0.0)

    def shared_available(self, resource: str) -> float | None:
        """How much of a shared (cluster-wide) resource is left (None: no pool)."""
        value = self.resvals.get((resource, ""))
        if value is None or isinstance(value, bool | str):
            return None
        return value - self.shared_in_use.get(resource, 0.0)

    def hold(self, alloc: JobAlloc, skip: frozenset[tuple[int, int]] = frozenset()) -> None:
        """Take everything ``alloc`` lists: slots and reservations on each host, shared
        resources from their pools (entries whose ``(host index, alloc index)`` is in
        ``skip`` are left out; shared entries have host index -1)."""
        self._apply(alloc, skip, 1)

    def release(self, alloc: JobAlloc, skip: frozenset[tuple[int, int]] = frozenset()) -> None:
        """Give back everything ``hold`` took for ``alloc`` (less ``skip``)."""
        self._apply(alloc, skip, -1)

    def _apply(self, alloc: JobAlloc, skip: frozenset[tuple[int, int]], sign: int) -> None:
        # The walk of ``entries`` and ``_reindex``, written out: this runs twice for
        # every job (start and stop) over every host it holds. A host listed twice
        # is indexed twice, the second time as it ends up.
        hosts, update, ok = self.hosts, self.free_index.update, HostStatus.OK
        for h, host_alloc in enumerate(alloc.hosts):
            host = hosts[host_alloc.host]
            for a, item in enumerate(host_alloc.allocs):
                if skip and (h, a) in skip:
                    continue
                if item.name == SLOTS:
                    host.used += sign * int(item.value)
                else:
                    _add(host.reserved, item.name, sign * item.value)
            host.values = None
            update(host.position, host.slots - host.used if host.status is ok else 0)
        for a, item in enumerate(alloc.shared):
            if not (skip and (-1, a) in skip):
                _add(self.shared_in_use, item.name, sign * item.value)

    def needs(
        self, alloc: JobAlloc, skip: frozenset[tuple[int, int]] = frozenset()
    ) -> list[tuple[str | None, str, float, float | None]]:
        """What holding ``alloc`` (less ``skip``) would take, summed per host and
        resource: ``(host or None for a shared pool, resource, amount, free now)``."""
        wanted: dict[tuple[str | None, str], float] = {}
        for key, where, item in entries(alloc):
            if key not in skip:
                wanted[(where, item.name)] = wanted.get((where, item.name), 0.0) + item.value
        out = []
        for (where, name), amount in wanted.items():
            if where is None:
                free = self.shared_available(name)
            elif name == SLOTS:
                free = float(self.hosts[where].free)
            else:
                free = self.available(self.hosts[where], name)
            out.append((where, name, amount, free))
        return out

    # --- a job's life: the one owner of starting, stopping and resuming -------------
    # Each holds or releases the job's allocation, charges its queue's slot counts and
    # (un)indexes it as running together: resources are conserved only if all agree.

    def start(self, job: Job, alloc: JobAlloc, ts: int) -> None:
        """A pending job starts running at ``ts`` (ns) on ``alloc``, which allocation
        has already held (the allocator holds as it places, compound pieces one by
        one): it is charged and indexed as running, its preemption record ends, and
        the ends of its time-limited ``rusage`` reservations are noted."""
        job.alloc = alloc
        job.released = frozenset()
        job.state = JobState.RUN
        job.pend_reason = None
        job.start_ts = ts
        job.suspended_ns = 0
        self.charge(job, 1)
        self.preemptions.pop(job.jobid, None)
        ends = {
            item.from_ + item.duration
            for records in (*(host.allocs for host in alloc.hosts), alloc.shared)
            for item in records
            if item.duration >= 0
        }
        for end in sorted(ends):
            self.expiries.add((end, job.jobid))

    def stop(self, job: Job) -> None:
        """A running job stops (finished, failed, suspended or requeued): it gives back
        what it holds (slots, host reservations, shared resources; a suspended job
        keeps only its place, the hosts it resumes on) and is no longer charged."""
        assert job.alloc is not None, f"job {job.jobid} runs without an allocation"
        self.release(job.alloc, skip=job.released)
        self.charge(job, -1)

    def resume(self, job: Job, ts: int) -> None:
        """A suspended job runs again on its allocation at ``ts`` (ns): it takes back
        what it held (the caller checked the room), is charged again, is no longer
        waiting for a resume, and the time it was suspended is added up."""
        assert job.alloc is not None, f"job {job.jobid} is suspended without an allocation"
        job.suspended_ns += ts - job.suspend_ts
        self.hold(job.alloc, skip=job.released)
        self.charge(job, 1)
        self.set_preempted(job, False)

    def charge(self, job: Job, sign: int) -> None:
        """Count ``job``'s slots against its queue's limits and index it as running
        (``sign`` 1 when it starts or resumes running, -1 when it stops)."""
        assert job.alloc is not None, f"job {job.jobid} is charged without an allocation"
        slots = sign * job.tasks  # an allocation holds one slot per task
        self.plan_version += 1
        _count(self.queue_slots, job.queue, slots)
        _count(self.user_slots, (job.queue, job.user), slots)
        on = self.running_on
        if sign > 0:
            self.running[job.jobid] = job
            for record in job.alloc.hosts:  # (every host record holds slots)
                on.setdefault(record.host, {})[job.jobid] = None
            self._index_deadline(job)
        elif self.running.pop(job.jobid, None) is not None:
            deadline = self.deadline_of.pop(job.jobid)
            self.deadlines.remove((deadline, job.jobid, job))
            for record in job.alloc.hosts:
                jobs = on.get(record.host)
                if jobs is not None:
                    jobs.pop(job.jobid, None)
                    if not jobs:
                        del on[record.host]

    def _index_deadline(self, job: Job) -> None:
        limit_s = effective_run_limit_s(job, self.queues.get(job.queue))
        deadline = FOREVER
        if limit_s is not None:
            deadline = job.start_ts + job.suspended_ns + limit_s * NS
        self.deadline_of[job.jobid] = deadline
        self.deadlines.add((deadline, job.jobid, job))

    def reindex_deadlines(self, jobs: Iterable[Job] | None = None) -> None:
        """Index again the deadlines of running ``jobs`` (all running jobs when None)
        after their run limit in force may have changed: a job's own (``JOB_UPDATE``)
        or its queue's (``QUEUE_UPDATE``, ``CONFIG_PUSH``)."""
        for job in list(self.running.values()) if jobs is None else list(jobs):
            if job.jobid in self.deadline_of:
                self.deadlines.remove((self.deadline_of.pop(job.jobid), job.jobid, job))
                self._index_deadline(job)

    def expected_end(self, job: Job, now: int) -> int:
        """When running ``job`` is expected to end, ns: its start + time suspended +
        run limit in force, or ``now`` once it has run past that
        (``runtime.expected_end_ns``); ``FOREVER`` without a run limit."""
        deadline = self.deadline_of[job.jobid]
        return deadline if deadline > now else now

    def expected_ends(self, now: int) -> list[tuple[int, Job]]:
        """Every running job with its ``expected_end`` (ns), sorted by ``(end, jobid)``
        (a job past its deadline is expected to end ``now``); O(running jobs), with
        no run limit looked up."""
        deadlines = self.deadlines
        past = deadlines.bisect_left((now + 1,))
        ends = [(now, job) for _, _, job in sorted(deadlines.islice(0, past), key=_jobid_of)]
        ends += [(deadline, job) for deadline, _, job in deadlines.islice(past)]
        return ends

    def set_preempted(self, job: Job, preempted: bool) -> None:
        """Mark ``job`` as suspended by a preemption (the core resumes it) or not."""
        job.preempted = preempted
        if preempted:
            self.to_resume[job.jobid] = job
        else:
            self.to_resume.pop(job.jobid, None)

    def take_slots(self, host: Host, slots: int) -> None:
        """A job takes ``slots`` on ``host`` (caller checked they are free)."""
        host.used += slots
        self._reindex(host)

    def give_slots(self, host: Host, slots: int) -> None:
        """``slots`` taken on ``host`` with ``take_slots`` are free again."""
        host.used -= slots
        self._reindex(host)

    def _reindex(self, host: Host) -> None:
        host.values = None
        # ``host.usable_free``, inlined: this runs for every host a job takes or frees.
        free = host.slots - host.used if host.status is HostStatus.OK else 0
        self.free_index.update(host.position, free)


def _jobid_of(entry: tuple[int, int, Job]) -> int:
    return entry[1]
