"""``Bridge``: the bridge's parts put together, and its four tasks (the protocol is
the package docstring's): controller messages in (``_ctl_loop``: the handler, then
queued for the stream or dead-lettered), a ``BEGIN_ROUND`` every round interval
(``_round_loop``), events out (``outbox.EventOutbox``) and decisions back
(``forward.DecisionForwarder``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from xce_kit.bus import Connect
from xce_kit.connection import connect_nats
from xce_kit.publisher import publish_until_acked
from xce_kit.reader import Delivered, InOrderReader, stream_epoch
from xce_kit.streams import ensure_streams
from xce_kit.tasks import cancel_and_wait
from xce_schemas import BeginRound, CoreEvent, dump_event
from xce_schemas.bus import (
    DEADLETTER_STREAM,
    DECISIONS_STREAM,
    EVENTS_STREAM,
    DeadLetter,
    deadletter_subject,
)
from xce_schemas.controller import (
    BRIDGE_SOURCE,
    CTL_DECISIONS_STREAM,
    CTL_STREAM,
    ctl_event_msg_id,
    ctl_kind_of,
)

from xce_driver.live.bridge.consumer import ctl_consumer, decisions_consumer, reader
from xce_driver.live.bridge.durability import CtlProgress, resume_point
from xce_driver.live.bridge.forward import DecisionForwarder
from xce_driver.live.bridge.handler import ctl_to_event
from xce_driver.live.bridge.options import BATCH_FRAME_BYTES, BridgeOptions
from xce_driver.live.bridge.outbox import EventOutbox
from xce_driver.live.controller_bus import ensure_ctl_streams
from xce_driver.live.metrics import BridgeMetrics

log = logging.getLogger(__name__)


class Bridge:
    """The controller bridge (see the package docstring for the protocol).

    Args:
        options: connection, round interval, batching.
        metrics: where to count; default a fresh ``BridgeMetrics``.
        clock: the wall clock, ns since the epoch (tests may pass another).
        connect: makes the NATS client (``xce_kit.bus.Connect``); default
            ``connect_nats``, ``xce_kit.memory_bus.MemoryBus.connect`` in tests.

    ``run`` returns after ``stop``, once every event stamped is on the stream (or
    ``STOP_RETRY_S`` of failures passed).
    """

    # Made by ``run`` from its connection.
    _nc: NatsClient
    _js: JetStreamContext

    def __init__(
        self,
        options: BridgeOptions,
        *,
        metrics: BridgeMetrics | None = None,
        clock: Callable[[], int] = time.time_ns,
        connect: Connect = connect_nats,
    ) -> None:
        self.options = options
        self.metrics = metrics if metrics is not None else BridgeMetrics()
        self._clock = clock
        self._connect = connect
        #: The ``ts`` of the last event stamped, ns (0: none yet).
        self.last_ts = 0
        #: Reconnections to NATS since the start.
        self.reconnects = 0
        #: Set once the bridge reads the controller stream.
        self.ready = asyncio.Event()
        self._run_id = f"xce-bridge:{time.time_ns():x}"
        self._count = 0
        self._closing = False
        self._stop = asyncio.Event()
        #: Where the bridge is on ``XCE_CONTROLLER`` (``durability``).
        self.progress = CtlProgress(self._ack)
        self.outbox = EventOutbox(options, self.metrics, self.progress)
        self._forwarder: DecisionForwarder | None = None

    # --- lifecycle -------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Connect, then bridge until ``stop`` is set (or ``self.stop()``).

        Raises:
            nats.errors.Error, OSError: the server cannot be reached at start (later
                outages are ridden out: the client reconnects without end).
        """
        if stop is not None:
            self._stop = stop
        nc = self._nc = await self._connect(
            self.options.nats_url,
            "xce-bridge",
            log,
            disconnected_cb=self._nats_disconnected,
            reconnected_cb=self._nats_reconnected,
        )
        js = self._js = nc.jetstream()
        self.outbox.bind(nc)
        try:
            await ensure_streams(js, limits=self.options.limits)
            await ensure_ctl_streams(js, self.options.limits)
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
            assert self._forwarder is not None
            publisher = asyncio.create_task(self._publish_loop(), name="publish")
            rounds = asyncio.create_task(self._round_loop(), name="rounds")
            reader = asyncio.create_task(self._ctl_loop(ctl), name="controller")
            forwarder = asyncio.create_task(self._forwarder.run(decisions), name="forward")
            stopped = asyncio.create_task(self._stop.wait())
            tasks = {publisher, rounds, reader, forwarder}
            await asyncio.wait({stopped, *tasks}, return_when=asyncio.FIRST_COMPLETED)
            # Stop taking input, then publish what was stamped, then stop forwarding.
            await cancel_and_wait(rounds, reader)
            self._closing = True
            self.outbox.close()
            await cancel_and_wait(stopped, forwarder)
            results = await asyncio.gather(
                publisher, rounds, reader, forwarder, return_exceptions=True
            )
            for result in results:
                if isinstance(result, Exception):
                    raise result
            await self.progress.ack_done()
        finally:
            self._closing = True
            if not nc.is_closed:
                with contextlib.suppress(NatsError, TimeoutError):
                    await nc.flush(timeout=1)  # the last acknowledgements
                await nc.close()
            log.info("stopped: %d events published, %d decisions forwarded", *self.counts)

    @property
    def published(self) -> int:
        """Events the stream acknowledged in this run."""
        return self.outbox.published

    @property
    def forwarded(self) -> int:
        """Decisions forwarded in this run."""
        return 0 if self._forwarder is None else self._forwarder.forwarded

    @property
    def counts(self) -> tuple[int, int]:
        """``(events published, decisions forwarded)`` in this run."""
        return self.published, self.forwarded

    @property
    def controller_done(self) -> int:
        """The last ``XCE_CONTROLLER`` sequence done: every controller message up to
        it is an event the stream holds or a dead letter stored."""
        return self.progress.done

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

    def _stamp(self) -> int:
        """The next event's ``ts``: the wall clock, ns, but never before the last."""
        now = self._clock()
        if now > self.last_ts:
            self.last_ts = now
        return self.last_ts

    # --- the readers ---------------------------------------------------------------------

    async def _ctl_reader(self) -> InOrderReader:
        """The reader of ``XCE_CONTROLLER``, from the controller position: the later
        of the events' (``durability.resume_point``, which also gives the last
        ``ts`` stamped) and the consumer's."""
        js = self._js
        stream = await js.stream_info(CTL_STREAM)
        self.progress.epoch = stream_epoch(stream)
        resume = await resume_point(js, self.progress.epoch)
        if resume.ts is not None and resume.ts > self.last_ts:
            self.last_ts = resume.ts
        position = await ctl_consumer(js, self.options, stream, resume.position)
        self.progress.start(position)
        return await reader(self._nc, CTL_STREAM, self.options.ctl_durable, position, self.options)

    async def _decisions_reader(self) -> InOrderReader:
        """The reader of ``XCE_DECISIONS``, after the last decision forwarded."""
        durable = self.options.durable
        position = await decisions_consumer(self._js, durable)
        self._forwarder = DecisionForwarder(
            self._nc, self.options.ack_timeout_s, self.metrics, position
        )
        return await reader(self._nc, DECISIONS_STREAM, durable, position, self.options)

    # --- controller messages in --------------------------------------------------------

    async def _ctl_loop(self, reader: InOrderReader) -> None:
        """Take controller messages in stream order; acknowledge a delivery again of
        one already done."""
        while True:
            fresh, stale = await reader.next()
            await self.progress.redelivered(stale)
            for item in fresh:
                await self._take(item)

    async def _take(self, item: Delivered) -> None:
        """One controller message: stamped and queued, or dead-lettered."""
        self.metrics.messages.labels(ctl_kind_of(item.subject) or "unknown").inc()
        handled = ctl_to_event(item.subject, item.data, self._stamp, self._event_room())
        if isinstance(handled, str):
            await self._dead_letter(item, handled)
            await self.progress.dead_lettered(item.seq, item.msg)
            return
        event, data = handled
        self.progress.took(item.seq, item.msg)
        self._emit(event, ctl_event_msg_id(self.progress.epoch, item.seq), data)

    def _event_room(self) -> int:
        """The most bytes of one event's JSON: the server's largest message less
        room for the batch around it and the headers."""
        return self._nc.max_payload - BATCH_FRAME_BYTES

    def _emit(
        self, event: CoreEvent, event_id: str | None = None, data: bytes | None = None
    ) -> None:
        """Queue a stamped event (``data``: its JSON, when already made) for the
        stream; a round's id is ``<run>:<n>``."""
        if event_id is None:
            self._count += 1
            event_id = f"{self._run_id}:{self._count}"
        if data is None:
            data = dump_event(event)
        self.outbox.put(event.type, event.ts, data, event_id)

    async def _dead_letter(self, item: Delivered, reason: str) -> None:
        """Store the dead letter of a controller message, sending it again until
        stored (its id comes from the message's sequence: stored once)."""
        log.warning("%s dead-lettered: %s", item.subject, reason)
        self.metrics.dead_letters.inc()
        letter = DeadLetter.of(item.subject, reason, item.data, item.seq)
        await publish_until_acked(
            self._js,
            deadletter_subject(BRIDGE_SOURCE),
            letter.model_dump_json().encode(),
            stream=DEADLETTER_STREAM,
            msg_id=ctl_event_msg_id(self.progress.epoch, item.seq),
            timeout_s=self.options.ack_timeout_s,
        )

    async def _ack(self, msg: Msg) -> None:
        # A lost acknowledgement only means the message comes again, and is dropped.
        with contextlib.suppress(NatsError):
            await msg.ack()

    # --- rounds and events out -----------------------------------------------------------

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

    async def _publish_loop(self) -> None:
        """Publish the queued events until the outbox is closed and empty."""
        await self.outbox.run()
