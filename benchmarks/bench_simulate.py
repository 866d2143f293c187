"""Benchmark: ``xce-sched simulate`` on whole real traces, against a naive baseline.

    python -m benchmarks.bench_simulate [--traces SDSC KTH ...] [--max-jobs N]

For each trace it prints the simulation's wall time, events and decisions per second,
the report's mean wait and utilization, and the time of the naive FCFS simulator
(``benchmarks/naive_fcfs.py``) on the same jobs in the same process, with the ratio
of the two and whether every job started at the same time in both. Figures only: no
assertion on time (targets are read by people, not by the test suite).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from xce_driver.simulate import run_simulation
from xce_driver.workloads.mapping import map_trace
from xce_driver.workloads.swf import read_swf

from benchmarks.naive_fcfs import simulate as naive_simulate

WORKLOADS = Path(__file__).resolve().parents[2] / "shared" / "workloads"
TRACES = {
    "SDSC": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "KTH": "KTH-SP2-1996-2.1-cln.swf.gz",
    "NASA": "NASA-iPSC-1993-3.1-cln.swf.gz",
    "LUBLIN": "lublin_256.swf",
}


def bench(name: str, max_jobs: int | None) -> list[str] | None:
    path = WORKLOADS / TRACES[name]
    if not path.exists():
        print(f"skipped {name}: {path} is absent", file=sys.stderr)
        return None
    workload = map_trace(read_swf(path), max_jobs=max_jobs)
    result = run_simulation(workload, source=path.name)
    report = result.report
    started = time.perf_counter()
    naive = naive_simulate(
        [(j.jobid, j.submit_s, j.run_s, j.tasks) for j in workload.jobs], workload.hosts
    )
    naive_s = time.perf_counter() - started
    ours = {r.jobid: r.start_s for r in result.records.values() if r.start_s is not None}
    decisions = sum(report.decisions.values())
    return [
        name,
        f"{len(workload.jobs):,}",
        f"{report.sim_wall_s:.2f}",
        f"{report.events / report.sim_wall_s:,.0f}",
        f"{decisions / report.sim_wall_s:,.0f}",
        "n/a" if report.mean_wait_s is None else f"{report.mean_wait_s:,.0f}",
        f"{report.utilization:.3f}",
        f"{naive_s:.2f}",
        f"{report.sim_wall_s / naive_s:.1f}",
        "yes" if ours == naive else "NO",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", nargs="+", choices=sorted(TRACES), default=["SDSC", "KTH"])
    parser.add_argument("--max-jobs", type=int, default=None)
    args = parser.parse_args()
    table = Table(title="xce-sched simulate, builtin_fcfs, one slot per processor")
    for column in (
        "trace",
        "jobs",
        "wall s",
        "events/s",
        "decisions/s",
        "mean wait s",
        "utilization",
        "naive s",
        "ratio",
        "same starts",
    ):
        table.add_column(column, justify="right")
    for name in args.traces:
        row = bench(name, args.max_jobs)
        if row is not None:
            table.add_row(*row)
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
