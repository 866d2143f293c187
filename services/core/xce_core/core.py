"""``SchedCore``: the passive, deterministic scheduling core (Req 1, Req 10 AC 1-6).

The core takes typed events through ``push_event`` and gives decisions through the
``on_decision`` callback; it has no I/O, no threads and no clock but ``clock``. A
``BEGIN_ROUND`` event runs one scheduling session synchronously (Req 1 AC 4):

    begin_session; while (job = next_job()): allocate → DISPATCH or PEND; end_session

The core knows nothing of how jobs are ordered (the picker's business) and nothing
of which mode it runs in: simulation, replay and live drive the same object.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import Any, cast, get_args

from pydantic import ValidationError
from xce_schemas import (
    EVENT_TYPES,
    BeginRound,
    ConfigPush,
    CoreEvent,
    Decision,
    JobAlloc,
    JobRusage,
    JobsPush,
    JobState,
    JobStateChange,
    JobUpdate,
    PendingCode,
    PendingReason,
    QueueSpec,
    QueueStatus,
    QueueUpdate,
    ResourcesPush,
    Resume,
    ResVal,
    ResvalsDelta,
    ResvalsFull,
    SchedulerConfig,
    WorkersPush,
    parse_event,
)
from xce_schemas.errors import describe
from xce_schemas.events import ResourceType

from xce_core.alloc.job import allocate_job
from xce_core.alloc.outcome import Placement, Reservation, Unsatisfied
from xce_core.alloc.primary import NeverMemo, allocate_primary
from xce_core.alloc.records import build_records
from xce_core.backfill import PlanMemo, Policy, ReservationBook, backfills
from xce_core.backfill.policy import in_domain, make_policy
from xce_core.clock import Clock
from xce_core.errors import ConfigError, CoreError, EventError, PluginError, SessionCancelled
from xce_core.in_tree import in_tree_registry
from xce_core.pending import is_cluster_wide, make_pending_reason, occupancy_reasons, reason_for
from xce_core.plugins import (
    HostInfo,
    JobInfo,
    JobPicker,
    ParkingPicker,
    PickerConfig,
    PluginRegistry,
    QueueInfo,
)
from xce_core.prediction import NoEstimate, expected_start, no_estimate
from xce_core.preempt.preemptor import Preemptor
from xce_core.resreq.model import is_plain
from xce_core.resreq.parser import parse_resreq
from xce_core.session import Session, SessionState
from xce_core.state import (
    BUILTIN_RESOURCES,
    EPSILON,
    ClusterState,
    Job,
    Queue,
    entries,
)

log = logging.getLogger("xce_core")

DecisionCallback = Callable[[Decision], object]

_FINISHED = (JobState.DONE, JobState.EXIT)

#: Events that change nothing a reservation rests on (``ClusterState.plan_version``).
_PLAN_NEUTRAL = frozenset({"JOBS_PUSH", "BEGIN_ROUND", "JOB_RUSAGE"})

#: Events after which a parked job's outcome still rests only on the free slots
#: (``plugins.ParkingPicker``): jobs arrive, change state (freeing or taking slots;
#: a job leaving or re-entering pending is unparked by the picker's own hooks),
#: change (``on_job_update`` re-places them), report usage, or resource values move
#: (a parked job reads none); a configuration push builds a new picker. Every other
#: event (hosts, queues, resource definitions) unparks every job.
_PARK_NEUTRAL = frozenset(
    {
        "JOBS_PUSH",
        "BEGIN_ROUND",
        "JOB_RUSAGE",
        "JOB_STATE_CHANGE",
        "JOB_UPDATE",
        "RESVALS_FULL",
        "RESVALS_DELTA",
        "CONFIG_PUSH",
    }
)

#: The eleven event model classes (the members of the ``CoreEvent`` union).
EVENT_CLASSES: tuple[type, ...] = get_args(get_args(CoreEvent)[0])


def _pickers_named(config: SchedulerConfig) -> tuple[str, tuple[tuple[str, str | None], ...]]:
    """The global picker a configuration names and each queue's own (None: none)."""
    return (config.job_pick_plugin, tuple((q.name, q.job_pick_plugin) for q in config.queues))


def _check_routed(picker: JobPicker, queue: str, own: str) -> None:
    """Refuse a queue naming a picker of its own (``own``) under a global picker that
    serves every queue itself (``PickerBase.routes_queues`` False): the name would
    be dropped silently.

    Raises:
        ConfigError: naming the queue, its picker and the global one.
    """
    if not getattr(picker, "routes_queues", False):
        raise ConfigError(
            f"queue {queue!r} names picker {own!r}, but the global picker {picker.name!r} "
            "serves every queue itself (only a SortedPicker serves a queue through its own "
            "picker)"
        )


def _reject(event_type: str, where: str, why: str) -> EventError:
    return EventError(f"{event_type} rejected: {where}: {why}")


def _validation_error(data: Mapping[str, Any], exc: ValidationError) -> EventError:
    """Turn pydantic's report into one line naming the event type and field."""
    event_type = data.get("type")
    known = ", ".join(EVENT_TYPES)
    if "type" not in data:
        return EventError(f"event rejected: type: missing; expected one of {known}")
    if event_type not in EVENT_TYPES:
        return EventError(
            f"event rejected: type: {event_type!r} is not an event type; expected one of {known}"
        )
    return EventError(f"{event_type} rejected: {describe(exc, skip=1, default='event')}")


#: Not yet looked at (a queue's hold this session).
_UNSET: Any = object()


class _View:
    """The read-only ``CoreView`` plugins get."""

    __slots__ = ("_core",)

    def __init__(self, core: SchedCore) -> None:
        self._core = core

    def now(self) -> int:
        return self._core.clock.now()

    def job(self, jobid: int) -> JobInfo | None:
        return self._core.state.jobs.get(jobid)

    def queue(self, name: str) -> QueueInfo | None:
        return self._core.state.queues.get(name)

    def hosts(self) -> Sequence[HostInfo]:
        return tuple(self._core.state.host_order)

    def wake_slots(self) -> int:
        core = self._core
        book = None if core._session is None else core._session.book
        if book is None:
            return core.state.free_index.total_free
        return book.wake_slots()

    def reserved_room(self) -> tuple[int, int, int, int]:
        core = self._core
        book = None if core._session is None else core._session.book
        return (-1, 0, 0, 0) if book is None else book.reserved_room()

    def blocks(self, domain: int) -> bool:
        core = self._core
        book = None if core._session is None else core._session.book
        return book is not None and any(
            core.domain_number(blocked) == domain for blocked in book.blocked
        )

    def check_cancel(self) -> None:
        core = self._core
        if core.cancellable and core._session is not None and core._session.token.cancelled:
            raise SessionCancelled


class SchedCore:
    """The scheduling core (``xce_sched_core_t``).

    Args:
        on_decision: called with every decision, in order (Req 10 AC 5); the only
            way out of the core.
        prng_seed: seeds the core's PRNG, the only source of randomness (Req 10 AC 6).
        registry: the plugins the configuration may name; default: the built-ins.
            The composition root merges entry-point plugins in before passing it.
        clock: the virtual clock; default a discrete clock (speed 0) that jumps to
            each event's ts.
        unsatisfiable_cache: keep the session's unsatisfiable-request cache (Req 7);
            False only to measure what it saves (decisions are the same either way).
        incremental: park jobs whose outcome provably cannot change (DESIGN
            "Incremental rounds") with a picker that can (``ParkingPicker``); False
            gives every pending job its turn every round, as the tests' reference
            (decisions and the picker's hooks are the same either way).

    Raises:
        ConfigError: the registry lacks the default picker ``builtin_fcfs``.

    Example:
        >>> decisions = []
        >>> core = SchedCore(on_decision=decisions.append, prng_seed=1)
    """

    def __init__(
        self,
        on_decision: DecisionCallback,
        prng_seed: int = 0,
        *,
        registry: PluginRegistry | None = None,
        clock: Clock | None = None,
        unsatisfiable_cache: bool = True,
        incremental: bool = True,
    ) -> None:
        self.on_decision = on_decision
        self.prng_seed = prng_seed
        self.prng = random.Random(prng_seed)
        self.registry = registry if registry is not None else in_tree_registry()
        self.clock = clock if clock is not None else Clock()
        self.state = ClusterState()
        self.resolve_backfill()
        self.view = _View(self)
        self.last_ts = 0
        self.events = 0
        self.cache_hits = 0  # jobs pended by the unsatisfiable-request cache (a metric)
        self.unsatisfiable_cache = unsatisfiable_cache
        self.incremental = incremental
        self.preemptor = Preemptor(self.state, self.registry, self.view)
        self._session: SessionState | None = None
        self.cancellable = False
        # Pending reasons depend only on the hosts' shape: one shared object per code.
        self._reasons: dict[tuple[PendingCode, tuple[str, ...], str], PendingReason] = {}
        self._reasons_version = -1
        # What no load changes, known of each request (alloc.primary.NeverMemo), while
        # the hosts and resource values keep their shape.
        self.never: NeverMemo = {}
        self._never_version = -1
        # What a session's planning leaves the next (caches, not state).
        self._plan_memo = PlanMemo()
        # Backfill policy domains by number, for the jobs parked behind one.
        self._domains: dict[str | None, int] = {}
        self.picker: JobPicker = self._make_picker(self.state.config.job_pick_plugin, None)
        self.parking: ParkingPicker | None = self._parking_of(self.picker)
        self._handlers: dict[str, Callable[[Any], None]] = {
            "CONFIG_PUSH": self._on_config_push,
            "JOBS_PUSH": self._on_jobs_push,
            "WORKERS_PUSH": self._on_workers_push,
            "RESOURCES_PUSH": self._on_resources_push,
            "RESVALS_FULL": self._on_resvals_full,
            "RESVALS_DELTA": self._on_resvals_delta,
            "JOB_STATE_CHANGE": self._on_job_state_change,
            "JOB_UPDATE": self._on_job_update,
            "QUEUE_UPDATE": self._on_queue_update,
            "JOB_RUSAGE": self._on_job_rusage,
            "BEGIN_ROUND": self._on_begin_round,
        }

    # --- the interface --------------------------------------------------------------

    def push_event(self, event: CoreEvent | Mapping[str, Any]) -> None:
        """Apply one event (Req 10 AC 4); ``BEGIN_ROUND`` runs a whole session.

        Args:
            event: an ``xce_schemas`` event model, or a decoded JSON object that is
                validated into one.

        Raises:
            EventError: the event is malformed or inconsistent with the state (unknown
                job or queue, duplicate jobid, ts earlier than the previous event, an
                impossible state change, ...). It names the event type and field, and
                nothing changed.
            ConfigError: a configuration names an unknown plugin; nothing changed.
        """
        # An event model first: the common case, and a cheaper test than the
        # abstract ``Mapping``'s.
        if not isinstance(event, EVENT_CLASSES):
            if not isinstance(event, Mapping):
                raise EventError(
                    "event rejected: expected an event model or a JSON object, "
                    f"not {type(event).__name__}"
                )
            data = event
            try:
                event = parse_event(dict(data))
            except ValidationError as exc:
                raise _validation_error(data, exc) from None
        event = cast(CoreEvent, event)  # (a tuple of classes does not narrow for mypy)
        if event.ts < self.last_ts:
            raise _reject(event.type, "ts", f"{event.ts} is earlier than {self.last_ts}")
        self._handlers[event.type](event)
        if event.type not in _PLAN_NEUTRAL:
            self.state.plan_version += 1
        if event.type not in _PARK_NEUTRAL and self.parking is not None:
            self.parking.unpark_all()
        self.last_ts = event.ts
        self.clock.observe(event.ts)
        self.events += 1

    def domain_number(self, domain: str | None) -> int:
        """The number of a backfill policy domain (``backfill.Policy.domain``: the
        queue that overrides the policy, or None), the same for the core's life: a
        job held back under ``strict`` is parked behind its domain's number
        (``ParkingPicker.park``)."""
        return self._domains.setdefault(domain, len(self._domains))

    def explain(self, jobid: int) -> PendingReason | None:
        """Why a pending job pends now, with the per-host detail PEND decisions leave
        out (occupancy: ``HOST_NOT_ENOUGH_SLOTS`` for every ok host without a free
        slot). None when the job is not pending or no round has considered it yet."""
        job = self.state.jobs.get(jobid)
        if job is None or job.state is not JobState.PEND or job.pend_reason is None:
            return None
        last = job.pend_reason
        if not last.hosts and is_cluster_wide(last.main):
            return last  # not about any host: a queue limit, a bad request, ...
        hosts = occupancy_reasons(self.state.host_order, 1)
        return make_pending_reason(last.main, hosts, last.resources, last.detail)

    def expected_start(self, jobid: int) -> Reservation | None:
        """When and where a pending job is expected to start: its reservation from the
        last session (``start_ts`` ns, ``hosts`` as ``(host, slots)``, ``running``:
        how many running jobs' run limits the estimate rests on). None when the job
        is not pending or the last session made it no reservation
        (``no_expected_start`` says why)."""
        return expected_start(self.state, jobid)

    def no_expected_start(self, jobid: int) -> NoEstimate | None:
        """Why the last session predicted no start for a pending job (its policy is
        ``greedy``, the planner found no instant in view, its policy's reservation
        depth went to other jobs, or it was not reserved for at all:
        ``xce_core.prediction``). None when it has an expected start, is not
        pending, or no session has considered it yet."""
        return no_estimate(self.state, jobid)

    def cancel_session(self) -> None:
        """Cancel the running session at its next cancellation point (no-op between
        sessions). Jobs already decided keep their decisions; the rest get none."""
        if self._session is not None:
            self._session.token.cancel()

    @property
    def session(self) -> SessionState | None:
        """The running session's scratch state, or None between sessions."""
        return self._session

    # --- configuration --------------------------------------------------------------

    def _make_picker(self, name: str, queue: str | None) -> JobPicker:
        """A new picker of the registered ``name`` (for ``queue``'s override, or the
        global one when None).

        Raises:
            ConfigError: ``name`` is unknown, or its factory failed (a third-party
                picker's own error, named with it); nothing changed.
        """
        factory = self.registry.pickers.get(name)
        try:
            return factory(PickerConfig(name, queue, self._make_picker), self.view)
        except CoreError:
            raise  # (an override's unknown name, or the core's own words already)
        except Exception as exc:
            raise ConfigError(
                f"picker {name!r} could not be made: {type(exc).__name__}: {exc}"
            ) from exc

    def _feed_picker(self, picker: JobPicker, config: SchedulerConfig) -> None:
        """Give a new picker the whole current state through its hooks."""
        picker.on_config(config)
        for queue in self.state.queues.values():
            picker.on_queue_update(queue)
        for job in self.state.jobs.values():
            if job.state is JobState.PEND:
                picker.on_job_push(job)

    def _on_config_push(self, event: ConfigPush) -> None:
        config = event.payload.config
        names = [queue.name for queue in config.queues]
        for index, name in enumerate(names):
            if name in names[:index]:
                raise _reject(event.type, f"payload.config.queues[{index}]", f"duplicate {name!r}")
        for job in self.state.jobs.values():
            if job.queue not in names:
                raise _reject(
                    event.type,
                    "payload.config.queues",
                    f"queue {job.queue!r} is dropped but job {job.jobid} is in it",
                )
        for index, spec in enumerate(config.queues):
            self._check_queue(event.type, f"payload.config.queues[{index}]", spec, names)
        old_queues, old_config = self.state.queues, self.state.config
        # A picker with history of its own (a fair share's usage) keeps it over a
        # push that names the same pickers: the new one gets the old one's state.
        pickers = _pickers_named(old_config)
        history = self.picker.save_state() if pickers == _pickers_named(config) else None
        self.state.queues = {spec.name: Queue.from_spec(spec) for spec in config.queues}
        self.state.config = config
        try:
            self.resolve_backfill()
            self.rebuild_picker()
            if history is not None:
                self.picker.load_state(history)
        except ConfigError:
            self.state.queues, self.state.config = old_queues, old_config
            self.resolve_backfill()
            raise
        self.state.reindex_deadlines()  # the queues' run limits may have changed

    def resolve_backfill(self, event_type: str = "CONFIG_PUSH") -> None:
        """Make each backfill policy domain's policy from the configuration through the
        registry (``ClusterState.policies``): the scheduler's, and each queue's that
        sets its own. A configuration push, a queue update and a snapshot load do it.

        Raises:
            ConfigError: an unknown policy, or a depth or parameter its factory
                refuses, naming ``event_type`` and the field; nothing changed.
        """
        state, config = self.state, self.state.config
        where = "payload.config"
        policies: dict[str | None, Policy] = {
            None: self._backfill_policy(config, None, event_type, f"{where}.backfill")
        }
        for index, queue in enumerate(state.queues.values()):
            if queue.backfill is not None:
                field = f"{where}.queues[{index}].backfill"
                policies[queue.name] = self._backfill_policy(queue, queue.name, event_type, field)
        state.policies = policies

    def _backfill_policy(
        self,
        source: SchedulerConfig | Queue | QueueSpec,
        domain: str | None,
        event_type: str,
        where: str,
    ) -> Policy:
        """The policy ``source`` names with its depth and parameters, in ``domain``.

        Raises:
            ConfigError: as ``resolve_backfill``, naming ``event_type`` and ``where``.
        """
        assert source.backfill is not None
        try:
            factory = self.registry.backfill_policies.get(source.backfill)
            params = dict(source.backfill_params)
            policy = make_policy(factory, source.backfill, source.reservation_depth, params)
        except ConfigError as exc:
            raise ConfigError(f"{event_type} rejected: {where}: {exc}") from None
        return in_domain(policy, domain)

    def rebuild_picker(self) -> None:
        """Replace the picker by a new one of the configured name, fed the current state.

        A configuration push (and a snapshot load) does this, so the picker's order
        depends only on the core's state and on the picker's saved state
        (``save_state``: a fair share's usage), which a push hands on.

        Raises:
            ConfigError: the configuration names an unknown picker; nothing changed.
        """
        config = self.state.config
        picker = self._make_picker(config.job_pick_plugin, None)
        try:
            for queue in self.state.queues.values():
                if queue.job_pick_plugin is not None:
                    _check_routed(picker, queue.name, queue.job_pick_plugin)
            self._feed_picker(picker, config)
        except ConfigError:
            picker.fini()
            raise
        self.picker.fini()
        self.picker = picker
        self.parking = self._parking_of(picker)

    def _parking_of(self, picker: JobPicker) -> ParkingPicker | None:
        """``picker`` when it parks jobs and rounds are incremental, else None."""
        parks = self.incremental and callable(getattr(picker, "park", None))
        return cast(ParkingPicker, picker) if parks else None

    def _check_queue(
        self, event_type: str, where: str, spec: QueueSpec, queues: Collection[str]
    ) -> None:
        """Refuse a queue definition naming an unknown preemption policy (ConfigError)
        or preempting a queue not among ``queues`` (EventError)."""
        if spec.preempt_policy is not None:
            self.registry.preempt_policies.get(spec.preempt_policy)
        for index, name in enumerate(spec.preemptible_queues):
            if name not in queues:
                raise _reject(
                    event_type, f"{where}.preemptible_queues[{index}]", f"unknown queue {name!r}"
                )

    def _on_queue_update(self, event: QueueUpdate) -> None:
        spec = event.payload.queue
        if spec.job_pick_plugin is not None:
            self.registry.pickers.get(spec.job_pick_plugin)  # ConfigError, nothing changed
            _check_routed(self.picker, spec.name, spec.job_pick_plugin)
        self._check_queue(event.type, "payload.queue", spec, {*self.state.queues, spec.name})
        if spec.backfill is not None:  # ConfigError, nothing changed
            self._backfill_policy(spec, spec.name, event.type, "payload.queue.backfill")
        queue = self.state.queues.get(spec.name)
        if queue is None:
            queue = self.state.queues[spec.name] = Queue.from_spec(spec)
        else:
            queue.update(spec)
        self.state.reindex_deadlines(j for j in self.state.running.values() if j.queue == spec.name)
        self.resolve_backfill(event.type)
        self.picker.on_queue_update(queue)

    # --- hosts and resources --------------------------------------------------------

    def _on_workers_push(self, event: WorkersPush) -> None:
        hosts = event.payload.hosts
        seen: dict[str, None] = {}
        for index, spec in enumerate(hosts):
            where = f"payload.hosts[{index}]"
            if spec.name in seen:
                raise _reject(event.type, where, f"host {spec.name!r} listed twice")
            seen[spec.name] = None
            host = self.state.hosts.get(spec.name)
            if host is not None and spec.slots < host.used:
                raise _reject(
                    event.type,
                    f"{where}.slots",
                    f"host {spec.name!r} cannot shrink to {spec.slots} slots "
                    f"while jobs hold {host.used}",
                )
            reserved_mem = 0.0 if host is None else host.reserved.get("mem", 0.0)
            if spec.max_mem_mb < reserved_mem:
                raise _reject(
                    event.type,
                    f"{where}.max_mem_mb",
                    f"host {spec.name!r} cannot shrink to {spec.max_mem_mb:g} MB "
                    f"while jobs reserve {reserved_mem:g} MB",
                )
        for spec in hosts:
            existing = self.state.hosts.get(spec.name)
            if existing is None:
                self.state.add_host(
                    spec.name, spec.slots, spec.status, spec.type, spec.model, spec.max_mem_mb
                )
            else:
                self.state.set_host(
                    existing, spec.slots, spec.status, spec.type, spec.model, spec.max_mem_mb
                )

    def _on_resources_push(self, event: ResourcesPush) -> None:
        names = [resource.name for resource in event.payload.resources]
        for index, resource in enumerate(event.payload.resources):
            where = f"payload.resources[{index}]"
            if resource.name in names[:index]:
                raise _reject(event.type, where, f"duplicate {resource.name!r}")
            if resource.name in BUILTIN_RESOURCES:
                raise _reject(event.type, f"{where}.name", f"{resource.name!r} is built in")
            if resource.consumable and resource.value_type is not ResourceType.NUMERIC:
                raise _reject(
                    event.type, f"{where}.consumable", "only a numeric resource is consumable"
                )
        for resource in event.payload.resources:
            self.state.resources[resource.name] = resource
        self.state.forget_values()  # a resource turned consumable reads as load

    def _check_resvals(self, event_type: str, values: tuple[ResVal, ...]) -> None:
        for index, val in enumerate(values):
            where = f"payload.values[{index}]"
            resource = self.state.resources.get(val.resource)
            if resource is None:
                raise _reject(event_type, f"{where}.resource", f"unknown resource {val.resource!r}")
            if resource.shared and val.host is not None:
                raise _reject(event_type, f"{where}.host", f"{val.resource!r} is shared: no host")
            if not resource.shared and val.host is None:
                raise _reject(event_type, f"{where}.host", f"{val.resource!r} needs a host")
            if val.host is not None and val.host not in self.state.hosts:
                raise _reject(event_type, f"{where}.host", f"unknown host {val.host!r}")
            expected = {
                ResourceType.NUMERIC: (int, float),
                ResourceType.BOOLEAN: (bool,),
                ResourceType.STRING: (str,),
            }[resource.value_type]
            numeric_bool = resource.value_type is ResourceType.NUMERIC and isinstance(
                val.value, bool
            )
            if not isinstance(val.value, expected) or numeric_bool:
                raise _reject(
                    event_type,
                    f"{where}.value",
                    f"{val.resource!r} is {resource.value_type.value}, not {val.value!r}",
                )

    def _on_resvals_full(self, event: ResvalsFull) -> None:
        self._check_resvals(event.type, event.payload.values)
        self.state.resvals = {(v.resource, v.host or ""): v.value for v in event.payload.values}
        self.state.forget_values()

    def _on_resvals_delta(self, event: ResvalsDelta) -> None:
        self._check_resvals(event.type, event.payload.values)
        for val in event.payload.values:
            self.state.resvals[(val.resource, val.host or "")] = val.value
        self.state.forget_values()

    # --- jobs -----------------------------------------------------------------------

    def _job(self, event_type: str, jobid: int) -> Job:
        job = self.state.jobs.get(jobid)
        if job is None:
            raise _reject(event_type, "payload.jobid", f"unknown job {jobid}")
        return job

    def _on_jobs_push(self, event: JobsPush) -> None:
        batch: dict[int, None] = {}
        for index, spec in enumerate(event.payload.jobs):
            where = f"payload.jobs[{index}]"
            if spec.jobid in self.state.jobs or spec.jobid in batch:
                raise _reject(event.type, f"{where}.jobid", f"job {spec.jobid} already exists")
            if spec.queue not in self.state.queues:
                raise _reject(event.type, f"{where}.queue", f"unknown queue {spec.queue!r}")
            self._check_open(event.type, f"{where}.queue", spec.queue)
            if spec.submit_ts > event.ts:
                raise _reject(
                    event.type,
                    f"{where}.submit_ts",
                    f"{spec.submit_ts} is later than the event's ts {event.ts}",
                )
            batch[spec.jobid] = None
        for spec in event.payload.jobs:
            job = Job(
                spec.jobid,
                spec.queue,
                spec.user,
                spec.project,
                spec.priority,
                spec.tasks,
                spec.resreq,
                spec.submit_ts,
                spec.submit_ts,
                request=parse_resreq(spec.resreq),
                run_limit_s=spec.run_limit_s,
            )
            self.state.jobs[job.jobid] = job
            self.picker.on_job_push(job)

    def _check_open(self, event_type: str, where: str, name: str) -> None:
        """Refuse a job entering the closed queue ``name`` (LSF: the queue is closed)."""
        if self.state.queues[name].status is QueueStatus.CLOSED:
            raise _reject(event_type, where, f"queue {name!r} is closed to new jobs")

    def _on_job_state_change(self, event: JobStateChange) -> None:
        job = self._job(event.type, event.payload.jobid)
        old, new = job.state, event.payload.state
        if old is new:
            return  # a repeated report (e.g. the controller confirming a start)
        if new is JobState.RUN and old is JobState.PEND:
            raise _reject(
                event.type, "payload.state", f"job {job.jobid} is pending: only DISPATCH starts it"
            )
        if new is JobState.SUSP and old is JobState.PEND:
            raise _reject(
                event.type, "payload.state", f"job {job.jobid} is pending: it cannot be suspended"
            )
        state = self.state
        if new is JobState.RUN:  # resumed (old is SUSP): take its slots again
            self._resume(event.type, job, event.ts)
        elif old is JobState.RUN:
            state.stop(job)  # finished, failed, suspended or requeued: slots back
        if new is JobState.SUSP:
            job.suspend_ts = event.ts
        # Suspended because a preemption asked it to: the core resumes it later.
        state.set_preempted(
            job,
            new is JobState.SUSP
            and (
                job.ignored_preemption
                or any(job.jobid in record.victims for record in state.preemptions.values())
            ),
        )
        if new in _FINISHED:
            del state.jobs[job.jobid]
        elif new is JobState.PEND:
            job.alloc = None
            job.released = frozenset()
            job.queue_ts = event.ts
            job.pend_reason = None
            job.ignored_preemption = False
        if old is JobState.PEND:
            state.preemptions.pop(job.jobid, None)  # a preemptor that left the queue
        job.state = new
        # The event is taken: the picker hears of it at its time (a fair share
        # charges a job's slots up to the instant it ended).
        self.clock.observe(event.ts)
        self.picker.on_job_state_change(job, new)

    def _resume(self, event_type: str, job: Job, ts: int) -> None:
        """The controller resumed a suspended job: it takes its room back.

        Raises:
            EventError: the room is no longer free.
        """
        assert job.alloc is not None, f"job {job.jobid} is suspended without an allocation"
        state = self.state
        # Reservations whose duration ended while it was suspended are not taken again.
        self._expire_reservations(ts // 1_000_000_000)
        for host, name, amount, free in state.needs(job.alloc, skip=job.released):
            if free is None or free + EPSILON < amount:
                where = "in the cluster" if host is None else f"on host {host!r}"
                raise _reject(
                    event_type,
                    "payload.state",
                    f"job {job.jobid} cannot resume: {free or 0:g} {name} free {where}, "
                    f"it needs {amount:g}",
                )
        state.resume(job, ts)

    def _on_job_update(self, event: JobUpdate) -> None:
        payload = event.payload
        job = self._job(event.type, payload.jobid)
        if payload.queue is not None and payload.queue not in self.state.queues:
            raise _reject(event.type, "payload.queue", f"unknown queue {payload.queue!r}")
        if payload.queue is not None and payload.queue != job.queue:
            self._check_open(event.type, "payload.queue", payload.queue)
        if payload.priority is not None:
            job.priority = payload.priority
        if payload.run_limit_s is not None:
            job.run_limit_s = payload.run_limit_s
            self.state.reindex_deadlines([job])
        if payload.queue is not None:
            running = job.state is JobState.RUN
            if running:
                self.state.charge(job, -1)  # its slots count in the new queue from now
            job.queue = payload.queue
            if running:
                self.state.charge(job, 1)
        self.picker.on_job_update(job)

    def _on_job_rusage(self, event: JobRusage) -> None:
        job = self._job(event.type, event.payload.jobid)
        if job.state is JobState.PEND:
            raise _reject(event.type, "payload.jobid", f"job {job.jobid} is not running")
        job.rusage = {entry.resource: entry.value for entry in event.payload.rusage}
        self.clock.observe(event.ts)  # (the picker hears of it at its time)
        self.picker.on_job_rusage(job, job.rusage)

    # --- the session (Req 1 AC 4) ------------------------------------------------------

    def _on_begin_round(self, event: BeginRound) -> None:
        """Run one scheduling session (``xce_core.session``)."""
        self.clock.observe(event.ts)
        state = self.state
        self._expire_reservations(event.ts // 1_000_000_000)
        state.sessions += 1
        session = self._session = SessionState(state.sessions, event.ts)
        # A book when a policy reserves or room may be owed (a preemption in flight,
        # a preempted job to resume); under greedy with nothing owed none: first fit.
        if backfills(state):
            session.book = ReservationBook(
                state,
                event.ts,
                memo=self._plan_memo,
                previous=state.reservations,
            )
        if self._never_version != state.hosts_version:
            self.never.clear()
            self._never_version = state.hosts_version
        try:
            Session(self, session).run()
        finally:
            self._session = None
            book = session.book
            # A job that started this round (a preemptor on its owed room) has
            # no reservation left; a suspended job keeps its resume's.
            state.reservations = (
                {}
                if book is None
                else {
                    r.jobid: r
                    for r in book.reservations
                    if (job := state.jobs.get(r.jobid)) is not None
                    and job.state is not JobState.RUN
                }
            )
            state.unplanned = () if book is None else tuple(book.unplanned)
            if book is not None:
                book.close()

    def allocate(self, job: Job, session: SessionState) -> JobAlloc | Unsatisfied:
        """Allocate ``job`` on the real state and hold what it gets, or say why not
        (the session's allocate step)."""
        state = self.state
        if is_plain(job.request):
            outcome = allocate_primary(
                job, state.host_order, state.free_index, state.capacity, self.view.check_cancel
            )
            if outcome.__class__ is Placement:
                alloc = self._records(job.jobid, outcome, session)
                state.hold(alloc)
                return alloc
            return cast(Unsatisfied, outcome)
        return allocate_job(
            job,
            job.request,
            state,
            self.view.check_cancel,
            partial(self._records, job.jobid, session=session),
            self.never,
        )

    # --- preemption (Req 6) ---------------------------------------------------------

    @property
    def preemptions(self) -> int:
        """PREEMPT decisions made since the core started (a metric, not state)."""
        return self.preemptor.made

    @property
    def preemptions_given_up(self) -> int:
        """Preemptions given up because their victims did not suspend (a metric)."""
        return self.preemptor.given_up

    def resume_preempted(self, session: SessionState) -> None:
        """Resume the preempted jobs whose hosts have room again (RESUME, SIGCONT); a
        session does it first."""
        for job in self.preemptor.resume(session.start_ts):
            self.picker.on_job_state_change(job, JobState.RUN)
            self.on_decision(Resume(ts=session.start_ts, jobid=job.jobid))

    def picker_bug(self, info: JobInfo, job: Job | None) -> PluginError:
        """The error of a picker that offered a job it may not (not pending, or twice
        in one session)."""
        name = self.picker.name
        if job is None or job.state is not JobState.PEND:
            return PluginError(f"picker {name!r} returned job {info.jobid}, which is not pending")
        return PluginError(f"picker {name!r} returned job {job.jobid} twice in one session")

    def _records(self, jobid: int, placement: Placement, session: SessionState) -> JobAlloc:
        """The allocation records of a placement, numbered from the core's instance
        counter and stamped with the session's ``from``."""
        state = self.state
        alloc, state.next_instid = build_records(
            jobid, placement, session.from_s, state.next_instid
        )
        return alloc

    def _expire_reservations(self, now_s: int) -> None:
        """Give back the reservations whose ``rusage`` duration is over (s)."""
        expiries = self.state.expiries
        while expiries and expiries[0][0] <= now_s:
            _, jobid = expiries.pop(0)
            job = self.state.jobs.get(jobid)
            if job is None or job.alloc is None:
                continue
            due = {
                key
                for key, _, item in entries(job.alloc)
                if item.duration >= 0 and item.from_ + item.duration <= now_s
            } - job.released
            if not due:
                continue
            if job.state is JobState.RUN:  # a suspended job holds nothing to give back
                everything = {key for key, _, _ in entries(job.alloc)}
                self.state.release(job.alloc, skip=frozenset(everything - due))
            job.released = job.released | due

    def reason(self, outcome: Unsatisfied) -> PendingReason:
        """The shared reason object for an outcome while the hosts keep their shape
        (the session's decide step pends with it)."""
        version = self.state.hosts_version
        if version != self._reasons_version:
            self._reasons.clear()
            self._reasons_version = version
        key = (outcome.code, outcome.resources, outcome.detail)
        reason = self._reasons.get(key)
        if reason is None:
            reason = self._reasons[key] = reason_for(
                outcome.code, self.state.host_order, outcome.resources, outcome.detail
            )
        return reason
