"""Tests of the closed-loop cluster emulator, the simulation wiring and its report.

Scenarios are tiny hand-made workloads on hosts of one slot each. A job's label gives
its shape: ``J<jobid>.S<submit s>.R<run s>.T<tasks>``; every expectation is an exact
``(start_s, end_s)`` worked out by hand from the emulator's rules:

* ``builtin_fcfs`` tries pending jobs in submit order (job number breaks ties) and
  starts every one that fits, so a later small job may start before an earlier
  large one that does not fit yet;
* at one instant, finishes come before submissions, which come before the round.
"""

from __future__ import annotations

import gzip
import statistics
from pathlib import Path

import orjson
import pytest
from xce_core.core import SchedCore
from xce_core.errors import ConfigError
from xce_driver.cluster.controller import job_request, job_spec
from xce_driver.cluster.jobs import NS, RunPlan
from xce_driver.cluster.timeline import EventPriority, SimulationTimeError
from xce_driver.emulator import ClusterEmulator
from xce_driver.recording import RecordingWriter
from xce_driver.simulate import (
    SimulationResult,
    host_specs,
    run_simulation,
    scheduler_config,
)
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.mapping import MappedWorkload, SimJob, map_trace
from xce_schemas import (
    BeginRound,
    CoreEvent,
    Decision,
    DecisionLine,
    End,
    Header,
    JobSpec,
    JobsPush,
    JobStateChange,
    JobUpdate,
    QueueSpec,
    Snapshot,
    config_hash,
    parse_recording_line,
)
from xce_schemas.events import JobsPushPayload, JobUpdatePayload
from xce_schemas.snapshot import CoreSnapshot

SDSC_ORIGIN = 893_466_664  # SDSC-SP2's UnixStartTime: a realistic epoch origin


def J(jobid: int, submit_s: int, run_s: int, tasks: int) -> SimJob:
    """A job of queue ``normal``: ``J<jobid>.S<submit_s>.R<run_s>.T<tasks>``."""
    return SimJob(
        jobid=jobid, submit_s=submit_s, run_s=run_s, tasks=tasks, queue="normal", user="u1"
    )


def workload(
    jobs: list[SimJob],
    *,
    hosts: int = 4,
    origin_s: int = 0,
    skipped: dict[str, int] | None = None,
) -> MappedWorkload:
    return MappedWorkload(
        jobs=tuple(jobs),
        skipped=skipped or {},
        hosts=hosts,
        slots_per_host=1,
        origin_s=origin_s,
        queues={"normal": 30},
    )


def simulate(
    jobs: list[SimJob],
    *,
    hosts: int = 4,
    origin_s: int = 0,
    interval: int | None = None,
    recording: RecordingWriter | None = None,
    skipped: dict[str, int] | None = None,
) -> SimulationResult:
    return run_simulation(
        workload(jobs, hosts=hosts, origin_s=origin_s, skipped=skipped),
        source="hand-made",
        round_interval_s=interval,
        recording=recording,
    )


def times(result: SimulationResult) -> dict[int, tuple[int | None, int | None]]:
    return {jobid: (r.start_s, r.end_s) for jobid, r in sorted(result.records.items())}


# --- start and end times ---------------------------------------------------------------

FCFS_CASES = [
    (
        [
            J(1, 0, 10, 2),  # started at once
            J(2, 0, 5, 3),  # waits for job 1
            J(3, 1, 4, 1),  # fits beside job 1
            J(4, 2, 3, 2),  # fits when job 3 ends
        ],
        {1: (0, 10), 2: (10, 15), 3: (1, 5), 4: (5, 8)},
    ),
    (
        [J(1, 0, 10, 4), J(2, 10, 5, 4)],  # job 2 arrives as job 1 ends
        {1: (0, 10), 2: (10, 15)},
    ),
    (
        [J(1, 0, 0, 4), J(2, 0, 5, 4)],  # job 2 is queued behind a zero-run job
        {1: (0, 0), 2: (0, 5)},
    ),
    (
        [J(1, 0, 0, 4), J(2, 0, 0, 4), J(3, 0, 0, 4), J(4, 0, 7, 4)],
        {1: (0, 0), 2: (0, 0), 3: (0, 0), 4: (0, 7)},
    ),
    (
        [J(7, 0, 10, 3), J(3, 0, 10, 3)],  # same instant, handed over in this order
        {3: (0, 10), 7: (10, 20)},
    ),
    (
        [J(1, 0, 5, 4), J(2, 100, 5, 4), J(3, 100, 5, 1)],
        {1: (0, 5), 2: (100, 105), 3: (105, 110)},
    ),
    (
        [J(1, 2, 30, 4), J(2, 3, 1, 1), J(3, 4, 1, 4)],
        {1: (2, 32), 2: (32, 33), 3: (33, 34)},
    ),
]
FCFS_IDS = [
    "FCFS on 4 hosts, a later small job fills a hole",
    "a job arriving the instant another finishes starts at that instant",
    "a job queued behind a zero-run-time job starts at the same instant",
    "a chain of zero-run-time jobs all run at one instant",
    "same submit instant: the lower job number goes first",
    "idle cluster: each job starts at its submit time",
    "full cluster: jobs start one after the other in submit order",
]


@pytest.mark.parametrize("jobs, expected", FCFS_CASES, ids=FCFS_IDS)
def test_start_and_end_times(jobs: list[SimJob], expected: dict[int, tuple[int, int]]) -> None:
    result = simulate(jobs)
    assert times(result) == expected
    for job in jobs:
        record = result.records[job.jobid]
        assert len(record.hosts) == job.tasks
        assert not record.rejected


@pytest.mark.parametrize("jobs, expected", FCFS_CASES, ids=FCFS_IDS)
def test_times_are_relative_to_the_trace_origin(
    jobs: list[SimJob], expected: dict[int, tuple[int, int]]
) -> None:
    assert times(simulate(jobs, origin_s=SDSC_ORIGIN)) == expected


def test_hosts_of_the_first_dispatches() -> None:
    result = simulate([J(1, 0, 10, 2), J(2, 0, 5, 3), J(3, 1, 4, 1)])
    assert result.records[1].hosts == ("h001", "h002")
    assert result.records[3].hosts == ("h003",)
    assert result.records[2].hosts == ("h001", "h002", "h003")


@pytest.mark.parametrize(
    "jobs, interval, origin_s, expected",
    [
        (
            [J(1, 3, 7, 4), J(2, 4, 5, 4)],
            10,
            0,
            {1: (10, 17), 2: (20, 25)},
        ),
        (
            [J(1, 5, 0, 4), J(2, 5, 3, 4)],
            10,
            0,
            {1: (10, 10), 2: (10, 13)},
        ),
        (
            [J(1, 5, 100, 1), J(2, 20, 5, 1)],
            10,
            0,
            {1: (10, 110), 2: (20, 25)},
        ),
        (
            [J(1, 3, 5, 4), J(2, 9, 1, 4)],
            7,
            SDSC_ORIGIN,
            {1: (7, 12), 2: (14, 15)},
        ),
        (
            [J(1, 1, 10, 4), J(2, 2, 10, 4), J(3, 50, 1, 1)],
            60,
            0,
            {1: (60, 70), 2: (120, 130), 3: (180, 181)},
        ),
        (
            [J(1, 20, 5, 1)],
            10,
            0,
            {1: (20, 25)},
        ),
        (
            [J(1, 0, 5, 1), J(2, 30, 5, 1)],
            10,
            SDSC_ORIGIN,
            {1: (0, 5), 2: (30, 35)},
        ),
        (
            [J(1, 3, 10, 4), J(2, 4, 1, 4)],
            10,
            0,
            {1: (10, 20), 2: (20, 21)},
        ),
    ],
    ids=[
        "submitted between grid points: started at the next one",
        "a zero-run-time job on the grid gets a further round at that instant",
        "busy cluster: a job submitted on a grid point starts there",
        "a 7 s grid counted from the trace origin",
        "hosts freed between grid points go to the waiting jobs at the next one",
        "idle cluster: a job submitted on a grid point starts there",
        "idle cluster: jobs submitted at the origin and on later grid points start there",
        "a job ending on a grid point frees its hosts for that point's round",
    ],
)
def test_round_interval_puts_starts_on_the_grid(
    jobs: list[SimJob], interval: int, origin_s: int, expected: dict[int, tuple[int, int]]
) -> None:
    assert times(simulate(jobs, interval=interval, origin_s=origin_s)) == expected


def test_round_interval_on_a_generated_workload() -> None:
    mapped = map_trace(generate_lublin(n_jobs=200, nodes=32, seed=3))
    result = run_simulation(mapped, source="lublin", round_interval_s=300)
    records = result.records.values()
    assert all(r.start_s is not None and r.end_s is not None for r in records)
    assert all(r.start_s % 300 == 0 for r in records if r.start_s is not None)
    assert all(r.start_s >= r.submit_s for r in records if r.start_s is not None)
    assert all(r.end_s == r.start_s + r.run_s for r in records if r.start_s is not None)
    assert result.report.jobs_finished == 200


def _never_fits(jobid: int, submit_s: int) -> SimJob:
    """``J<jobid>.S<submit_s>.R10.T1`` reserving 1 TB on hosts of 1 GB: it pends forever
    (not larger than the cluster in slots, so nobody rejects it)."""
    return SimJob(
        jobid=jobid,
        submit_s=submit_s,
        run_s=10,
        tasks=1,
        queue="normal",
        user="u1",
        resreq="rusage[mem=1000000]",
    )


@pytest.mark.parametrize(
    "interval", [None, 1, 60], ids=["rounds at changes", "a 1 s grid", "a 60 s grid"]
)
def test_a_job_that_never_fits_ends_the_run_without_hanging(interval: int | None) -> None:
    jobs = (J(1, 0, 100, 1), _never_fits(2, 5), J(3, 30, 10, 1))
    mapped = MappedWorkload(
        jobs=jobs,
        skipped={},
        hosts=2,
        slots_per_host=1,
        origin_s=SDSC_ORIGIN,
        queues={"normal": 30},
        host_mem_mb=1024.0,
    )
    result = run_simulation(mapped, source="hand-made", round_interval_s=interval)
    assert result.records[2].start_s is None
    assert [result.records[j].end_s is not None for j in (1, 3)] == [True, True]
    report = result.report
    assert (report.jobs_finished, report.jobs_never_started) == (2, 1)
    # On a grid, rounds stop at the first grid instant after job 1 (the last to run) ends.
    if interval is not None:
        last_end = max(r.end_s for r in result.records.values() if r.end_s is not None)
        assert report.rounds <= last_end // interval + 2


@pytest.mark.parametrize(
    "jobs, interval, message",
    [
        (
            [J(1, 0, 2**64 // NS + 1, 1)],
            None,
            "job 1 ends at 18,446,744,074 s is past the end of virtual time "
            "(18,446,744,073,709,551,616 ns after the epoch)",
        ),
        (
            [J(1, 0, 2**64 // NS - 1, 1), _never_fits(2, 0)],
            10**9,
            "the round at 19,000,000,000 s is past the end of virtual time "
            "(18,446,744,073,709,551,616 ns after the epoch)",
        ),
    ],
    ids=["a job ending past 2**64 ns", "a grid round past 2**64 ns"],
)
def test_virtual_time_past_64_bits_is_a_named_error(
    jobs: list[SimJob], interval: int | None, message: str
) -> None:
    mapped = MappedWorkload(
        jobs=tuple(jobs),
        skipped={},
        hosts=2,
        slots_per_host=1,
        origin_s=0,
        queues={"normal": 30},
        host_mem_mb=1024.0,
    )
    with pytest.raises(SimulationTimeError) as error:
        run_simulation(mapped, source="hand-made", round_interval_s=interval)
    assert str(error.value) == message


@pytest.mark.parametrize("interval", [0, -1, -600], ids=["zero", "minus one", "minus ten minutes"])
def test_round_interval_must_be_positive(interval: int) -> None:
    config = scheduler_config(workload([]), "builtin_fcfs")
    with pytest.raises(ValueError, match=f"round interval must be positive, not {interval}"):
        ClusterEmulator([], host_specs(4, 1), config, lambda event: None, round_interval_s=interval)


def test_event_priority_order() -> None:
    assert EventPriority.FINISH < EventPriority.SUBMIT < EventPriority.ROUND


# --- the event stream, wired by hand ----------------------------------------------------


def _wire(
    jobs: list[SimJob], hosts: int = 4
) -> tuple[ClusterEmulator, list[CoreEvent], list[Decision]]:
    events: list[CoreEvent] = []
    decisions: list[Decision] = []
    emulator: ClusterEmulator

    def on_decision(decision: Decision) -> None:
        decisions.append(decision)
        emulator.on_decision(decision)

    core = SchedCore(on_decision=on_decision, prng_seed=1)

    def push(event: CoreEvent) -> None:
        events.append(event)
        core.push_event(event)

    wl = workload(jobs, hosts=hosts)
    emulator = ClusterEmulator(
        wl.jobs, host_specs(hosts, 1), scheduler_config(wl, "builtin_fcfs"), push
    )
    return emulator, events, decisions


def _summary(event: CoreEvent) -> tuple[object, ...]:
    ts = event.ts // NS
    if isinstance(event, JobsPush):
        return (event.type, ts, tuple(job.jobid for job in event.payload.jobs))
    if isinstance(event, JobStateChange):
        return (event.type, ts, event.payload.jobid, event.payload.state.value)
    return (event.type, ts)


def test_finish_comes_before_submit_before_round_at_one_instant() -> None:
    emulator, events, decisions = _wire([J(1, 0, 10, 4), J(2, 10, 5, 4), J(3, 10, 1, 1)])
    emulator.run()
    assert [_summary(event) for event in events] == [
        ("CONFIG_PUSH", 0),
        ("WORKERS_PUSH", 0),
        ("JOBS_PUSH", 0, (1,)),
        ("BEGIN_ROUND", 0),
        ("JOB_STATE_CHANGE", 10, 1, "DONE"),
        ("JOBS_PUSH", 10, (2, 3)),
        ("BEGIN_ROUND", 10),
        ("JOB_STATE_CHANGE", 15, 2, "DONE"),
        ("BEGIN_ROUND", 15),
        ("JOB_STATE_CHANGE", 16, 3, "DONE"),
        ("BEGIN_ROUND", 16),
    ]
    assert [(d.op, d.ts // NS, getattr(d, "jobid", None)) for d in decisions] == [
        ("NEW_SESSION", 0, None),
        ("DISPATCH", 0, 1),
        ("NEW_SESSION", 10, None),
        ("DISPATCH", 10, 2),
        ("PEND", 10, 3),
        ("NEW_SESSION", 15, None),
        ("DISPATCH", 15, 3),
        ("NEW_SESSION", 16, None),
    ]
    assert emulator.stats.rounds == 4
    assert emulator.stats.events == len(events)
    assert emulator.stats.decisions == {"NEW_SESSION": 4, "DISPATCH": 3, "PEND": 1}


def test_a_jobs_own_run_limit_is_submitted_and_recorded_but_kills_nothing() -> None:
    jobs = [
        SimJob(1, 0, 50, 1, "normal", "u1", run_limit_s=30),  # J1.S0.R50.T1, asked 30 s
        J(2, 0, 10, 1),  # no limit of its own
    ]
    emulator, events, _ = _wire(jobs)
    records = emulator.run()
    (push,) = [event for event in events if isinstance(event, JobsPush)]
    assert [(job.jobid, job.run_limit_s) for job in push.payload.jobs] == [(1, 30), (2, None)]
    # Job 1 runs its run time, past its own limit: only a queue's limit kills.
    assert (records[1].end_s, records[1].killed_by_runlimit) == (50, False)
    assert (records[1].run_limit_s, records[2].run_limit_s) == (30, None)
    queue = QueueSpec(name="normal", priority=30)
    assert job_request(jobs[0], queue).run_limit_s == 30  # what emulate sends over NATS


def test_run_limits_of_input_jobs_are_recorded_and_follow_job_updates() -> None:
    core = SchedCore(on_decision=lambda d: emulator.on_decision(d), prng_seed=1)
    wl = workload([])
    spec = JobSpec(jobid=7, queue="normal", submit_ts=5 * NS, run_limit_s=40)
    inputs: list[CoreEvent] = [
        JobsPush(ts=5 * NS, payload=JobsPushPayload(jobs=(spec,))),
        JobUpdate(ts=6 * NS, payload=JobUpdatePayload(jobid=7, run_limit_s=90)),
    ]
    emulator = ClusterEmulator(
        [],
        host_specs(1, 1),
        scheduler_config(wl, "builtin_fcfs"),
        core.push_event,
        inputs=inputs,
        run_plans={7: RunPlan(20 * NS)},
    )
    records = emulator.run()
    assert (records[7].start_s, records[7].end_s, records[7].run_limit_s) == (5, 25, 90)
    assert core.state.jobs == {}


def test_job_larger_than_the_cluster_is_turned_away_by_the_controller() -> None:
    emulator, events, decisions = _wire([J(1, 0, 10, 2), J(2, 1, 5, 5), J(3, 2, 3, 2)])
    records = emulator.run()
    assert ("JOB_STATE_CHANGE", 1, 2, "EXIT") in [_summary(event) for event in events]
    pends = [d for d in decisions if d.op == "PEND"]
    assert [(d.jobid, d.reason.main.value) for d in pends] == [(2, "JOB_LARGER_THAN_CLUSTER")]
    assert records[2].rejected
    assert (records[2].start_s, records[2].end_s) == (None, None)
    assert emulator.stats.done == 3


def test_rejected_job_is_counted_and_the_others_run() -> None:
    result = simulate([J(1, 0, 10, 2), J(2, 1, 5, 5), J(3, 2, 3, 2)])
    assert times(result) == {1: (0, 10), 2: (None, None), 3: (2, 5)}
    assert [jobid for jobid, r in sorted(result.records.items()) if r.rejected] == [2]
    report = result.report
    assert report.jobs_rejected == 1
    assert (report.jobs_total, report.jobs_started, report.jobs_finished) == (3, 2, 2)
    assert report.jobs_never_started == 0


def test_progress_reports_jobs_done_as_they_grow() -> None:
    seen: list[int] = []
    jobs = [J(1, 0, 10, 2), J(2, 1, 5, 5), J(3, 2, 3, 2), J(4, 2, 3, 2)]
    run_simulation(workload(jobs), source="hand-made", progress=seen.append)
    assert seen == sorted(set(seen))
    assert seen[-1] == 4


def test_unknown_policy_is_a_config_error() -> None:
    with pytest.raises(
        ConfigError,
        match="unknown picker 'nosuch'; known: "
        "builtin_fcfs, f1, fairshare, largest_first, sjf, smallest_first, unicep, wfp3",
    ):
        run_simulation(workload([J(1, 0, 1, 1)]), source="hand-made", policy="nosuch")


# --- the report ------------------------------------------------------------------------


def test_report_figures_by_hand() -> None:
    # On 2 hosts: job 1 (2 tasks) runs 1000..1100; jobs 2 and 3 wait for it.
    jobs = [
        J(1, 1000, 100, 2),  # wait 0,  slowdown max(1, 100/100)  = 1
        J(2, 1010, 5, 1),  # wait 90, slowdown (90 + 5)/10      = 9.5
        J(3, 1020, 50, 1),  # wait 80, slowdown (80 + 50)/50     = 2.6
    ]
    result = simulate(
        jobs, hosts=2, origin_s=SDSC_ORIGIN, skipped={"unknown_run_time": 1, "no_processors": 1}
    )
    assert times(result) == {1: (1000, 1100), 2: (1100, 1105), 3: (1100, 1150)}
    report = result.report
    assert report.workload == "hand-made"
    assert report.policy == "builtin_fcfs"
    assert (report.hosts, report.slots) == (2, 2)
    assert report.jobs_total == 5  # 3 simulated + 2 skipped
    assert report.jobs_skipped == 2
    assert report.jobs_skipped_by_reason == {"unknown_run_time": 1, "no_processors": 1}
    assert (report.jobs_started, report.jobs_finished, report.jobs_rejected) == (3, 3, 0)
    assert report.mean_wait_s == round((0 + 90 + 80) / 3, 3) == 56.667
    assert report.median_wait_s == 80.0
    assert report.max_wait_s == 90
    assert report.mean_bounded_slowdown == round((1 + 9.5 + 2.6) / 3, 4) == 4.3667
    assert report.makespan_s == 1150 - 1000
    # work = 100 × 2 + 5 × 1 + 50 × 1 = 255 slot-seconds on 2 slots over 150 s
    assert report.utilization == round(255 / (2 * 150), 6) == 0.85
    # Rounds at 1000, 1010, 1020 (submits) and 1100, 1105, 1150 (finishes).
    assert report.rounds == 6
    assert (report.decisions["DISPATCH"], report.decisions["NEW_SESSION"]) == (3, 6)
    assert report.decisions["PEND"] >= 2  # jobs 2 and 3 pend at least once each
    json = report.to_json()
    assert json["mean_wait_s"] == 56.667
    assert list(json)[:2] == ["workload", "policy"]


def test_report_bounded_slowdown_uses_a_10_s_bound() -> None:
    # A 1 s job that waits 9 s: (9 + 1) / max(1, 10) = 1.0; one that waits 29 s: 3.0.
    result = simulate([J(1, 0, 9, 1), J(2, 0, 1, 1), J(3, 0, 29, 1), J(4, 0, 1, 1)], hosts=2)
    assert times(result) == {1: (0, 9), 2: (0, 1), 3: (1, 30), 4: (9, 10)}
    # slowdowns: 1: 9/10 → 1;  2: 1/10 → 1;  3: (1 + 29)/29;  4: (9 + 1)/10 = 1
    expected = statistics.fmean([1.0, 1.0, 30 / 29, 1.0])
    assert result.report.mean_bounded_slowdown == round(expected, 4)


def test_report_of_an_empty_workload() -> None:
    report = simulate([], skipped={"unknown_run_time": 3}).report
    assert (report.jobs_total, report.jobs_skipped, report.jobs_started) == (3, 3, 0)
    # Nothing to average: no figure, rather than a 0 (below the slowdown's minimum of 1).
    assert (report.mean_wait_s, report.median_wait_s, report.max_wait_s) == (None, None, None)
    assert report.mean_bounded_slowdown is None
    assert (report.utilization, report.makespan_s) == (0.0, 0)
    json = report.to_json()
    assert (json["mean_wait_s"], json["mean_bounded_slowdown"]) == (None, None)


def test_report_when_every_job_is_rejected() -> None:
    # J1.S0.R10.T8 on 4 hosts: larger than the cluster, rejected; nothing starts.
    report = simulate([J(1, 0, 10, 8)], hosts=4).report
    assert (report.jobs_total, report.jobs_started, report.jobs_rejected) == (1, 0, 1)
    assert (report.mean_wait_s, report.median_wait_s, report.max_wait_s) == (None, None, None)
    assert report.mean_bounded_slowdown is None
    assert orjson.loads(orjson.dumps(report.to_json()))["mean_bounded_slowdown"] is None


# --- the recording ---------------------------------------------------------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="/dev/full exists on Linux only")
def test_recording_write_error_carries_the_path() -> None:
    writer = RecordingWriter("/dev/full")
    with pytest.raises(OSError) as error:
        for _ in range(1000):  # more than a buffer: the writes themselves fail
            writer.event(BeginRound(ts=0))
    assert (error.value.filename, error.value.strerror) == ("/dev/full", "No space left on device")
    with pytest.raises(OSError) as error:
        writer.close()
    assert error.value.filename == "/dev/full"


def test_recording_open_error_carries_the_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as error:
        RecordingWriter(tmp_path / "missing" / "r.jsonl.gz")
    assert error.value.filename == str(tmp_path / "missing" / "r.jsonl.gz")


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"], ids=["plain JSONL", "gzip JSONL"])
def test_recording_lines(tmp_path: Path, name: str) -> None:
    jobs = [J(1, 0, 10, 2), J(2, 0, 5, 3), J(3, 1, 4, 1), J(4, 2, 3, 2), J(5, 3, 1, 9)]
    path = tmp_path / name
    with RecordingWriter(path) as writer:
        result = simulate(jobs, origin_s=SDSC_ORIGIN, recording=writer)
    raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
    texts = raw.decode().splitlines()
    assert writer.lines == len(texts)
    lines = [parse_recording_line(text) for text in texts]
    # A complete recording ends with END, at the core's time when the run was over.
    end = lines.pop()
    assert isinstance(end, End) and end.ts == max(line.ts for line in lines[1:])

    header, snapshot = lines[0], lines[1]
    assert isinstance(header, Header)
    start_ts = SDSC_ORIGIN * NS
    assert header.start_ts == start_ts
    assert header.config_hash == config_hash(scheduler_config(workload(jobs), "builtin_fcfs"))
    assert isinstance(snapshot, Snapshot)
    assert snapshot.ts == start_ts
    # The configuration and hosts were pushed before recording began: they are in
    # the snapshot, and the first event is the first submission.
    state = CoreSnapshot.model_validate(snapshot.data)
    assert state.config == scheduler_config(workload(jobs), "builtin_fcfs")
    assert [h.name for h in state.hosts] == ["h001", "h002", "h003", "h004"]
    assert lines[2].type == "JOBS_PUSH"
    assert not any(isinstance(line, Header | Snapshot) for line in lines[2:])

    # Each DECISION belongs to the BEGIN_ROUND before it: same ts, NEW_SESSION first.
    rounds = 0
    current: BeginRound | None = None
    just_began = False
    starts: dict[int, int] = {}
    for line in lines[2:]:
        if isinstance(line, BeginRound):
            rounds += 1
            current, just_began = line, True
        elif isinstance(line, DecisionLine):
            assert current is not None, "a decision before any BEGIN_ROUND"
            assert line.ts == line.payload.ts == current.ts
            if just_began:
                assert line.payload.op == "NEW_SESSION"
                assert line.payload.session == rounds
            else:
                assert line.payload.op != "NEW_SESSION"
            just_began = False
            if line.payload.op == "DISPATCH":
                starts[line.payload.jobid] = line.ts // NS - SDSC_ORIGIN
        else:
            current, just_began = None, False  # an event closes the round's decisions
    report = result.report
    assert rounds == report.rounds
    decision_lines = [line for line in lines if isinstance(line, DecisionLine)]
    assert len(lines) - 2 - len(decision_lines) == report.events - 2
    ops: dict[str, int] = {}
    for line in decision_lines:
        ops[line.payload.op] = ops.get(line.payload.op, 0) + 1
    assert ops == report.decisions
    assert starts == {
        jobid: r.start_s for jobid, r in result.records.items() if r.start_s is not None
    }
    assert result.records[5].rejected


def test_recording_event_lines_are_the_events_json(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with RecordingWriter(path) as writer:
        simulate([J(1, 0, 10, 2)], recording=writer)
    texts = path.read_bytes().splitlines()
    first_event = orjson.loads(texts[2])
    assert first_event["type"] == "JOBS_PUSH"
    assert first_event["payload"]["jobs"][0]["jobid"] == 1
    snapshot = orjson.loads(texts[1])
    assert snapshot["data"]["config"]["job_pick_plugin"] == "builtin_fcfs"
    assert snapshot["data"]["config"]["queues"][0]["name"] == "normal"
    assert set(snapshot) == {"type", "ts", "data"}
    assert isinstance(snapshot["data"], dict)


def test_a_jobs_user_and_project_reach_the_core() -> None:
    job = SimJob(jobid=4, submit_s=0, run_s=1, tasks=1, queue="normal", user="u7", project="g3")
    spec = job_spec(job, None, 0)
    assert (spec.user, spec.project) == ("u7", "g3")
