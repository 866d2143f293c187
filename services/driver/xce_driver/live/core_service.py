"""The core service: ``XCE_EVENTS`` → ``SchedCore`` → ``XCE_DECISIONS``, checkpoints in Redis.

Events come in stream order through a durable pull consumer, a fetched batch
of messages at a time; a message holds one event, or a batch of them
(``xce.events.BATCH``, what the bridge publishes; ``live.event_codec``):

1. each event is decoded and validated (``xce_schemas``) and pushed into the
   core, its decisions collected; a malformed event, or one the core rejects, is
   noted for ``xce.deadletter.core`` with the reason (DESIGN invariant 5), and the
   other events of its batch are taken all the same;
2. at the batch's end (a *flush*; earlier where a checkpoint or a recording
   command falls due inside it, or ``fetch_batch`` events were taken) the batch's
   decisions go to ``xce.decisions.<OP>`` pipelined, with
   ``Nats-Msg-Id = decision_msg_id(message seq, index)``, each
   chained to the one before it (``Nats-Expected-Last-Msg-Id``, see
   ``controller_bus.ChainedPublisher``), and the flush waits until the stream has
   every one; then the dead letters;
3. then the batch's last delivery is acknowledged (``AckPolicy.ALL``: one
   acknowledgement covers the batch);
4. every ``snapshot_every`` events or ``snapshot_seconds`` s, a checkpoint
   (``CoreCheckpoint``: the last event's sequence and ``save_snapshot(core)``) is
   written to Redis in one ``SET``;
5. after a batch with a ``BEGIN_ROUND``, the ``CoreStatus`` hash
   ``xce:core:status`` (last round, job counts, lag) that the admin API shows; and
   at least every ``HEARTBEAT_S`` while the service runs, its heartbeat there, so
   that the admin API tells a dead core from one that gets no rounds.

Batching changes no decision (the core sees the same events in the same order);
it takes the waits for acknowledgements off each event (one round trip per batch
instead of one per decision and one per event).

**Exactly the uninterrupted decision stream after a crash.** A restarted service
loads the checkpoint (sequence S; none: a fresh core, S = 0) and recreates its
consumer at S + 1, so it handles again every event after S, from exactly the state
after S (snapshot fidelity, DESIGN invariant 2): the same decisions, the same ids.
A checkpoint is written only after the decisions of every event it covers are on
the stream, so nothing before S is missing. Of the re-handled events' decisions,
those already on the stream are not published again: the chain makes the stream
take decision *n* only right after decision *n - 1*, so it holds every decision up
to the core's last one there, whose id the service reads at start (the
*watermark*, found reading back past messages the core did not write and deleted
ones) and skips up to (``xce_core_decisions_skipped_total``). The ids also make
JetStream drop any duplicate within the duplicate window (e.g. a publish
acknowledged by the server whose acknowledgement was lost). Acknowledgements only
tell the server what to deliver next; a lost one makes it redeliver an event,
which the service recognizes by its sequence and skips.

**Positions are checked, not trusted.** S and the watermark count in
``XCE_EVENTS`` as it is now: at start the service refuses (``PositionError``, exit
2, one line naming the streams, the positions and what to delete together) a
checkpoint past the stream's end, events after S gone from it, a watermark made
from an event past the stream's end or stored before its event (the stream was
made anew since), or one not after the core's decision before it. Catching up, the
core must make the watermark's decision again, byte for byte, else it stops the
same way before publishing anything past it. **Other publishers' messages** on
``XCE_DECISIONS`` or ``XCE_RECORD`` are never waited on: counted
(``xce_core_foreign_messages_total{stream}``), logged and gone past; the first
message of each batch is chained to the stream's last sequence rather than to the
id of its last message, which a message without an id, a deleted last message or
a NATS restart made unknowable (``controller_bus.ChainedPublisher``).

**Recording** (Req 10 AC 9-10, 15). The service answers ``CoreRecordCommand``
requests on ``xce.core.record`` (the recorder service sends them). A command takes
effect at a *position*: once the core has handled every event ``XCE_EVENTS`` held
when the command arrived. ``start`` then publishes HEADER and a SNAPSHOT of the core
on ``xce.record.<id>`` (stream ``XCE_RECORD``); from then on each event the core
takes is followed there by its line, its DECISION lines and, every N events, a
SNAPSHOT (``xce_driver.live.record_stream``); ``stop`` publishes the ``END``
message. Each command is answered once done. Before a start or stop takes effect
the service writes it, with its position, to the Redis key ``xce:core:recording``
(``CoreRecording``), and after it a checkpoint, which carries the recording's
counters (``RecordingRun``). A restarted service thus re-applies a start or stop
made after its checkpoint at exactly the same position, and its record stream, like
its decision stream, is that of an uninterrupted run (the record watermark and the
message ids skip and drop what is already there). Recording reads the core and
changes nothing in it: the decisions are the same with or without it.

Only one core service may consume the stream at a time (it deletes and recreates
its consumer at start). The core runs on its discrete clock: all time comes from
the events' ``ts``, so a restart cannot change a decision. Positions (checkpoints,
recording starts and stops, the watermark) are message sequences: a batch is
taken whole before any of them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, RawStreamMsg
from nats.js.errors import NotFoundError
from pydantic import ValidationError
from redis.exceptions import RedisError
from redis.typing import EncodableT, FieldT
from xce_core.core import SchedCore
from xce_core.errors import CoreError
from xce_core.plugins import PluginRegistry
from xce_core.snapshot import load_snapshot, save_snapshot
from xce_kit.connection import connect_nats
from xce_kit.options import (
    LOG_LEVELS,
    OneLineParser,
    consumer_name,
    log_level,
    log_to_stderr,
    port,
    redis_url,
    run_service,
    seconds,
    serve,
    whole,
)
from xce_kit.pull import PullConsumer, stream_seq
from xce_kit.streams import DECISIONS_DUPLICATE_WINDOW_S, ensure_streams
from xce_kit.tasks import cancel_and_wait
from xce_schemas import CoreEvent, Decision, dump_decision
from xce_schemas.admin import CORE_STATUS_KEY, CoreStatus, to_hash
from xce_schemas.bus import (
    CORE_CHECKPOINT_KEY,
    CORE_RECORD_SUBJECT,
    CORE_RECORDING_KEY,
    CORE_SOURCE,
    DEADLETTER_STREAM,
    DECISIONS_STREAM,
    EVENTS_STREAM,
    MSG_ID_HEADER,
    RECORD_STREAM,
    CoreCheckpoint,
    CoreRecordCommand,
    CoreRecording,
    CoreRecordReply,
    DeadLetter,
    deadletter_subject,
    decision_msg_id,
    decision_subject,
    parse_decision_msg_id,
    parse_record_msg_id,
)
from xce_schemas.controller import CTL_DECISIONS_STREAM
from xce_schemas.errors import describe

from xce_driver.live.controller_bus import ChainedPublisher, Outgoing, msg_id_of, scan_tail
from xce_driver.live.event_codec import Taken, data_of, decode_message
from xce_driver.live.metrics import CoreMetrics
from xce_driver.live.record_stream import RecordStream, ensure_record_stream
from xce_driver.plugins import load_registry

log = logging.getLogger("xce_driver.live.core_service")

#: Points where ``--fault-kill-at`` makes the service SIGKILL itself (crash tests):
#: after publishing its N-th decision, before acknowledging its N-th event, before
#: writing its N-th checkpoint, after writing it, after publishing its N-th record
#: message.
FAULT_POINTS = ("decision", "ack", "checkpoint", "checkpointed", "record")

#: How long a stopping service still tries to store the decisions of the events it
#: took, s (a bus that is gone is not waited for long).
STOP_GRACE_S = 5.0
#: How many messages back from the end of ``XCE_DECISIONS`` (``XCE_RECORD``) a
#: starting service looks for its own last one, past other publishers' messages.
RESUME_LOOKBACK = 10_000
#: How often the service writes its heartbeat into ``xce:core:status``, s.
HEARTBEAT_S = 1.0


class CheckpointError(ValueError):
    """The checkpoint in Redis cannot be used; the message names the key and why."""


class PositionError(CheckpointError):
    """The checkpoint, ``XCE_EVENTS`` and ``XCE_DECISIONS`` do not agree on where the
    core is (a stream made anew or purged without the others, a message the core did
    not write); the message names the streams, the positions and how to fix it."""


@dataclass
class _Watermark:
    """The core's last decision on ``XCE_DECISIONS`` at start: the decisions of
    re-handled events up to it are on the stream already and not published again.

    Attributes:
        id: its ``(event seq, index)``.
        seq: its ``XCE_DECISIONS`` sequence.
        subject, data: as stored; the core makes the same decision again, or the
            stream is not this core's (``PositionError``).
        skipped: decisions skipped so far.
    """

    id: tuple[int, int]
    seq: int
    subject: str
    data: bytes
    skipped: int = 0


@dataclass
class _Batch:
    """Events taken into the core whose outcome is not flushed yet."""

    #: Their decisions, in (event seq, index) order, not yet on ``XCE_DECISIONS``.
    decisions: list[Outgoing] = field(default_factory=list)
    #: The dead letter of each event rejected, with its message id.
    letters: list[tuple[DeadLetter, str]] = field(default_factory=list)
    #: How many events were taken.
    events: int = 0
    #: The ``ts`` of the last ``BEGIN_ROUND`` taken (None: none).
    round_ts: int | None = None
    #: The delivery of the highest stream sequence seen, and that sequence.
    last: Msg | None = None
    last_seq: int = 0

    def delivered(self, msg: Msg, seq: int) -> None:
        """Note a delivery to acknowledge at the flush (the highest one covers all)."""
        if seq > self.last_seq:
            self.last, self.last_seq = msg, seq


@dataclass
class _Command:
    """A recording command waiting for its position."""

    command: CoreRecordCommand
    #: The event sequence it takes effect after.
    at: int
    reply: asyncio.Future[CoreRecordReply]


@dataclass(frozen=True)
class CoreServiceOptions:
    """What the core service connects to and how often it checkpoints.

    Attributes:
        nats_url: NATS server URL(s), comma-separated.
        redis_url: Redis URL (``redis://host:port/db``).
        snapshot_every: write a checkpoint after this many events (≥ 1). A checkpoint
            of a 1,000-host cluster costs about 15 ms; a restart handles again at
            most this many events (10,000: about a second).
        snapshot_seconds: ... or once this many seconds passed since the last one with
            events handled since, s (> 0).
        prng_seed: seed of a fresh core's PRNG (a checkpoint carries its own).
        durable: name of the durable consumer on ``XCE_EVENTS``.
        checkpoint_key: the Redis key of the checkpoint.
        fetch_batch: messages fetched per request (≥ 1); also the most events taken
            before their decisions are flushed (a message's events are never split).
        fetch_timeout_s: how long one fetch waits for events, s; also the longest a
            stop request waits while the stream is idle.
        ack_wait_s: how long the server waits for an acknowledgement before it
            redelivers an event, s.
        publish_timeout_s: how long to wait for the stream's acknowledgement of a
            window of decisions or recording messages before looking at what the
            stream holds and sending the rest again, s (a request lost in a NATS
            restart is given up after this long).
        decisions_window_s: duplicate window of ``XCE_DECISIONS`` if this service
            creates the stream, s.
        recording_key: the Redis key of the recording commands' positions.
        fault: ``(point, n)``: SIGKILL this process at that point (crash tests only).

    Raises:
        ValueError: an option out of range.
    """

    nats_url: str = "nats://127.0.0.1:4222"
    redis_url: str = "redis://127.0.0.1:6379/0"
    snapshot_every: int = 10_000
    snapshot_seconds: float = 30.0
    prng_seed: int = 0
    durable: str = "xce-core"
    checkpoint_key: str = CORE_CHECKPOINT_KEY
    fetch_batch: int = 256
    fetch_timeout_s: float = 0.5
    ack_wait_s: float = 60.0
    publish_timeout_s: float = 5.0
    decisions_window_s: float = DECISIONS_DUPLICATE_WINDOW_S
    recording_key: str = CORE_RECORDING_KEY
    fault: tuple[str, int] | None = None

    def __post_init__(self) -> None:
        if self.snapshot_every < 1:
            raise ValueError(f"snapshot_every must be 1 or more, not {self.snapshot_every}")
        if self.snapshot_seconds <= 0:
            raise ValueError(f"snapshot_seconds must be positive, not {self.snapshot_seconds}")
        if self.fetch_batch < 1:
            raise ValueError(f"fetch_batch must be 1 or more, not {self.fetch_batch}")
        if min(self.fetch_timeout_s, self.ack_wait_s, self.publish_timeout_s) <= 0:
            raise ValueError("fetch_timeout_s, ack_wait_s and publish_timeout_s must be positive")
        if self.prng_seed < 0:
            raise ValueError(f"prng_seed must be 0 or more, not {self.prng_seed}")
        if self.fault is not None and (self.fault[0] not in FAULT_POINTS or self.fault[1] < 1):
            raise ValueError(f"fault must be one of {FAULT_POINTS} with a count ≥ 1")


class CoreService:
    """One scheduling core behind the bus (see the module docstring for the protocol).

    Args:
        options: connections and checkpoint cadence.
        registry: plugins the configuration may name; default built-ins plus entry
            points (``xce_driver.plugins.load_registry``).
        metrics: where to count; default a fresh ``CoreMetrics``.

    ``run`` returns when ``stop`` is set (after finishing the event at hand and
    writing a last checkpoint).
    """

    def __init__(
        self,
        options: CoreServiceOptions,
        *,
        registry: PluginRegistry | None = None,
        metrics: CoreMetrics | None = None,
    ) -> None:
        self.options = options
        self.registry = registry if registry is not None else load_registry()
        self.metrics = metrics if metrics is not None else CoreMetrics()
        self._out: list[Decision] = []
        self.core = SchedCore(self._out.append, options.prng_seed, registry=self.registry)
        #: The stream sequence of the last event handled (0: none).
        self.seq = 0
        #: The stream sequence the last checkpoint covers.
        self.checkpoint_seq = 0
        #: Events taken since the last checkpoint (a message may hold several).
        self._since_checkpoint = 0
        self._watermark: _Watermark | None = None
        self._beat_at = -HEARTBEAT_S  # monotonic time of the last heartbeat written
        self._beat_written = True  # the last one was written (or none was tried)
        self._decisions_out: ChainedPublisher | None = None
        #: Recording messages made but not yet on ``XCE_RECORD`` (see ``_flush_records``).
        self._records_out: ChainedPublisher | None = None
        self._records_queue: list[Outgoing] = []
        self._round_s = 0.0  # wall time of the last round, s
        self._last_checkpoint = time.monotonic()
        self._checkpoint_written = True  # the last try was written (or none was made)
        self._faults = dict.fromkeys(FAULT_POINTS, 0)
        #: The recording being made, if any (see the module docstring).
        self.record = RecordStream(self._publish_record, self._record_published)
        #: The last recording command applied, with its positions (``xce:core:recording``).
        self._recording: CoreRecording | None = None
        self._commands: list[_Command] = []
        self._command_tasks: set[asyncio.Task[None]] = set()
        #: Held while an event, a checkpoint or a recording command is handled.
        self._busy = asyncio.Lock()
        self._stop = asyncio.Event()
        self._closing = False  # run() is closing its connections
        self._nc: NatsClient | None = None
        self._js: JetStreamContext | None = None
        self._redis: aioredis.Redis | None = None

    # --- lifecycle -------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Connect, restore the checkpoint and handle events until ``stop`` is set.

        Raises:
            nats.errors.Error, redis.exceptions.RedisError: a server cannot be reached
                at start (later outages are waited out and retried).
            CheckpointError: the checkpoint in Redis cannot be loaded (the service
                refuses to guess; delete the key to start afresh).
            PositionError: the checkpoint, ``XCE_EVENTS`` and ``XCE_DECISIONS`` do not
                agree (see ``_check_positions``); also raised while catching up, when
                the core does not make again the decision the stream ends with.
        """
        if stop is not None:
            self._stop = stop
        nc = self._nc = await connect_nats(
            self.options.nats_url,
            "xce-core-service",
            log,
            disconnected_cb=self._nats_disconnected,
            reconnected_cb=self._nats_reconnected,
        )
        self._js = nc.jetstream()
        self._redis = aioredis.Redis.from_url(self.options.redis_url)
        try:
            await ensure_streams(self._js, self.options.decisions_window_s)
            await ensure_record_stream(self._js)
            await self._restore()
            await self._check_positions()
            self._decisions_out = self._chained(DECISIONS_STREAM)
            self._records_out = self._chained(RECORD_STREAM)
            await self._record_transitions()
            await nc.subscribe(CORE_RECORD_SUBJECT, cb=self._on_record_command)
            await self._loop()
            async with self._busy:
                await self._checkpoint()
        finally:
            self._closing = True
            self._refuse_commands("the core service stopped first")
            await self._end_command_tasks()
            await self._redis.aclose()
            if not nc.is_closed:
                await nc.close()

    def _chained(self, stream: str) -> ChainedPublisher:
        """This service's ordered publisher to ``stream``, chained after the stream's
        end as it is at the first publish (whoever wrote the last message)."""
        assert self._nc is not None
        foreign = self.metrics.foreign_messages.labels(stream)
        return ChainedPublisher(
            self._nc,
            stream,
            ack_timeout_s=self.options.publish_timeout_s,
            on_retry=self.metrics.publish_retries.inc,
            on_foreign=foreign.inc,
        )

    def stop(self) -> None:
        """Ask ``run`` to return once the events at hand are done."""
        self._stop.set()
        for publisher in (self._decisions_out, self._records_out):
            if publisher is not None:
                publisher.give_up_after_s = STOP_GRACE_S

    async def _nats_disconnected(self) -> None:
        if not self._closing:  # closing on purpose disconnects too
            log.warning("disconnected from NATS; reconnecting")

    async def _nats_reconnected(self) -> None:
        log.info("reconnected to NATS")

    # --- start: checkpoint, watermark, consumer ----------------------------------------

    async def _restore(self) -> None:
        assert self._redis is not None
        raw = await self._redis.get(self.options.checkpoint_key)
        if raw is None:
            log.info("no checkpoint under %s: a fresh core", self.options.checkpoint_key)
            return
        key = self.options.checkpoint_key
        try:
            checkpoint = CoreCheckpoint.model_validate_json(raw)
        except ValidationError as exc:
            why = describe(exc, default="document")
            raise CheckpointError(f"checkpoint {key}: {why}") from None
        if checkpoint.stream != EVENTS_STREAM:
            raise CheckpointError(
                f"checkpoint {key} counts in stream {checkpoint.stream}, not {EVENTS_STREAM}"
            )
        try:
            self.core = load_snapshot(checkpoint.snapshot, self._out.append, registry=self.registry)
        except CoreError as exc:  # SnapshotError, or a picker this install lacks
            raise CheckpointError(f"checkpoint {key}: {exc}") from None
        self.seq = self.checkpoint_seq = checkpoint.seq
        self.record.restore(checkpoint.recording)
        self.metrics.checkpoint_seq.set(checkpoint.seq)
        self.metrics.recording.set(int(self.record.on))
        log.info("restored the checkpoint at event seq %d", checkpoint.seq)
        self._recording = await self._read_recording()

    async def _read_recording(self) -> CoreRecording | None:
        """The last recording command applied (``xce:core:recording``), if readable."""
        assert self._redis is not None
        raw = await self._redis.get(self.options.recording_key)
        if raw is None:
            return None
        try:
            return CoreRecording.model_validate_json(raw)
        except ValidationError as exc:
            log.error(
                "%s is unreadable (%s): recording commands made after the checkpoint "
                "are not re-applied",
                self.options.recording_key,
                describe(exc, default="document"),
            )
            return None

    async def _check_positions(self) -> None:
        """Read where the core's messages end on ``XCE_DECISIONS`` and ``XCE_RECORD``
        (the watermarks) and check them, and the checkpoint, against ``XCE_EVENTS``.

        The core goes on after event C (the checkpoint's) and skips the decisions up
        to its last one on the stream, made from event S: both positions count in
        ``XCE_EVENTS`` as it is now, so both must be of this very stream. Refused:
        C past the stream's end, events after C gone from it, S past its end, event
        S stored after that decision (it cannot be the event the decision was made
        from: the stream was made anew meanwhile), a last decision whose id is not
        after the core's one before it (a message the core did not write).

        Raises:
            PositionError: one of those, in one line naming the streams, the
                positions and what to delete to start afresh.
            nats.errors.Error: a stream does not answer.
        """
        assert self._js is not None
        events = (await self._js.stream_info(EVENTS_STREAM)).state
        first, last, c = events.first_seq or 1, events.last_seq or 0, self.seq
        if c > last:
            raise PositionError(
                f"checkpoint {self.options.checkpoint_key} is at event seq {c}, past the end "
                f"of {EVENTS_STREAM} (seq {last}): {EVENTS_STREAM} was made anew or purged "
                f"after it; restore it, or {self._afresh()}"
            )
        if first > c + 1 and last > c:
            raise PositionError(
                f"events {c + 1}..{first - 1} after checkpoint {self.options.checkpoint_key} "
                f"(event seq {c}) are no longer in {EVENTS_STREAM} (it starts at seq {first}): "
                f"the core would miss them; restore them, or {self._afresh()}"
            )
        found = await self._last_own(DECISIONS_STREAM, parse_decision_msg_id)
        if found is not None:
            self._watermark = await self._checked_watermark(found, first, last)
            log.info(
                "decisions already on %s up to %s (seq %d)",
                DECISIONS_STREAM,
                msg_id_of(found),
                found.seq,
            )
        record = await self._last_own(RECORD_STREAM, parse_record_msg_id)
        if record is not None:
            self.record.watermark = parse_record_msg_id(msg_id_of(record))

    async def _last_own(
        self, stream: str, parse: Callable[[str], object | None]
    ) -> RawStreamMsg | None:
        """The core's last message on ``stream``, past other publishers' messages
        (counted in ``xce_core_foreign_messages`` and logged) and deleted ones; None:
        the core has none there.

        Raises:
            PositionError: none within ``RESUME_LOOKBACK`` messages of the end.
            nats.errors.Error: the stream does not answer.
        """
        assert self._js is not None
        tail = await scan_tail(
            self._js,
            stream,
            lambda msg_id: parse(msg_id) is not None,
            lookback=RESUME_LOOKBACK,
        )
        if not tail.complete:
            raise PositionError(
                f"none of the last {RESUME_LOOKBACK:,} messages of {stream} (up to seq "
                f"{tail.last_seq}) is the core's: another publisher writes to it; remove "
                f"their messages (nats stream rmm), or {self._afresh()}"
            )
        if tail.foreign:
            self.metrics.foreign_messages.labels(stream).inc(tail.foreign)
            log.warning(
                "%s ends with %d message(s) the core did not write (up to seq %d): "
                "ignored; the core goes on after them",
                stream,
                tail.foreign,
                tail.last_seq,
            )
        return tail.found

    async def _checked_watermark(self, found: RawStreamMsg, first: int, last: int) -> _Watermark:
        """The watermark the core's last decision ``found`` makes, checked against
        ``XCE_EVENTS`` (``first``..``last``: its sequences now; see
        ``_check_positions``).

        Raises:
            PositionError: the decision does not belong to this ``XCE_EVENTS``.
        """
        assert self._js is not None and found.seq is not None
        msg_id = msg_id_of(found)
        mark = parse_decision_msg_id(msg_id)
        assert mark is not None
        where = f"{DECISIONS_STREAM} ends with the core's decision {msg_id} (seq {found.seq})"
        fix = (
            f"if that message is not the core's, delete it (nats stream rmm {DECISIONS_STREAM} "
            f"{found.seq}); else {self._afresh()}"
        )
        if mark[0] > last:
            raise PositionError(
                f"{where}, made from event seq {mark[0]}, past the end of {EVENTS_STREAM} "
                f"(seq {last}): {fix}"
            )
        if mark[0] >= first:
            with contextlib.suppress(NotFoundError):  # deleted: nothing to compare
                event = await self._js.get_msg(EVENTS_STREAM, seq=mark[0])
                if event.time and found.time and event.time > found.time:
                    raise PositionError(
                        f"{where}, stored at {found.time:%Y-%m-%dT%H:%M:%S.%fZ}, before event "
                        f"seq {mark[0]} of {EVENTS_STREAM} (stored at "
                        f"{event.time:%Y-%m-%dT%H:%M:%S.%fZ}): {EVENTS_STREAM} was made anew "
                        f"since that decision; {fix}"
                    )
        # The core's decision before it (none within RESUME_LOOKBACK: nothing to compare).
        before = (
            await scan_tail(
                self._js,
                DECISIONS_STREAM,
                lambda msg_id: parse_decision_msg_id(msg_id) is not None,
                below=found.seq,
                lookback=RESUME_LOOKBACK,
            )
        ).found
        earlier = None if before is None else parse_decision_msg_id(msg_id_of(before))
        if before is not None and earlier is not None and earlier > mark:
            raise PositionError(
                f"{where}, which is not after the core's decision before it, "
                f"{msg_id_of(before)} (seq {before.seq}): {fix}"
            )
        return _Watermark(mark, found.seq, found.subject or "", found.data or b"")

    def _afresh(self) -> str:
        """How to start afresh, for a ``PositionError`` (the controller's stream too:
        a fresh core's decision ids start again at ``xce-core:1:0``)."""
        return (
            f"to start afresh, stop the bridge and delete {EVENTS_STREAM}, {DECISIONS_STREAM} "
            f"and {CTL_DECISIONS_STREAM} and the Redis keys {self.options.checkpoint_key} and "
            f"{self.options.recording_key} together"
        )

    async def _subscribe(self) -> PullConsumer:
        """The durable consumer, recreated to start right after the checkpoint."""
        assert self._js is not None
        js, durable = self._js, self.options.durable
        with contextlib.suppress(NotFoundError):
            await js.delete_consumer(EVENTS_STREAM, durable)
        # No filter subject: the stream holds only xce.events.>, and on a filtered
        # consumer nats-server 2.9 counts the pending messages by a scan under the
        # consumer's lock at every CONSUMER.INFO, holding up the fetches (a
        # monitor polling it slowed the service from ~8,500 to ~1,800 events/s).
        config = ConsumerConfig(
            durable_name=durable,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=self.seq + 1,
            ack_policy=AckPolicy.ALL,
            ack_wait=self.options.ack_wait_s,
            max_ack_pending=max(1000, self.options.fetch_batch),
        )
        await js.add_consumer(EVENTS_STREAM, config)
        assert self._nc is not None
        return await PullConsumer.bind(self._nc, EVENTS_STREAM, durable)

    # --- the loop ----------------------------------------------------------------------

    async def _loop(self) -> None:
        # The consumer keeps a pull request open while a batch is handled and
        # flushed, so the next batch is on its way meanwhile.
        sub = await self._subscribe()
        try:
            while not self._stop.is_set():
                await self._heartbeat()
                msgs = await self._fetch(sub)
                if msgs:
                    async with self._busy:
                        await self._flush(await self._handle(msgs))
                if self._checkpoint_due():
                    async with self._busy:
                        await self._checkpoint()
        finally:  # deliveries not taken come again to the next start
            await sub.unsubscribe()

    async def _fetch(self, sub: PullConsumer) -> list[Msg]:
        """The next deliveries (none within the fetch timeout, or after a failed
        fetch, logged).

        Raises:
            nats.errors.ConnectionClosedError: the client is closed for good (after
                a server error): the service stops with it.
        """
        options = self.options
        try:
            return await sub.fetch(options.fetch_batch, timeout=options.fetch_timeout_s)
        except TimeoutError:
            return []
        except ConnectionClosedError:
            raise
        except NatsError as exc:
            log.warning("fetch failed (%s); retrying", exc)
            await self._pause(options.fetch_timeout_s)
            return []

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)

    async def _handle(self, msgs: Sequence[Msg]) -> _Batch:
        """Take a fetched batch of deliveries: each event in order into the core, its
        outcome flushed (see ``_flush``) where a checkpoint or a recording command
        falls due inside it.

        Returns:
            What is left to flush.
        """
        batch = _Batch()
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
                await self._take_missing(self.seq + 1, batch)
            await self._take(seq, msg.subject, msg.data, batch)
            if self._flush_due() or batch.events >= self.options.fetch_batch:
                await self._flush(batch)
                batch = _Batch()
        return batch

    async def _take_missing(self, seq: int, batch: _Batch) -> None:
        """Take event ``seq`` straight from ``XCE_EVENTS`` (it was not delivered in
        order); a message no longer in the stream is skipped with a warning."""
        assert self._js is not None
        try:
            stored = await self._js.get_msg(EVENTS_STREAM, seq=seq)
        except NotFoundError:
            log.warning("event seq %d is no longer in %s: skipped", seq, EVENTS_STREAM)
            self.seq = seq
            return
        log.info("event seq %d taken from the stream (its delivery came late)", seq)
        await self._take(seq, stored.subject or "", stored.data or b"", batch)

    async def _take(self, seq: int, subject: str, data: bytes, batch: _Batch) -> None:
        """Push the event(s) of message ``seq`` into the core, in order; their
        decisions and dead letters wait in ``batch`` for the flush. A recording on
        gets each event's lines at once: its snapshots are of the core right after
        that event."""
        mark = self._watermark
        index = 0  # the message's decisions, counted across the events of a batch
        for taken in self._decode(seq, subject, data):
            event = taken.event
            self._out.clear()
            if isinstance(event, str):
                reason: str | None = event
            else:
                reason = self._apply(event)
                if reason is not None and taken.index is not None:  # the core refused it
                    reason = f"event {taken.index} of the batch: {reason}"
            for decision in self._out:
                out_subject = decision_subject(decision.op)
                out_data = dump_decision(decision)
                if mark is not None and (seq, index) <= mark.id:
                    self._skip(mark, (seq, index), out_subject, out_data)
                else:
                    batch.decisions.append(
                        Outgoing(
                            out_subject, out_data, decision_msg_id(seq, index), tag=decision.op
                        )
                    )
                index += 1
            if reason is not None:
                batch.letters.append(self._letter(seq, taken, reason))
            elif not isinstance(event, str):
                if self.record.on:
                    await self.record.event(self.core, seq, event, self._out)
                if event.type == "BEGIN_ROUND":
                    batch.round_ts = event.ts
            batch.events += 1
            self._since_checkpoint += 1
        self.seq = seq
        if mark is not None and seq >= mark.id[0]:
            self._passed(mark, seq, index)

    def _skip(self, mark: _Watermark, at: tuple[int, int], subject: str, data: bytes) -> None:
        """Skip decision ``at`` of a re-handled event: it is on ``XCE_DECISIONS``
        already (counted in ``xce_core_decisions_skipped``). The last one skipped
        must be the very decision the stream ends with.

        Raises:
            PositionError: it is not (the stream's last decision is not this core's).
        """
        if at == mark.id and (subject, data) != (mark.subject, mark.data):
            raise PositionError(
                f"{DECISIONS_STREAM} ends with decision {decision_msg_id(*at)} (seq {mark.seq}) "
                f"on {mark.subject}, but the core makes another one there, on {subject}: "
                f"that message is not this core's (delete it: nats stream rmm "
                f"{DECISIONS_STREAM} {mark.seq}), or {self._afresh()}"
            )
        mark.skipped += 1
        self.metrics.decisions_skipped.inc()

    def _passed(self, mark: _Watermark, seq: int, made: int) -> None:
        """Event ``seq`` at or past the watermark's event was taken (``made``
        decisions from it): nothing more to skip; log how many were.

        Raises:
            PositionError: the core made fewer decisions from the watermark's event
                than the stream holds.
        """
        if seq == mark.id[0] and made <= mark.id[1]:
            raise PositionError(
                f"{DECISIONS_STREAM} ends with decision {decision_msg_id(*mark.id)} (seq "
                f"{mark.seq}), but the core makes only {made} decision(s) from event seq "
                f"{seq}: that message is not this core's (delete it: nats stream rmm "
                f"{DECISIONS_STREAM} {mark.seq}), or {self._afresh()}"
            )
        if mark.skipped:
            log.info(
                "%d decisions of re-handled events skipped: on %s already, up to %s",
                mark.skipped,
                DECISIONS_STREAM,
                decision_msg_id(*mark.id),
            )
        self._watermark = None

    @staticmethod
    def _decode(seq: int, subject: str, data: bytes) -> list[Taken]:
        """``decode_message``; a message whose decoding fails in an unforeseen way (a
        bug) is one rejection with the error, never a stop: a stop would meet the
        same message again at every restart."""
        try:
            return decode_message(subject, data)
        except Exception as exc:
            log.exception("event seq %d on %s could not be decoded", seq, subject)
            return [Taken(f"message could not be decoded: {exc!r}", subject, data)]

    @staticmethod
    def _letter(seq: int, taken: Taken, reason: str) -> tuple[DeadLetter, str]:
        """The dead letter of an event of message ``seq`` and its message id (one
        per event: ``xce-core:dl:<seq>``, and ``:<index>`` for one of a batch)."""
        letter = DeadLetter.of(taken.subject, reason, data_of(taken), seq, taken.event_id)
        suffix = "" if taken.index is None else f":{taken.index}"
        return letter, f"xce-core:dl:{seq}{suffix}"

    def _flush_due(self) -> bool:
        """Whether the events taken so far must be flushed before the next one: a
        checkpoint is due, or a recording start or stop takes effect here."""
        seq = self.seq
        if self._count_checkpoint_due():
            return True
        if self._commands and self._commands[0].at <= seq:
            return True
        doc = self._recording
        return doc is not None and seq in (doc.start_seq, doc.end_seq)

    async def _flush(self, batch: _Batch) -> None:
        """Make the events taken durable, in this order: their decisions on
        ``XCE_DECISIONS`` (pipelined and chained, so none overtakes another and the
        stream's last id stays the watermark), their recording messages (likewise
        on ``XCE_RECORD``), their dead letters, the
        acknowledgement of the batch's last delivery (``AckPolicy.ALL``: it covers
        every one before), then the status, the recording commands now due and the
        checkpoint when one is due.

        Raises:
            nats.errors.Error: stopping, and the decisions or recording messages could
                not be stored within ``STOP_GRACE_S``; nothing is acknowledged, no
                checkpoint is written.
        """
        await self._store(self._decisions_out, batch.decisions, self._decision_stored)
        await self._flush_records()
        for letter, msg_id in batch.letters:
            await self._dead_letter(letter, msg_id)
        last = batch.last
        if last is not None:
            for _ in range(batch.events):
                self._fault("ack")
            with contextlib.suppress(NatsError):  # a lost acknowledgement: redelivered
                await last.ack()
            metadata = last.metadata
            self.metrics.events_waiting.set(metadata.num_pending)
            self.metrics.event_lag.set(max(0.0, time.time() - metadata.timestamp.timestamp()))
        self.metrics.events.inc(batch.events)
        self.metrics.events_seq.set(self.seq)
        if batch.round_ts is not None:
            await self._publish_status(batch.round_ts)
        else:
            await self._heartbeat()
        await self._record_transitions()
        if self._count_checkpoint_due():
            await self._checkpoint()

    async def _heartbeat(self) -> None:
        """Write ``heartbeat`` and ``seq`` into ``xce:core:status`` (``CoreStatus``)
        once ``HEARTBEAT_S`` passed since the last write: the admin API tells from it
        a core that runs from one that is gone. A Redis failure is logged; the next
        heartbeat tries again."""
        started = time.monotonic()
        if started - self._beat_at < HEARTBEAT_S:
            return
        self._beat_at = started
        assert self._redis is not None
        fields: dict[FieldT, EncodableT] = {"heartbeat": str(time.time()), "seq": str(self.seq)}
        try:
            await self._redis.hset(CORE_STATUS_KEY, mapping=fields)
        except RedisError as exc:
            if self._beat_written:  # once per outage, not every second
                log.warning("heartbeat not written (%s); the admin API shows the core down", exc)
            self._beat_written = False
        else:
            self._beat_written = True

    async def _publish_status(self, round_ts: int) -> None:
        """Write the ``CoreStatus`` hash (``xce:core:status``) after a round, for the
        admin API, heartbeat included; a Redis failure is logged and the next round
        tries again."""
        assert self._redis is not None
        sample = self.metrics.registry.get_sample_value
        now = time.time()
        self.metrics.last_round.set(now)
        self._beat_at = time.monotonic()
        status = CoreStatus(
            seq=self.seq,
            heartbeat=now,
            last_round_ts=round_ts,
            round_seconds=self._round_s,
            pending=self.metrics.totals[0],
            running=self.metrics.totals[1],
            suspended=self.metrics.totals[2],
            lag_seconds=sample("xce_core_event_lag_seconds") or 0.0,
            events_waiting=int(sample("xce_core_events_waiting") or 0),
            updated=now,
        )
        fields: dict[FieldT, EncodableT] = {k: v for k, v in to_hash(status).items()}
        try:
            await self._redis.hset(CORE_STATUS_KEY, mapping=fields)
        except RedisError as exc:
            log.warning("status after event seq %d not written: %s", self.seq, exc)

    def _apply(self, event: CoreEvent) -> str | None:
        """Push ``event`` into the core; the reason it was rejected, or None."""
        core, metrics = self.core, self.metrics
        hits, preemptions, given_up = core.cache_hits, core.preemptions, core.preemptions_given_up
        started = time.perf_counter()
        try:
            core.push_event(event)
        except CoreError as exc:
            return str(exc)
        except Exception as exc:  # a bug: reported and dead-lettered, never a stop
            log.exception("%s at ts=%d failed inside the core", event.type, event.ts)
            return f"{event.type} failed inside the core: {exc!r}"
        finally:
            if event.type == "BEGIN_ROUND":
                self._round_s = time.perf_counter() - started
                metrics.round_duration.observe(self._round_s)
                metrics.rounds.inc()
                metrics.cache_hits.inc(max(0, core.cache_hits - hits))
                metrics.preemptions.inc(core.preemptions - preemptions)
                metrics.preemptions_given_up.inc(core.preemptions_given_up - given_up)
                metrics.job_states((job.queue, job.state) for job in core.state.jobs.values())
        return None

    # --- publishing --------------------------------------------------------------------

    def _decision_stored(self, item: Outgoing) -> None:
        self.metrics.decisions.labels(str(item.tag)).inc()
        self._fault("decision")

    async def _dead_letter(self, letter: DeadLetter, msg_id: str) -> None:
        log.warning("event seq %s dead-lettered: %s", letter.seq, letter.reason)
        await self._publish(
            deadletter_subject(CORE_SOURCE),
            letter.model_dump_json().encode(),
            DEADLETTER_STREAM,
            msg_id,
        )
        self.metrics.dead_letters.inc()

    async def _publish(
        self,
        subject: str,
        payload: bytes,
        stream: str,
        msg_id: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Publish until the stream acknowledges it: the same id on every try, so a
        try the server took but whose acknowledgement was lost is not stored twice."""
        assert self._js is not None
        delay = 0.05
        all_headers = {**(headers or {}), MSG_ID_HEADER: msg_id}
        while True:
            try:
                await self._js.publish(subject, payload, stream=stream, headers=all_headers)
                return
            except NatsError as exc:
                if self._stop.is_set():
                    raise
                log.warning("publish of %s failed (%s); retrying in %.2f s", msg_id, exc, delay)
                self.metrics.publish_retries.inc()
                await self._pause(delay)
                delay = min(delay * 2, 2.0)

    # --- recording -----------------------------------------------------------------------

    async def _publish_record(
        self, subject: str, payload: bytes, msg_id: str, headers: dict[str, str]
    ) -> None:
        """Queue a recording message; ``_flush_records`` puts the queue on the stream
        before the batch's acknowledgement and before any checkpoint."""
        self._records_queue.append(Outgoing(subject, payload, msg_id, headers))

    async def _flush_records(self) -> None:
        """Put the queued recording messages on ``XCE_RECORD``, pipelined and chained
        like the decisions (so the stream's last message stays the record watermark).

        Raises:
            nats.errors.Error: stopping, and they could not be stored in time.
        """
        queued, self._records_queue = self._records_queue, []
        await self._store(self._records_out, queued, self._record_stored)

    async def _store(
        self,
        publisher: ChainedPublisher | None,
        items: list[Outgoing],
        confirm: Callable[[Outgoing], None],
    ) -> None:
        """Put ``items`` on ``publisher``'s stream, in order.

        Raises:
            nats.errors.Error: stopping, and not all were stored in time.
        """
        if not items:
            return
        assert publisher is not None
        if await publisher.publish(items, confirm) < len(items):
            raise NatsError(
                f"{publisher.stream}: messages up to event seq {self.seq} not stored before "
                "stopping"
            )

    def _record_published(self, skipped: bool) -> None:
        if skipped:  # those made are counted once stored (_record_stored)
            self.metrics.record_skipped.inc()

    def _record_stored(self, _item: Outgoing) -> None:
        self.metrics.record_messages.inc()
        self._fault("record")

    async def _on_record_command(self, msg: Msg) -> None:
        """A request on ``xce.core.record``: answered by a task of its own, so that a
        command waiting for its position does not hold up the next one."""
        task = asyncio.create_task(self._answer_record_command(msg))
        self._command_tasks.add(task)
        task.add_done_callback(self._command_tasks.discard)

    async def _answer_record_command(self, msg: Msg) -> None:
        try:
            command = CoreRecordCommand.model_validate_json(msg.data)
        except ValidationError as exc:
            reply = CoreRecordReply(
                ok=False, id="", error=f"bad recording command: {describe(exc, default='command')}"
            )
        else:
            reply = await self.record_command(command)
        if msg.reply:
            with contextlib.suppress(NatsError):
                await msg.respond(reply.model_dump_json().encode())

    async def record_command(self, command: CoreRecordCommand) -> CoreRecordReply:
        """Do one recording command once its position is reached (see the module
        docstring) and answer it.

        Returns:
            ``ok`` with the recording's positions, or why not (the service is
            stopping, the event stream cannot be read, Redis refused the command).
        """
        assert self._js is not None
        if self._stop.is_set():
            return CoreRecordReply(ok=False, id=command.id, error="the core service is stopping")
        try:
            end = (await self._js.stream_info(EVENTS_STREAM)).state.last_seq
        except NatsError as exc:
            return CoreRecordReply(
                ok=False, id=command.id, error=f"{EVENTS_STREAM} cannot be read: {exc}"
            )
        pending = _Command(command, end, asyncio.get_running_loop().create_future())
        async with self._busy:
            self._commands.append(pending)
            await self._apply_commands()
        return await pending.reply

    async def _end_command_tasks(self) -> None:
        """Let the answers of refused commands go out (1 s at most), then cancel."""
        tasks = list(self._command_tasks)
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=1.0)
        await cancel_and_wait(*pending)

    def _refuse_commands(self, why: str) -> None:
        for pending in self._commands:
            if not pending.reply.done():
                pending.reply.set_result(
                    CoreRecordReply(ok=False, id=pending.command.id, error=why)
                )
        self._commands.clear()

    async def _record_transitions(self) -> None:
        """At the position just reached: re-apply a start or stop of
        ``xce:core:recording`` made there before a restart, then the commands due."""
        doc, seq = self._recording, self.seq
        if doc is not None:
            run = self.record.state()
            if run is not None and run.id == doc.id:
                if run.end_seq is None and doc.end_seq == seq:
                    await self.record.end(self.core, seq)
                    await self._forced_checkpoint()
            elif doc.start_seq == seq:
                await self._end_recording(seq, write=False)
                await self.record.start(self.core, seq, doc)
                if doc.end_seq == seq:
                    await self.record.end(self.core, seq)
                await self._forced_checkpoint()
        self.metrics.recording.set(int(self.record.on))
        await self._apply_commands()

    async def _apply_commands(self) -> None:
        """Do, in order, the commands whose position is reached (``_busy`` held)."""
        while self._commands and self._commands[0].at <= self.seq:
            pending = self._commands.pop(0)
            try:
                reply = await self._do_command(pending.command)
            except RedisError as exc:
                reply = CoreRecordReply(
                    ok=False, id=pending.command.id, error=f"Redis refused the command: {exc}"
                )
            if not pending.reply.done():
                pending.reply.set_result(reply)
        self.metrics.recording.set(int(self.record.on))

    async def _do_command(self, command: CoreRecordCommand) -> CoreRecordReply:
        seq, run = self.seq, self.record.state()
        if command.action == "stop":
            if run is None or run.id != command.id:
                return CoreRecordReply(
                    ok=False, id=command.id, error=f"not recording {command.id!r}"
                )
            await self._end_recording(seq, write=True)
        elif run is not None and run.id == command.id:
            if run.end_seq is not None:
                return CoreRecordReply(
                    ok=False, id=command.id, error=f"recording {command.id!r} has ended"
                )
        else:
            await self._end_recording(seq, write=True)
            doc = CoreRecording(
                id=command.id,
                name=command.name,
                snapshot_interval=command.snapshot_interval,
                start_seq=seq,
            )
            await self._write_recording(doc)
            await self.record.start(self.core, seq, doc)
            await self._forced_checkpoint()
        run = self.record.state()
        assert run is not None
        return CoreRecordReply(
            ok=True,
            id=run.id,
            start_seq=run.start_seq,
            end_seq=run.end_seq,
            messages=run.messages,
        )

    async def _end_recording(self, seq: int, *, write: bool) -> None:
        """End the recording on, if any, after event ``seq``; ``write``: note the stop
        in ``xce:core:recording`` first (not when re-applying it)."""
        run = self.record.state()
        if run is None or run.end_seq is not None:
            return
        if write:
            doc = CoreRecording.model_validate(
                run.model_dump(exclude={"messages", "since_snapshot"}) | {"end_seq": seq}
            )
            await self._write_recording(doc)
        await self.record.end(self.core, seq)
        await self._forced_checkpoint()

    async def _write_recording(self, doc: CoreRecording) -> None:
        """Note a start or stop, with its position, before it takes effect.

        Raises:
            redis.exceptions.RedisError: Redis refused (the command is not done).
        """
        assert self._redis is not None
        await self._redis.set(self.options.recording_key, doc.model_dump_json())
        self._recording = doc

    async def _forced_checkpoint(self) -> None:
        """A checkpoint after a start or stop, retried until Redis takes it (or the
        service stops): ``xce:core:recording`` holds one command, and the next one
        may replace it only once a checkpoint covers this one."""
        while not await self._checkpoint(force=True):
            if self._stop.is_set():
                return
            await self._pause(0.5)

    # --- checkpoints -------------------------------------------------------------------

    def _count_checkpoint_due(self) -> bool:
        """``snapshot_every`` events since the last checkpoint. After a failed write
        (Redis down) the next try waits ``snapshot_seconds``: a full snapshot per
        event would stall the events meanwhile."""
        return self._since_checkpoint >= self.options.snapshot_every and (
            self._checkpoint_written or self._checkpoint_due()
        )

    def _checkpoint_due(self) -> bool:
        waited = time.monotonic() - self._last_checkpoint
        return self.seq > self.checkpoint_seq and waited >= self.options.snapshot_seconds

    async def _checkpoint(self, *, force: bool = False) -> bool:
        """Write the checkpoint of the events handled so far (one atomic ``SET``);
        ``force``: even when it covers no new event (after a recording command).

        Returns:
            Whether it was written (or nothing was to be written).
        """
        await self._flush_records()  # a checkpoint covers only what is on the streams
        if self.seq <= self.checkpoint_seq and not force:
            return True
        assert self._redis is not None
        self._fault("checkpoint")
        text = CoreCheckpoint(
            seq=self.seq, snapshot=save_snapshot(self.core), recording=self.record.state()
        ).model_dump_json()
        self._last_checkpoint = time.monotonic()
        try:
            await self._redis.set(self.options.checkpoint_key, text)
        except RedisError as exc:  # the next checkpoint tries again
            log.warning("checkpoint at event seq %d not written: %s", self.seq, exc)
            self.metrics.checkpoint_failures.inc()
            self._checkpoint_written = False
            return False
        self._checkpoint_written = True
        self.checkpoint_seq = self.seq
        self._since_checkpoint = 0
        self.metrics.checkpoints.inc()
        self.metrics.checkpoint_seq.set(self.seq)
        self._fault("checkpointed")
        return True

    def _fault(self, point: str) -> None:
        """SIGKILL this process at the configured fault point (crash tests only)."""
        fault = self.options.fault
        if fault is None or fault[0] != point:
            return
        self._faults[point] += 1
        if self._faults[point] == fault[1]:
            log.warning("fault injection: SIGKILL at %s %d", point, fault[1])
            os.kill(os.getpid(), signal.SIGKILL)


# --- the console script ---------------------------------------------------------------


def _fault(text: str) -> tuple[str, int]:
    point, _, count = text.partition(":")
    if point not in FAULT_POINTS or not count.isdigit() or int(count) < 1:
        raise argparse.ArgumentTypeError(f"expected POINT:N with POINT one of {FAULT_POINTS}")
    return point, int(count)


def build_parser() -> argparse.ArgumentParser:
    """The ``xce-core-service`` command line."""
    parser = OneLineParser(
        prog="xce-core-service",
        description="The XCE scheduling core as a service: events from NATS JetStream "
        "(XCE_EVENTS), decisions to XCE_DECISIONS, checkpoints in Redis.",
    )
    parser.add_argument("--nats", default="nats://127.0.0.1:4222", help="NATS server URL")
    parser.add_argument(
        "--redis", type=redis_url, default="redis://127.0.0.1:6379/0", help="Redis URL"
    )
    parser.add_argument(
        "--snapshot-every",
        type=whole(1),
        default=10_000,
        metavar="N",
        help="checkpoint every N events (default 10,000)",
    )
    parser.add_argument(
        "--snapshot-seconds",
        type=seconds,
        default=30.0,
        metavar="T",
        help="... or every T seconds with new events (default 30)",
    )
    parser.add_argument(
        "--metrics-port", type=port, default=None, metavar="P", help="serve /metrics on port P"
    )
    parser.add_argument("--metrics-addr", default="0.0.0.0", help="address /metrics binds")
    parser.add_argument(
        "--prng-seed", type=whole(0), default=0, help="PRNG seed of a fresh core (default 0)"
    )
    parser.add_argument(
        "--durable", type=consumer_name, default="xce-core", help="durable consumer name"
    )
    parser.add_argument("--checkpoint-key", default=CORE_CHECKPOINT_KEY, help="Redis key")
    parser.add_argument("--log-level", type=log_level, default="INFO", help=", ".join(LOG_LEVELS))
    parser.add_argument("--fault-kill-at", type=_fault, default=None, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the core service until SIGTERM or SIGINT; exit status 0 after a clean stop,
    2 on a bad option or an unusable checkpoint, 1 when a server cannot be reached."""
    parser = build_parser()
    args = parser.parse_args(argv)
    log_to_stderr(args.log_level)
    try:
        options = CoreServiceOptions(
            nats_url=args.nats,
            redis_url=args.redis,
            snapshot_every=args.snapshot_every,
            snapshot_seconds=args.snapshot_seconds,
            prng_seed=args.prng_seed,
            durable=args.durable,
            checkpoint_key=args.checkpoint_key,
            fault=args.fault_kill_at,
        )
    except ValueError as exc:
        parser.error(str(exc))
    metrics = CoreMetrics()
    try:
        service = CoreService(options, metrics=metrics)
        serving = serve(service, metrics, args.metrics_port, args.metrics_addr)
        return run_service("xce-core-service", serving, nats=args.nats, redis=args.redis)
    except (CheckpointError, CoreError) as exc:
        print(f"xce-core-service: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
