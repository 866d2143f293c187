"""Run windows in a simulation: a round comes when a window opens, so a job held by
its queue's window starts at the opening, even when nothing else happens then."""

from __future__ import annotations

from pathlib import Path

import pytest
from xce_driver.recording import RecordingWriter
from xce_driver.replay import ReplayOptions, replay
from xce_driver.simulate import run_simulation
from xce_driver.workloads.mapping import MappedWorkload, SimJob
from xce_schemas import QueueSpec

HOUR = 3600


def job(jobid: int, submit_s: int, run_s: int) -> SimJob:
    return SimJob(jobid=jobid, submit_s=submit_s, run_s=run_s, tasks=1, queue="day", user="u1")


@pytest.mark.parametrize(
    "round_interval_s, second_start_s",
    [(None, 8 * HOUR + 60), (600, 8 * HOUR + 600)],  # job 1's end, or the next grid round
)
def test_jobs_held_by_a_window_start_when_it_opens(
    round_interval_s: int | None, second_start_s: int
) -> None:
    # One host; the window is 08:00-09:00 UTC every day; the trace starts at 00:00.
    jobs = (job(1, 7 * HOUR, 60), job(2, 7 * HOUR + 30, 60), job(3, 10 * HOUR, 60))
    mapped = MappedWorkload(jobs, {}, 1, 1, 0, {"day": 30})
    day = QueueSpec(name="day", priority=30, run_windows=("8:00-9:00",))
    result = run_simulation(mapped, source="t", queues=(day,), round_interval_s=round_interval_s)
    starts = {jobid: record.start_s for jobid, record in result.records.items()}
    # Job 3 comes after the window closed: it waits for the next day's opening.
    assert starts == {1: 8 * HOUR, 2: second_start_s, 3: 32 * HOUR}
    assert result.report.jobs_finished == 3


def test_a_recording_with_window_rounds_replays_without_mismatch(tmp_path: Path) -> None:
    jobs = tuple(job(i, i * 1800, 600) for i in range(1, 30))
    mapped = MappedWorkload(jobs, {}, 2, 1, 0, {"day": 30})
    day = QueueSpec(name="day", priority=30, run_windows=("20:00-6:00", "12:00-12:30"))
    path = tmp_path / "w.jsonl"
    with RecordingWriter(path) as writer:
        result = run_simulation(mapped, source="t", queues=(day,), recording=writer)
    assert all(record.end_s is not None for record in result.records.values())
    assert replay(path, ReplayOptions(verify=True)).mismatch_count == 0
