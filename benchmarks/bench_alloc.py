"""Benchmark: allocation of a 256-task ``span[ptile=16]`` job on a 10,000-host cluster.

    python -m benchmarks.bench_alloc [--hosts 10000] [--busy 0.9] [--plan-tasks 10000000]

A cluster of HOSTS hosts of 16 slots, a fraction BUSY of them full (spread evenly, so
the free ones are scattered), type and memory values on every host. Times one
scheduling round that allocates the job (target ≤ 5 ms), with a select and rusage
and without, and a plain 256-task job without span as the baseline, in the same
process. The round is repeated on fresh copies (a snapshot loaded each time).

Then parjob's plan iterator (Req 4 AC 1) for PLAN_TASKS tasks: every ``next()`` until
it is exhausted (~2√N plans), per call and as a ratio against a floor run in the same
process, making the same plans directly from a precomputed list of their shares (what
no iterator can beat). Each ``next()`` is O(1), so the ratio stays small whatever N;
when ``next()`` stepped k one by one, its worst call took 0.87 s at N = 10⁷.
"""

from __future__ import annotations

import argparse
import statistics
import time

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from xce_core.alloc.plan_iter import ParPlanIter
from xce_core.core import SchedCore
from xce_core.plugins import AllocPlan
from xce_core.snapshot import load_snapshot, save_snapshot

NS = 1_000_000_000


def cluster(hosts: int, busy: float) -> SchedCore:
    core = SchedCore(on_decision=lambda d: None)
    core.push_event(
        {"type": "CONFIG_PUSH", "ts": 0, "payload": {"config": {"queues": [{"name": "normal"}]}}}
    )
    specs = [
        {
            "name": f"h{i:05d}",
            "slots": 16,
            "type": "LINUX" if i % 10 else "AIX",
            "max_mem_mb": 64000,
        }
        for i in range(hosts)
    ]
    core.push_event({"type": "WORKERS_PUSH", "ts": 0, "payload": {"hosts": specs}})
    full = [i for i in range(hosts) if (i * 7919) % hosts < busy * hosts]
    jobs = [
        {
            "jobid": 1_000_000 + i,
            "queue": "normal",
            "tasks": 16,
            "submit_ts": 0,
            "resreq": f"select[hname=='h{i:05d}']",
        }
        for i in full
    ]
    if jobs:
        core.push_event({"type": "JOBS_PUSH", "ts": 0, "payload": {"jobs": jobs}})
        core.push_event({"type": "BEGIN_ROUND", "ts": 1, "payload": {}})
    return core


def time_round(template: str, resreq: str, repeats: int) -> tuple[float, int]:
    times = []
    placed = 0
    for _ in range(repeats):
        decisions: list = []
        core = load_snapshot(template, on_decision=decisions.append)
        core.push_event(
            {
                "type": "JOBS_PUSH",
                "ts": 2 * NS,
                "payload": {
                    "jobs": [
                        {
                            "jobid": 1,
                            "queue": "normal",
                            "tasks": 256,
                            "submit_ts": 2 * NS,
                            "resreq": resreq,
                        }
                    ]
                },
            }
        )
        started = time.perf_counter()
        core.push_event({"type": "BEGIN_ROUND", "ts": 3 * NS, "payload": {}})
        times.append(time.perf_counter() - started)
        placed = next((len(d.alloc.hosts) for d in decisions if d.op == "DISPATCH"), 0)
    return statistics.median(times), placed


def walk_plans(tasks: int) -> tuple[float, float, list[AllocPlan]]:
    """Every plan of ``ParPlanIter(tasks)``: (total s, worst single ``next()`` s, plans)."""
    it = ParPlanIter(tasks)
    made: list[AllocPlan] = []
    worst = 0.0
    clock = time.perf_counter
    started = clock()
    while True:
        before = clock()
        plan = it.next()
        worst = max(worst, clock() - before)
        if plan is None:
            return clock() - started, worst, made
        made.append(plan)


def floor_plans(made: list[AllocPlan]) -> float:
    """The floor: the same plans made straight from their fields, timed the same way."""
    fields = [(p.nhosts, p.slots_per_host, p.tasks, p.balanced, p.packed) for p in made]
    clock = time.perf_counter
    started = clock()
    for nhosts, per_host, tasks, balanced, packed in fields:
        before = clock()
        AllocPlan(nhosts, per_host, tasks, balanced, packed)
        clock() - before
    clock()  # the iterator's last call, which returns None
    return clock() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--busy", type=float, default=0.9)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--plan-tasks", type=int, default=10_000_000)
    args = parser.parse_args()
    template = save_snapshot(cluster(args.hosts, args.busy)).model_dump_json()
    table = Table(
        title=f"one round allocating a 256-task job, {args.hosts:,} hosts, {args.busy:.0%} full"
    )
    for column in ("request", "ms (median)", "hosts used"):
        table.add_column(column, justify="right")
    cases = [
        ("(none: parjob plans, baseline)", ""),
        ("span[ptile=16]", "span[ptile=16]"),
        (
            "span[ptile=16] select[type==LINUX] rusage[mem=1000]",
            "select[type==LINUX] rusage[mem=1000] span[ptile=16]",
        ),
    ]
    for label, resreq in cases:
        seconds, hosts = time_round(template, resreq, args.repeats)
        table.add_row(escape(label), f"{seconds * 1000:.2f}", str(hosts))
    console = Console(width=160)
    console.print(table)
    walks = [walk_plans(args.plan_tasks) for _ in range(args.repeats)]
    made = walks[0][2]
    total = statistics.median(walk[0] for walk in walks)
    worst = min(walk[1] for walk in walks)  # the least disturbed by other processes
    floor = statistics.median(floor_plans(made) for _ in range(args.repeats))
    plans = Table(title=f"parjob's plan iterator, {args.plan_tasks:,} tasks, every plan")
    for column in ("plans", "µs per next()", "worst next(), µs", "× floor"):
        plans.add_column(column, justify="right")
    calls = len(made) + 1
    plans.add_row(
        f"{len(made):,}",
        f"{total / calls * 1e6:.2f}",
        f"{worst * 1e6:.1f}",
        f"{total / floor:.2f}",
    )
    console.print(plans)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
