"""The embedded simulation: a workload, the cluster emulator and the core, in-process.

``run_simulation`` wires a ``SchedCore`` to a ``ClusterEmulator`` (and, when asked, a
``RecordingWriter``) and returns the report and every job's record. No servers, no
wall clock in the loop: virtual time only, so the same input gives the same
decisions, byte for byte.

``read_queue_file`` reads the queue definitions of ``xce-sched simulate --queues``:
a JSON list of ``QueueSpec`` objects (preemption, status, run windows, limits),
which ``scheduler_config`` merges over the queue map's ``name:priority`` queues.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import orjson
from pydantic import TypeAdapter, ValidationError
from xce_core.backfill.policy import make_policy
from xce_core.core import SchedCore
from xce_core.errors import ConfigError
from xce_core.plugins import PluginRegistry
from xce_schemas import (
    BackfillPolicy,
    CoreEvent,
    Decision,
    FairShareConfig,
    HostSpec,
    QueueSpec,
    SchedulerConfig,
)
from xce_schemas.errors import describe

from xce_driver.batch_gc import batch_gc
from xce_driver.cluster.jobs import EmulatorStats, JobRecord
from xce_driver.config_files import read_text
from xce_driver.emulator import ClusterEmulator
from xce_driver.plugins import load_registry
from xce_driver.recording import Recorder, RecordingWriter
from xce_driver.report import Report, backfill_label, summarize
from xce_driver.workloads.mapping import MappedWorkload, MappingError


def host_specs(count: int, slots_per_host: int, mem_mb: float = 0.0) -> tuple[HostSpec, ...]:
    """``count`` hosts named ``h001``, ``h002``, ... (zero-padded to one width), each
    with ``slots_per_host`` slots and ``mem_mb`` MB of memory."""
    width = max(3, len(str(count)))
    return tuple(
        HostSpec(name=f"h{i:0{width}d}", slots=slots_per_host, max_mem_mb=mem_mb)
        for i in range(1, count + 1)
    )


class QueueFileError(ValueError):
    """A ``--queues`` file that cannot be used; one line naming the file, the list
    index and the field: ``q.json: [1].run_limit_s: Input should be ...``."""


_QUEUE_LIST: TypeAdapter[list[object]] = TypeAdapter(list[object])


def read_queue_file(path: str | Path) -> tuple[QueueSpec, ...]:
    """Read queue definitions: a JSON list of ``QueueSpec`` objects (the wire's
    fields: ``name``, ``priority``, ``preemptible_queues``, ``preemptible``,
    ``preempt_policy``, ``status``, ``active``, ``run_windows``, ``max_running``,
    ``user_slot_limit``, ``run_limit_s``, ...), validated as the core validates a
    ``CONFIG_PUSH``.

    Example file::

        [{"name": "urgent", "priority": 100, "preemptible_queues": ["normal"]},
         {"name": "normal", "priority": 30, "preemptible": true, "run_limit_s": 86400}]

    Raises:
        QueueFileError: not JSON, not a list, an entry the schema refuses (naming
            its index and field), or a queue name defined twice.
        OSError: the file cannot be read (``filename`` is its path).
    """
    where = str(path)
    text = read_text(path, QueueFileError)
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise QueueFileError(f"{where}: not JSON: {exc}") from None
    if not isinstance(document, list):
        raise QueueFileError(
            f"{where}: expected a JSON list of queue definitions, not {_json_type(document)}"
        )
    specs: list[QueueSpec] = []
    first: dict[str, int] = {}
    for index, entry in enumerate(document):
        if not isinstance(entry, dict):
            raise QueueFileError(
                f"{where}: [{index}]: expected a queue definition (a JSON object), "
                f"not {_json_type(entry)}"
            )
        try:
            spec = QueueSpec.model_validate(entry)
        except ValidationError as exc:
            raise QueueFileError(f"{where}: [{index}].{describe(exc)}") from None
        if spec.name in first:
            raise QueueFileError(
                f"{where}: [{index}].name: queue {spec.name!r} is defined twice "
                f"(first at [{first[spec.name]}])"
            )
        first[spec.name] = index
        specs.append(spec)
    return tuple(specs)


def _json_type(value: object) -> str:
    """What a JSON value is, with its article: ``an object``, ``a list``, ..."""
    names = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
    }
    return names.get(type(value), "a number")


def scheduler_config(
    workload: MappedWorkload,
    policy: str,
    queues: Sequence[QueueSpec] = (),
    *,
    backfill: str = BackfillPolicy.GREEDY,
    reservation_depth: int | None = None,
    backfill_params: Mapping[str, bool | int] | None = None,
    fairshare: FairShareConfig | None = None,
) -> SchedulerConfig:
    """The configuration pushed first: the picker, the backfill policy, the fair-share
    configuration (``--policy-config``) and the queues.

    The queues are the workload's (queue map) ``name:priority`` queues, in their
    order, each replaced by the definition of the same name in ``queues`` when there
    is one (its priority included); the other ``queues`` follow in their order.

    Raises:
        pydantic.ValidationError: a reservation depth without ``hybrid``, or
            ``hybrid`` without one.
    """
    given = {spec.name: spec for spec in queues}
    merged = [
        given.get(name, QueueSpec(name=name, priority=prio))
        for name, prio in workload.queues.items()
    ]
    merged += [spec for spec in queues if spec.name not in workload.queues]
    return SchedulerConfig(
        job_pick_plugin=policy,
        queues=tuple(merged),
        backfill=backfill,
        reservation_depth=reservation_depth,
        backfill_params=dict(backfill_params or {}),
        fairshare=fairshare,
    )


def check_queues(workload: MappedWorkload, config: SchedulerConfig) -> None:
    """Every job's queue is defined by the configuration.

    Raises:
        MappingError: naming the first job (in submit order) whose queue is not.
    """
    names = {queue.name for queue in config.queues}
    for job in workload.jobs:
        if job.queue not in names:
            known = ", ".join(queue.name for queue in config.queues) or "none"
            raise MappingError(
                f"job {job.jobid} is mapped to queue {job.queue!r}, which no queue "
                f"definition gives (defined: {known})"
            )


def check_queue_spec(spec: QueueSpec, names: Sequence[str], registry: PluginRegistry) -> None:
    """Check one queue definition of a configuration whose queues are ``names``:
    the picker and preemption policy it names are registered, and every queue it
    may preempt is among ``names``. The message starts with the field at fault
    (``job_pick_plugin: ...``, ``preemptible_queues[1]: ...``): the caller says
    which definition.

    Raises:
        ConfigError: an unknown picker or preemption policy (the known ones listed).
        MappingError: a queue to preempt that no definition gives.
    """
    plugins = (
        ("job_pick_plugin", spec.job_pick_plugin, registry.pickers),
        ("preempt_policy", spec.preempt_policy, registry.preempt_policies),
    )
    for field, name, known in plugins:
        if name is not None:
            try:
                known.get(name)
            except ConfigError as exc:
                raise ConfigError(f"{field}: {exc}") from None
    for index, target in enumerate(spec.preemptible_queues):
        if target not in names:
            raise MappingError(
                f"preemptible_queues[{index}]: queue {target!r} is defined nowhere "
                f"(queues: {', '.join(names)})"
            )
    if spec.backfill is not None:
        check_backfill(spec, registry)


def check_backfill(spec: SchedulerConfig | QueueSpec, registry: PluginRegistry) -> None:
    """Check a configuration's (or a queue's) backfill policy as the core will make
    it: registered, and its depth and parameters taken by its factory.

    Raises:
        ConfigError: starting with ``backfill: `` and saying what is wrong.
    """
    assert spec.backfill is not None
    try:
        factory = registry.backfill_policies.get(spec.backfill)
        make_policy(factory, spec.backfill, spec.reservation_depth, dict(spec.backfill_params))
    except ConfigError as exc:
        raise ConfigError(f"backfill: {exc}") from None


def checked_config(
    workload: MappedWorkload,
    policy: str,
    queues: Sequence[QueueSpec],
    registry: PluginRegistry,
    *,
    backfill: str = BackfillPolicy.GREEDY,
    reservation_depth: int | None = None,
    backfill_params: Mapping[str, bool | int] | None = None,
    fairshare: FairShareConfig | None = None,
) -> SchedulerConfig:
    """``scheduler_config``, checked before any work: every picker and preemption
    policy it names is registered, every job's queue is defined, and every queue a
    queue may preempt is defined.

    Raises:
        ConfigError: an unknown picker or policy (naming the queue; the message lists
            the known ones).
        MappingError: a job in a queue no definition gives, or a queue preempting one.
    """
    registry.pickers.get(policy)
    config = scheduler_config(
        workload,
        policy,
        queues,
        backfill=backfill,
        reservation_depth=reservation_depth,
        backfill_params=backfill_params,
        fairshare=fairshare,
    )
    check_queues(workload, config)
    check_backfill(config, registry)
    names = [queue.name for queue in config.queues]
    for queue in config.queues:
        try:
            check_queue_spec(queue, names, registry)
        except (ConfigError, MappingError) as exc:
            raise type(exc)(f"queue {queue.name!r}: {exc}") from None
    return config


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """The report and the per-job records of one simulation."""

    report: Report
    records: dict[int, JobRecord]


def run_simulation(
    workload: MappedWorkload,
    *,
    source: str,
    policy: str = "builtin_fcfs",
    seed: int = 1,
    round_interval_s: int | None = None,
    registry: PluginRegistry | None = None,
    recording: RecordingWriter | None = None,
    snapshot_interval: int = 0,
    progress: Callable[[int], None] | None = None,
    queues: Sequence[QueueSpec] = (),
    backfill: str = BackfillPolicy.GREEDY,
    reservation_depth: int | None = None,
    backfill_params: Mapping[str, bool | int] | None = None,
    incremental: bool = True,
    fairshare: FairShareConfig | None = None,
) -> SimulationResult:
    """Simulate ``workload`` on its cluster with the picker ``policy``.

    Args:
        workload: jobs and cluster shape.
        source: what the workload came from (shown in the report).
        policy: the global picker's registered name.
        seed: the core's PRNG seed.
        round_interval_s: rounds every this many seconds instead of at every change.
        registry: plugins; default: built-ins plus entry points.
        recording: when given, receives HEADER, a SNAPSHOT of the state once the
            configuration and hosts are pushed, then every event and decision, and
            the END line once the run is over (not when it stops on an error or
            an interruption: the file is then incomplete, and replay says so).
        snapshot_interval: with a recording, a further SNAPSHOT every this many
            events (0: only the first; Req 10 AC 10).
        progress: called with the number of jobs done as it grows.
        queues: queue definitions merged over the workload's queues by name (see
            ``scheduler_config``; ``--queues``).
        backfill, reservation_depth, backfill_params: the backfill policy, its depth
            and parameters (``--backfill``, ``--compress``; a queue's
            own, in ``queues``, overrides it for its jobs).
        incremental: incremental rounds (``SchedCore``'s ``incremental``); False
            only to measure what they save: the decisions are the same.
        fairshare: the ``fairshare`` picker's configuration (``--policy-config``).

    Raises:
        ConfigError: ``policy`` (or a queue's ``job_pick_plugin``) is not a
            registered picker (the message lists them).
        MappingError: a job is in a queue no definition gives.
    """
    registry = registry if registry is not None else load_registry()
    config = checked_config(
        workload,
        policy,
        queues,
        registry,
        backfill=backfill,
        reservation_depth=reservation_depth,
        backfill_params=backfill_params,
        fairshare=fairshare,
    )
    emulator: ClusterEmulator
    recorder = None if recording is None else Recorder(recording, snapshot_interval)

    def on_decision(decision: Decision) -> None:
        if recorder is not None:
            recorder.decision(decision)
        emulator.on_decision(decision)

    core = SchedCore(
        on_decision=on_decision, prng_seed=seed, registry=registry, incremental=incremental
    )

    def push(event: CoreEvent) -> None:
        if recorder is None:
            core.push_event(event)
        else:
            recorder.event(event)
            core.push_event(event)
            recorder.after_event(core)

    emulator = ClusterEmulator(
        workload.jobs,
        host_specs(workload.hosts, workload.slots_per_host, workload.host_mem_mb),
        config,
        push,
        origin_s=workload.origin_s,
        round_interval_s=round_interval_s,
        reservations=lambda: core.state.reservations.values(),
    )
    emulator.start()
    if recorder is not None:
        recorder.start(core, round_interval_s)
    started = time.perf_counter()
    with batch_gc():
        records = emulator.run(progress)
    wall = time.perf_counter() - started
    if recorder is not None:
        recorder.finish(core)  # only a run that went to its end is a complete recording
    report = emulation_report(emulator, workload, source, policy, wall, backfill_label(config))
    return SimulationResult(report, records)


class Emulated(Protocol):
    """An emulator's run, virtual-time or live: what happened to every job, and the
    counts of what crossed the core's boundary."""

    @property
    def records(self) -> Mapping[int, JobRecord]: ...
    @property
    def stats(self) -> EmulatorStats: ...


def emulation_report(
    emulator: Emulated,
    workload: MappedWorkload,
    source: str,
    policy: str,
    wall_s: float,
    backfill: str = "greedy",
) -> Report:
    """The report of an emulator's run (virtual-time or live) of ``workload``.

    Args:
        emulator: its records and stats.
        workload: the workload it ran (cluster shape, records skipped, load factor).
        source: what the workload came from; policy: the picker's name.
        wall_s: wall time of the run, s.
        backfill: its backfill policy, in words (``report.backfill_label``).
    """
    stats = emulator.stats
    return summarize(
        emulator.records.values(),
        workload=source,
        policy=policy,
        hosts=workload.hosts,
        slots=workload.hosts * workload.slots_per_host,
        skipped=workload.skipped,
        rounds=stats.rounds,
        events=stats.events,
        decisions=stats.decisions,
        sim_wall_s=wall_s,
        backfill=backfill,
        load_factor=workload.load_factor,
    )
