"""The in-memory bus behaves as JetStream where the services depend on it: each
assertion here runs against ``xce_kit.memory_bus.MemoryBus`` and against a real
nats-server (the ``nats`` case), so the fake cannot drift from the real thing
unnoticed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamConfig
from nats.js.errors import APIError, NoStreamResponseError, NotFoundError
from xce_kit.auth import nats_credentials
from xce_kit.memory_bus import MemoryBus
from xce_kit.publisher import ChainedPublisher, Outgoing, scan_tail
from xce_kit.pull import PullConsumer, stream_seq
from xce_kit.reader import InOrderReader, consumer_position

Connect = Callable[[], Awaitable[NatsClient]]


@pytest.fixture(params=["memory", pytest.param("nats", marks=pytest.mark.nats)])
def connect(request: pytest.FixtureRequest) -> Connect:
    """Makes a client of the bus under test (every client of one test shares it)."""
    if request.param == "memory":
        bus = MemoryBus()
        return lambda: bus.connect("memory://", "contract", logging.getLogger(__name__))
    url = request.getfixturevalue("nats_url")
    return lambda: nats.connect(url, **nats_credentials().connect_options())


@contextlib.asynccontextmanager
async def stream(connect: Connect) -> AsyncIterator[tuple[NatsClient, JetStreamContext, str]]:
    """A fresh stream ``S<hex>`` capturing ``<name>.>`` (deleted at the end)."""
    nc = await connect()
    js = nc.jetstream()
    name = f"S{uuid.uuid4().hex[:10]}"
    await js.add_stream(StreamConfig(name=name, subjects=[f"{name}.>"], duplicate_window=60))
    try:
        yield nc, js, name
    finally:
        await js.delete_stream(name)
        await nc.close()


def run(
    connect: Connect, body: Callable[[NatsClient, JetStreamContext, str], Awaitable[None]]
) -> None:
    async def main() -> None:
        async with stream(connect) as (nc, js, name):
            await body(nc, js, name)

    asyncio.run(main())


def test_publishes_are_numbered_and_a_subject_no_stream_takes_is_refused(connect: Connect) -> None:
    async def body(nc: NatsClient, js: JetStreamContext, name: str) -> None:
        first = await js.publish(f"{name}.a.b", b"1")
        second = await js.publish(f"{name}.c", b"2", headers={"X-Tag": "t"})
        assert (first.stream, first.seq, second.seq) == (name, 1, 2)
        assert not first.duplicate
        with pytest.raises(NoStreamResponseError):
            await js.publish(f"nowhere{name}.x", b"3")
        state = (await js.stream_info(name)).state
        assert (state.messages, state.first_seq, state.last_seq) == (2, 1, 2)
        got = await js.get_msg(name, seq=2)
        assert (got.subject, got.seq, got.data) == (f"{name}.c", 2, b"2")
        assert (got.headers or {}).get("X-Tag") == "t"
        last = await js.get_last_msg(name, f"{name}.a.b")
        assert last.seq == 1
        with pytest.raises(NotFoundError):
            await js.get_msg(name, seq=3)
        with pytest.raises(NotFoundError):
            await js.stream_info(f"N{name}")

    run(connect, body)


def test_a_message_id_is_stored_once_within_the_window(connect: Connect) -> None:
    async def body(nc: NatsClient, js: JetStreamContext, name: str) -> None:
        first = await js.publish(f"{name}.a", b"1", headers={"Nats-Msg-Id": "m1"})
        again = await js.publish(f"{name}.a", b"other", headers={"Nats-Msg-Id": "m1"})
        assert again.duplicate and again.seq == first.seq
        assert (await js.stream_info(name)).state.messages == 1

    run(connect, body)


def test_the_expected_last_preconditions_refuse_with_jetstreams_codes(connect: Connect) -> None:
    async def body(nc: NatsClient, js: JetStreamContext, name: str) -> None:
        await js.publish(f"{name}.a", b"1", headers={"Nats-Msg-Id": "m1"})
        with pytest.raises(APIError) as wrong_seq:
            await js.publish(f"{name}.a", b"2", headers={"Nats-Expected-Last-Sequence": "5"})
        assert wrong_seq.value.err_code == 10071
        with pytest.raises(APIError) as wrong_id:
            await js.publish(f"{name}.a", b"2", headers={"Nats-Expected-Last-Msg-Id": "m0"})
        assert wrong_id.value.err_code == 10070
        with pytest.raises(APIError) as wrong_stream:
            await js.publish(f"{name}.a", b"2", stream=f"N{name}")
        assert wrong_stream.value.err_code == 10060
        ok = await js.publish(
            f"{name}.a",
            b"2",
            headers={"Nats-Expected-Last-Sequence": "1", "Nats-Msg-Id": "m2"},
        )
        chained = await js.publish(
            f"{name}.a", b"3", headers={"Nats-Expected-Last-Msg-Id": "m2", "Nats-Msg-Id": "m3"}
        )
        assert (ok.seq, chained.seq) == (2, 3)
        # A duplicate is acknowledged before the order check.
        copy = await js.publish(
            f"{name}.a", b"2", headers={"Nats-Msg-Id": "m2", "Nats-Expected-Last-Sequence": "1"}
        )
        assert copy.duplicate and copy.seq == 2

    run(connect, body)


def test_deleted_messages_are_skipped_and_scan_tail_goes_past_them(connect: Connect) -> None:
    async def body(nc: NatsClient, js: JetStreamContext, name: str) -> None:
        for n in range(1, 5):
            await js.publish(f"{name}.a", b"x", headers={"Nats-Msg-Id": f"own:{n}"})
        await js.publish(f"{name}.a", b"foreign")
        await js.delete_msg(name, 4)
        await js.delete_msg(name, 1)
        state = (await js.stream_info(name)).state
        assert (state.messages, state.first_seq, state.last_seq) == (3, 2, 5)
        with pytest.raises(NotFoundError):
            await js.get_msg(name, seq=4)
        tail = await scan_tail(js, name, lambda msg_id: msg_id.startswith("own:"))
        assert tail.found is not None and tail.found.seq == 3
        assert (tail.foreign, tail.last_seq, tail.complete) == (1, 5, True)

    run(connect, body)


def test_a_pull_consumer_delivers_in_order_and_keeps_its_positions(connect: Connect) -> None:
    async def body(nc: NatsClient, js: JetStreamContext, name: str) -> None:
        for n in range(1, 6):
            await js.publish(f"{name}.a", str(n).encode())
        config = ConsumerConfig(
            durable_name="c",
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=2,
            ack_policy=AckPolicy.ALL,
            ack_wait=30,
        )
        await js.add_consumer(name, config)
        info = await js.consumer_info(name, "c")
        assert (info.delivered.stream_seq, info.ack_floor.stream_seq) == (1, 0)
        sub = await PullConsumer.bind(nc, name, "c")
        got = []
        while len(got) < 4:
            got.extend(await sub.fetch(3, timeout=2))
        assert [stream_seq(m) for m in got] == [2, 3, 4, 5]
        assert [m.data for m in got] == [b"2", b"3", b"4", b"5"]
        assert got[0].subject == f"{name}.a" and got[0].metadata.num_pending == 3
        await got[2].ack()  # AckPolicy.ALL: covers 2..4
        await nc.flush()
        info = await js.consumer_info(name, "c")
        assert (info.delivered.stream_seq, info.ack_floor.stream_seq) == (5, 4)
        assert info.num_ack_pending == 1
        with pytest.raises(TimeoutError):
            await sub.fetch(3, timeout=0.3)
        await js.publish(f"{name}.b", b"6")
        assert [stream_seq(m) for m in await sub.fetch(3, timeout=2)] == [6]
        await sub.unsubscribe()
        await js.delete_consumer(name, "c")
        with pytest.raises(NotFoundError):
            await js.consumer_info(name, "c")

    run(connect, body)


def test_a_new_consumer_starts_at_the_streams_end(connect: Connect) -> None:
    async def body(nc: NatsClient, js: JetStreamContext, name: str) -> None:
        for _ in range(3):
            await js.publish(f"{name}.a", b"x")
        config = ConsumerConfig(
            durable_name="n", deliver_policy=DeliverPolicy.NEW, ack_policy=AckPolicy.ALL
        )
        info = await js.add_consumer(name, config)
        assert (info.delivered.stream_seq, info.ack_floor.stream_seq) == (3, 0)
        assert consumer_position(info, await js.stream_info(name)) == 3

    run(connect, body)


def test_chained_publisher_and_in_order_reader_round_trip(connect: Connect) -> None:
    async def body(nc: NatsClient, js: JetStreamContext, name: str) -> None:
        await js.publish(f"{name}.other", b"foreign")
        publisher = ChainedPublisher(nc, name, ack_timeout_s=2, window=3)
        items = [Outgoing(f"{name}.a", str(n).encode(), f"p:{n}") for n in range(7)]
        stored: list[str] = []
        assert await publisher.publish(items, lambda item: stored.append(item.msg_id)) == 7
        assert stored == [item.msg_id for item in items]
        # Sent again (a restart): every one is a duplicate, nothing stored twice.
        assert await ChainedPublisher(nc, name, ack_timeout_s=2).publish(items, lambda _: None) == 7
        assert (await js.stream_info(name)).state.last_seq == 8
        config = ConsumerConfig(
            durable_name="r", deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.ALL
        )
        await js.add_consumer(name, config)
        reader = await InOrderReader.bind(nc, name, "r", position=1, fetch_timeout_s=0.2)
        seen: list[int] = []
        while len(seen) < 7:
            fresh, _stale = await reader.next()
            seen.extend(item.seq for item in fresh)
        assert seen == list(range(2, 9))

    run(connect, body)


def test_a_filtered_pull_subscription_fetches_what_is_there(connect: Connect) -> None:
    """nats-py's own ``pull_subscribe`` (a consumer it names, a filter subject, no
    acknowledgements: the recorder's cursor) and its ``fetch`` of a batch: nothing
    there times out, what is there comes at once, a message published while it
    waits ends the wait."""

    async def body(nc: NatsClient, js: JetStreamContext, name: str) -> None:
        await js.publish(f"{name}.b", b"other")
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=1,
            ack_policy=AckPolicy.NONE,
            inactive_threshold=300,
        )
        sub = await js.pull_subscribe(f"{name}.a", stream=name, config=config)
        with pytest.raises(TimeoutError):
            await sub.fetch(5, timeout=0.3)
        await js.publish(f"{name}.a", b"1")
        await js.publish(f"{name}.b", b"other")
        await js.publish(f"{name}.a", b"2")
        got = await sub.fetch(5, timeout=2)
        assert [(m.data, m.metadata.sequence.stream) for m in got] == [(b"1", 2), (b"2", 4)]

        async def later() -> None:
            await asyncio.sleep(0.1)
            await js.publish(f"{name}.a", b"3")

        task = asyncio.create_task(later())
        assert [m.data for m in await sub.fetch(5, timeout=5)] == [b"3"]
        await task
        info = await js.consumer_info(name, sub._consumer)
        assert (info.config.filter_subject, info.num_pending, info.num_ack_pending) == (
            f"{name}.a",
            0,
            0,
        )
        await sub.unsubscribe()
        await js.delete_consumer(name, sub._consumer)
        with pytest.raises(NotFoundError):
            await js.consumer_info(name, sub._consumer)

    run(connect, body)


def test_a_request_is_answered_by_its_subscriber_or_refused_for_none(connect: Connect) -> None:
    async def body(nc: NatsClient, js: JetStreamContext, name: str) -> None:
        async def echo(msg: Msg) -> None:
            await msg.respond(b"re:" + msg.data)

        sub = await nc.subscribe(f"svc{name}.echo", cb=echo)
        assert (await nc.request(f"svc{name}.echo", b"hi", timeout=2)).data == b"re:hi"
        await sub.unsubscribe()
        await nc.flush()
        with pytest.raises(NoRespondersError):
            await nc.request(f"svc{name}.echo", b"hi", timeout=2)

    run(connect, body)
