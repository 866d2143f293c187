"""The eleven core event types of Req 10 AC 4: what a driver pushes into the core.

Every event is ``{"type": NAME, "ts": NS, "payload": {...}}``, the shape of a replay
line (Req 10 AC 15). ``ts`` is the driver-supplied logical time in integer
nanoseconds. ``CoreEvent`` is the discriminated union of all eleven; validate a
decoded JSON object with ``parse_event``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, Strict, TypeAdapter, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from xce_schemas.base import PLAIN_WIRE, WireModel
from xce_schemas.fairshare import FairShareConfig
from xce_schemas.windows import parse_window

#: A name of a queue, host, user, project or resource: no spaces, not empty.
Name = Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9_.:@+\-]+$")]

#: Logical time in integer nanoseconds, unsigned 64-bit. Strict: a string, a float or
#: a boolean is refused, not converted.
TimestampNs = Annotated[int, Strict(), Field(ge=0, lt=2**64)]

#: A boolean that must be written as one (``"no"``, ``0`` or ``"off"`` are refused).
StrictBool = Annotated[bool, Strict()]

#: Job ids are unsigned 64-bit integers (strict, as ``TimestampNs``).
JobId = Annotated[int, Strict(), Field(ge=0, lt=2**64)]

#: A signed 32-bit priority (strict).
Priority = Annotated[int, Strict(), Field(ge=-(2**31), lt=2**31)]

#: A count of slots or tasks (strict).
Count = Annotated[int, Strict(), Field(ge=0, le=2**31 - 1)]

#: A run limit, whole seconds of running (time suspended left out), at least 1
#: (strict: a float, a string or a boolean is refused, not converted).
RunLimitS = Annotated[int, Strict(), Field(ge=1, lt=2**63)]


class JobState(StrEnum):
    """LSF job states as the controller reports them.

    PEND: waiting to be dispatched; RUN: running; SUSP: suspended (preempted);
    DONE: finished with exit 0; EXIT: finished with an error, killed or rejected.
    """

    PEND = "PEND"
    RUN = "RUN"
    SUSP = "SUSP"
    DONE = "DONE"
    EXIT = "EXIT"


class HostStatus(StrEnum):
    """A host's status: only ``ok`` hosts take new jobs."""

    OK = "ok"
    CLOSED = "closed"
    UNAVAIL = "unavail"


class QueueStatus(StrEnum):
    """Whether a queue accepts new jobs (LSF ``badmin qopen`` / ``qclose``).

    A closed queue refuses submissions and jobs moved into it; the jobs already in
    it are still dispatched (that is what ``active`` controls).
    """

    OPEN = "open"
    CLOSED = "closed"


class BackfillPolicy(StrEnum):
    """The built-in backfill policies: whether a job that does not fit holds back the
    jobs behind it, and how (flux-sched's queue policies; ``docs/backfill.md``). The
    wire carries a policy's name (``BackfillName``): these, or one a third party
    registered with the core (entry-point group ``xce.backfill_policies``).

    GREEDY: every job that fits starts, in order (first fit; no reservation).
    STRICT: no job starts after one that does not fit (head-of-line blocking).
    EASY: the first job that does not fit gets a reservation; later jobs start only
        when they do not delay it (reservation depth 1).
    HYBRID: the first ``reservation_depth`` such jobs get reservations.
    CONSERVATIVE: every job that does not fit gets a reservation.
    """

    GREEDY = "greedy"
    STRICT = "strict"
    EASY = "easy"
    HYBRID = "hybrid"
    CONSERVATIVE = "conservative"


#: A backfill policy's registered name: a built-in (``BackfillPolicy``) or a third
#: party's; the core's registry refuses an unknown one.
BackfillName = Name


class FrozenParams(dict[str, bool | int]):
    """A backfill policy's parameters: a dict that hashes by value, as the frozen wire
    models holding it must (it is never changed once made)."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))


#: A backfill policy's parameters by name (``backfill_params``: ``compress`` of
#: ``hybrid`` and ``conservative``); the policy's factory checks them.
BackfillParams = Annotated[
    dict[Name, StrictBool | Annotated[int, Strict()]], AfterValidator(FrozenParams)
]

#: A reservation depth: how many blocked jobs a ``hybrid`` policy reserves for.
ReservationDepth = Annotated[int, Strict(), Field(ge=1, le=1_000_000)]


_BUILT_IN = frozenset(policy.value for policy in BackfillPolicy)


def _params_only_with_a_policy(params: FrozenParams, info: ValidationInfo) -> FrozenParams:
    """A queue's ``backfill_params`` are its own policy's: without ``backfill`` they
    would change nothing (a validator declared after ``backfill``).

    Raises:
        PydanticCustomError: saying so.
    """
    if params and "backfill" in info.data and info.data["backfill"] is None:
        raise PydanticCustomError(
            "params_without_policy",
            "backfill_params are the queue's own backfill policy's (set its backfill)",
        )
    return params


def _depth_only_with_hybrid(depth: int | None, info: ValidationInfo) -> int | None:
    """A reservation depth is a ``hybrid`` policy's, and ``hybrid`` needs one (a
    validator of ``reservation_depth``, declared after ``backfill``, so the error
    names it; nothing is said when ``backfill`` itself was refused).

    Raises:
        PydanticCustomError: saying which.
    """
    if "backfill" not in info.data:
        return depth
    policy = info.data["backfill"]
    if policy is not None and policy not in _BUILT_IN:
        return depth  # a registered policy's own: its factory checks it
    if depth is not None and policy != BackfillPolicy.HYBRID:
        raise PydanticCustomError(
            "depth_without_hybrid",
            "reservation_depth is a hybrid backfill policy's (backfill: hybrid)",
        )
    if policy == BackfillPolicy.HYBRID and depth is None:
        raise PydanticCustomError(
            "hybrid_without_depth", "backfill hybrid needs a reservation_depth (1 or more)"
        )
    return depth


#: A run window, LSF ``RUN_WINDOW`` syntax: ``[day:]hh[:mm]-[day:]hh[:mm]`` (day 0-6,
#: 0 = Sunday; both ends with a day or neither). Checked in full by ``parse_window``.
RunWindow = Annotated[str, Field(min_length=3, max_length=32)]


class QueueSpec(WireModel):
    """A queue definition (``xce_sched_queue_t``; Req 5 AC 2-3, Req 6 AC 7).

    Attributes:
        name: queue name.
        priority: inter-queue order, higher first (LSF ``PRIORITY``).
        job_pick_plugin: per-queue picker override; None inherits the scheduler's.
        project_name: the project owning the queue, for project-aware pickers.
        preemptible_queues: queues whose running jobs this queue's jobs may preempt
            (LSF ``PREEMPTION=PREEMPTIVE[...]``); empty: this queue never preempts.
        preemptible: whether other queues' jobs may preempt this queue's jobs
            (LSF ``PREEMPTABLE``); False by default, so nothing is preempted unless
            the operator says so.
        preempt_policy: the victim-selection plugin's name; None:
            ``lowest_priority_first``.
        status: open (takes new jobs) or closed.
        active: False holds every pending job of the queue (LSF ``qinact``).
        run_windows: times of the week the queue dispatches, in virtual time (UTC),
            LSF ``RUN_WINDOW`` syntax; empty: always.
        max_running: slots the queue's running jobs may hold in all (LSF
            ``QJOB_LIMIT``); None: no limit.
        user_slot_limit: slots one user's running jobs may hold in the queue (LSF
            ``UJOB_LIMIT``); None: no limit.
        run_limit_s: wall-clock seconds a job may run before it is killed (LSF
            ``RUNLIMIT``; time suspended does not count); None: no limit.
        backfill: this queue's backfill policy, overriding the scheduler's; None:
            the scheduler's.
        reservation_depth: with ``backfill: hybrid``, how many of this queue's
            blocked jobs get reservations.
        backfill_params: parameters of this queue's policy (``compress``).
    """

    name: Name
    priority: Priority = 0
    job_pick_plugin: Name | None = None
    project_name: Name | None = None
    preemptible_queues: tuple[Name, ...] = ()
    preemptible: StrictBool = False
    preempt_policy: Name | None = None
    status: QueueStatus = QueueStatus.OPEN
    active: StrictBool = True
    run_windows: tuple[RunWindow, ...] = ()
    max_running: Annotated[Count, Field(ge=1)] | None = None
    user_slot_limit: Annotated[Count, Field(ge=1)] | None = None
    run_limit_s: RunLimitS | None = None
    # Left out while unset, so a queue without them is written as before backfill.
    backfill: BackfillName | None = Field(default=None, exclude_if=lambda value: value is None)
    reservation_depth: ReservationDepth | None = Field(
        default=None, exclude_if=lambda value: value is None, validate_default=True
    )
    backfill_params: BackfillParams = Field(
        default_factory=FrozenParams, exclude_if=lambda value: not value
    )

    _hybrid_depth = field_validator("reservation_depth")(_depth_only_with_hybrid)
    _own_params = field_validator("backfill_params")(_params_only_with_a_policy)

    @field_validator("run_windows")
    @classmethod
    def _windows_parse(cls, windows: tuple[str, ...]) -> tuple[str, ...]:
        for window in windows:
            parse_window(window)  # ValueError names the window and what is wrong
        return windows

    @field_validator("preemptible_queues")
    @classmethod
    def _no_repeats(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for index, name in enumerate(names):
            if name in names[:index]:
                raise ValueError(f"queue {name!r} is listed twice")
        return names


class SchedulerConfig(WireModel):
    """The scheduler configuration of ``CONFIG_PUSH`` (``xce_conf4sched_t``).

    Attributes:
        job_pick_plugin: the global picker's registered name (Req 5 AC 1, 4).
        queues: queue definitions; replaces the whole queue table.
        preempt_timeout_rounds: rounds a preemption may wait for its victims to
            suspend before it is given up and reported (Req 6, no thrash).
        backfill: the backfill policy (a queue's ``backfill`` overrides it for its
            jobs); ``greedy``, first fit, by default.
        reservation_depth: with ``backfill: hybrid``, how many blocked jobs get
            reservations.
        backfill_params: parameters of the policy (``compress``: ``hybrid`` and
            ``conservative``).
        fairshare: shares, usage decay and weights of the ``fairshare`` picker
            (``xce_schemas.fairshare``); None: its defaults (equal shares).
    """

    job_pick_plugin: Name = "builtin_fcfs"
    queues: tuple[QueueSpec, ...] = ()
    preempt_timeout_rounds: Annotated[int, Strict(), Field(ge=1, le=1_000_000)] = 5
    # Left out at their defaults, so a greedy configuration is written as before
    # backfill (older recordings' snapshots compare equal; recording._LATER_FIELDS).
    backfill: BackfillName = Field(
        default=BackfillPolicy.GREEDY.value, exclude_if=lambda value: value == "greedy"
    )
    reservation_depth: ReservationDepth | None = Field(
        default=None, exclude_if=lambda value: value is None, validate_default=True
    )
    backfill_params: BackfillParams = Field(
        default_factory=FrozenParams, exclude_if=lambda value: not value
    )
    fairshare: FairShareConfig | None = Field(default=None, exclude_if=lambda value: value is None)

    _hybrid_depth = field_validator("reservation_depth")(_depth_only_with_hybrid)


class JobRequest(WireModel):
    """A job as its user asks for it, before it has a submission time: what a
    controller sends (``xce_schemas.controller``); ``JobSpec`` adds the time.

    Attributes:
        jobid: the job's id, unique in the cluster.
        queue: the queue it is submitted to.
        user: the submitting user.
        project: the project charged, if any.
        priority: job priority inside its queue (higher first; LSF ``-sp``).
        tasks: number of tasks (slots) requested, ``maxTasks``.
        resreq: the resource requirement string (LSF ``-R``); empty for none.
        run_limit_s: how long the job may run, s of running (LSF ``bsub -W``, Slurm
            ``--time``; its user's estimate, which backfilling trusts); None: not
            given, its queue's ``run_limit_s`` applies, else it is unbounded.
    """

    jobid: JobId
    queue: Name
    user: Name = "nobody"
    project: Name | None = None
    priority: Priority = 0
    tasks: Annotated[Count, Field(ge=1)] = 1
    resreq: str = Field(default="", max_length=65536)
    run_limit_s: RunLimitS | None = None


class JobSpec(JobRequest):
    """A submitted job (``xce_job_t``): the ``JobRequest`` fields (``jobid``,
    ``queue``, ``user``, ``project``, ``priority``, ``tasks``, ``resreq``,
    ``run_limit_s``) and
    ``submit_ts``, its submission time, ns, which is also its queue time.
    """

    submit_ts: TimestampNs


class HostSpec(WireModel):
    """A host (``xce_worker_t``).

    Attributes:
        name: host name (the ``hname`` resource of select expressions).
        slots: job slots the host offers (LSF ``MXJ``; ``maxslots``).
        status: whether it takes new jobs.
        type: host type (``type``; LSF's ``type==any`` matches every host).
        model: host model (``model``).
        max_mem_mb: memory jobs may reserve, MB (``maxmem``; ``mem`` is what is left).
    """

    name: Name
    slots: Count
    status: HostStatus = HostStatus.OK
    type: Name = "LINUX"
    model: Name = "generic"
    max_mem_mb: float = Field(default=0.0, ge=0, le=2.0**53)


class ReserveMethod(StrEnum):
    """How an ``rusage`` amount of a resource is multiplied for a parallel job."""

    PER_TASK = "per_task"
    PER_HOST = "per_host"
    PER_JOB = "per_job"


class ResourceType(StrEnum):
    """The value type of a resource."""

    NUMERIC = "numeric"
    STRING = "string"
    BOOLEAN = "boolean"


class ResourceDef(WireModel):
    """A resource definition (``xce_resource_t``; LSF ``lsf.shared``).

    Attributes:
        name: resource name.
        value_type: numeric, string or boolean.
        consumable: whether jobs use it up (``rusage`` debits it; numeric only).
        shared: cluster-wide (a licence pool) rather than per host.
        reserve_method: how an ``rusage`` amount multiplies (LSF ``lsb.resources``
            ReservationUsage): per task, per host of the allocation, or once per job;
            None: per job for a shared resource, per task for a host resource.
        description: free text for operators.
    """

    name: Name
    value_type: ResourceType = ResourceType.NUMERIC
    consumable: StrictBool = False
    shared: StrictBool = False
    reserve_method: ReserveMethod | None = None
    description: str = ""


class ResVal(WireModel):
    """A resource's value on a host (``host`` None: cluster-wide shared value)."""

    resource: Name
    host: Name | None = None
    value: float | bool | str


class JobRusageEntry(WireModel):
    """One measured usage of a running job (``mem`` in MB, ``cpu_time`` in s, ...)."""

    resource: Name
    value: float


# --- payloads ---------------------------------------------------------------------


class ConfigPushPayload(WireModel):
    """``CONFIG_PUSH``: the full configuration."""

    config: SchedulerConfig


class JobsPushPayload(WireModel):
    """``JOBS_PUSH``: newly submitted jobs, in submission order."""

    jobs: tuple[JobSpec, ...] = Field(min_length=1)


class WorkersPushPayload(WireModel):
    """``WORKERS_PUSH``: hosts added or updated (upsert by name)."""

    hosts: tuple[HostSpec, ...] = Field(min_length=1)


class ResourcesPushPayload(WireModel):
    """``RESOURCES_PUSH``: resource definitions added or updated (upsert by name)."""

    resources: tuple[ResourceDef, ...] = Field(min_length=1)


class ResvalsPayload(WireModel):
    """``RESVALS_FULL`` (replaces every value) or ``RESVALS_DELTA`` (upserts these)."""

    values: tuple[ResVal, ...] = ()


class JobStateChangePayload(WireModel):
    """``JOB_STATE_CHANGE``: a job started, finished, failed, was suspended or requeued."""

    jobid: JobId
    state: JobState


class JobUpdatePayload(WireModel):
    """``JOB_UPDATE``: changed fields of a job (None: unchanged); ``run_limit_s`` is
    the job's own run limit, s (LSF ``bmod -W``), also of a running job."""

    jobid: JobId
    priority: Priority | None = None
    queue: Name | None = None
    run_limit_s: RunLimitS | None = None


class QueueUpdatePayload(WireModel):
    """``QUEUE_UPDATE``: one queue added or redefined."""

    queue: QueueSpec


class JobRusagePayload(WireModel):
    """``JOB_RUSAGE``: measured usage of a running job (replaces the previous one)."""

    jobid: JobId
    rusage: tuple[JobRusageEntry, ...] = ()


class BeginRoundPayload(WireModel):
    """``BEGIN_ROUND``: no payload beyond the event's ``ts``."""


#: Every round's payload: one shared value (frozen, with no field).
_NO_PAYLOAD = BeginRoundPayload()


# --- events -----------------------------------------------------------------------
# The event envelopes are plain slotted classes (stdlib dataclasses), as decisions
# and allocation records are: an in-process driver makes one for every change it
# pushes, from values it already holds. Pydantic validates an event where it crosses
# a boundary (``parse_event``, the bus, a recording, ``push_event`` given a JSON
# object) and writes it (``dump_event``): the same bytes as before. Their payloads
# stay pydantic models, checked where they are made. Envelopes hash by value and
# nothing may change one once made (why they are not frozen: ``xce_schemas.alloc``).


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class ConfigPush:
    """Full configuration push (startup or change)."""

    __pydantic_config__ = PLAIN_WIRE

    type: Literal["CONFIG_PUSH"] = "CONFIG_PUSH"
    ts: TimestampNs
    payload: ConfigPushPayload


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class JobsPush:
    """Newly submitted jobs."""

    __pydantic_config__ = PLAIN_WIRE

    type: Literal["JOBS_PUSH"] = "JOBS_PUSH"
    ts: TimestampNs
    payload: JobsPushPayload


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class WorkersPush:
    """Host list update."""

    __pydantic_config__ = PLAIN_WIRE

    type: Literal["WORKERS_PUSH"] = "WORKERS_PUSH"
    ts: TimestampNs
    payload: WorkersPushPayload


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class ResourcesPush:
    """Resource definitions."""

    __pydantic_config__ = PLAIN_WIRE

    type: Literal["RESOURCES_PUSH"] = "RESOURCES_PUSH"
    ts: TimestampNs
    payload: ResourcesPushPayload


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class ResvalsFull:
    """Full resource-value snapshot."""

    __pydantic_config__ = PLAIN_WIRE

    type: Literal["RESVALS_FULL"] = "RESVALS_FULL"
    ts: TimestampNs
    payload: ResvalsPayload


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class ResvalsDelta:
    """Incremental resource-value update."""

    __pydantic_config__ = PLAIN_WIRE

    type: Literal["RESVALS_DELTA"] = "RESVALS_DELTA"
    ts: TimestampNs
    payload: ResvalsPayload


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class JobStateChange:
    """Job started / exited / failed / suspended / requeued."""

    __pydantic_config__ = PLAIN_WIRE

    type: Literal["JOB_STATE_CHANGE"] = "JOB_STATE_CHANGE"
    ts: TimestampNs
    payload: JobStateChangePayload


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class JobUpdate:
    """In-place job field update."""

    __pydantic_config__ = PLAIN_WIRE

    type: Literal["JOB_UPDATE"] = "JOB_UPDATE"
    ts: TimestampNs
    payload: JobUpdatePayload


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class QueueUpdate:
    """Queue definition update."""

    __pydantic_config__ = PLAIN_WIRE

    type: Literal["QUEUE_UPDATE"] = "QUEUE_UPDATE"
    ts: TimestampNs
    payload: QueueUpdatePayload


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class JobRusage:
    """Job resource-usage update."""

    __pydantic_config__ = PLAIN_WIRE

    type: Literal["JOB_RUSAGE"] = "JOB_RUSAGE"
    ts: TimestampNs
    payload: JobRusagePayload


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class BeginRound:
    """Trigger a scheduling round (session) at logical time ``ts``."""

    __pydantic_config__ = PLAIN_WIRE

    type: Literal["BEGIN_ROUND"] = "BEGIN_ROUND"
    ts: TimestampNs
    payload: BeginRoundPayload = _NO_PAYLOAD


CoreEvent = Annotated[
    ConfigPush
    | JobsPush
    | WorkersPush
    | ResourcesPush
    | ResvalsFull
    | ResvalsDelta
    | JobStateChange
    | JobUpdate
    | QueueUpdate
    | JobRusage
    | BeginRound,
    Field(discriminator="type"),
]

#: The event type names, in the order of Req 10 AC 4.
EVENT_TYPES: tuple[str, ...] = (
    "CONFIG_PUSH",
    "JOBS_PUSH",
    "WORKERS_PUSH",
    "RESOURCES_PUSH",
    "RESVALS_FULL",
    "RESVALS_DELTA",
    "JOB_STATE_CHANGE",
    "JOB_UPDATE",
    "QUEUE_UPDATE",
    "JOB_RUSAGE",
    "BEGIN_ROUND",
)

EVENT_ADAPTER: TypeAdapter[CoreEvent] = TypeAdapter(CoreEvent)


def parse_event(data: dict[str, Any] | str | bytes) -> CoreEvent:
    """Validate a decoded JSON object (or JSON text) as one core event.

    Raises:
        pydantic.ValidationError: naming the event type and the offending field.
    """
    if isinstance(data, str | bytes):
        return EVENT_ADAPTER.validate_json(data)
    return EVENT_ADAPTER.validate_python(data)


def dump_event(event: CoreEvent) -> bytes:
    """An event's JSON, as the wire (and every recording) has it: a replay line's
    ``{"type": ..., "ts": ..., "payload": {...}}``."""
    return EVENT_ADAPTER.dump_json(event)
