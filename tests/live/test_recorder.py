"""The recorder against real servers: a recording of the live core service replays
with ``--sim-verify`` without a single mismatch, whatever the core's pace, with a
periodic SNAPSHOT every N events; control on NATS, state in Redis."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import nats
import orjson
import pytest
import redis.asyncio as aioredis
from xce_core.core import SchedCore
from xce_core.snapshot import save_snapshot
from xce_driver.live.core_service import CoreService, CoreServiceOptions
from xce_driver.recording import read_lines
from xce_driver.replay import ReplayOptions, replay
from xce_recorder.service import RecorderOptions, RecorderService
from xce_schemas import CoreEvent
from xce_schemas.admin import (
    CORE_STATUS_KEY,
    RECORDER_CONTROL_SUBJECT,
    RECORDER_STATUS_KEY,
    RecorderCommand,
    RecorderReply,
    RecorderStatus,
    core_status_from_hash,
    recorder_status_from_hash,
    recording_key,
    to_hash,
)

from tests.live.helpers import connected, publish, scenario, wait_until

pytestmark = [pytest.mark.nats, pytest.mark.redis]


@dataclass
class Running:
    """Services running as tasks of the test's event loop."""

    core: CoreService | None
    recorder: RecorderService
    tasks: list[asyncio.Task[None]]


@contextlib.asynccontextmanager
async def services(
    nats_url: str,
    redis_url: str,
    recordings: Path,
    *,
    snapshot_interval: int = 0,
    with_core: bool = True,
    stop_wait_s: float = 10.0,
) -> AsyncIterator[Running]:
    """A core service (checkpoint every 5 events) and a recorder, stopped at the end."""
    tasks: list[asyncio.Task[None]] = []
    core = None
    if with_core:
        core = CoreService(
            CoreServiceOptions(nats_url=nats_url, redis_url=redis_url, snapshot_every=5)
        )
        tasks.append(asyncio.create_task(core.run()))
    recorder = RecorderService(
        RecorderOptions(
            nats_url=nats_url,
            redis_url=redis_url,
            recordings_dir=recordings,
            snapshot_interval=snapshot_interval,
            poll_s=0.05,
            stop_wait_s=stop_wait_s,
        )
    )
    tasks.append(asyncio.create_task(recorder.run()))
    running = Running(core, recorder, tasks)
    try:
        await wait_until(lambda: _subscribed(nats_url, tasks), "the recorder to answer")
        yield running
    finally:
        if running.core is not None:
            running.core.stop()
        recorder.stop()
        await asyncio.gather(*running.tasks)


async def _subscribed(nats_url: str, tasks: Sequence[asyncio.Task[None]]) -> bool:
    for task in tasks:
        if task.done():
            task.result()
            raise AssertionError("a service stopped on its own")
    try:
        await command(nats_url, "status")
    except nats.errors.NoRespondersError:
        return False
    return True


async def command(nats_url: str, action: str, name: str | None = None) -> RecorderReply:
    """Send one control request the way the admin API does."""
    nc = await nats.connect(nats_url)
    try:
        request = RecorderCommand(action=action, name=name)  # type: ignore[arg-type]
        msg = await nc.request(
            RECORDER_CONTROL_SUBJECT, request.model_dump_json().encode(), timeout=30
        )
    finally:
        await nc.close()
    return RecorderReply.model_validate_json(msg.data)


async def recorder_status(redis_url: str) -> RecorderStatus:
    client = aioredis.Redis.from_url(redis_url)
    try:
        return recorder_status_from_hash(await client.hgetall(RECORDER_STATUS_KEY))
    finally:
        await client.aclose()


async def exported(redis_url: str, name: str) -> RecorderStatus:
    """Wait until the recorder is idle again with ``name`` as its last file."""

    async def done() -> bool:
        status = await recorder_status(redis_url)
        return status.state == "idle" and status.last_file == name

    await wait_until(done, f"{name} to be exported")
    return await recorder_status(redis_url)


def line_types(path: Path) -> list[str]:
    return [line.type for line in read_lines(path)]


def core_after(events: Sequence[CoreEvent]) -> SchedCore:
    core = SchedCore(on_decision=lambda d: None, prng_seed=0)
    for event in events:
        core.push_event(event)
    return core


def test_a_live_recording_replays_without_a_mismatch(bus: tuple[str, str], tmp_path: Path) -> None:
    nats_url, redis_url = bus
    events = scenario(rounds=14)
    half = len(events) // 2

    async def go() -> tuple[RecorderReply, RecorderStatus, RecorderService]:
        async with (
            connected(nats_url) as js,
            services(nats_url, redis_url, tmp_path, snapshot_interval=10) as running,
        ):
            await publish(js, events[:half])
            reply = await command(nats_url, "start", "live")
            assert reply.ok, reply.error
            await publish(js, events[half:])
            stop = await command(nats_url, "stop")
            assert stop.ok and stop.status.state == "stopping"
            return reply, await exported(redis_url, "live.jsonl.gz"), running.recorder

    reply, status, recorder = asyncio.run(go())
    path = tmp_path / "live.jsonl.gz"
    assert reply.status.state == "recording" and reply.status.name == "live.jsonl.gz"
    assert reply.status.start_seq == half  # the stream's end when the start came
    types = line_types(path)
    recorded = len(events) - half
    assert types[:2] == ["HEADER", "SNAPSHOT"]
    assert sum(t not in ("HEADER", "SNAPSHOT", "DECISION") for t in types) == recorded
    # A periodic SNAPSHOT follows every 10th event (and its decisions).
    assert types.count("SNAPSHOT") == 1 + recorded // 10
    assert status.lines == len(types) and status.last_error is None
    # The start SNAPSHOT is the state after the first half, exactly.
    first = next(line for line in read_lines(path) if line.type == "SNAPSHOT")
    expected = save_snapshot(core_after(events[:half])).model_dump(mode="json")
    assert {k: v for k, v in first.data["data"].items() if k != "clock"} == {
        k: v for k, v in expected.items() if k != "clock"
    }
    result = replay(path, ReplayOptions(verify=True))
    assert result.mismatch_count == 0, result.mismatches
    assert result.stats.events == recorded
    assert sum(result.stats.decisions.values()) == types.count("DECISION") > 0
    sample = recorder.metrics.registry.get_sample_value
    assert sample("xce_recorder_lines_written_total") == len(types)
    assert sample("xce_recorder_snapshots_total") == types.count("SNAPSHOT")
    assert sample("xce_recorder_decision_mismatches_total") == 0
    assert sample("xce_recorder_recording") == 0
    assert sample("xce_recorder_export_seconds_count") == 1


def test_events_wait_for_a_core_that_starts_late(bus: tuple[str, str], tmp_path: Path) -> None:
    """The recorder writes an event only once the core published all its decisions,
    however far behind the core is (here: not running until after the stop)."""
    nats_url, redis_url = bus
    events = scenario(rounds=8)

    async def go() -> None:
        async with (
            connected(nats_url) as js,
            services(nats_url, redis_url, tmp_path, with_core=False) as running,
        ):
            await publish(js, events[:3])
            assert (await command(nats_url, "start", "late.jsonl")).ok
            await publish(js, events[3:])
            await asyncio.sleep(0.5)
            status = await command(nats_url, "status")
            assert status.status.seq == 3  # nothing settled without the core
            assert (await command(nats_url, "stop")).ok
            core = CoreService(CoreServiceOptions(nats_url=nats_url, redis_url=redis_url))
            running.core = core
            running.tasks.append(asyncio.create_task(core.run()))
            await exported(redis_url, "late.jsonl")

    asyncio.run(go())
    path = tmp_path / "late.jsonl"
    result = replay(path, ReplayOptions(verify=True))
    assert result.mismatch_count == 0, result.mismatches
    assert result.stats.events == len(events) - 3
    # Plain JSONL (no .gz): one JSON object a line.
    assert all(orjson.loads(line) for line in path.read_bytes().splitlines())


def test_a_stop_with_the_core_down_ends_at_the_last_complete_event(
    bus: tuple[str, str], tmp_path: Path
) -> None:
    nats_url, redis_url = bus
    events = scenario(rounds=6)

    async def go() -> None:
        async with (
            connected(nats_url) as js,
            services(nats_url, redis_url, tmp_path, with_core=False, stop_wait_s=0.3),
        ):
            assert (await command(nats_url, "start", "cut")).ok
            await publish(js, events)
            assert (await command(nats_url, "stop")).ok
            await exported(redis_url, "cut.jsonl.gz")

    asyncio.run(go())
    assert line_types(tmp_path / "cut.jsonl.gz") == ["HEADER", "SNAPSHOT"]
    assert replay(tmp_path / "cut.jsonl.gz", ReplayOptions(verify=True)).mismatch_count == 0


def test_control_refusals(bus: tuple[str, str], tmp_path: Path) -> None:
    nats_url, redis_url = bus
    (tmp_path / "taken.jsonl.gz").write_bytes(gzip.compress(b""))

    async def go() -> list[RecorderReply]:
        async with services(nats_url, redis_url, tmp_path, with_core=False):
            nc = await nats.connect(nats_url)
            try:
                bad = await nc.request(RECORDER_CONTROL_SUBJECT, b'{"action":"dance"}', timeout=5)
            finally:
                await nc.close()
            replies = [
                RecorderReply.model_validate_json(bad.data),
                await command(nats_url, "stop"),
                await command(nats_url, "start", "../etc/passwd"),
                await command(nats_url, "start", "taken"),
                await command(nats_url, "start"),
                await command(nats_url, "start", "second"),
                await command(nats_url, "stop"),
            ]
            await exported(redis_url, replies[4].status.name or "")
            return replies

    bad, stop_idle, traversal, taken, default, second, stop = asyncio.run(go())
    assert not bad.ok and bad.error is not None and "action" in bad.error
    assert not stop_idle.ok and stop_idle.conflict and stop_idle.error == "not recording"
    assert not traversal.ok and not traversal.conflict
    assert (
        traversal.error
        == "recording name '../etc/passwd' is a path; give a file name only (no '/' or '\\')"
    )
    assert (
        not taken.ok
        and taken.conflict
        and taken.error == "a recording named 'taken.jsonl.gz' exists"
    )
    assert default.ok and (default.status.name or "").startswith("rec-")
    assert not second.ok and second.conflict
    assert stop.ok


def test_a_recording_left_by_a_crashed_recorder_is_exported_at_start(
    bus: tuple[str, str], tmp_path: Path
) -> None:
    nats_url, redis_url = bus
    header = b'{"type":"HEADER"}'

    async def go() -> RecorderStatus:
        client = aioredis.Redis.from_url(redis_url)
        left = RecorderStatus(state="recording", name="crash.jsonl", seq=42, lines=1)
        await client.hset(RECORDER_STATUS_KEY, mapping=to_hash(left))  # type: ignore[arg-type]
        await client.xadd(recording_key("crash.jsonl"), {"line": header, "seq": 42})
        await client.aclose()
        async with services(nats_url, redis_url, tmp_path, with_core=False):
            return await recorder_status(redis_url)

    status = asyncio.run(go())
    assert (tmp_path / "crash.jsonl").read_bytes() == header + b"\n"
    assert status.state == "idle" and status.last_file == "crash.jsonl"
    assert status.last_error is not None and "ends at event seq 42" in status.last_error


def test_the_core_service_publishes_its_status_after_each_round(bus: tuple[str, str]) -> None:
    nats_url, redis_url = bus
    events = scenario(rounds=4)
    options = CoreServiceOptions(nats_url=nats_url, redis_url=redis_url)

    async def go() -> dict[bytes, bytes]:
        async with connected(nats_url) as js:
            seqs = await publish(js, events)
        service = CoreService(options)
        task = asyncio.create_task(service.run())
        await wait_until(lambda: _at(service, seqs[-1]), "the core to finish")
        service.stop()
        await task
        client = aioredis.Redis.from_url(redis_url)
        try:
            return await client.hgetall(CORE_STATUS_KEY)  # type: ignore[no-any-return]
        finally:
            await client.aclose()

    status = core_status_from_hash(asyncio.run(go()))
    reference = core_after(events)
    last_round = max(e.ts for e in events if e.type == "BEGIN_ROUND")
    assert status is not None
    assert status.last_round_ts == last_round
    assert status.seq == len(events)  # the scenario ends with a round
    jobs = reference.state.jobs.values()
    assert status.pending == sum(j.state.value == "PEND" for j in jobs)
    assert status.running == sum(j.state.value == "RUN" for j in jobs)
    assert status.events_waiting == 0 and status.lag_seconds >= 0


async def _at(service: CoreService, seq: int) -> bool:
    return service.seq >= seq


def test_start_and_stop_while_events_stream_in(bus: tuple[str, str], tmp_path: Path) -> None:
    """Events keep arriving during the start and the stop: wherever the recording
    begins and ends, it replays exactly (its start SNAPSHOT and its decisions agree)."""
    nats_url, redis_url = bus
    events = scenario(rounds=30, seed=11)

    async def go() -> None:
        async with (
            connected(nats_url) as js,
            services(nats_url, redis_url, tmp_path, snapshot_interval=7),
        ):

            async def feed() -> None:
                for event in events:
                    await publish(js, [event])
                    await asyncio.sleep(0.002)

            feeder = asyncio.create_task(feed())
            await asyncio.sleep(0.05)
            assert (await command(nats_url, "start", "busy")).ok
            await asyncio.sleep(0.1)
            assert (await command(nats_url, "stop")).ok
            await feeder
            await exported(redis_url, "busy.jsonl.gz")

    asyncio.run(go())
    path = tmp_path / "busy.jsonl.gz"
    result = replay(path, ReplayOptions(verify=True))
    assert result.mismatch_count == 0, result.mismatches
    print(f"recorded {result.stats.events} of {len(events)} events")
    assert 0 < result.stats.events < len(events)
