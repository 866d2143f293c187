"""Run limits (issue 15, item 1): a job's own, its queue's, the one in force, and a
job's expected end, running, past its limit, suspended and pending; bad run limits
are refused by name and change nothing."""

from __future__ import annotations

from typing import Any

import pytest
from xce_core.errors import EventError
from xce_core.runtime import effective_run_limit_s, expected_end_ns, ran_ns
from xce_core.snapshot import save_snapshot
from xce_core.state import Job, Queue
from xce_schemas import JobState

from tests.builders import NS, Scenario, cluster, job_spec


def job(run_limit_s: int | None) -> Job:
    return Job(1, "normal", "u1", None, 0, 1, "", 0, 0, run_limit_s=run_limit_s)


@pytest.mark.parametrize(
    ("own", "queue_limit", "expected"),
    [
        (None, None, None),
        (600, None, 600),
        (None, 3600, 3600),
        (600, 3600, 600),
        (7200, 3600, 3600),
    ],
    ids=[
        "neither gives one: unbounded",
        "the job's own",
        "none of its own: its queue's",
        "its own below its queue's",
        "its own above its queue's: the queue kills it there",
    ],
)
def test_the_run_limit_in_force(own: int | None, queue_limit: int | None, expected: int) -> None:
    queue = Queue("normal", 30, run_limit_s=queue_limit)
    assert effective_run_limit_s(job(own), queue) == expected


def test_a_queue_not_known_leaves_the_jobs_own_limit() -> None:
    assert effective_run_limit_s(job(600), None) == 600
    assert effective_run_limit_s(job(None), None) is None


def one_job(run_limit_s: int | None = 100, queue_limit: int | None = None) -> Scenario:
    """h1, one slot; job 1 (limit ``run_limit_s``) submitted at 0, dispatched at 10."""
    sc = (
        cluster()
        .hosts_n(1)
        .queue("normal", run_limit_s=queue_limit)
        .job(1, run_limit_s=run_limit_s)
        .build()
    )
    assert sc.round(10) == [("DISPATCH", 1, ("h1",))]
    return sc


def expected_s(sc: Scenario, jobid: int, now_s: int) -> float | None:
    state = sc.core.state
    found = state.jobs[jobid]
    end = expected_end_ns(found, state.queues[found.queue], now_s * NS)
    return None if end is None else end / NS


def ran_s(sc: Scenario, jobid: int, now_s: int) -> float:
    return ran_ns(sc.core.state.jobs[jobid], now_s * NS) / NS


def test_a_running_job_is_expected_to_end_at_start_plus_limit() -> None:
    sc = one_job(100)
    assert (ran_s(sc, 1, 50), expected_s(sc, 1, 50)) == (40, 110)


def test_a_job_past_its_limit_is_expected_to_end_now() -> None:
    sc = one_job(100)
    assert (ran_s(sc, 1, 110), expected_s(sc, 1, 110)) == (100, 110)
    assert (ran_s(sc, 1, 150), expected_s(sc, 1, 150)) == (140, 150)


def test_without_a_limit_the_end_is_not_known() -> None:
    sc = one_job(None)
    assert expected_s(sc, 1, 50) is None
    assert ran_s(sc, 1, 50) == 40


def test_the_queues_limit_stands_in_for_the_jobs_own() -> None:
    assert expected_s(one_job(None, queue_limit=60), 1, 20) == 70
    assert expected_s(one_job(600, queue_limit=60), 1, 20) == 70


def test_time_suspended_does_not_count_towards_the_limit() -> None:
    sc = one_job(100)
    sc.state_change(1, JobState.SUSP, at_s=30)  # ran 20 s
    # Suspended: it has 80 s to go from whenever it resumes.
    assert (ran_s(sc, 1, 60), expected_s(sc, 1, 60)) == (20, 140)
    assert (ran_s(sc, 1, 90), expected_s(sc, 1, 90)) == (20, 170)
    sc.state_change(1, JobState.RUN, at_s=70)  # resumed by the controller after 40 s
    assert sc.core.state.jobs[1].suspended_ns == 40 * NS
    # start 10 + 40 s suspended + limit 100.
    assert (ran_s(sc, 1, 80), expected_s(sc, 1, 80)) == (30, 150)
    assert expected_s(sc, 1, 200) == 200  # past it: now


def test_time_suspended_by_a_preemption_counts_from_the_core_s_resume() -> None:
    sc = (
        cluster()
        .queue("urgent", priority=100, preemptible_queues=("normal",))
        .queue("normal", priority=30, preemptible=True)
        .hosts_n(1)
        .job(1, run_limit_s=100)
        .build()
    )
    assert sc.round(0) == [("DISPATCH", 1, ("h1",))]
    sc.submit(job_spec(2, queue="urgent", priority=100, submit_s=10), at_s=10)
    assert sc.round(10) == [("PREEMPT", 2, (1,)), ("PEND", 2, "PREEMPT_WAIT")]
    sc.state_change(1, JobState.SUSP, at_s=10)
    assert sc.round(10) == [("DISPATCH", 2, ("h1",))]
    sc.finish(2, at_s=30)
    assert sc.round(30) == [("RESUME", 1, None)]
    assert sc.core.state.jobs[1].suspended_ns == 20 * NS
    assert (ran_s(sc, 1, 40), expected_s(sc, 1, 40)) == (20, 120)


def test_a_pending_job_is_expected_to_end_a_limit_after_now() -> None:
    sc = cluster().hosts_n(1).queue("normal").job(1, run_limit_s=100).job(2, run_limit_s=5).build()
    sc.round(10)
    assert (ran_s(sc, 2, 12), expected_s(sc, 2, 12)) == (0, 17)


def test_a_requeued_job_starts_its_limit_afresh() -> None:
    sc = one_job(100)
    sc.state_change(1, JobState.SUSP, at_s=20)
    sc.state_change(1, JobState.RUN, at_s=50)
    sc.state_change(1, JobState.PEND, at_s=60)  # requeued
    assert expected_s(sc, 1, 60) == 160
    assert sc.round(70) == [("DISPATCH", 1, ("h1",))]
    assert sc.core.state.jobs[1].suspended_ns == 0
    assert (ran_s(sc, 1, 80), expected_s(sc, 1, 80)) == (10, 170)


def test_job_update_changes_the_run_limit_and_none_leaves_it() -> None:
    sc = one_job(100)
    update: dict[str, Any] = {"type": "JOB_UPDATE", "ts": 20 * NS}
    sc.push({**update, "payload": {"jobid": 1, "run_limit_s": 300}})  # bmod -W, running
    assert sc.core.state.jobs[1].run_limit_s == 300
    assert expected_s(sc, 1, 20) == 310
    sc.push({**update, "payload": {"jobid": 1, "priority": 5}})
    assert (sc.core.state.jobs[1].run_limit_s, sc.core.state.jobs[1].priority) == (300, 5)


BAD_LIMITS = [0, -60, 1.5, 60.0, "60", True, 2**63, None]


def bad_push(limit: Any) -> dict[str, Any]:
    spec = {"jobid": 5, "queue": "normal", "submit_ts": 0, "run_limit_s": limit}
    if limit is None:  # explicit JSON null is "not given", fine: spoil another way
        spec["run_limit_s"] = [60]
    return {"type": "JOBS_PUSH", "ts": 20 * NS, "payload": {"jobs": [spec]}}


@pytest.mark.parametrize(
    "limit",
    BAD_LIMITS,
    ids=["zero", "negative", "fraction", "float", "string", "boolean", "past 63 bits", "list"],
)
def test_bad_run_limit_is_refused_by_name_and_changes_nothing(limit: Any) -> None:
    sc = one_job(100)
    before = save_snapshot(sc.core)
    with pytest.raises(EventError, match=r"^JOBS_PUSH rejected: payload\.jobs\[0\]\.run_limit_s: "):
        sc.push(bad_push(limit))
    payload = bad_push(limit)["payload"]["jobs"][0]["run_limit_s"]
    with pytest.raises(EventError, match=r"^JOB_UPDATE rejected: payload\.run_limit_s: "):
        sc.push(
            {"type": "JOB_UPDATE", "ts": 20 * NS, "payload": {"jobid": 1, "run_limit_s": payload}}
        )
    assert save_snapshot(sc.core) == before


def test_zero_run_limit_says_what_is_allowed() -> None:
    sc = one_job(100)
    with pytest.raises(EventError) as caught:
        sc.push(bad_push(0))
    assert str(caught.value) == (
        "JOBS_PUSH rejected: payload.jobs[0].run_limit_s: Input should be greater than or "
        "equal to 1"
    )
