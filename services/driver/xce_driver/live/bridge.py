"""The controller bridge: controller messages in, core events out, decisions back.

``xce-bridge`` sits between a cluster controller and the core service
(contract and delivery guarantees: ``xce_schemas.controller``):

1. it reads ``XCE_CONTROLLER`` (the stream of ``xce.ctl.*``) in stream order through
   its durable pull consumer (``xce-bridge-ctl``); each message is validated against
   its kind's payload model. A malformed one goes to ``xce.deadletter.bridge`` (a
   ``bus.DeadLetter`` with the reason) and nothing else stops;
2. it stamps each valid message with ``ts`` = its wall clock in ns, never going back
   (``max`` of the clock and the last ``ts`` stamped, so a clock step backwards or a
   restart cannot make the core reject an event), and publishes the core event on
   ``XCE_EVENTS``, in a batch with the events stamped with it (``xce.events.BATCH``,
   at most ``batch_events`` each: the events waiting when the last publish ended,
   so a batch never waits to fill); only once the stream has it is the controller
   message acknowledged. Every ``round_interval_s`` of wall time it emits a ``BEGIN_ROUND``
   the same way (DESIGN: rounds are events);
3. it forwards every decision of ``XCE_DECISIONS``, in stream order, through a
   durable pull consumer (``xce-bridge``), to ``xce.ctl.decisions.<OP>`` (stream
   ``XCE_CTL_DECISIONS``, message id and header ``Xce-Decision-Id`` = the decision's
   id), and acknowledges it once the forward is stored; a message on the stream
   without a core decision id (``xce-core:<seq>:<index>``) is another publisher's:
   logged, counted (``xce_bridge_foreign_decisions_total``), not forwarded.

**Order and exactly-once on XCE_EVENTS.** The bridge is the only publisher of the
stream. Events are published in the order they were stamped, in batch messages
pipelined (``controller_bus.ChainedPublisher``): each carries a ``Nats-Msg-Id`` and
names what must come right before it in the stream, so after a lost publish
the bridge sends again from the first message not acknowledged, same ids, same
bytes, and the stream keeps them in stamping order, none twice. An event of a
controller message has the id ``xce-bridge:ctl:<epoch>:<controller seq>``; a
round ``xce-bridge:<run>:<n>``; a batch has its events' ids (``EventBatch.ids``)
and the id of its last event. Every message carries the controller position
(``Xce-Ctl-Seq``, ``Xce-Ctl-Epoch``): every controller message up to it is an event
or a dead letter. At start the bridge reads the last message of the stream and goes on
from its ``ts`` and that position: a controller message delivered again (an
acknowledgement lost, a bridge restart) at or before the position is acknowledged
and dropped, never stamped a second time. If something else published meanwhile
(the order check fails right after an acknowledged event), the bridge logs it and
goes on from there.

SIGTERM or SIGINT stops it cleanly: no new messages, every event stamped is
published (and its controller message acknowledged), then exit 0; what was not
acknowledged is delivered again to the next bridge. The client reconnects to a
restarted NATS server without end.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, ConsumerInfo, DeliverPolicy
from nats.js.errors import NotFoundError
from pydantic import ValidationError
from xce_kit.connection import connect_nats
from xce_kit.options import (
    LOG_LEVELS,
    OneLineParser,
    consumer_name,
    log_level,
    log_to_stderr,
    port,
    run_service,
    seconds,
    serve,
)
from xce_kit.pull import stream_seq
from xce_kit.streams import ensure_streams
from xce_kit.tasks import cancel_and_wait
from xce_schemas import BeginRound, CoreEvent, dump_event
from xce_schemas.bus import (
    DEADLETTER_STREAM,
    DECISIONS_PREFIX,
    DECISIONS_STREAM,
    EVENTS_BATCH_SUBJECT,
    EVENTS_STREAM,
    MSG_ID_HEADER,
    DeadLetter,
    deadletter_subject,
    parse_decision_msg_id,
)
from xce_schemas.controller import (
    BRIDGE_CTL_DURABLE,
    BRIDGE_SOURCE,
    CTL_DECISIONS_STREAM,
    CTL_EPOCH_HEADER,
    CTL_KINDS,
    CTL_SEQ_HEADER,
    CTL_STREAM,
    DECISION_ID_HEADER,
    CtlPayload,
    ctl_decision_subject,
    ctl_event_msg_id,
    ctl_kind_of,
    parse_ctl_payload,
    to_core_event,
)
from xce_schemas.errors import describe

from xce_driver.live.controller_bus import (
    ChainedPublisher,
    Delivered,
    InOrderReader,
    Outgoing,
    ack_last,
    consumer_position,
    deliveries,
    ensure_ctl_streams,
    publish_until_acked,
    stream_epoch,
)
from xce_driver.live.event_codec import encode_batch, last_ts
from xce_driver.live.metrics import BridgeMetrics

log = logging.getLogger("xce_driver.live.bridge")

#: Longest round interval, s (a day): beyond it the option is surely a mistake.
MAX_ROUND_INTERVAL_S = 86_400.0
#: How long a stopping bridge keeps retrying events the stream has not taken, s.
STOP_RETRY_S = 10.0
#: How many events back a starting bridge looks for the controller position.
RESUME_LOOKBACK = 256
#: About the most bytes of events in one ``XCE_EVENTS`` message (NATS's default
#: largest message is 1 MiB).
BATCH_BYTES = 256 * 1024
#: Bytes kept free in a message around one event: the batch's frame, its id, headers.
BATCH_FRAME_BYTES = 4096
#: Most controller messages delivered to the bridge and not yet acknowledged.
CTL_MAX_ACK_PENDING = 100_000


@dataclass(frozen=True, slots=True)
class _Stamped:
    """An event stamped and waiting for the stream: its type, JSON, id, the
    controller position when it was stamped, and when (``time.perf_counter()``, s)."""

    type: str
    data: bytes
    event_id: str
    ctl_seq: int
    queued: float = field(default_factory=time.perf_counter)


@dataclass(frozen=True)
class BridgeOptions:
    """What the bridge connects to and how it paces and batches.

    Attributes:
        nats_url: NATS server URL(s), comma-separated.
        round_interval_s: wall time between two ``BEGIN_ROUND`` events, s (> 0).
        durable: name of the bridge's durable consumer on ``XCE_DECISIONS``.
        ctl_durable: name of its durable consumer on ``XCE_CONTROLLER``.
        ctl_ack_wait_s: that consumer's ack wait when the bridge creates it, s (> 0):
            a controller message not acknowledged in that time is delivered again
            (and dropped, when it is an event already).
        publish_batch: most events published before waiting for their
            acknowledgements (≥ 1).
        batch_events: most events in one ``XCE_EVENTS`` message (≥ 1).
        ack_timeout_s: how long to wait for an event's acknowledgement before
            publishing it again, s (> 0).
        fetch_batch: controller messages or decisions fetched per request (≥ 1).
        fetch_timeout_s: how long one fetch waits, s (> 0).

    Raises:
        ValueError: an option out of range, naming it.
    """

    nats_url: str = "nats://127.0.0.1:4222"
    round_interval_s: float = 1.0
    durable: str = "xce-bridge"
    ctl_durable: str = BRIDGE_CTL_DURABLE
    ctl_ack_wait_s: float = 30.0
    publish_batch: int = 512
    batch_events: int = 256
    ack_timeout_s: float = 5.0
    fetch_batch: int = 256
    fetch_timeout_s: float = 0.5

    def __post_init__(self) -> None:
        interval = self.round_interval_s
        if not (math.isfinite(interval) and 0 < interval <= MAX_ROUND_INTERVAL_S):
            raise ValueError(
                f"round interval must be more than 0 and at most {MAX_ROUND_INTERVAL_S:g} s, "
                f"not {interval:g}"
            )
        if min(self.publish_batch, self.fetch_batch, self.batch_events) < 1:
            raise ValueError("publish_batch, fetch_batch and batch_events must be 1 or more")
        if not (self.ack_timeout_s > 0 and self.fetch_timeout_s > 0 and self.ctl_ack_wait_s > 0):
            raise ValueError("ack_timeout_s, fetch_timeout_s and ctl_ack_wait_s must be positive")


def decode_ctl(subject: str, data: bytes) -> tuple[str, CtlPayload] | str:
    """Decode and validate one controller message.

    Returns:
        ``(kind, payload)``, or why it is rejected: one line naming the kind and the
        field (``jobs rejected: jobs[0].tasks: Input should be ...``).
    """
    kind = ctl_kind_of(subject)
    if kind is None:
        return (
            f"subject {subject!r} names no controller kind "
            f"(xce.ctl.<kind>, kind one of {', '.join(CTL_KINDS)})"
        )
    try:
        return kind, parse_ctl_payload(kind, data)
    except ValidationError as exc:
        return f"{kind} rejected: {describe(exc, default='message')}"


class Bridge:
    """The controller bridge (see the module docstring for the protocol).

    Args:
        options: connection, round interval, batching.
        metrics: where to count; default a fresh ``BridgeMetrics``.
        clock: the wall clock, ns since the epoch (tests may pass another).

    ``run`` returns after ``stop``, once every event stamped is on the stream (or
    ``STOP_RETRY_S`` of failures passed).
    """

    def __init__(
        self,
        options: BridgeOptions,
        *,
        metrics: BridgeMetrics | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.options = options
        self.metrics = metrics if metrics is not None else BridgeMetrics()
        self._clock = clock
        #: The ``ts`` of the last event stamped, ns (0: none yet).
        self.last_ts = 0
        #: Events the stream acknowledged, and decisions forwarded, in this run.
        self.published = 0
        self.forwarded = 0
        #: Reconnections to NATS since the start.
        self.reconnects = 0
        #: Set once the bridge reads the controller stream.
        self.ready = asyncio.Event()
        self._run_id = f"xce-bridge:{time.time_ns():x}"
        self._count = 0
        self._queue: collections.deque[_Stamped] = collections.deque()
        self._wake = asyncio.Event()
        self._closing = False
        self._stop = asyncio.Event()
        self._nc: NatsClient | None = None
        self._js: JetStreamContext | None = None
        self._events: ChainedPublisher | None = None
        #: ``XCE_CONTROLLER``: its creation time (µs), the last sequence turned into
        #: an event or a dead letter (taken), and the last one whose event the stream
        #: holds or whose dead letter is stored (done).
        self._ctl_epoch = "0"
        self._ctl_taken = 0
        self._ctl_done = 0
        #: Deliveries of controller messages to acknowledge once done, by sequence.
        self._ctl_acks: dict[int, Msg] = {}
        #: Dead-lettered controller messages not yet done (an earlier one is not).
        self._ctl_dead: set[int] = set()
        #: The last ``XCE_DECISIONS`` sequence whose forward is stored.
        self._forward_done = 0

    # --- lifecycle -------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Connect, then bridge until ``stop`` is set (or ``self.stop()``).

        Raises:
            nats.errors.Error, OSError: the server cannot be reached at start (later
                outages are ridden out: the client reconnects without end).
        """
        if stop is not None:
            self._stop = stop
        nc = self._nc = await connect_nats(
            self.options.nats_url,
            "xce-bridge",
            log,
            disconnected_cb=self._nats_disconnected,
            reconnected_cb=self._nats_reconnected,
        )
        js = self._js = nc.jetstream()
        try:
            await ensure_streams(js)
            await ensure_ctl_streams(js)
            ctl = await self._ctl_reader()
            decisions = await self._decisions_reader()
            self.ready.set()
            log.info(
                "bridging %s ↔ %s / %s ↔ %s",
                CTL_STREAM,
                EVENTS_STREAM,
                DECISIONS_STREAM,
                CTL_DECISIONS_STREAM,
            )
            publisher = asyncio.create_task(self._publish_loop(), name="publish")
            rounds = asyncio.create_task(self._round_loop(), name="rounds")
            reader = asyncio.create_task(self._ctl_loop(ctl), name="controller")
            forwarder = asyncio.create_task(self._forward_loop(decisions), name="forward")
            stopped = asyncio.create_task(self._stop.wait())
            tasks = {publisher, rounds, reader, forwarder}
            await asyncio.wait({stopped, *tasks}, return_when=asyncio.FIRST_COMPLETED)
            # Stop taking input, then publish what was stamped, then stop forwarding.
            await cancel_and_wait(rounds, reader)
            self._closing = True
            assert self._events is not None
            self._events.give_up_after_s = STOP_RETRY_S
            self._wake.set()
            await cancel_and_wait(stopped, forwarder)
            results = await asyncio.gather(
                publisher, rounds, reader, forwarder, return_exceptions=True
            )
            for result in results:
                if isinstance(result, Exception):
                    raise result
            await self._ack_done()
        finally:
            self._closing = True
            if not nc.is_closed:
                with contextlib.suppress(NatsError, TimeoutError):
                    await nc.flush(timeout=1)  # the last acknowledgements
                await nc.close()
            log.info("stopped: %d events published, %d decisions forwarded", *self.counts)

    @property
    def counts(self) -> tuple[int, int]:
        """``(events published, decisions forwarded)`` in this run."""
        return self.published, self.forwarded

    @property
    def controller_done(self) -> int:
        """The last ``XCE_CONTROLLER`` sequence done: every controller message up to
        it is an event the stream holds or a dead letter stored."""
        return self._ctl_done

    def stop(self) -> None:
        """Ask ``run`` to return (after publishing every event stamped)."""
        self._stop.set()

    async def _nats_disconnected(self) -> None:
        # nc.close() calls this too: a bridge stopping on purpose is not an outage.
        if not self._closing:
            log.warning("disconnected from NATS; reconnecting")

    async def _nats_reconnected(self) -> None:
        self.reconnects += 1
        log.info("reconnected to NATS")

    # --- time and position --------------------------------------------------------------

    def _stamp(self) -> int:
        """The next event's ``ts``: the wall clock, ns, but never before the last."""
        now = self._clock()
        if now > self.last_ts:
            self.last_ts = now
        return self.last_ts

    async def _resume(self) -> int:
        """Go on from the last event of ``XCE_EVENTS``: its ``ts``, and the controller
        position of the last event that carries one (looking back at most
        ``RESUME_LOOKBACK`` events, past another publisher's).

        Returns:
            The last ``XCE_CONTROLLER`` sequence already an event (0: none known).
        """
        assert self._js is not None
        js = self._js
        info = await js.stream_info(EVENTS_STREAM)
        last = info.state.last_seq
        position = 0
        if last and info.state.messages:
            first = max(info.state.first_seq or 1, last - RESUME_LOOKBACK + 1)
            for seq in range(last, first - 1, -1):
                try:
                    msg = await js.get_msg(EVENTS_STREAM, seq=seq)
                except NotFoundError:
                    continue
                headers = msg.headers or {}
                if seq == last:
                    ts = last_ts(msg.subject or "", msg.data or b"")
                    if ts is not None and ts > self.last_ts:
                        self.last_ts = ts
                ctl_seq = headers.get(CTL_SEQ_HEADER)
                if ctl_seq is not None and ctl_seq.isdigit():
                    if headers.get(CTL_EPOCH_HEADER) == self._ctl_epoch:
                        position = int(ctl_seq)
                    break
            log.info(
                "the stream ends at seq %d, ts %d, controller seq %d: going on from there",
                last,
                self.last_ts,
                position,
            )
        assert self._nc is not None
        self._events = ChainedPublisher(
            self._nc,
            EVENTS_STREAM,
            ack_timeout_s=self.options.ack_timeout_s,
            on_retry=self.metrics.publish_retries.inc,
        )
        return position

    # --- controller messages in --------------------------------------------------------

    async def _ctl_reader(self) -> InOrderReader:
        """The bridge's durable consumer of ``XCE_CONTROLLER`` (``AckPolicy.ALL``: one
        acknowledgement covers every message before it), read from the controller
        position: the later of the events' and the consumer's. A consumer of an
        earlier version with another acknowledgement policy is made anew there."""
        assert self._js is not None
        js, durable = self._js, self.options.ctl_durable
        stream = await js.stream_info(CTL_STREAM)
        self._ctl_epoch = stream_epoch(stream)
        from_events = await self._resume()
        info: ConsumerInfo | None
        try:
            info = await js.consumer_info(CTL_STREAM, durable)
        except NotFoundError:
            info = None
        position = max(from_events, 0 if info is None else consumer_position(info, stream))
        if info is not None and info.config.ack_policy != AckPolicy.ALL:
            log.info("%s: consumer %s made anew with AckPolicy.ALL", CTL_STREAM, durable)
            await js.delete_consumer(CTL_STREAM, durable)
            info = None
        if info is None:
            config = ConsumerConfig(
                durable_name=durable,
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=position + 1,
                ack_policy=AckPolicy.ALL,
                ack_wait=self.options.ctl_ack_wait_s,
                max_ack_pending=CTL_MAX_ACK_PENDING,
            )
            await js.add_consumer(CTL_STREAM, config)
        self._ctl_taken = self._ctl_done = position
        return await self._reader(CTL_STREAM, durable, position)

    async def _reader(self, stream: str, durable: str, position: int) -> InOrderReader:
        """A reader of ``stream`` through the bridge's consumer ``durable``, after
        ``position``, batched as the options say."""
        assert self._nc is not None
        return await InOrderReader.bind(
            self._nc,
            stream,
            durable,
            position=position,
            batch=self.options.fetch_batch,
            fetch_timeout_s=self.options.fetch_timeout_s,
        )

    async def _ctl_loop(self, reader: InOrderReader) -> None:
        """Take controller messages in stream order; acknowledge a delivery again of
        one already done."""
        while True:
            fresh, stale = await reader.next()
            for msg in stale:
                seq = stream_seq(msg)
                if seq <= self._ctl_done:
                    await self._ack(msg)
                else:  # its event is on its way: acknowledged once the stream has it
                    self._ctl_acks[seq] = msg
            for item in fresh:
                await self._take(item)

    async def _take(self, item: Delivered) -> None:
        """One controller message: validated, stamped and queued, or dead-lettered."""
        self.metrics.messages.labels(ctl_kind_of(item.subject) or "unknown").inc()
        decoded = decode_ctl(item.subject, item.data)
        if not isinstance(decoded, str):
            kind, payload = decoded
            event = to_core_event(kind, payload, self._stamp())
            data = dump_event(event)
            room = self._event_room()
            if len(data) > room:
                # Published, it would be refused for ever ("maximum payload exceeded")
                # and hold up every message after it, across restarts too.
                decoded = (
                    f"{kind} rejected: its core event is {len(data):,} bytes, more than the "
                    f"{room:,} one message on the bus can carry: send it in smaller messages"
                )
        if isinstance(decoded, str):
            await self._dead_letter(item, decoded)
            self._ctl_taken = item.seq
            # Done once every message before it is: acknowledging it now would, under
            # AckPolicy.ALL, also acknowledge earlier messages whose events are not
            # stored yet (lost if the bridge died then).
            self._ctl_dead.add(item.seq)
            if item.msg is not None:
                self._ctl_acks[item.seq] = item.msg
            self._advance_done(self._ctl_done)
            await self._ack_done()
            return
        self._ctl_taken = item.seq
        if item.msg is not None:
            self._ctl_acks[item.seq] = item.msg
        self._emit(event, ctl_event_msg_id(self._ctl_epoch, item.seq), data)

    def _event_room(self) -> int:
        """The most bytes of one event's JSON: the server's largest message less
        room for the batch around it and the headers."""
        assert self._nc is not None
        return self._nc.max_payload - BATCH_FRAME_BYTES

    def _emit(
        self, event: CoreEvent, event_id: str | None = None, data: bytes | None = None
    ) -> None:
        """Queue a stamped event (``data``: its JSON, when already made) for the
        stream, in stamping order, with the controller position."""
        if event_id is None:
            self._count += 1
            event_id = f"{self._run_id}:{self._count}"
        if data is None:
            data = dump_event(event)
        self._queue.append(_Stamped(event.type, data, event_id, self._ctl_taken))
        self.metrics.last_event_ts.set(event.ts / 1e9)
        self._wake.set()

    def _batches(self, events: Sequence[_Stamped]) -> list[Outgoing]:
        """``events`` in batch messages of at most ``batch_events`` events and about
        ``BATCH_BYTES`` (an event larger than that goes alone), in order; each with
        the id and the controller position of its last event."""
        out: list[Outgoing] = []
        limit = self.options.batch_events
        start = size = 0
        for end, stamped in enumerate(events, 1):
            size += len(stamped.data)
            if end - start == limit or size >= BATCH_BYTES or end == len(events):
                part = events[start:end]
                last = part[-1]
                headers = {CTL_SEQ_HEADER: str(last.ctl_seq), CTL_EPOCH_HEADER: self._ctl_epoch}
                data = encode_batch([e.data for e in part], [e.event_id for e in part])
                out.append(Outgoing(EVENTS_BATCH_SUBJECT, data, last.event_id, headers, tag=part))
                start, size = end, 0
        return out

    async def _dead_letter(self, item: Delivered, reason: str) -> None:
        """Store the dead letter of a controller message, sending it again until
        stored (its id comes from the message's sequence: stored once)."""
        log.warning("%s dead-lettered: %s", item.subject, reason)
        self.metrics.dead_letters.inc()
        assert self._js is not None
        letter = DeadLetter.of(item.subject, reason, item.data, item.seq)
        await publish_until_acked(
            self._js,
            deadletter_subject(BRIDGE_SOURCE),
            letter.model_dump_json().encode(),
            stream=DEADLETTER_STREAM,
            msg_id=ctl_event_msg_id(self._ctl_epoch, item.seq),
            timeout_s=self.options.ack_timeout_s,
        )

    def _advance_done(self, seq: int) -> None:
        """Everything up to controller message ``seq`` is done; so is each
        dead-lettered message right after it (its dead letter is stored)."""
        done = max(self._ctl_done, seq)
        while done + 1 in self._ctl_dead:
            done += 1
        self._ctl_done = done
        if self._ctl_dead:  # rare: do not rebuild an empty set for every event
            self._ctl_dead = {dead for dead in self._ctl_dead if dead > done}

    async def _ack(self, msg: Msg) -> None:
        # A lost acknowledgement only means the message comes again, and is dropped.
        with contextlib.suppress(NatsError):
            await msg.ack()

    async def _ack_done(self) -> None:
        """Acknowledge every controller message whose event the stream holds: the
        last such delivery (``AckPolicy.ALL`` covers the ones before it)."""
        done = [seq for seq in self._ctl_acks if seq <= self._ctl_done]
        if done:
            last = self._ctl_acks[max(done)]
            for seq in done:
                del self._ctl_acks[seq]
            await self._ack(last)

    # --- rounds ------------------------------------------------------------------------

    async def _round_loop(self) -> None:
        """A ``BEGIN_ROUND`` every round interval of wall time; a tick missed (a busy
        loop) is skipped, not made up in a burst."""
        interval = self.options.round_interval_s
        loop = asyncio.get_running_loop()
        next_at = loop.time() + interval
        while True:
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            self._emit(BeginRound(ts=self._stamp()))
            self.metrics.rounds.inc()
            next_at += interval
            if next_at <= loop.time():
                next_at = loop.time() + interval

    # --- events out ----------------------------------------------------------------------

    async def _publish_loop(self) -> None:
        """Publish queued events in order, a batch at a time, until closing and empty;
        after each batch, acknowledge the controller messages it holds."""
        assert self._events is not None
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            take = min(len(self._queue), self.options.publish_batch)
            events = [self._queue.popleft() for _ in range(take)]
            self.metrics.events_queued.set(len(self._queue) + take)
            batches = self._batches(events)
            put = await self._events.publish(batches, self._confirm)
            self.metrics.events_queued.set(len(self._queue))
            await self._ack_done()
            if put < len(batches):
                lost = sum(len(cast(list[_Stamped], b.tag)) for b in batches[put:])
                log.error("stopping: %d events not published", lost)
                self._queue.clear()
                return

    def _confirm(self, item: Outgoing) -> None:
        events = cast(list[_Stamped], item.tag)
        self._advance_done(events[-1].ctl_seq)
        self.published += len(events)
        now = time.perf_counter()
        for stamped in events:
            self.metrics.events.labels(stamped.type).inc()
            self.metrics.event_publish.observe(now - stamped.queued)

    # --- decisions back ------------------------------------------------------------------

    async def _decisions_reader(self) -> InOrderReader:
        """The bridge's durable consumer of ``XCE_DECISIONS``, created at the first
        start (from the first decision) and kept, so a restart goes on after the last
        decision forwarded."""
        assert self._js is not None
        js, durable = self._js, self.options.durable
        try:
            info = await js.consumer_info(DECISIONS_STREAM, durable)
        except NotFoundError:
            # No filter subject (the stream holds decisions only): see the core
            # service's consumer on why a filtered one is slow.
            config = ConsumerConfig(
                durable_name=durable,
                deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.ALL,
                ack_wait=30.0,
            )
            info = await js.add_consumer(DECISIONS_STREAM, config)
        stream = await js.stream_info(DECISIONS_STREAM)
        position = consumer_position(info, stream)
        self._forward_done = position
        return await self._reader(DECISIONS_STREAM, durable, position)

    async def _forward_loop(self, reader: InOrderReader) -> None:
        """Forward decisions in stream order to ``XCE_CTL_DECISIONS``; acknowledge
        each batch (``AckPolicy.ALL``) once its forwards are stored."""
        assert self._js is not None and self._nc is not None
        forward = ChainedPublisher(
            self._nc, CTL_DECISIONS_STREAM, ack_timeout_s=self.options.ack_timeout_s
        )
        while True:
            fresh, stale = await reader.next()
            batch: list[Outgoing] = []
            for item in fresh:
                op = item.subject[len(DECISIONS_PREFIX) :]
                decision_id = item.headers.get(MSG_ID_HEADER, "")
                if parse_decision_msg_id(decision_id) is None:
                    # Anyone may publish on xce.decisions.>; only the core's go out.
                    log.warning(
                        "%s seq %d on %s is not the core's (id %r); not forwarded",
                        DECISIONS_STREAM,
                        item.seq,
                        item.subject,
                        decision_id,
                    )
                    self.metrics.foreign_decisions.inc()
                    continue
                try:
                    subject = ctl_decision_subject(op)
                except ValueError:
                    log.warning("decision on %s names no op; not forwarded", item.subject)
                    continue
                headers = {DECISION_ID_HEADER: decision_id}
                batch.append(Outgoing(subject, item.data, decision_id, headers, tag=(op, item.seq)))
            # Done with every message of ``fresh`` once its forwards are stored, the
            # ones not forwarded included (else the last of them would not be
            # acknowledged until a later decision, and delivered again meanwhile).
            if fresh and (not batch or await forward.publish(batch, self._forwarded) == len(batch)):
                self._forward_done = max(self._forward_done, fresh[-1].seq)
            done = deliveries(fresh, stale)
            await ack_last([msg for msg in done if stream_seq(msg) <= self._forward_done])

    def _forwarded(self, item: Outgoing) -> None:
        op, seq = cast(tuple[str, int], item.tag)
        self._forward_done = max(self._forward_done, seq)
        self.forwarded += 1
        self.metrics.decisions_forwarded.labels(op).inc()


# --- the console script ---------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``xce-bridge`` command line."""
    parser = OneLineParser(
        prog="xce-bridge",
        description="The XCE controller bridge: controller messages (xce.ctl.*) to core "
        "events (XCE_EVENTS) with the wall clock as time, a BEGIN_ROUND every round "
        "interval, decisions (XCE_DECISIONS) back to xce.ctl.decisions.<OP>.",
    )
    parser.add_argument("--nats", default="nats://127.0.0.1:4222", help="NATS server URL")
    parser.add_argument(
        "--round-interval",
        type=seconds,
        default=1.0,
        metavar="SECONDS",
        help="wall time between scheduling rounds, s (default 1.0)",
    )
    parser.add_argument(
        "--metrics-port", type=port, default=None, metavar="P", help="serve /metrics on port P"
    )
    parser.add_argument("--metrics-addr", default="0.0.0.0", help="address /metrics binds")
    parser.add_argument(
        "--durable",
        type=consumer_name,
        default="xce-bridge",
        help="durable consumer name on XCE_DECISIONS",
    )
    parser.add_argument(
        "--ctl-durable",
        type=consumer_name,
        default=BRIDGE_CTL_DURABLE,
        help=f"durable consumer name on {CTL_STREAM} (default {BRIDGE_CTL_DURABLE})",
    )
    parser.add_argument("--log-level", type=log_level, default="INFO", help=", ".join(LOG_LEVELS))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bridge until SIGTERM or SIGINT; exit status 0 after a clean stop, 2 on
    a bad option, 1 when NATS cannot be reached or the metrics port not bound."""
    parser = build_parser()
    args = parser.parse_args(argv)
    log_to_stderr(args.log_level)  # --log-level and --metrics-port are checked by their types
    try:
        options = BridgeOptions(
            nats_url=args.nats,
            round_interval_s=args.round_interval,
            durable=args.durable,
            ctl_durable=args.ctl_durable,
        )
    except ValueError as exc:
        parser.error(f"--round-interval: {exc}")
    metrics = BridgeMetrics()
    bridge = Bridge(options, metrics=metrics)
    serving = serve(bridge, metrics, args.metrics_port, args.metrics_addr)
    return run_service("xce-bridge", serving, nats=args.nats)


if __name__ == "__main__":
    raise SystemExit(main())
