"""What a stream's retention limits may drop, caught instead of skipped.

A stream created with limits (``streams.StreamLimits``: max age, max bytes) drops its
oldest messages whether or not anyone has read them. A reader that was down longer
than the stream keeps messages, or that fell further behind than its size cap,
would otherwise go on from the stream's first message as if nothing were missing: a
durable consumer simply delivers the first message still there, and reading a
dropped sequence answers "not found", like a message deleted on purpose. A core
that skipped an event would schedule on a state no controller has, with exit
status 0. These helpers tell that case apart so a service can stop with one line
naming the stream, the lost sequences and the limits that dropped them.

Where a reader must check: at start, its stored position (a checkpoint, a
watermark) or its durable consumer's (``check_position``, ``check_consumer``),
before the consumer delivers anything; and wherever it finds a sequence missing
while reading (a delivery gap, "not found" reading a message back): a sequence
below the stream's first one was dropped, not deleted (``check_position`` with the
position before it). ``reader.InOrderReader`` does the latter itself.
"""

from __future__ import annotations

from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo, StreamInfo, StreamState

from xce_kit.streams import limits_of

#: Where the docs say how to size the limits and what to do once messages are lost.
SIZING_DOC = "docs/operations.md"


class RetentionError(Exception):
    """Messages a reader had not read yet were dropped from a stream by its retention
    limits (or a purge). The text is one line: the stream, the sequences lost, the
    reader, the stream's limits and where the docs say what to do."""


def first_seq_of(state: StreamState) -> int:
    """The sequence of the oldest message a stream holds, from its state; when it
    holds none, the sequence its next message gets (nats-server reports
    ``first_seq`` 0 on a stream that never held a message, and ``last_seq + 1``
    once every message is gone)."""
    if not state.messages:
        return (state.last_seq or 0) + 1
    return state.first_seq


async def first_seq(js: JetStreamContext, stream: str) -> int:
    """The sequence of the oldest message ``stream`` holds now (``first_seq_of``).

    Raises:
        nats.js.errors.NotFoundError: there is no such stream.
        nats.errors.Error: the server does not answer.
    """
    return first_seq_of((await js.stream_info(stream)).state)


def lost_after(position: int, first: int) -> range:
    """The sequences after ``position`` (the last one a reader has done; 0: none)
    that are no longer in a stream starting at ``first``: empty when none is."""
    return range(position + 1, max(position + 1, first))


def check_info(info: StreamInfo, position: int, reader: str) -> None:
    """Check that ``info``'s stream still holds every message after ``position``.

    Args:
        info: the stream's info, read now.
        position: the last sequence ``reader`` has done (0: none).
        reader: who reads, for the message (e.g. ``consumer xce-core``).

    Raises:
        RetentionError: messages after ``position`` are gone from the stream's head.
    """
    lost = lost_after(position, first_seq_of(info.state))
    if not lost:
        return
    name, limits = info.config.name, limits_of(info.config)
    why = f"its limits: {limits}" if limits.bounded else "it has no limits: it was purged"
    raise RetentionError(
        f"{name}: messages {lost.start}..{lost.stop - 1} were dropped before {reader} "
        f"read them ({reader} is at seq {position}, {name} now starts at seq {lost.stop}; "
        f"{why}): reading on would skip them; see {SIZING_DOC} to size the limits and "
        "to recover"
    )


async def check_position(js: JetStreamContext, stream: str, position: int, reader: str) -> int:
    """Check that ``stream`` still holds every message after ``position``, a
    sequence a reader keeps itself (a checkpoint, a watermark, the last message
    it took); call it at start and wherever a sequence is found missing.

    Args:
        js: a JetStream context.
        stream: the stream's name.
        position: the last sequence ``reader`` has done (0: none).
        reader: who reads, for the message.

    Returns:
        The stream's first sequence now (``first_seq_of``).

    Raises:
        RetentionError: messages after ``position`` were dropped.
        nats.js.errors.NotFoundError: there is no such stream.
        nats.errors.Error: the server does not answer.
    """
    info = await js.stream_info(stream)
    check_info(info, position, reader)
    return first_seq_of(info.state)


def consumer_done(info: ConsumerInfo) -> int:
    """The last stream sequence a durable consumer has done: everything delivered
    when nothing awaits acknowledgement, else its ack floor. nats-server (2.9)
    leaves both where they were when retention drops the messages after them; the
    consumer moves past the gap only when it next delivers."""
    delivered = info.delivered.stream_seq if info.delivered else 0
    floor = info.ack_floor.stream_seq if info.ack_floor else 0
    return (delivered if not info.num_ack_pending else floor) or 0


async def check_consumer(js: JetStreamContext, stream: str, durable: str) -> int:
    """Check that ``stream`` still holds every message its durable consumer
    ``durable`` has not done yet (``consumer_done``). Call it before the consumer
    delivers anything (at start): its first delivery moves it past a gap.

    Returns:
        The consumer's position (``consumer_done``).

    Raises:
        RetentionError: messages the consumer had not done were dropped.
        nats.js.errors.NotFoundError: there is no such stream or consumer.
        nats.errors.Error: the server does not answer.
    """
    consumer = await js.consumer_info(stream, durable)
    position = consumer_done(consumer)
    check_info(await js.stream_info(stream), position, f"consumer {durable}")
    return position
