"""Benchmark: rounds on a long backlog, where little changes between two rounds.

    python -m benchmarks.bench_rounds [--pending 100000] [--hosts 5000] [--rounds 2000]

A core with ``--hosts`` one-slot hosts, every one busy with a one-task job, and
``--pending`` plain jobs of 1-8 tasks queued behind them (seeded). Each round one
running job ends (DONE), then a BEGIN_ROUND: the freed slot goes to the first job
that fits. It prints dispatches per second and ms per round with incremental
rounds, and the same for a few rounds of the full loop (every pending job offered
every round: ``SchedCore(incremental=False)``), with the ratio; and checks both
made the same decisions over those rounds. Figures only: no assertion on time.
"""

from __future__ import annotations

import argparse
import random
import time

from xce_core.core import SchedCore
from xce_schemas import Decision, Dispatch, JobState, dump_decision
from xce_schemas.events import BeginRound, JobStateChange, JobStateChangePayload

from benchmarks.bench_simulate import positive

NS = 1_000_000_000


def busy_core(pending: int, hosts: int, incremental: bool) -> tuple[SchedCore, list[Decision]]:
    """The busy cluster with its backlog, after a first round that filled it."""
    decisions: list[Decision] = []
    core = SchedCore(on_decision=decisions.append, prng_seed=1, incremental=incremental)
    queue = {"name": "normal", "priority": 30}
    core.push_event({"type": "CONFIG_PUSH", "ts": 0, "payload": {"config": {"queues": [queue]}}})
    workers = [{"name": f"h{i}", "slots": 1} for i in range(hosts)]
    core.push_event({"type": "WORKERS_PUSH", "ts": 0, "payload": {"hosts": workers}})
    draw = random.Random(7)
    jobs = [{"jobid": i + 1, "queue": "normal", "tasks": 1, "submit_ts": 0} for i in range(hosts)]
    jobs += [
        {"jobid": hosts + i + 1, "queue": "normal", "tasks": draw.randint(1, 8), "submit_ts": NS}
        for i in range(pending)
    ]
    core.push_event({"type": "JOBS_PUSH", "ts": NS, "payload": {"jobs": jobs}})
    core.push_event({"type": "BEGIN_ROUND", "ts": NS, "payload": {}})
    return core, decisions


def rounds(
    core: SchedCore, decisions: list[Decision], count: int, first_s: int = 2
) -> tuple[float, int]:
    """Run ``count`` rounds, one a second from ``first_s``, each after one running
    job ends (events built as the in-process driver builds them); (wall s,
    dispatches)."""
    running = [d.jobid for d in decisions if isinstance(d, Dispatch)]
    start = len(decisions)
    started = time.perf_counter()
    for step in range(count):
        ts = (step + first_s) * NS
        jobid = running[step]
        change = JobStateChangePayload(jobid=jobid, state=JobState.DONE)
        core.push_event(JobStateChange(ts=ts, payload=change))
        core.push_event(BeginRound(ts=ts))
        running.extend(d.jobid for d in decisions[start:] if isinstance(d, Dispatch))
        start = len(decisions)
    wall = time.perf_counter() - started
    return wall, sum(isinstance(d, Dispatch) for d in decisions)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=positive, default=100_000)
    parser.add_argument("--hosts", type=positive, default=5_000)
    parser.add_argument("--rounds", type=positive, default=2_000)
    parser.add_argument("--full-rounds", type=positive, default=20)
    args = parser.parse_args()
    if not args.full_rounds <= args.rounds <= args.hosts:
        parser.error("needs --full-rounds <= --rounds <= --hosts (a first job ends each round)")
    figures = {}
    for incremental, count in ((True, args.rounds), (False, args.full_rounds)):
        core, decisions = busy_core(args.pending, args.hosts, incremental)
        before = sum(isinstance(d, Dispatch) for d in decisions)
        wall, after = rounds(core, decisions, count)
        figures[incremental] = (wall, after - before, count, decisions)
        label = "incremental" if incremental else "full loop"
        print(
            f"{label:>11}: {count:,} rounds in {wall:.2f} s, {(after - before) / wall:,.0f} "
            f"dispatches/s, {1000 * wall / count:.2f} ms per round"
        )
    (inc_wall, _, inc_count, inc_decisions), (full_wall, _, full_count, full_decisions) = (
        figures[True],
        figures[False],
    )
    ratio = (full_wall / full_count) / (inc_wall / inc_count)
    # The first full_count rounds must have decided the same.
    same = [dump_decision(d).decode() for d in full_decisions] == [
        dump_decision(d).decode() for d in inc_decisions[: len(full_decisions)]
    ]
    print(
        f"a round of the full loop costs {ratio:,.0f} x an incremental one; same decisions: "
        f"{'yes' if same else 'NO'}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
