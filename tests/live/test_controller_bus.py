"""``ChainedPublisher`` against a real JetStream: order, one acknowledgement per
window, a prefix already stored, another publisher, a message the stream refuses.
``publish_until_acked``: sent again until stored once, given up once stopping.
``InOrderReader`` through either fetcher: order, a lost delivery read from the
stream, deliveries again handed back as stale."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, RawStreamMsg, StreamConfig
from nats.js.errors import NotFoundError
from xce_kit.publisher import ChainedPublisher, Outgoing, publish_until_acked
from xce_kit.pull import PullConsumer, stream_seq
from xce_kit.reader import Fetcher, InOrderReader, ack_last, deliveries

from tests.live.helpers import Stored, read_stream, run, wait_until

STREAM = "TEST_CHAIN"


def outgoing(count: int, start: int = 0, size: int = 8) -> list[Outgoing]:
    return [
        Outgoing(f"test.chain.{i % 3}", str(i).zfill(size).encode(), f"m{i}")
        for i in range(start, start + count)
    ]


async def fresh_stream(nc: NatsClient, **config: Any) -> None:
    js = nc.jetstream()
    with contextlib.suppress(NotFoundError):
        await js.delete_stream(STREAM)
    await js.add_stream(StreamConfig(name=STREAM, subjects=["test.chain.>"], **config))


def ids_on(stored: list[Stored]) -> list[str | None]:
    return [message.msg_id for message in stored]


def test_a_batch_larger_than_the_window_is_stored_in_order_and_confirmed_in_order(
    nats_url: str,
) -> None:
    async def go() -> tuple[list[str], int, list[Stored]]:
        nc = await nats.connect(nats_url)
        await fresh_stream(nc)
        publisher = ChainedPublisher(nc, STREAM, ack_timeout_s=5, window=100)
        confirmed: list[str] = []
        put = await publisher.publish(outgoing(250), lambda item: confirmed.append(item.msg_id))
        stored = await read_stream(nc.jetstream(), STREAM)
        await nc.close()
        return confirmed, put, stored

    confirmed, put, stored = run(go())
    expected = [f"m{i}" for i in range(250)]
    assert put == 250
    assert confirmed == expected
    assert ids_on(stored) == expected
    assert [message.data for message in stored] == [str(i).zfill(8).encode() for i in range(250)]


def test_a_prefix_already_stored_is_not_stored_twice(nats_url: str) -> None:
    """As after an acknowledgement lost: the first 40 of the batch are in already."""

    async def go() -> list[Stored]:
        nc = await nats.connect(nats_url)
        await fresh_stream(nc, duplicate_window=60.0)
        batch = outgoing(100)
        await ChainedPublisher(nc, STREAM, ack_timeout_s=5).publish(batch[:40], lambda _: None)
        again = ChainedPublisher(nc, STREAM, ack_timeout_s=5, window=30)
        assert await again.publish(batch, lambda _: None) == 100
        stored = await read_stream(nc.jetstream(), STREAM)
        await nc.close()
        return stored

    assert ids_on(run(go())) == [f"m{i}" for i in range(100)]


def test_another_publisher_is_counted_and_the_batch_goes_on_after_it(nats_url: str) -> None:
    async def go() -> tuple[list[Stored], list[int]]:
        nc = await nats.connect(nats_url)
        await fresh_stream(nc)
        foreign: list[int] = []
        publisher = ChainedPublisher(nc, STREAM, ack_timeout_s=5, on_foreign=foreign.append)
        await publisher.publish(outgoing(5), lambda _: None)
        await nc.jetstream().publish("test.chain.x", b"stray", headers={"Nats-Msg-Id": "stray"})
        assert await publisher.publish(outgoing(5, start=5), lambda _: None) == 5
        stored = await read_stream(nc.jetstream(), STREAM)
        await nc.close()
        return stored, foreign

    stored, foreign = run(go())
    assert ids_on(stored) == [
        *(f"m{i}" for i in range(5)),
        "stray",
        *(f"m{i}" for i in range(5, 10)),
    ]
    assert foreign == [1]


def test_a_batch_sent_again_past_a_message_without_an_id_is_stored_once_in_order(
    nats_url: str,
) -> None:
    """A restarted publisher that does not know how far it got sends its last
    messages again, and the stream ends with another publisher's message that has no
    id: the repeats are dropped, the new ones go on after it (the chain used to
    name the id of the stream's last message and was refused for good)."""

    async def go() -> tuple[list[Stored], list[int]]:
        nc = await nats.connect(nats_url)
        await fresh_stream(nc, duplicate_window=60.0)
        await ChainedPublisher(nc, STREAM, ack_timeout_s=5).publish(outgoing(10), lambda _: None)
        await nc.jetstream().publish("test.chain.x", b"no id")
        foreign: list[int] = []
        again = ChainedPublisher(nc, STREAM, ack_timeout_s=5, on_foreign=foreign.append)
        put = await asyncio.wait_for(again.publish(outgoing(10, start=5), lambda _: None), 20)
        assert put == 10
        stored = await read_stream(nc.jetstream(), STREAM)
        await nc.close()
        return stored, foreign

    stored, foreign = run(go())
    assert ids_on(stored) == [
        *(f"m{i}" for i in range(10)),
        None,
        *(f"m{i}" for i in range(10, 15)),
    ]
    assert foreign == []  # it was there before the publisher started


def test_a_publisher_goes_on_after_a_deleted_last_message_and_a_server_restart(
    nats_url: str, restart_nats: Callable[[], None]
) -> None:
    """The stream's last message deleted and the server restarted (it then knows no
    last id, and nats-server 2.9 no longer knows the ids it stored): a new
    publisher's messages go on at once after what is left."""

    async def first() -> None:
        nc = await nats.connect(nats_url)
        await fresh_stream(nc, duplicate_window=60.0)
        await ChainedPublisher(nc, STREAM, ack_timeout_s=5).publish(outgoing(10), lambda _: None)
        await nc.jetstream().delete_msg(STREAM, 10)
        await nc.close()

    async def then() -> list[Stored]:
        nc = await nats.connect(nats_url)
        publisher = ChainedPublisher(nc, STREAM, ack_timeout_s=5, window=3)
        put = await asyncio.wait_for(publisher.publish(outgoing(5, start=10), lambda _: None), 20)
        assert put == 5
        stored = await read_stream(nc.jetstream(), STREAM)
        await nc.close()
        return stored

    run(first())
    restart_nats()
    assert ids_on(run(then())) == [*(f"m{i}" for i in range(9)), *(f"m{i}" for i in range(10, 15))]


def test_a_repeat_that_is_not_the_stream_s_last_message_does_not_hold_the_chain(
    nats_url: str,
) -> None:
    """A batch sent again whose first message is on the stream already, but another
    publisher's message (with an id) came after it: the server drops the repeat
    without storing it, so the next message's expected id is refused; the publisher
    then sends the repeat alone, learns it is a duplicate and goes on."""

    async def go() -> list[Stored]:
        nc = await nats.connect(nats_url)
        await fresh_stream(nc, duplicate_window=60.0)
        await ChainedPublisher(nc, STREAM, ack_timeout_s=5).publish(outgoing(10), lambda _: None)
        await nc.jetstream().publish("test.chain.x", b"x", headers={"Nats-Msg-Id": "x"})
        again = ChainedPublisher(nc, STREAM, ack_timeout_s=5)
        put = await asyncio.wait_for(again.publish(outgoing(6, start=9), lambda _: None), 20)
        assert put == 6
        stored = await read_stream(nc.jetstream(), STREAM)
        await nc.close()
        return stored

    assert ids_on(run(go())) == [
        *(f"m{i}" for i in range(10)),
        "x",
        *(f"m{i}" for i in range(10, 15)),
    ]


def test_a_message_the_stream_refuses_stops_the_chain_right_before_it(nats_url: str) -> None:
    """The stream takes none after a refused message (each names the one before it):
    no gap. A stopping publisher gives up and says how many are in."""

    async def go() -> tuple[int, list[str], list[Stored]]:
        nc = await nats.connect(nats_url)
        await fresh_stream(nc, max_msg_size=1024)
        batch = outgoing(20)
        batch[12] = Outgoing("test.chain.big", b"x" * 2000, "m12")
        publisher = ChainedPublisher(nc, STREAM, ack_timeout_s=5)
        publisher.give_up_after_s = 0.3
        confirmed: list[str] = []
        put = await publisher.publish(batch, lambda item: confirmed.append(item.msg_id))
        stored = await read_stream(nc.jetstream(), STREAM)
        await nc.close()
        return put, confirmed, stored

    put, confirmed, stored = run(go())
    assert put == 12
    assert confirmed == [f"m{i}" for i in range(12)]
    assert ids_on(stored) == confirmed


def test_a_window_below_one_is_refused(nats_url: str) -> None:
    async def go() -> None:
        nc = await nats.connect(nats_url)
        try:
            with pytest.raises(ValueError, match="window must be 1 or more"):
                ChainedPublisher(nc, STREAM, ack_timeout_s=1, window=0)
        finally:
            await nc.close()

    run(go())


def test_one_message_is_sent_again_until_stored_once_or_given_up_once_stopping(
    nats_url: str,
) -> None:
    """``publish_until_acked``: with ``stop`` set a failed try is raised, not
    repeated; without, each failed try is counted and the message is sent again,
    same id, until the stream takes it, once."""

    async def go() -> tuple[int, int, bool, list[Stored]]:
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(STREAM)
        send = functools.partial(
            publish_until_acked, js, "test.chain.0", b"x", stream=STREAM, msg_id="m0"
        )
        stopped = asyncio.Event()
        stopped.set()
        with pytest.raises(NatsError):  # no stream yet: nobody answers
            await send(timeout_s=0.5, stop=stopped)
        retries: list[None] = []
        task = asyncio.create_task(
            send(timeout_s=0.5, on_retry=lambda: retries.append(None), stop=asyncio.Event())
        )

        async def retried() -> bool:
            return len(retries) >= 2

        await wait_until(retried, "two failed tries")
        await fresh_stream(nc, duplicate_window=60.0)
        ack = await asyncio.wait_for(task, 10)
        again = await send()
        stored = await read_stream(js, STREAM)
        await nc.close()
        return len(retries), ack.seq, bool(again.duplicate), stored

    retries, seq, duplicate, stored = run(go())
    assert retries >= 2
    assert (seq, duplicate) == (1, True)
    assert ids_on(stored) == ["m0"]


def test_a_reader_whose_connection_is_closed_for_good_raises_instead_of_spinning(
    nats_url: str,
) -> None:
    """nats-py closes a connection for good after most server errors; the reader
    then says so at once instead of retrying a fetch that cannot succeed."""

    async def go() -> None:
        nc = await nats.connect(nats_url)
        await fresh_stream(nc)
        js = nc.jetstream()
        await js.add_consumer(STREAM, ConsumerConfig(durable_name="reader"))
        reader = await InOrderReader.bind(nc, STREAM, "reader", position=0, fetch_timeout_s=0.2)
        await nc.close()
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(reader.next(), 5)

    run(go())


def test_a_publisher_whose_connection_is_closed_for_good_raises(nats_url: str) -> None:
    async def go() -> None:
        nc = await nats.connect(nats_url)
        await fresh_stream(nc)
        publisher = ChainedPublisher(nc, STREAM, ack_timeout_s=1)
        await nc.close()
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(publisher.publish(outgoing(3), lambda _: None), 10)

    run(go())


class _Losing:
    """A fetcher that loses the deliveries of some stream sequences, the first time
    each comes (as a NATS restart loses an answer in flight)."""

    def __init__(self, inner: Fetcher, lose: set[int]) -> None:
        self._inner = inner
        self.lose = set(lose)

    async def fetch(self, batch: int, timeout: float) -> list[Msg]:
        msgs = await self._inner.fetch(batch, timeout)
        kept = [msg for msg in msgs if stream_seq(msg) not in self.lose]
        self.lose -= {stream_seq(msg) for msg in msgs}
        return kept


class _FailingReads(JetStreamContext):
    """The JetStream context of ``nc``, whose read of some stream sequences fails
    once each (a NATS restart under a ``STREAM.MSG.GET``)."""

    def __init__(self, nc: NatsClient, fail: set[int]) -> None:
        super().__init__(nc)
        self.fail = set(fail)

    async def get_msg(
        self,
        stream_name: str,
        seq: int | None = None,
        subject: str | None = None,
        direct: bool | None = False,
        next: bool | None = False,
    ) -> RawStreamMsg:
        if seq in self.fail:
            self.fail.discard(seq)
            raise nats.errors.TimeoutError
        return await super().get_msg(stream_name, seq, subject, direct, next)


@pytest.mark.parametrize("fetcher", ["nats-py fetch", "PullConsumer"])
def test_a_reader_hands_over_in_order_past_lost_deliveries_and_gives_back_redeliveries_as_stale(
    nats_url: str, fetcher: str
) -> None:
    """30 messages, deliveries of 5, 6 and 7 lost, and the first read of 7 from the
    stream fails: the reader hands over 1..30 once, in order (5 to 8 read from the
    stream, without a delivery to acknowledge: 5 and 6 are not lost with the failed
    read, 8 comes after 7); nothing acknowledged past 4, the consumer delivers 5..
    again after its ack wait and the reader hands those back as stale, none twice as
    fresh."""

    async def go() -> tuple[list[int], list[int], list[int]]:
        nc = await nats.connect(nats_url)
        await fresh_stream(nc)
        js = nc.jetstream()
        for i in range(1, 31):
            await js.publish(f"test.chain.{i % 3}", b"%d" % i)
        # An ack wait long enough that 1..4 are acknowledged before it ends even on a
        # loaded machine (at 1 s, a busy CI box saw 2..4 delivered again as stale).
        config = ConsumerConfig(durable_name="reader", ack_policy=AckPolicy.ALL, ack_wait=3.0)
        await js.add_consumer(STREAM, config)
        sub: Fetcher = (
            await PullConsumer.bind(nc, STREAM, "reader")
            if fetcher == "PullConsumer"
            else await js.pull_subscribe_bind(durable="reader", stream=STREAM)
        )
        lossy = _Losing(sub, {5, 6, 7})
        reads = _FailingReads(nc, {7})
        reader = InOrderReader(reads, STREAM, lossy, position=0, batch=8, fetch_timeout_s=0.3)
        fresh: list[int] = []
        unread: list[int] = []  # read from the stream: no delivery
        stale: list[int] = []
        acked = False
        deadline = asyncio.get_running_loop().time() + 15
        while len(stale) < 26 and asyncio.get_running_loop().time() < deadline:
            got, again = await reader.next()
            fresh += [item.seq for item in got]
            unread += [item.seq for item in got if item.msg is None]
            stale += [stream_seq(msg) for msg in again]
            if not acked:  # acknowledge 1..4 only (AckPolicy.ALL)
                acked = True
                await ack_last([m for m in deliveries(got, []) if stream_seq(m) <= 4])
        await nc.close()
        return fresh, unread, stale

    fresh, unread, stale = run(go())
    assert fresh == list(range(1, 31))
    assert unread == [5, 6, 7, 8]
    assert sorted(set(stale)) == list(range(5, 31))
