"""The snapshot document: the whole core state as plain JSON (Req 10 AC 16).

Written by ``xce_core.snapshot.save_snapshot`` and read by ``load_snapshot``; a
recording's SNAPSHOT line carries one in ``data``. Lists keep the core's table
order, which decisions depend on. Shared objects (resource requests) are written
once in ``objects`` and referenced by index (spec invariant 5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field, Strict

from xce_schemas.alloc import JobAlloc
from xce_schemas.base import PLAIN_WIRE, WireModel
from xce_schemas.events import (
    HostStatus,
    JobId,
    JobState,
    QueueSpec,
    ResourceDef,
    ResVal,
    SchedulerConfig,
    StrictBool,
    TimestampNs,
)
from xce_schemas.pending import PendingReason

#: The snapshot layout version this package reads and writes.
SNAPSHOT_VERSION = 1


class ObjectTable(WireModel):
    """Shared immutable objects, each written once and referenced by its index:
    resource requests and pending reasons (many jobs share one)."""

    resreqs: tuple[str, ...] = ()
    pend_reasons: tuple[PendingReason, ...] = ()


class HostState(WireModel):
    """A host with its slot accounting (``used`` ≤ ``slots``) and reservations."""

    name: str
    slots: Annotated[int, Strict(), Field(ge=0)]
    used: Annotated[int, Strict(), Field(ge=0)]
    status: HostStatus
    type: str = "LINUX"
    model: str = "generic"
    max_mem_mb: float = Field(default=0.0, ge=0)
    reserved: dict[str, float] = Field(default_factory=dict)


# A plain slotted class, as the allocation records are (``xce_schemas.alloc``):
# ``save_snapshot`` makes one per job without validation (a pydantic model cost five
# times as much: most of a save of 100,000 jobs), and pydantic checks it where a
# snapshot is read. Its JSON and JSON Schema are the model's, byte for byte. Nothing
# may change one once made.
@dataclass(slots=True, kw_only=True)
class JobStateDoc:
    """A job the core holds (pending, running or suspended).

    ``resreq`` and ``pend_reason`` are indexes into the object table; times are ns.
    ``preempted``: suspended by a preemption (the core resumes it);
    ``ignored_preemption``: it did not suspend when asked and is not chosen again.
    ``run_limit_s``: the job's own run limit, s (None: not given);
    ``suspended_ns``: time it spent suspended since its start, ns, suspensions ended
    so far (the current one counts from ``suspend_ts``). Both are left out of the
    document at their defaults, so a snapshot of a core that never saw them is
    written as before the fields existed, and such a snapshot loads.

    Its whole numbers and booleans are strict, as the events' are: ``"tasks": "4"``
    or ``"preempted": "no"`` is refused where a snapshot is read, not converted.
    """

    __pydantic_config__ = PLAIN_WIRE

    jobid: JobId
    queue: str
    user: str
    project: str | None
    priority: Annotated[int, Strict()]
    tasks: Annotated[int, Strict(), Field(ge=1)]
    resreq: Annotated[int, Strict(), Field(ge=0)]
    submit_ts: TimestampNs
    queue_ts: TimestampNs
    state: JobState
    alloc: JobAlloc | None = None
    rusage: dict[str, float] = field(default_factory=dict)
    pend_reason: Annotated[int | None, Strict(), Field(ge=0)] = None
    released: tuple[tuple[Annotated[int, Strict()], Annotated[int, Strict()]], ...] = ()
    start_ts: TimestampNs = 0
    suspend_ts: TimestampNs = 0
    preempted: StrictBool = False
    ignored_preemption: StrictBool = False
    run_limit_s: Annotated[
        int | None, Strict(), Field(ge=1, exclude_if=lambda value: value is None)
    ] = None
    suspended_ns: Annotated[int, Strict(), Field(ge=0, exclude_if=lambda value: value == 0)] = 0


class PreemptionDoc(WireModel):
    """A preemption in flight: ``preemptor`` waits for ``victims`` since ``session``."""

    preemptor: JobId
    victims: tuple[JobId, ...] = Field(min_length=1)
    session: int = Field(ge=1)


class ReservationDoc(WireModel):
    """Room reserved for a pending job from ``start_ts`` (ns) until ``end_ts`` (ns;
    None: no run limit) on ``hosts`` (``(host, slots)``); ``running``: how many
    running jobs' expected ends the estimate rests on; ``count``: slots held on no
    host in particular (a reservation on counts, bound to hosts when the job
    starts; left out when 0)."""

    jobid: JobId
    start_ts: TimestampNs
    end_ts: TimestampNs | None = None
    hosts: tuple[tuple[str, int], ...] = ()
    running: int = Field(default=0, ge=0)
    count: int = Field(default=0, ge=0, exclude_if=lambda value: value == 0)


class Counters(WireModel):
    """Counters whose values later decisions depend on."""

    next_instid: int = Field(ge=1)
    sessions: int = Field(ge=0)
    events: int = Field(ge=0)


class ClockState(WireModel):
    """The virtual clock: time now (ns) and speed (a fraction as text, e.g. ``"0"``)."""

    now: TimestampNs
    speed: str


class PrngState(WireModel):
    """The core PRNG: its seed and ``random.Random.getstate()`` as JSON."""

    seed: int
    version: int
    internal: tuple[int, ...]
    gauss_next: float | None


class PickerState(WireModel):
    """The global picker's name and what its ``save_state`` returned."""

    name: str
    state: dict[str, Any] = Field(default_factory=dict)


class CoreSnapshot(WireModel):
    """The whole state of a ``SchedCore`` between two events.

    Attributes:
        version: ``SNAPSHOT_VERSION``.
        ts: ts of the last event the core accepted, ns.
        objects: shared objects referenced by index.
        config: the scheduler configuration.
        queues: queues in table order.
        hosts: hosts in host order.
        jobs: jobs in table (submission) order.
        resources, resvals: resource definitions and values.
        shared_in_use: amounts of shared resources running jobs hold.
        expiries: (second, jobid) at which a job's timed reservations end.
        preemptions: preemptions in flight, in the order they were made.
        reservations: the reservations of the last session, in the order made.
        unplanned: the jobs the last session tried to reserve for in vain (no
            instant in view at which they could start), in order; left out when
            there are none, so older snapshots load and write the same bytes.
        counters, clock, prng, picker: see their models.

    Users and projects are attributes of jobs and queues here (no separate tables);
    the unsatisfiable-request cache and other session state live only inside a
    session, and snapshots are only taken between events.
    """

    type: str = "xce.core.snapshot"
    version: int = SNAPSHOT_VERSION
    ts: TimestampNs
    objects: ObjectTable
    config: SchedulerConfig
    queues: tuple[QueueSpec, ...]
    hosts: tuple[HostState, ...]
    jobs: tuple[JobStateDoc, ...]
    resources: tuple[ResourceDef, ...]
    resvals: tuple[ResVal, ...]
    shared_in_use: dict[str, float] = Field(default_factory=dict)
    expiries: tuple[tuple[int, JobId], ...] = ()
    preemptions: tuple[PreemptionDoc, ...] = ()
    # Left out when empty, so a snapshot without backfill is written as before it.
    reservations: tuple[ReservationDoc, ...] = Field(default=(), exclude_if=lambda value: not value)
    unplanned: tuple[JobId, ...] = Field(default=(), exclude_if=lambda value: not value)
    counters: Counters
    clock: ClockState
    prng: PrngState
    picker: PickerState
