"""Benchmark: the job orders (issue 17), each against ``builtin_fcfs`` in the same run.

    python -m benchmarks.bench_orders [--pending 100000] [--hosts 5000] [--rounds 200]
        [--traces SDSC KTH] [--backfill greedy easy] [--max-jobs N] [--orders ...]

1. Rounds on a long backlog: ``--hosts`` one-slot hosts, each busy with a one-task
   job, and ``--pending`` plain jobs behind them (1-8 tasks, run limits of 1 min to
   1 day, submitted over 1,000 s; seeded). Each round one running job ends, then a
   BEGIN_ROUND. For each order: ms per round and dispatches per second, and the
   ratio of its round to ``builtin_fcfs``'s. An order that ages (``wfp3``,
   ``unicep``) sorts the whole backlog again once per round: that is its cost.
2. Whole traces: each order under each backfill policy, its mean wait, mean bounded
   slowdown (τ = 10 s), utilisation and wall time.

Figures only: no assertion on time (targets are read by people).
"""

from __future__ import annotations

import argparse
import random
import time

from rich.console import Console
from rich.table import Table
from xce_core.core import SchedCore
from xce_core.in_tree import in_tree_registry
from xce_driver.simulate import run_simulation
from xce_schemas import BackfillPolicy, Decision, Dispatch

from benchmarks.bench_rounds import rounds
from benchmarks.bench_simulate import TRACES, positive, workload_of

NS = 1_000_000_000


def backlog_core(picker: str, pending: int, hosts: int) -> tuple[SchedCore, list[Decision]]:
    """The busy cluster with its backlog under the global picker ``picker``, after a
    first round that filled it."""
    decisions: list[Decision] = []
    core = SchedCore(on_decision=decisions.append, prng_seed=1)
    queue = {"name": "normal", "priority": 30}
    config = {"queues": [queue], "job_pick_plugin": picker}
    core.push_event({"type": "CONFIG_PUSH", "ts": 0, "payload": {"config": config}})
    workers = [{"name": f"h{i}", "slots": 1} for i in range(hosts)]
    core.push_event({"type": "WORKERS_PUSH", "ts": 0, "payload": {"hosts": workers}})
    draw = random.Random(7)
    jobs = [
        {"jobid": i + 1, "queue": "normal", "tasks": 1, "submit_ts": 0, "run_limit_s": 60}
        for i in range(hosts)
    ]
    jobs += [
        {
            "jobid": hosts + i + 1,
            "queue": "normal",
            "tasks": draw.randint(1, 8),
            "submit_ts": draw.randrange(1000) * NS,
            "run_limit_s": draw.randrange(60, 86_400),
        }
        for i in range(pending)
    ]
    jobs.sort(key=lambda job: job["submit_ts"])
    core.push_event({"type": "JOBS_PUSH", "ts": 1000 * NS, "payload": {"jobs": jobs}})
    core.push_event({"type": "BEGIN_ROUND", "ts": 1000 * NS, "payload": {}})
    return core, decisions


def bench_rounds(orders: list[str], pending: int, hosts: int, count: int) -> Table:
    """Part 1's table."""
    table = Table(title=f"rounds: {pending:,} pending on {hosts:,} busy hosts, one job ends each")
    for column in ("order", "build s", "ms per round", "dispatches/s", "× builtin_fcfs"):
        table.add_column(column, justify="right")
    base: float | None = None
    for order in orders:
        started = time.perf_counter()
        core, decisions = backlog_core(order, pending, hosts)
        build = time.perf_counter() - started
        before = sum(isinstance(d, Dispatch) for d in decisions)
        wall, after = rounds(core, decisions, count, first_s=1001)
        per_round = 1000 * wall / count
        base = per_round if base is None else base
        table.add_row(
            order,
            f"{build:.2f}",
            f"{per_round:.2f}",
            f"{(after - before) / wall:,.0f}",
            f"{per_round / base:.1f}",
        )
    return table


def bench_traces(
    orders: list[str], traces: list[str], policies: list[BackfillPolicy], max_jobs: int | None
) -> Table:
    """Part 2's table."""
    table = Table(title="whole traces: each order under each backfill policy")
    columns = ("trace", "backfill", "order", "mean wait s", "mean bsld", "util", "wall s")
    for column in columns:
        table.add_column(column, justify="right")
    for name in traces:
        workload = workload_of(name, max_jobs)
        if workload is None:
            continue
        for policy in policies:
            for order in orders:
                result = run_simulation(workload, source=name, policy=order, backfill=policy)
                report = result.report
                table.add_row(
                    name,
                    policy.value,
                    order,
                    f"{report.mean_wait_s:,.0f}" if report.mean_wait_s is not None else "n/a",
                    f"{report.mean_bounded_slowdown:,.2f}"
                    if report.mean_bounded_slowdown is not None
                    else "n/a",
                    f"{report.utilization:.3f}",
                    f"{report.sim_wall_s:.2f}",
                )
    return table


def main() -> int:
    orders = ["builtin_fcfs", *sorted(set(in_tree_registry().pickers.names()) - {"builtin_fcfs"})]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=positive, default=100_000)
    parser.add_argument("--hosts", type=positive, default=5_000)
    parser.add_argument("--rounds", type=positive, default=200)
    parser.add_argument("--orders", nargs="+", choices=orders, default=orders)
    parser.add_argument("--traces", nargs="*", choices=sorted(TRACES), default=["SDSC"])
    parser.add_argument(
        "--backfill",
        nargs="+",
        type=BackfillPolicy,
        choices=list(BackfillPolicy),
        default=[BackfillPolicy.GREEDY, BackfillPolicy.EASY],
    )
    parser.add_argument("--max-jobs", type=positive, default=None)
    args = parser.parse_args()
    if args.rounds > args.hosts:
        parser.error("needs --rounds <= --hosts (a first job ends each round)")
    selected = ["builtin_fcfs", *[o for o in args.orders if o != "builtin_fcfs"]]
    console = Console(width=160)
    console.print(bench_rounds(selected, args.pending, args.hosts, args.rounds))
    if args.traces:
        console.print(bench_traces(selected, args.traces, args.backfill, args.max_jobs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
