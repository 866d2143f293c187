"""``xce-sched compare``: configurations, figures side by side, the per-job diff."""

from __future__ import annotations

import csv
from pathlib import Path

import orjson
import pytest
from xce_driver.cluster.jobs import JobRecord
from xce_driver.experiments.compare import (
    CompareError,
    configurations,
    figure_rows,
    job_diff,
    scalar_figures,
)

from tests.driver.test_cli import run_cli

COMMON = ["--jobs", "400", "--hosts", "64"]


def test_configurations_cross_the_varied_options_last_fastest() -> None:
    configs = configurations([], ["policy=builtin_fcfs,sjf", "--backfill=greedy,easy"])
    assert [c.options for c in configs] == [
        ("--policy", "builtin_fcfs", "--backfill", "greedy"),
        ("--policy", "builtin_fcfs", "--backfill", "easy"),
        ("--policy", "sjf", "--backfill", "greedy"),
        ("--policy", "sjf", "--backfill", "easy"),
    ]
    assert configs[1].label == "policy=builtin_fcfs, backfill=easy"
    both = configurations(["--policy sjf", "--policy wfp3"], ["backfill=greedy,easy"])
    assert [c.label for c in both] == [
        "--policy sjf, backfill=greedy",
        "--policy sjf, backfill=easy",
        "--policy wfp3, backfill=greedy",
        "--policy wfp3, backfill=easy",
    ]


@pytest.mark.parametrize(
    ("configs", "vary", "message"),
    [
        ([], ["policy"], "--vary 'policy': expected NAME=VALUE,VALUE,..."),
        ([], ["policy=a,,b"], "--vary 'policy=a,,b': expected NAME=VALUE,VALUE,..."),
        ([], ["policy=a,b", "--policy=c,d"], "--vary --policy is given twice"),
        (["--policy sjf"], [], "a comparison needs two configurations or more"),
        (["--report r.json", "--policy sjf"], [], "--report is an output of a single run"),
        (["--policy 'sjf"], ["backfill=greedy,easy"], '--config "--policy \'sjf": No closing'),
    ],
)
def test_configurations_refuse_what_cannot_be_compared(
    configs: list[str], vary: list[str], message: str
) -> None:
    with pytest.raises(CompareError) as caught:
        configurations(configs, vary)
    assert str(caught.value).startswith(message)


def test_job_diff_matches_jobs_by_jobid_and_orders_by_how_far_they_moved() -> None:
    base = {
        1: JobRecord(1, 0, 10, 1, start_s=0),
        2: JobRecord(2, 0, 10, 1, start_s=10),
        3: JobRecord(3, 5, 10, 2, start_s=20),
        4: JobRecord(4, 5, 10, 2, start_s=30),
        5: JobRecord(5, 5, 10, 2),
    }
    other = {
        1: JobRecord(1, 0, 10, 1, start_s=0),
        2: JobRecord(2, 0, 10, 1, start_s=40),
        3: JobRecord(3, 5, 10, 2, start_s=5),
        4: JobRecord(4, 5, 10, 2),
        5: JobRecord(5, 5, 10, 2, start_s=50),
    }
    diff = job_diff(base, other, top=1)
    assert [(j.jobid, j.moved_s) for j in diff.moved] == [(2, 30)]
    assert diff.jobs_moved == 2
    assert diff.mean_moved_s == (30 - 15) / 2  # over the jobs that moved: 2 and 3
    assert (diff.only_base, diff.only_other) == ((4,), (5,))


def test_figure_rows_give_each_figure_and_its_ratio_to_the_first() -> None:
    reports = [
        {"workload": "w", "mean_wait_s": 100.0, "decisions": {"DISPATCH": 4}, "users": {}},
        {"workload": "w", "mean_wait_s": 50.0, "decisions": {"DISPATCH": 4, "PEND": 2}},
    ]
    rows = {name: (values, ratios) for name, values, ratios in figure_rows(reports)}
    assert rows["mean_wait_s"] == ([100.0, 50.0], [1.0, 0.5])
    assert rows["decisions.PEND"] == ([None, 2], [None, None])
    assert "workload" not in rows and "users" not in rows


def read_jobs(path: Path) -> dict[int, JobRecord]:
    with path.open(newline="") as handle:
        return {
            int(row["jobid"]): JobRecord(
                int(row["jobid"]),
                int(row["submit_s"]),
                0,
                int(row["tasks"]),
                start_s=int(row["start_s"]) if row["start_s"] else None,
            )
            for row in csv.DictReader(handle)
        }


def test_compare_equals_single_simulations_and_diffs_their_jobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "compare.json"
    argv = ["compare", *COMMON, "--vary", "backfill=greedy,easy", "--config", "--policy sjf"]
    code, stdout, stderr = run_cli(
        [*argv, "--config", "--policy wfp3", "--report", str(out)], capsys
    )
    assert (code, stderr) == (0, "")
    document = orjson.loads(out.read_bytes())
    labels = [c["label"] for c in document["configurations"]]
    assert labels == [
        "--policy sjf, backfill=greedy",
        "--policy sjf, backfill=easy",
        "--policy wfp3, backfill=greedy",
        "--policy wfp3, backfill=easy",
    ]
    jobs = {}
    for index, configuration in enumerate(document["configurations"]):
        report, csv_path = tmp_path / f"{index}.json", tmp_path / f"{index}.csv"
        single = ["simulate", *COMMON, *configuration["options"], "--quiet"]
        assert (
            run_cli([*single, "--report", str(report), "--jobs-out", str(csv_path)], capsys)[0] == 0
        )
        expected = scalar_figures(orjson.loads(report.read_bytes()))
        got = scalar_figures(configuration["report"])
        del expected["sim_wall_s"], got["sim_wall_s"]
        assert got == expected
        jobs[index] = read_jobs(csv_path)
    for index, diff in enumerate(document["diffs"], start=1):
        want = job_diff(jobs[0], jobs[index], top=10)
        assert diff["jobs_moved"] == want.jobs_moved > 0
        assert [m["jobid"] for m in diff["moved"]] == [m.jobid for m in want.moved]
        assert [m["moved_s"] for m in diff["moved"]] == [m.moved_s for m in want.moved]
    # The printed table: one column per configuration, ratios to the first.
    assert "backfill=easy (× first)" in stdout and "mean_wait_s" in stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--vary", "policy=builtin_fcfs,nosuch"],
            "configuration 'policy=nosuch': unknown picker 'nosuch'",
        ),
        (["--vary", "backfill=greedy,sometimes"], "configuration 'backfill=sometimes': argument"),
        (["--config", "--policy sjf", "--config", "--bogus 1"], "configuration '--bogus 1': "),
        (["--vary", "policy=builtin_fcfs"], "a comparison needs two configurations or more"),
        (["--config", "--jobs-out j.csv", "--config", ""], "--jobs-out is an output of a single"),
        (["--vary", "policy=sjf,wfp3", "--record", "r.jsonl"], "--record is an output of a single"),
        (
            ["--vary", "policy=sjf,wfp3", "--jobs-out", "j.csv"],
            "--jobs-out is an output of a single",
        ),
        (
            ["--vary", "policy=sjf,wfp3", "--jobs-o", "j.csv"],
            "configuration 'policy=sjf': unrecognized arguments: --jobs-o j.csv",
        ),
        (["--config=--help", "--config", ""], "configuration '--help': --help is not an option"),
    ],
)
def test_compare_says_which_configuration_is_wrong(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, stderr = run_cli(["compare", *COMMON, *argv, "--quiet"], capsys)
    assert code == 2 and stdout == ""
    assert stderr.startswith(f"xce-sched: error: {message}"), stderr
    assert stderr.count("\n") == 1


def test_only_compare_takes_simulate_options_as_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, stderr = run_cli(["replay", "x.jsonl", "--hosts", "5"], capsys)
    assert code == 2
    assert "unrecognized arguments: --hosts 5" in stderr
