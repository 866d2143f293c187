"""The core's mutable scheduling state. ``ClusterState`` is its one owner.

Plugins never see these classes directly: they read them through the read-only
protocols of ``xce_core.plugins`` (``JobInfo``, ``QueueInfo``, ``HostInfo``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xce_schemas import (
    HostStatus,
    JobAlloc,
    JobState,
    PendingReason,
    ResourceDef,
    SchedulerConfig,
)

from xce_core.alloc.free_index import FreeSlotIndex

#: Field metadata of values that only key caches: not state, not snapshotted.
CACHE = {"cache": True}


@dataclass(slots=True)
class Queue:
    """A queue (``xce_sched_queue_t``): priority, picker override, owning project."""

    name: str
    priority: int
    job_pick_plugin: str | None = None
    project_name: str | None = None


@dataclass(slots=True)
class Host:
    """A host (``xce_worker_t``): its slots, how many are used, its status.

    Attributes:
        name: host name.
        position: place in host order (the order hosts were first pushed).
        slots: capacity in job slots.
        used: slots held by running jobs.
        status: only ``ok`` hosts take new jobs.
    """

    name: str
    position: int
    slots: int
    used: int = 0
    status: HostStatus = HostStatus.OK

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


@dataclass(slots=True)
class ClusterState:
    """Every piece of mutable scheduling state, owned by one ``SchedCore``.

    ``hosts_version`` increases whenever a host is added or its capacity or status
    changes (not when jobs take or give slots), so memos of what depends only on the
    hosts' shape stay correct. It is a cache key, not state: its value is never
    compared, only whether it moved (``CACHE`` marks such fields).
    """

    config: SchedulerConfig = field(default_factory=SchedulerConfig)
    queues: dict[str, Queue] = field(default_factory=dict)
    hosts: dict[str, Host] = field(default_factory=dict)
    host_order: list[Host] = field(default_factory=list)
    jobs: dict[int, Job] = field(default_factory=dict)
    resources: dict[str, ResourceDef] = field(default_factory=dict)
    resvals: dict[tuple[str, str], float | bool | str] = field(default_factory=dict)
    free_index: FreeSlotIndex = field(default_factory=FreeSlotIndex)
    capacity: int = 0
    next_instid: int = 1
    sessions: int = 0
    hosts_version: int = field(default=0, metadata=CACHE)

    def add_host(self, name: str, slots: int, status: HostStatus) -> Host:
        """Append a new host at the end of host order."""
        host = Host(name, len(self.host_order), slots, 0, status)
        self.hosts[name] = host
        self.host_order.append(host)
        self.capacity += slots
        self.hosts_version += 1
        self._reindex(host)
        return host

    def set_host(self, host: Host, slots: int, status: HostStatus) -> None:
        """Change a host's capacity or status (``slots`` ≥ its used slots)."""
        self.capacity += slots - host.slots
        host.slots = slots
        host.status = status
        self.hosts_version += 1
        self._reindex(host)

    def take_slots(self, host: Host, slots: int) -> None:
        """A job takes ``slots`` on ``host`` (caller checked they are free)."""
        host.used += slots
        self._reindex(host)

    def give_slots(self, host: Host, slots: int) -> None:
        """A job gives ``slots`` back on ``host``."""
        host.used -= slots
        self._reindex(host)

    def _reindex(self, host: Host) -> None:
        self.free_index.update(host.position, host.usable_free)
