"""Benchmark: ``xce-sched simulate`` on whole real traces, as a ratio to the bare-loop floor.

    python -m benchmarks.bench_simulate [--traces SDSC KTH BACKLOG ...]
        [--backfill greedy easy ...] [--repeat N] [--max-jobs N] [--full]

For each trace it runs the bare-loop floor (``benchmarks/bare_fcfs.py``: a heap of
finishes, a free-slot counter, a pending list) and then the simulation under each
backfill policy, each ``--repeat`` times in turn, in the same process, and prints
the min and median wall time of each, its ratio to the floor's min and to
``greedy``'s min, events per second, mean wait, and whether ``greedy`` started every
job at the same second as the floor. ``BACKLOG`` is 6,000 one-task jobs on 8
one-slot hosts, one every 10 s, each running 600 s (the queue only grows). With
``--full`` every run is also made without incremental rounds, for their gain.
Figures only: no assertion on time (targets are read by people, not by the test
suite).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from xce_driver.simulate import run_simulation
from xce_driver.workloads.mapping import MappedWorkload, SimJob, map_trace
from xce_driver.workloads.swf import read_swf
from xce_schemas import BackfillPolicy

from benchmarks.bare_fcfs import simulate as bare_simulate

WORKLOADS = Path(__file__).resolve().parents[2] / "shared" / "workloads"
TRACES = {
    "SDSC": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "KTH": "KTH-SP2-1996-2.1-cln.swf.gz",
    "NASA": "NASA-iPSC-1993-3.1-cln.swf.gz",
    "LUBLIN": "lublin_256.swf",
}


def backlog(max_jobs: int | None = None) -> MappedWorkload:
    """6,000 one-task jobs (or the first ``max_jobs``), one every 10 s, 600 s each,
    on 8 one-slot hosts."""
    jobs = tuple(
        SimJob(jobid=i + 1, submit_s=10 * i, run_s=600, tasks=1, queue="normal", user="u1")
        for i in range(6000 if max_jobs is None else min(max_jobs, 6000))
    )
    return MappedWorkload(jobs, {}, hosts=8, slots_per_host=1, origin_s=0, queues={"normal": 30})


def workload_of(name: str, max_jobs: int | None) -> MappedWorkload | None:
    """The named trace's workload (None, said on stderr, when the file is absent)."""
    if name == "BACKLOG":
        return backlog(max_jobs)
    path = WORKLOADS / TRACES[name]
    if not path.exists():
        print(f"skipped {name}: {path} is absent", file=sys.stderr)
        return None
    return map_trace(read_swf(path), max_jobs=max_jobs)


def bench(
    name: str,
    policies: list[BackfillPolicy],
    repeat: int,
    max_jobs: int | None,
    full: bool,
    depth: int,
) -> list[list[str]]:
    """The table rows of one trace: the floor, then each policy (and its full loop)."""
    workload = workload_of(name, max_jobs)
    if workload is None:
        return []
    jobs = [(j.jobid, j.submit_s, j.run_s, j.tasks) for j in workload.jobs]
    runs: dict[tuple[str, bool], list[float]] = {}
    results = {}
    floor_starts: dict[int, int] = {}
    modes = (True, False) if full else (True,)
    for _ in range(repeat):
        started = time.perf_counter()
        floor_starts = bare_simulate(jobs, workload.hosts * workload.slots_per_host)
        runs.setdefault(("floor", True), []).append(time.perf_counter() - started)
        for policy in policies:
            for incremental in modes:
                started = time.perf_counter()
                result = run_simulation(
                    workload,
                    source=name,
                    backfill=policy,
                    reservation_depth=depth if policy is BackfillPolicy.HYBRID else None,
                    incremental=incremental,
                )
                runs.setdefault((policy.value, incremental), []).append(
                    time.perf_counter() - started
                )
                results[policy.value, incremental] = result
    floor = min(runs["floor", True])
    greedy = min(runs["greedy", True]) if ("greedy", True) in runs else None
    rows = [[name, f"{len(jobs):,}", "bare loop", f"{floor:.2f}", "", "1.0", "", "", "", ""]]
    for (label, incremental), times in runs.items():
        if label == "floor":
            continue
        result = results[label, incremental]
        report = result.report
        same = ""
        if label == "greedy" and workload.slots_per_host == 1:
            ours = {r.jobid: r.start_s for r in result.records.values() if r.start_s is not None}
            same = "yes" if ours == floor_starts else "NO"
        best = min(times)
        rows.append(
            [
                name,
                f"{len(jobs):,}",
                label if incremental else f"{label} (full loop)",
                f"{best:.2f}",
                f"{statistics.median(times):.2f}",
                f"{best / floor:.1f}",
                "n/a" if greedy is None else f"{best / greedy:.2f}",
                f"{report.events / best:,.0f}",
                "n/a" if report.mean_wait_s is None else f"{report.mean_wait_s:,.0f}",
                same,
            ]
        )
    return rows


def positive(text: str) -> int:
    """An argparse type: a whole number above 0."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a whole number above 0")
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--traces", nargs="+", choices=[*sorted(TRACES), "BACKLOG"], default=["SDSC", "KTH"]
    )
    parser.add_argument(
        "--backfill",
        nargs="+",
        type=BackfillPolicy,
        default=[BackfillPolicy.GREEDY, BackfillPolicy.EASY],
        help="policies to run (default: greedy easy)",
    )
    parser.add_argument(
        "--reservation-depth", type=positive, default=2, help="hybrid's depth (default 2)"
    )
    parser.add_argument("--repeat", type=positive, default=1, help="runs of each (min and median)")
    parser.add_argument(
        "--max-jobs", type=positive, default=None, help="the first N jobs of each trace"
    )
    parser.add_argument("--full", action="store_true", help="also run without incremental rounds")
    args = parser.parse_args()
    table = Table(title=f"xce-sched simulate, builtin_fcfs, best of {args.repeat}")
    for column in (
        "trace",
        "jobs",
        "run",
        "min s",
        "median s",
        "× floor",
        "× greedy",
        "events/s",
        "mean wait s",
        "same starts",
    ):
        table.add_column(column, justify="right")
    for name in args.traces:
        rows = bench(
            name, args.backfill, args.repeat, args.max_jobs, args.full, args.reservation_depth
        )
        for row in rows:
            table.add_row(*row)
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
