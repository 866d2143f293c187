"""Start-time prediction in the driver (issue 15 item 5): each job's first predicted
start in its record and the per-job CSV, the report's error figures, the summary
row, and ``xce-sched explain``'s sentence.

Jobs are labelled ``J<jobid>.S<submit s>.R<run s>.T<tasks>.L<run limit s>`` (``L-``:
no run limit), on one-slot hosts; the trace origin is 0 unless said.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console
from xce_driver.cli import _print_summary, main
from xce_driver.event_file import write_event_file
from xce_driver.recording import RecordingWriter
from xce_driver.replay import explain_job
from xce_driver.report import CSV_COLUMNS, write_jobs_csv
from xce_driver.simulate import SimulationResult, run_simulation, scheduler_config
from xce_driver.whatif import what_if
from xce_driver.workloads.mapping import MappedWorkload, SimJob
from xce_schemas import BackfillPolicy, QueueSpec


def J(jobid: int, submit_s: int, run_s: int, tasks: int, limit_s: int | None) -> SimJob:
    return SimJob(jobid, submit_s, run_s, tasks, "normal", "u1", run_limit_s=limit_s)


def workload(*jobs: SimJob, hosts: int = 4, origin_s: int = 0) -> MappedWorkload:
    return MappedWorkload(tuple(jobs), {}, hosts, 1, origin_s, {"normal": 30})


def simulate(
    load: MappedWorkload,
    policy: BackfillPolicy,
    recording: Path | None = None,
    queues: tuple[QueueSpec, ...] = (),
) -> SimulationResult:
    if recording is None:
        return run_simulation(load, source="t", backfill=policy, queues=queues)
    with RecordingWriter(recording) as writer:
        return run_simulation(load, source="t", backfill=policy, recording=writer, queues=queues)


@pytest.mark.parametrize(
    ("head_limit_s", "predicted_s", "mae_s", "mean_error_s"),
    [(100, 100, 0.0, 0.0), (200, 200, 100.0, -100.0), (50, 50, 50.0, 50.0)],
    ids=[
        "a run limit that is exact predicts the start exactly",
        "a run limit twice the run time predicts 100 s too late",
        "a job running past its limit makes the start 50 s later than predicted",
    ],
)
def test_the_first_predicted_start_and_the_error_figures(
    head_limit_s: int, predicted_s: int, mae_s: float, mean_error_s: float
) -> None:
    # 4 hosts. J1.S0.R100.T4 starts at 0 with run limit L. J2.S10.R50.T4.L50 pends
    # at 10 s; EASY reserves for it at J1's expected end, L s (the round at 10 s is
    # its first prediction; J1's start is the only running job it rests on); it
    # starts at 100 s, when J1 really ends.
    load = workload(J(1, 0, 100, 4, head_limit_s), J(2, 10, 50, 4, 50))
    result = simulate(load, BackfillPolicy.EASY)
    records = result.records
    assert (records[1].start_s, records[1].first_predicted_start_s) == (0, None)
    assert (records[2].start_s, records[2].first_predicted_start_s) == (100, predicted_s)
    report = result.report
    assert report.predicted_jobs == 1
    assert (report.prediction_mae_s, report.prediction_mean_error_s) == (mae_s, mean_error_s)
    json = report.to_json()
    keys = list(json)
    at = keys.index("predicted_jobs")
    assert keys[at : at + 3] == ["predicted_jobs", "prediction_mae_s", "prediction_mean_error_s"]
    assert json["backfill"] == "easy"
    assert json["prediction_mae_s"] == mae_s


def test_the_prediction_is_seconds_from_the_trace_origin() -> None:
    load = workload(J(1, 0, 100, 4, 100), J(2, 10, 50, 4, 50), origin_s=893_466_000)
    assert simulate(load, BackfillPolicy.EASY).records[2].first_predicted_start_s == 100


def test_the_first_prediction_is_kept_when_a_later_round_predicts_otherwise() -> None:
    # 4 hosts. J1.S0.R30.T2.L100 and J2.S0.R100.T2.L100 start at 0. J3.S10.R10.T4.L10
    # pends: CONSERVATIVE reserves at 100 s (both must end). J1 ends at 30: the round
    # then predicts 100 s again (J2 still runs). J2 ends at 100: J3 starts.
    # J4.S40.R10.T4.L10 pends at 40 behind J3's window [100, 110): predicted 110.
    load = workload(
        J(1, 0, 30, 2, 100), J(2, 0, 100, 2, 100), J(3, 10, 10, 4, 10), J(4, 40, 10, 4, 10)
    )
    records = simulate(load, BackfillPolicy.CONSERVATIVE).records
    got = {jobid: (r.first_predicted_start_s, r.start_s) for jobid, r in records.items()}
    assert got == {1: (None, 0), 2: (None, 0), 3: (100, 100), 4: (110, 110)}


def test_greedy_predicts_nothing(tmp_path: Path) -> None:
    load = workload(J(1, 0, 100, 4, 100), J(2, 10, 50, 4, 50))
    result = simulate(load, BackfillPolicy.GREEDY)
    assert [r.first_predicted_start_s for r in result.records.values()] == [None, None]
    report = result.report
    assert (report.predicted_jobs, report.prediction_mae_s, report.prediction_mean_error_s) == (
        0,
        None,
        None,
    )
    assert "predicted starts" not in summary_of(result)


def test_the_csv_ends_with_the_first_predicted_start(tmp_path: Path) -> None:
    load = workload(J(1, 0, 100, 4, 200), J(2, 10, 50, 4, 50))
    path = tmp_path / "jobs.csv"
    write_jobs_csv(simulate(load, BackfillPolicy.EASY).records.values(), path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert CSV_COLUMNS[11] == "first_predicted_start_s"
    assert [(row["jobid"], row["start_s"], row["first_predicted_start_s"]) for row in rows] == [
        ("1", "0", ""),
        ("2", "100", "200"),
    ]


def summary_of(result: SimulationResult) -> dict[str, str]:
    out = io.StringIO()
    _print_summary(Console(file=out, width=200), result.report)
    return {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in out.getvalue().splitlines()
        if line.count("│") == 3
    }


def test_the_summary_shows_the_prediction_figures_when_there_are_some() -> None:
    load = workload(J(1, 0, 100, 4, 200), J(2, 10, 50, 4, 50), J(3, 10, 50, 4, 50))
    # EASY: J2 is predicted at 200 s, starts at 100 s (-100); J3 is first predicted
    # at 100 s, once J2 started (its window [100, 150)), hence 150 s, and starts then.
    result = simulate(load, BackfillPolicy.EASY)
    assert {j: r.first_predicted_start_s for j, r in result.records.items()} == {
        1: None,
        2: 200,
        3: 150,
    }
    assert summary_of(result)["predicted starts: jobs / mean abs error / mean error"] == (
        "2 / 50 s / -50 s"
    )


def test_simulate_writes_the_figures_and_the_column(tmp_path: Path) -> None:
    trace = tmp_path / "t.swf"
    # SWF: job, submit, wait, run, procs, cpu, mem, req procs, req time, ...
    trace.write_text(
        "; MaxProcs: 4\n"
        "1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 10 -1 50 4 -1 -1 4 50 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    report, jobs = tmp_path / "r.json", tmp_path / "j.csv"
    argv = ["simulate", "--workload", str(trace), "--backfill", "easy", "--quiet"]
    assert main([*argv, "--report", str(report), "--jobs-out", str(jobs)]) == 0
    figures = orjson.loads(report.read_bytes())
    assert (figures["predicted_jobs"], figures["prediction_mae_s"]) == (1, 100.0)
    assert figures["prediction_mean_error_s"] == -100.0
    rows = list(csv.DictReader(io.StringIO(jobs.read_text())))
    assert [row["first_predicted_start_s"] for row in rows] == ["", "200"]


# --- explain -------------------------------------------------------------------------------


def explained(
    tmp_path: Path,
    policy: BackfillPolicy,
    *jobs: SimJob,
    jobid: int,
    queues: tuple[QueueSpec, ...] = (),
) -> str:
    """What ``explain`` says of ``jobid`` at 10 s (after that instant's round)."""
    path = tmp_path / f"{policy.value}.jsonl"
    simulate(workload(*jobs), policy, path, queues)
    return explain_job(path, jobid, at_offset_s=10)


BLOCKED = (J(1, 0, 100, 4, 100), J(2, 10, 50, 4, 50), J(3, 10, 50, 2, 50))


@pytest.mark.parametrize(
    ("policy", "jobid", "expected"),
    [
        (
            BackfillPolicy.EASY,
            2,
            "expected to start at ts=100000000000 (1970-01-01T00:01:40Z) on 4 hosts (reserved); "
            "estimate from the run limits of 1 running job",
        ),
        (
            BackfillPolicy.EASY,
            3,
            "no start time is predicted: it is not the one job the easy backfill policy "
            "reserves for (job 2, expected to start at ts=100000000000 (1970-01-01T00:01:40Z))",
        ),
        (
            BackfillPolicy.STRICT,
            3,
            "no start time is predicted: it is not the one job the strict backfill policy "
            "reserves for (job 2, expected to start at ts=100000000000 (1970-01-01T00:01:40Z))",
        ),
        (
            BackfillPolicy.CONSERVATIVE,
            3,
            "expected to start at ts=150000000000 (1970-01-01T00:02:30Z) on 2 slots (hosts chosen when it starts) (reserved); "
            "estimate from the run limits of 1 running job",
        ),
        (
            BackfillPolicy.GREEDY,
            2,
            "no start time is predicted under the greedy backfill policy",
        ),
    ],
    ids=[
        "easy: the blocked head, from J1's run limit",
        "easy: the job behind it",
        "strict: the job behind the head",
        "conservative: the second job, after the head's window",
        "greedy: no reservations",
    ],
)
def test_explain_says_when_and_where_a_job_is_expected_to_start_or_why_not(
    tmp_path: Path, policy: BackfillPolicy, jobid: int, expected: str
) -> None:
    text = explained(tmp_path, policy, *BLOCKED, jobid=jobid)
    head = f"job {jobid} at ts=10000000000 (1970-01-01T00:00:10Z): pending: "
    assert text.startswith(head) and text.endswith(f"; {expected}")


@pytest.mark.parametrize(
    ("blocked", "named"),
    [(3, "jobs 2, 3"), (8, "jobs 2, 3, 4, 5, 6 and 2 more")],
    ids=["every job reserved for", "the first five, then how many more"],
)
def test_explain_names_the_jobs_a_hybrid_policy_reserves_for_ahead_of_a_job(
    tmp_path: Path, blocked: int, named: str
) -> None:
    # J1 holds the four hosts; J2.. are blocked behind it, and a depth of
    # ``blocked - 1`` reserves for all of them but the last.
    depth = blocked - 1
    normal = QueueSpec(
        name="normal", priority=30, backfill=BackfillPolicy.HYBRID, reservation_depth=depth
    )
    jobs = (J(1, 0, 100, 4, 100), *(J(i, 10, 50, 4, 50) for i in range(2, blocked + 2)))
    path = tmp_path / "hybrid.jsonl"
    simulate(workload(*jobs), BackfillPolicy.EASY, path, (normal,))
    assert explain_job(path, blocked + 1, at_offset_s=10).endswith(
        f"no start time is predicted: it is not among the {depth} jobs the hybrid backfill "
        f"policy of queue 'normal' reserves for ({named})"
    )


def test_explain_says_no_start_can_be_predicted_behind_a_job_with_no_run_limit(
    tmp_path: Path,
) -> None:
    jobs = (J(1, 0, 100, 4, None), J(2, 10, 50, 4, 50))  # J1.L-: its end is not known
    assert explained(tmp_path, BackfillPolicy.EASY, *jobs, jobid=2).endswith(
        ": pending: Not enough job slots in the cluster; Not enough job slots: 4 hosts; "
        "no start time can be predicted: jobs it waits for have no run limit, or one "
        "that ends past the clock's end (2554-07-21)"
    )


def test_explain_names_the_clocks_end_behind_a_run_limit_past_it(tmp_path: Path) -> None:
    """A run limit of 10**11 s is accepted, but ends past the 64-bit ns clock: the
    reason must not say the job has no run limit without naming the clock's end."""
    jobs = (J(1, 0, 100, 4, 10**11), J(2, 10, 50, 4, 50))
    assert explained(tmp_path, BackfillPolicy.EASY, *jobs, jobid=2).endswith(
        "no start time can be predicted: jobs it waits for have no run limit, or one "
        "that ends past the clock's end (2554-07-21)"
    )


def test_explain_says_a_job_its_queue_holds_gets_no_reservation(tmp_path: Path) -> None:
    normal = QueueSpec(name="normal", priority=30, max_running=2)
    jobs = (J(1, 0, 100, 2, 100), J(2, 10, 50, 1, 50))  # J2 fits, the queue holds it
    path = tmp_path / "held.jsonl"
    simulate(workload(*jobs), BackfillPolicy.EASY, path, (normal,))
    assert explain_job(path, 2, at_offset_s=10).endswith(
        ": pending: The queue's job slot limit is reached (limit 2 slots); no start time is "
        "predicted: the last round made no reservation for it (a job its queue holds, one "
        "waiting for a preemption, or one that can never run gets none)"
    )


# --- what-if -------------------------------------------------------------------------------


def test_the_what_if_records_predictions_as_simulate_does(tmp_path: Path) -> None:
    load = workload(J(1, 0, 100, 4, 200), J(2, 10, 50, 4, 50), J(3, 10, 50, 4, 50))
    base = tmp_path / "base.jsonl"
    direct = simulate(load, BackfillPolicy.EASY, base)
    alt = tmp_path / "alt.jsonl"
    config = scheduler_config(load, "builtin_fcfs", backfill=BackfillPolicy.EASY)
    write_event_file(load, config, alt)
    result = what_if(base, alt)
    predicted = {j: r.first_predicted_start_s for j, r in result.records.items()}
    assert predicted == {j: r.first_predicted_start_s for j, r in direct.records.items()}
    assert predicted == {1: None, 2: 200, 3: 150}
    # The base run is read from its recording, which keeps no predictions.
    assert (result.base.predicted_jobs, result.alternative.predicted_jobs) == (0, 2)
    assert result.alternative.prediction_mae_s == direct.report.prediction_mae_s == 50.0


def test_a_job_that_started_gets_no_predicted_start_from_its_resume() -> None:
    # One host. J1.S0.R100.L100 (normal) runs; J2.S30.R50.L50 (urgent) preempts it:
    # J1 is suspended at 30 and resumes at 80, when J2 ends, before J3.S50.R10.L10
    # (normal), which starts at 150. Where the round at 50 holds room owed to J1 for
    # its resume (a reservation of J1 at 80), that is no predicted start: J1
    # started at 0.
    urgent = QueueSpec(name="urgent", priority=100, preemptible_queues=("normal",))
    normal = QueueSpec(name="normal", priority=30, preemptible=True)
    jobs = (
        SimJob(1, 0, 100, 1, "normal", "u1", run_limit_s=100),
        SimJob(2, 30, 50, 1, "urgent", "u1", run_limit_s=50),
        SimJob(3, 50, 10, 1, "normal", "u1", run_limit_s=10),
    )
    load = MappedWorkload(jobs, {}, 1, 1, 0, {"urgent": 100, "normal": 30})
    result = simulate(load, BackfillPolicy.EASY, queues=(urgent, normal))
    first = result.records[1]
    assert (first.start_s, first.times_suspended, first.end_s) == (0, 1, 150)
    assert first.first_predicted_start_s is None
    assert (result.records[2].start_s, result.records[3].start_s) == (30, 150)
    assert result.records[3].first_predicted_start_s is not None


def test_explain_shows_the_fair_share_factors_of_a_pending_job(tmp_path: Path) -> None:
    # One host: a's J1 runs 0..100 s; at 50 s a's J2 and b's J3 wait. a has used
    # 50 slot-s (less 0.003 %: the default half-life is 7 days), b nothing:
    # a's fair-share factor is 2^(−1/(1/2)) = 0.25 (all the usage, half the shares).
    jobs = (
        SimJob(1, 0, 100, 1, "normal", "a", run_limit_s=100),
        SimJob(2, 10, 10, 1, "normal", "a", run_limit_s=10),
        SimJob(3, 20, 10, 1, "normal", "b", run_limit_s=10),
    )
    path = tmp_path / "fair.jsonl"
    recording = RecordingWriter(path)
    workload = MappedWorkload(jobs, {}, 1, 1, 0, {"normal": 30})
    run_simulation(workload, source="hand-made", policy="fairshare", recording=recording)
    recording.close()
    text = explain_job(path, 2, at_offset_s=50)
    assert text.endswith(
        "; priority factors (fairshare): user usage (slot-s) 49.9986, project usage (slot-s) "
        "49.9986, "
        "user shares 1, project shares 1, normalised share 0.5, normalised usage 1, "
        "fairshare factor 0.25, priority 250"
    ), text
