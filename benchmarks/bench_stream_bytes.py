"""Benchmark: the bytes each stream of the live stack stores per message, for the
sizing rule of ``docs/operations.md``.

    python -m benchmarks.bench_stream_bytes [--jobs 1000] [--hosts 128] [--speed 200000]
        [--record-snapshot-interval 10000] [--idle-seconds 20]

It starts ``nats-server -js`` and ``redis-server`` on free loopback ports (the live
tests' helper, ``tests/live/servers.py``), the core service, the bridge and the
recorder as their own processes with the options docker-compose.yml gives them,
starts a recording, measures what the idle stack's rounds store (one a second),
plays ``xce-sched emulate``'s default workload (a generated
Lublin-Feitelson workload) through the stack, stops the recording once the core
has handled every event, and prints, per stream, the messages and bytes the
server stores (``stream info``: ``state.bytes / state.messages``, the file store's
own framing included), the events per ``XCE_EVENTS`` message (the bridge batches
events when they come faster than it publishes) and the bytes per job of the run.
The emulator runs at ``--speed`` times real time, so the bridge's rounds (one a
wall second) are fewer per job than in production; the per-message figures do not
depend on it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import nats
import orjson
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from rich.console import Console
from rich.table import Table
from xce_kit.streams import BUS_STREAMS
from xce_schemas.admin import RECORDER_CONTROL_SUBJECT, RecorderCommand, RecorderReply
from xce_schemas.bus import (
    DEADLETTER_STREAM,
    DECISIONS_STREAM,
    EVENTS_BATCH_SUBJECT,
    EVENTS_STREAM,
    RECORD_STREAM,
    RECORD_TYPE_HEADER,
)
from xce_schemas.controller import CTL_DECISIONS_STREAM, CTL_STREAM

from tests.live.servers import ServerProcess, nats_server, redis_server

SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin"])
STREAMS = BUS_STREAMS
#: What one message of each stream is, for the table.
UNIT = {
    EVENTS_STREAM: "event message (a batch of events)",
    DECISIONS_STREAM: "decision",
    DEADLETTER_STREAM: "dead letter",
    CTL_STREAM: "controller message (submission, job state)",
    CTL_DECISIONS_STREAM: "decision forwarded to the controller",
    RECORD_STREAM: "record line (event, decision, snapshot)",
}
#: How long a stage may take, s (a loaded 2-core machine).
WAIT_S = 300.0


@dataclass(frozen=True)
class Figures:
    """One stream after the run: stored messages and bytes (``stream info``)."""

    stream: str
    messages: int
    bytes: int

    @property
    def per_message(self) -> float:
        return self.bytes / self.messages if self.messages else float("nan")


async def poll(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Await ``check`` every 0.1 s until it is true (``WAIT_S`` at most).

    Raises:
        TimeoutError: naming ``what``.
    """
    deadline = time.monotonic() + WAIT_S
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {WAIT_S} s waiting for {what}")
        await asyncio.sleep(0.1)


async def recorder_request(nc: nats.NATS, command: RecorderCommand) -> RecorderReply:
    """Send the recorder ``command``; its reply."""
    answer = await nc.request(RECORDER_CONTROL_SUBJECT, command.model_dump_json().encode(), 10)
    return RecorderReply.model_validate_json(answer.data)


async def drained(js: JetStreamContext) -> bool:
    """Whether every consumer of ``XCE_EVENTS`` has taken and acknowledged everything."""
    consumers = await js.consumers_info(EVENTS_STREAM)
    return bool(consumers) and all(not c.num_pending and not c.num_ack_pending for c in consumers)


@dataclass
class Kinds:
    """The messages of one stream by kind (the subject's last token; a record line's
    ``type``): how many, and their payload bytes (``data``, without subject and
    headers). Events in ``XCE_EVENTS`` batches are counted one by one as well."""

    count: Counter[str] = field(default_factory=Counter)
    payload: Counter[str] = field(default_factory=Counter)
    events: int = 0


async def read_kinds(js: JetStreamContext, stream: str) -> Kinds:
    """Read every message of ``stream`` (one ``STREAM.MSG.GET`` each)."""
    info = await js.stream_info(stream)
    kinds = Kinds()
    if not info.state.messages:
        return kinds
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            msg = await js.get_msg(stream, seq=seq)
        except NotFoundError:
            continue
        data = msg.data or b""
        kind = (msg.subject or "").rsplit(".", 1)[-1]
        if stream == RECORD_STREAM:
            kind = (msg.headers or {}).get(RECORD_TYPE_HEADER, "?")
        kinds.count[kind] += 1
        kinds.payload[kind] += len(data)
        if msg.subject == EVENTS_BATCH_SUBJECT:
            kinds.events += len(orjson.loads(data)["events"])
        elif stream == EVENTS_STREAM:
            kinds.events += 1
    return kinds


async def states(js: JetStreamContext) -> dict[str, tuple[int, int]]:
    """``(messages, bytes)`` of every stream now."""
    found = {}
    for stream in STREAMS:
        state = (await js.stream_info(stream)).state
        found[stream] = (state.messages, state.bytes)
    return found


async def idle_rounds(js: JetStreamContext, seconds: float) -> dict[str, float]:
    """What each stream stores per round of an idle stack (the bridge's rounds, the
    core's answers, their record lines), over a window of ``seconds``: stored bytes
    added per ``XCE_EVENTS`` message added (each one round)."""
    before = await states(js)
    await asyncio.sleep(seconds)  # the window measured, not a wait for something
    after = await states(js)
    rounds = after[EVENTS_STREAM][0] - before[EVENTS_STREAM][0]
    return {s: (after[s][1] - before[s][1]) / max(rounds, 1) for s in STREAMS} | {"rounds": rounds}


def start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    """A service as a child process, its output in ``log``."""
    with open(log, "ab") as handle:
        return subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT)


async def measure(args: argparse.Namespace, nats_url: str, redis_url: str, folder: Path) -> None:
    py = sys.executable
    services = {
        "core": [py, "-m", "xce_driver.live.core_service", "--snapshot-every", "10000"],
        "bridge": [py, "-m", "xce_driver.live.bridge", "--round-interval", "1"],
        "recorder": [
            *(py, "-m", "xce_recorder", "--recordings-dir", str(folder / "recordings")),
            *("--record-snapshot-interval", str(args.record_snapshot_interval)),
        ],
    }
    procs = []
    for name, argv in services.items():
        redis = [] if name == "bridge" else ["--redis", redis_url]
        procs.append(start([*argv, "--nats", nats_url, *redis], folder / f"{name}.log"))
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    try:

        async def recorder_up() -> bool:
            for proc in procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{proc.args} exited with {proc.returncode} (see {folder})")
            try:
                await recorder_request(nc, RecorderCommand(action="status"))
            except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
                return False
            return True

        await poll(recorder_up, "the recorder to answer")

        async def recording() -> bool:
            # Refused (not a conflict) while the core service is not up yet.
            command = RecorderCommand(action="start", name="bench.jsonl")
            started = await recorder_request(nc, command)
            if started.conflict:
                raise RuntimeError(f"the recording did not start: {started.error}")
            return started.ok

        await poll(recording, "the recording to start")
        idle = await idle_rounds(js, args.idle_seconds)
        emulator = [
            *(py, "-m", "xce_driver.cli", "emulate", "--nats", nats_url, "--quiet"),
            *("--jobs", str(args.jobs), "--hosts", str(args.hosts), "--speed", str(args.speed)),
        ]
        begun = time.monotonic()
        done = await asyncio.to_thread(
            subprocess.run, emulator, capture_output=True, text=True, timeout=WAIT_S, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"the emulator failed:\n{done.stdout}{done.stderr}")
        await poll(lambda: drained(js), "the core to handle every event")
        played = time.monotonic() - begun
        await recorder_request(nc, RecorderCommand(action="stop"))

        async def exported() -> bool:
            return (folder / "recordings" / "bench.jsonl").exists()

        await poll(exported, "the recording to be exported")
        stop(procs)  # no more rounds: the streams hold still while they are read
        figures = []
        for stream in STREAMS:
            state = (await js.stream_info(stream)).state
            figures.append(Figures(stream, state.messages, state.bytes))
        kinds = {stream: await read_kinds(js, stream) for stream in STREAMS}
    finally:
        await nc.close()
        stop(procs)
    report(args, figures, kinds, idle, played)


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM the services; SIGKILL those still running after 30 s."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def report(
    args: argparse.Namespace,
    figures: list[Figures],
    kinds: dict[str, Kinds],
    idle: dict[str, float],
    played: float,
) -> None:
    """Print, per stream, what it stores, and per kind of message its payload."""
    console = Console(width=120)
    table = Table(title=f"Stored bytes per message: {args.jobs} jobs, {args.hosts} hosts")
    for column in ("stream", "one message is"):
        table.add_column(column)
    for column in ("messages", "bytes", "bytes/message", "framing+headers/message"):
        table.add_column(column, justify="right")
    for f in figures:
        payload = sum(kinds[f.stream].payload.values())
        overhead = (f.bytes - payload) / f.messages if f.messages else float("nan")
        table.add_row(
            f.stream,
            UNIT[f.stream],
            f"{f.messages:,}",
            f"{f.bytes:,}",
            f"{f.per_message:,.0f}",
            f"{overhead:,.0f}",
        )
    console.print(table)
    table = Table(title="Payload bytes per message, by kind")
    for column in ("stream", "kind", "messages", "payload bytes/message"):
        table.add_column(column, justify="right" if column.endswith("message") else "left")
    table.columns[2].justify = "right"
    for stream, found in kinds.items():
        for kind in sorted(found.count):
            mean = found.payload[kind] / found.count[kind]
            table.add_row(stream, kind, f"{found.count[kind]:,}", f"{mean:,.0f}")
    console.print(table)
    events = kinds[EVENTS_STREAM].events
    ev = next(f for f in figures if f.stream == EVENTS_STREAM)
    console.print(
        f"XCE_EVENTS: {events:,} events in {ev.messages:,} messages "
        f"({events / max(ev.messages, 1):.2f} per message): {ev.bytes / max(events, 1):,.0f} "
        "stored bytes per event"
    )
    per_round = ", ".join(f"{s} {idle[s]:,.0f}" for s in STREAMS if idle[s])
    console.print(
        f"idle, recording on: stored bytes per round ({idle['rounds']:.0f} rounds "
        f"in {args.idle_seconds:g} s): {per_round}"
    )
    total = sum(f.bytes for f in figures)
    console.print(
        f"all streams: {total:,} bytes, {total / args.jobs:,.0f} bytes per job "
        f"(played in {played:.1f} s at speed {args.speed:g})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_stream_bytes", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs of the workload")
    parser.add_argument("--hosts", type=int, default=128, help="hosts of the cluster")
    parser.add_argument("--speed", type=float, default=200000, help="emulator speed")
    parser.add_argument(
        "--record-snapshot-interval",
        type=int,
        default=10000,
        help="events between two SNAPSHOT lines of the recording (compose: 10000)",
    )
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=20.0,
        help="how long the idle stack's rounds are measured before the workload, s",
    )
    args = parser.parse_args(argv)
    binaries = [shutil.which(n, path=SEARCH_PATH) for n in ("nats-server", "redis-server")]
    if None in binaries:
        print("bench_stream_bytes: error: nats-server and redis-server are needed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-stream-bytes-") as tmp:
        folder = Path(tmp)
        servers: list[ServerProcess] = [
            nats_server(folder / "nats", str(binaries[0])),
            redis_server(folder / "redis", str(binaries[1])),
        ]
        (folder / "redis").mkdir()
        for server in servers:
            server.start()
        try:
            asyncio.run(measure(args, servers[0].url, servers[1].url + "/0", folder))
        finally:
            for server in servers:
                server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
