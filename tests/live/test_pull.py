"""``PullConsumer`` against a real JetStream: stream order, at most a batch per fetch,
a message that arrives while a fetch waits, a fetch after an expired request, a
request the server never answers, a consumer that is missing or deleted, a closed client, and one acknowledgement (policy
ALL) for a whole batch."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator

import nats
import nats.errors
import pytest
from nats.aio.client import Client as NatsClient
from nats.errors import ConnectionClosedError
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from nats.js.errors import NotFoundError
from xce_kit.pull import PullConsumer, _Request

from tests.live.helpers import run

pytestmark = pytest.mark.nats

DURABLE = "puller"


@contextlib.asynccontextmanager
async def new_stream(nats_url: str) -> AsyncIterator[tuple[NatsClient, str, str]]:
    """A connection, a stream of its own (``(nc, stream, subject)``) and on it the
    durable consumer ``DURABLE`` (acknowledgement policy ALL); the stream is deleted
    at the end (through a new connection if the test closed this one)."""
    tag = uuid.uuid4().hex[:10]
    stream, subject = f"TEST_PULL_{tag.upper()}", f"test.pull.{tag}"
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name=stream, subjects=[f"{subject}.>"]))
    await js.add_consumer(
        stream,
        ConsumerConfig(durable_name=DURABLE, ack_policy=AckPolicy.ALL, max_ack_pending=10_000),
    )
    try:
        yield nc, stream, f"{subject}.x"
    finally:
        if nc.is_closed:
            nc = await nats.connect(nats_url)
        with contextlib.suppress(NotFoundError):
            await nc.jetstream().delete_stream(stream)
        await nc.close()


async def publish(nc: NatsClient, subject: str, count: int, start: int = 0) -> None:
    js = nc.jetstream()
    for i in range(start, start + count):
        await js.publish(subject, str(i).encode())


async def seconds_to_time_out(nats_url: str, durable: str, timeout: float) -> float:
    """How long a fetch (``timeout`` s) through ``durable`` on a new, empty stream
    takes to raise ``TimeoutError`` (it must raise it, within 10 s)."""
    async with new_stream(nats_url) as (nc, stream, _):
        consumer = await PullConsumer.bind(nc, stream, durable)
        began = time.monotonic()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(consumer.fetch(10, timeout=timeout), 10)
        elapsed = time.monotonic() - began
        await consumer.unsubscribe()
    return elapsed


def test_fetches_return_the_stream_in_order_at_most_a_batch_each_every_message_once(
    nats_url: str,
) -> None:
    """1,000 messages through batches of 256: stream sequences 1..1000 in order, none
    twice, no fetch longer than the batch, and nothing more afterwards."""

    async def go() -> tuple[list[int], list[int], list[bytes]]:
        async with new_stream(nats_url) as (nc, stream, subject):
            await publish(nc, subject, 1000)
            consumer = await PullConsumer.bind(nc, stream, DURABLE)
            sizes: list[int] = []
            seqs: list[int] = []
            data: list[bytes] = []
            while len(seqs) < 1000 and len(sizes) < 200:
                msgs = await consumer.fetch(256, timeout=2)
                sizes.append(len(msgs))
                seqs.extend(msg.metadata.sequence.stream for msg in msgs)
                data.extend(msg.data for msg in msgs)
                await asyncio.sleep(0.05)  # the next request's deliveries arrive meanwhile
            with pytest.raises(TimeoutError):
                await consumer.fetch(256, timeout=0.3)
            await consumer.unsubscribe()
        return sizes, seqs, data

    sizes, seqs, data = run(go())
    assert seqs == list(range(1, 1001))
    assert data == [str(i).encode() for i in range(1000)]
    assert all(1 <= size <= 256 for size in sizes), sizes
    assert max(sizes) == 256


def test_a_fetch_with_a_smaller_batch_takes_at_most_that_many_and_leaves_the_rest(
    nats_url: str,
) -> None:
    """Deliveries of a 256-message request wait for later fetches of 1 and of 50:
    each takes at most its own batch, the rest stays, in order, for the next."""

    async def go() -> tuple[list[int], list[int]]:
        async with new_stream(nats_url) as (nc, stream, subject):
            await publish(nc, subject, 300)
            consumer = await PullConsumer.bind(nc, stream, DURABLE)
            seqs = [msg.metadata.sequence.stream for msg in await consumer.fetch(256, timeout=2)]
            await asyncio.sleep(0.3)  # the rest of the open request's deliveries arrive
            sizes: list[int] = []
            for batch in (1, *[50] * 20):
                if len(seqs) >= 300:
                    break
                msgs = await consumer.fetch(batch, timeout=2)
                sizes.append(len(msgs))
                seqs.extend(msg.metadata.sequence.stream for msg in msgs)
            await consumer.unsubscribe()
        return sizes, seqs

    sizes, seqs = run(go())
    assert seqs == list(range(1, 301))
    assert sizes[0] == 1
    assert all(1 <= size <= 50 for size in sizes[1:]), sizes


def test_a_fetch_on_an_empty_stream_raises_timeout_error(nats_url: str) -> None:
    """Nothing to deliver: ``TimeoutError`` once the timeout (0.3 s) has passed."""

    assert 0.2 < run(seconds_to_time_out(nats_url, DURABLE, 0.3)) < 5


def test_a_message_published_while_a_fetch_waits_is_returned_by_that_fetch(
    nats_url: str,
) -> None:
    """The open request delivers a message published 0.2 s into a 5 s fetch."""

    async def go() -> tuple[list[tuple[int, bytes]], float]:
        async with new_stream(nats_url) as (nc, stream, subject):
            consumer = await PullConsumer.bind(nc, stream, DURABLE)
            began = time.monotonic()
            fetching = asyncio.create_task(consumer.fetch(10, timeout=5))
            await asyncio.sleep(0.2)
            assert not fetching.done()
            await publish(nc, subject, 1, start=42)
            msgs = await asyncio.wait_for(fetching, 10)
            elapsed = time.monotonic() - began
            await consumer.unsubscribe()
        return [(msg.metadata.sequence.stream, msg.data) for msg in msgs], elapsed

    got, elapsed = run(go())
    assert got == [(1, b"42")]
    assert elapsed < 4


def test_after_a_request_expired_later_messages_are_still_fetched(nats_url: str) -> None:
    """A fetch that timed out leaves no request open; the next fetch opens one."""

    async def go() -> list[int]:
        async with new_stream(nats_url) as (nc, stream, subject):
            consumer = await PullConsumer.bind(nc, stream, DURABLE)
            with pytest.raises(TimeoutError):
                await consumer.fetch(10, timeout=0.3)
            await asyncio.sleep(0.1)
            await publish(nc, subject, 3)
            seqs: list[int] = []
            for _ in range(3):
                msgs = await asyncio.wait_for(consumer.fetch(10, timeout=5), 10)
                seqs.extend(msg.metadata.sequence.stream for msg in msgs)
                if len(seqs) >= 3:
                    break
            await consumer.unsubscribe()
        return seqs

    assert run(go()) == [1, 2, 3]


def test_a_fetch_waits_its_own_timeout_even_when_the_open_request_ends_sooner(
    nats_url: str,
) -> None:
    """A fetch (0.5 s) returns and leaves a request open that expires 0.5 s later;
    0.3 s on, a fetch with a 5 s timeout still gets a message published 1 s into it
    ("nothing arrived within ``timeout``" is the only ``TimeoutError``)."""

    async def go() -> list[bytes]:
        async with new_stream(nats_url) as (nc, stream, subject):
            consumer = await PullConsumer.bind(nc, stream, DURABLE)
            await publish(nc, subject, 1)
            assert len(await consumer.fetch(10, timeout=0.5)) == 1  # and opens a request
            await asyncio.sleep(0.3)  # handling that batch
            fetching = asyncio.create_task(consumer.fetch(10, timeout=5))
            await asyncio.sleep(1)
            await publish(nc, subject, 1, start=1)
            msgs = await asyncio.wait_for(fetching, 10)
            await consumer.unsubscribe()
        return [msg.data for msg in msgs]

    assert run(go()) == [b"1"]


def test_a_request_the_server_never_answers_is_over_soon_after_its_expiry(
    nats_url: str,
) -> None:
    """nats-server does not always answer a request that expires (and never one lost
    with a restarted server): an open request that got no answer is over shortly
    after its expiry, and the next one fetches what the stream holds within the
    fetch's timeout instead of stalling (it waited a second more)."""

    async def go() -> list[bytes]:
        async with new_stream(nats_url) as (nc, stream, subject):
            consumer = await PullConsumer.bind(nc, stream, DURABLE)
            # As if the server had dropped the open request without a word: this one
            # was never even sent, so no message and no status will come for it.
            unanswered = f"{nc.new_inbox()}.dropped"
            consumer._request = _Request(unanswered, 10, time.monotonic() + 0.2)
            await publish(nc, subject, 2)
            msgs = await consumer.fetch(10, timeout=0.8)
            await consumer.unsubscribe()
        return [msg.data for msg in msgs]

    assert run(go()) == [b"0", b"1"]


@pytest.mark.parametrize("when", ["while_a_fetch_waits", "between_fetches"])
def test_a_fetch_from_a_deleted_consumer_raises_a_nats_error(nats_url: str, when: str) -> None:
    """The server answers the open request of a deleted consumer with ``409 Consumer
    Deleted``: the fetch waiting on it, or the next one, raises that error."""

    async def go() -> None:
        async with new_stream(nats_url) as (nc, stream, subject):
            consumer = await PullConsumer.bind(nc, stream, DURABLE)
            if when == "between_fetches":
                await publish(nc, subject, 1)
                assert len(await consumer.fetch(10, timeout=5)) == 1  # and opens a request
                await nc.jetstream().delete_consumer(stream, DURABLE)
                await asyncio.sleep(0.3)
                fetching = asyncio.create_task(consumer.fetch(10, timeout=2))
            else:
                fetching = asyncio.create_task(consumer.fetch(10, timeout=2))
                await asyncio.sleep(0.3)
                await nc.jetstream().delete_consumer(stream, DURABLE)
            with pytest.raises(nats.errors.Error):
                await asyncio.wait_for(fetching, 10)
            await consumer.unsubscribe()

    run(go())


def test_a_fetch_for_a_consumer_that_does_not_exist_times_out_instead_of_hanging(
    nats_url: str,
) -> None:
    """The server (2.9) answers a pull request for a consumer it does not have with
    nothing at all, not even "no responders": the fetch raises ``TimeoutError``
    after its timeout, like an empty stream, and does not hang."""

    # The fetch's own timeout, not wait_for's.
    assert run(seconds_to_time_out(nats_url, "no_such_consumer", 0.5)) < 5


def test_a_fetch_after_the_client_is_closed_raises_connection_closed(nats_url: str) -> None:
    """Nothing left to hand over and the client closed for good: the fetch says so
    at once instead of waiting."""

    async def go() -> None:
        async with new_stream(nats_url) as (nc, stream, subject):
            consumer = await PullConsumer.bind(nc, stream, DURABLE)
            await publish(nc, subject, 1)
            assert len(await consumer.fetch(10, timeout=5)) == 1
            await nc.close()
            with pytest.raises(ConnectionClosedError):
                await asyncio.wait_for(consumer.fetch(10, timeout=5), 1)

    run(go())


def test_acknowledging_the_last_of_a_batch_acknowledges_the_whole_batch(nats_url: str) -> None:
    """Policy ALL: one ``ack`` of the last message fetched moves the consumer's ack
    floor to that message, over every message before it."""

    async def go() -> tuple[int, int, int]:
        async with new_stream(nats_url) as (nc, stream, subject):
            await publish(nc, subject, 50)
            consumer = await PullConsumer.bind(nc, stream, DURABLE)
            fetched = []
            while len(fetched) < 20:
                fetched.extend(await consumer.fetch(20, timeout=5))
            last = fetched[-1]
            await last.ack()
            js = nc.jetstream()
            deadline = time.monotonic() + 5
            info = await js.consumer_info(stream, DURABLE)
            while info.ack_floor.stream_seq != last.metadata.sequence.stream:
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
                info = await js.consumer_info(stream, DURABLE)
            await consumer.unsubscribe()
        return last.metadata.sequence.stream, info.ack_floor.stream_seq, info.ack_floor.consumer_seq

    last_seq, floor_stream, floor_consumer = run(go())
    assert last_seq >= 20
    assert floor_stream == last_seq
    assert floor_consumer == last_seq  # delivered once each, in stream order
