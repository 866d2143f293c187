"""Benchmark: the backfill policies on whole real traces, wall time against ``greedy``.

    python -m benchmarks.bench_backfill [--traces SDSC KTH ...] [--max-jobs N]
        [--policies greedy strict easy hybrid:4 conservative] [--swf-estimate requested|exact]
        [--repeat N]

For each trace and policy it prints the simulation's best wall time over ``--repeat``
runs and its ratio to ``greedy``'s (all run in the same process, the policies in
turn), the same in CPU time of this process (``time.process_time``: on a shared
virtual machine, time stolen by other guests stays out of it, so its ratios move
far less between runs), every run's wall time, the mean wait, mean
bounded slowdown and utilization, and for policies that reserve, the mean absolute
error of the first predicted start times against the actual starts. Under ``easy``
it also checks every start against the textbook EASY oracle
(``benchmarks/naive_easy.py``), under ``hybrid:N`` and ``conservative`` every start
and first prediction against the textbook count model
(``benchmarks/naive_conservative.py``). Figures only: no assertion on time (targets are read
by people: ``easy`` at most 1.5 times ``greedy``, ``conservative`` at most 3 times).
"""

from __future__ import annotations

import argparse
import sys
import time

from rich.console import Console
from rich.table import Table
from xce_driver.simulate import SimulationResult, run_simulation
from xce_driver.workloads.mapping import map_trace
from xce_driver.workloads.swf import read_swf
from xce_schemas import BackfillPolicy

from benchmarks.bench_simulate import TRACES, WORKLOADS
from benchmarks.naive_conservative import simulate as count_model
from benchmarks.naive_easy import simulate as naive_easy

COLUMNS = (
    "trace",
    "jobs",
    "policy",
    "best wall s",
    "× greedy",
    "best cpu s",
    "× greedy (cpu)",
    "runs s",
    "mean wait s",
    "mean bsld",
    "utilization",
    "prediction MAE s",
    "= oracle",
)


def _oracle_agrees(result: SimulationResult, workload_jobs: list, hosts: int, policy: str) -> str:
    """``yes`` when every start (and first prediction, for the count model) equals the
    textbook oracle's, ``NO`` when one does not, "" for a policy without one."""
    jobs = [(j.jobid, j.submit_s, j.run_s, j.tasks, j.run_limit_s) for j in workload_jobs]
    records = result.records.values()
    ours = {r.jobid: r.start_s for r in records if r.start_s is not None}
    if policy == "easy":
        return "yes" if ours == naive_easy(jobs, hosts) else "NO"
    name, depth = _policy(policy)
    if name not in ("hybrid", "conservative"):
        return ""
    starts, predictions = count_model(jobs, hosts, depth=depth)
    first = {
        r.jobid: r.first_predicted_start_s for r in records if r.first_predicted_start_s is not None
    }
    return "yes" if ours == starts and first == predictions else "NO"


def _policy(text: str) -> tuple[str, int | None]:
    """``hybrid:4`` → (``hybrid``, 4); another name with no depth."""
    name, _, depth = text.partition(":")
    return name, int(depth) if depth else None


def bench(name: str, args: argparse.Namespace) -> list[list[str]]:
    """One row per policy on trace ``name``. The policies run in turn, ``--repeat``
    times over (each run printed as it is done: a conservative run of a whole trace
    takes minutes); a row gives the best wall time of its policy, its ratio to
    ``greedy``'s best, and every run's (a shared machine's speed drifts by tens of
    per cent between runs; the best of several, taken in turn, is what compares)."""
    path = WORKLOADS / TRACES[name]
    if not path.exists():
        print(f"skipped {name}: {path} is absent", file=sys.stderr)
        return []
    workload = map_trace(read_swf(path), max_jobs=args.max_jobs, estimate=args.swf_estimate)
    walls: dict[str, list[float]] = {policy: [] for policy in args.policies}
    cpus: dict[str, list[float]] = {policy: [] for policy in args.policies}
    results: dict[str, SimulationResult] = {}
    for run in range(1, args.repeat + 1):
        for policy in args.policies:
            started = time.process_time()
            name_, depth = _policy(policy)
            result = run_simulation(
                workload,
                source=path.name,
                backfill=BackfillPolicy(name_),
                reservation_depth=depth,
            )
            cpus[policy].append(time.process_time() - started)
            walls[policy].append(result.report.sim_wall_s)
            results.setdefault(policy, result)  # (the same decisions every run)
            print(
                f"{name} {policy} run {run}: {walls[policy][-1]:.2f} s",
                f"(cpu {cpus[policy][-1]:.2f} s)",
                file=sys.stderr,
                flush=True,
            )
    greedy_s, greedy_cpu = min(walls["greedy"]), min(cpus["greedy"])
    rows = []
    for policy in args.policies:
        result = results[policy]
        report = result.report
        best = min(walls[policy])
        mae = getattr(report, "prediction_mae_s", None)
        rows.append(
            [
                name,
                f"{len(workload.jobs):,}",
                policy,
                f"{best:.2f}",
                f"{best / greedy_s:.2f}",
                f"{min(cpus[policy]):.2f}",
                f"{min(cpus[policy]) / greedy_cpu:.2f}",
                " ".join(f"{wall:.1f}" for wall in walls[policy]),
                "n/a" if report.mean_wait_s is None else f"{report.mean_wait_s:,.0f}",
                "n/a"
                if report.mean_bounded_slowdown is None
                else f"{report.mean_bounded_slowdown:,.2f}",
                f"{report.utilization:.3f}",
                "" if mae is None else f"{mae:,.0f}",
                _oracle_agrees(result, workload.jobs, workload.hosts, policy),
            ]
        )
    return rows


def _policy_argument(text: str) -> str:
    """The argparse type of ``--policies``: a built-in name, or ``hybrid:N``."""
    name, depth = _policy(text) if text.partition(":")[2].isdigit() else (text, None)
    if name not in {p.value for p in BackfillPolicy} or (name == "hybrid") != (depth is not None):
        raise argparse.ArgumentTypeError(
            f"{text!r}: greedy, strict, easy, conservative or hybrid:N"
        )
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", nargs="+", choices=sorted(TRACES), default=["SDSC", "KTH"])
    parser.add_argument("--max-jobs", type=int, default=None)
    parser.add_argument(
        "--policies",
        nargs="+",
        type=_policy_argument,
        metavar="POLICY",
        default=["greedy", "strict", "easy", "hybrid:4", "conservative"],
        help="greedy, strict, easy, conservative, or hybrid:N (depth N)",
    )
    parser.add_argument("--swf-estimate", choices=["requested", "exact"], default="requested")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of every policy, in turn (the best counts)"
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat: {args.repeat} is not 1 or more")
    if args.policies[0] != "greedy":
        args.policies.insert(0, "greedy")  # the baseline of the ratios
    table = Table(title=f"backfill policies, builtin_fcfs, --swf-estimate {args.swf_estimate}")
    for column in COLUMNS:
        table.add_column(column, justify="right")
    for name in args.traces:
        for row in bench(name, args):
            table.add_row(*row)
    Console(width=180).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
