"""``CoreService``: the core service's parts put together, and its loop (the
protocol is the package docstring's).

Each fetched batch of deliveries goes through ``_handle`` (in stream order, an event
whose delivery came late read from the stream first, a redelivery skipped), each
message through the handler (``handler.EventHandler``: decode → core), its
decisions past the watermark to the outbox; ``_flush`` makes a batch durable
(decisions, recording messages, dead letters, then the acknowledgement, the status,
the recording commands due and a checkpoint when due). Every turn of work holds
``turn`` and every write is fenced right before it is sent (``leadership``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from xce_core.core import SchedCore
from xce_core.errors import CoreError
from xce_core.plugins import PluginRegistry
from xce_kit.bus import Connect
from xce_kit.connection import connect_nats
from xce_kit.pull import stream_seq
from xce_kit.streams import ensure_record_stream, ensure_streams
from xce_schemas.bus import CORE_RECORD_SUBJECT, EVENTS_STREAM

from xce_driver.live.core_service.checkpoints import Checkpoints, redis_client
from xce_driver.live.core_service.commands import RecordingCommands
from xce_driver.live.core_service.consumer import EventConsumer
from xce_driver.live.core_service.handler import Batch, EventHandler, dead_letter
from xce_driver.live.core_service.leadership import (
    AlwaysLeading,
    Leadership,
    LeadershipFactory,
    always_leading,
    lead,
    lost_lead,
    while_leading,
)
from xce_driver.live.core_service.options import CoreServiceOptions, Faults
from xce_driver.live.core_service.outbox import Outbox
from xce_driver.live.core_service.positions import (
    CheckpointError,
    Watermark,
    check_positions,
    passing,
    past_watermark,
)
from xce_driver.live.core_service.status import StatusWriter
from xce_driver.live.metrics import CoreMetrics
from xce_driver.live.record_stream import RecordStream
from xce_driver.plugins import load_registry

log = logging.getLogger(__name__)


class CoreService:
    """One scheduling core behind the bus (see the package docstring for the protocol).

    Args:
        options: connections and checkpoint cadence.
        registry: plugins the configuration may name; default built-ins plus entry
            points (``xce_driver.plugins.load_registry``).
        metrics: where to count; default a fresh ``CoreMetrics``.
        leadership: makes, from the service's JetStream context once connected, what
            says when this service may work (``leadership``); default
            ``AlwaysLeading`` (a lone core).
        connect: makes the NATS client (``xce_kit.bus.Connect``); default
            ``connect_nats``, ``xce_kit.memory_bus.MemoryBus.connect`` in tests.

    ``run`` returns when ``stop`` is set (after finishing the event at hand and
    writing a last checkpoint), and raises ``LeadershipLost`` at once, writing
    nothing more, when the leadership is lost.
    """

    # Made by ``run`` from its connections.
    _nc: NatsClient
    _js: JetStreamContext
    _checkpoints: Checkpoints
    _status: StatusWriter
    _commands: RecordingCommands
    _consumer: EventConsumer

    def __init__(
        self,
        options: CoreServiceOptions,
        *,
        registry: PluginRegistry | None = None,
        metrics: CoreMetrics | None = None,
        leadership: LeadershipFactory = always_leading,
        connect: Connect = connect_nats,
    ) -> None:
        self.options = options
        self.registry = registry if registry is not None else load_registry()
        self.metrics = metrics if metrics is not None else CoreMetrics()
        self._leadership_factory = leadership
        self._connect = connect
        #: When this service may work (made by ``run`` once connected).
        self.leadership: Leadership = AlwaysLeading()
        self._faults = Faults(options.fault)
        self.handler = EventHandler(self.registry, options.prng_seed, self.metrics)
        self.outbox = Outbox(options, self.metrics, self._faults)
        #: The recording being made, if any (``record_stream``).
        self.record = RecordStream(self.outbox.queue_record, self.outbox.record_published)
        #: The stream sequence of the last event handled (0: none).
        self.seq = 0
        self._watermark: Watermark | None = None
        #: Held while an event, a checkpoint or a recording command is handled.
        self._busy = asyncio.Lock()
        self._stop = asyncio.Event()
        self._closing = False  # run() is closing its connections

    @property
    def core(self) -> SchedCore:
        """The scheduling core (a checkpoint restored at start replaces the first)."""
        return self.handler.core

    # --- lifecycle -------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Connect, wait to lead (doing nothing else meanwhile), create the streams
        that do not exist, restore the checkpoint and handle events until ``stop`` is
        set; then write a last checkpoint and release the lead (after an error too).

        Raises:
            LeadershipLost: the lead was lost: the service stopped at once, sending
                nothing more, writing no checkpoint and releasing nothing.
            nats.errors.Error, redis.exceptions.RedisError: a server cannot be reached
                at start (later outages are waited out and retried).
            CheckpointError: the checkpoint in Redis cannot be loaded (the service
                refuses to guess; delete the key to start afresh).
            PositionError: the checkpoint, ``XCE_EVENTS`` and ``XCE_DECISIONS`` do not
                agree (``positions.check_positions``); also raised while catching up,
                when the core does not make again the decision the stream ends with.
        """
        if stop is not None:
            self._stop = stop
        options = self.options
        nc = self._nc = await self._connect(
            options.nats_url,
            "xce-core-service",
            log,
            disconnected_cb=self._nats_disconnected,
            reconnected_cb=self._nats_reconnected,
        )
        self._js = nc.jetstream()
        leadership = self.leadership = self._leadership_factory(self._js)
        redis = redis_client(options.redis_url)
        fence = self.fence
        self._checkpoints = Checkpoints(redis, options, self.metrics, self._faults, fence)
        self._status = StatusWriter(redis, self.metrics, fence, leadership)
        self._commands = RecordingCommands(self, self._checkpoints, self.metrics)
        self._consumer = EventConsumer(nc, options, self._pause)
        self.outbox.bind(nc, self._stop, fence)
        try:
            await redis.ping()  # a service that cannot reach Redis does not contend
            if await lead(leadership, self._stop):
                try:
                    await while_leading(leadership, self._lead(), lambda: self.seq)
                finally:
                    if leadership.leading:  # not after a loss: no longer its lease
                        await leadership.release()
        finally:
            self._closing = True
            self._commands.refuse("the core service stopped first")
            await self._commands.end_tasks()
            await redis.aclose()
            if not nc.is_closed:
                await nc.close()

    async def _lead(self) -> None:
        """The work of a leader, until ``stop``: the streams, the checkpoint, the
        recording commands and the loop, then a last checkpoint."""
        options = self.options
        await ensure_streams(self._js, options.decisions_window_s, options.limits)
        await ensure_record_stream(self._js, options.limits)
        await self._restore()
        await self._commands.at_position()
        await self._nc.subscribe(CORE_RECORD_SUBJECT, cb=self._commands.on_request)
        await self._loop()
        async with self.turn():
            await self._checkpoint()

    def fence(self) -> None:
        """Checked right before every write is sent (publishes, the acknowledgement,
        Redis writes): a service that lost the lead sends nothing more.

        Raises:
            LeadershipLost: it no longer leads.
        """
        if not self.leadership.leading:
            raise lost_lead(self.leadership, self.seq)

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Held while events, a checkpoint or a recording command are handled: one at
        a time, and only while this service leads.

        Raises:
            LeadershipLost: it no longer leads.
        """
        async with self._busy:
            self.fence()
            yield

    def stop(self) -> None:
        """Ask ``run`` to return once the events at hand are done."""
        self._stop.set()
        self.outbox.stopping()

    def stopping(self) -> bool:
        """Whether ``stop`` was asked."""
        return self._stop.is_set()

    async def _nats_disconnected(self) -> None:
        if not self._closing:  # closing on purpose disconnects too
            log.warning("disconnected from NATS; reconnecting")

    async def _nats_reconnected(self) -> None:
        log.info("reconnected to NATS")

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)

    # --- start: checkpoint, positions --------------------------------------------------

    async def _restore(self) -> None:
        """Load the checkpoint (none: a fresh core) and the recording positions, and
        check where the core goes on against the streams (``check_positions``)."""
        checkpoint = await self._checkpoints.load()
        if checkpoint is not None:
            try:
                self.handler.restore(checkpoint.snapshot)
            except CoreError as exc:  # SnapshotError, or a picker this install lacks
                key = self.options.checkpoint_key
                raise CheckpointError(f"checkpoint {key}: {exc}") from None
            self.seq = checkpoint.seq
            self.record.restore(checkpoint.recording)
            self.metrics.recording.set(int(self.record.on))
            log.info("restored the checkpoint at event seq %d", checkpoint.seq)
            self._commands.recording = await self._checkpoints.read_recording()
        positions = await check_positions(self._js, self.seq, self.metrics, self.options)
        self._watermark = positions.decisions
        if positions.record is not None:
            self.record.watermark = positions.record

    async def events_end(self) -> int:
        """``XCE_EVENTS``'s last sequence now (a recording command's position).

        Raises:
            nats.errors.Error: the stream cannot be read.
        """
        return (await self._js.stream_info(EVENTS_STREAM)).state.last_seq

    # --- the loop ----------------------------------------------------------------------

    async def _loop(self) -> None:
        consumer = self._consumer
        await consumer.start(after=self.seq)
        try:
            while not self._stop.is_set():
                await self._status.heartbeat(self.seq)  # fenced: no longer leading stops here
                msgs = await consumer.fetch()
                if msgs:
                    async with self.turn():
                        await self._flush(await self._handle(msgs))
                if self._checkpoints.time_due(self.seq):
                    async with self.turn():
                        await self._checkpoint()
        finally:
            await consumer.close()

    async def _handle(self, msgs: Sequence[Msg]) -> Batch:
        """Take a fetched batch of deliveries: each event in order into the core, its
        outcome flushed (see ``_flush``) where a checkpoint or a recording command
        falls due inside it.

        Returns:
            What is left to flush.
        """
        batch = Batch()
        for msg in msgs:
            if self._stop.is_set():
                break  # not acknowledged: a restart starts after the checkpoint
            seq = stream_seq(msg)
            batch.delivered(msg, seq)
            if seq <= self.seq:  # a redelivery of an event already handled
                continue
            # A delivery lost in transit (a NATS restart) comes back only after the ack
            # wait, behind later ones: take the events in between from the stream
            # first, in order, so none is skipped.
            while self.seq + 1 < seq:
                missing = self.seq + 1
                stored = await self._consumer.read(missing)
                if stored is None:
                    self.seq = missing
                else:
                    await self._take(missing, stored.subject or "", stored.data or b"", batch)
            await self._take(seq, msg.subject, msg.data, batch)
            if self._flush_due() or batch.events >= self.options.fetch_batch:
                await self._flush(batch)
                batch = Batch()
        return batch

    async def _take(self, seq: int, subject: str, data: bytes, batch: Batch) -> None:
        """Push the event(s) of message ``seq`` into the core (the handler); their
        decisions past the watermark and their dead letters wait in ``batch`` for the
        flush. A recording on gets each event's lines at once: its snapshots are of
        the core right after that event."""
        mark, out = self._watermark, self.handler.out
        index = 0  # the message's decisions, counted across the events of a batch
        taken = 0
        for handled in self.handler.handle(seq, subject, data):
            index = past_watermark(mark, seq, index, out, batch.decisions, self.metrics)
            event = handled.event
            if handled.reason is not None:
                batch.letters.append(dead_letter(seq, handled.taken, handled.reason))
            elif event is not None:
                if self.record.on:
                    await self.record.event(self.core, seq, event, out)
                if event.type == "BEGIN_ROUND":
                    batch.round_ts = event.ts
            taken += 1
        batch.events += taken
        self._checkpoints.since += taken
        self.seq = seq
        self._watermark = passing(mark, seq, index)

    def _flush_due(self) -> bool:
        """Whether the events taken so far must be flushed before the next one: a
        checkpoint is due, or a recording start or stop takes effect here."""
        return self._checkpoints.count_due(self.seq) or self._commands.due(self.seq)

    async def _flush(self, batch: Batch) -> None:
        """Make the events taken durable, in this order: their decisions on
        ``XCE_DECISIONS``, their recording messages on ``XCE_RECORD``, their dead
        letters, the acknowledgement of the batch's last delivery (``AckPolicy.ALL``:
        it covers every one before), then the status, the recording commands now due
        and the checkpoint when one is due.

        Raises:
            nats.errors.Error: stopping, and the decisions or recording messages could
                not be stored within ``STOP_GRACE_S``; nothing is acknowledged, no
                checkpoint is written.
        """
        await self.outbox.store_decisions(batch.decisions, self.seq)
        await self.outbox.flush_records(self.seq)
        for letter, msg_id in batch.letters:
            await self.outbox.dead_letter(letter, msg_id)
        last = batch.last
        if last is not None:
            for _ in range(batch.events):
                self._faults.hit("ack")
            self.fence()
            with contextlib.suppress(NatsError):  # a lost acknowledgement: redelivered
                await last.ack()
            metadata = last.metadata
            self.metrics.events_waiting.set(metadata.num_pending)
            self.metrics.event_lag.set(max(0.0, time.time() - metadata.timestamp.timestamp()))
        self.metrics.events.inc(batch.events)
        self.metrics.events_seq.set(self.seq)
        if batch.round_ts is not None:
            await self._status.after_round(self.seq, batch.round_ts, self.handler.round_s)
        else:
            await self._status.heartbeat(self.seq)
        await self._commands.at_position()
        if self._checkpoints.count_due(self.seq):
            await self._checkpoint()

    # --- checkpoints and recording commands --------------------------------------------

    async def _checkpoint(self, *, force: bool = False) -> bool:
        """Write the checkpoint of the events handled so far, once the recording
        messages are on their stream (a checkpoint covers only what is there);
        ``force``: even when it covers no new event.

        Returns:
            Whether it was written (or nothing was to be written).
        """
        await self.outbox.flush_records(self.seq)
        return await self._checkpoints.write(self.seq, self.core, self.record.state(), force=force)

    async def forced_checkpoint(self) -> None:
        """A checkpoint after a recording start or stop, retried until Redis takes
        it (or the service stops): ``xce:core:recording`` holds one command, and the
        next one may replace it only once a checkpoint covers this one."""
        while not await self._checkpoint(force=True):
            if self._stop.is_set():
                return
            await self._pause(0.5)
