"""The recorder service: the ordered recording of the live core into Redis, exported to
a ``.jsonl`` / ``.jsonl.gz`` file when it stops (Req 10 AC 9-10, 15).

**Control.** The recorder answers ``RecorderCommand`` requests (JSON) on the NATS
subject ``xce.recorder.control`` with a ``RecorderReply``: ``start`` (optional file
name), ``stop``, ``status``. Its state is also kept in the Redis hash
``xce:recorder:status`` (``RecorderStatus``), which the admin API reads. A start is
answered once the HEADER and the start SNAPSHOT are in Redis; a stop at once (state
``stopping``), the file appears when the export is done (state ``idle`` again,
``last_file`` set).

**A replica core gives the snapshots.** On ``start`` the recorder loads the core
service's checkpoint (``xce:core:snapshot``: sequence S and the core state; none: a
fresh core) into its own ``SchedCore`` and pushes it the events S+1..L of
``XCE_EVENTS``, L being the stream's last sequence at that moment. The recording
starts there: HEADER, then the SNAPSHOT of the replica (the state after event L).
Every later event is pushed into the replica as it is recorded, so a SNAPSHOT every
``snapshot_interval`` recorded events is the state after exactly that event.

**Each event followed by its decisions.** The recorded decisions are those the core
service published on ``XCE_DECISIONS`` (not the replica's; a difference is counted in
``xce_recorder_decision_mismatches_total``). The k-th decision of the event at
sequence s carries the message id ``xce-core:<s>:<k>``, and the core publishes them
one at a time in (s, k) order, so the recorder reads both streams in order and writes
event s followed by its decisions once s is *settled*, i.e. once no further decision
of s can appear: a decision of a later event has been read, or the core's durable
consumer has acknowledged s (the core acknowledges an event only after its decisions
are on the stream) and every decision published before that was read. Events the
core rejects (malformed, or refused by the core: the dead-lettered ones) are not
recorded, as the core never took them. The decisions are read from the last
sequence of ``XCE_DECISIONS`` at start on, which holds every decision of events
after L: the core publishes a decision only after its event entered the stream.

**Lines in Redis.** Each line is one entry of the Redis stream
``xce:recording:<name>`` (fields ``line``, the JSONL bytes, and ``seq``, the event
sequence); the lines of a batch of settled events go in one MULTI/EXEC with the
status update. On stop the recorder records the events up to the stream's end at
that moment (waiting at most ``stop_wait_s`` for the core's decisions), exports the
stream to ``<recordings dir>/<name>`` and deletes it from Redis. A recorder that
finds a recording left unfinished by a crash exports what it holds (each event
with all its decisions: a valid recording that ends early).

Recording changes nothing in scheduling: the recorder only reads the streams and the
checkpoint (Req 10 AC 9).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import nats
import orjson
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError
from pydantic import ValidationError
from redis.exceptions import RedisError
from xce_core.core import SchedCore
from xce_core.errors import CoreError
from xce_core.plugins import PluginRegistry
from xce_core.snapshot import load_snapshot
from xce_driver.live.core_service import decode_event
from xce_driver.live.streams import ensure_streams
from xce_driver.plugins import load_registry
from xce_driver.recording import Recorder
from xce_schemas import CoreEvent, Decision, parse_decision
from xce_schemas.admin import (
    RECORDER_CONTROL_SUBJECT,
    RECORDER_STATUS_KEY,
    RECORDING_KEY_PREFIX,
    RecorderCommand,
    RecorderReply,
    RecorderStatus,
    RecordingNameError,
    recorder_status_from_hash,
    recording_key,
    recording_name,
    to_hash,
)
from xce_schemas.bus import (
    CORE_CHECKPOINT_KEY,
    DECISIONS_STREAM,
    DECISIONS_SUBJECTS,
    EVENTS_STREAM,
    EVENTS_SUBJECTS,
    MSG_ID_HEADER,
    CoreCheckpoint,
    parse_decision_msg_id,
)
from xce_schemas.errors import describe

from xce_recorder.metrics import RecorderMetrics
from xce_recorder.sink import LineBuffer, export_stream

log = logging.getLogger("xce_recorder.service")


class ConnectError(OSError):
    """A server that does not answer when the recorder starts (the message names it)."""


class StartError(RuntimeError):
    """A recording that cannot start; the message says why in one line.

    Attributes:
        conflict: refused because of what exists (a recording of that name), not
            because something failed.
    """

    def __init__(self, message: str, *, conflict: bool = False) -> None:
        super().__init__(message)
        self.conflict = conflict


@dataclass(frozen=True)
class RecorderOptions:
    """What the recorder connects to and how it records.

    Attributes:
        nats_url: NATS server URL(s), comma-separated.
        redis_url: Redis URL.
        recordings_dir: where exported recordings go (created if missing).
        snapshot_interval: a SNAPSHOT every N recorded events (0: only the first;
            Req 10 AC 10).
        prng_seed: PRNG seed of a fresh replica when there is no checkpoint yet; must
            be the core service's (``--prng-seed``, default 0).
        core_durable: the core service's durable consumer, whose acknowledgements
            tell which events' decisions are complete.
        checkpoint_key: the Redis key of the core's checkpoint.
        fetch_batch: messages fetched per request (≥ 1).
        poll_s: longest wait for new events while recording, s (> 0).
        stop_wait_s: on stop, the longest wait for the core to publish the decisions
            of the events up to the stop, s (≥ 0); events it has not finished by then
            are left out.
        start_timeout_s: the longest a start may take (catching up the replica), s;
            less than the admin API's command timeout (60 s), so a slow start is
            answered with its reason rather than timing out there.
        connect_timeout_s: the longest the recorder waits for NATS when it starts, s.
    """

    nats_url: str = "nats://127.0.0.1:4222"
    redis_url: str = "redis://127.0.0.1:6379/0"
    recordings_dir: Path = Path("recordings")
    snapshot_interval: int = 10_000
    prng_seed: int = 0
    core_durable: str = "xce-core"
    checkpoint_key: str = CORE_CHECKPOINT_KEY
    fetch_batch: int = 256
    poll_s: float = 0.1
    stop_wait_s: float = 30.0
    start_timeout_s: float = 45.0
    connect_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if self.snapshot_interval < 0:
            raise ValueError(f"snapshot interval must be 0 or more, not {self.snapshot_interval}")
        if self.fetch_batch < 1:
            raise ValueError(f"fetch_batch must be 1 or more, not {self.fetch_batch}")
        if self.poll_s <= 0 or self.stop_wait_s < 0 or self.start_timeout_s <= 0:
            raise ValueError("poll_s and start_timeout_s must be positive, stop_wait_s ≥ 0")
        if self.connect_timeout_s <= 0:
            raise ValueError(f"connect timeout must be positive, not {self.connect_timeout_s}")
        if self.prng_seed < 0:
            raise ValueError(f"prng_seed must be 0 or more, not {self.prng_seed}")


class StreamCursor:
    """Reads one JetStream stream in sequence order from a given sequence, through an
    ephemeral pull consumer without acknowledgements.

    A message lost between server and client (a reconnect) shows as a gap; the cursor
    then recreates its consumer at the sequence it expects, and accepts the gap only
    when the stream itself lacks those messages.
    """

    def __init__(self, js: JetStreamContext, stream: str, subject: str, start_seq: int) -> None:
        self.js = js
        self.stream = stream
        self.subject = subject
        #: The next sequence expected.
        self.next_seq = max(1, start_seq)
        self._sub: JetStreamContext.PullSubscription | None = None
        self._gap_at: int | None = None

    async def _open(self) -> JetStreamContext.PullSubscription:
        if self._sub is None:
            config = ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=self.next_seq,
                ack_policy=AckPolicy.NONE,
                inactive_threshold=300.0,
            )
            self._sub = await self.js.pull_subscribe(
                self.subject, stream=self.stream, config=config
            )
        return self._sub

    async def fetch(self, batch: int, timeout_s: float) -> list[Msg]:
        """The next messages in order (none when ``timeout_s`` passes first).

        Raises:
            nats.errors.Error: the server fails (the caller retries).
        """
        sub = await self._open()
        try:
            msgs = await sub.fetch(batch, timeout=timeout_s)
        except TimeoutError:
            return []
        taken: list[Msg] = []
        for msg in msgs:
            seq = msg.metadata.sequence.stream
            if seq < self.next_seq:
                continue  # delivered again after a recreate
            if seq > self.next_seq and self._gap_at != self.next_seq:
                log.warning(
                    "%s: seq %d follows %d; re-reading", self.stream, seq, self.next_seq - 1
                )
                self._gap_at = self.next_seq
                await self.close()
                break
            self._gap_at = None
            taken.append(msg)
            self.next_seq = seq + 1
        return taken

    async def close(self) -> None:
        """Drop the consumer (the server deletes an unused one by itself too)."""
        sub, self._sub = self._sub, None
        if sub is None:
            return
        with contextlib.suppress(NatsError, NotFoundError):
            await sub.unsubscribe()
        with contextlib.suppress(NatsError, NotFoundError):
            await self.js.delete_consumer(self.stream, sub._consumer)


@dataclass
class _Event:
    """An event read from ``XCE_EVENTS``, waiting for its decisions."""

    seq: int
    subject: str
    data: bytes


@dataclass
class _Session:
    """One recording in progress."""

    name: str
    key: str
    buffer: LineBuffer
    recorder: Recorder
    replica: SchedCore
    made: list[Decision]
    start_seq: int
    started: str
    events: StreamCursor
    decisions: StreamCursor
    #: Events read and not yet written, in order.
    waiting: deque[_Event] = field(default_factory=deque)
    #: Decisions read, by event sequence, then index: the published JSON.
    published: dict[int, dict[int, bytes]] = field(default_factory=dict)
    #: The highest event sequence a read decision belongs to.
    decided_seq: int = 0
    #: Every event up to this one has all its decisions read.
    settled_seq: int = 0
    #: The last event written (skipped ones included).
    written_seq: int = 0
    snapshots: int = 0
    stop_requested: bool = False
    stop_at: int | None = None
    stop_deadline: float = 0.0
    #: The core durable's acknowledged floor seen last (monotone).
    floor: int = 0


class RecorderService:
    """The recorder (see the module docstring for ordering and control).

    Args:
        options: connections, recordings folder, snapshot interval.
        registry: plugins the replica core may need; default built-ins plus entry points.
        metrics: where to count; default a fresh ``RecorderMetrics``.

    ``run`` returns when ``stop`` is called; a recording on at that moment is
    finished (up to what is settled) and exported first.
    """

    def __init__(
        self,
        options: RecorderOptions,
        *,
        registry: PluginRegistry | None = None,
        metrics: RecorderMetrics | None = None,
    ) -> None:
        self.options = options
        self.registry = registry if registry is not None else load_registry()
        self.metrics = metrics if metrics is not None else RecorderMetrics()
        self.status = RecorderStatus()
        self._session: _Session | None = None
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._nc: NatsClient | None = None
        self._js: JetStreamContext | None = None
        self._redis: aioredis.Redis | None = None

    # --- lifecycle -------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Connect, answer control requests and record until ``stop`` is set.

        Raises:
            nats.errors.Error, redis.exceptions.RedisError, OSError: a server cannot be
                reached at start, or the recordings folder cannot be created.
        """
        if stop is not None:
            self._stop = stop
        self.options.recordings_dir.mkdir(parents=True, exist_ok=True)
        connecting = nats.connect(
            self.options.nats_url,
            name="xce-recorder",
            max_reconnect_attempts=-1,  # later outages are waited out
            reconnect_time_wait=0.2,
            error_cb=self._nats_error,
        )
        try:
            nc = self._nc = await asyncio.wait_for(connecting, self.options.connect_timeout_s)
        except TimeoutError:
            raise ConnectError(
                f"NATS at {self.options.nats_url} did not answer within "
                f"{self.options.connect_timeout_s:g} s"
            ) from None
        self._js = nc.jetstream()
        self._redis = aioredis.Redis.from_url(self.options.redis_url)
        try:
            await ensure_streams(self._js)
            await self._recover()
            await self._save_status()
            sub = await nc.subscribe(RECORDER_CONTROL_SUBJECT, cb=self._control)
            try:
                await self._loop()
            finally:
                with contextlib.suppress(NatsError):
                    await sub.unsubscribe()
        finally:
            await self._redis.aclose()
            if not nc.is_closed:
                await nc.close()

    def stop(self) -> None:
        """Ask ``run`` to finish the recording at hand, export it and return."""
        self._stop.set()
        self._wake.set()

    async def _nats_error(self, exc: Exception) -> None:
        log.warning("nats: %s", exc)

    async def _loop(self) -> None:
        last_beat = 0.0
        while True:
            session = self._session
            if session is None:
                if self._stop.is_set():
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), 2.0)
                self._wake.clear()
                if time.time() - last_beat >= 2.0:
                    last_beat = time.time()
                    await self._save_status()
                continue
            if self._stop.is_set():
                session.stop_requested = True
            try:
                done = await self._step(session)
            except (NatsError, RedisError) as exc:
                log.warning("recording %s: %s; retrying", session.name, exc)
                await self._pause(0.5)
                continue
            if done:
                await self._finish(session)

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)

    # --- control ---------------------------------------------------------------------

    async def _control(self, msg: Msg) -> None:
        """Answer one ``RecorderCommand``; a malformed one gets ``ok: false``."""
        try:
            command = RecorderCommand.model_validate_json(msg.data)
        except ValidationError as exc:
            reply = self._reply(f"bad control request: {describe(exc, default='request')}")
        else:
            reply = await self.handle(command)
        if msg.reply:
            with contextlib.suppress(NatsError):
                await msg.respond(reply.model_dump_json().encode())

    def _reply(self, error: str | None = None, *, conflict: bool = False) -> RecorderReply:
        return RecorderReply(
            ok=error is None, error=error, conflict=conflict, status=self._current()
        )

    async def handle(self, command: RecorderCommand) -> RecorderReply:
        """Do one control command.

        Returns:
            ``ok`` with the new status, or the reason it was refused (``conflict``:
            because of the recorder's state or an existing recording).
        """
        if command.action == "status":
            return self._reply()
        if command.action == "stop":
            session = self._session
            if session is None:
                return self._reply("not recording", conflict=True)
            if not session.stop_requested:
                session.stop_requested = True
                self.status = self._current().model_copy(update={"state": "stopping"})
                self._wake.set()
            return self._reply()
        if self.status.state != "idle":
            what = f"{self.status.state} {self.status.name!r}"
            return self._reply(f"the recorder is {what}; stop it first", conflict=True)
        if self._stop.is_set():
            return self._reply("the recorder is shutting down", conflict=True)
        try:
            name = recording_name(command.name if command.name is not None else _default_name())
        except RecordingNameError as exc:
            return self._reply(str(exc))
        try:
            await asyncio.wait_for(self._begin(name), self.options.start_timeout_s)
        except StartError as exc:
            return self._reply(str(exc), conflict=exc.conflict)
        except TimeoutError:
            return self._reply(
                f"recording {name!r} not started: catching up took over "
                f"{self.options.start_timeout_s:g} s"
            )
        except (NatsError, RedisError, CoreError, OSError) as exc:
            return self._reply(f"recording {name!r} not started: {exc}")
        self._wake.set()
        return self._reply()

    def _current(self) -> RecorderStatus:
        session = self._session
        status = self.status
        if session is not None:
            status = status.model_copy(
                update={
                    "seq": session.written_seq,
                    "lines": session.buffer.lines,
                    "snapshots": session.snapshots,
                }
            )
        return status.model_copy(update={"heartbeat": time.time()})

    async def _save_status(self, pipe: aioredis.client.Pipeline | None = None) -> None:
        self.status = self._current()
        mapping = to_hash(self.status)
        if pipe is not None:
            pipe.delete(RECORDER_STATUS_KEY)
            pipe.hset(RECORDER_STATUS_KEY, mapping=mapping)  # type: ignore[arg-type]
            return
        assert self._redis is not None
        try:
            async with self._redis.pipeline(transaction=True) as tx:
                tx.delete(RECORDER_STATUS_KEY)
                tx.hset(RECORDER_STATUS_KEY, mapping=mapping)  # type: ignore[arg-type]
                await tx.execute()
        except RedisError as exc:
            log.warning("status not written: %s", exc)

    # --- start -----------------------------------------------------------------------

    async def _begin(self, name: str) -> None:
        """Load the checkpoint, catch the replica up to the stream's end, write HEADER
        and SNAPSHOT into Redis; the session is on when this returns.

        Raises:
            StartError: a recording of that name exists, or the checkpoint is unusable.
        """
        assert self._js is not None and self._redis is not None
        js, client, options = self._js, self._redis, self.options
        key = recording_key(name)
        if (options.recordings_dir / name).exists() or await client.exists(key):
            raise StartError(f"a recording named {name!r} exists", conflict=True)
        made: list[Decision] = []
        replica, seq = await self._load_checkpoint(made)
        # Decisions first: every decision up to ``last_decision`` is of an event up to
        # ``last_event`` (an event is in the stream before the core decides on it).
        last_decision = (await js.stream_info(DECISIONS_STREAM)).state.last_seq
        events_info = (await js.stream_info(EVENTS_STREAM)).state
        last_event = events_info.last_seq
        if last_event < seq:
            raise StartError(
                f"the core's checkpoint is at event seq {seq}, past the end of "
                f"{EVENTS_STREAM} ({last_event})"
            )
        if events_info.messages and events_info.first_seq > seq + 1:
            raise StartError(
                f"events {seq + 1}..{events_info.first_seq - 1} are no longer in "
                f"{EVENTS_STREAM}: the state at the start cannot be rebuilt"
            )
        events = StreamCursor(js, EVENTS_STREAM, EVENTS_SUBJECTS, seq + 1)
        while events.next_seq <= last_event:
            for msg in await events.fetch(options.fetch_batch, 1.0):
                if msg.metadata.sequence.stream > last_event:
                    break  # not expected: the cursor stops at the end of a fetch
                _push(replica, made, msg.subject, msg.data)
        if events.next_seq > last_event + 1:  # read past the start: read again from there
            await events.close()
            events.next_seq = last_event + 1
        buffer = LineBuffer()
        recorder = Recorder(buffer, options.snapshot_interval)
        buffer.seq = last_event
        recorder.start(replica)
        started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        session = _Session(
            name=name,
            key=key,
            buffer=buffer,
            recorder=recorder,
            replica=replica,
            made=made,
            start_seq=last_event,
            started=started,
            events=events,
            decisions=StreamCursor(js, DECISIONS_STREAM, DECISIONS_SUBJECTS, last_decision + 1),
            settled_seq=last_event,
            written_seq=last_event,
            snapshots=1,
        )
        self.status = RecorderStatus(
            state="recording",
            name=name,
            start_seq=last_event,
            seq=last_event,
            started=started,
            last_file=self.status.last_file,
        )
        self._session = session
        self.metrics.recording.set(1)
        self.metrics.snapshots.inc()
        await self._flush(session)
        log.info("recording %s from event seq %d", name, last_event)

    async def _load_checkpoint(self, made: list[Decision]) -> tuple[SchedCore, int]:
        assert self._redis is not None
        key = self.options.checkpoint_key
        raw = await self._redis.get(key)
        if raw is None:
            core = SchedCore(made.append, self.options.prng_seed, registry=self.registry)
            return core, 0
        try:
            checkpoint = CoreCheckpoint.model_validate_json(raw)
        except ValidationError as exc:
            raise StartError(f"checkpoint {key}: {describe(exc, default='document')}") from None
        try:
            core = load_snapshot(checkpoint.snapshot, made.append, registry=self.registry)
        except CoreError as exc:
            raise StartError(f"checkpoint {key}: {exc}") from None
        return core, checkpoint.seq

    # --- recording -------------------------------------------------------------------

    async def _step(self, session: _Session) -> bool:
        """Read, settle and write what can be; True when the recording is over."""
        assert self._js is not None
        options = self.options
        wait = options.poll_s if not session.waiting else min(options.poll_s, 0.02)
        for msg in await session.events.fetch(options.fetch_batch, wait):
            session.waiting.append(_Event(msg.metadata.sequence.stream, msg.subject, msg.data))
        await self._read_decisions(session, 0.02)
        if session.stop_requested and session.stop_at is None:
            session.stop_at = (await self._js.stream_info(EVENTS_STREAM)).state.last_seq
            session.stop_deadline = time.monotonic() + options.stop_wait_s
            log.info("recording %s stops after event seq %d", session.name, session.stop_at)
            await self._save_status()
        if session.waiting and session.waiting[0].seq >= session.decided_seq:
            await self._sync_floor(session)
        self._write_settled(session)
        await self._flush(session)
        if session.stop_at is None:
            return False
        if session.written_seq >= session.stop_at:
            return True
        if time.monotonic() > session.stop_deadline:
            log.warning(
                "recording %s: the core did not finish events %d..%d within %g s; "
                "the recording ends at event seq %d",
                session.name,
                session.written_seq + 1,
                session.stop_at,
                options.stop_wait_s,
                session.written_seq,
            )
            return True
        return False

    async def _read_decisions(self, session: _Session, timeout_s: float) -> None:
        for msg in await session.decisions.fetch(self.options.fetch_batch, timeout_s):
            self._take_decision(session, msg)

    def _take_decision(self, session: _Session, msg: Msg) -> None:
        msg_id = (msg.headers or {}).get(MSG_ID_HEADER, "")
        mark = parse_decision_msg_id(msg_id)
        if mark is None:
            log.warning("decision with id %r is not a core's: not recorded", msg_id)
            return
        seq, index = mark
        session.decided_seq = max(session.decided_seq, seq)
        if seq <= session.written_seq:
            return  # of an event before the start (or already written)
        session.published.setdefault(seq, {})[index] = msg.data

    async def _sync_floor(self, session: _Session) -> None:
        """Settle the events the core has acknowledged: its decisions of them are on
        the stream, up to the stream's end read after the acknowledgement floor."""
        assert self._js is not None
        try:
            info = await self._js.consumer_info(EVENTS_STREAM, self.options.core_durable)
        except NotFoundError:
            return  # the core service is not (yet) consuming
        floor = info.ack_floor.stream_seq if info.ack_floor is not None else 0
        session.floor = max(session.floor, floor or 0)
        end = (await self._js.stream_info(DECISIONS_STREAM)).state.last_seq
        while session.decisions.next_seq <= end:
            before = session.decisions.next_seq
            await self._read_decisions(session, 0.5)
            if session.decisions.next_seq == before:
                return  # not delivered yet: settle on a later step
        session.settled_seq = max(session.settled_seq, session.floor)

    def _write_settled(self, session: _Session) -> None:
        """Write, in order, every waiting event whose decisions are all read."""
        settled = max(session.settled_seq, session.decided_seq - 1)
        if session.stop_at is not None:
            settled = min(settled, session.stop_at)
        buffer, recorder, metrics = session.buffer, session.recorder, self.metrics
        while session.waiting and session.waiting[0].seq <= settled:
            item = session.waiting.popleft()
            published = session.published.pop(item.seq, {})
            session.written_seq = item.seq
            buffer.seq = item.seq
            accepted = _push(session.replica, session.made, item.subject, item.data)
            if accepted is None:
                metrics.events_skipped.inc()
                if published:
                    metrics.mismatches.inc()
                continue
            decisions = [published[i] for i in sorted(published)]
            recorder.event(accepted)
            for data in decisions:
                try:
                    decision = parse_decision(orjson.loads(data))
                except (orjson.JSONDecodeError, ValidationError) as exc:
                    log.warning("decision of event seq %d not recorded: %s", item.seq, exc)
                    metrics.mismatches.inc()
                    continue
                recorder.decision(decision)
            mine = [d.model_dump_json().encode() for d in session.made]
            if mine != decisions:
                metrics.mismatches.inc()
                log.warning("event seq %d: the replica's decisions differ", item.seq)
            metrics.events.inc()
            metrics.decisions.inc(len(decisions))
            metrics.seq.set(item.seq)
            lines_before = buffer.lines
            recorder.after_event(session.replica)
            if buffer.lines > lines_before:
                session.snapshots += 1
                metrics.snapshots.inc()

    async def _flush(self, session: _Session) -> None:
        """Append the buffered lines to the recording's Redis stream, with the status,
        in one transaction (retried until Redis takes it).

        Raises:
            redis.exceptions.RedisError: Redis fails (the lines stay buffered).
        """
        assert self._redis is not None
        lines = session.buffer.pending
        if not lines and time.time() - self.status.heartbeat < 2.0:
            return
        async with self._redis.pipeline(transaction=True) as tx:
            for seq, line in lines:
                tx.xadd(session.key, {"line": line, "seq": seq})
            await self._save_status(tx)
            await tx.execute()
        session.buffer.take()
        self.metrics.lines.inc(len(lines))

    # --- stop and export ---------------------------------------------------------------

    async def _finish(self, session: _Session) -> None:
        """Close the session and export its lines to the recordings folder."""
        await session.events.close()
        await session.decisions.close()
        self.metrics.recording.set(0)
        self.status = self._current().model_copy(update={"state": "exporting"})
        self._session = None
        await self._save_status()
        await self._export(session.name)

    async def _export(self, name: str, note: str | None = None) -> None:
        assert self._redis is not None
        key = RECORDING_KEY_PREFIX + name
        path = self.options.recordings_dir / name
        started = time.perf_counter()
        last_file: str | None = name
        error = note
        try:
            lines = await export_stream(self._redis, key, path)
            await self._redis.delete(key)
        except (OSError, RedisError) as exc:
            last_file, error = self.status.last_file, f"export of {name} failed: {exc}"
            log.error("%s (the lines stay in Redis under %s)", error, key)
            self.metrics.export_failures.inc()
        else:
            self.metrics.recordings.inc()
            self.metrics.export_seconds.observe(time.perf_counter() - started)
            log.info("recording %s exported: %d lines", path, lines)
        self.status = self.status.model_copy(
            update={"state": "idle", "name": None, "last_file": last_file, "last_error": error}
        )
        await self._save_status()

    async def _recover(self) -> None:
        """Export a recording a previous recorder left unfinished (it crashed)."""
        assert self._redis is not None
        raw: dict[bytes, bytes] = await self._redis.hgetall(  # type: ignore[assignment]
            RECORDER_STATUS_KEY
        )
        try:
            left = recorder_status_from_hash(raw)
        except ValidationError as exc:
            log.warning("ignoring an unreadable %s: %s", RECORDER_STATUS_KEY, exc)
            return
        self.status = RecorderStatus(last_file=left.last_file, last_error=left.last_error)
        if left.state == "idle" or left.name is None:
            return
        try:
            name = recording_name(left.name)
        except RecordingNameError:
            return
        if not await self._redis.exists(RECORDING_KEY_PREFIX + name):
            return
        note = (
            f"the recorder stopped while recording {name}; the recording ends at "
            f"event seq {left.seq}"
        )
        log.warning("%s: exporting what it holds", note)
        await self._export(name, note)


def _push(core: SchedCore, made: list[Decision], subject: str, data: bytes) -> CoreEvent | None:
    """Push one raw event into ``core`` as the core service does; the event, or None
    when the core service rejects it too (malformed, or refused by the core)."""
    event = decode_event(subject, data)
    if isinstance(event, str):
        return None
    made.clear()
    try:
        core.push_event(event)
    except CoreError:
        return None
    except Exception:  # a bug in the core: the core service dead-letters it too
        log.exception("%s at ts=%d failed inside the replica core", event.type, event.ts)
        return None
    return event


def _default_name() -> str:
    return "rec-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + ".jsonl.gz"


# --- the console script ---------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``xce-recorder`` command line."""
    parser = argparse.ArgumentParser(
        prog="xce-recorder",
        description="Record the live core (events, decisions, snapshots) into Redis and "
        "export each recording to a JSONL file; controlled on NATS subject "
        f"{RECORDER_CONTROL_SUBJECT} (xceadmin scheduler record start|stop).",
    )
    parser.add_argument("--nats", default="nats://127.0.0.1:4222", help="NATS server URL")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0", help="Redis URL")
    parser.add_argument(
        "--recordings-dir",
        type=Path,
        default=Path("recordings"),
        help="where recordings are exported (default ./recordings)",
    )
    parser.add_argument(
        "--record-snapshot-interval",
        type=int,
        default=10_000,
        metavar="N",
        help="a SNAPSHOT every N recorded events; 0: only the first (default 10000)",
    )
    parser.add_argument(
        "--prng-seed", type=int, default=0, help="the core service's --prng-seed (default 0)"
    )
    parser.add_argument("--core-durable", default="xce-core", help="the core's durable consumer")
    parser.add_argument("--checkpoint-key", default=CORE_CHECKPOINT_KEY, help="Redis key")
    parser.add_argument(
        "--stop-wait",
        type=float,
        default=30.0,
        metavar="S",
        help="on stop, wait at most S seconds for the core's decisions (default 30)",
    )
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="give up when NATS does not answer within S seconds at start (default 10)",
    )
    parser.add_argument(
        "--metrics-port", type=int, default=None, metavar="P", help="serve /metrics on port P"
    )
    parser.add_argument("--metrics-addr", default="0.0.0.0", help="address /metrics binds")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    return parser


async def _serve(options: RecorderOptions, metrics_port: int | None, addr: str) -> None:
    metrics = RecorderMetrics()
    server = metrics.serve(metrics_port, addr) if metrics_port is not None else None
    service = RecorderService(options, metrics=metrics)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, service.stop)
    try:
        await service.run()
    finally:
        if server is not None:
            server.shutdown()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the recorder until SIGTERM or SIGINT (a recording on is finished and
    exported first); exit status 0 after a clean stop, 2 on a bad option, 1 when a
    server cannot be reached or the recordings folder cannot be made."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        options = RecorderOptions(
            nats_url=args.nats,
            redis_url=args.redis,
            recordings_dir=args.recordings_dir,
            snapshot_interval=args.record_snapshot_interval,
            prng_seed=args.prng_seed,
            core_durable=args.core_durable,
            checkpoint_key=args.checkpoint_key,
            stop_wait_s=args.stop_wait,
            connect_timeout_s=args.connect_timeout,
        )
    except ValueError as exc:
        parser.error(str(exc))
    try:
        asyncio.run(_serve(options, args.metrics_port, args.metrics_addr))
    except (NatsError, RedisError, OSError) as exc:
        print(f"xce-recorder: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
