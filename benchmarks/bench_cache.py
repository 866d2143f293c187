"""Benchmark: one round of 100,000 pending jobs on a busy 5,000-host cluster, with and
without the session's unsatisfiable-request cache (Req 7; target under 1 s with it,
at least 10 times faster than without).

    python -m benchmarks.bench_cache [--jobs 100000] [--shapes 200] [--hosts 5000]

The cluster: HOSTS hosts of 16 slots and 64,000 MB, of models ``m0`` to ``m19``
(host i has model ``m<i % 20>``). Two running jobs, dispatched by an earlier round,
keep it busy: one fills every slot of the hosts not of model ``m3``; the other
takes 8 slots and 56,000 MB on each ``m3`` host (one host in 20), which keep 8 free
slots and 8,000 MB. So the free-slot index holds plenty of slots (8 a host on 250
hosts of 5,000) and rejects nothing at once: each pending request has to look at
the hosts with free slots and find that none has the memory it reserves.

The pending jobs: JOBS jobs (one user per shape, one queue) of SHAPES distinct
request shapes, interleaved in submit order (job i has shape i % SHAPES). The shapes
ask for a little more memory than a free host has left, in four layouts:

* 1 task, ``rusage[mem=M]``, M > 8,000;
* 4 tasks, ``span[ptile=4] rusage[mem=M]``, 4 × M > 8,000;
* 8 tasks, ``span[hosts=1] rusage[mem=M]``, 8 × M > 8,000;
* 16 tasks, ``span[ptile=8] rusage[mem=M]``, 8 × M > 8,000 on each of 2 hosts.

The state is built through ``SchedCore.push_event`` (CONFIG_PUSH, WORKERS_PUSH,
JOBS_PUSH, BEGIN_ROUND for the running jobs, JOBS_PUSH of the pending jobs), the
same way for both runs; only the measured ``BEGIN_ROUND`` is timed. The two runs'
decision streams must be identical (the cache changes speed, never a decision): the
script checks it and fails, exit 1, when they differ. Figures only: no assertion
on time. At full size the run without the cache takes minutes (every job searches
and diagnoses, over a millisecond each); ``--jobs 5000`` gives a quick look.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from xce_core.core import SchedCore
from xce_schemas import Decision

NS = 1_000_000_000
SLOTS = 16
MEM_MB = 64_000
MODELS = 20
#: Model of the hosts that keep free slots (and too little memory).
FREE_MODEL = "m3"
#: What the second running job takes on each of those hosts: 8 slots, 56,000 MB.
HELD_SLOTS, HELD_MEM_MB = 8, 7_000


def shapes(count: int) -> list[tuple[int, str]]:
    """``count`` distinct (tasks, resreq) shapes, each asking for more memory per host
    than a host with free slots has left (8,000 MB)."""
    out = []
    for s in range(count):
        step = s // 4
        layout = s % 4
        if layout == 0:
            out.append((1, f"rusage[mem={8001 + 100 * step}]"))
        elif layout == 1:
            out.append((4, f"span[ptile=4] rusage[mem={2001 + 25 * step}]"))
        elif layout == 2:
            out.append((8, f"span[hosts=1] rusage[mem={1001 + 13 * step}]"))
        else:
            out.append((16, f"span[ptile=8] rusage[mem={1001 + 13 * step}]"))
    return out


def hosts_of(count: int) -> list[dict[str, Any]]:
    return [
        {"name": f"h{i:05d}", "slots": SLOTS, "max_mem_mb": MEM_MB, "model": f"m{i % MODELS}"}
        for i in range(count)
    ]


@dataclass
class Scenario:
    """A core with the scenario's state, and the decisions it emits from now on."""

    core: SchedCore
    decisions: list[Decision]
    round_ts: int


def build(hosts: int, jobs: int, shape_count: int, *, cache: bool) -> Scenario:
    """The busy cluster and its pending jobs, pushed as events into a new core.

    Raises:
        RuntimeError: the running jobs did not fill the cluster as planned.
    """
    decisions: list[Decision] = []
    core = SchedCore(on_decision=decisions.append, prng_seed=1, unsatisfiable_cache=cache)
    push = core.push_event
    push(
        {
            "type": "CONFIG_PUSH",
            "ts": 0,
            "payload": {"config": {"queues": [{"name": "normal", "priority": 30}]}},
        }
    )
    specs = hosts_of(hosts)
    push({"type": "WORKERS_PUSH", "ts": 0, "payload": {"hosts": specs}})
    free_hosts = sum(spec["model"] == FREE_MODEL for spec in specs)
    running = [
        {
            "jobid": 1,
            "queue": "normal",
            "tasks": SLOTS * (hosts - free_hosts),
            "resreq": f"select[model!={FREE_MODEL}] span[ptile={SLOTS}]",
            "submit_ts": NS,
        },
        {
            "jobid": 2,
            "queue": "normal",
            "tasks": HELD_SLOTS * free_hosts,
            "resreq": f"select[model=={FREE_MODEL}] span[ptile={HELD_SLOTS}] "
            f"rusage[mem={HELD_MEM_MB}]",
            "submit_ts": NS,
        },
    ]
    push({"type": "JOBS_PUSH", "ts": NS, "payload": {"jobs": running}})
    push({"type": "BEGIN_ROUND", "ts": 2 * NS, "payload": {}})
    started = sum(d.op == "DISPATCH" for d in decisions)
    if started != 2:
        raise RuntimeError(f"the running jobs did not start ({started} of 2 dispatched)")
    table = shapes(shape_count)
    pending = []
    for i in range(jobs):
        tasks, resreq = table[i % shape_count]
        pending.append(
            {
                "jobid": 100 + i,
                "queue": "normal",
                "user": f"u{i % shape_count}",
                "tasks": tasks,
                "resreq": resreq,
                "submit_ts": 3 * NS,
            }
        )
    push({"type": "JOBS_PUSH", "ts": 3 * NS, "payload": {"jobs": pending}})
    decisions.clear()
    return Scenario(core, decisions, 4 * NS)


def measure(hosts: int, jobs: int, shape_count: int, *, cache: bool) -> tuple[float, Scenario]:
    """Build the scenario and time its one measured round (s)."""
    scenario = build(hosts, jobs, shape_count, cache=cache)
    event = {"type": "BEGIN_ROUND", "ts": scenario.round_ts, "payload": {}}
    started = time.perf_counter()
    scenario.core.push_event(event)
    return time.perf_counter() - started, scenario


def bounded(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not between {low:,} and {high:,}")
        return value

    return parse


def main() -> int:
    parser = argparse.ArgumentParser(
        description="One round of pending jobs on a busy cluster, with and without the "
        "unsatisfiable-request cache (Req 7)."
    )
    parser.add_argument(
        "--jobs", type=bounded(1, 10_000_000), default=100_000, help="pending jobs (100,000)"
    )
    parser.add_argument(
        "--shapes", type=bounded(1, 100_000), default=200, help="distinct request shapes (200)"
    )
    parser.add_argument(
        "--hosts",
        type=bounded(MODELS, 1_000_000),
        default=5_000,
        help=f"hosts, at least {MODELS} (one model in {MODELS} keeps free slots) (5,000)",
    )
    args = parser.parse_args()
    on_s, on = measure(args.hosts, args.jobs, args.shapes, cache=True)
    off_s, off = measure(args.hosts, args.jobs, args.shapes, cache=False)
    same = on.decisions == off.decisions
    dispatched = sum(d.op == "DISPATCH" for d in on.decisions)
    table = Table(
        title=f"one round, {args.jobs:,} pending jobs of {args.shapes} shapes, "
        f"{args.hosts:,} hosts (busy)"
    )
    for column in ("cache", "round s", "cache hits", "decisions", "dispatched"):
        table.add_column(column, justify="right")
    table.add_row(
        "on", f"{on_s:.3f}", f"{on.core.cache_hits:,}", f"{len(on.decisions):,}", str(dispatched)
    )
    table.add_row(
        "off",
        f"{off_s:.3f}",
        f"{off.core.cache_hits:,}",
        f"{len(off.decisions):,}",
        str(sum(d.op == "DISPATCH" for d in off.decisions)),
    )
    console = Console(width=160)
    console.print(table)
    console.print(f"ratio off / on: {off_s / on_s:.1f}x")
    console.print(f"identical decision streams: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
