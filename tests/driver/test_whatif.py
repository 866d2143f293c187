"""What-if (``xce-sched replay BASE --sim-alt-events ALT``, Req 10 AC 14): a recorded
state run forward under other events, by the closed loop of ``simulate``.

The two properties that make a what-if trustworthy are tested on generated and real
workloads: a what-if whose ALT is the base recording gives the base run back, and a
what-if from a recording's first snapshot equals a direct ``simulate`` of the
alternative workload, job by job. Around them: the issue's cases (an earlier start
moves a job's end, a what-if's preemption is carried out, a file that is not an
event file is refused) and what a user sees.

Jobs are labelled ``J<jobid>.S<submit s>.R<run s>`` (one-slot hosts unless said).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import orjson
import pytest
from xce_driver.cli import main
from xce_driver.cluster.jobs import NS, JobRecord
from xce_driver.event_file import write_event_file
from xce_driver.recording import RecordingWriter, read_lines
from xce_driver.replay import ReplayError
from xce_driver.report import CSV_COLUMNS
from xce_driver.simulate import run_simulation, scheduler_config
from xce_driver.whatif import (
    ALREADY_SUBMITTED,
    BEFORE_SNAPSHOT,
    NO_SUCH_JOB,
    ROUNDS,
    STATE_CHANGES,
    WhatIfOptions,
    what_if,
)
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.mapping import MappedWorkload, SimJob, map_trace
from xce_schemas import Decision, QueueSpec

URGENT = QueueSpec(name="urgent", priority=100, preemptible_queues=("normal",))
NORMAL = QueueSpec(name="normal", priority=30, preemptible=True)
QUEUES = (URGENT, NORMAL)


def J(jobid: int, submit_s: int, run_s: int, tasks: int = 1, queue: str = "normal") -> SimJob:
    return SimJob(jobid, submit_s, run_s, tasks, queue, "u1")


def workload(jobs: Sequence[SimJob], hosts: int = 1) -> MappedWorkload:
    return MappedWorkload(
        jobs=tuple(jobs),
        skipped={},
        hosts=hosts,
        slots_per_host=1,
        origin_s=1_000,
        queues={"urgent": 100, "normal": 30},
    )


def recorded(
    path: Path,
    load: MappedWorkload,
    *,
    interval: int | None = None,
    snapshots: int = 0,
    queues: Sequence[QueueSpec] = QUEUES,
) -> tuple[Path, dict[int, JobRecord]]:
    """Simulate ``load`` with a recording; the recording and the jobs' records."""
    with RecordingWriter(path) as writer:
        result = run_simulation(
            load,
            source="test",
            recording=writer,
            round_interval_s=interval,
            snapshot_interval=snapshots,
            queues=queues,
        )
    return path, result.records


def events_of(path: Path, load: MappedWorkload, queues: Sequence[QueueSpec] = QUEUES) -> Path:
    write_event_file(load, scheduler_config(load, "builtin_fcfs", queues), path)
    return path


def simulated(load: MappedWorkload, **options: object) -> dict[int, JobRecord]:
    return run_simulation(load, source="direct", queues=QUEUES, **options).records  # type: ignore[arg-type]


#: What two runs must agree on, job by job.
def outcome(records: dict[int, JobRecord]) -> dict[int, tuple[object, ...]]:
    return {
        jobid: (
            r.submit_s,
            r.start_s,
            r.end_s,
            r.hosts,
            r.times_suspended,
            r.suspended_s,
            r.killed_by_runlimit,
            r.rejected,
        )
        for jobid, r in sorted(records.items())
    }


# --- the cases ---------------------------------------------------------------------


def test_a_job_that_starts_earlier_ends_earlier_and_the_jobs_behind_it_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = [
        J(1, 0, 100),  # removed in the what-if
        J(2, 10, 50),  # starts at 10 instead of 100, ends at 60 instead of 150
        J(3, 20, 30),  # never started in the old what-if; starts at 60
    ]
    base, _ = recorded(tmp_path / "base.jsonl", workload(jobs))
    alt = events_of(tmp_path / "alt.jsonl", workload(jobs[1:]))
    result = what_if(base, alt)
    assert {j: (r.start_s, r.end_s) for j, r in result.records.items()} == {
        2: (10, 60),
        3: (60, 90),
    }
    assert result.alternative.mean_wait_s == 20.0
    assert result.base.mean_wait_s == pytest.approx((0 + 90 + 130) / 3, abs=1e-3)
    assert result.moved() == [(2, 100, 10), (3, 150, 60)]
    assert result.only_in_base() == [1] and result.refused_count == 0

    assert main(["replay", str(base), "--sim-alt-events", str(alt)]) == 0
    out = capsys.readouterr().out
    assert "job 3: start 150 s -> 60 s" in out
    assert "jobs only in the base run (ALT does not submit them): 1" in out


def test_a_what_if_preemption_suspends_its_victims_and_the_preemptor_starts(
    tmp_path: Path,
) -> None:
    jobs = [J(1, 0, 100), J(2, 0, 100)]  # normal, preemptible: run at 0 on both hosts
    base, base_jobs = recorded(tmp_path / "base.jsonl", workload(jobs, hosts=2))
    assert base_jobs[1].times_suspended == 0
    urgent = J(3, 30, 20, tasks=1, queue="urgent")  # preemptor, new in ALT
    alt = events_of(tmp_path / "alt.jsonl", workload([*jobs, urgent], hosts=2))
    result = what_if(base, alt)
    records = result.records
    assert records[3].start_s == 30 and records[3].end_s == 50
    victims = [j for j in (1, 2) if records[j].times_suspended]
    assert len(victims) == 1
    victim = records[victims[0]]
    assert (victim.times_resumed, victim.suspended_s, victim.end_s) == (1, 20, 120)
    assert result.alternative.jobs_preempted == 1 and result.alternative.resumes == 1
    # The direct simulation of the same workload agrees job by job.
    assert outcome(records) == outcome(simulated(workload([*jobs, urgent], hosts=2)))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file: an event file starts with a HEADER line"),
        (b"1 0 -1 100 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n", ":1: not JSON"),
        (
            b'{"type":"BEGIN_ROUND","ts":5,"payload":{}}\n',
            ":1: the first line is BEGIN_ROUND, not HEADER: not an event file",
        ),
    ],
    ids=["an empty file", "an SWF trace", "events without a HEADER"],
)
def test_a_file_that_is_not_an_event_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    base, _ = recorded(tmp_path / "base.jsonl", workload([J(1, 0, 10)]))
    alt = tmp_path / "alt.jsonl"
    alt.write_bytes(content)
    assert main(["replay", str(base), "--sim-alt-events", str(alt)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and message in err


def test_an_event_file_with_no_event_is_refused(tmp_path: Path) -> None:
    base, _ = recorded(tmp_path / "base.jsonl", workload([J(1, 0, 10)]))
    lines = base.read_bytes().splitlines(keepends=True)
    alt = tmp_path / "alt.jsonl"
    alt.write_bytes(lines[0] + lines[-1])  # HEADER and END
    with pytest.raises(ReplayError, match="holds no event: a what-if needs the alternative"):
        what_if(base, alt)


def test_an_event_file_cut_short_is_refused_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = [J(1, 0, 10), J(2, 5, 10)]
    base, _ = recorded(tmp_path / "base.jsonl", workload(jobs))
    alt = events_of(tmp_path / "alt.jsonl", workload(jobs))
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(alt.read_bytes().splitlines(keepends=True)[:-1]))
    assert main(["replay", str(base), "--sim-alt-events", str(cut)]) == 2
    assert "without its END line: the recording was cut short" in capsys.readouterr().err
    assert main(["replay", str(base), "--sim-alt-events", str(cut), "--force"]) == 0
    assert "used what it holds" in capsys.readouterr().err


def test_a_job_with_no_run_time_is_refused_up_front_and_forced_the_what_if_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = [J(1, 0, 10), J(2, 5, 10)]
    base, _ = recorded(tmp_path / "base.jsonl", workload(jobs))
    lines = [line.data for line in read_lines(events_of(tmp_path / "a.jsonl", workload(jobs)))]
    push = dict(lines[1])  # a copy of job 1's submission as a new job 9, with no RUN_TIME
    push["payload"] = {"jobs": [dict(push["payload"]["jobs"][0], jobid=9)]}
    alt = tmp_path / "alt.jsonl"
    alt.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in [*lines[:3], push, *lines[3:]]))
    with pytest.raises(ReplayError, match=r"1 jobs new in ALT have no RUN_TIME line \(9\)"):
        what_if(base, alt)  # refused before it runs
    result = what_if(base, alt, WhatIfOptions(force=True))
    assert result.endless == [9] and result.records[9].end_s is None
    assert main(["replay", str(base), "--sim-alt-events", str(alt), "--force"]) == 1
    err = capsys.readouterr().err
    assert "the what-if dispatched 1 job whose run time is not known (9:" in err


def test_events_that_no_longer_apply_are_counted_with_the_core_s_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = [J(1, 0, 100), J(2, 10, 50)]
    base, _ = recorded(tmp_path / "base.jsonl", workload(jobs))
    lines = [line.data for line in read_lines(events_of(tmp_path / "a.jsonl", workload(jobs)))]
    update = {"type": "JOB_UPDATE", "ts": 1_200 * NS, "payload": {"jobid": 2, "priority": 5}}
    alt = tmp_path / "alt.jsonl"
    alt.write_bytes(
        b"".join(orjson.dumps(line) + b"\n" for line in [*lines[:-1], update, lines[-1]])
    )
    result = what_if(base, alt)  # job 2 ended at 150 s: the update at 200 s finds no job
    assert result.refused_count == 1 and result.refused[0].startswith(f"line {len(lines)}: ")
    assert "2" in result.refused[0]
    assert outcome(result.records) == outcome(simulated(workload(jobs)))
    assert main(["replay", str(base), "--sim-alt-events", str(alt)]) == 0
    assert "events that no longer apply: 1" in capsys.readouterr().out


# --- ALT = the base recording gives the base run back ------------------------------------


@pytest.mark.parametrize(
    ("interval", "queues"),
    [
        (None, QUEUES),
        (30, QUEUES),
        (None, (URGENT, NORMAL.model_copy(update={"run_limit_s": 900}))),
    ],
    ids=["rounds at every change", "rounds on a 30 s grid", "a run limit kills jobs"],
)
def test_the_base_recording_as_alt_gives_the_base_run_back(
    tmp_path: Path, interval: int | None, queues: tuple[QueueSpec, ...]
) -> None:
    load = map_trace(generate_lublin(n_jobs=300, nodes=32, seed=4), hosts=32)
    jobs = list(load.jobs)
    for index in range(0, len(jobs), 7):  # every 7th job urgent: preemptions happen
        jobs[index] = SimJob(**{**_fields(jobs[index]), "queue": "urgent"})
    load = workload(jobs, hosts=32)
    base, base_jobs = recorded(tmp_path / "b.jsonl", load, interval=interval, queues=queues)
    assert sum(r.times_suspended for r in base_jobs.values()) > 0
    result = what_if(base, base)
    assert result.round_interval_s == interval
    assert outcome(result.records) == outcome(base_jobs)
    assert result.alternative.decisions == result.base.decisions
    assert result.moved() == [] and result.refused_count == 0 and result.endless == []
    assert set(result.left_out) == {ROUNDS, STATE_CHANGES}
    if queues[1].run_limit_s:
        assert result.alternative.jobs_killed_by_runlimit > 0


def _fields(job: SimJob) -> dict[str, object]:
    return {name: getattr(job, name) for name in SimJob.__dataclass_fields__}


def test_from_a_later_snapshot_the_base_recording_as_alt_gives_the_rest_back(
    tmp_path: Path,
) -> None:
    load = map_trace(generate_lublin(n_jobs=400, nodes=16, seed=9), hosts=16)
    base, base_jobs = recorded(tmp_path / "b.jsonl", load, snapshots=150)
    stamps = [line.ts for line in read_lines(base) if line.type == "SNAPSHOT"]
    assert len(stamps) > 3
    for start in stamps[1:4]:
        result = what_if(base, base, WhatIfOptions(start_ts=start))
        assert result.snapshot_ts == start
        assert outcome(result.records) == {
            j: o for j, o in outcome(base_jobs).items() if j in result.records
        }
        assert result.moved() == [] and result.endless == [] and result.refused_count == 0
        assert result.left_out.get(BEFORE_SNAPSHOT, 0) > 0
        # Jobs that ended before the snapshot are not in it, nor in the what-if.
        assert len(result.records) < len(base_jobs)
        assert ALREADY_SUBMITTED not in result.left_out or result.left_out[ALREADY_SUBMITTED] > 0


# --- a what-if equals a direct simulation of the alternative workload ---------------------


def test_a_what_if_equals_a_direct_simulation_of_the_alternative_workload(
    tmp_path: Path,
) -> None:
    load = map_trace(generate_lublin(n_jobs=400, nodes=32, seed=5), hosts=32)
    base, _ = recorded(tmp_path / "b.jsonl", load)
    smaller = MappedWorkload(
        jobs=tuple(job for job in load.jobs if job.tasks < 8),
        skipped={},
        hosts=load.hosts,
        slots_per_host=1,
        origin_s=load.origin_s,
        queues=load.queues,
    )
    alt = events_of(tmp_path / "alt.jsonl", smaller)
    result = what_if(base, alt)
    direct = simulated(smaller)
    assert outcome(result.records) == outcome(direct)
    assert result.moved(), "removing the wide jobs moved no start"


def test_on_a_kth_prefix_without_its_64_task_jobs_the_what_if_equals_simulate(
    tmp_path: Path,
    trace_path: Callable[[str], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's figures: KTH-SP2's first 2,000 jobs; the what-if removes the jobs
    of 64 tasks or more. Its per-job CSV and report equal simulate's of the same jobs."""
    kth = trace_path("KTH-SP2-1996-2.1-cln.swf.gz")
    lines = _swf_prefix(kth, 2_000)
    whole, small = tmp_path / "kth.swf", tmp_path / "kth-small.swf"
    whole.write_text("".join(lines))
    small.write_text("".join(line for line in lines if line.startswith(";") or _tasks(line) < 64))
    base, alt = tmp_path / "kth.jsonl.gz", tmp_path / "alt.jsonl.gz"
    assert main(["simulate", "--workload", str(whole), "--record", str(base), "--quiet"]) == 0
    assert main(["events", "--workload", str(small), "--out", str(alt)]) == 0
    out = [tmp_path / name for name in ("wi.csv", "wi.json", "direct.csv", "direct.json")]
    assert (
        main(
            [
                "replay",
                str(base),
                "--sim-alt-events",
                str(alt),
                "--jobs-out",
                str(out[0]),
                "--report",
                str(out[1]),
            ]
        )
        == 0
    )
    command = ["simulate", "--workload", str(small), "--quiet"]
    assert main([*command, "--jobs-out", str(out[2]), "--report", str(out[3])]) == 0
    capsys.readouterr()
    assert out[0].read_text() == out[2].read_text()
    assert out[0].read_text().splitlines()[0] == ",".join(CSV_COLUMNS)
    whatif, direct = orjson.loads(out[1].read_bytes()), orjson.loads(out[3].read_bytes())
    same = ("jobs_total", "mean_wait_s", "max_wait_s", "mean_bounded_slowdown", "utilization")
    assert {k: whatif[k] for k in same} == {k: direct[k] for k in same}
    assert whatif["decisions"] == direct["decisions"] and whatif["rounds"] == direct["rounds"]
    assert whatif["what_if"]["base"]["mean_wait_s"] > whatif["mean_wait_s"]
    assert whatif["what_if"]["jobs_only_in_base"] == 2_000 - whatif["jobs_total"] > 0


def _swf_prefix(path: Path, jobs: int) -> list[str]:
    import gzip

    out: list[str] = []
    with gzip.open(path, "rt") as handle:
        for line in handle:
            if not line.startswith(";"):
                jobs -= 1
                if jobs < 0:
                    break
            out.append(line)
    return out


def _tasks(line: str) -> int:
    fields = line.split()
    requested = int(fields[7])
    return requested if requested > 0 else int(fields[4])


# --- what the command line takes --------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "why"),
    [
        (["--sim-verify"], "a what-if makes other decisions than FILE by design"),
        (["--sim-speed", "2"], "a what-if runs in virtual time"),
        (["--sim-pause-at", "5"], "a what-if runs in virtual time"),
    ],
    ids=["verify", "speed", "pause"],
)
def test_replay_only_options_are_refused_with_a_what_if(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str], why: str
) -> None:
    base, _ = recorded(tmp_path / "base.jsonl", workload([J(1, 0, 10)]))
    assert main(["replay", str(base), "--sim-alt-events", str(base), *option]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and why in err


@pytest.mark.parametrize(
    "option", [["--jobs-out", "x.csv"], ["--sim-round-interval", "5"]], ids=["jobs-out", "grid"]
)
def test_what_if_only_options_need_alternative_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    base, _ = recorded(tmp_path / "base.jsonl", workload([J(1, 0, 10)]))
    assert main(["replay", str(base), *option]) == 2
    assert "it needs --sim-alt-events" in capsys.readouterr().err


def test_an_event_file_made_for_another_configuration_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = [J(1, 0, 10)]
    base, _ = recorded(tmp_path / "base.jsonl", workload(jobs))
    other = events_of(tmp_path / "alt.jsonl", workload(jobs), queues=(URGENT,))
    assert main(["replay", str(base), "--sim-alt-events", str(other)]) == 2
    assert "its configuration hash differs from the base recording's" in capsys.readouterr().err


def test_on_an_sdsc_prefix_the_base_recording_as_alt_gives_the_base_run_back(
    tmp_path: Path, trace_path: Callable[[str], Path]
) -> None:
    from xce_driver.workloads.swf import read_swf

    load = map_trace(read_swf(trace_path("SDSC-SP2-1998-4.2-cln.swf.gz")), max_jobs=1_500)
    with RecordingWriter(tmp_path / "sdsc.jsonl.gz") as writer:
        base_jobs = run_simulation(
            load, source="sdsc", recording=writer, snapshot_interval=700
        ).records
    base = tmp_path / "sdsc.jsonl.gz"
    stamps = [line.ts for line in read_lines(base) if line.type == "SNAPSHOT"]
    for start in (stamps[0], stamps[len(stamps) // 2]):
        result = what_if(base, base, WhatIfOptions(start_ts=start))
        assert outcome(result.records) == {
            j: o for j, o in outcome(base_jobs).items() if j in result.records
        }
        assert result.moved() == [] and result.endless == [] and result.refused_count == 0
        # Run limits come with the jobs, from the snapshot as from the later submissions.
        limits = {jobid: record.run_limit_s for jobid, record in result.records.items()}
        assert limits == {jobid: base_jobs[jobid].run_limit_s for jobid in result.records}
        assert None not in limits.values()


@pytest.mark.parametrize(
    ("interval", "every"),
    [(None, 3), (None, 7), (20, 3), (20, 5)],
    ids=[
        "rounds at every change, a snapshot every 3 events",
        "rounds at every change, every 7",
        "a 20 s grid, every 3",
        "a 20 s grid, every 5",
    ],
)
def test_from_any_snapshot_even_inside_an_instant_the_base_comes_back_whole(
    tmp_path: Path, interval: int | None, every: int
) -> None:
    """A SNAPSHOT every few events falls between a submission and its round,
    between a round's PREEMPT and its victims' suspension, between a PEND and the
    rejection of a job larger than the cluster: the what-if finishes that instant as
    the emulator did, and each job's record (suspensions, run-limit kills included)
    is its whole history, not its part after the snapshot."""
    load = map_trace(generate_lublin(n_jobs=60, nodes=8, seed=11), hosts=8)
    jobs = list(load.jobs)
    for index in range(0, len(jobs), 5):
        jobs[index] = SimJob(**{**_fields(jobs[index]), "queue": "urgent"})
    jobs.append(J(999, jobs[-1].submit_s, 10, tasks=9))  # larger than the cluster
    queues = (URGENT, NORMAL.model_copy(update={"run_limit_s": 2_000}))
    base, base_jobs = recorded(
        tmp_path / "b.jsonl",
        workload(jobs, hosts=8),
        interval=interval,
        snapshots=every,
        queues=queues,
    )
    assert sum(r.times_suspended for r in base_jobs.values()) > 0
    assert any(r.killed_by_runlimit for r in base_jobs.values()) and base_jobs[999].rejected
    # The last SNAPSHOT of each instant is the one --sim-start-ts can choose.
    last_of = {line.ts: line.number for line in read_lines(base) if line.type == "SNAPSHOT"}
    assert len(last_of) > 10
    starts = sorted(last_of.items())[1:]
    for ts, number in starts[:: max(1, len(starts) // 30)]:  # some 30, spread out
        result = what_if(base, base, WhatIfOptions(start_ts=ts))
        assert result.snapshot_line == number
        # The same jobs: none submitted again (one that ended in the snapshot's instant).
        assert set(result.records) == set(result.base_records), f"from {ts} (line {number})"
        expected = {j: o for j, o in outcome(base_jobs).items() if j in result.records}
        assert outcome(result.records) == expected, f"from {ts} (line {number})"
        assert result.moved() == [] and result.endless == [] and result.refused_count == 0


def test_a_closed_pipe_loses_no_output_file_and_prints_no_error(
    tmp_path: Path, xce_sched: str
) -> None:
    import subprocess

    jobs = [J(1, 0, 100), J(2, 10, 50), J(3, 20, 30)]
    base, _ = recorded(tmp_path / "base.jsonl", workload(jobs))
    alt = events_of(tmp_path / "alt.jsonl", workload(jobs[1:]))
    report, per_job = tmp_path / "r.json", tmp_path / "j.csv"
    command = [xce_sched, "replay", str(base), "--sim-alt-events", str(alt)]
    with subprocess.Popen(
        [*command, "--report", str(report), "--jobs-out", str(per_job)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # as `| head -0` does, before anything is printed
        err = proc.stderr.read()
        code = proc.wait(timeout=120)
    assert (code, err) == (141, b"")
    assert orjson.loads(report.read_bytes())["jobs_total"] == 2
    assert per_job.read_text().splitlines()[0] == ",".join(CSV_COLUMNS)


def test_run_time_lines_twice_for_a_job_are_refused_and_of_no_job_counted(tmp_path: Path) -> None:
    jobs = [J(1, 0, 10), J(2, 5, 10)]
    base, _ = recorded(tmp_path / "base.jsonl", workload(jobs))
    lines = [line.data for line in read_lines(events_of(tmp_path / "a.jsonl", workload(jobs)))]
    twice = tmp_path / "twice.jsonl"
    twice.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in [*lines[:3], lines[2], *lines[3:]]))
    with pytest.raises(
        ReplayError, match=r":4: a second RUN_TIME line for job 1 \(the first is line 3\)"
    ):
        what_if(base, twice)
    stray = dict(lines[2], payload={"jobid": 77, "run_ns": NS, "exit": False})
    extra = tmp_path / "extra.jsonl"
    extra.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in [*lines[:3], stray, *lines[3:]]))
    assert what_if(base, extra).left_out == {NO_SUCH_JOB: 1}


def _controller_recording(path: Path, start_after: int) -> tuple[Path, list[Decision]]:
    """A recording made as the live core makes one: the controller's events (its
    rounds every 10 s, its job ends on those ticks), recorded from event
    ``start_after`` on, with ``rounds: controller`` in the HEADER."""
    from xce_core.core import SchedCore
    from xce_core.snapshot import save_snapshot

    from tests.live.helpers import scenario

    events = scenario(rounds=30, seed=3)
    made: list[Decision] = []
    core = SchedCore(on_decision=made.append, prng_seed=0)
    for event in events[:start_after]:
        core.push_event(event)
    with RecordingWriter(path) as writer:
        writer.header(core.state.config, core.last_ts, rounds="controller")
        writer.snapshot(save_snapshot(core))
        for event in events[start_after:]:
            made.clear()
            writer.event(event)
            core.push_event(event)
            for decision in made:
                writer.decision(decision)
        writer.end(core.last_ts)
    return path, made


@pytest.mark.parametrize("start_after", [2, 40], ids=["from the start", "from mid-run"])
def test_a_live_recording_as_its_own_alt_gives_its_run_back_on_the_controller_s_ticks(
    tmp_path: Path, start_after: int, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = _controller_recording(tmp_path / "live.jsonl", start_after)
    result = what_if(base, base)
    assert result.controller_rounds and result.round_interval_s == 10
    assert result.moved() == [] and result.refused_count == 0 and result.endless == []
    assert ROUNDS not in result.left_out  # the ticks were pushed
    assert outcome(result.records) == outcome(result.base_records)
    assert result.alternative.decisions == result.base.decisions
    assert main(["replay", str(base), "--sim-alt-events", str(base)]) == 0
    assert "rounds: the controller's, as recorded" in capsys.readouterr().out
