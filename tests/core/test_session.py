"""The session loop (Req 1 AC 3-4), picker hooks, cancellation, and allocation records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import pytest
from xce_core.core import SchedCore
from xce_core.errors import ConfigError, PluginError
from xce_core.in_tree import in_tree_registry
from xce_core.pickers.builtin_fcfs import BuiltinFcfs
from xce_core.plugins import CoreView, JobInfo, PickerConfig, QueueInfo
from xce_schemas import Decision, Dispatch, JobState, SchedulerConfig

from tests.builders import NS, cluster


class Spy(BuiltinFcfs):
    """builtin_fcfs that logs every hook call."""

    name: ClassVar[str] = "spy"
    calls: ClassVar[list[str]] = []

    def __init__(self, config: PickerConfig, view: CoreView) -> None:
        super().__init__(config, view)
        Spy.calls.append("init")

    def on_config(self, config: SchedulerConfig) -> None:
        Spy.calls.append("on_config")
        super().on_config(config)

    def on_queue_update(self, queue: QueueInfo) -> None:
        Spy.calls.append(f"on_queue_update {queue.name}")
        super().on_queue_update(queue)

    def on_job_push(self, job: JobInfo) -> None:
        Spy.calls.append(f"on_job_push {job.jobid}")
        super().on_job_push(job)

    def on_job_state_change(self, job: JobInfo, new_state: JobState) -> None:
        Spy.calls.append(f"on_job_state_change {job.jobid} {new_state.value}")
        super().on_job_state_change(job, new_state)

    def on_job_update(self, job: JobInfo) -> None:
        Spy.calls.append(f"on_job_update {job.jobid}")
        super().on_job_update(job)

    def on_job_rusage(self, job: JobInfo, rusage: Mapping[str, float]) -> None:
        Spy.calls.append(f"on_job_rusage {job.jobid}")
        super().on_job_rusage(job, rusage)

    def begin_session(self) -> None:
        Spy.calls.append("begin_session")
        super().begin_session()

    def next_job(self) -> JobInfo | None:
        job = super().next_job()
        Spy.calls.append(f"next_job -> {job.jobid if job else None}")
        return job

    def end_session(self) -> None:
        Spy.calls.append("end_session")
        super().end_session()

    def on_dispatch(self, jobid: int) -> None:
        Spy.calls.append(f"on_dispatch {jobid}")
        super().on_dispatch(jobid)

    def on_pend(self, jobid: int) -> None:
        Spy.calls.append(f"on_pend {jobid}")
        super().on_pend(jobid)

    def fini(self) -> None:
        Spy.calls.append("fini")
        super().fini()


def spy_registry():  # type: ignore[no-untyped-def]
    registry = in_tree_registry()
    registry.pickers.register(Spy.name, Spy)
    return registry


def test_every_picker_hook_is_called_when_the_spec_says() -> None:
    Spy.calls.clear()
    sc = (
        cluster()
        .with_picker("spy")
        .host("h1", 2)
        .queue("normal")
        .job(1, tasks=2)
        .job(2)
        .build(spy_registry())
    )
    assert Spy.calls == [
        "init",
        "on_config",
        "on_queue_update normal",  # CONFIG_PUSH
        "on_job_push 1",
        "on_job_push 2",  # JOBS_PUSH
    ]
    Spy.calls.clear()
    sc.round(1)
    assert Spy.calls == [
        "begin_session",
        "next_job -> 1",
        "on_dispatch 1",
        "next_job -> 2",
        "on_pend 2",
        "next_job -> None",
        "end_session",
    ]
    Spy.calls.clear()
    sc.push({"type": "JOB_UPDATE", "ts": 2 * NS, "payload": {"jobid": 2, "priority": 3}})
    sc.push({"type": "JOB_RUSAGE", "ts": 2 * NS, "payload": {"jobid": 1, "rusage": []}})
    sc.push(
        {
            "type": "QUEUE_UPDATE",
            "ts": 2 * NS,
            "payload": {"queue": {"name": "normal", "priority": 40}},
        }
    )
    sc.finish(1, at_s=3)
    sc.push(
        {"type": "WORKERS_PUSH", "ts": 3 * NS, "payload": {"hosts": [{"name": "h2", "slots": 1}]}}
    )
    sc.push(
        {"type": "RESOURCES_PUSH", "ts": 3 * NS, "payload": {"resources": [{"name": "scratch"}]}}
    )
    assert Spy.calls == [
        "on_job_update 2",
        "on_job_rusage 1",
        "on_queue_update normal",
        "on_job_state_change 1 DONE",
        # WORKERS_PUSH and RESOURCES_PUSH are not forwarded to the picker (Req 1 AC 2).
    ]
    Spy.calls.clear()
    sc.push(
        {
            "type": "CONFIG_PUSH",
            "ts": 4 * NS,
            "payload": {"config": {"queues": [{"name": "normal"}]}},
        }
    )
    assert Spy.calls == ["fini"]  # replaced by the configured builtin_fcfs


def test_decisions_of_a_session_carry_its_ts_and_from() -> None:
    sc = (
        cluster()
        .hosts_n(4, slots=2)
        .queue("normal")
        .job(1, tasks=3)
        .job(2, tasks=2)
        .job(3, tasks=9)
        .build()
    )
    ts = 1_700_000_123_456_789_012
    sc.core.push_event({"type": "BEGIN_ROUND", "ts": ts, "payload": {}})
    ops = [d.op for d in sc.decisions]
    assert ops == ["NEW_SESSION", "DISPATCH", "DISPATCH", "PEND"]
    assert all(d.ts == ts for d in sc.decisions)
    allocs = [
        a for d in sc.decisions if isinstance(d, Dispatch) for h in d.alloc.hosts for a in h.allocs
    ]
    # from is the session start in whole seconds, read once: the BEGIN_ROUND ts // 1e9
    assert {a.from_ for a in allocs} == {ts // 10**9}
    assert [a.instid for a in allocs] == [1, 2, 3]  # job 1 on h1:2 + h2:1, job 2 on h3:2
    assert [(a.name, a.value, a.reserve, a.duration) for a in allocs[:2]] == [
        ("slots", 2.0, False, -1),
        ("slots", 1.0, False, -1),
    ]
    assert sc.decisions[0].session == 1


def test_a_cancelled_session_emits_nothing_half_done_and_the_next_one_goes_on() -> None:
    decisions: list[Decision] = []
    core: SchedCore

    def on_decision(decision: Decision) -> None:
        decisions.append(decision)
        if decision.op == "DISPATCH" and decision.jobid == 1:
            core.cancel_session()  # e.g. an operator stopping a long round

    core = SchedCore(on_decision=on_decision)
    sc = cluster().hosts_n(4).queue("normal").job(1).job(2).job(3).build()
    for event in [
        {"type": "CONFIG_PUSH", "ts": 0, "payload": {"config": {"queues": [{"name": "normal"}]}}},
        {
            "type": "WORKERS_PUSH",
            "ts": 0,
            "payload": {"hosts": [{"name": f"h{i}", "slots": 1} for i in range(1, 5)]},
        },
        {
            "type": "JOBS_PUSH",
            "ts": 0,
            "payload": {
                "jobs": [{"jobid": j, "queue": "normal", "submit_ts": 0} for j in (1, 2, 3)]
            },
        },
        {"type": "BEGIN_ROUND", "ts": NS, "payload": {}},
    ]:
        core.push_event(event)
    assert [(d.op, getattr(d, "jobid", None)) for d in decisions] == [
        ("NEW_SESSION", None),
        ("DISPATCH", 1),
    ]
    assert sum(h.used for h in core.state.host_order) == 1  # only job 1 holds a slot
    assert core.session is None
    core.push_event({"type": "BEGIN_ROUND", "ts": 2 * NS, "payload": {}})
    assert [(d.op, getattr(d, "jobid", None)) for d in decisions[2:]] == [
        ("NEW_SESSION", None),
        ("DISPATCH", 2),
        ("DISPATCH", 3),
    ]
    assert sc is not None


class Broken(BuiltinFcfs):
    """builtin_fcfs with one bug: ``repeat`` rewinds its cursor, ``stale`` forgets
    to drop dispatched jobs."""

    name: ClassVar[str] = "broken"
    mode: ClassVar[str] = "repeat"

    def next_job(self) -> JobInfo | None:
        job = super().next_job()
        if job is not None and Broken.mode == "repeat":
            # rewind the cursor to just before the job: the same job again
            priority, queued, jobid = self._keys[job.jobid]
            self._cursor = (priority, queued, jobid - 1)
        return job

    def on_dispatch(self, jobid: int) -> None:
        if Broken.mode != "stale":
            super().on_dispatch(jobid)


def broken_scenario(mode: str, tasks: int):  # type: ignore[no-untyped-def]
    Broken.mode = mode
    registry = in_tree_registry()
    registry.pickers.register(Broken.name, Broken)
    return (
        cluster()
        .with_picker("broken")
        .hosts_n(2)
        .queue("normal")
        .job(1, tasks=tasks)
        .build(registry)
    )


def test_a_picker_returning_a_job_that_is_not_pending_is_named() -> None:
    sc = broken_scenario("stale", tasks=1)
    assert sc.round(1) == [("DISPATCH", 1, ("h1",))]
    with pytest.raises(PluginError, match=r"picker 'broken' returned job 1, which is not pending"):
        sc.round(2)


def test_a_picker_returning_a_pending_job_twice_is_named() -> None:
    sc = broken_scenario("repeat", tasks=3)
    with pytest.raises(PluginError, match=r"picker 'broken' returned job 1 twice in one session"):
        sc.round(1)


def test_registry_refuses_duplicates_and_names_unknown_pickers() -> None:
    registry = in_tree_registry()
    with pytest.raises(ConfigError, match=r"picker 'builtin_fcfs' is registered twice"):
        registry.pickers.register("builtin_fcfs", BuiltinFcfs)
    with pytest.raises(
        ConfigError,
        match=r"unknown picker 'nosuch'; known: "
        "builtin_fcfs, f1, fairshare, largest_first, sjf, smallest_first, unicep, wfp3",
    ):
        registry.pickers.get("nosuch")
    copy = registry.copy()
    copy.pickers.register("other", BuiltinFcfs)
    assert "other" not in registry.pickers.names()


def test_core_without_the_default_picker_is_a_configuration_error() -> None:
    registry = in_tree_registry()
    registry.pickers.factories.clear()
    with pytest.raises(ConfigError, match=r"unknown picker 'builtin_fcfs'; known: none"):
        SchedCore(on_decision=lambda d: None, registry=registry)


def test_pend_is_emitted_when_the_reason_changes_and_only_then() -> None:
    sc = (
        cluster()
        .host("h1", 2)
        .host("h2", 2)
        .queue("normal")
        .job(1, tasks=3)
        .job(2, tasks=3, submit_s=1)
        .build()
    )
    assert sc.round(2) == [("DISPATCH", 1, ("h1", "h2")), ("PEND", 2, "NOT_ENOUGH_SLOTS")]
    assert sc.round(3) == []  # same reason: nothing new to say
    sc.push(
        {
            "type": "WORKERS_PUSH",
            "ts": 4 * NS,
            "payload": {"hosts": [{"name": "h3", "slots": 1, "status": "unavail"}]},
        }
    )
    assert sc.round(4) == [("PEND", 2, "NOT_ENOUGH_SLOTS")]  # h3 is now a host-based entry
    assert [(h.host, h.code.value) for h in sc.decisions[-1].reason.hosts] == [
        ("h3", "HOST_UNAVAIL")
    ]
    sc.finish(1, at_s=5)
    assert sc.round(5) == [("DISPATCH", 2, ("h1", "h2"))]
    sc.state_change(2, JobState.PEND, at_s=6)  # requeued: its first PEND of the new stint is news
    sc.push(
        {
            "type": "JOBS_PUSH",
            "ts": 6 * NS,
            "payload": {"jobs": [{"jobid": 3, "queue": "normal", "tasks": 4, "submit_ts": 0}]},
        }
    )
    assert sc.round(6) == [("DISPATCH", 3, ("h1", "h2")), ("PEND", 2, "NOT_ENOUGH_SLOTS")]
