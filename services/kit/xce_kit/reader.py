"""Reading a JetStream stream strictly in order through a durable pull consumer.

Why a reader of its own: a pull consumer delivers each message in stream order the
first time, but a delivery lost on the way (the NATS server restarted while the
answer to a fetch was in flight) comes again only after the consumer's ack wait,
*after* the messages behind it. ``InOrderReader`` never lets a message overtake
another: when a fetch skips a sequence it reads the missing messages from the
stream itself (``STREAM.MSG.GET``); when fetches come back empty while the stream
has more, it reads those too. A message delivered again is handed back apart as
*stale*, for the caller to acknowledge once it is done with it.

Also here: where a durable consumer's reader starts (``consumer_position``), a
stream's creation time as an epoch (``stream_epoch``), and acknowledging the last
of a batch under ``AckPolicy.ALL`` (``ack_last``). Nothing here knows what the
stream holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo, StreamInfo
from nats.js.errors import NotFoundError

from xce_kit.pull import PullConsumer, stream_seq
from xce_kit.retention import check_position

log = logging.getLogger("xce_kit.reader")


def stream_epoch(info: StreamInfo) -> str:
    """A stream's creation time in µs since the epoch, as digits ("0" when the
    server does not say): tells a stream made anew from the one it replaced."""
    created = info.created
    return "0" if created is None else str(int(created.timestamp() * 1_000_000))


def consumer_position(info: ConsumerInfo, stream: StreamInfo) -> int:
    """Where a consumer's reader starts: the last stream sequence it has done.

    A consumer with nothing awaiting acknowledgement has done everything delivered
    (a new ``DeliverPolicy.NEW`` consumer: the stream's end at its creation);
    otherwise everything up to its ack floor. Never before the stream's first
    message.
    """
    delivered = info.delivered.stream_seq if info.delivered else 0
    floor = info.ack_floor.stream_seq if info.ack_floor else 0
    done = delivered if not info.num_ack_pending else floor
    return max(done or 0, (stream.state.first_seq or 1) - 1)


class Fetcher(Protocol):
    """What ``InOrderReader`` fetches through: ``pull.PullConsumer`` (or nats-py's
    ``PullSubscription``): up to ``batch`` deliveries within ``timeout`` s, else
    ``TimeoutError``."""

    async def fetch(self, batch: int, timeout: float) -> list[Msg]: ...


@dataclass(frozen=True, slots=True)
class Delivered:
    """One message of a stream, as ``InOrderReader`` hands it over.

    Attributes:
        seq: its stream sequence.
        subject, data, headers: as stored.
        msg: the consumer's delivery, to acknowledge; None when the reader read it
            from the stream itself (the consumer delivers it again later: stale).
    """

    seq: int
    subject: str
    data: bytes
    headers: Mapping[str, str]
    msg: Msg | None


def deliveries(fresh: Sequence[Delivered], stale: Sequence[Msg]) -> list[Msg]:
    """The consumer's deliveries among what ``InOrderReader.next`` handed over: the
    stale ones and those of the fresh messages (not the ones read from the stream)."""
    return [*stale, *(item.msg for item in fresh if item.msg is not None)]


async def ack_last(msgs: Sequence[Msg]) -> None:
    """Acknowledge the delivery of ``msgs`` with the highest stream sequence: under
    ``AckPolicy.ALL`` it covers every one before. Nothing when empty; a lost
    acknowledgement only means the messages come again."""
    if msgs:
        with contextlib.suppress(NatsError):
            await max(msgs, key=stream_seq).ack()


class InOrderReader:
    """A stream read through a durable pull consumer, strictly in stream order, no
    message skipped (see the module docstring). The consumer must see every message
    of the stream (no filter narrower than the stream's subjects).

    Args:
        js: a JetStream context.
        stream: the stream's name.
        sub: what fetches the consumer's deliveries (a ``Fetcher``).
        position: the last sequence already done; the reader hands over the
            messages after it.
        batch: most messages per fetch (≥ 1).
        fetch_timeout_s: how long one fetch waits, s (> 0).
    """

    def __init__(
        self,
        js: JetStreamContext,
        stream: str,
        sub: Fetcher,
        *,
        position: int,
        batch: int = 256,
        fetch_timeout_s: float = 0.5,
    ) -> None:
        self._js = js
        self.stream = stream
        self._sub = sub
        #: The last sequence handed over (or done before the start).
        self.position = position
        self._batch = batch
        self._timeout = fetch_timeout_s

    @classmethod
    async def bind(
        cls,
        nc: NatsClient,
        stream: str,
        durable: str,
        *,
        position: int,
        batch: int = 256,
        fetch_timeout_s: float = 0.5,
    ) -> InOrderReader:
        """A reader of ``stream`` through its existing durable consumer ``durable``,
        over the client ``nc`` (other arguments as for the constructor). Deliveries
        come through ``pull.PullConsumer``: one pull request kept open and no task per
        message, several times less CPU per message than nats-py's ``fetch``.

        Raises:
            nats.errors.Error: the consumer cannot be bound.
        """
        sub = await PullConsumer.bind(nc, stream, durable)
        return cls(
            nc.jetstream(),
            stream,
            sub,
            position=position,
            batch=batch,
            fetch_timeout_s=fetch_timeout_s,
        )

    async def next(self) -> tuple[list[Delivered], list[Msg]]:
        """The next messages in order, and the deliveries of messages already handed
        over (delivered again: acknowledge each once done with it). Both may be
        empty (nothing new within the fetch timeout).

        Raises:
            nats.errors.ConnectionClosedError: the client is closed for good (nats-py
                closes it after most server errors): reading on cannot succeed.
            nats.errors.Error: reading a missing message from the stream failed
                (the reader's position stays before it: call again).
            xce_kit.retention.RetentionError: messages after the position were
                dropped by the stream's limits before they were read.
        """
        try:
            msgs = await self._sub.fetch(self._batch, timeout=self._timeout)
        except TimeoutError:
            return await self._catch_up(), []
        except ConnectionClosedError:
            raise
        except NatsError as exc:
            log.warning("fetch from %s failed (%s); retrying", self.stream, exc)
            await asyncio.sleep(self._timeout)
            return [], []
        fresh: list[Delivered] = []
        stale: list[Msg] = []
        for msg in msgs:
            seq = stream_seq(msg)
            if seq <= self.position:
                stale.append(msg)
                continue
            if seq > self.position + 1:
                fresh.extend(await self._read_range(self.position + 1, seq - 1))
                if self.position < seq - 1:  # a read failed: this one comes again
                    return fresh, stale
            fresh.append(Delivered(seq, msg.subject, msg.data, msg.headers or {}, msg))
            self.position = seq
        return fresh, stale

    async def _catch_up(self) -> list[Delivered]:
        """After an empty fetch: the messages the stream holds past the position (a
        delivery lost on the way would otherwise wait for the consumer's ack wait)."""
        try:
            info = await self._js.stream_info(self.stream)
        except NatsError as exc:
            log.debug("catching up on %s failed: %s", self.stream, exc)
            return []
        last = info.state.last_seq or 0
        return await self._read_range(self.position + 1, last) if last > self.position else []

    async def _read_range(self, first: int, last: int) -> list[Delivered]:
        """Messages ``first``..``last`` read from the stream (deleted ones skipped;
        one its limits dropped raises ``RetentionError``), advancing the position
        over each, up to the first read that fails (the position stays before that
        message). What was read is always returned: the position is past it, so
        dropping it would lose it for good."""
        out: list[Delivered] = []
        for seq in range(first, last + 1):
            try:
                raw = await self._js.get_msg(self.stream, seq=seq)
            except NotFoundError:
                try:
                    # Deleted on purpose: nothing to hand over. Dropped from the
                    # stream's head by its limits before it was read: that raises
                    # RetentionError, rather than going on as if it had never been.
                    await check_position(self._js, self.stream, seq - 1, "this service")
                except NatsError as exc:
                    log.info("%s: checking seq %d's absence failed: %s", self.stream, seq, exc)
                    break
                self.position = seq
                continue
            except NatsError as exc:
                log.info("%s: reading seq %d past a delivery gap failed: %s", self.stream, seq, exc)
                break
            out.append(Delivered(seq, raw.subject or "", raw.data or b"", raw.headers or {}, None))
            self.position = seq
        if out:
            log.info("%s: read %d messages past a delivery gap", self.stream, len(out))
        return out
