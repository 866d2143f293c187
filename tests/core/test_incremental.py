"""Incremental rounds (DESIGN "Incremental rounds"): a job the core parks is passed
over while too few slots are free, and nothing else changes: the decisions of the
incremental and the full loop are the same, byte for byte, on random event
sequences with every feature on (preemption, slot limits, queue updates, host
changes, requests, every backfill policy), and a picker of its own (a per-queue
override) hears the same hooks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xce_core.in_tree import in_tree_registry
from xce_core.pickers.builtin_fcfs import BuiltinFcfs
from xce_core.plugins import CoreView, JobInfo, PickerBase, PickerConfig
from xce_schemas import BackfillPolicy, Dispatch, HostStatus, JobSpec, JobState, PendingCode

from tests.builders import Scenario, cluster, job_spec
from tests.core.random_events import QUEUES, operation, run

#: Any operation, with plain jobs (the ones parked) with run limits, rounds, ends,
#: and queue and host changes (what unparks them) more often than ``operation``
#: gives them.
busy = st.one_of(
    st.tuples(
        st.just("submit"),
        st.integers(1, 6),
        st.integers(-2, 2),
        st.sampled_from(("normal", "normal", "normal", *QUEUES)),  # "normal" parks
        st.just(""),
        st.sampled_from([1, 5, 50, 3600]),  # run limits: reservations in view
    ),
    st.tuples(st.just("round")),
    st.tuples(st.just("finish"), st.integers(0, 50)),
    st.tuples(
        st.just("queue"), st.sampled_from(QUEUES), st.booleans(), st.sampled_from([None, 3, 8])
    ),
    st.tuples(
        st.just("host"), st.integers(0, 6), st.integers(0, 6), st.sampled_from(list(HostStatus))
    ),
    operation,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(busy, min_size=20, max_size=100))
def test_incremental_and_full_rounds_decide_the_same(ops: list[tuple[Any, ...]]) -> None:
    assert run(ops, check=False, incremental=True) == run(ops, check=False, incremental=False)


@pytest.mark.parametrize("backfill", [p for p in BackfillPolicy if p is not BackfillPolicy.GREEDY])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(busy, min_size=20, max_size=100))
def test_incremental_and_full_rounds_decide_the_same_under_every_backfill_policy(
    backfill: BackfillPolicy, ops: list[tuple[Any, ...]]
) -> None:
    depth = 2 if backfill is BackfillPolicy.HYBRID else None
    full = run(ops, check=False, backfill=backfill, reservation_depth=depth, incremental=False)
    assert run(ops, check=False, backfill=backfill, reservation_depth=depth) == full


#: A backlog of plain jobs on one-slot hosts: submits (tasks, run limit s), rounds
#: and ends, where reservations decide what backfills.
backlog = st.lists(
    st.one_of(
        st.tuples(st.just("submit"), st.integers(1, 6), st.sampled_from([1, 5, 50, 3600, None])),
        st.tuples(st.just("round")),
        st.tuples(st.just("finish"), st.integers(0, 30)),
    ),
    min_size=10,
    max_size=80,
)


@pytest.mark.parametrize("backfill", list(BackfillPolicy))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=backlog)
def test_incremental_and_full_rounds_decide_the_same_on_a_backlog(
    backfill: BackfillPolicy, ops: list[tuple[Any, ...]]
) -> None:
    def drive(incremental: bool) -> list[str]:
        depth = 2 if backfill is BackfillPolicy.HYBRID else None
        builder = cluster().hosts_n(6).configure(backfill=backfill, reservation_depth=depth)
        scenario = _incremental(builder.build(), incremental)
        _play(scenario, ops, lambda step, op: job_spec(step, tasks=op[1], run_limit_s=op[2]))
        return [decision.model_dump_json() for decision in scenario.decisions]

    assert drive(True) == drive(False)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("submit"), st.integers(1, 6), st.sampled_from(["normal", "own"])),
            st.tuples(st.just("round")),
            st.tuples(st.just("finish"), st.integers(0, 30)),
        ),
        max_size=60,
    )
)
def test_a_per_queue_picker_hears_the_same_hooks(ops: list[tuple[Any, ...]]) -> None:
    def drive(incremental: bool) -> tuple[list[str], list[Any]]:
        Spy.calls = []
        scenario = _scenario(incremental)
        _play(scenario, ops, lambda step, op: _job(step, op[1], op[2]))
        return Spy.calls, scenario.decisions

    assert drive(True) == drive(False)


def test_a_parked_job_is_passed_over_until_its_slots_are_free() -> None:
    scenario = cluster().hosts_n(2).build()
    picker = scenario.core.picker
    scenario.submit(_job(1, 2), _job(2, 2), _job(3, 2), at_s=0)
    assert _round(scenario, 1) == [("DISPATCH", 1), ("PEND", 2), ("PEND", 3)]
    assert _offers(scenario, 2) == []  # both wait for 2 slots and none is free
    scenario.finish(1, at_s=3)
    # Two slots free: job 2 is offered and starts; then none is free, and job 3,
    # waiting for 2, is passed over.
    assert _offers(scenario, 4) == [2]
    assert isinstance(scenario.decisions[-1], Dispatch)
    assert isinstance(picker, BuiltinFcfs) and picker._parked == {3: 2}


def test_a_host_change_unparks_jobs_that_can_no_longer_ever_run() -> None:
    scenario = cluster().hosts_n(4).build()
    scenario.submit(_job(1, 1), _job(2, 4), at_s=0)
    assert _round(scenario, 1) == [("DISPATCH", 1), ("PEND", 2)]  # job 2 is parked
    # Host h4 loses its slot: job 2 is now larger than the cluster and must say so.
    scenario.push(
        {
            "type": "WORKERS_PUSH",
            "ts": 2 * 10**9,
            "payload": {"hosts": [{"name": "h4", "slots": 0}]},
        }
    )
    assert _round(scenario, 3) == [("PEND", 2)]
    reason = scenario.core.state.jobs[2].pend_reason
    assert reason is not None and reason.main is PendingCode.JOB_LARGER_THAN_CLUSTER


def test_a_queue_update_unparks_its_jobs() -> None:
    scenario = cluster().hosts_n(1).build()
    scenario.submit(_job(1, 1), _job(2, 1), at_s=0)
    assert _round(scenario, 1) == [("DISPATCH", 1), ("PEND", 2)]
    scenario.round(2)
    scenario.push(
        {
            "type": "QUEUE_UPDATE",
            "ts": 3 * 10**9,
            "payload": {"queue": {"name": "normal", "priority": 30, "active": False}},
        }
    )
    assert _round(scenario, 4) == [("PEND", 2)]
    reason = scenario.core.state.jobs[2].pend_reason
    assert reason is not None and reason.main is PendingCode.QUEUE_INACTIVE


def test_a_full_round_offers_every_job_an_incremental_one_only_those_that_can_start() -> None:
    offered = {}
    for incremental in (True, False):
        scenario = _incremental(cluster().hosts_n(8).build(), incremental)
        scenario.submit(*(_job(i, 1) for i in range(1, 1001)), at_s=0)
        scenario.round(1)
        scenario.finish(1, at_s=2)
        offered[incremental] = _offers(scenario, 3)
    assert offered[False] == list(range(9, 1001))
    assert offered[True] == [9]  # the one job that starts; the 991 others wait


def test_a_twin_of_a_job_pended_for_reserved_room_is_decided_by_counting() -> None:
    # Job 4 pends for room reserved for job 3 (it would end after job 3 starts);
    # job 5 then takes a slot, and job 6, job 4's twin, is short of slots even
    # ignoring reservations. It pends for that (a twin's cached verdict would be
    # stale), so parking it changes nothing: both loops decide the same.
    streams = {}
    for incremental in (True, False):
        scenario = _incremental(
            cluster().hosts_n(4).configure(backfill="easy").build(), incremental
        )
        scenario.submit(_limited(1, 2, 100), _limited(2, 2, 100), at_s=0)
        scenario.round(0)
        jobs = (_limited(3, 4, 100), _limited(4, 2, 1000), _limited(5, 1, 10), _limited(6, 2, 1000))
        scenario.submit(*jobs, at_s=1)
        scenario.round(2)
        scenario.finish(1, at_s=3)
        assert scenario.round(4) == [
            ("PEND", 4, "RESERVED"),
            ("DISPATCH", 5, ("h1",)),
        ]
        streams[incremental] = [decision.model_dump_json() for decision in scenario.decisions]
    assert streams[True] == streams[False]


# --- helpers ---------------------------------------------------------------------------


class Spy(PickerBase):
    """A per-queue override picker, first come first served, logging every hook it
    hears."""

    name: ClassVar[str] = "spy"
    calls: ClassVar[list[str]] = []

    def __init__(self, config: PickerConfig, view: CoreView) -> None:
        self._view = view
        self._pending: dict[int, None] = {}
        self._turn: list[int] = []

    def on_job_push(self, job: JobInfo) -> None:
        Spy.calls.append(f"on_job_push {job.jobid}")
        self._pending[job.jobid] = None

    def on_job_state_change(self, job: JobInfo, new_state: JobState) -> None:
        Spy.calls.append(f"on_job_state_change {job.jobid} {new_state.value}")
        self._pending.pop(job.jobid, None)

    def begin_session(self) -> None:
        Spy.calls.append("begin_session")
        self._turn = list(self._pending)[::-1]

    def next_job(self) -> JobInfo | None:
        job = self._view.job(self._turn.pop()) if self._turn else None
        Spy.calls.append(f"next_job {job.jobid if job else None}")
        return job

    def end_session(self) -> None:
        Spy.calls.append("end_session")

    def on_pend(self, jobid: int) -> None:
        Spy.calls.append(f"on_pend {jobid}")

    def on_dispatch(self, jobid: int) -> None:
        Spy.calls.append(f"on_dispatch {jobid}")
        del self._pending[jobid]


def _scenario(incremental: bool) -> Scenario:
    registry = in_tree_registry()
    registry.pickers.register("spy", Spy)
    builder = cluster().hosts_n(3, slots=2)
    builder.queue("normal").queue("own", picker="spy")
    return _incremental(builder.build(registry=registry), incremental)


def _incremental(scenario: Scenario, incremental: bool) -> Scenario:
    """The scenario with incremental rounds on or off (a picker rebuilt to match)."""
    scenario.core.incremental = incremental
    scenario.core.rebuild_picker()
    return scenario


def _play(
    scenario: Scenario, ops: list[tuple[Any, ...]], job: Callable[[int, tuple[Any, ...]], JobSpec]
) -> None:
    """Apply ``ops`` at steps 1, 2, ...: ``submit`` (the job ``job`` makes of the
    step and op), ``round``, or ``finish`` (the running job the op's number picks)."""
    for step, op in enumerate(ops, start=1):
        if op[0] == "submit":
            scenario.submit(job(step, op), at_s=step)
        elif op[0] == "round":
            scenario.round(step)
        else:
            running = [j for j in scenario.core.state.jobs.values() if j.state is JobState.RUN]
            if running:
                scenario.finish(running[op[1] % len(running)].jobid, at_s=step)


def _job(jobid: int, tasks: int, queue: str = "normal") -> JobSpec:
    return job_spec(jobid, tasks=tasks, queue=queue)


def _limited(jobid: int, tasks: int, run_limit_s: int) -> JobSpec:
    return job_spec(jobid, tasks=tasks, run_limit_s=run_limit_s)


def _round(scenario: Scenario, at_s: int) -> list[tuple[str, int]]:
    """A round's decisions as (DISPATCH or PEND, jobid)."""
    return [(summary[0], summary[1]) for summary in scenario.round(at_s)]


def _offers(scenario: Scenario, at_s: int) -> list[int]:
    """The jobs the picker offers in a round at ``at_s`` (it runs the round)."""
    picker = scenario.core.picker
    offered: list[int] = []
    original = picker.next_job

    def next_job() -> JobInfo | None:
        job = original()
        if job is not None:
            offered.append(job.jobid)
        return job

    picker.next_job = next_job  # type: ignore[method-assign]
    try:
        scenario.round(at_s)
    finally:
        del picker.next_job  # type: ignore[attr-defined]
    return offered
