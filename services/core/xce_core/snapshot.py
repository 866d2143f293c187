"""Save and load the whole core state (Req 10 AC 16; DESIGN invariant 2).

``load_snapshot(save_snapshot(core))`` is indistinguishable from ``core``: saving it
again gives the same bytes, and it makes the same decisions for any continuation.
The picker is rebuilt through its hooks from the restored state (as a
``CONFIG_PUSH`` rebuilds it) and then given back what its ``save_state`` returned.

Snapshots are taken between events, never inside a session.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

from pydantic import ValidationError
from xce_schemas import Decision, JobState, PendingReason
from xce_schemas.errors import describe
from xce_schemas.snapshot import (
    SNAPSHOT_VERSION,
    ClockState,
    CoreSnapshot,
    Counters,
    HostState,
    JobStateDoc,
    ObjectTable,
    PickerState,
    PreemptionDoc,
    PrngState,
    ReservationDoc,
)

from xce_core.alloc.outcome import Reservation
from xce_core.clock import Clock
from xce_core.core import SchedCore
from xce_core.errors import CoreError
from xce_core.plugins import PluginRegistry
from xce_core.resreq.parser import parse_resreq
from xce_core.state import Job, Preemption, Queue


class SnapshotError(CoreError, ValueError):
    """A snapshot that cannot be loaded; the message names the field and why."""


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a snapshot is made or loaded: that
    builds a few objects per job, none of them garbage, and CPython would scan the
    growing heap again and again (a third of the load of 100,000 jobs). Reference
    counting still frees what is dropped; the collector runs again after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def save_snapshot(core: SchedCore) -> CoreSnapshot:
    """The whole state of ``core`` as a snapshot document.

    ``snapshot.model_dump_json()`` is the plain JSON of a SNAPSHOT line.

    Raises:
        RuntimeError: called during a session (from a decision callback).
    """
    if core.session is not None:
        raise RuntimeError("a snapshot cannot be taken inside a scheduling session")
    with _cyclic_gc_paused():
        return _save(core)


def _save(core: SchedCore) -> CoreSnapshot:
    state = core.state
    resreq_ids: dict[str, int] = {}
    reason_ids: dict[PendingReason, int] = {}  # equal reasons are one object on load
    jobs = []
    for j in state.jobs.values():
        resreq = resreq_ids.setdefault(j.resreq, len(resreq_ids))
        reason = None
        if j.pend_reason is not None:
            reason = reason_ids.setdefault(j.pend_reason, len(reason_ids))
        jobs.append(
            JobStateDoc(
                jobid=j.jobid,
                queue=j.queue,
                user=j.user,
                project=j.project,
                priority=j.priority,
                tasks=j.tasks,
                resreq=resreq,
                submit_ts=j.submit_ts,
                queue_ts=j.queue_ts,
                state=j.state,
                alloc=j.alloc,
                rusage=j.rusage,
                pend_reason=reason,
                released=tuple(sorted(j.released)),
                start_ts=j.start_ts,
                suspend_ts=j.suspend_ts,
                preempted=j.preempted,
                ignored_preemption=j.ignored_preemption,
                run_limit_s=j.run_limit_s,
                suspended_ns=j.suspended_ns,
            )
        )
    version, internal, gauss = core.prng.getstate()
    return CoreSnapshot(
        ts=core.last_ts,
        objects=ObjectTable(resreqs=tuple(resreq_ids), pend_reasons=tuple(reason_ids)),
        config=state.config,
        queues=tuple(q.spec() for q in state.queues.values()),
        hosts=tuple(
            HostState(
                name=h.name,
                slots=h.slots,
                used=h.used,
                status=h.status,
                type=h.type,
                model=h.model,
                max_mem_mb=h.max_mem,
                reserved=h.reserved,
            )
            for h in state.host_order
        ),
        jobs=tuple(jobs),
        resources=tuple(state.resources.values()),
        resvals=tuple(
            {"resource": resource, "host": host or None, "value": value}
            for (resource, host), value in state.resvals.items()
        ),
        shared_in_use=state.shared_in_use,
        expiries=tuple(state.expiries),
        preemptions=tuple(
            PreemptionDoc(preemptor=p.preemptor, victims=p.victims, session=p.session)
            for p in state.preemptions.values()
        ),
        reservations=tuple(
            ReservationDoc(
                jobid=r.jobid,
                start_ts=r.start_ts,
                end_ts=r.end_ts,
                hosts=r.hosts,
                running=r.running,
                count=r.count,
            )
            for r in state.reservations.values()
        ),
        unplanned=state.unplanned,
        counters=Counters(
            next_instid=state.next_instid, sessions=state.sessions, events=core.events
        ),
        clock=ClockState(now=core.clock.now(), speed=str(core.clock.speed)),
        prng=PrngState(seed=core.prng_seed, version=version, internal=internal, gauss_next=gauss),
        picker=PickerState(name=core.picker.name, state=core.picker.save_state()),
    )


def _check(snapshot: CoreSnapshot) -> None:
    """Cross-field consistency pydantic cannot see; raises SnapshotError."""
    if snapshot.version != SNAPSHOT_VERSION:
        raise SnapshotError(
            f"snapshot version {snapshot.version} is not {SNAPSHOT_VERSION}, the one this "
            "scheduler reads"
        )
    queues = {q.name for q in snapshot.queues}
    hosts = {h.name: h for h in snapshot.hosts}
    if len(hosts) < len(snapshot.hosts):
        index, name = _repeated(h.name for h in snapshot.hosts)
        raise SnapshotError(f"hosts[{index}].name: host {name!r} is listed twice")
    held = dict.fromkeys(hosts, 0)
    objects = (len(snapshot.objects.resreqs), len(snapshot.objects.pend_reasons))
    pending = set()
    if len({job.jobid for job in snapshot.jobs}) < len(snapshot.jobs):
        index, jobid = _repeated(job.jobid for job in snapshot.jobs)
        raise SnapshotError(f"jobs[{index}].jobid: job {jobid} is listed twice")
    for index, job in enumerate(snapshot.jobs):
        problem = _job_problem(job, queues, objects, held)
        if problem is not None:
            raise SnapshotError(f"jobs[{index}] (job {job.jobid}).{problem}")
        if job.state is JobState.PEND:
            pending.add(job.jobid)
    for index, record in enumerate(snapshot.preemptions):
        if record.preemptor not in pending:
            raise SnapshotError(
                f"preemptions[{index}].preemptor: job {record.preemptor} is not a pending job"
            )
    for name, host in hosts.items():
        if host.used != held[name] or host.used > host.slots:
            raise SnapshotError(
                f"hosts ({name}).used: {host.used} does not match the {held[name]} slots "
                f"its running jobs hold (capacity {host.slots})"
            )


def _repeated(values: Iterable[Hashable]) -> tuple[int, Any]:
    """The index and value of the first of ``values`` seen before (there is one)."""
    seen = set()
    for index, value in enumerate(values):
        if value in seen:
            return index, value
        seen.add(value)
    raise AssertionError("no value is repeated")


def _job_problem(
    job: JobStateDoc, queues: set[str], objects: tuple[int, int], held: dict[str, int]
) -> str | None:
    """What is wrong with one job of a snapshot (``field: problem``), or None; a
    running job's slots are added to ``held`` (slots by host). ``objects``: how many
    resource requests and pending reasons the object table has. The message is made
    only for a job found wrong: 100,000 jobs load in under a second only if the
    check costs little per job."""
    if job.queue not in queues:
        return f"queue: unknown queue {job.queue!r}"
    if job.resreq >= objects[0]:
        return f"resreq: no object {job.resreq} in objects.resreqs"
    if job.pend_reason is not None and job.pend_reason >= objects[1]:
        return f"pend_reason: no object {job.pend_reason} in objects.pend_reasons"
    if job.alloc is not None and job.state is JobState.PEND:
        return "alloc: a PEND job holds no allocation"
    if job.alloc is None and job.state is not JobState.PEND:
        return f"alloc: a {job.state.value} job must have one"
    if job.alloc is None:
        return None
    if job.alloc.jobid != job.jobid:
        return f"alloc.jobid: {job.alloc.jobid} is another job's allocation"
    slots = job.alloc.slots_by_host()
    if sum(slots.values()) != job.tasks:
        # Every record of an allocation holds slots, one per task (build_records).
        return f"alloc: holds {sum(slots.values())} slots for the job's {job.tasks} tasks"
    if job.state is JobState.RUN:
        for name in slots:
            if name not in held:
                return f"alloc: unknown host {name!r}"
        for name, taken in slots.items():
            held[name] += taken
    return None


def load_snapshot(
    data: CoreSnapshot | dict[str, Any] | str | bytes,
    on_decision: Callable[[Decision], object],
    *,
    registry: PluginRegistry | None = None,
    clock: Clock | None = None,
) -> SchedCore:
    """A new core in exactly the state the snapshot describes.

    Args:
        data: a snapshot document, or its JSON (text or decoded).
        on_decision: the new core's decision callback.
        registry: plugins (must hold the snapshot's picker); default built-ins.
        clock: the new core's clock; default a clock at the snapshot's time and speed.

    Raises:
        SnapshotError: malformed or inconsistent snapshot, naming the field.
        ConfigError: the snapshot names a picker the registry lacks.
    """
    with _cyclic_gc_paused():
        return _load(data, on_decision, registry, clock)


def _load(
    data: CoreSnapshot | dict[str, Any] | str | bytes,
    on_decision: Callable[[Decision], object],
    registry: PluginRegistry | None,
    clock: Clock | None,
) -> SchedCore:
    try:
        if isinstance(data, CoreSnapshot):
            snapshot = data
        elif isinstance(data, str | bytes):
            snapshot = CoreSnapshot.model_validate_json(data)
        else:
            snapshot = CoreSnapshot.model_validate(data)
    except ValidationError as exc:
        raise SnapshotError(f"snapshot rejected: {describe(exc, default='snapshot')}") from None
    _check(snapshot)
    speed = Fraction(snapshot.clock.speed)
    core = SchedCore(
        on_decision,
        snapshot.prng.seed,
        registry=registry,
        clock=clock if clock is not None else Clock(snapshot.clock.now, speed),
    )
    state = core.state
    state.config = snapshot.config
    state.queues = {q.name: Queue.from_spec(q) for q in snapshot.queues}
    for h in snapshot.hosts:
        host = state.add_host(h.name, h.slots, h.status, h.type, h.model, h.max_mem_mb)
        host.reserved = dict(h.reserved)
        if h.used:
            state.take_slots(host, h.used)
    state.shared_in_use = dict(snapshot.shared_in_use)
    state.expiries.update(snapshot.expiries)
    resreqs = snapshot.objects.resreqs
    requests = [parse_resreq(text) for text in resreqs]  # one parse per shared object
    reasons = snapshot.objects.pend_reasons
    jobs, running = state.jobs, JobState.RUN
    nothing_released: frozenset[tuple[int, int]] = frozenset()
    for j in snapshot.jobs:
        job = jobs[j.jobid] = Job(
            j.jobid,
            j.queue,
            j.user,
            j.project,
            j.priority,
            j.tasks,
            resreqs[j.resreq],
            j.submit_ts,
            j.queue_ts,
            j.state,
            j.alloc,
            dict(j.rusage),
            None if j.pend_reason is None else reasons[j.pend_reason],
            requests[j.resreq],
            frozenset(j.released) if j.released else nothing_released,
            j.start_ts,
            j.suspend_ts,
            j.preempted,
            j.ignored_preemption,
            run_limit_s=j.run_limit_s,
            suspended_ns=j.suspended_ns,
        )
        if job.state is running:
            state.charge(job, 1)  # the queues' slot counts follow from running jobs
        if job.preempted:
            state.set_preempted(job, True)
    state.preemptions = {
        p.preemptor: Preemption(p.preemptor, p.victims, p.session) for p in snapshot.preemptions
    }
    state.reservations = {
        r.jobid: Reservation(r.jobid, r.start_ts, r.end_ts, r.hosts, r.running, r.count)
        for r in snapshot.reservations
    }
    state.unplanned = snapshot.unplanned
    state.resources = {r.name: r for r in snapshot.resources}
    state.resvals = {(v.resource, v.host or ""): v.value for v in snapshot.resvals}
    state.next_instid = snapshot.counters.next_instid
    state.sessions = snapshot.counters.sessions
    core.events = snapshot.counters.events
    core.last_ts = snapshot.ts
    prng = snapshot.prng
    core.prng.setstate((prng.version, prng.internal, prng.gauss_next))
    core.resolve_backfill()
    core.rebuild_picker()
    core.picker.load_state(snapshot.picker.state)
    return core
