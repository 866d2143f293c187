"""Snapshots: load(save(core)) is indistinguishable from core (Req 10 AC 16, invariant 2)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedDict, SortedList
from xce_core.core import SchedCore
from xce_core.in_tree import in_tree_registry
from xce_core.plugins import CoreView, JobInfo, PickerBase, PickerConfig
from xce_core.snapshot import SnapshotError, load_snapshot, save_snapshot
from xce_schemas import Decision, JobState, dump_decision

from tests.builders import NS, cluster
from tests.core.random_events import apply, new_core, operation


def fingerprint(value: Any, depth: int = 0) -> Any:
    """Every field of the core's state, walked generically: a field added to a state
    class and forgotten by the snapshot shows up as a difference here."""
    assert depth < 12
    if isinstance(value, SchedCore):
        return {
            "state": fingerprint(value.state, depth + 1),
            "last_ts": value.last_ts,
            "events": value.events,
            "prng": value.prng.getstate(),
            "clock": (value.clock.now(), value.clock.speed),
            "picker": type(value.picker).__name__,
            "picker_state": value.picker.save_state(),
        }
    if isinstance(value, SortedDict):
        return [(fingerprint(k, depth + 1), fingerprint(v, depth + 1)) for k, v in value.items()]
    if isinstance(value, SortedList):
        return [fingerprint(v, depth + 1) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: fingerprint(getattr(value, f.name), depth + 1)
            for f in dataclasses.fields(value)
            if not f.metadata.get("cache")
        }
    # A class compiled by mypyc (the optional compiled core) lists its attributes in
    # ``__mypyc_attrs__``, a plain slotted class in ``__slots__``.
    names = getattr(type(value), "__mypyc_attrs__", None) or getattr(value, "__slots__", None)
    if names is not None and not hasattr(value, "model_dump"):
        caches = getattr(type(value), "CACHE_SLOTS", frozenset())
        return {
            name: fingerprint(getattr(value, name), depth + 1)
            for name in names
            if name not in caches and name != "__dict__"
        }
    if isinstance(value, Mapping):
        return [(fingerprint(k, depth + 1), fingerprint(v, depth + 1)) for k, v in value.items()]
    if isinstance(value, list | tuple):
        return [fingerprint(v, depth + 1) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


def busy_core() -> tuple[SchedCore, list[Decision]]:
    sc = (
        cluster()
        .host("h1", 4)
        .host("h2", 4)
        .host("h3", 2, status="closed")
        .queue("normal", 30)
        .queue("high", 50)
        .job(1, tasks=4)
        .job(2, tasks=3, queue="high")
        .job(3, tasks=8, submit_s=1)
        .job(4, submit_s=2)
        .build()
    )
    sc.push(
        {
            "type": "RESOURCES_PUSH",
            "ts": 2 * NS,
            "payload": {"resources": [{"name": "scratch"}, {"name": "lic", "shared": True}]},
        }
    )
    sc.push(
        {
            "type": "RESVALS_FULL",
            "ts": 2 * NS,
            "payload": {
                "values": [
                    {"resource": "scratch", "host": "h1", "value": 64000},
                    {"resource": "lic", "value": 5},
                ]
            },
        }
    )
    sc.round(3)
    sc.push(
        {
            "type": "JOB_RUSAGE",
            "ts": 3 * NS,
            "payload": {"jobid": 2, "rusage": [{"resource": "mem", "value": 100.5}]},
        }
    )
    sc.state_change(1, JobState.SUSP, at_s=4)
    return sc.core, sc.decisions


def test_loaded_core_is_indistinguishable_and_saves_the_same_bytes() -> None:
    core, _ = busy_core()
    saved = save_snapshot(core)
    loaded = load_snapshot(saved.model_dump_json(), on_decision=lambda d: None)
    assert save_snapshot(loaded).model_dump_json() == saved.model_dump_json()
    assert fingerprint(loaded) == fingerprint(core)


def test_resource_requests_are_written_once_in_the_object_table() -> None:
    sc = cluster().hosts_n(1).queue("normal").build()
    jobs = [
        {
            "jobid": i,
            "queue": "normal",
            "submit_ts": 0,
            "resreq": "select[mem>100]" if i % 2 else "",
        }
        for i in range(1, 7)
    ]
    sc.push({"type": "JOBS_PUSH", "ts": NS, "payload": {"jobs": jobs}})
    saved = save_snapshot(sc.core)
    assert saved.objects.resreqs == ("select[mem>100]", "")
    assert [j.resreq for j in saved.jobs] == [0, 1, 0, 1, 0, 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(operation, min_size=1, max_size=80), st.data())
def test_snapshot_at_any_point_then_continue_gives_the_same_decisions(
    ops: list[Any], data: st.DataObject
) -> None:
    split = data.draw(st.integers(0, len(ops)), label="snapshot after this many operations")
    original: list[Decision] = []
    core = new_core(original)
    for step, op in enumerate(ops[:split], start=1):
        apply(core, op, step)
    resumed: list[Decision] = []
    copy = load_snapshot(save_snapshot(core).model_dump_json(), on_decision=resumed.append)
    assert fingerprint(copy) == fingerprint(core)
    mark = len(original)
    for step, op in enumerate(ops[split:], start=split + 1):
        assert apply(core, op, step) == apply(copy, op, step)
    assert [dump_decision(d) for d in resumed] == [dump_decision(d) for d in original[mark:]]
    assert save_snapshot(copy).model_dump_json() == save_snapshot(core).model_dump_json()


class Aging(PickerBase):
    """A picker with history: each pend moves a job back, so its state is its own."""

    name: ClassVar[str] = "aging"

    def __init__(self, config: PickerConfig, view: CoreView) -> None:
        self.jobs: dict[int, JobInfo] = {}
        self.pends: dict[int, int] = {}
        self.order: list[JobInfo] = []

    def on_job_push(self, job: JobInfo) -> None:
        if job.state is JobState.PEND:
            self.jobs[job.jobid] = job

    def on_job_state_change(self, job: JobInfo, new_state: JobState) -> None:
        if new_state is JobState.PEND:
            self.jobs[job.jobid] = job
        else:
            self.jobs.pop(job.jobid, None)

    def begin_session(self) -> None:
        self.order = sorted(self.jobs.values(), key=lambda j: (self.pends.get(j.jobid, 0), j.jobid))

    def next_job(self) -> JobInfo | None:
        return self.order.pop(0) if self.order else None

    def on_dispatch(self, jobid: int) -> None:
        self.jobs.pop(jobid, None)

    def on_pend(self, jobid: int) -> None:
        self.pends[jobid] = self.pends.get(jobid, 0) + 1

    def save_state(self) -> dict[str, Any]:
        return {"pends": {str(k): v for k, v in sorted(self.pends.items())}}

    def load_state(self, state: Mapping[str, Any]) -> None:
        self.pends = {int(k): v for k, v in state.get("pends", {}).items()}


def test_a_pickers_own_state_travels_in_the_snapshot() -> None:
    registry = in_tree_registry()
    registry.pickers.register(Aging.name, Aging)
    sc = (
        cluster()
        .with_picker("aging")
        .hosts_n(2)
        .queue("normal")
        .job(1, tasks=3)
        .job(2, tasks=3)
        .job(3)
        .build(registry)
    )
    sc.round(1)  # 1 and 2 pend once; 3 runs
    sc.round(2)  # they pend again
    saved = save_snapshot(sc.core)
    assert saved.picker.state == {"pends": {"1": 2, "2": 2}}
    loaded = load_snapshot(saved, on_decision=lambda d: None, registry=registry)
    assert loaded.picker.pends == {1: 2, 2: 2}  # type: ignore[attr-defined]
    assert save_snapshot(loaded) == saved


def test_prng_and_clock_continue_where_they_were() -> None:
    core, _ = busy_core()
    core.prng.random()
    loaded = load_snapshot(save_snapshot(core), on_decision=lambda d: None)
    assert loaded.prng.random() == core.prng.random()
    assert loaded.clock.now() == core.clock.now() == 4 * NS
    assert loaded.last_ts == core.last_ts and loaded.events == core.events


def test_no_snapshot_inside_a_session() -> None:
    errors: list[Exception] = []
    core: SchedCore

    def on_decision(decision: Decision) -> None:
        try:
            save_snapshot(core)
        except RuntimeError as exc:
            errors.append(exc)

    core = SchedCore(on_decision=on_decision)
    core.push_event({"type": "BEGIN_ROUND", "ts": 1, "payload": {}})
    assert "inside a scheduling session" in str(errors[0])


def corrupt(change: Any) -> dict[str, Any]:
    core, _ = busy_core()
    data = save_snapshot(core).model_dump(mode="json")
    change(data)
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(version=99), r"snapshot version 99 is not 1"),
        (
            lambda d: d["jobs"][0].update(queue="nosuch"),
            r"jobs\[0\] \(job 1\)\.queue: unknown queue 'nosuch'",
        ),
        (
            lambda d: d["hosts"][0].update(used=3),
            r"hosts \(h1\)\.used: 3 does not match the 4 slots its running jobs hold \(capacity 4\)",
        ),
        (
            lambda d: d["jobs"][0].update(resreq=5),
            r"jobs\[0\] \(job 1\)\.resreq: no object 5 in objects\.resreqs",
        ),
        (
            lambda d: d["jobs"][2].update(pend_reason=9),
            r"jobs\[2\] \(job 3\)\.pend_reason: no object 9 in objects\.pend_reasons",
        ),
        (
            lambda d: d["jobs"][1].update(alloc=None),
            r"jobs\[1\] \(job 2\)\.alloc: a RUN job must have one",
        ),
        (
            lambda d: d["jobs"][1]["alloc"]["hosts"][0].update(host="nosuch"),
            r"jobs\[1\] \(job 2\)\.alloc: unknown host 'nosuch'",
        ),
        (
            lambda d: d["jobs"][2].update(alloc=d["jobs"][1]["alloc"]),
            r"jobs\[2\] \(job 3\)\.alloc: a PEND job holds no allocation",
        ),
        (
            lambda d: d["jobs"][1]["alloc"].update(jobid=7),
            r"jobs\[1\] \(job 2\)\.alloc\.jobid: 7 is another job's allocation",
        ),
        (
            lambda d: d["jobs"][1].update(tasks=2),
            r"jobs\[1\] \(job 2\)\.alloc: holds 3 slots for the job's 2 tasks",
        ),
        (
            lambda d: d["counters"].update(next_instid=0),
            r"snapshot rejected: counters\.next_instid: Input should be greater than or equal to 1",
        ),
        (lambda d: d.pop("hosts"), r"snapshot rejected: hosts: Field required"),
        (
            lambda d: d["hosts"].append(dict(d["hosts"][0])),
            r"hosts\[3\]\.name: host 'h1' is listed twice",
        ),
        (
            lambda d: d["jobs"].append(dict(d["jobs"][2])),
            r"jobs\[4\]\.jobid: job 3 is listed twice",
        ),
        (
            lambda d: d["hosts"][0].update(slots="4"),
            r"snapshot rejected: hosts\[0\]\.slots: Input should be a valid integer",
        ),
        (
            lambda d: d["jobs"][0].update(tasks="4"),
            r"snapshot rejected: jobs\[0\]\.tasks: Input should be a valid integer",
        ),
        (
            lambda d: d["jobs"][0].update(preempted="no"),
            r"snapshot rejected: jobs\[0\]\.preempted: Input should be a valid boolean",
        ),
    ],
    ids=[
        "another layout version",
        "job in an unknown queue",
        "used slots not held by running jobs",
        "dangling resreq reference",
        "dangling pending-reason reference",
        "running job without allocation",
        "running job on an unknown host",
        "pending job with an allocation",
        "running job holding another job's allocation",
        "running job whose tasks are not its allocation's slots",
        "instance counter at 0",
        "hosts missing",
        "a host listed twice",
        "a job listed twice",
        "host slots written as a string",
        "tasks written as a string",
        "preempted written as a string",
    ],
)
def test_bad_snapshot_is_refused_by_name(change: Any, message: str) -> None:
    data = corrupt(change)
    with pytest.raises(SnapshotError, match=message):
        load_snapshot(data, on_decision=lambda d: None)


def test_snapshot_of_many_jobs_round_trips() -> None:
    rng = random.Random(5)
    sc = cluster().hosts_n(50, slots=4).queue("normal").build()
    jobs = [
        {"jobid": i, "queue": "normal", "tasks": rng.randint(1, 16), "submit_ts": 0}
        for i in range(1, 2001)
    ]
    sc.push({"type": "JOBS_PUSH", "ts": NS, "payload": {"jobs": jobs}})
    sc.round(2)
    saved = save_snapshot(sc.core).model_dump_json()
    assert (
        save_snapshot(load_snapshot(saved, on_decision=lambda d: None)).model_dump_json() == saved
    )


def test_run_limits_and_time_suspended_travel_in_the_snapshot() -> None:
    sc = (
        cluster()
        .hosts_n(2)
        .queue("normal")
        .job(1, run_limit_s=600)
        .job(2)
        .job(3, run_limit_s=60, submit_s=1)
        .build()
    )
    sc.round(1)
    sc.state_change(1, JobState.SUSP, at_s=10)
    sc.state_change(1, JobState.RUN, at_s=25)  # 15 s suspended
    sc.push({"type": "JOB_UPDATE", "ts": 26 * NS, "payload": {"jobid": 2, "run_limit_s": 120}})
    saved = save_snapshot(sc.core)
    jobs = {job.jobid: (job.run_limit_s, job.suspended_ns) for job in saved.jobs}
    assert jobs == {1: (600, 15 * NS), 2: (120, 0), 3: (60, 0)}
    loaded = load_snapshot(saved.model_dump_json(), on_decision=lambda d: None)
    assert save_snapshot(loaded).model_dump_json() == saved.model_dump_json()
    assert fingerprint(loaded) == fingerprint(sc.core)


def test_a_snapshot_without_run_limits_is_written_and_read_as_before_they_existed() -> None:
    core, _ = busy_core()  # no job gives a run limit, none was resumed
    data = save_snapshot(core).model_dump(mode="json")
    assert not [
        key for job in data["jobs"] for key in ("run_limit_s", "suspended_ns") if key in job
    ]
    loaded = load_snapshot(data, on_decision=lambda d: None)
    assert {(job.run_limit_s, job.suspended_ns) for job in loaded.state.jobs.values()} == {
        (None, 0)
    }
    assert fingerprint(loaded) == fingerprint(core)
