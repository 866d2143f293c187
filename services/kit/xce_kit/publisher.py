"""Publishing to a JetStream stream in order, none twice: ``ChainedPublisher``
(pipelined windows chained by message id), ``publish_until_acked`` (one message, sent
again under the same id until the stream has it) and ``scan_tail`` (reading a stream
backwards to the last message a publisher recognizes as its own). Nothing here knows
what the messages mean; a message's id is its ``Nats-Msg-Id``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nats.aio.client import Client as NatsClient
from nats.errors import ConnectionClosedError
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import PubAck, RawStreamMsg
from nats.js.errors import APIError, NotFoundError
from xce_schemas.bus import MSG_ID_HEADER

log = logging.getLogger("xce_kit.publisher")

#: The JetStream header that makes the stream check the id of its last message.
EXPECTED_LAST_MSG_ID_HEADER = "Nats-Expected-Last-Msg-Id"
#: The JetStream header that makes the stream check the sequence of its last message.
EXPECTED_LAST_SEQ_HEADER = "Nats-Expected-Last-Sequence"
#: The JetStream header that makes the server check which stream stores a message.
EXPECTED_STREAM_HEADER = "Nats-Expected-Stream"
#: JetStream's error codes for a message refused by its ``Nats-Expected-Last-Msg-Id``
#: (10070) or ``Nats-Expected-Last-Sequence`` (10071).
CHAIN_REFUSALS = frozenset({10070, 10071})
#: Longest wait between two tries of a publish that failed, s.
MAX_RETRY_DELAY_S = 1.0


@dataclass(slots=True)
class Outgoing:
    """A message waiting for an ordered stream: where it goes, its bytes, its id, its
    other headers, when it was queued (``time.perf_counter()``, s), and what it
    stands for (for the caller's ``confirm``)."""

    subject: str
    data: bytes
    msg_id: str
    headers: dict[str, str] = field(default_factory=dict)
    queued: float = field(default_factory=time.perf_counter)
    tag: object = None


def msg_id_of(msg: RawStreamMsg) -> str:
    """The ``Nats-Msg-Id`` of a stored message ("" when it has none)."""
    return str((msg.headers or {}).get(MSG_ID_HEADER, ""))


@dataclass(frozen=True, slots=True)
class Tail:
    """The end of a stream read backwards (``scan_tail``).

    Attributes:
        last_seq: the stream's last sequence when it was read (0: never a message).
        found: the last message the caller recognized as its own (None: none in
            the part read).
        foreign: messages read after ``found`` (all those read, when none was found)
            that are not the caller's; deleted ones are not counted.
        complete: the scan read back to where it was asked to stop (or the stream's
            first message); False: it gave up after ``lookback`` messages.
    """

    last_seq: int
    found: RawStreamMsg | None
    foreign: int
    complete: bool


async def scan_tail(
    js: JetStreamContext,
    stream: str,
    own: Callable[[str], bool],
    *,
    after: int = 0,
    below: int | None = None,
    lookback: int | None = None,
) -> Tail:
    """Read ``stream`` backwards from its last message to the last one whose
    ``Nats-Msg-Id`` ``own`` recognizes, past any other publisher's and past deleted
    messages (one ``STREAM.MSG.GET`` per message read).

    Args:
        js: a JetStream context.
        stream: the stream's name.
        own: whether a message id (``""``: none) is one of the caller's.
        after: read no message at or before this sequence.
        below: start right before this sequence (None: at the stream's last).
        lookback: read at most this many messages (None: no limit).

    Raises:
        nats.errors.Error: the stream does not answer.
    """
    info = await js.stream_info(stream)
    last = info.state.last_seq or 0
    top = last if below is None else min(last, below - 1)
    first = max(after + 1, info.state.first_seq or 1)
    floor = first if lookback is None else max(first, top - lookback + 1)
    foreign = 0
    for seq in range(top, floor - 1, -1):
        try:
            msg = await js.get_msg(stream, seq=seq)
        except NotFoundError:  # deleted
            continue
        if own(msg_id_of(msg)):
            return Tail(last, msg, foreign, True)
        foreign += 1
    return Tail(last, None, foreign, floor == first)


class ChainedPublisher:
    """Publishes messages to one stream in order, pipelined, none twice, and goes on
    past whatever else the stream holds.

    Messages go in *windows* (at most ``window``, one ``publish`` call's batch cut
    into pieces). The first message of a window carries
    ``Nats-Expected-Last-Sequence``: the stream's last sequence once this
    publisher's messages before it were stored (read from the stream at the first
    send); each other one ``Nats-Expected-Last-Msg-Id`` naming the message before
    it. So the stream takes message *n* only right after message *n - 1*, or, for a
    window's first, only where this publisher left the stream. The chain is what
    makes one acknowledgement enough: only a window's last message asks for one,
    and when it is stored every message before it is. Every message carries its
    ``Nats-Msg-Id``: JetStream drops a repeat within the duplicate window (it
    checks duplicates before expectations).

    When a window's acknowledgement does not come (a publish lost, the server
    restarted, another publisher's message got in first, a message refused),
    ``publish`` reads the stream backwards from its end to where the window
    started (``scan_tail``): the last message of the window found there, and every
    one before it, is stored; it sends again from the next one, chained after the
    stream's end as it is now. Other publishers' messages found there are counted
    (``on_foreign``) and logged, never waited on. When nothing changed on the
    stream (the window was refused as it was), the next try sends the first message
    alone, asking for its acknowledgement: one already stored before (a duplicate,
    its copy no longer the stream's last) is then acknowledged as such and counted
    as stored, so nothing can hold the chain for ever.

    Why not chain the window's first message by id too: the id of the stream's
    last message is what the server compares, and after another publisher's
    message without an id, a deleted last message or a server restart it is not
    the id a restarted publisher can know, which refused every message for good.

    Args:
        nc: the connected client the messages go through.
        stream: the stream's name.
        ack_timeout_s: how long to wait for a window's acknowledgement before
            sending again, s.
        on_retry: called once per failed try (e.g. a metric).
        on_foreign: called with the number of other publishers' messages found on
            the stream after a failed try (e.g. a metric).
        window: most messages sent before waiting for the acknowledgement (≥ 1).
        fence: called right before each window is sent; whatever it raises ends
            ``publish`` there, nothing of the window sent (a lease holder that no
            longer leads sends nothing more). None: always send.

    Raises:
        ValueError: ``window`` below 1.
    """

    def __init__(
        self,
        nc: NatsClient,
        stream: str,
        *,
        ack_timeout_s: float,
        on_retry: Callable[[], None] = lambda: None,
        on_foreign: Callable[[int], None] = lambda _count: None,
        window: int = 1024,
        fence: Callable[[], None] | None = None,
    ) -> None:
        if window < 1:
            raise ValueError(f"window must be 1 or more, not {window}")
        self._nc = nc
        self._js = nc.jetstream()
        self.stream = stream
        self._ack_timeout = ack_timeout_s
        self._on_retry = on_retry
        self._on_foreign = on_foreign
        self._window = window
        self._fence = fence
        #: The stream's last sequence right after this publisher's last message
        #: (None: not known, read from the stream before the next send).
        self.last_seq: int | None = None
        #: The next try sends one message alone (see the class docstring).
        self._alone = False
        #: Give up after this many seconds of failures (None: never); set when stopping.
        self.give_up_after_s: float | None = None

    async def publish(self, batch: Sequence[Outgoing], confirm: Callable[[Outgoing], None]) -> int:
        """Put ``batch`` on the stream in order, calling ``confirm`` for each one, in
        order, once it is in; retries from the first one not in.

        Returns:
            How many were put (fewer than ``len(batch)`` only once
            ``give_up_after_s`` of failures passed).

        Raises:
            nats.errors.ConnectionClosedError: the client is closed for good.
            Whatever ``fence`` raises.
        """
        pos = 0
        delay = 0.05
        give_up_at: float | None = None
        while pos < len(batch):
            end = min(len(batch), pos + (1 if self._alone else self._window))
            after = self.last_seq
            failure = await self._send(batch[pos:end])
            if failure is None:
                for item in batch[pos:end]:
                    confirm(item)
                pos = end
                self._alone = False
                delay = 0.05
                continue
            resynced = await self._resync(batch, pos, end, after, confirm)
            if resynced is not None:
                stored, moved = resynced
                if stored > pos or moved:
                    pos = stored  # progress, or other messages came in: go on at once
                    continue
                refused = isinstance(failure, APIError) and failure.err_code in CHAIN_REFUSALS
                if refused and not self._alone:
                    self._alone = True  # a repeat ahead of the window: see the docstring
                    continue
                self._alone = True
            if self._nc.is_closed:  # closed for good (nats-py): no retry can succeed
                raise ConnectionClosedError
            self._on_retry()
            log.warning(
                "publish of %s to %s failed (%s); retrying in %.2f s",
                batch[pos].msg_id,
                self.stream,
                failure,
                delay,
            )
            if self.give_up_after_s is not None:
                give_up_at = give_up_at or time.monotonic() + self.give_up_after_s
                if time.monotonic() > give_up_at:
                    log.error("stopping: %d messages not put on %s", len(batch) - pos, self.stream)
                    return pos
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)
        return pos

    async def _send(self, window: Sequence[Outgoing]) -> NatsError | None:
        """Send ``window`` chained after ``self.last_seq`` (read first when unknown),
        the last one as a request for the stream's acknowledgement; None when it
        came, else why not (the server's refusal, a timeout, no connection).

        Raises:
            Whatever ``fence`` raises (checked after every wait, right before sending).
        """
        try:
            if self.last_seq is None:
                self.last_seq = (await self._js.stream_info(self.stream)).state.last_seq or 0
            if self._fence is not None:
                self._fence()
            previous: str | None = None
            for item in window[:-1]:
                await self._nc.publish(
                    item.subject, item.data, headers=self._headers(item, previous)
                )
                previous = item.msg_id
            last = window[-1]
            # A request, not publish_async: nats-py 2.x loses a refusal sent to an
            # async publish (it raises inside the reply handler), leaving the future
            # to time out.
            ack = await self._js.publish(
                last.subject,
                last.data,
                timeout=self._ack_timeout,
                headers=self._headers(last, previous),
            )
        except NatsError as exc:
            return exc
        if not ack.duplicate:
            self.last_seq = ack.seq
            return None
        # A copy stored before: its sequence is not the stream's end (read it before
        # the next send). JetStream acknowledges a duplicate before its order check,
        # but a message is stored only after every one before it, so the copy vouches
        # for the window too.
        self.last_seq = None
        if len(window) > 1:
            log.warning(
                "%s: the last of a window of %d (%s) was a duplicate; the window counts as stored",
                self.stream,
                len(window),
                last.msg_id,
            )
        return None

    def _headers(self, item: Outgoing, previous: str | None) -> dict[str, str]:
        """``item``'s headers: its id, the stream, and what must come right before it
        (the message ``previous``, or for a window's first the stream's last sequence)."""
        headers = {**item.headers, MSG_ID_HEADER: item.msg_id, EXPECTED_STREAM_HEADER: self.stream}
        if previous is not None:
            headers[EXPECTED_LAST_MSG_ID_HEADER] = previous
        elif self.last_seq:  # 0: an empty stream, where the server checks nothing
            headers[EXPECTED_LAST_SEQ_HEADER] = str(self.last_seq)
        return headers

    async def _resync(
        self,
        batch: Sequence[Outgoing],
        pos: int,
        end: int,
        after: int | None,
        confirm: Callable[[Outgoing], None],
    ) -> tuple[int, bool] | None:
        """After a failed try of ``batch[pos:end]``, sent after stream sequence
        ``after``: confirm what of it the stream holds and chain after the stream's
        end as it is now.

        Returns:
            ``(the new pos, whether the stream moved past where the try started)``;
            None when the stream cannot be read (not connected: the retry will tell).
        """
        start = self.last_seq if after is None else after
        if start is None:  # the stream could not be read: nothing was sent
            return None
        ids = {item.msg_id: index for index, item in enumerate(batch[pos:end], start=pos)}
        try:
            tail = await scan_tail(self._js, self.stream, ids.__contains__, after=start)
        except NatsError:
            return None
        stored = pos
        if tail.found is not None:
            stored = ids[msg_id_of(tail.found)] + 1
            for item in batch[pos:stored]:
                confirm(item)
        if tail.foreign:
            self._on_foreign(tail.foreign)
            log.warning(
                "another publisher wrote %d message(s) to %s (up to seq %d); going on after them",
                tail.foreign,
                self.stream,
                tail.last_seq,
            )
        self.last_seq = tail.last_seq
        return stored, tail.last_seq != start


async def publish_until_acked(
    js: JetStreamContext,
    subject: str,
    data: bytes,
    *,
    stream: str,
    msg_id: str,
    timeout_s: float = 2.0,
    on_retry: Callable[[], None] = lambda: None,
    stop: asyncio.Event | None = None,
    fence: Callable[[], None] | None = None,
) -> PubAck:
    """Publish one message with ``Nats-Msg-Id`` ``msg_id`` and send it again, same
    id, until ``stream`` acknowledges it (waits ``timeout_s`` s for each
    acknowledgement, then up to ``MAX_RETRY_DELAY_S`` between tries). A copy the
    stream already has is acknowledged as a duplicate, not stored again.

    Args:
        on_retry: called once per failed try (e.g. a metric).
        stop: once set, the wait between tries ends and a failed try is the last
            (None: retry for ever).
        fence: called right before each try; whatever it raises ends the publishing
            there (see ``ChainedPublisher``).

    Raises:
        Whatever ``fence`` raises.
        nats.errors.Error: a try failed with ``stop`` set (the message may or may not
            be stored).
        asyncio.CancelledError: cancelled (likewise).
    """
    delay = 0.05
    while True:
        if fence is not None:
            fence()
        try:
            return await js.publish(
                subject, data, timeout=timeout_s, stream=stream, headers={MSG_ID_HEADER: msg_id}
            )
        except (NatsError, TimeoutError) as exc:
            if stop is not None and stop.is_set():
                raise
            log.warning("publish of %s failed (%s); sending it again", msg_id, exc)
            on_retry()
        if stop is None:
            await asyncio.sleep(delay)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
        delay = min(delay * 2, MAX_RETRY_DELAY_S)
