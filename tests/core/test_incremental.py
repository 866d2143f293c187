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
from xce_schemas import (
    BackfillPolicy,
    Dispatch,
    HostStatus,
    JobSpec,
    JobState,
    JobUpdate,
    PendingCode,
    dump_decision,
)
from xce_schemas.events import JobUpdatePayload

from tests.builders import NS, Scenario, cluster, job_spec
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
        return [dump_decision(decision).decode() for decision in scenario.decisions]

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
    assert isinstance(picker, BuiltinFcfs) and picker._parked == {3: (2, None, None)}


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
        streams[incremental] = [dump_decision(decision).decode() for decision in scenario.decisions]
    assert streams[True] == streams[False]


def _held_back(
    incremental: bool,
    then: Callable[[Scenario], list[Any]],
    short: bool = True,
    depth: int | None = None,
) -> tuple[list[Any], list[str]]:
    """Eight one-slot hosts under ``easy``: job 1 (4 tasks) runs on h1-h4 until 100 s,
    jobs 2 and 8 (2 tasks each, for long) on h5-h8, and job 2 ends. Job 3 (6 tasks)
    then reserves h1-h6 from 100 s, holding the free h5-h6; job 4 (3 tasks, 10 s;
    left out without ``short``) is short of slots; job 5 (2 tasks, 1000 s) pends for
    job 3's room, parked for it in the incremental loop. ``then`` goes on from there:
    what it returns, and the whole decision stream. With ``depth``, under ``hybrid``
    of that depth."""
    policy = {"backfill": "easy"} if depth is None else {"backfill": "hybrid"}
    builder = cluster().hosts_n(8).configure(**policy, reservation_depth=depth)
    scenario = _incremental(builder.build(), incremental)
    for jobid, tasks, limit in ((1, 4, 100), (2, 2, 9000), (8, 2, 9000)):
        scenario.submit(_limited(jobid, tasks, limit), at_s=0)
        scenario.round(0)
    scenario.finish(2, at_s=0)
    jobs = [_limited(3, 6, 100), _limited(4, 3, 10), _limited(5, 2, 1000)]
    scenario.submit(*(jobs if short else jobs[::2]), at_s=1)
    assert scenario.round(1)[-1] == ("PEND", 5, "RESERVED")
    if incremental and depth is None:
        picker = scenario.core.picker
        assert (
            isinstance(picker, BuiltinFcfs)
            and picker._parked[5][0] == 2
            and picker._parked[5][1] is not None
        )
    return then(scenario), [dump_decision(decision).decode() for decision in scenario.decisions]


def test_a_job_parked_for_reserved_room_is_offered_once_too_few_slots_are_free() -> None:
    # Job 8 ends: job 3's reservation stays as it was, job 4 (ending before it
    # starts) takes its held room and one more, and one slot is left: too few
    # for job 5 even were no room held.
    def then(scenario: Scenario) -> list[Any]:
        scenario.finish(8, at_s=2)
        return scenario.round(2)

    ours, stream = _held_back(True, then)
    assert ours == [("DISPATCH", 4, ("h5", "h6", "h7")), ("PEND", 5, "NOT_ENOUGH_SLOTS")]
    assert stream == _held_back(False, then)[1]


def test_a_job_parked_for_reserved_room_is_offered_once_room_outside_it_is_free() -> None:
    # Job 8 ends (job 3's reservation stays as it was): h7-h8 are free outside
    # the held room, and job 5 starts there.
    def then(scenario: Scenario) -> list[Any]:
        scenario.finish(8, at_s=2)
        return scenario.round(2)

    ours, stream = _held_back(True, then, short=False)
    assert ours == [("DISPATCH", 5, ("h7", "h8"))]
    assert stream == _held_back(False, then, short=False)[1]


def test_a_job_parked_for_reserved_room_is_offered_once_other_room_is_reserved() -> None:
    # Job 7 comes first and reserves the same hosts: the room held is the same,
    # but job 5 now pends for job 7's.
    def then(scenario: Scenario) -> list[Any]:
        scenario.submit(job_spec(7, tasks=6, priority=5, run_limit_s=100, submit_s=2), at_s=2)
        return scenario.round(2)

    ours, stream = _held_back(True, then)
    assert ours[-1] == ("PEND", 5, "RESERVED")
    assert stream[-1] != _held_back(True, lambda scenario: [])[1][-1]  # reserved for job 7
    assert stream == _held_back(False, then)[1]


def test_a_job_parked_for_reserved_room_is_offered_once_that_room_starts_after_it_ends() -> None:
    # Job 1 may run till 3,000 s now: job 3's reservation moves there (on the same
    # hosts), after job 5 would end, so job 5 may take the room held for job 3.
    def then(scenario: Scenario) -> list[Any]:
        scenario.push(JobUpdate(ts=2 * NS, payload=JobUpdatePayload(jobid=1, run_limit_s=3000)))
        return scenario.round(2)

    ours, stream = _held_back(True, then, short=False)
    assert ours == [("DISPATCH", 5, ("h5", "h6"))]
    assert stream == _held_back(False, then, short=False)[1]


#: After ``_held_back``: submits (tasks, run limit s, priority), ends, rounds, and run
#: limits of running jobs changed, each a second apart.
after_held_back = st.lists(
    st.one_of(
        st.tuples(
            st.just("submit"),
            st.integers(1, 6),
            st.sampled_from([5, 50, 500, 5000, None]),
            st.sampled_from([0, 0, 5]),
        ),
        st.tuples(st.just("finish"), st.integers(0, 20)),
        st.tuples(st.just("round")),
        st.tuples(st.just("limit"), st.integers(0, 20), st.sampled_from([10, 200, 3000])),
    ),
    min_size=5,
    max_size=40,
)


@pytest.mark.parametrize("depth", [None, 2, 3], ids=["easy", "hybrid 2", "hybrid 3"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(short=st.booleans(), ops=after_held_back)
def test_jobs_parked_for_reserved_room_decide_as_the_full_loop(
    depth: int | None, short: bool, ops: list[tuple[Any, ...]]
) -> None:
    def then(scenario: Scenario) -> list[Any]:
        for step, op in enumerate(ops, start=2):
            running = [j for j in scenario.core.state.jobs.values() if j.state is JobState.RUN]
            if op[0] == "submit":
                spec = job_spec(100 + step, tasks=op[1], run_limit_s=op[2], priority=op[3])
                scenario.submit(spec, at_s=step)
            elif op[0] == "round":
                scenario.round(step)
            elif running and op[0] == "finish":
                scenario.finish(running[op[1] % len(running)].jobid, at_s=step)
            elif running:
                jobid = running[op[1] % len(running)].jobid
                update = JobUpdatePayload(jobid=jobid, run_limit_s=op[2])
                scenario.push(JobUpdate(ts=step * NS, payload=update))
        return []

    full = _held_back(False, then, short, depth)[1]
    assert _held_back(True, then, short, depth)[1] == full


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


def _blocked_then_moved(incremental: bool) -> tuple[list[Any], list[str]]:
    """Four one-slot hosts, queues ``a`` and ``b`` each ``strict`` on its own: job 1
    (queue ``a``, 3 tasks) runs, job 2 (``a``, 2 tasks, priority 5) cannot start and
    blocks ``a``, so job 3 (``a``, 1 task) is held back (parked behind job 2 in the
    incremental loop). Job 2 then moves to queue ``b``: it blocks ``b`` from then on,
    no longer job 3. Returns the round after the move and the whole stream."""
    builder = cluster().hosts_n(4).queue("a", backfill="strict").queue("b", backfill="strict")
    scenario = _incremental(builder.build(), incremental)
    scenario.submit(job_spec(1, tasks=3, queue="a"), at_s=0)
    scenario.round(0)
    scenario.submit(job_spec(2, tasks=2, queue="a", priority=5), job_spec(3, tasks=1, queue="a"))
    assert scenario.round(1) == [("PEND", 2, "NOT_ENOUGH_SLOTS"), ("PEND", 3, "ORDER_BLOCKED")]
    scenario.push(JobUpdate(ts=2 * NS, payload=JobUpdatePayload(jobid=2, queue="b")))
    after = scenario.round(2)
    return after, [dump_decision(decision).decode() for decision in scenario.decisions]


def test_a_job_held_back_under_strict_is_offered_once_its_blocker_moves_to_another_domain() -> None:
    ours, stream = _blocked_then_moved(True)
    assert ours == [("DISPATCH", 3, ("h4",))]
    assert stream == _blocked_then_moved(False)[1]


def test_jobs_held_back_under_strict_are_parked_behind_their_blocker() -> None:
    # While job 2 blocks, job 3 is not offered at all in the incremental loop.
    builder = cluster().hosts_n(4).configure(backfill="strict")
    scenario = builder.build()
    scenario.submit(job_spec(1, tasks=3), at_s=0)
    scenario.round(0)
    scenario.submit(*(job_spec(jobid, tasks=2 if jobid == 2 else 1) for jobid in (2, 3, 4)))
    assert [d[0] for d in scenario.round(1)] == ["PEND"] * 3
    assert _offers(scenario, 2) == [2]
    scenario.finish(1, at_s=3)
    # Job 2 starts: jobs 3 and 4 are offered again, in order, and start.
    assert _offers(scenario, 4) == [2, 3, 4]
    assert [d.jobid for d in scenario.decisions[-3:] if isinstance(d, Dispatch)] == [2, 3, 4]


def test_jobs_held_back_under_strict_stay_parked_and_unannounced_when_the_head_changes() -> None:
    """The head that blocks a strict domain changes each time one starts; the jobs
    behind it are held back as before: no new PEND for them (their reason names no
    job), and in the incremental loop no turn either. Before, each new head made a
    new reason for every job behind it: on a long backlog, O(backlog) decisions and
    turns per start."""
    builder = cluster().hosts_n(4).configure(backfill="strict")
    scenario = builder.build()
    scenario.submit(job_spec(1, tasks=3), at_s=0)
    scenario.round(0)
    scenario.submit(
        *(job_spec(jobid, tasks=tasks) for jobid, tasks in ((2, 2), (3, 4), (4, 1), (5, 1)))
    )
    assert scenario.round(1) == [
        ("PEND", 2, "NOT_ENOUGH_SLOTS"),
        ("PEND", 3, "ORDER_BLOCKED"),
        ("PEND", 4, "ORDER_BLOCKED"),
        ("PEND", 5, "ORDER_BLOCKED"),
    ]
    scenario.finish(1, at_s=3)
    start = len(scenario.decisions)
    # Job 2 starts; job 3 is the head now (2 free, it needs 4): 4 and 5 are not offered.
    assert _offers(scenario, 3) == [2, 3]
    made = [(type(d).__name__, d.jobid) for d in scenario.decisions[start:] if hasattr(d, "jobid")]
    assert made == [("Dispatch", 2), ("Pend", 3)]
    full = _incremental(builder.build(), False)
    full.submit(job_spec(1, tasks=3), at_s=0)
    full.round(0)
    full.submit(
        *(job_spec(jobid, tasks=tasks) for jobid, tasks in ((2, 2), (3, 4), (4, 1), (5, 1)))
    )
    full.round(1)
    full.finish(1, at_s=3)
    full.round(3)
    assert [dump_decision(d) for d in full.decisions] == [
        dump_decision(d) for d in scenario.decisions
    ]
