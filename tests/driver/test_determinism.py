"""Determinism across processes (DESIGN invariant 1).

The same workload simulated in two processes with different ``PYTHONHASHSEED`` gives
byte-identical recordings, apart from the HEADER's wall-clock ``start_wall``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

HASH_SEEDS = ("1", "4242")


def _simulate_in_processes(
    xce_sched: str, args: list[str], out: Path
) -> dict[str, dict[str, Path]]:
    """Run ``xce-sched simulate ARGS`` once per hash seed, concurrently."""
    runs: dict[str, dict[str, Path]] = {}
    procs = []
    for seed in HASH_SEEDS:
        paths = {
            "record": out / f"run-{seed}.jsonl",
            "report": out / f"report-{seed}.json",
            "jobs": out / f"jobs-{seed}.csv",
        }
        runs[seed] = paths
        command = [xce_sched, "simulate", *args, "--quiet"]
        command += ["--record", str(paths["record"]), "--report", str(paths["report"])]
        command += ["--jobs-out", str(paths["jobs"])]
        env = {**os.environ, "PYTHONHASHSEED": seed}
        procs.append(
            subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        )
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr.decode()
        assert (stdout, stderr) == (b"", b"")
    return runs


def _assert_identical(runs: dict[str, dict[str, Path]]) -> None:
    first, second = (runs[seed] for seed in HASH_SEEDS)

    lines_a = first["record"].read_bytes().splitlines()
    lines_b = second["record"].read_bytes().splitlines()
    header_a, header_b = orjson.loads(lines_a[0]), orjson.loads(lines_b[0])
    assert header_a["type"] == "HEADER"
    del header_a["start_wall"], header_b["start_wall"]
    assert header_a == header_b
    assert len(lines_a) == len(lines_b)
    assert lines_a[1:] == lines_b[1:]
    assert sum(line.startswith(b'{"type":"DECISION"') for line in lines_a) > 0

    report_a, report_b = (orjson.loads(p["report"].read_bytes()) for p in (first, second))
    del report_a["sim_wall_s"], report_b["sim_wall_s"]
    assert report_a == report_b

    assert first["jobs"].read_bytes() == second["jobs"].read_bytes()


def test_kth_trace_prefix_is_identical_under_two_hash_seeds(
    xce_sched: str, trace_path: Callable[[str], Path], tmp_path: Path
) -> None:
    trace = trace_path("KTH-SP2-1996-2.1-cln.swf.gz")
    runs = _simulate_in_processes(
        xce_sched, ["--workload", str(trace), "--max-jobs", "1500"], tmp_path
    )
    _assert_identical(runs)
    report = orjson.loads(runs["1"]["report"].read_bytes())
    assert report["jobs_total"] == 1500


@pytest.mark.parametrize(
    "args",
    [[], ["--round-interval", "60", "--seed", "7"]],
    ids=["the embedded default workload", "the default workload on a 60 s round grid"],
)
def test_default_workload_is_identical_under_two_hash_seeds(
    xce_sched: str, tmp_path: Path, args: list[str]
) -> None:
    _assert_identical(_simulate_in_processes(xce_sched, args, tmp_path))
