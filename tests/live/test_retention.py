"""Stream limits on a real nats-server: what they drop is caught, never skipped.

A stream with a tiny size cap or age drops messages nobody read; ``xce_kit.retention``
must tell a reader whose stored position or durable consumer is behind the stream's
first message (one line naming the stream, the lost sequences and the limits), and
leave a reader that is caught up alone. Creating the streams: the limits reach the
server, a window longer than the age is shortened rather than refused, and a stream
the server will not create is one line naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError
from xce_driver.live.bridge.consumer import ctl_consumer, decisions_consumer
from xce_driver.live.bridge.options import BridgeOptions
from xce_driver.live.controller_bus import ensure_ctl_streams
from xce_driver.live.core_service import CoreServiceOptions
from xce_driver.live.core_service.consumer import EventConsumer
from xce_driver.live.emulate import LiveEmulator
from xce_kit.reader import InOrderReader, ack_last, deliveries
from xce_kit.retention import RetentionError, check_consumer, check_position, first_seq
from xce_kit.streams import (
    BUS_STREAMS,
    StreamLimits,
    StreamRefused,
    ensure_record_stream,
    ensure_stream,
    ensure_streams,
    stream_config,
)
from xce_recorder.config import RecorderOptions
from xce_recorder.cursor import RecordCursor
from xce_recorder.service import RecorderService
from xce_recorder.session import Session
from xce_schemas import HostSpec, QueueSpec, SchedulerConfig
from xce_schemas.admin import RecorderStatus, recording_key
from xce_schemas.bus import (
    DECISIONS_STREAM,
    EVENTS_STREAM,
    MSG_ID_HEADER,
    RECORD_LAST_HEADER,
    RECORD_SEQ_HEADER,
    RECORD_STREAM,
    RECORD_TYPE_HEADER,
    record_msg_id,
    record_subject,
)
from xce_schemas.controller import CTL_DECISIONS_STREAM, CTL_STREAM

from tests.live.helpers import run, wait_until

pytestmark = pytest.mark.nats

STREAM = "TEST_RETENTION"
SUBJECT = "test.retention.>"


@contextlib.asynccontextmanager
async def fresh_stream(nats_url: str, limits: StreamLimits) -> AsyncIterator[JetStreamContext]:
    """A JetStream context with ``STREAM`` made anew within ``limits``, deleted after."""
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    with contextlib.suppress(NotFoundError):
        await js.delete_stream(STREAM)
    assert await ensure_stream(js, stream_config(STREAM, SUBJECT, 1.0, limits)) is None
    try:
        yield js
    finally:
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(STREAM)
        await nc.close()


async def publish(js: JetStreamContext, count: int, size: int = 100) -> int:
    """Publish ``count`` messages of ``size`` bytes; the last one's sequence."""
    seq = 0
    for _ in range(count):
        seq = (await js.publish("test.retention.x", b"x" * size, stream=STREAM)).seq
    return seq


def test_a_position_behind_a_size_capped_stream_is_caught(nats_url: str) -> None:
    async def scenario() -> None:
        async with fresh_stream(nats_url, StreamLimits(max_bytes=2000)) as js:
            await publish(js, 5)
            durable = ConsumerConfig(
                durable_name="slow", ack_policy=AckPolicy.ALL, deliver_policy=DeliverPolicy.ALL
            )
            await js.add_consumer(STREAM, durable)
            await js.add_consumer(
                STREAM, ConsumerConfig(**{**durable.as_dict(), "durable_name": "late"})
            )
            sub = await js.pull_subscribe_bind("slow", stream=STREAM)
            taken = await sub.fetch(2)
            await taken[-1].ack_sync()  # "slow" has done 1..2
            last = await publish(js, 40)  # ~5 KB through a 2 KB cap: the head moves on
            first = await first_seq(js, STREAM)
            assert 7 < first <= last

            # A stored position (a checkpoint at 2): 3..first-1 are gone.
            with pytest.raises(RetentionError) as lost:
                await check_position(js, STREAM, 2, "checkpoint ck")
            assert str(lost.value) == (
                f"{STREAM}: messages 3..{first - 1} were dropped before checkpoint ck read "
                f"them (checkpoint ck is at seq 2, {STREAM} now starts at seq {first}; its "
                "limits: max bytes 2000, 1 replica): reading on would skip them; see "
                "docs/operations.md to size the limits and to recover"
            )
            # The durable consumer, before it delivers again: it has done 1..2.
            with pytest.raises(RetentionError, match=rf"messages 3\.\.{first - 1} were dropped"):
                await check_consumer(js, STREAM, "slow")
            # A consumer that never delivered started at 1: everything before first is lost.
            with pytest.raises(
                RetentionError, match=rf"messages 1\.\.{first - 1} .* consumer late"
            ):
                await check_consumer(js, STREAM, "late")
            # Readers at the head, or past what was dropped, are fine.
            assert await check_position(js, STREAM, first - 1, "reader") == first
            assert await check_position(js, STREAM, last, "reader") == first
            # What the check guards against: the server delivers the first message
            # still there, as if the ones between had never been.
            (next_msg,) = await sub.fetch(1)
            assert next_msg.metadata.sequence.stream == first

    run(scenario())


def test_a_position_behind_an_expired_stream_is_caught(nats_url: str) -> None:
    async def scenario() -> None:
        async with fresh_stream(nats_url, StreamLimits(max_age_s=0.5)) as js:
            last = await publish(js, 3)

            async def expired() -> bool:
                return (await js.stream_info(STREAM)).state.messages == 0

            await wait_until(expired, "the messages to expire", timeout_s=10)
            # Empty: the next message will be last + 1; a reader at last lost nothing.
            assert await first_seq(js, STREAM) == last + 1
            assert await check_position(js, STREAM, last, "reader") == last + 1
            with pytest.raises(RetentionError) as lost:
                await check_position(js, STREAM, 1, "consumer c")
            assert f"messages 2..{last} were dropped before consumer c" in str(lost.value)
            assert "its limits: max age 0.5 s, 1 replica" in str(lost.value)

    run(scenario())


def test_a_purge_is_named_as_such(nats_url: str) -> None:
    async def scenario() -> None:
        async with fresh_stream(nats_url, StreamLimits()) as js:
            await publish(js, 4)
            assert await check_position(js, STREAM, 0, "reader") == 1  # nothing dropped
            await js.purge_stream(STREAM)
            with pytest.raises(
                RetentionError, match=r"messages 1\.\.4 .*it has no limits: it was purged"
            ):
                await check_position(js, STREAM, 0, "reader")

    run(scenario())


def test_the_in_order_reader_stops_where_its_stream_dropped_what_it_had_not_read(
    nats_url: str,
) -> None:
    async def scenario() -> None:
        async with fresh_stream(nats_url, StreamLimits(max_bytes=2000)) as js:
            await publish(js, 5)
            await js.delete_msg(STREAM, 3)  # deleted on purpose: skipped
            consumer = ConsumerConfig(
                durable_name="reader", ack_policy=AckPolicy.ALL, deliver_policy=DeliverPolicy.ALL
            )
            await js.add_consumer(STREAM, consumer)
            # nats-py's fetch keeps no pull request open, so nothing is delivered
            # while the messages below are published and the head moves on.
            sub = await js.pull_subscribe_bind("reader", stream=STREAM)
            reader = InOrderReader(js, STREAM, sub, position=0, fetch_timeout_s=2)
            fresh, stale = await reader.next()
            assert [item.seq for item in fresh] == [1, 2, 4, 5] and not stale
            await ack_last(deliveries(fresh, stale))
            last = await publish(js, 40)
            first = await first_seq(js, STREAM)
            assert 6 < first <= last
            with pytest.raises(RetentionError) as lost:
                await reader.next()
            assert str(lost.value).startswith(
                f"{STREAM}: messages 6..{first - 1} were dropped before this service read "
                f"them (this service is at seq 5, {STREAM} now starts at seq {first}; "
            )
            assert reader.position == 5

    run(scenario())


def test_a_consumer_made_after_a_drop_has_lost_nothing(nats_url: str) -> None:
    async def scenario() -> None:
        async with fresh_stream(nats_url, StreamLimits(max_bytes=2000)) as js:
            await publish(js, 40)
            first = await first_seq(js, STREAM)
            assert first > 1
            consumer = ConsumerConfig(
                durable_name="new", ack_policy=AckPolicy.ALL, deliver_policy=DeliverPolicy.ALL
            )
            await js.add_consumer(STREAM, consumer)
            # It starts at the stream's first message: nothing it was meant to read is gone.
            assert await check_consumer(js, STREAM, "new") == first - 1

    run(scenario())


def test_every_stream_is_created_within_the_limits(bus: tuple[str, str]) -> None:
    nats_url, _ = bus
    # Half a second: shorter than every duplicate window, which must shrink to it.
    limits = StreamLimits(max_age_s=0.5, max_bytes=1 << 20)
    names = BUS_STREAMS

    async def delete(js: JetStreamContext) -> None:
        for name in names:
            with contextlib.suppress(NotFoundError):
                await js.delete_stream(name)

    async def scenario() -> None:
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        try:
            await delete(js)
            await ensure_streams(js, limits=limits)
            await ensure_ctl_streams(js, limits)
            await ensure_record_stream(js, limits)
            for name in names:
                config = (await js.stream_info(name)).config
                assert (config.max_age, config.max_bytes) == (0.5, 1 << 20), name
                assert config.duplicate_window == 0.5, name
        finally:  # other tests' services would create them anew, without limits
            await delete(js)
            await nc.close()

    run(scenario())


def test_an_existing_stream_is_left_as_its_operator_made_it(
    nats_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with fresh_stream(nats_url, StreamLimits(max_bytes=4096)) as js:
            caplog.set_level(logging.INFO, logger="xce_kit.streams")
            asked = stream_config(STREAM, SUBJECT, 1.0, StreamLimits(max_age_s=60))
            info = await ensure_stream(js, asked)
            assert info is not None and info.config.max_bytes == 4096 and not info.config.max_age
            assert (await js.stream_info(STREAM)).config.max_bytes == 4096
            assert (
                f"stream {STREAM} exists with max bytes 4096, 1 replica; left as it is "
                "(not max age 60 s, 1 replica)"
            ) in caplog.messages

    run(scenario())


@pytest.mark.parametrize(
    "limits, reason",
    [
        (StreamLimits(max_bytes=1 << 60), "insufficient storage resources available"),
        (StreamLimits(replicas=3), "replicas > 1 not supported in non-clustered mode"),
    ],
    ids=["more bytes than the store has", "three replicas on a lone server"],
)
def test_a_stream_the_server_refuses_is_one_line_naming_it(
    nats_url: str, limits: StreamLimits, reason: str
) -> None:
    async def scenario() -> None:
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        try:
            with pytest.raises(StreamRefused) as refused:
                await ensure_stream(js, stream_config(STREAM, SUBJECT, 1.0, limits))
        finally:
            await nc.close()
        assert str(refused.value) == f"stream {STREAM} ({limits}) cannot be created: {reason}"

    run(scenario())


# --- the readers that must check, each stopping where the limits dropped its input ----

#: A cap a few dozen 100-byte messages overflow.
TINY = StreamLimits(max_bytes=2000)


async def publish_to(js: JetStreamContext, subject: str, stream: str, count: int) -> int:
    """Publish ``count`` 100-byte messages on ``subject``; the last one's sequence."""
    seq = 0
    for _ in range(count):
        seq = (await js.publish(subject, b"x" * 100, stream=stream)).seq
    return seq


def test_the_core_stops_at_an_event_dropped_before_it_read_it_and_skips_a_deleted_one(
    bus: tuple[str, str],
) -> None:
    """``EventConsumer.read`` (an event whose delivery came late, read from the
    stream): one deleted on purpose is skipped; one the limits dropped stops the
    service (its ``run`` raises, ``run_service`` exits 2 with the line)."""
    nats_url, redis_url = bus

    async def scenario() -> tuple[int, RetentionError]:
        nc = await nats.connect(nats_url)
        try:
            js = nc.jetstream()
            await ensure_streams(js, limits=TINY)
            await publish_to(js, "xce.events.TEST", EVENTS_STREAM, 40)
            first = await first_seq(js, EVENTS_STREAM)
            await js.delete_msg(EVENTS_STREAM, first + 1)
            options = CoreServiceOptions(nats_url=nats_url, redis_url=redis_url)
            consumer = EventConsumer(nc, options, asyncio.sleep)
            assert await consumer.read(first + 1) is None  # deleted: skipped
            stored = await consumer.read(first)
            assert stored is not None and stored.seq == first
            with pytest.raises(RetentionError) as lost:
                await consumer.read(first - 1)
            return first, lost.value
        finally:
            await nc.close()

    first, lost = run(scenario())
    assert str(lost).startswith(
        f"XCE_EVENTS: messages {first - 1}..{first - 1} were dropped before consumer "
        f"xce-core read them (consumer xce-core is at seq {first - 2}, XCE_EVENTS now "
        f"starts at seq {first}; its limits: max bytes 2000, 1 replica)"
    )


def test_the_bridge_will_not_start_past_messages_its_streams_dropped(bus: tuple[str, str]) -> None:
    """The bridge's consumers at start: ``XCE_DECISIONS`` past the decisions it
    forwarded, ``XCE_CONTROLLER`` past the controller position it goes on from."""
    nats_url, _ = bus
    options = BridgeOptions(nats_url=nats_url)

    async def scenario() -> None:
        nc = await nats.connect(nats_url)
        try:
            js = nc.jetstream()
            await ensure_streams(js, limits=TINY)
            await ensure_ctl_streams(js, TINY)
            # XCE_DECISIONS: a new consumer starts from the first decision there.
            await publish_to(js, "xce.decisions.TEST", DECISIONS_STREAM, 5)
            assert await decisions_consumer(js, "xce-bridge") == 0
            sub = await js.pull_subscribe_bind("xce-bridge", stream=DECISIONS_STREAM)
            await (await sub.fetch(2))[-1].ack_sync()
            assert await decisions_consumer(js, "xce-bridge") == 2
            await publish_to(js, "xce.decisions.TEST", DECISIONS_STREAM, 40)
            with pytest.raises(RetentionError, match=r"messages 3\.\.\d+ were dropped before "):
                await decisions_consumer(js, "xce-bridge")
            # XCE_CONTROLLER: XCE_EVENTS says messages up to 2 are events already.
            last = await publish_to(js, "xce.ctl.test", CTL_STREAM, 40)
            stream = await js.stream_info(CTL_STREAM)
            with pytest.raises(RetentionError, match="consumer xce-bridge-ctl is at seq 2"):
                await ctl_consumer(js, options, stream, 2)
            first = await first_seq(js, CTL_STREAM)
            assert await ctl_consumer(js, options, stream, first - 1) == first - 1
            assert await ctl_consumer(js, options, stream, last) == last  # made: kept
        finally:
            await nc.close()

    run(scenario())


def test_the_emulator_will_not_read_on_behind_what_its_stream_dropped(
    bus: tuple[str, str],
) -> None:
    """The live emulator's consumers (here of ``XCE_CTL_DECISIONS``) start at the
    stream's end; one made again (a NATS restart keeps it) must not be behind."""
    nats_url, _ = bus
    config = SchedulerConfig(queues=(QueueSpec(name="normal", priority=30),))
    emulator = LiveEmulator([], [HostSpec(name="h1", slots=1)], config, nats_url=nats_url, speed=1)

    async def scenario() -> None:
        subject, durable = "xce.ctl.decisions.TEST", "emulator-test"
        first_nc = await nats.connect(nats_url)
        emulator._nc = first_nc  # what its run() connects first
        js = first_nc.jetstream()
        await ensure_ctl_streams(js, TINY)
        await publish_to(js, subject, CTL_DECISIONS_STREAM, 3)  # an earlier run's
        reader = await emulator._reader(js, CTL_DECISIONS_STREAM, durable)
        assert reader.position == 3
        await publish_to(js, subject, CTL_DECISIONS_STREAM, 5)
        fresh, stale = await reader.next()
        while fresh and fresh[-1].seq < 8:  # a pull may hand over part of what is there
            more, stale = await reader.next()
            fresh += more
        assert [item.seq for item in fresh] == [4, 5, 6, 7, 8]
        await ack_last(deliveries(fresh, stale))
        await first_nc.close()  # cut off: its pull request goes with the connection
        nc = await nats.connect(nats_url)
        emulator._nc = nc
        try:
            js = nc.jetstream()
            await publish_to(js, subject, CTL_DECISIONS_STREAM, 40)
            with pytest.raises(RetentionError, match=f"before consumer {durable} read them"):
                await emulator._reader(js, CTL_DECISIONS_STREAM, durable)
        finally:
            await nc.close()

    run(scenario())


async def publish_lines(js: JetStreamContext, rid: str, numbers: range) -> None:
    """Publish lines ``numbers`` of recording ``rid`` as the core does (100 bytes
    each, one line per event)."""
    for number in numbers:
        headers = {
            MSG_ID_HEADER: record_msg_id(rid, number),
            RECORD_SEQ_HEADER: str(number + 1),
            RECORD_TYPE_HEADER: "BEGIN_ROUND",
            RECORD_LAST_HEADER: "1",
        }
        await js.publish(record_subject(rid), b"x" * 100, stream=RECORD_STREAM, headers=headers)


async def fresh_record_stream(js: JetStreamContext) -> None:
    with contextlib.suppress(NotFoundError):
        await js.delete_stream(RECORD_STREAM)
    await ensure_record_stream(js, TINY)


def test_a_recording_whose_lines_were_dropped_stops_with_the_reason(
    bus: tuple[str, str], tmp_path: Path
) -> None:
    """The recorder's cursor finds lines missing; the stream's limits dropped them
    before it read them: no gap accepted, the recording stops and is exported with
    the reason as its last error."""
    nats_url, redis_url = bus
    rid = "rec_jsonl-0123456789ab"

    async def cursor_alone() -> None:
        nc = await nats.connect(nats_url)
        try:
            js = nc.jetstream()
            await fresh_record_stream(js)
            await publish_lines(js, rid, range(5))
            cursor = RecordCursor(js, rid, 1)
            assert [line.number for line in await cursor.fetch(2, 2.0)] == [0, 1]
            await publish_lines(js, rid, range(5, 45))
            with pytest.raises(RetentionError, match=f"before recording {rid} read them"):
                for _ in range(3):  # the first finds the jump and reads again
                    await cursor.fetch(10, 2.0)
            await cursor.close()
        finally:
            await nc.close()

    run(cursor_alone())

    async def in_the_recorder() -> RecorderStatus:
        options = RecorderOptions(
            nats_url=nats_url, redis_url=redis_url, recordings_dir=tmp_path, poll_s=0.05
        )
        recorder = RecorderService(options)
        task = asyncio.create_task(recorder.run())
        try:

            async def running() -> bool:
                return recorder._js is not None and recorder._store is not None

            await wait_until(running, "the recorder to connect")
            assert recorder._js is not None
            await fresh_record_stream(recorder._js)
            await publish_lines(recorder._js, rid, range(45))  # lines 0.. dropped
            # A recording on, as start_session leaves it (the core is not needed here).
            cursor = RecordCursor(recorder._js, rid, 1)
            name = "rec.jsonl"
            session = Session(name, recording_key(name), rid, 1, "", cursor, seq=1)
            recorder._session = session
            recorder._wake.set()

            async def stopped() -> bool:
                return recorder._session is None and recorder.status.state == "idle"

            await wait_until(stopped, "the recording to stop")
            return recorder.status
        finally:
            recorder.stop()
            await task

    status = run(in_the_recorder())
    assert status.last_error is not None
    assert status.last_error.startswith("recording rec.jsonl stopped: XCE_RECORD: messages 1..")
    assert f"were dropped before recording {rid} read them" in status.last_error
