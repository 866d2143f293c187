"""Benchmark: ``xce-sched replay --sim-verify`` of a whole-trace recording.

    python -m benchmarks.bench_replay [--trace SDSC] [--recording PATH]

Records the full simulation of the trace (unless ``--recording`` names one), then
prints the verified replay's events and lines per second, and the ratio of its wall
time to a pass that only parses the same file with orjson, in the same process:
the floor no replay can beat.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import orjson
from rich.console import Console
from rich.table import Table
from xce_driver.recording import RecordingWriter
from xce_driver.replay import ReplayOptions, replay
from xce_driver.simulate import run_simulation
from xce_driver.workloads.mapping import map_trace
from xce_driver.workloads.swf import read_swf

from benchmarks.bench_simulate import TRACES, WORKLOADS


def parse_only(path: Path) -> tuple[int, float]:
    started = time.perf_counter()
    lines = 0
    with open(path, "rb") as handle:
        for raw in handle:
            orjson.loads(raw)
            lines += 1
    return lines, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", choices=sorted(TRACES), default="SDSC")
    parser.add_argument("--recording", type=Path)
    args = parser.parse_args()
    path = args.recording
    if path is None:
        trace = WORKLOADS / TRACES[args.trace]
        if not trace.exists():
            print(f"skipped: {trace} is absent")
            return 0
        path = Path(tempfile.mkdtemp()) / f"{args.trace}.jsonl"
        with RecordingWriter(path) as writer:
            run_simulation(map_trace(read_swf(trace)), source=trace.name, recording=writer)
    lines, parse_s = parse_only(path)
    result = replay(path, ReplayOptions(verify=True))
    events = result.stats.events
    table = Table(title=f"xce-sched replay --sim-verify {path.name}")
    for column in (
        "lines",
        "events",
        "mismatches",
        "replay s",
        "events/s",
        "lines/s",
        "orjson-only s",
        "ratio",
    ):
        table.add_column(column, justify="right")
    table.add_row(
        f"{lines:,}",
        f"{events:,}",
        f"{result.mismatch_count:,}",
        f"{result.wall_s:.2f}",
        f"{events / result.wall_s:,.0f}",
        f"{lines / result.wall_s:,.0f}",
        f"{parse_s:.2f}",
        f"{result.wall_s / parse_s:.1f}",
    )
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
