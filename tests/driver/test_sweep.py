"""``xce-sched sweep``: a grid of simulations on a local Dask cluster, into one table.

The judged properties: the table's rows equal single ``simulate`` runs of the same
configurations, figure for figure; running the sweep again does no work; a worker
killed mid-sweep loses no result; a run that fails is a row with its error.
"""

from __future__ import annotations

import csv
import http.server
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import psutil
import pyarrow.parquet as pq
import pytest
from xce_driver.cli import run_meaning, sweep_run
from xce_driver.experiments.compare import scalar_figures
from xce_driver.experiments.sweep import (
    RunSpec,
    _timed_run,
    plan_runs,
    read_spec,
    rows,
    run_sweep,
    stored,
)

from tests.driver.test_cli import run_cli

KTH = "KTH-SP2-1996-2.1-cln.swf.gz"

SPEC = """\
traces = ["generated", "{trace}"]
seeds = [1, 2]

[options]
max-jobs = 300
hosts = 64

[axes]
policy = ["builtin_fcfs", "sjf", "wfp3"]
"""


def without_wall(figures: dict[str, object]) -> dict[str, object]:
    return {name: value for name, value in figures.items() if name not in ("sim_wall_s", "wall_s")}


def test_a_sweep_equals_single_runs_and_a_second_sweep_does_no_work(
    tmp_path: Path, trace_path: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "grid.toml"
    spec.write_text(SPEC.format(trace=trace_path(KTH)))
    code, stdout, stderr = run_cli(["sweep", str(spec), "--workers", "2", "--quiet"], capsys)
    assert (code, stderr) == (0, "")
    out = tmp_path / "grid.results"
    table = pq.read_table(out / "results.parquet").to_pylist()
    assert len(table) == 2 * 3 * 2
    assert [(row["trace"] == "generated", row["policy"], row["seed"]) for row in table[:3]] == [
        (True, "builtin_fcfs", 1),
        (True, "builtin_fcfs", 2),
        (True, "sjf", 1),
    ]
    with (out / "results.csv").open(newline="") as handle:
        assert [row["key"] for row in csv.DictReader(handle)] == [row["key"] for row in table]
    for index, row in enumerate(table):
        assert row["error"] == ""
        report = tmp_path / f"{index}.json"
        argv = ["simulate", *row["options"].split(), "--quiet", "--report", str(report)]
        assert run_cli(argv, capsys)[0] == 0
        expected = without_wall(scalar_figures(orjson.loads(report.read_bytes())))
        got = {name: row[name] for name in expected}
        assert orjson.dumps(got) == orjson.dumps(expected), row["options"]
    # Again: every run is already done, nothing is run, nothing is rewritten.
    stamps = {path: path.stat().st_mtime_ns for path in (out / "runs").iterdir()}
    code, stdout, _ = run_cli(["sweep", str(spec)], capsys)
    assert code == 0
    assert "12 runs: 12 already done, 0 run now" in stdout
    assert {path: path.stat().st_mtime_ns for path in (out / "runs").iterdir()} == stamps


def _kill_a_worker_once_a_result_is_in(runs: Path, killed: list[int]) -> None:
    """SIGKILL one Dask worker process once the first result is kept (others run)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if runs.is_dir() and any(p.suffix == ".json" for p in runs.iterdir()):
            for child in psutil.Process().children(recursive=True):
                if "distributed" in " ".join(child.cmdline()) or "spawn" in " ".join(
                    child.cmdline()
                ):
                    os.kill(child.pid, signal.SIGKILL)
                    killed.append(child.pid)
                    return
        time.sleep(0.05)


def test_a_worker_killed_mid_sweep_loses_no_result(tmp_path: Path) -> None:
    spec = tmp_path / "grid.yaml"
    spec.write_text(
        "traces: [generated]\nseeds: [1, 2, 3, 4]\noptions: {jobs: 3000}\n"
        "axes: {backfill: [greedy, easy]}\n"
    )
    plan = plan_runs(read_spec(spec), tmp_path, run_meaning)
    out = tmp_path / "out"
    killed: list[int] = []
    killer = threading.Thread(
        target=_kill_a_worker_once_a_result_is_in, args=(out / "runs", killed)
    )
    killer.start()
    outcome = run_sweep(plan, sweep_run, out, workers=2)
    killer.join()
    assert killed, "no worker was killed: the test proved nothing"
    assert (outcome.runs, outcome.ran, outcome.failed) == (8, 8, 0)
    table = rows(plan, out)
    assert len(table) == 8 and all(row["error"] == "" for row in table)
    # Each run's figures are those of the same run made alone.
    for run, row in zip(plan, table, strict=True):
        alone = sweep_run(run.options)["report"]
        assert without_wall(scalar_figures(alone)) == without_wall(
            {name: row[name] for name in scalar_figures(alone)}
        )


def test_a_failed_run_is_a_row_with_its_error_and_the_sweep_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    # The second queue map changes nothing (the generated jobs are all in queue 1):
    # simulate refuses it once it has read the workload, so the run fails as it runs.
    spec.write_text(
        'traces = ["generated"]\n[options]\njobs = 100\n'
        '[axes]\nswf-queues = ["1=normal:30", "7=other:30"]\n'
    )
    code, _, stderr = run_cli(["sweep", str(spec), "--workers", "1", "--quiet"], capsys)
    assert code == 1
    assert stderr.startswith(
        "xce-sched: error: run --jobs 100 --swf-queues 7=other:30 --seed 1: lublin"
    )
    table = pq.read_table(tmp_path / "s.results" / "results.parquet").to_pylist()
    assert [row["swf_queues"] for row in table] == ["1=normal:30", "7=other:30"]
    assert table[0]["error"] == "" and table[0]["mean_wait_s"] is not None
    assert "no record simulated is in queue 7" in table[1]["error"]
    assert table[1]["mean_wait_s"] is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('traces = ["generated"]\nseed = [1]\n', "s.toml: seed: Extra inputs are not permitted"),
        ("traces = []\n", "s.toml: traces: List should have at least 1 item"),
        ('traces = ["generated"]\nseeds = [-1]\n', "s.toml: seeds[0]: Input should be greater"),
        ('traces = ["generated"]\n[axes]\npolicy = []\n', "s.toml: axes.policy: List should"),
        ('traces = ["generated"]\n[options]\nreport = "r.json"\n', "s.toml: report: a sweep sets"),
        ('traces = ["generated"]\n[options]\nseed = 3\n', "s.toml: seed: a sweep sets it itself"),
        (
            'traces = ["generated"]\n[options]\npolicy = "sjf"\n[axes]\npolicy = ["wfp3"]\n',
            "s.toml: policy is both an option and an axis",
        ),
        ('traces = ["nowhere.swf"]\n', "s.toml: traces: nowhere.swf: No such file or directory"),
        (
            'traces = ["generated"]\n[options]\ncolour = "red"\n',
            "s.toml: run --colour red --seed 1: unrecognized arguments: --colour red",
        ),
        (
            'traces = ["generated"]\n[options]\nmax-jobs = -5\n',
            "s.toml: run --max-jobs -5 --seed 1: argument --max-jobs: ",
        ),
        ('traces = ["generated"]\n[axes]\n"" = [1]\n', "s.toml: '': not an option name"),
        ('traces = ["generated"]\n[axes]\nmax_jobs = [1]\n', "s.toml: 'max_jobs': not an option"),
        ('traces = ["generated"]\nseeds = [1, 2, 1]\n', "s.toml: seeds[2]: 1 is given twice"),
        (
            'traces = ["generated"]\n[options]\njobs-o = "x.csv"\n',
            "s.toml: run --jobs-o x.csv --seed 1: unrecognized arguments: --jobs-o x.csv",
        ),
        (
            'traces = ["generated"]\n[options]\nhelp = true\n',
            "s.toml: run --help --seed 1: --help is not an option of a run",
        ),
        (
            'traces = ["generated"]\n[axes]\npolicy = ["sjf", "nosuch"]\n',
            "s.toml: run --policy nosuch --seed 1: unknown picker 'nosuch'",
        ),
        (
            'traces = ["generated"]\n[options]\nsample-interval = 10\n',
            "s.toml: run --sample-interval 10 --seed 1: --sample-interval sets the samples",
        ),
        (
            'traces = ["generated"]\nseeds = [1, 2]\n[axes]\njobs = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n'
            "max-jobs = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nround-interval = "
            "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nhosts = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
            "seed-x = [1, 2, 3, 4, 5, 6]\n",
            "s.toml: 120,000 runs, more than the ceiling of 100,000",
        ),
        ("traces = [\n", "s.toml: not TOML: "),
    ],
)
def test_a_bad_spec_is_one_line_naming_the_field(
    tmp_path: Path,
    text: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(text)
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = run_cli(["sweep", "s.toml", "--quiet"], capsys)
    assert (code, stdout) == (2, "")
    assert stderr.startswith(f"xce-sched: error: {message}"), stderr
    assert stderr.count("\n") == 1
    assert not (tmp_path / "s.results").exists()


def test_a_sweep_cut_short_runs_only_what_it_had_not_finished(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["generated"]\nseeds = [1, 2, 3]\n[options]\njobs = 200\n')
    plan = plan_runs(read_spec(spec), tmp_path, run_meaning)
    out = tmp_path / "out"
    assert run_sweep(plan, sweep_run, out, workers=1).ran == 3
    first = rows(plan, out)
    # As if the sweep had been killed before its last run was kept.
    (out / "runs" / f"{plan[2].key}.json").unlink()
    assert len(rows(plan, out)) == 2
    outcome = run_sweep(plan, sweep_run, out, workers=1)
    assert (outcome.already_done, outcome.ran, outcome.failed) == (2, 1, 0)
    again = rows(plan, out)
    assert [without_wall(row) for row in again] == [without_wall(row) for row in first]


def test_a_sweep_runs_on_an_existing_dask_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from distributed import LocalCluster

    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["generated"]\nseeds = [5]\n[options]\njobs = 150\n')
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster:
        argv = ["sweep", str(spec), "--scheduler-address", cluster.scheduler_address, "--quiet"]
        assert run_cli(argv, capsys)[:3] == (0, "", "")
    (row,) = rows(plan_runs(read_spec(spec), tmp_path, run_meaning), tmp_path / "s.results")
    assert row["error"] == "" and row["jobs_finished"] == 150


def test_an_unreachable_scheduler_is_one_line_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["generated"]\n[options]\njobs = 10\n')
    argv = ["sweep", str(spec), "--scheduler-address", "tcp://127.0.0.1:9", "--quiet"]
    code, _, stderr = run_cli(argv, capsys)
    assert code == 2
    assert stderr.startswith("xce-sched: error: --scheduler-address tcp://127.0.0.1:9: ")
    assert stderr.count("\n") == 1


def test_a_file_an_option_names_is_part_of_the_key_and_of_the_spec_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    queues = tmp_path / "q.json"
    queues.write_text('[{"name": "normal", "priority": 30, "run_limit_s": 86400}]')
    spec = tmp_path / "s.toml"
    spec.write_text('traces = ["generated"]\n[options]\njobs = 300\nqueues = "q.json"\n')
    monkeypatch.chdir("/")  # the queue file is the spec folder's, not the current one's
    assert run_cli(["sweep", str(spec), "--workers", "1", "--quiet"], capsys)[:3] == (0, "", "")
    plan = plan_runs(read_spec(spec), tmp_path, run_meaning)
    assert rows(plan, tmp_path / "s.results")[0]["jobs_killed_by_runlimit"] == 0
    # Another run limit in the same file is another run, not a result reused.
    queues.write_text('[{"name": "normal", "priority": 30, "run_limit_s": 600}]')
    code, stdout, _ = run_cli(["sweep", str(spec), "--workers", "1"], capsys)
    assert code == 0 and "1 run: 0 already done, 1 run now" in stdout
    plan = plan_runs(read_spec(spec), tmp_path, run_meaning)
    assert rows(plan, tmp_path / "s.results")[0]["jobs_killed_by_runlimit"] > 0


def test_options_in_another_order_are_the_same_run(tmp_path: Path) -> None:
    one = read_spec_text(tmp_path, 'traces = ["generated"]\n[axes]\njobs = [9]\nhosts = [7]\n')
    two = read_spec_text(
        tmp_path, 'traces = ["generated"]\n[options]\nhosts = 7\n[axes]\njobs = [9]\n'
    )
    assert [run.key for run in one] == [run.key for run in two]
    three = read_spec_text(tmp_path, 'traces = ["generated"]\n[axes]\njobs = [9]\nhosts = [8]\n')
    assert [run.key for run in three] != [run.key for run in one]


def read_spec_text(folder: Path, text: str) -> list[RunSpec]:
    spec = folder / "spec.toml"
    spec.write_text(text)
    return plan_runs(read_spec(spec), folder, run_meaning)


def test_a_trace_changed_while_the_sweep_runs_is_an_error_not_a_result(tmp_path: Path) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text("1 0 0 100 1 -1 -1 1 100 -1 1 1 1 1 1 -1 -1 -1\n")
    (run,) = read_spec_text(tmp_path, 'traces = ["t.swf"]\n[options]\nhosts = 2\n')
    assert _timed_run(sweep_run, run.options, run.files)["error"] is None
    trace.write_text("1 0 0 900 1 -1 -1 1 900 -1 1 1 1 1 1 -1 -1 -1\n")
    result = _timed_run(sweep_run, run.options, run.files)
    assert result["report"] is None
    assert result["error"].startswith(f"{trace} changed while the sweep ran")


def test_a_stored_result_that_is_not_one_is_run_again(tmp_path: Path) -> None:
    (run,) = read_spec_text(tmp_path, 'traces = ["generated"]\n[options]\njobs = 50\n')
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    for text in ('{"key": "x"}', f'{{"key": "{run.key}"}}', "[1]", '{"key": '):
        (out / "runs" / f"{run.key}.json").write_text(text)
        assert stored(out, run) is None
    assert run_sweep([run], sweep_run, out, workers=1).ran == 1
    assert stored(out, run) is not None
    assert (out / "runs" / f"{run.key}.json").stat().st_mode & 0o044  # not 0600


class _QuietHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Say nothing of the refused handshakes."""


def test_a_peer_that_is_not_a_dask_scheduler_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An HTTP server, as at a Dask dashboard's port: it never answers Dask's handshake.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _QuietHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        spec = tmp_path / "s.toml"
        spec.write_text('traces = ["generated"]\n[options]\njobs = 10\n')
        address = f"tcp://127.0.0.1:{server.server_address[1]}"
        code, _, stderr = run_cli(["sweep", str(spec), "--scheduler-address", address], capsys)
    finally:
        server.shutdown()
    assert code == 2
    assert stderr.startswith(f"xce-sched: error: --scheduler-address {address}: ")
    assert stderr.count("\n") == 1
    for address in ("garbage", "tcp://127.0.0.1:", "tcp://127.0.0.1:99999", "inproc://x"):
        code, _, stderr = run_cli(["sweep", str(spec), "--scheduler-address", address], capsys)
        assert (code, stderr) == (
            2,
            f"xce-sched: error: --scheduler-address {address}: not a Dask scheduler "
            "address (tcp://HOST:PORT)\n",
        )


def test_a_sweep_in_a_folder_whose_name_is_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = Path(os.fsdecode(bytes(tmp_path) + b"/g\xff"))
    folder.mkdir()
    spec = folder / "s.toml"
    spec.write_text(
        'traces = ["generated"]\n[options]\njobs = 30\n[axes]\npolicy = ["sjf", "wfp3"]\n'
    )
    argv = ["sweep", str(spec), "--workers", "1", "--quiet", "--html", str(folder / "p.html")]
    assert run_cli(argv, capsys)[:3] == (0, "", "")
    table = pq.read_table((folder / "s.results" / "results.parquet").open("rb")).to_pylist()
    assert table[0]["error"] == "" and table[0]["jobs_finished"] == 30
    assert (folder / "p.html").stat().st_size > 0
