"""--load-factor F: the submit gaps divided by F (floor, exactly), nothing else changed.

The mapping (``map_trace(load_factor=...)``, ``scale_arrivals``) does the scaling, so
every command that maps a workload gets it; the report and the summary say F.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import orjson
import pytest
from xce_driver.cli import build_parser, main
from xce_driver.simulate import run_simulation
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.mapping import (
    MappingError,
    load_factor_of,
    map_trace,
)
from xce_driver.workloads.swf import read_swf

from tests.driver.test_cli import read_csv, run_cli, summary_rows

SDSC = "SDSC-SP2-1998-4.2-cln.swf.gz"


def swf_record(job: int, submit: int, run: int, procs: int) -> str:
    """One SWF line: ``job`` submitted at ``submit`` s, running ``run`` s on ``procs``."""
    fields = [job, submit, -1, run, procs, -1, -1, procs, -1, -1, 1, 1, 1, 1, 1, 1, -1, -1]
    return " ".join(map(str, fields))


def write_swf(path: Path, records: list[str], header: str = "; MaxProcs: 4\n") -> Path:
    path.write_text(header + "\n".join(records) + "\n")
    return path


@pytest.fixture
def gaps_trace(tmp_path: Path) -> Path:
    """Four jobs submitted at 100, 110, 125 and 143 s (gaps 10, 15, 18), the second
    with an unknown run time (skipped), the last two in reverse jobid order."""
    return write_swf(
        tmp_path / "gaps.swf",
        [
            swf_record(1, 100, 50, 1),
            swf_record(2, 110, -1, 1),  # skipped: unknown run time
            swf_record(4, 125, 30, 2),
            swf_record(3, 143, 20, 4),
        ],
    )


# --- the mapping ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factor", "submits", "skipped_submit"),
    [
        (Fraction(2), [100, 112, 121], 105),
        (Fraction(3, 2), [100, 116, 128], 106),
        (Fraction(1, 2), [100, 150, 186], 120),
        (Fraction(1), [100, 125, 143], 110),
    ],
    ids=[
        "factor 2 halves every gap, floored",
        "factor 1.5: gaps 2/3 as long",
        "factor 0.5 doubles every gap",
        "factor 1 changes nothing",
    ],
)
def test_submit_gaps_are_divided_by_the_factor(
    gaps_trace: Path, factor: Fraction, submits: list[int], skipped_submit: int
) -> None:
    trace = read_swf(gaps_trace)
    plain = map_trace(trace)
    scaled = map_trace(trace, load_factor=factor)
    assert [job.submit_s for job in scaled.jobs] == submits
    assert [job.jobid for job in scaled.jobs] == [1, 4, 3]  # submit order kept
    # Nothing else changes: run times, sizes, run limits, the cluster.
    assert [(j.run_s, j.tasks, j.run_limit_s) for j in scaled.jobs] == [
        (j.run_s, j.tasks, j.run_limit_s) for j in plain.jobs
    ]
    assert (scaled.hosts, scaled.slots_per_host, scaled.queues) == (
        plain.hosts,
        plain.slots_per_host,
        plain.queues,
    )
    assert [r.submit_s for r in scaled.skipped_records] == [skipped_submit]
    assert scaled.load_factor == float(factor)


def test_factor_one_gives_exactly_the_same_workload(gaps_trace: Path) -> None:
    trace = read_swf(gaps_trace)
    assert map_trace(trace, load_factor=1) == map_trace(trace)
    assert map_trace(trace, load_factor=Fraction(1)) == map_trace(trace)


def test_the_factor_is_exact_decimal_not_binary(tmp_path: Path) -> None:
    """11 s / 1.1 is 10 s: the binary float 1.1 is a hair above 11/10 and would
    floor it to 9."""
    path = write_swf(tmp_path / "t.swf", [swf_record(i, 11 * i, 5, 1) for i in range(4)])
    expected = [0, 10, 20, 30]
    assert load_factor_of(1.1) == Fraction(11, 10)
    assert [j.submit_s for j in map_trace(read_swf(path), load_factor=1.1).jobs] == expected
    by_fraction = map_trace(read_swf(path), load_factor=Fraction("1.1"))
    assert [j.submit_s for j in by_fraction.jobs] == expected


def test_jobs_brought_to_one_second_keep_their_submit_order(tmp_path: Path) -> None:
    """Job 9 at 10 s (the first submit, which stays) and job 5 at 11 s both land on
    10 s with factor 2; job 9 stays first, as submitted, though a smaller jobid
    comes first among jobs submitted together in a trace."""
    path = write_swf(tmp_path / "t.swf", [swf_record(9, 10, 5, 1), swf_record(5, 11, 5, 1)])
    workload = map_trace(read_swf(path), load_factor=2)
    assert [(j.jobid, j.submit_s) for j in workload.jobs] == [(9, 10), (5, 10)]
    records = run_simulation(workload, source="t").records
    assert records[9].start_s == records[5].start_s == 10


@pytest.mark.parametrize(
    "factor",
    [0, -1, float("nan"), float("inf"), float("-inf"), 1000.5, Fraction(-1, 2)],
    ids=["zero", "negative", "nan", "infinity", "minus infinity", "above 1000", "negative half"],
)
def test_a_factor_out_of_range_is_refused_by_the_mapping(gaps_trace: Path, factor: float) -> None:
    with pytest.raises(MappingError, match=r"load factor .* is not a number above 0 and at most"):
        map_trace(read_swf(gaps_trace), load_factor=factor)


def test_a_factor_that_stretches_a_job_past_the_time_ceiling_is_an_error(tmp_path: Path) -> None:
    path = write_swf(tmp_path / "t.swf", [swf_record(1, 0, 5, 1), swf_record(2, 10**9, 5, 1)])
    with pytest.raises(MappingError, match=r"\(job 2\): load factor 0\.05 moves its submit time"):
        map_trace(read_swf(path), load_factor=Fraction(1, 20))


def test_the_generated_workload_is_scaled_too() -> None:
    trace = generate_lublin(n_jobs=200, nodes=64, seed=3)
    plain = map_trace(trace, hosts=64)
    doubled = map_trace(trace, hosts=64, load_factor=2)
    first = plain.jobs[0].submit_s
    assert [j.submit_s for j in doubled.jobs] == [
        first + (j.submit_s - first) // 2 for j in plain.jobs
    ]


# --- the command line ------------------------------------------------------------------


def test_every_workload_command_takes_the_option() -> None:
    commands = next(
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    for name in ("simulate", "emulate", "events"):
        required = ["--out", "e.jsonl"] if name == "events" else []
        args = commands.choices[name].parse_args(["--load-factor", "1.25", *required])
        assert args.load_factor == Fraction(5, 4)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("0", "'0' must be a number more than 0"),
        ("-1", "'-1' must be a number more than 0"),
        ("nan", "'nan' is not a number"),
        ("inf", "'inf' is not a number"),
        ("abc", "'abc' is not a number"),
        ("1000.001", "'1000.001' must be a number more than 0 and at most 1,000"),
        ("1e-400", "'1e-400' must be a number more than 0"),
    ],
    ids=["zero", "negative", "nan", "infinity", "not a number", "above the ceiling", "underflow"],
)
def test_a_bad_factor_is_one_line_naming_the_option(
    value: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["simulate", "--jobs", "20", f"--load-factor={value}"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"xce-sched: error: argument --load-factor: {problem}")
    assert err.count("\n") == 1


def _outputs(tmp_path: Path, name: str, argv: list[str]) -> dict[str, Path]:
    paths = {
        "report": tmp_path / f"{name}.json",
        "jobs": tmp_path / f"{name}.csv",
        "record": tmp_path / f"{name}.jsonl",
    }
    argv = [*argv, "--quiet", "--report", str(paths["report"])]
    argv += ["--jobs-out", str(paths["jobs"]), "--record", str(paths["record"])]
    assert main(argv) == 0
    return paths


def test_factor_one_is_byte_identical_to_no_option(tmp_path: Path) -> None:
    argv = ["simulate", "--jobs", "300", "--hosts", "32", "--backfill", "easy"]
    plain = _outputs(tmp_path, "plain", argv)
    one = _outputs(tmp_path, "one", [*argv, "--load-factor", "1.0"])
    assert plain["jobs"].read_bytes() == one["jobs"].read_bytes()
    lines = [paths["record"].read_bytes().splitlines() for paths in (plain, one)]
    assert lines[0][1:] == lines[1][1:]  # every event and decision; the HEADER has a wall time
    assert sum(line.startswith(b'{"type":"DECISION"') for line in lines[0]) > 300
    reports = [orjson.loads(paths["report"].read_bytes()) for paths in (plain, one)]
    for report in reports:
        del report["sim_wall_s"]
    assert reports[0] == reports[1]
    assert reports[0]["load_factor"] == 1.0


def test_the_summary_shows_the_factor_only_when_it_is_not_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_cli(["simulate", "--jobs", "100", "--load-factor", "1.2"], capsys)
    assert code == 0
    rows = summary_rows(out)
    assert rows["load factor"] == "1.2 (arrivals 1/1.2 as far apart)"
    assert list(rows).index("load factor") == list(rows).index("cluster") + 1
    code, out, _ = run_cli(["simulate", "--jobs", "100", "--load-factor", "1"], capsys)
    assert code == 0 and "load factor" not in summary_rows(out)


def test_factor_two_on_a_real_trace_halves_the_gaps_and_raises_utilization(
    trace_path: Callable[[str], Path], tmp_path: Path
) -> None:
    argv = ["simulate", "--workload", str(trace_path(SDSC)), "--max-jobs", "1000"]
    plain = _outputs(tmp_path, "plain", argv)
    doubled = _outputs(tmp_path, "doubled", [*argv, "--load-factor", "2"])
    _, before = read_csv(plain["jobs"])
    _, after = read_csv(doubled["jobs"])
    assert [row["jobid"] for row in before] == [row["jobid"] for row in after]
    submits = [int(row["submit_s"]) for row in before]
    first = min(submits)
    assert [int(row["submit_s"]) for row in after] == [first + (s - first) // 2 for s in submits]
    # Nothing but the submit times: sizes and run limits as they were.
    for column in ("tasks", "run_limit_s", "skipped"):
        assert [row[column] for row in before] == [row[column] for row in after]
    report_before = orjson.loads(plain["report"].read_bytes())
    report_after = orjson.loads(doubled["report"].read_bytes())
    assert (report_before["load_factor"], report_after["load_factor"]) == (1.0, 2.0)
    assert report_after["jobs_finished"] == report_before["jobs_finished"]
    assert report_after["utilization"] > report_before["utilization"] + 0.1
    assert report_after["makespan_s"] < report_before["makespan_s"]
    assert report_after["mean_wait_s"] > report_before["mean_wait_s"]


def test_events_writes_the_scaled_submissions(tmp_path: Path, gaps_trace: Path) -> None:
    out = tmp_path / "e.jsonl"
    argv = ["events", "--workload", str(gaps_trace), "--load-factor", "2", "--out", str(out)]
    assert main(argv) == 0
    pushes = [
        line
        for line in map(orjson.loads, out.read_bytes().splitlines())
        if line.get("type") == "JOBS_PUSH"
    ]
    submitted = {
        job["jobid"]: job["submit_ts"] // 10**9 for p in pushes for job in p["payload"]["jobs"]
    }
    assert submitted == {1: 100, 4: 112, 3: 121}
