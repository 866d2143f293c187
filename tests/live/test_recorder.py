"""The recording path against real servers: the core service emits the ordered record
stream, the recorder stores it and exports it. A live recording replays with
``--sim-verify`` without a single mismatch, has a periodic SNAPSHOT every N events,
changes no decision, and a core service killed (SIGKILL) mid-recording and restarted
gives, byte for byte, the file of an uninterrupted run; control on NATS, state in
Redis."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import nats
import orjson
import pytest
import redis.asyncio as aioredis
from nats.js.errors import NotFoundError
from xce_core.core import SchedCore
from xce_core.snapshot import save_snapshot
from xce_driver.live.core_service import CoreService, CoreServiceOptions
from xce_driver.live.record_stream import record_stream_config
from xce_driver.recording import read_lines
from xce_driver.replay import ReplayError, ReplayOptions, replay
from xce_driver.whatif import what_if
from xce_recorder.config import RecorderOptions
from xce_recorder.service import RecorderService
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
from xce_schemas.bus import (
    CORE_RECORD_SUBJECT,
    DECISIONS_STREAM,
    RECORD_STREAM,
    CoreRecordCommand,
    CoreRecordReply,
)

from tests.live.helpers import (
    ServiceProcess,
    connected,
    publish,
    read_stream,
    reference_decisions,
    reset_bus,
    scenario,
    wait_until,
)
from tests.live.test_core_service import until_acked, until_killed

pytestmark = [pytest.mark.nats, pytest.mark.redis]


@pytest.fixture(autouse=True)
def no_record_stream(bus: tuple[str, str]) -> Iterator[None]:
    """Each test starts without ``XCE_RECORD`` (``bus`` removes the other streams)."""
    asyncio.run(_delete_record_stream(bus[0]))
    yield


async def _delete_record_stream(nats_url: str) -> None:
    async with connected(nats_url) as js:
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(RECORD_STREAM)


@dataclass
class Running:
    """Services running as tasks of the test's event loop."""

    core: CoreService | None
    recorder: RecorderService
    tasks: list[asyncio.Task[None]]


def core_options(nats_url: str, redis_url: str, every: int = 5) -> CoreServiceOptions:
    """A core service checkpointing every ``every`` events, quick to see commands."""
    return CoreServiceOptions(
        nats_url=nats_url, redis_url=redis_url, snapshot_every=every, fetch_timeout_s=0.1
    )


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
        core = CoreService(core_options(nats_url, redis_url))
        tasks.append(asyncio.create_task(core.run()))
    recorder = RecorderService(
        RecorderOptions(
            nats_url=nats_url,
            redis_url=redis_url,
            recordings_dir=recordings,
            snapshot_interval=snapshot_interval,
            poll_s=0.05,
            stop_wait_s=stop_wait_s,
            start_timeout_s=20.0,
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


async def core_command(
    nats_url: str, request: CoreRecordCommand, timeout: float
) -> CoreRecordReply:
    """Send one recording command to the core service, as the recorder does."""
    nc = await nats.connect(nats_url)
    try:
        msg = await nc.request(CORE_RECORD_SUBJECT, request.model_dump_json().encode(), timeout)
    finally:
        await nc.close()
    return CoreRecordReply.model_validate_json(msg.data)


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


async def core_at(service: CoreService, seq: int) -> None:
    async def there() -> bool:
        return service.seq >= seq

    await wait_until(there, f"the core to handle event {seq}")


def line_types(path: Path) -> list[str]:
    return [line.type for line in read_lines(path)]


def core_after(events: Sequence[CoreEvent]) -> SchedCore:
    core = SchedCore(on_decision=lambda d: None, prng_seed=0)
    for event in events:
        core.push_event(event)
    return core


def assert_recording(
    path: Path, status: RecorderStatus, events: Sequence[CoreEvent], start: int
) -> list[str]:
    """Check an exported recording of ``events`` from event seq ``start`` on, made
    with a SNAPSHOT every 10 events, and its final ``status``: its lines in order, its
    start SNAPSHOT exactly the state after ``events[:start]``, a replay without a
    mismatch. Returns its line types."""
    types = line_types(path)
    recorded = len(events) - start
    assert types[:2] == ["HEADER", "SNAPSHOT"] and types[-1] == "END"
    event_types = [t for t in types if t not in ("HEADER", "SNAPSHOT", "DECISION", "END")]
    assert event_types == [e.type for e in events[start:]]
    # A periodic SNAPSHOT follows every 10th event and its decisions, nowhere else.
    count, expected_types = 0, []
    for t in types[2:-1]:
        if t == "SNAPSHOT":
            continue
        if t != "DECISION":
            if count and count % 10 == 0:
                expected_types.append("SNAPSHOT")
            count += 1
        expected_types.append(t)
    if count % 10 == 0:
        expected_types.append("SNAPSHOT")
    assert types[2:-1] == expected_types
    assert types.count("SNAPSHOT") == 1 + recorded // 10
    assert status.lines == len(types) and status.last_error is None
    assert status.start_seq == start and status.seq == len(events)
    # The start SNAPSHOT is the state after events[:start], exactly.
    first = next(line for line in read_lines(path) if line.type == "SNAPSHOT")
    expected = save_snapshot(core_after(events[:start])).model_dump(mode="json")
    assert {k: v for k, v in first.data["data"].items() if k != "clock"} == {
        k: v for k, v in expected.items() if k != "clock"
    }
    result = replay(path, ReplayOptions(verify=True))
    assert result.mismatch_count == 0, result.mismatches
    assert result.stats.events == recorded
    assert sum(result.stats.decisions.values()) == types.count("DECISION") > 0
    return types


def test_a_live_recording_replays_without_a_mismatch(bus: tuple[str, str], tmp_path: Path) -> None:
    nats_url, redis_url = bus
    events = scenario(rounds=14)
    half = len(events) // 2

    async def go() -> tuple[RecorderReply, RecorderStatus, RecorderService, list[bytes]]:
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
            status = await exported(redis_url, "live.jsonl.gz")
            decisions = [s.data for s in await read_stream(js, DECISIONS_STREAM)]
            return reply, status, running.recorder, decisions

    reply, status, recorder, decisions = asyncio.run(go())
    path = tmp_path / "live.jsonl.gz"
    assert reply.status.state == "recording" and reply.status.name == "live.jsonl.gz"
    assert reply.status.start_seq == half  # the stream's end when the start came
    assert reply.status.lines == 2  # HEADER and SNAPSHOT are in Redis when it answers
    types = assert_recording(path, status, events, half)
    recorded = len(events) - half
    # A what-if of the recording with itself gives its run back, on the ticks it
    # recorded (its HEADER says the rounds were the controller's).
    same = what_if(path, path)
    assert same.controller_rounds and same.moved() == [] and same.endless == []
    assert [(j, r.start_s, r.end_s) for j, r in sorted(same.records.items())] == [
        (j, r.start_s, r.end_s) for j, r in sorted(same.base_records.items())
    ]
    # Recording changed no decision: the stream is a core's that never recorded.
    assert decisions == reference_decisions(events)
    # Reproducible gzip: no file name, modification time 0.
    raw = path.read_bytes()
    assert raw[3] == 0 and raw[4:8] == b"\0\0\0\0"
    sample = recorder.metrics.registry.get_sample_value
    assert sample("xce_recorder_lines_written_total") == len(types)
    assert sample("xce_recorder_snapshots_total") == types.count("SNAPSHOT")
    assert sample("xce_recorder_events_total") == recorded
    assert sample("xce_recorder_record_gaps_total") == 0
    assert sample("xce_recorder_recording") == 0
    assert sample("xce_recorder_export_seconds_count") == 1


# --- SIGKILL of the core service mid-recording -------------------------------------------

CRASH_EVENTS = scenario(rounds=20, seed=3)
CRASH_START = 10
CRASH_NAME = "crash.jsonl.gz"
CRASH_INTERVAL = 4
#: Where each run of the core service kills itself once the recording is on: in the
#: middle of an event's record lines, among its decisions, before its ack, before and
#: after a checkpoint. Counts are per process (published messages only).
RECORD_FAULTS = ("record:9", "decision:2", "record:3", "ack:2", "checkpoint:1", "checkpointed:1")


def test_an_uninterrupted_and_a_crashed_core_give_the_same_file(
    bus: tuple[str, str], tmp_path: Path, workdir: Path
) -> None:
    nats_url, redis_url = bus
    events = CRASH_EVENTS
    calm, crashed = tmp_path / "calm", tmp_path / "crashed"

    async def uninterrupted() -> None:
        async with (
            connected(nats_url) as js,
            services(nats_url, redis_url, calm, snapshot_interval=CRASH_INTERVAL) as running,
        ):
            assert running.core is not None
            await publish(js, events[:CRASH_START])
            await core_at(running.core, CRASH_START)
            assert (await command(nats_url, "start", CRASH_NAME)).ok
            await publish(js, events[CRASH_START:])
            await core_at(running.core, len(events))
            assert (await command(nats_url, "stop")).ok
            await exported(redis_url, CRASH_NAME)

    async def killed_again_and_again() -> tuple[list[bytes], list[bytes]]:
        log = workdir / "core.log"
        argv = ("--snapshot-every", "4", "--snapshot-seconds", "60")
        async with connected(nats_url) as js:
            # A duplicate window shorter than a restart: only the core's own record
            # watermark can keep a re-handled event's lines from going out twice.
            await js.add_stream(record_stream_config(window_s=0.5))
            seqs = await publish(js, events[:CRASH_START])
            core = ServiceProcess(nats_url, redis_url, log, *argv, "--fault-kill-at", "record:6")
            await until_acked(js, core, seqs[-1], "the core to handle the first events")
            async with services(
                nats_url, redis_url, crashed, snapshot_interval=CRASH_INTERVAL, with_core=False
            ):
                assert (await command(nats_url, "start", CRASH_NAME)).ok
                seqs = await publish(js, events[CRASH_START:])
                await until_killed(js, core, seqs[-1], "record:6")
                for fault in RECORD_FAULTS:
                    core = ServiceProcess(nats_url, redis_url, log, *argv, "--fault-kill-at", fault)
                    await until_killed(js, core, seqs[-1], fault)
                core = ServiceProcess(nats_url, redis_url, log, *argv)
                await until_acked(js, core, seqs[-1], "the last run to handle every event")
                assert (await command(nats_url, "stop")).ok
                await exported(redis_url, CRASH_NAME)
                assert core.terminate() == 0, core.log_text()
            stored = await read_stream(js, RECORD_STREAM)
            record = [m.msg_id or "" for m in stored]
            return record, [s.data for s in await read_stream(js, DECISIONS_STREAM)]

    asyncio.run(uninterrupted())
    reset_bus(nats_url, redis_url)
    asyncio.run(_delete_record_stream(nats_url))
    ids, decisions = asyncio.run(killed_again_and_again())
    assert (crashed / CRASH_NAME).read_bytes() == (calm / CRASH_NAME).read_bytes()
    # Each record message once, in order, the last one END.
    numbers = [int(i.rsplit(":", 1)[1]) for i in ids]
    assert numbers == list(range(len(numbers)))
    result = replay(crashed / CRASH_NAME, ReplayOptions(verify=True))
    assert result.mismatch_count == 0, result.mismatches
    assert result.stats.events == len(events) - CRASH_START
    assert decisions == reference_decisions(events)


def test_a_start_made_just_before_the_core_was_killed_is_made_again_there(
    bus: tuple[str, str], workdir: Path, tmp_path: Path
) -> None:
    """The core noted the start and published HEADER and SNAPSHOT, then died before
    its checkpoint and its answer: restarted, it starts the recording again at the
    same position (from ``xce:core:recording``), each line once."""
    nats_url, redis_url = bus
    events = scenario(rounds=10)
    start = 13  # not a multiple of the checkpoint interval: the restart re-handles events
    start_cmd = CoreRecordCommand(
        action="start", id="direct-1", name="d.jsonl", snapshot_interval=3
    )

    async def go() -> tuple[CoreRecordReply, list[bytes], list[str | None]]:
        log = workdir / "core.log"
        argv = ("--snapshot-every", "4")
        async with connected(nats_url) as js:
            seqs = await publish(js, events[:start])
            core = ServiceProcess(nats_url, redis_url, log, *argv, "--fault-kill-at", "record:2")
            await until_acked(js, core, seqs[-1], "the core to handle the first events")
            with pytest.raises(TimeoutError):
                await core_command(nats_url, start_cmd, timeout=3.0)
            assert core.proc.wait(timeout=10) < 0, core.log_text()
            core = ServiceProcess(nats_url, redis_url, log, *argv)
            seqs = await publish(js, events[start:])
            await until_acked(js, core, seqs[-1], "the restarted core to catch up")
            again = await core_command(nats_url, start_cmd, timeout=10.0)
            assert again.ok and again.start_seq == start, again
            stop = await core_command(
                nats_url, CoreRecordCommand(action="stop", id="direct-1"), timeout=10.0
            )
            assert core.terminate() == 0, core.log_text()
            stored = await read_stream(js, RECORD_STREAM)
            return stop, [m.data for m in stored], [m.msg_id for m in stored]

    stop, lines, ids = asyncio.run(go())
    assert stop.ok and stop.start_seq == start and stop.end_seq == len(events)
    assert ids == [f"xce-rec:direct-1:{n}" for n in range(len(ids))]
    assert orjson.loads(lines[-1])["type"] == "END"  # the END message carries the END line
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    types = line_types(path)
    assert types[:2] == ["HEADER", "SNAPSHOT"] and types.count("HEADER") == 1
    assert types.count("SNAPSHOT") == 1 + (len(events) - start) // 3
    result = replay(path, ReplayOptions(verify=True))
    assert result.mismatch_count == 0, result.mismatches
    assert result.stats.events == len(events) - start


def test_a_stop_with_the_core_down_ends_at_the_last_whole_event(
    bus: tuple[str, str], tmp_path: Path
) -> None:
    nats_url, redis_url = bus
    events = scenario(rounds=6)

    async def go() -> RecorderStatus:
        async with (
            connected(nats_url) as js,
            services(nats_url, redis_url, tmp_path, stop_wait_s=0.5) as running,
        ):
            assert running.core is not None
            assert (await command(nats_url, "start", "cut")).ok
            await publish(js, events)
            await core_at(running.core, len(events))
            await wait_until(
                lambda: _recorded(redis_url, len(events)), "the recorder to store every event"
            )
            running.core.stop()
            await running.tasks[0]
            assert (await command(nats_url, "stop")).ok
            return await exported(redis_url, "cut.jsonl.gz")

    status = asyncio.run(go())
    path = tmp_path / "cut.jsonl.gz"
    assert status.last_error is not None
    assert status.last_error.startswith("the core service did not end recording cut.jsonl.gz")
    assert status.last_error.endswith(f"the recording ends at event seq {len(events)}")
    # No END came: the file says it is incomplete, and replays only when forced.
    assert read_lines(path).__next__().type == "HEADER"
    with pytest.raises(ReplayError, match="without its END line: the recording was cut short"):
        replay(path, ReplayOptions(verify=True))
    result = replay(path, ReplayOptions(verify=True, force=True))
    assert result.mismatch_count == 0 and result.stats.events == len(events)
    assert result.incomplete is not None


async def _recorded(redis_url: str, seq: int) -> bool:
    return (await recorder_status(redis_url)).seq >= seq


def test_control_refusals(bus: tuple[str, str], tmp_path: Path) -> None:
    nats_url, redis_url = bus
    (tmp_path / "taken.jsonl.gz").write_bytes(gzip.compress(b""))

    async def go() -> list[RecorderReply]:
        async with services(nats_url, redis_url, tmp_path):
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
    assert (default.status.recording_id or "").startswith("rec-")
    assert not second.ok and second.conflict
    assert stop.ok


def test_a_recording_left_by_a_crashed_recorder_is_exported_at_start(
    bus: tuple[str, str], tmp_path: Path
) -> None:
    nats_url, redis_url = bus
    header = b'{"type":"HEADER"}'

    async def go() -> RecorderStatus:
        client = aioredis.Redis.from_url(redis_url)
        left = RecorderStatus(
            state="recording", name="crash.jsonl", seq=42, lines=1, recording_id="crash-1"
        )
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
        await core_at(service, seqs[-1])
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
