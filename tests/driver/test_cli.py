"""Tests of ``xce-sched simulate``: output files, a real trace end to end, bad input.

Most tests call ``xce_driver.cli.main`` in-process; a few run the installed
``xce-sched`` console script in a subprocess, as a user would.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import itertools
import os
import re
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from xce_driver.cli import build_parser, main
from xce_driver.workloads.swf import SwfTrace
from xce_schemas import JobsPush, parse_recording_line
from xce_schemas.snapshot import CoreSnapshot

from tests.driver.conftest import REPO_ROOT

SDSC = "SDSC-SP2-1998-4.2-cln.swf.gz"

REPORT_KEYS = [
    "jobs_total",
    "jobs_started",
    "jobs_finished",
    "jobs_skipped",
    "jobs_rejected",
    "mean_wait_s",
    "median_wait_s",
    "max_wait_s",
    "mean_bounded_slowdown",
    "utilization",
    "makespan_s",
    "decisions",
    "events",
    "sim_wall_s",
]
CSV_HEADER = [
    "jobid",
    "submit_s",
    "start_s",
    "end_s",
    "tasks",
    "hosts",
    "times_suspended",
    "suspended_s",
    "killed_by_runlimit",
    "rejected",
    "run_limit_s",
    "first_predicted_start_s",
    "queue",
    "user",
    "wait_s",
    "bounded_slowdown",
    "status",
    "skipped",
]

GOOD_RECORD = "1 0 5 100 4 -1 -1 4 200 -1 1 3 2 7 1 1 -1 -1"


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``xce-sched`` in-process: (exit status, stdout, stderr)."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse usage errors and --help
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def summary_rows(out: str) -> dict[str, str]:
    """The figure -> value rows of a printed summary table."""
    return {
        cells[0].strip(): cells[1].strip()
        for line in out.splitlines()
        if len(cells := line.strip("│ ").split("│")) == 2
    }


def read_csv(path: Path, jobs_only: bool = False) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a CSV; ``jobs_only``: without the skipped records."""
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    records = [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]
    if jobs_only:
        records = [row for row in records if row["status"] != "skipped"]
    return rows[0], records


# --- the embedded default ----------------------------------------------------------------


def test_default_workload_prints_the_summary(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")  # the table's width, whatever the terminal
    code, out, err = run_cli(["simulate", "--jobs", "200"], capsys)
    assert code == 0
    assert err == ""
    assert "xce-sched simulate" in out
    assert "lublin-feitelson-2003(n_jobs=200," in out
    assert "200 total, 200 finished" in out
    assert "128 hosts, 128 slots" in out
    assert "builtin_fcfs" in out


def test_quiet_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["simulate", "--jobs", "50", "--quiet"], capsys) == (0, "", "")


def test_default_workload_output_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report_path, jobs_path, record_path = (
        tmp_path / "report.json",
        tmp_path / "jobs.csv",
        tmp_path / "run.jsonl",
    )
    argv = ["simulate", "--jobs", "200", "--quiet", "--report", str(report_path)]
    argv += ["--jobs-out", str(jobs_path), "--record", str(record_path)]
    assert run_cli(argv, capsys) == (0, "", "")

    report = orjson.loads(report_path.read_bytes())
    assert set(REPORT_KEYS) <= set(report)
    assert report["workload"] == "lublin-feitelson-2003(n_jobs=200, nodes=128, seed=1)"
    assert (report["hosts"], report["slots"], report["policy"]) == (128, 128, "builtin_fcfs")
    assert report["jobs_total"] == report["jobs_started"] == report["jobs_finished"] == 200
    assert (report["jobs_skipped"], report["jobs_rejected"]) == (0, 0)
    assert report["decisions"]["DISPATCH"] == 200
    assert report["decisions"]["NEW_SESSION"] == report["rounds"]

    header, rows = read_csv(jobs_path)
    assert header == CSV_HEADER
    assert [int(row["jobid"]) for row in rows] == list(range(1, 201))
    waits = [int(row["start_s"]) - int(row["submit_s"]) for row in rows]
    assert waits == [int(row["wait_s"]) for row in rows]
    assert {row["status"] for row in rows} == {"finished"}
    slowdowns = [float(row["bounded_slowdown"]) for row in rows]
    assert report["mean_bounded_slowdown"] == round(statistics.fmean(slowdowns), 4)
    assert report["mean_wait_s"] == round(statistics.fmean(waits), 3)
    assert report["median_wait_s"] == statistics.median(waits)
    assert report["max_wait_s"] == max(waits)
    ends = [int(row["end_s"]) for row in rows]
    assert report["makespan_s"] == max(ends) - min(int(row["submit_s"]) for row in rows)
    assert all(len(row["hosts"].split()) == int(row["tasks"]) for row in rows)

    lines = record_path.read_bytes().splitlines()
    parsed = [parse_recording_line(line) for line in lines]
    # The configuration and the hosts are in the first SNAPSHOT; the events follow it.
    assert [line.type for line in parsed[:3]] == ["HEADER", "SNAPSHOT", "JOBS_PUSH"]
    assert parsed[-1].type == "END"  # the recording is complete
    decisions = sum(line.type == "DECISION" for line in parsed)
    assert decisions == sum(report["decisions"].values())
    assert len(parsed) - 3 - decisions == report["events"] - 2


def test_gzip_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain, packed = tmp_path / "run.jsonl", tmp_path / "run.jsonl.gz"
    for path in (plain, packed):
        assert (
            run_cli(["simulate", "--jobs", "100", "--quiet", "--record", str(path)], capsys)[0] == 0
        )
    assert (
        gzip.decompress(packed.read_bytes()).splitlines()[1:] == plain.read_bytes().splitlines()[1:]
    )


def test_console_script_runs_the_default(xce_sched: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [xce_sched, "simulate", "--jobs", "200", "--report", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert result.returncode == 0, result.stderr
    assert "200 total, 200 finished" in result.stdout
    assert result.stderr == ""
    assert orjson.loads((tmp_path / "r.json").read_bytes())["jobs_finished"] == 200


@pytest.mark.parametrize(
    "make_argv, message",
    [
        (lambda tmp: ["--workload", str(tmp / "nosuch.swf")], "nosuch.swf: no such file"),
        (
            lambda tmp: ["--policy", "nosuch"],
            "unknown picker 'nosuch'; known: "
            "builtin_fcfs, f1, fairshare, largest_first, sjf, smallest_first, unicep, wfp3",
        ),
    ],
    ids=["missing workload file", "unknown policy"],
)
def test_console_script_bad_input(
    xce_sched: str, tmp_path: Path, make_argv: Callable[[Path], list[str]], message: str
) -> None:
    result = subprocess.run(
        [xce_sched, "simulate", *make_argv(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("xce-sched: error: ")
    assert message in lines[0]


@pytest.mark.parametrize(
    "name, content",
    [("empty.swf", b""), ("header.swf", b"; MaxProcs: 100\n"), ("empty.swf.gz", b"")],
    ids=["empty file", "a header and no records", "an empty gzip file"],
)
def test_a_trace_without_job_records_is_refused(
    tmp_path: Path, name: str, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    # A simulation of nothing would print a summary of zeros and exit 0.
    path = tmp_path / name
    path.write_bytes(content)
    assert main(["simulate", "--workload", str(path), "--hosts", "10"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"xce-sched: error: {path}: no job records, nothing to simulate "
        "(an SWF trace lists one job per line)\n"
    )


@pytest.mark.parametrize(
    "definitions, message",
    [
        (
            [],
            "no definition is of a queue the simulated jobs are in ('normal'; defined: none): "
            "it would change nothing",
        ),
        (
            [{"name": "a", "backfill": "strict"}, {"name": "b", "backfill": "easy"}],
            "no definition is of a queue the simulated jobs are in ('normal'; defined: 'a', "
            "'b'): it would change nothing",
        ),
        (
            [{"name": "normal"}, {"name": "urgent", "preemptible_queues": ["normal", "nosuch"]}],
            "[1].preemptible_queues[1]: queue 'nosuch' is defined nowhere (queues: normal, urgent)",
        ),
        (
            [{"name": "normal", "job_pick_plugin": "nosuch"}],
            "[0].job_pick_plugin: unknown picker 'nosuch'; known: "
            "builtin_fcfs, f1, fairshare, largest_first, sjf, smallest_first, unicep, wfp3",
        ),
    ],
    ids=[
        "an empty list",
        "only queues no job is in",
        "a queue to preempt defined nowhere",
        "an unknown picker",
    ],
)
def test_a_queue_file_that_would_change_nothing_or_names_no_queue_is_refused(
    tmp_path: Path,
    definitions: list[dict[str, object]],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "q.json"
    path.write_bytes(orjson.dumps(definitions))
    assert main(["simulate", "--jobs", "20", "--queues", str(path), "--quiet"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"xce-sched: error: --queues {path}: {message}\n"


def test_a_trace_whose_every_record_is_skipped_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One record with an unknown run time (-1): nothing is left to simulate.
    path = tmp_path / "skipped.swf"
    path.write_text("; MaxProcs: 4\n1 0 0 -1 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert main(["simulate", "--workload", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"xce-sched: error: {path}: no record can be simulated "
        "(1 record skipped: unknown run time 1)\n"
    )


# --- a real trace, end to end ------------------------------------------------------------


@pytest.fixture(scope="module")
def sdsc_run(
    trace_path: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """One CI-sized simulation of the first 2,000 SDSC-SP2 records, with every output."""
    out = tmp_path_factory.mktemp("sdsc")
    paths = {"report": out / "report.json", "jobs": out / "jobs.csv", "record": out / "a.jsonl"}
    code = main(
        [
            "simulate",
            "--workload",
            str(trace_path(SDSC)),
            "--max-jobs",
            "2000",
            "--quiet",
            "--report",
            str(paths["report"]),
            "--jobs-out",
            str(paths["jobs"]),
            "--record",
            str(paths["record"]),
        ]
    )
    assert code == 0
    return paths


def test_sdsc_prefix_report(sdsc_run: dict[str, Path], trace_path: Callable[[str], Path]) -> None:
    report = orjson.loads(sdsc_run["report"].read_bytes())
    assert set(REPORT_KEYS) <= set(report)
    assert report["workload"] == str(trace_path(SDSC))
    assert (report["hosts"], report["slots"]) == (128, 128)
    # The first 2,000 records hold 127 with run time -1 (cancelled before they ran).
    assert report["jobs_total"] == 2000
    assert report["jobs_skipped"] == 127
    assert report["jobs_started"] == report["jobs_finished"] == 1873
    assert (report["jobs_rejected"], report["jobs_never_started"]) == (0, 0)
    assert report["decisions"]["DISPATCH"] == 1873
    assert report["decisions"]["NEW_SESSION"] == report["rounds"]
    assert 0 < report["utilization"] <= 1
    assert 0 <= report["median_wait_s"] <= report["max_wait_s"]
    assert report["mean_bounded_slowdown"] >= 1


def test_sdsc_prefix_jobs_keep_trace_numbers_and_times(
    sdsc_run: dict[str, Path], load_trace: Callable[[str], SwfTrace]
) -> None:
    records = {r.job_number: r for r in load_trace(SDSC).records[:2000]}
    header, rows = read_csv(sdsc_run["jobs"])
    assert header == CSV_HEADER
    # Every record has its row: 1,873 jobs, and the 127 of unknown run time skipped.
    assert [int(row["jobid"]) for row in rows] == sorted(records)
    skipped = [row for row in rows if row["status"] == "skipped"]
    assert len(skipped) == 127 and {row["skipped"] for row in skipped} == {"unknown_run_time"}
    assert all(int(row["submit_s"]) == records[int(row["jobid"])].submit_time for row in skipped)
    rows = [row for row in rows if row["status"] != "skipped"]
    assert len(rows) == 1873
    expected = sorted(n for n, r in records.items() if r.run_time >= 0)
    assert [int(row["jobid"]) for row in rows] == expected
    for row in rows:
        record = records[int(row["jobid"])]
        start, end = int(row["start_s"]), int(row["end_s"])
        assert int(row["submit_s"]) == record.submit_time
        assert start >= record.submit_time
        assert end - start == record.run_time
        tasks = record.requested_procs if record.requested_procs > 0 else record.allocated_procs
        assert int(row["tasks"]) == tasks == len(row["hosts"].split())
        # --swf-estimate requested (the default): field 9, else the run time.
        limit = record.requested_time if record.requested_time > 0 else max(record.run_time, 1)
        assert int(row["run_limit_s"]) == limit


def test_sdsc_prefix_with_exact_estimates_changes_the_limits_not_the_decisions(
    sdsc_run: dict[str, Path],
    trace_path: Callable[[str], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    jobs, events = tmp_path / "exact.csv", tmp_path / "exact.events.jsonl"
    argv = ["--workload", str(trace_path(SDSC)), "--max-jobs", "2000", "--swf-estimate", "exact"]
    assert run_cli(["simulate", *argv, "--quiet", "--jobs-out", str(jobs)], capsys)[0] == 0
    header, rows = read_csv(jobs, jobs_only=True)
    assert header == CSV_HEADER
    assert all(
        int(row["run_limit_s"]) == max(int(row["end_s"]) - int(row["start_s"]), 1) for row in rows
    )
    # No decision reads a run limit yet: every job starts as with requested times.
    _, requested = read_csv(sdsc_run["jobs"], jobs_only=True)
    assert [row["start_s"] for row in rows] == [row["start_s"] for row in requested]
    assert [row["run_limit_s"] for row in rows] != [row["run_limit_s"] for row in requested]
    # The event file submits each job with the limit simulate gives it.
    assert run_cli(["events", *argv, "--out", str(events)], capsys)[0] == 0
    pushed = {
        job["jobid"]: job["run_limit_s"]
        for line in events.read_bytes().splitlines()
        if (event := orjson.loads(line))["type"] == "JOBS_PUSH"
        for job in event["payload"]["jobs"]
    }
    assert pushed == {int(row["jobid"]): int(row["run_limit_s"]) for row in rows}


def test_sdsc_prefix_decisions_are_identical_across_runs(
    sdsc_run: dict[str, Path],
    trace_path: Callable[[str], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    again = tmp_path / "b.jsonl"
    argv = ["simulate", "--workload", str(trace_path(SDSC)), "--max-jobs", "2000"]
    assert run_cli([*argv, "--quiet", "--record", str(again)], capsys) == (0, "", "")
    first = sdsc_run["record"].read_bytes().splitlines()
    second = again.read_bytes().splitlines()
    assert orjson.loads(first[0])["type"] == orjson.loads(second[0])["type"] == "HEADER"
    assert first[1:] == second[1:]


def test_sdsc_queue_map(
    load_trace: Callable[[str], SwfTrace], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record_path = tmp_path / "q.jsonl"
    trace = load_trace(SDSC)
    argv = ["simulate", "--workload", trace.source, "--max-jobs", "300", "--quiet"]
    argv += ["--swf-queues", "0=interactive:60,1=express:50,2=high:40,*=normal:30"]
    assert run_cli([*argv, "--record", str(record_path)], capsys) == (0, "", "")
    lines = [parse_recording_line(line) for line in record_path.read_bytes().splitlines()]
    snapshot = lines[1]
    assert snapshot.type == "SNAPSHOT"
    config = CoreSnapshot.model_validate(snapshot.data).config
    assert [(q.name, q.priority) for q in config.queues] == [
        ("interactive", 60),
        ("express", 50),
        ("high", 40),
        ("normal", 30),
    ]
    names = {0: "interactive", 1: "express", 2: "high"}
    queue_of = {r.job_number: names.get(r.queue_number, "normal") for r in trace.records[:300]}
    pushed = [job for line in lines if isinstance(line, JobsPush) for job in line.payload.jobs]
    assert pushed
    assert all(job.queue == queue_of[job.jobid] for job in pushed)
    assert {job.queue for job in pushed} >= {"express", "normal"}


def test_small_cluster_rejects_jobs_larger_than_it(
    load_trace: Callable[[str], SwfTrace],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    report_path = tmp_path / "r.json"
    argv = ["simulate", "--workload", load_trace(SDSC).source, "--max-jobs", "300"]
    argv += ["--hosts", "16", "--quiet", "--report", str(report_path)]
    assert run_cli(argv, capsys) == (0, "", "")
    runnable = [r for r in load_trace(SDSC).records[:300] if r.run_time >= 0]
    too_large = sum(
        (r.requested_procs if r.requested_procs > 0 else r.allocated_procs) > 16 for r in runnable
    )
    report = orjson.loads(report_path.read_bytes())
    assert too_large > 0
    assert report["hosts"] == 16
    assert report["jobs_rejected"] == too_large
    assert report["jobs_finished"] == len(runnable) - too_large


# --- bad input -------------------------------------------------------------------------


def _swf(tmp: Path, text: str, name: str = "bad.swf") -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def _corrupt_gzip(tmp: Path) -> Path:
    path = tmp / "corrupt.swf.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\x07" + bytes(8))
    return path


BAD_INPUT = [
    (
        lambda tmp: ["--workload", str(tmp / "nosuch.swf")],
        lambda tmp: f"{tmp / 'nosuch.swf'}: no such file",
    ),
    (
        lambda tmp: ["--workload", str(tmp)],
        lambda tmp: f"{tmp}: is a directory, not a workload file",
    ),
    (
        lambda tmp: ["--workload", str(_swf(tmp, f"; MaxProcs: 8\n{GOOD_RECORD}\n1 5 -1 x\n"))],
        lambda tmp: f"{tmp / 'bad.swf'}:3: expected 18 fields, found 4",
    ),
    (
        lambda tmp: [
            "--workload",
            str(_swf(tmp, f"; MaxProcs: 8\n\n{GOOD_RECORD.replace(' 100 ', ' 1h ')}\n")),
        ],
        lambda tmp: f"{tmp / 'bad.swf'}:3: field 4 (run_time): '1h' is not a number",
    ),
    (
        lambda tmp: ["--workload", str(_swf(tmp, f"; Version: 2\n{GOOD_RECORD}\n"))],
        lambda tmp: f"{tmp / 'bad.swf'}: the header gives no MaxProcs or MaxNodes; pass --hosts",
    ),
    (
        lambda tmp: [
            "--workload",
            str(_swf(tmp, f"; MaxProcs: 8\n{GOOD_RECORD}\n{GOOD_RECORD}\n")),
        ],
        lambda tmp: f"{tmp / 'bad.swf'}: job number 1 appears twice",
    ),
    (
        lambda tmp: ["--workload", str(_corrupt_gzip(tmp))],
        lambda tmp: (
            f"{tmp / 'corrupt.swf.gz'}: cannot be read "
            "(Error -3 while decompressing data: invalid block type)"
        ),
    ),
    (
        lambda tmp: ["--policy", "nosuch"],
        lambda tmp: (
            "unknown picker 'nosuch'; known: "
            "builtin_fcfs, f1, fairshare, largest_first, sjf, smallest_first, unicep, wfp3"
        ),
    ),
    (
        lambda tmp: ["--swf-queues", "garbage"],
        lambda tmp: "--swf-queues: queue map entry 'garbage' is not NUM=NAME[:PRIORITY]",
    ),
    (
        lambda tmp: ["--swf-queues", "1=express:50,2=express:40"],
        lambda tmp: "--swf-queues: queue 'express' is given two priorities",
    ),
    (
        lambda tmp: ["--report", str(tmp / "missing" / "r.json")],
        lambda tmp: (
            f"--report {tmp / 'missing' / 'r.json'}: folder {tmp / 'missing'} does not exist"
        ),
    ),
    (
        lambda tmp: ["--record", str(tmp / "missing" / "r.jsonl")],
        lambda tmp: (
            f"--record {tmp / 'missing' / 'r.jsonl'}: folder {tmp / 'missing'} does not exist"
        ),
    ),
    (
        lambda tmp: ["--jobs-out", str(tmp)],
        lambda tmp: f"--jobs-out {tmp}: is a directory",
    ),
    (
        lambda tmp: ["--report", str(_swf(tmp, "; MaxProcs: 8\n") / "r.json")],
        lambda tmp: f"--report {tmp / 'bad.swf' / 'r.json'}: {tmp / 'bad.swf'} is not a folder",
    ),
]
BAD_INPUT_IDS = [
    "missing workload file",
    "a directory as workload",
    "a record with 4 fields",
    "a malformed run time",
    "a trace without machine size and no --hosts",
    "a trace with a job number twice",
    "a gzip trace with corrupt compressed data",
    "unknown policy",
    "a queue map that does not parse",
    "a queue map giving one queue two priorities",
    "--report into a missing folder",
    "--record into a missing folder",
    "--jobs-out onto a directory",
    "--report under a file, not a folder",
]


def _assert_one_error_line(code: int, out: str, err: str, message: str) -> None:
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert err.splitlines() == [f"xce-sched: error: {message}"]


@pytest.mark.parametrize("make_argv, make_message", BAD_INPUT, ids=BAD_INPUT_IDS)
def test_bad_input_is_one_error_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make_argv: Callable[[Path], list[str]],
    make_message: Callable[[Path], str],
) -> None:
    code, out, err = run_cli(["simulate", "--max-jobs", "20", *make_argv(tmp_path)], capsys)
    _assert_one_error_line(code, out, err, make_message(tmp_path))


def test_failed_run_writes_no_output_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _swf(tmp_path, f"; MaxProcs: 8\n{GOOD_RECORD}\n1 5 -1 x\n")
    outputs = [tmp_path / "r.json", tmp_path / "j.csv", tmp_path / "r.jsonl"]
    argv = ["simulate", "--workload", str(bad), "--report", str(outputs[0])]
    argv += ["--jobs-out", str(outputs[1]), "--record", str(outputs[2])]
    assert run_cli(argv, capsys)[0] == 2
    assert [path.exists() for path in outputs] == [False, False, False]


@pytest.mark.parametrize(
    "make_argv",
    [
        lambda tmp: ["--swf-queues", "*=normal:99999999999"],
        lambda tmp: ["--swf-queues", "1=café"],
        lambda tmp: [
            "--workload",
            str(_swf(tmp, f"; MaxProcs: 8\n{GOOD_RECORD.replace('1 ', '-5 ', 1)}\n")),
        ],
    ],
    ids=[
        "a queue priority beyond 32 bits",
        "a queue name outside the wire schema's characters",
        "a negative job number",
    ],
)
def test_bad_input_found_late_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make_argv: Callable[[Path], list[str]]
) -> None:
    code, _, err = run_cli(
        ["simulate", "--max-jobs", "20", "--quiet", *make_argv(tmp_path)], capsys
    )
    assert code == 2
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1
    assert err.startswith("xce-sched: error: ")


@pytest.mark.parametrize(
    "argv, option",
    [
        (["simulate", "--hosts", "0"], "--hosts"),
        (["simulate", "--hosts", "abc"], "--hosts"),
        (["simulate", "--round-interval", "-5"], "--round-interval"),
        (["simulate", "--round-interval", "0"], "--round-interval"),
        (["simulate", "--slots-per-host", "0"], "--slots-per-host"),
        (["simulate", "--jobs", "0"], "--jobs"),
        (["simulate", "--max-jobs", "many"], "--max-jobs"),
        (["simulate", "--seed", "1.5"], "--seed"),
        (["simulate", "--swf-estimate", "guess"], "--swf-estimate"),
        (["emulate", "--swf-estimate", "Exact"], "--swf-estimate"),
        (["events", "--swf-estimate", "", "--out", "x.jsonl"], "--swf-estimate"),
        (["simulate", "--swf-estimate"], "--swf-estimate"),
        (["simulate", "--no-such-option"], "--no-such-option"),
        ([], "COMMAND"),
        (["replicate"], "replicate"),
    ],
    ids=[
        "zero hosts",
        "hosts not a number",
        "a negative round interval",
        "a zero round interval",
        "zero slots per host",
        "zero generated jobs",
        "max jobs not a number",
        "a fractional seed",
        "an unknown run-limit estimate",
        "an estimate in another case",
        "an empty estimate",
        "an estimate without its value",
        "an unknown option",
        "no command",
        "an unknown command",
    ],
)
def test_usage_errors(argv: list[str], option: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(argv, capsys)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith("xce-sched: error: ")
    assert option in line


@pytest.mark.parametrize("command", ["simulate", "emulate", "events"])
def test_an_unknown_run_limit_estimate_lists_the_known_ones(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _assert_one_error_line(
        *run_cli([command, "--swf-estimate", "guess"], capsys),
        "argument --swf-estimate: invalid choice: 'guess' (choose from 'requested', 'exact')",
    )


# --- ceilings, strict numbers, ignored inputs (one error line, before any work) ---------------


def _trace_with(tmp: Path, header: str, *records: str, name: str = "t.swf") -> Path:
    return _swf(tmp, header + "".join(record + "\n" for record in records), name)


MISTAKES = [
    # Ceilings of the options.
    (
        lambda tmp: ["--hosts", "1000000000"],
        lambda tmp: "argument --hosts: 1000000000 is more than the ceiling of 1,000,000 hosts",
    ),
    (
        lambda tmp: ["--hosts", "1" + "0" * 35],
        lambda tmp: (
            "argument --hosts: 100000000000000000000000000000000000 is more than the ceiling "
            "of 1,000,000 hosts"
        ),
    ),
    (
        lambda tmp: ["--hosts", "9" * 5000],
        lambda tmp: f"argument --hosts: {'9' * 40}... is more than the ceiling of 1,000,000 hosts",
    ),
    (
        lambda tmp: ["--slots-per-host", "2147483648"],
        lambda tmp: (
            "argument --slots-per-host: 2147483648 is more than the ceiling of 2,147,483,647 slots"
        ),
    ),
    (
        lambda tmp: ["--hosts", "1000000", "--slots-per-host", "4096"],
        lambda tmp: (
            "--hosts × --slots-per-host: 1,000,000 × 4,096 = 4,096,000,000 slots, more than "
            "the ceiling of 2,147,483,647"
        ),
    ),
    (
        lambda tmp: ["--slots-per-host", "2147483647"],
        lambda tmp: (
            "--hosts × --slots-per-host: 128 × 2,147,483,647 = 274,877,906,816 slots, more "
            "than the ceiling of 2,147,483,647"
        ),
    ),
    (
        lambda tmp: ["--round-interval", "1000000001"],
        lambda tmp: (
            "argument --round-interval: 1000000001 is more than the ceiling of 1,000,000,000 s"
        ),
    ),
    (
        lambda tmp: ["--jobs", "10000001"],
        lambda tmp: "argument --jobs: 10000001 is more than the ceiling of 10,000,000 jobs",
    ),
    (
        lambda tmp: ["--host-mem", str(2**40 + 1)],
        lambda tmp: (
            "argument --host-mem: 1099511627777 is more than the ceiling of 1,099,511,627,776 MB"
        ),
    ),
    (
        lambda tmp: ["--seed", str(2**64)],
        lambda tmp: (
            "argument --seed: 18446744073709551616 is more than the ceiling of "
            "18,446,744,073,709,551,615"
        ),
    ),
    # A machine size in the header beyond the ceiling.
    (
        lambda tmp: [
            "--workload",
            str(_trace_with(tmp, "; MaxProcs: 999999999999\n", GOOD_RECORD)),
        ],
        lambda tmp: (
            f"{tmp / 't.swf'}:1: header MaxProcs: 999999999999 hosts is more than the ceiling "
            "of 1,000,000; pass --hosts"
        ),
    ),
    (
        lambda tmp: ["--workload", str(_trace_with(tmp, "; MaxNodes: 1000001\n", GOOD_RECORD))],
        lambda tmp: (
            f"{tmp / 't.swf'}:1: header MaxNodes: 1000001 hosts is more than the ceiling "
            "of 1,000,000; pass --hosts"
        ),
    ),
    # Values of a trace beyond what can be simulated, found before the run.
    (
        lambda tmp: [
            "--workload",
            str(
                _trace_with(
                    tmp,
                    "; MaxProcs: 8\n",
                    GOOD_RECORD,
                    "2 0 5 99999999999 4 -1 -1 4 200 -1 1 3 2 7 1 1 -1 -1",
                )
            ),
        ],
        lambda tmp: (
            f"{tmp / 't.swf'}:3: field 4 (run_time): 99999999999 is too long; UnixStartTime "
            "(0) + submit time (0) + run time must stay below 10,000,000,000 s (the year 2286)"
        ),
    ),
    (
        lambda tmp: [
            "--workload",
            str(
                _trace_with(
                    tmp,
                    "; MaxProcs: 8\n",
                    GOOD_RECORD.replace("1 0 5", "1 18446744073709551616 5", 1),
                )
            ),
        ],
        lambda tmp: (
            f"{tmp / 't.swf'}:2: field 2 (submit_time): 18446744073709551616 is too late; "
            "UnixStartTime (0) + submit time must stay below 10,000,000,000 s (the year 2286)"
        ),
    ),
    (
        lambda tmp: [
            "--workload",
            str(_trace_with(tmp, "; MaxProcs: 8\n; UnixStartTime: abc\n", GOOD_RECORD)),
        ],
        lambda tmp: (
            f"{tmp / 't.swf'}:2: header UnixStartTime: 'abc' is not a whole number of seconds "
            "(0 or more)"
        ),
    ),
    (
        lambda tmp: [
            "--workload",
            str(
                _trace_with(
                    tmp, "; MaxProcs: 8\n", GOOD_RECORD.replace(" 4 200 ", " 4294967296 200 ")
                )
            ),
        ],
        lambda tmp: (
            f"{tmp / 't.swf'}:2: field 8 (requested_procs): 4294967296 is more than "
            "2,147,483,647 processors"
        ),
    ),
    # Numbers written in ways Python accepts and the format does not.
    (
        lambda tmp: ["--hosts", "1_000"],
        lambda tmp: "argument --hosts: '1_000' is not a whole number",
    ),
    (
        lambda tmp: ["--hosts", "１２"],  # full-width digits
        lambda tmp: "argument --hosts: '１２' is not a whole number",
    ),
    (
        lambda tmp: ["--seed", "٣"],  # an Arabic-Indic digit
        lambda tmp: "argument --seed: '٣' is not a whole number",
    ),
    (
        lambda tmp: ["--jobs", " 5"],
        lambda tmp: "argument --jobs: ' 5' is not a whole number",
    ),
    (
        lambda tmp: ["--seed", "-1"],
        lambda tmp: "argument --seed: -1 must not be negative",
    ),
    (
        lambda tmp: [
            "--workload",
            str(_trace_with(tmp, "; MaxProcs: 8\n", GOOD_RECORD.replace(" 100 ", " 1_00 "))),
        ],
        lambda tmp: f"{tmp / 't.swf'}:2: field 4 (run_time): '1_00' is not a number",
    ),
    (
        lambda tmp: ["--swf-queues", "1_0=express"],
        lambda tmp: "--swf-queues: queue map entry '1_0=express': '1_0' is not a queue number",
    ),
    # Inputs that were silently ignored.
    (
        lambda tmp: ["--swf-queues", ""],
        lambda tmp: "--swf-queues: empty queue map",
    ),
    (
        lambda tmp: ["--host-mem", "4096"],
        lambda tmp: (
            "--host-mem is the memory --swf-memory reserves from; without --swf-memory no "
            "job reserves memory"
        ),
    ),
    (
        lambda tmp: ["--jobs", "30", "--max-jobs", "50"],
        lambda tmp: "--jobs and --max-jobs both set the generated workload's size; give one",
    ),
    (
        lambda tmp: ["--swf-memory", "--host-mem", "4096", "--jobs", "20"],
        lambda tmp: (
            "lublin-feitelson-2003(n_jobs=20, nodes=128, seed=1): --swf-memory: no record "
            "simulated gives a requested memory (field 10 is -1 or 0 in every one)"
        ),
    ),
    (
        lambda tmp: ["--swf-queues", "2=urgent:100", "--jobs", "20"],
        lambda tmp: (
            "lublin-feitelson-2003(n_jobs=20, nodes=128, seed=1): --swf-queues: no record "
            "simulated is in queue 2 (field 15); their queue numbers: 1"
        ),
    ),
    (
        lambda tmp: [
            "--workload",
            str(
                _trace_with(
                    tmp, "; MaxProcs: 8\n", GOOD_RECORD.replace(" 1 1 -1 -1", " -1 1 -1 -1")
                )
            ),
            "--swf-queues",
            "1=batch,2=express",
        ],
        lambda tmp: (
            f"{tmp / 't.swf'}: --swf-queues: no record simulated is in queue 1, 2 (field 15); "
            "their queue numbers: -1"
        ),
    ),
    # A header value that is there but wrong, read as absent.
    (
        lambda tmp: [
            "--workload",
            str(_trace_with(tmp, "; Version: 2.2\n; MaxProcs: -4\n; MaxNodes: 8\n", GOOD_RECORD)),
        ],
        lambda tmp: (
            f"{tmp / 't.swf'}:2: header MaxProcs: '-4' is not a whole number of processors "
            "above 0; pass --hosts"
        ),
    ),
    (
        lambda tmp: [
            "--workload",
            str(_trace_with(tmp, "; MaxProcs: 8\n; MaxProcs: 16\n", GOOD_RECORD)),
        ],
        lambda tmp: (
            f"{tmp / 't.swf'}:1: header MaxProcs: given again with another value ('8', then "
            "'16'); pass --hosts"
        ),
    ),
    # A record value that is not SWF, read as a skip.
    (
        lambda tmp: [
            "--workload",
            str(
                _trace_with(tmp, "; MaxProcs: 8\n", GOOD_RECORD.replace("1 0 5 100", "1 -30 5 100"))
            ),
        ],
        lambda tmp: (
            f"{tmp / 't.swf'}:2: field 2 (submit_time): -30 is negative, and the format's only "
            "negative value is -1 (unknown)"
        ),
    ),
    (
        lambda tmp: [
            "--workload",
            str(_trace_with(tmp, "; MaxProcs: 8\n", GOOD_RECORD)),
            "--jobs",
            "5",
        ],
        lambda tmp: (
            "--jobs sets the size of the generated workload; with --workload use --max-jobs"
        ),
    ),
    # Outputs under a file, or one file named twice.
    (
        lambda tmp: ["--report", str(_swf(tmp, "x", "afile") / "r.json")],
        lambda tmp: f"--report {tmp / 'afile' / 'r.json'}: {tmp / 'afile'} is not a folder",
    ),
    (
        lambda tmp: ["--jobs-out", str(_swf(tmp, "x", "afile") / "sub" / "j.csv")],
        lambda tmp: (
            f"--jobs-out {tmp / 'afile' / 'sub' / 'j.csv'}: {tmp / 'afile'} is not a folder"
        ),
    ),
    (
        lambda tmp: ["--report", str(tmp / "x.out"), "--jobs-out", str(tmp / "x.out")],
        lambda tmp: f"--report and --jobs-out name the same file {tmp / 'x.out'}",
    ),
    (
        lambda tmp: ["--record", str(tmp / "x.out"), "--report", str(tmp / "." / "x.out")],
        lambda tmp: f"--record and --report name the same file {tmp / '.' / 'x.out'}",
    ),
    (
        lambda tmp: [
            "--workload",
            str(_trace_with(tmp, "; MaxProcs: 8\n", GOOD_RECORD)),
            "--jobs-out",
            str(tmp / "t.swf"),
        ],
        lambda tmp: f"--workload and --jobs-out name the same file {tmp / 't.swf'}",
    ),
]
MISTAKE_IDS = [
    "a billion hosts",
    "10**35 hosts",
    "hosts with 5,000 digits",
    "slots per host beyond 32 bits",
    "hosts × slots per host beyond 32 bits",
    "slots per host that overflow the default 128 hosts",
    "a round interval beyond 10**9 s",
    "more than ten million generated jobs",
    "host memory beyond 2**40 MB",
    "a seed beyond 64 bits",
    "a header MaxProcs beyond the ceiling",
    "a header MaxNodes just beyond the ceiling",
    "a run time ending past 10**10 s",
    "a submit time beyond 64 bits",
    "a header UnixStartTime that is not a number",
    "a job asking for more than 2**31 - 1 processors",
    "hosts with an underscore",
    "hosts in full-width digits",
    "a seed in Arabic-Indic digits",
    "jobs with a leading space",
    "a negative seed",
    "a trace run time with an underscore",
    "a queue number with an underscore",
    "an empty queue map",
    "--host-mem without --swf-memory",
    "--jobs with --max-jobs",
    "--swf-memory on the generated workload, which asks no memory",
    "a queue map none of whose numbers a generated job has",
    "a queue map none of whose numbers a trace record has",
    "a negative header MaxProcs",
    "a header MaxProcs given twice with different values",
    "a negative submit time other than -1",
    "--jobs with --workload",
    "--report under a file",
    "--jobs-out two levels under a file",
    "--report and --jobs-out on one file",
    "--record and --report on one file spelled two ways",
    "--jobs-out onto the workload it reads",
]


@pytest.mark.parametrize("make_argv, make_message", MISTAKES, ids=MISTAKE_IDS)
def test_mistake_is_one_error_line_before_any_work(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make_argv: Callable[[Path], list[str]],
    make_message: Callable[[Path], str],
) -> None:
    record = tmp_path / "never.jsonl"
    argv = make_argv(tmp_path)
    extra = [] if "--record" in argv else ["--record", str(record)]
    code, out, err = run_cli(["simulate", "--quiet", *argv, *extra], capsys)
    _assert_one_error_line(code, out, err, make_message(tmp_path))
    assert not record.exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["replay", "x.jsonl", "--sim-speed", "nan"],
            "argument --sim-speed: 'nan' is not a number",
        ),
        (
            ["replay", "x.jsonl", "--sim-speed", "1e999"],
            "argument --sim-speed: '1e999' must be a finite number, 0 or more",
        ),
        (
            ["replay", "x.jsonl", "--sim-start-ts", "1_0"],
            "argument --sim-start-ts: '1_0' is not a whole number",
        ),
        (
            ["replay", "x.jsonl", "--sim-pause-at", str(2**64)],
            "argument --sim-pause-at: 18446744073709551616 is more than the ceiling of "
            "18,446,744,073,709,551,615 ns",
        ),
    ],
    ids=[
        "a speed of nan",
        "an infinite speed",
        "a start ts with an underscore",
        "a pause ts beyond 64 bits",
    ],
)
def test_replay_number_mistakes(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _assert_one_error_line(*run_cli(argv, capsys), message)


def test_a_header_beyond_the_ceiling_runs_with_hosts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace_with(tmp_path, "; MaxProcs: 999999999999\n", GOOD_RECORD)
    report_path = tmp_path / "r.json"
    argv = ["simulate", "--workload", str(trace), "--hosts", "8", "--quiet"]
    assert run_cli([*argv, "--report", str(report_path)], capsys) == (0, "", "")
    report = orjson.loads(report_path.read_bytes())
    assert (report["hosts"], report["jobs_finished"]) == (8, 1)


def test_a_job_larger_than_the_cluster_but_within_32_bits_is_rejected_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    large = GOOD_RECORD.replace("1 0 5 100 4", "2 0 5 100 4").replace(" 4 200 ", " 2147483647 200 ")
    trace = _trace_with(tmp_path, "; MaxProcs: 8\n", GOOD_RECORD, large)
    report_path = tmp_path / "r.json"
    argv = ["simulate", "--workload", str(trace), "--quiet", "--report", str(report_path)]
    assert run_cli(argv, capsys) == (0, "", "")
    report = orjson.loads(report_path.read_bytes())
    assert (report["jobs_total"], report["jobs_finished"], report["jobs_rejected"]) == (2, 1, 1)


# --- skipped records, by reason; options refused where they would change nothing -------------


def test_skipped_records_are_counted_by_reason_in_the_summary_and_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    records = [
        GOOD_RECORD,
        "2 -1 5 100 4 -1 -1 4 200 -1 1 3 2 7 1 1 -1 -1",  # unknown submit time
        "3 0 5 -1 4 -1 -1 4 200 -1 1 3 2 7 1 1 -1 -1",  # unknown run time
        "4 0 5 -1 4 -1 -1 4 200 -1 1 3 2 7 1 1 -1 -1",  # unknown run time
        "5 0 5 100 0 -1 -1 -1 200 -1 1 3 2 7 1 1 -1 -1",  # no processors
    ]
    trace = _trace_with(tmp_path, "; MaxProcs: 8\n", *records)
    report_path = tmp_path / "r.json"
    code, out, err = run_cli(
        ["simulate", "--workload", str(trace), "--report", str(report_path)], capsys
    )
    assert (code, err) == (0, "")
    rows = summary_rows(out)
    assert rows["skipped / rejected / never started"] == "4 / 0 / 0"
    assert rows["skipped by reason"] == (
        "unknown submit time 1, unknown run time 2, no processors 1"
    )
    report = orjson.loads(report_path.read_bytes())
    assert (report["jobs_total"], report["jobs_skipped"]) == (5, 4)
    assert report["jobs_skipped_by_reason"] == {
        "unknown_submit_time": 1,
        "unknown_run_time": 2,
        "no_processors": 1,
    }


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["simulate", "--record-snapshot-interval", "100"],
            "--record-snapshot-interval sets the snapshots of --record; give --record",
        ),
        (
            ["simulate", "--record-snapshot-interval", "0"],
            "--record-snapshot-interval sets the snapshots of --record; give --record",
        ),
        (
            ["emulate", "--host-mem", "64"],
            "--host-mem is the memory --swf-memory reserves from; without --swf-memory no "
            "job reserves memory",
        ),
        (
            ["emulate", "--workload", "{trace}", "--seed", "5"],
            "emulate --seed seeds only the generated workload; with --workload it changes "
            "nothing (the live core's seed is xce-core-service --prng-seed)",
        ),
        (
            ["simulate", "--jobs", "20", "--swf-estimate", "exact"],
            "lublin-feitelson-2003(n_jobs=20, nodes=128, seed=1): --swf-estimate exact: no "
            "record simulated gives a requested time (field 9 is -1 or 0 in every one), so its "
            "run limits are the run times already",
        ),
        (
            ["emulate", "--workload", "{unrequested}", "--swf-estimate", "exact"],
            "{unrequested}: --swf-estimate exact: no record simulated gives a requested time "
            "(field 9 is -1 or 0 in every one), so its run limits are the run times already",
        ),
    ],
    ids=[
        "a snapshot interval without --record",
        "a snapshot interval of 0 without --record",
        "emulate --host-mem without --swf-memory",
        "emulate --seed with --workload",
        "exact estimates of the generated workload",
        "exact estimates of a trace without requested times",
    ],
)
def test_an_option_ignored_in_its_combination_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    trace = str(_trace_with(tmp_path, "; MaxProcs: 8\n", GOOD_RECORD))
    unrequested = tmp_path / "unrequested.swf"
    unrequested.write_text(f"; MaxProcs: 8\n{GOOD_RECORD.replace(' 200 ', ' -1 ')}\n")
    names = {"{trace}": trace, "{unrequested}": str(unrequested)}
    argv = [names.get(arg, arg) for arg in argv]
    message = message.replace("{unrequested}", str(unrequested))
    _assert_one_error_line(*run_cli([*argv, "--quiet"], capsys), message)


def test_simulate_seed_with_a_workload_is_the_core_prng_seed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a trace, ``--seed`` seeds the core's PRNG: it is in the recording's
    snapshot (documented, not refused)."""
    trace = _trace_with(tmp_path, "; MaxProcs: 8\n", GOOD_RECORD)
    recording = tmp_path / "r.jsonl"
    argv = ["simulate", "--workload", str(trace), "--seed", "7", "--quiet"]
    assert run_cli([*argv, "--record", str(recording)], capsys) == (0, "", "")
    snapshot = next(
        orjson.loads(line) for line in recording.read_bytes().splitlines() if b'"SNAPSHOT"' in line
    )
    assert '"seed":7' in orjson.dumps(snapshot).decode()


# --- file names that are not valid UTF-8 ---------------------------------------------------

#: A byte that is never valid UTF-8 on its own; shown as U+FFFD.
BAD_BYTE = b"\xff"


def _bytes_name(folder: Path, name: bytes) -> str:
    """``folder/name`` as the str Python makes of a bytes path (surrogateescape)."""
    return os.fsdecode(os.path.join(os.fsencode(folder), name))


def _shown(path: str) -> str:
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def test_a_file_name_that_is_not_utf8_works_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _bytes_name(tmp_path, b"d" + BAD_BYTE)
    os.mkdir(folder)
    trace = _bytes_name(Path(folder), b"tr" + BAD_BYTE + b"ce.swf")
    Path(trace).write_text("; MaxProcs: 8\n" + GOOD_RECORD + "\n")
    report = _bytes_name(Path(folder), b"r" + BAD_BYTE + b".json")
    jobs = _bytes_name(Path(folder), b"j" + BAD_BYTE + b".csv")
    recording = _bytes_name(Path(folder), b"r" + BAD_BYTE + b".jsonl.gz")
    argv = ["simulate", "--workload", trace, "--report", report, "--jobs-out", jobs]
    code, out, err = run_cli([*argv, "--record", recording], capsys)
    assert (code, err) == (0, "")
    assert "tr\ufffdce.swf" in out  # the summary's title
    assert orjson.loads(Path(report).read_bytes())["workload"] == _shown(trace)
    assert read_csv(Path(jobs))[1][0]["jobid"] == "1"
    replay_report = _bytes_name(Path(folder), b"rr" + BAD_BYTE + b".json")
    code, out, err = run_cli(
        ["replay", recording, "--sim-verify", "--report", replay_report], capsys
    )
    assert (code, err) == (0, "")
    assert "r\ufffd.jsonl.gz" in out
    assert orjson.loads(Path(replay_report).read_bytes())["mismatches"] == 0
    code, out, err = run_cli(["explain", "1", "--recording", recording], capsys)
    assert (code, err) == (0, "")
    assert out.startswith("job 1 ")


@pytest.mark.parametrize(
    "make_argv, make_message",
    [
        (
            lambda d: ["simulate", "--workload", _bytes_name(d, b"no" + BAD_BYTE + b".swf")],
            lambda d: f"{_shown(_bytes_name(d, b'no' + BAD_BYTE + b'.swf'))}: no such file",
        ),
        (
            lambda d: ["simulate", "--report", _bytes_name(d, b"m" + BAD_BYTE + b"/r.json")],
            lambda d: (
                f"--report {_shown(_bytes_name(d, b'm' + BAD_BYTE + b'/r.json'))}: folder "
                f"{_shown(_bytes_name(d, b'm' + BAD_BYTE))} does not exist"
            ),
        ),
        (
            lambda d: ["replay", _bytes_name(d, b"no" + BAD_BYTE + b".jsonl")],
            lambda d: f"{_shown(_bytes_name(d, b'no' + BAD_BYTE + b'.jsonl'))}: no such file",
        ),
        (
            lambda d: ["explain", "1", "--recording", _bytes_name(d, b"n" + BAD_BYTE)],
            lambda d: f"{_shown(_bytes_name(d, b'n' + BAD_BYTE))}: no such file",
        ),
        (
            lambda d: ["simulate", "--bogus", "x" + os.fsdecode(BAD_BYTE)],
            lambda d: "unrecognized arguments: --bogus x\ufffd",
        ),
    ],
    ids=[
        "a missing workload",
        "a report in a missing folder",
        "a missing recording to replay",
        "a missing recording to explain",
        "an unknown argument",
    ],
)
def test_an_error_naming_a_file_name_that_is_not_utf8_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make_argv: Callable[[Path], list[str]],
    make_message: Callable[[Path], str],
) -> None:
    _assert_one_error_line(*run_cli(make_argv(tmp_path), capsys), make_message(tmp_path))


# --- the generated workload's shape and size -------------------------------------------------


@pytest.mark.parametrize(
    "argv, label, hosts, slots, jobs",
    [
        (
            ["--slots-per-host", "4"],
            "lublin-feitelson-2003(n_jobs=2000, nodes=512, seed=1)",
            128,
            512,
            2000,
        ),
        (
            ["--hosts", "16", "--slots-per-host", "2", "--jobs", "100"],
            "lublin-feitelson-2003(n_jobs=100, nodes=32, seed=1)",
            16,
            32,
            100,
        ),
        (
            ["--max-jobs", "50"],
            "lublin-feitelson-2003(n_jobs=50, nodes=128, seed=1)",
            128,
            128,
            50,
        ),
    ],
    ids=[
        "slots per host alone: 128 hosts of 4 slots",
        "hosts and slots per host: the model is sized for their product",
        "max jobs generates just that many",
    ],
)
def test_generated_workload_shape(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    label: str,
    hosts: int,
    slots: int,
    jobs: int,
) -> None:
    report_path = tmp_path / "r.json"
    if "--jobs" not in argv and "--max-jobs" not in argv:
        argv = [*argv, "--max-jobs", "2000"]  # the default size, said out loud
    assert run_cli(["simulate", *argv, "--quiet", "--report", str(report_path)], capsys) == (
        0,
        "",
        "",
    )
    report = orjson.loads(report_path.read_bytes())
    assert report["workload"] == label
    assert (report["hosts"], report["slots"], report["jobs_total"]) == (hosts, slots, jobs)


# --- output files that cannot be written ---------------------------------------------------

needs_dev_full = pytest.mark.skipif(
    not Path("/dev/full").exists(), reason="/dev/full exists on Linux only"
)


@needs_dev_full
@pytest.mark.parametrize(
    "argv, message",
    [
        (["simulate", "--report", "/dev/full"], "--report /dev/full: No space left on device"),
        (["simulate", "--jobs-out", "/dev/full"], "--jobs-out /dev/full: No space left on device"),
        (["simulate", "--record", "/dev/full"], "--record /dev/full: No space left on device"),
    ],
    ids=["--report on a full disk", "--jobs-out on a full disk", "--record on a full disk"],
)
def test_write_error_names_the_option_and_file(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _assert_one_error_line(*run_cli([*argv, "--jobs", "50", "--quiet"], capsys), message)


@needs_dev_full
def test_replay_report_write_error_names_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "r.jsonl"
    assert (
        run_cli(["simulate", "--jobs", "20", "--quiet", "--record", str(recording)], capsys)[0] == 0
    )
    code, _, err = run_cli(["replay", str(recording), "--report", "/dev/full"], capsys)
    assert code == 2
    assert err.splitlines() == ["xce-sched: error: --report /dev/full: No space left on device"]


def test_write_error_on_a_file_that_refuses_writes(capsys: pytest.CaptureFixture[str]) -> None:
    if not Path("/proc/version").exists():
        pytest.skip("/proc/version exists on Linux only")
    code, out, err = run_cli(
        ["simulate", "--jobs", "20", "--quiet", "--report", "/proc/version"], capsys
    )
    assert (code, out) == (2, "")
    (line,) = err.splitlines()
    # Permission denied for a user, an input/output error for root.
    assert line in {
        "xce-sched: error: --report /proc/version: Permission denied",
        "xce-sched: error: --report /proc/version: Input/output error",
    }


def test_devices_may_take_several_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--jobs", "20", "--quiet", "--report", "/dev/null"]
    assert run_cli([*argv, "--jobs-out", "/dev/null", "--record", "/dev/null"], capsys) == (
        0,
        "",
        "",
    )


# --- the summary -------------------------------------------------------------------------


def test_summary_of_a_run_where_nothing_finished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    # 1,234 records: 1,233 without a run time (skipped), one too large for 1 host.
    skipped = [f"{n} 0 -1 -1 1 -1 -1 1 -1 -1 0 1 1 -1 1 -1 -1 -1" for n in range(2, 1235)]
    trace = _trace_with(tmp_path, "; MaxProcs: 1\n", GOOD_RECORD, *skipped)
    report_path = tmp_path / "r.json"
    code, out, err = run_cli(
        ["simulate", "--workload", str(trace), "--report", str(report_path)], capsys
    )
    assert (code, err) == (0, "")
    rows = summary_rows(out)
    assert rows["cluster"] == "1 host, 1 slot"
    assert rows["jobs"] == "1,234 total, 0 finished"
    assert rows["skipped / rejected / never started"] == "1,233 / 1 / 0"
    assert rows["wait mean / median / max"] == "n/a"
    assert rows["mean bounded slowdown (τ=10 s)"] == "n/a"
    report = orjson.loads(report_path.read_bytes())
    assert [report[key] for key in ("mean_wait_s", "median_wait_s", "max_wait_s")] == [None] * 3
    assert report["mean_bounded_slowdown"] is None


def test_help_is_plain_text(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_cli(["--help"], capsys)
    assert code == 0
    assert (
        "xce-sched: the scheduler developer's command line "
        "(simulate, emulate, replay, events, explain, compare, sweep, plot)." in out
    )
    assert "``" not in out


def test_help_lists_every_subcommand_with_its_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    commands = next(
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    helps = {choice.dest: choice.help for choice in commands._choices_actions}
    assert sorted(helps) == [
        "compare",
        "emulate",
        "events",
        "explain",
        "plot",
        "replay",
        "simulate",
        "sweep",
    ]
    code, out, _ = run_cli(["--help"], capsys)
    assert code == 0
    listed = {
        words[0]: " ".join(words[1:])
        for line in out.split("commands:", 1)[1].splitlines()
        if (words := line.split()) and words[0] in helps
    }
    assert listed == helps
    description = re.search(r"command line \((.*)\)\.", out)
    assert description is not None
    assert description.group(1).split(", ") == list(commands.choices)


def test_readme_option_table_lists_every_simulate_option() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Simulating a real trace", 1)[1].split("\n## ", 1)[0]
    first_cells = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    in_table = {option for cell in first_cells for option in re.findall(r"--[a-z-]+", cell)}
    commands = next(
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    options = {
        option
        for action in commands.choices["simulate"]._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }
    assert options - in_table == set()
    assert "`--swf-queues=-1=" in section
    assert "`../shared/DESIGN.md`\n(team docs, beside the repo)" in readme


def test_an_output_that_cannot_be_written_leaves_every_earlier_output_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--report`` is written before ``--jobs-out``; when the second cannot be
    written (here /dev/full: no space left), neither file changes: a failed run
    loses no earlier result, and leaves no partial file behind."""
    report = tmp_path / "r.json"
    report.write_text("earlier report")
    argv = ["simulate", "--jobs", "50", "--quiet", "--report", str(report)]
    assert main([*argv, "--jobs-out", "/dev/full"]) == 2
    assert "--jobs-out /dev/full: No space left on device" in capsys.readouterr().err
    assert report.read_text() == "earlier report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    # Written whole, with the permissions a new file gets.
    assert main([*argv, "--jobs-out", str(tmp_path / "j.csv")]) == 0
    assert report.read_text().startswith("{") and (tmp_path / "j.csv").stat().st_mode & 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.csv", "r.json"]


def test_series_out_writes_the_sampled_time_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    series, report = tmp_path / "series.csv", tmp_path / "r.json"
    argv = ["simulate", "--jobs", "200", "--quiet", "--report", str(report)]
    assert run_cli([*argv, "--series-out", str(series), "--sample-interval", "600"], capsys)[0] == 0
    header, rows = read_csv(series)
    assert header == ["t_s", "pending", "running", "busy_slots", "utilization"]
    times = [int(row["t_s"]) for row in rows]
    assert {b - a for a, b in itertools.pairwise(times)} == {600}
    # The mean sampled utilization approaches the report's, over the same span.
    mean = statistics.fmean(float(row["utilization"]) for row in rows)
    assert mean == pytest.approx(orjson.loads(report.read_bytes())["utilization"], rel=0.05)
    assert rows[-1]["running"] == "0" and rows[-1]["pending"] == "0"
    code, _, stderr = run_cli(["simulate", "--jobs", "20", "--sample-interval", "60"], capsys)
    assert code == 2
    assert stderr == (
        "xce-sched: error: --sample-interval sets the samples of --series-out, --plot and "
        "--html; give one\n"
    )
