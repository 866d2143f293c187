"""Benchmark: allocation of a 256-task ``span[ptile=16]`` job on a 10,000-host cluster.

    python -m benchmarks.bench_alloc [--hosts 10000] [--busy 0.9]

A cluster of HOSTS hosts of 16 slots, a fraction BUSY of them full (spread evenly, so
the free ones are scattered), type and memory values on every host. Times one
scheduling round that allocates the job (target ≤ 5 ms), with a select and rusage
and without, and a plain 256-task job without span as the baseline, in the same
process. The round is repeated on fresh copies (a snapshot loaded each time).
"""

from __future__ import annotations

import argparse
import statistics
import time

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from xce_core.core import SchedCore
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--busy", type=float, default=0.9)
    parser.add_argument("--repeats", type=int, default=7)
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
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
