"""Benchmark: a sweep on the local Dask cluster against the same runs one after another.

    python -m benchmarks.bench_sweep [--workers 2] [--jobs 4000] [--seeds 4]
        [--policies builtin_fcfs sjf wfp3]

The grid is the generated workload (``--jobs`` jobs) × ``--policies`` × backfill
greedy and easy × ``--seeds`` seeds. First every run one after another in this
process (``sweep_run``, what a sweep's worker runs), then the same grid as a sweep
(``run_sweep`` into a fresh folder: the cluster's start included, as a user pays
it). Prints both wall times and the speed-up; with 2 cores the ceiling is 2×.
Both give the same figures (checked, wall times aside).

Figures only: no assertion on time (targets are read by people).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from xce_driver.cli import run_meaning, sweep_run
from xce_driver.experiments.compare import scalar_figures
from xce_driver.experiments.sweep import SweepSpec, plan_runs, rows, run_sweep

from benchmarks.bench_simulate import positive


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=positive, default=2)
    parser.add_argument("--jobs", type=positive, default=4000)
    parser.add_argument("--seeds", type=positive, default=4)
    parser.add_argument("--policies", nargs="+", default=["builtin_fcfs", "sjf", "wfp3"])
    args = parser.parse_args()
    spec = SweepSpec(
        traces=["generated"],
        seeds=list(range(1, args.seeds + 1)),
        options={"jobs": args.jobs},
        axes={"policy": args.policies, "backfill": ["greedy", "easy"]},
    )
    plan = plan_runs(spec, Path.cwd(), run_meaning)
    started = time.perf_counter()
    serial = [sweep_run(run.options)["report"] for run in plan]
    serial_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        run_sweep(plan, sweep_run, Path(out), workers=args.workers)
        sweep_s = time.perf_counter() - started
        table = rows(plan, Path(out))
    for report, row in zip(serial, table, strict=True):
        figures = scalar_figures(report)
        del figures["sim_wall_s"]
        if any(row[name] != value for name, value in figures.items()):
            raise SystemExit(f"bench_sweep: {row['options']}: the sweep's figures differ")
    print(f"{len(plan)} runs of {args.jobs:,} jobs ({args.workers} workers)")
    print(f"one after another: {serial_s:.2f} s")
    print(f"sweep on Dask:     {sweep_s:.2f} s (speed-up {serial_s / sweep_s:.2f}×)")


if __name__ == "__main__":
    main()
