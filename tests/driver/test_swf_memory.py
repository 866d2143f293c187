"""--swf-memory: a trace's requested memory per processor becomes rusage[mem] per task."""

from __future__ import annotations

from pathlib import Path

import pytest
from xce_driver.cli import main
from xce_driver.simulate import run_simulation
from xce_driver.workloads.mapping import MappingError, map_trace
from xce_driver.workloads.swf import read_swf

HEADER = "; MaxProcs: 4\n; UnixStartTime: 0\n"


def record(job: int, submit: int, run: int, procs: int, mem_kb: int) -> str:
    fields = [job, submit, -1, run, procs, -1, -1, procs, -1, mem_kb, 1, 1, 1, 1, 1, 1, -1, -1]
    return " ".join(str(f) for f in fields)


def trace(tmp_path: Path) -> Path:
    path = tmp_path / "mem.swf"
    path.write_text(
        HEADER
        + "\n".join(
            [
                record(1, 0, 100, 2, 3 * 1024 * 1024),  # 2 tasks x 3 GB
                record(2, 0, 100, 1, 6 * 1024 * 1024),  # 6 GB: does not fit beside job 1's 3 GB
                record(3, 0, 100, 1, -1),  # no request: no rusage
            ]
        )
        + "\n"
    )
    return path


def test_requested_memory_becomes_a_per_task_memory_reservation(tmp_path: Path) -> None:
    workload = map_trace(
        read_swf(trace(tmp_path)), swf_memory=True, host_mem_mb=8192, slots_per_host=2, hosts=2
    )
    assert [job.resreq for job in workload.jobs] == ["rusage[mem=3072]", "rusage[mem=6144]", ""]
    records = run_simulation(workload, source="mem").records
    # Job 1 takes 2 tasks on h001 (6 GB of 8); job 2 needs 6 GB: h002; job 3 fits anywhere.
    assert records[1].hosts == ("h001",) and records[2].hosts == ("h002",)
    assert records[1].start_s == records[2].start_s == records[3].start_s == 0


def test_memory_makes_a_job_wait_until_it_is_given_back(tmp_path: Path) -> None:
    path = tmp_path / "wait.swf"
    path.write_text(
        HEADER
        + record(1, 0, 100, 1, 6 * 1024 * 1024)
        + "\n"
        + record(2, 10, 50, 1, 6 * 1024 * 1024)
        + "\n"
    )
    workload = map_trace(
        read_swf(path), swf_memory=True, host_mem_mb=8192, hosts=1, slots_per_host=4
    )
    records = run_simulation(workload, source="wait").records
    assert (records[1].start_s, records[2].start_s) == (0, 100)  # slots were free, memory was not
    plain = run_simulation(
        map_trace(read_swf(path), hosts=1, slots_per_host=4), source="plain"
    ).records
    assert plain[2].start_s == 10


def test_swf_memory_needs_the_host_memory(tmp_path: Path) -> None:
    with pytest.raises(MappingError, match="--swf-memory needs --host-mem MB"):
        map_trace(read_swf(trace(tmp_path)), swf_memory=True)


def test_cli_swf_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "simulate",
        "--workload",
        str(trace(tmp_path)),
        "--swf-memory",
        "--host-mem",
        "8192",
        "--quiet",
    ]
    assert main(argv) == 0
    assert main(["simulate", "--workload", str(trace(tmp_path)), "--swf-memory", "--quiet"]) == 2
    assert "--swf-memory needs --host-mem MB" in capsys.readouterr().err
