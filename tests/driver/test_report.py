"""The report's job counts at the end of a run: a job started and never ended is
either left suspended (suspended by a preemption, never resumed) or left running
(a live emulation that gave up at its timeout), never both, never a negative count."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from xce_driver.cli import _print_summary
from xce_driver.cluster.jobs import JobRecord
from xce_driver.metrics import time_series
from xce_driver.report import Report, backfill_label, summarize
from xce_driver.simulate import run_simulation
from xce_driver.workloads.mapping import MappedWorkload, SimJob
from xce_schemas import BackfillPolicy, QueueSpec, SchedulerConfig


def report_of(*records: JobRecord, skipped: dict[str, int] | None = None) -> Report:
    return summarize(
        records,
        workload="w",
        policy="p",
        hosts=1,
        slots=4,
        skipped=skipped or {},
        rounds=0,
        events=0,
        decisions={},
        sim_wall_s=0.0,
    )


def J(
    jobid: int,
    start_s: int | None = None,
    end_s: int | None = None,
    times_suspended: int = 0,
    times_resumed: int = 0,
    suspended_s: int = 0,
) -> JobRecord:
    """A 1-slot job submitted at 0 that needs 100 s."""
    return JobRecord(
        jobid=jobid,
        submit_s=0,
        run_s=100,
        tasks=1,
        start_s=start_s,
        end_s=end_s,
        times_suspended=times_suspended,
        times_resumed=times_resumed,
        suspended_s=suspended_s,
    )


FINISHED = J(1, start_s=0, end_s=100)  # finished
RUNNING = J(2, start_s=10)  # still running when the run stopped
RESUMED_RUNNING = J(3, start_s=0, times_suspended=1, times_resumed=1, suspended_s=5)  # running
LEFT_SUSPENDED = J(4, start_s=0, times_suspended=2, times_resumed=1)  # suspended again
RESUMED_FINISHED = J(5, start_s=0, end_s=150, times_suspended=1, times_resumed=1, suspended_s=50)
NEVER_STARTED = J(6)  # never started

CASES = [  # records, (left suspended, left running, suspensions, resumes, finished)
    ((FINISHED,), (0, 0, 0, 0, 1)),
    ((FINISHED, RUNNING), (0, 1, 0, 0, 1)),
    ((RESUMED_RUNNING,), (0, 1, 1, 1, 0)),
    ((LEFT_SUSPENDED,), (1, 0, 2, 1, 0)),
    ((RESUMED_FINISHED, NEVER_STARTED), (0, 0, 1, 1, 1)),
    (
        (FINISHED, RUNNING, RESUMED_RUNNING, LEFT_SUSPENDED, RESUMED_FINISHED, NEVER_STARTED),
        (1, 2, 4, 3, 2),
    ),
]


@pytest.mark.parametrize(
    ("records", "expected"),
    CASES,
    ids=[
        "one job finished",
        "a job still running at the timeout is not left suspended",
        "resumed, then still running at the timeout",
        "suspended a second time and never resumed",
        "suspended, resumed and finished",
        "all of them",
    ],
)
def test_jobs_started_and_never_ended_are_left_suspended_or_left_running(
    records: tuple[JobRecord, ...], expected: tuple[int, int, int, int, int]
) -> None:
    report = report_of(*records)
    got = (
        report.jobs_left_suspended,
        report.jobs_left_running,
        report.suspensions,
        report.resumes,
        report.jobs_finished,
    )
    assert got == expected
    assert report.jobs_preempted == sum(r.times_suspended > 0 for r in records)
    assert report.jobs_started == report.jobs_finished + sum(expected[:2])


def summary(report: Report) -> dict[str, str]:
    out = io.StringIO()
    _print_summary(Console(file=out, width=120), report, "emulate", "wall time")
    return {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in out.getvalue().splitlines()
        if line.count("│") == 3
    }


def test_an_emulation_that_timed_out_with_a_job_running_reports_no_preemption() -> None:
    # Was "0 / 0 / -1 (1 left suspended)": the running job was taken for a suspended one.
    rows = summary(report_of(FINISHED, RUNNING))
    assert rows["preempted jobs / suspensions / resumes"] == "0 / 0 / 0"
    assert rows["jobs"] == "2 total, 1 finished, 1 still running"


def test_a_job_left_suspended_is_said_so() -> None:
    rows = summary(report_of(FINISHED, LEFT_SUSPENDED))
    assert rows["preempted jobs / suspensions / resumes"] == "1 / 2 / 1 (1 left suspended)"
    assert rows["jobs"] == "2 total, 1 finished"


def test_skipped_records_are_reported_by_reason_and_in_total() -> None:
    skipped = {"unknown_submit_time": 0, "unknown_run_time": 3, "no_processors": 1}
    report = report_of(FINISHED, skipped=skipped)
    assert (report.jobs_total, report.jobs_skipped) == (5, 4)
    json = report.to_json()
    assert json["jobs_skipped_by_reason"] == skipped
    assert list(json).index("jobs_skipped_by_reason") == list(json).index("jobs_skipped") + 1
    assert summary(report)["skipped by reason"] == "unknown run time 3, no processors 1"
    assert summary(report_of(FINISHED))["skipped by reason"] == "none"


def test_the_report_says_which_backfill_policy_ran() -> None:
    """The scheduler's policy (hybrid with its depth), then each queue's own."""
    queues = (
        QueueSpec(name="normal", priority=30),
        QueueSpec(name="big", priority=30, backfill=BackfillPolicy.CONSERVATIVE),
    )
    assert backfill_label(SchedulerConfig()) == "greedy"
    config = SchedulerConfig(backfill=BackfillPolicy.HYBRID, reservation_depth=2, queues=queues)
    assert backfill_label(config) == "hybrid, depth 2; queue big: conservative"
    jobs = (SimJob(1, 0, 10, 1, "normal", "u1", run_limit_s=10),)
    workload = MappedWorkload(jobs, {}, 2, 1, 0, {"normal": 30})
    report = run_simulation(workload, source="t", backfill=BackfillPolicy.EASY).report
    assert report.backfill == "easy" and report.to_json()["backfill"] == "easy"


def test_the_report_gives_each_users_jobs_wait_and_usage() -> None:
    # One one-slot host, FCFS: a's job 1 runs 0..100, b's job 2 waits to 100 and
    # runs to 150, a's job 3 waits to 150 and runs to 160; c's job asks for two
    # slots and never starts.
    jobs = [
        SimJob(1, 0, 100, 1, "normal", "a"),
        SimJob(2, 0, 50, 1, "normal", "b"),
        SimJob(3, 0, 10, 1, "normal", "a"),
        SimJob(4, 0, 10, 2, "normal", "c"),
    ]
    workload = MappedWorkload(tuple(jobs), {}, 1, 1, 0, {"normal": 30})
    report = run_simulation(workload, source="hand-made").report
    none = {"jobs_finished": 0, "mean_wait_s": None, "p90_wait_s": None}
    assert report.users == {
        "a": {
            "jobs": 2,
            "jobs_started": 2,
            "jobs_finished": 2,
            "mean_wait_s": 75.0,
            "p90_wait_s": 135.0,  # 0 and 150: 0 + 0.9 × 150
            "mean_bounded_slowdown": 8.5,  # 100/100 and 160/10
            "usage_slot_s": 110,
        },
        "b": {
            "jobs": 1,
            "jobs_started": 1,
            "jobs_finished": 1,
            "mean_wait_s": 100.0,
            "p90_wait_s": 100.0,
            "mean_bounded_slowdown": 3.0,
            "usage_slot_s": 50,
        },
        "c": {
            "jobs": 1,
            "jobs_started": 0,
            **none,
            "mean_bounded_slowdown": None,
            "usage_slot_s": 0,
        },
    }
    # The sizes: three one-slot jobs, one two-slot job; one queue holds all four.
    assert list(report.sizes) == ["1", "2"]
    assert report.sizes["1"]["jobs"] == 3 and report.sizes["2"]["jobs_started"] == 0
    assert report.queues["normal"]["jobs"] == 4
    assert report.queues["normal"]["mean_wait_s"] == round((0 + 100 + 150) / 3, 3)
    # Waits 0, 100, 150: p50 100, p90 100 + 0.8 × 50, p99 100 + 0.98 × 50.
    assert report.wait_percentiles_s == {"p50": 100.0, "p90": 140.0, "p99": 149.0}
    # Slowdowns 1, 3, 16.
    assert report.bounded_slowdown_percentiles == {"p50": 3.0, "p90": 13.4, "p99": 15.74}


def test_the_time_series_counts_pending_running_and_busy_slots() -> None:
    # One 2-slot host, FCFS: job 1 (2 slots) runs 0..100; job 2 (1 slot, submitted
    # at 10) waits to 100 and runs to 150; job 3 (1 slot, at 20) runs 100..130.
    jobs = (
        SimJob(1, 0, 100, 2, "normal", "a"),
        SimJob(2, 10, 50, 1, "normal", "a"),
        SimJob(3, 20, 30, 1, "normal", "b"),
    )
    records = run_simulation(
        MappedWorkload(jobs, {}, 1, 2, 0, {"normal": 30}), source="t"
    ).records.values()
    series = time_series(records, slots=2, interval_s=50)
    assert list(series.rows()) == [
        (0, 0, 1, 2, 1.0),
        (50, 2, 1, 2, 1.0),
        (100, 0, 2, 2, 1.0),
        (150, 0, 0, 0, 0.0),
    ]
    # A suspension is not running time: 40..70 of a job running 0..100.
    suspended = JobRecord(9, 0, 70, 1, start_s=0, end_s=100)
    suspended.suspend(40)
    suspended.resume(70)
    assert suspended.suspended_s == 30
    assert list(time_series([suspended], slots=1, interval_s=30).running) == [1, 1, 0, 1, 0]
