"""Benchmark: snapshot save and load of a large core (target: at most 1 s each).

    python -m benchmarks.bench_snapshot [--jobs 100000] [--hosts 5000]

Builds a core with HOSTS hosts of 8 slots and JOBS jobs (one round dispatches as many
as fit, the rest pend), then times ``save_snapshot`` + JSON, and JSON +
``load_snapshot``, and checks that the loaded core saves the same bytes. The JSON
encode alone of the same document by orjson is the baseline, in the same process.
"""

from __future__ import annotations

import argparse
import random
import time

import orjson
from rich.console import Console
from rich.table import Table
from xce_core.core import SchedCore
from xce_core.snapshot import load_snapshot, save_snapshot

NS = 1_000_000_000


def build(jobs: int, hosts: int) -> SchedCore:
    rng = random.Random(1)
    core = SchedCore(on_decision=lambda d: None)
    core.push_event(
        {
            "type": "CONFIG_PUSH",
            "ts": 0,
            "payload": {
                "config": {
                    "queues": [{"name": "normal", "priority": 30}, {"name": "high", "priority": 50}]
                }
            },
        }
    )
    core.push_event(
        {
            "type": "WORKERS_PUSH",
            "ts": 0,
            "payload": {"hosts": [{"name": f"h{i:05d}", "slots": 8} for i in range(hosts)]},
        }
    )
    specs = [
        {
            "jobid": i,
            "queue": "high" if i % 7 == 0 else "normal",
            "user": f"u{i % 300}",
            "tasks": rng.choice([1, 1, 2, 4, 8, 16, 32]),
            "resreq": rng.choice(["", "select[mem>4000]", "span[ptile=4]"]),
            "submit_ts": i * NS,
        }
        for i in range(1, jobs + 1)
    ]
    core.push_event({"type": "JOBS_PUSH", "ts": (jobs + 1) * NS, "payload": {"jobs": specs}})
    core.push_event({"type": "BEGIN_ROUND", "ts": (jobs + 2) * NS, "payload": {}})
    return core


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=5_000)
    args = parser.parse_args()
    core = build(args.jobs, args.hosts)
    running = sum(job.alloc is not None for job in core.state.jobs.values())

    started = time.perf_counter()
    text = save_snapshot(core).model_dump_json()
    save_s = time.perf_counter() - started

    document = orjson.loads(text)
    started = time.perf_counter()
    orjson.dumps(document)
    encode_s = time.perf_counter() - started

    started = time.perf_counter()
    loaded = load_snapshot(text, on_decision=lambda d: None)
    load_s = time.perf_counter() - started
    same = save_snapshot(loaded).model_dump_json() == text

    table = Table(title="snapshot save / load")
    for column in (
        "jobs",
        "running",
        "hosts",
        "MB",
        "save s",
        "load s",
        "orjson encode s",
        "same bytes",
    ):
        table.add_column(column, justify="right")
    table.add_row(
        f"{args.jobs:,}",
        f"{running:,}",
        f"{args.hosts:,}",
        f"{len(text) / 1e6:.1f}",
        f"{save_s:.2f}",
        f"{load_s:.2f}",
        f"{encode_s:.3f}",
        "yes" if same else "NO",
    )
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
