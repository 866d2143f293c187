"""Benchmark: how long the leader lease (``xce_kit.lease``) takes to change hands.

    python -m benchmarks.bench_lease [--ttl 5] [--rounds 5]

It starts ``nats-server -js`` on a free loopback port (``tests/live/servers.py``)
and, ROUNDS times each, measures two handovers to a contender waiting in this
process: a *release* (the leader deletes its key: from the call to the successor's
term) and a *crash* (a leader in its own process, ``tests.live.lease_holder``,
killed with SIGKILL at a random point of its renewal period: from the kill to the
successor's term). For the crash it also prints how long after the dead leader's
own deadline (when it would have stopped leading) the successor began: always
positive, about the margin. The successor's start of the service itself (reading
the checkpoint, the watermark, recreating its consumer) comes on top.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from xce_kit.connection import connect_nats
from xce_kit.lease import Lease

from tests.live.servers import nats_server

ROOT = Path(__file__).resolve().parents[1]
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin"])
log = logging.getLogger("bench_lease")


async def release_handover(url: str, ttl: float) -> float:
    """Seconds from a leader's ``release`` to the waiting contender's term."""
    a_nc = await connect_nats(url, "a", log)
    b_nc = await connect_nats(url, "b", log)
    a, b = Lease(a_nc.jetstream(), "a", ttl), Lease(b_nc.jetstream(), "b", ttl)
    try:
        await a.acquire()
        waiting = asyncio.create_task(b.acquire())
        await asyncio.sleep(random.uniform(0.2, ttl))
        released = time.monotonic()
        await a.release()
        await waiting
        assert b.started_at is not None
        return b.started_at - released
    finally:
        await b.release()
        await a_nc.close()
        await b_nc.close()


async def crash_handover(url: str, ttl: float) -> tuple[float, float]:
    """Seconds from a SIGKILL of the leader's process to the waiting contender's term,
    and from the dead leader's last deadline to that term."""
    holder = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "tests.live.lease_holder", url, str(ttl), "killed"],
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    assert holder.stdout is not None
    nc = await connect_nats(url, "b", log)
    b = Lease(nc.jetstream(), "b", ttl)
    try:
        await holder.stdout.readline()  # term N: it leads
        waiting = asyncio.create_task(b.acquire())
        await asyncio.sleep(random.uniform(ttl, 2 * ttl))
        holder.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        await holder.wait()
        lines = (await holder.stdout.read()).decode().split()
        deadline = float(lines[-1])
        await waiting
        assert b.started_at is not None
        return b.started_at - killed, b.started_at - deadline
    finally:
        with contextlib.suppress(ProcessLookupError):
            holder.kill()
        await b.release()
        await nc.close()


async def measure(url: str, ttl: float, rounds: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"release": [], "crash": [], "after deadline": []}
    for _ in range(rounds):
        figures["release"].append(await release_handover(url, ttl))
        crash, after = await crash_handover(url, ttl)
        figures["crash"].append(crash)
        figures["after deadline"].append(after)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ttl", type=float, default=5.0, help="lease time, s (default 5)")
    parser.add_argument("--rounds", type=int, default=5, help="handovers of each kind")
    args = parser.parse_args(argv)
    binary = shutil.which("nats-server", path=SEARCH_PATH)
    if binary is None:
        print("bench_lease: skipped: nats-server is not installed")
        return 0
    with tempfile.TemporaryDirectory() as workdir:
        server = nats_server(Path(workdir), binary)
        server.start()
        try:
            figures = asyncio.run(measure(server.url, args.ttl, args.rounds))
        finally:
            server.stop()
    table = Table(title=f"lease handover, lease time {args.ttl:g} s, {args.rounds} rounds")
    for column in ("handover", "min s", "median s", "max s"):
        table.add_column(column, justify="left" if column == "handover" else "right")
    for name, values in figures.items():
        row = (min(values), statistics.median(values), max(values))
        table.add_row(name, *(f"{value:.3f}" for value in row))
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
