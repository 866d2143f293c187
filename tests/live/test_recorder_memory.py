"""The recorder's first tier: its loop over the in-memory bus (``xce_kit.memory_bus``),
no nats-server. A recording started and stopped through the ``xce.recorder.control``
command protocol stores the core service's ``XCE_RECORD`` lines in Redis, whole
events only, and exports them to a file that replays without a mismatch; a line
missing from the stream is re-read, then accepted as a gap the exported status
names. Redis is a real redis-server (the recorder has no Redis seam). What only a
real server shows (a core killed mid-recording, a crashed recorder) stays in
``test_recorder.py``."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import NamedTuple

import orjson
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from xce_driver.live.core_service import CoreService
from xce_kit.memory_bus import MemoryBus
from xce_kit.redis_client import redis_from_url
from xce_recorder.config import RecorderOptions
from xce_recorder.service import RecorderService
from xce_schemas.admin import (
    RECORDER_CONTROL_SUBJECT,
    RecorderCommand,
    RecorderReply,
    RecorderStatus,
    recording_key,
)
from xce_schemas.bus import (
    CORE_RECORD_SUBJECT,
    DECISIONS_STREAM,
    MSG_ID_HEADER,
    RECORD_END,
    RECORD_LAST_HEADER,
    RECORD_SEQ_HEADER,
    RECORD_STREAM,
    RECORD_TYPE_HEADER,
    CoreRecordCommand,
    CoreRecordReply,
    record_msg_id,
    record_subject,
)

from tests.live.helpers import publish, read_stream, reference_decisions, scenario, wait_until
from tests.live.test_core_service_memory import options as core_options
from tests.live.test_recorder import assert_recording, recorder_status

pytestmark = pytest.mark.redis

#: The longest wait of a test for one thing, s: a recording here takes ~0.1 s.
WAIT_S = 10.0


@contextlib.asynccontextmanager
async def recorder_on(
    bus: MemoryBus, redis_url: str, recordings: Path, *, with_core: bool = True
) -> AsyncIterator[tuple[NatsClient, RecorderService]]:
    """A recorder (a SNAPSHOT every 10 events) and, ``with_core``, a core service on
    ``bus``, answering control requests; a test client of the bus with it. Both are
    stopped at the end."""
    tasks = []
    core = None
    if with_core:
        core = CoreService(core_options(redis_url), connect=bus.connect)
        tasks.append(asyncio.create_task(core.run()))
    recorder = RecorderService(
        RecorderOptions(
            redis_url=redis_url,
            recordings_dir=recordings,
            snapshot_interval=10,
            poll_s=0.02,
            stop_wait_s=5.0,
            start_timeout_s=5.0,
        ),
        connect=bus.connect,
    )
    tasks.append(asyncio.create_task(recorder.run()))
    nc = await bus.connect("memory://", "test", logging.getLogger(__name__))

    async def answering() -> bool:
        for task in tasks:
            if task.done():
                task.result()
                raise AssertionError("a service stopped on its own")
        with contextlib.suppress(NoRespondersError):
            return (await command(nc, "status")).ok
        return False

    try:
        await wait_until(answering, "the recorder to answer", WAIT_S)
        yield nc, recorder
    finally:
        if core is not None:
            core.stop()
        recorder.stop()
        await asyncio.gather(*tasks)
        await nc.close()


async def command(nc: NatsClient, action: str, name: str | None = None) -> RecorderReply:
    """One control request, as the admin API sends it."""
    request = RecorderCommand(action=action, name=name)  # type: ignore[arg-type]
    msg = await nc.request(RECORDER_CONTROL_SUBJECT, request.model_dump_json().encode(), WAIT_S)
    return RecorderReply.model_validate_json(msg.data)


async def exported(redis_url: str, name: str) -> RecorderStatus:
    """The status once the recorder is idle again with ``name`` as its last file."""

    async def done() -> bool:
        status = await recorder_status(redis_url)
        return status.state == "idle" and status.last_file == name

    await wait_until(done, f"{name} to be exported", WAIT_S)
    return await recorder_status(redis_url)


async def stored_lines(redis_url: str, name: str) -> list[bytes]:
    """The lines of recording ``name`` in its Redis stream now."""
    client = redis_from_url(redis_url)
    try:
        entries = await client.xrange(recording_key(name))
    finally:
        await client.aclose()
    return [fields[b"line"] for _id, fields in entries]


class Outcome(NamedTuple):
    """What a recording test saw: the start's and the stop's replies, the lines in
    Redis before the stop and after the export, the status once exported, the
    decision stream, and the recorder."""

    start: RecorderReply
    stop: RecorderReply
    in_redis: list[bytes]
    status: RecorderStatus
    left: list[bytes]
    decisions: list[bytes]
    recorder: RecorderService


def test_a_recording_is_stored_in_redis_and_exported(redis_db: str, tmp_path: Path) -> None:
    events = scenario(rounds=14)
    half = len(events) // 2
    name = "live.jsonl.gz"

    async def go() -> Outcome:
        bus = MemoryBus()
        async with recorder_on(bus, redis_db, tmp_path) as (nc, recorder):
            js = nc.jetstream()
            await publish(js, events[:half])
            start = await command(nc, "start", "live")
            await publish(js, events[half:])

            async def all_stored() -> bool:
                return (await recorder_status(redis_db)).seq == len(events)

            await wait_until(all_stored, "every event in Redis", WAIT_S)
            in_redis = await stored_lines(redis_db, name)
            stop = await command(nc, "stop")
            status = await exported(redis_db, name)
            left = await stored_lines(redis_db, name)
            decisions = [s.data for s in await read_stream(js, DECISIONS_STREAM)]
            return Outcome(start, stop, in_redis, status, left, decisions, recorder)

    start, stop, in_redis, status, left, decisions, recorder = asyncio.run(go())
    path = tmp_path / name
    assert start.ok, start.error
    assert start.status.state == "recording" and start.status.name == name
    assert start.status.start_seq == half  # the stream's end when the start came
    assert start.status.lines == 2  # HEADER and SNAPSHOT are in Redis when it answers
    assert stop.ok and stop.status.state == "stopping"
    types = assert_recording(path, status, events, half)
    # Redis held every line but END before the stop, and nothing once exported.
    assert in_redis == gzip.decompress(path.read_bytes()).splitlines()[:-1] and left == []
    assert decisions == reference_decisions(events)  # recording changed no decision
    sample = recorder.metrics.registry.get_sample_value
    assert sample("xce_recorder_lines_written_total") == len(types)
    assert sample("xce_recorder_events_total") == len(events) - half
    assert sample("xce_recorder_record_gaps_total") == 0
    assert sample("xce_recorder_recording") == 0


class ScriptedCore:
    """A stand-in for the core service's record protocol on ``CORE_RECORD_SUBJECT``:
    it answers ``start`` after publishing HEADER and SNAPSHOT at event seq
    ``START_SEQ``, publishes the lines the test gives it (``line``), and answers
    ``stop`` after publishing the ``END`` message; so a test chooses what reaches
    ``XCE_RECORD``, a line missing included."""

    START_SEQ = 5

    def __init__(self, nc: NatsClient) -> None:
        self.nc = nc
        self.rid = ""
        self.number = 0  # the next line's number
        self.seq = self.START_SEQ
        self.stops = 0

    async def line(self, kind: str, seq: int, *, last: bool = True, skip: int = 0) -> None:
        """Publish the next line (``skip``: leave that many numbers out before it)."""
        self.number += skip
        data = orjson.dumps({"type": kind, "seq": seq})  # END's is the recording's END line
        headers = {
            MSG_ID_HEADER: record_msg_id(self.rid, self.number),
            RECORD_SEQ_HEADER: str(seq),
            RECORD_TYPE_HEADER: kind,
        }
        if last:
            headers[RECORD_LAST_HEADER] = "1"
        await self.nc.jetstream().publish(record_subject(self.rid), data, headers=headers)
        self.number += 1
        self.seq = seq

    async def answer(self, msg: Msg) -> None:
        command = CoreRecordCommand.model_validate_json(msg.data)
        if command.action == "start":
            self.rid = command.id
            await self.line("HEADER", self.START_SEQ, last=False)
            await self.line("SNAPSHOT", self.START_SEQ)
            reply = CoreRecordReply(ok=True, id=command.id, start_seq=self.START_SEQ)
        else:
            self.stops += 1
            if self.stops == 1:
                await self.line(RECORD_END, self.seq)
            reply = CoreRecordReply(ok=True, id=command.id, end_seq=self.seq)
        await msg.respond(reply.model_dump_json().encode())


def test_a_line_missing_from_the_stream_is_a_gap_the_status_names(
    redis_db: str, tmp_path: Path
) -> None:
    name = "gap.jsonl"

    async def go() -> tuple[RecorderReply, RecorderStatus, RecorderService]:
        bus = MemoryBus()
        async with recorder_on(bus, redis_db, tmp_path, with_core=False) as (nc, recorder):
            core = ScriptedCore(nc)
            await nc.subscribe(CORE_RECORD_SUBJECT, cb=core.answer)
            assert (await command(nc, "start", name)).ok
            await core.line("JOBS_PUSH", 6)
            await core.line("BEGIN_ROUND", 7, last=False)
            await core.line("DECISION", 7)
            await core.line("JOBS_PUSH", 8, skip=1)  # line 5 never reached the stream
            await core.line("BEGIN_ROUND", 9)

            async def all_stored() -> bool:
                return (await recorder_status(redis_db)).seq == 9

            await wait_until(all_stored, "the lines after the gap in Redis", WAIT_S)
            stop = await command(nc, "stop")
            return stop, await exported(redis_db, name), recorder

    stop, status, recorder = asyncio.run(go())
    assert stop.ok and stop.status.state == "stopping"
    lines = [orjson.loads(line) for line in (tmp_path / name).read_bytes().splitlines()]
    assert [(line["type"], line["seq"]) for line in lines] == [
        ("HEADER", 5),
        ("SNAPSHOT", 5),
        ("JOBS_PUSH", 6),
        ("BEGIN_ROUND", 7),
        ("DECISION", 7),
        ("JOBS_PUSH", 8),
        ("BEGIN_ROUND", 9),
        ("END", 9),
    ]
    assert status.state == "idle" and status.last_file == name
    assert status.last_error == f"1 lines of {name} were missing"
    assert (status.lines, status.seq) == (len(lines), 9)
    sample = recorder.metrics.registry.get_sample_value
    assert sample("xce_recorder_record_gaps_total") == 1
    assert sample("xce_recorder_lines_written_total") == len(lines)


def test_a_start_without_a_core_service_is_refused(redis_db: str, tmp_path: Path) -> None:
    async def go() -> tuple[RecorderReply, RecorderStatus]:
        async with recorder_on(MemoryBus(), redis_db, tmp_path, with_core=False) as (nc, _):
            return await command(nc, "start", "nocore"), await recorder_status(redis_db)

    reply, status = asyncio.run(go())
    assert not reply.ok and not reply.conflict
    assert reply.error == (
        "recording 'nocore.jsonl.gz' not started: the core service is not running "
        "(nobody answers on xce.core.record)"
    )
    assert status.state == "idle"


class PurgingCore(ScriptedCore):
    """A core whose recording's first lines are gone from ``XCE_RECORD`` (purged, as
    a stream's limits drop them) before the recorder reads them."""

    async def answer(self, msg: Msg) -> None:
        if CoreRecordCommand.model_validate_json(msg.data).action == "start":
            command = CoreRecordCommand.model_validate_json(msg.data)
            self.rid = command.id
            await self.line("HEADER", self.START_SEQ, last=False)
            await self.line("SNAPSHOT", self.START_SEQ)
            await self.nc.jetstream().purge_stream(RECORD_STREAM)
            await self.line("JOBS_PUSH", self.START_SEQ + 1)  # what the recorder reads
            reply = CoreRecordReply(ok=True, id=command.id, start_seq=self.START_SEQ)
            await msg.respond(reply.model_dump_json().encode())
        else:
            await super().answer(msg)


def test_a_start_whose_first_lines_were_dropped_is_answered_refused(
    redis_db: str, tmp_path: Path
) -> None:
    """The retention error of a start is a refusal with the reason: before, it
    escaped the command handler and the request went unanswered (the admin waited)."""

    async def go() -> tuple[RecorderReply, RecorderStatus, int]:
        async with recorder_on(MemoryBus(), redis_db, tmp_path, with_core=False) as (nc, _):
            core = PurgingCore(nc)
            await nc.subscribe(CORE_RECORD_SUBJECT, cb=core.answer)
            reply = await command(nc, "start", "purged")
            return reply, await recorder_status(redis_db), core.stops

    reply, status, stops = asyncio.run(go())
    assert not reply.ok and not reply.conflict
    assert reply.error is not None
    assert reply.error.startswith("recording 'purged.jsonl.gz' not started: XCE_RECORD: ")
    assert "purged" in reply.error.split("not started: ", 1)[1]
    assert status.state == "idle"
    assert stops == 1  # the core was asked to abandon the recording
