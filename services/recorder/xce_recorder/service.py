"""The recorder service: stores the core service's ordered record stream in Redis and
exports each recording to a ``.jsonl`` / ``.jsonl.gz`` file when it stops (Req 10
AC 9-10, 15).

**Control.** The recorder answers ``RecorderCommand`` requests (JSON) on the NATS
subject ``xce.recorder.control`` with a ``RecorderReply``: ``start`` (optional file
name), ``stop``, ``status`` (the admin API sends them). Its state is also kept in the
Redis hash ``xce:recorder:status`` (``RecorderStatus``), which the admin API reads.

**The core service makes the lines.** On ``start`` the recorder picks a recording id
(the name made a subject token, plus a random suffix) and asks the core service to
record (``CoreRecordCommand`` on ``xce.core.record``, with ``snapshot_interval``). The
core answers once it has published HEADER and the SNAPSHOT of its state at the
start position (every event the stream held when the command arrived) on
``xce.record.<id>`` of stream ``XCE_RECORD``; then, for every event it takes, the
event line, its DECISION lines and every N events a SNAPSHOT, in the format of
``xce-sched simulate --record`` (see ``xce_schemas.bus``). The recorder is answered
once that first pair is in Redis. It has no scheduling core of its own.

**Lines in Redis.** The recorder reads ``xce.record.<id>`` in order (an ephemeral
pull consumer; the messages are numbered, so a repeat is skipped and a missing one
read again) and appends each line to the Redis stream ``xce:recording:<name>``
(fields ``line``, the JSON text, and ``seq``, the event sequence), an event's lines
together in one MULTI/EXEC with the status: Redis holds whole events only.

**Stop.** ``stop`` is answered at once (state ``stopping``); the recorder asks the
core to stop (retried while the core does not answer, for at most ``stop_wait_s``),
the core stops once it has handled every event the stream held then and publishes
``END``, whose payload is the recording's ``END`` line; the recorder stores that
line last and then exports the Redis stream to ``<recordings dir>/<name>``
(the lines as they are; ``.gz``: compressed reproducibly) and deletes it. If ``END``
does not come within ``stop_wait_s`` (the core is down), the recording ends at the
last whole event read, without the ``END`` line, and ``last_error`` says so. A
recorder that finds a recording left unfinished by a crash asks the core to stop it
and exports what Redis holds (a recording that ends early, without ``END``: replay
says it was cut short and replays it only with ``--force``).

Recording changes nothing in scheduling (Req 10 AC 9): the core only reads its state
to make the lines. The recorder imports only ``xce_schemas``, nats, redis,
prometheus_client and the standard library (``tests/test_layering.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import math
import os
import re
import secrets
import signal
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from wsgiref.simple_server import WSGIServer

import nats
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError, NotFoundError, ServiceUnavailableError
from pydantic import ValidationError
from redis.exceptions import RedisError
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
    CORE_RECORD_SUBJECT,
    MSG_ID_HEADER,
    RECORD_DUPLICATE_WINDOW_S,
    RECORD_END,
    RECORD_LAST_HEADER,
    RECORD_SEQ_HEADER,
    RECORD_STREAM,
    RECORD_SUBJECTS,
    RECORD_TYPE_HEADER,
    CoreRecordCommand,
    CoreRecordReply,
    parse_record_msg_id,
    record_subject,
)
from xce_schemas.errors import describe

from xce_recorder.metrics import RecorderMetrics
from xce_recorder.options import (
    LOG_LEVELS,
    Parser,
    log_level,
    nats_servers,
    nats_url,
    port,
    reason,
    redis_url,
    root_reason,
    seconds,
    stop_wait,
    whole,
)
from xce_recorder.sink import export_stream

log = logging.getLogger("xce_recorder.service")

#: The longest wait for one answer to a stop before asking again, s.
STOP_RETRY_S = 5.0
#: NATS connection attempts at start before giving up (a wrong URL fails in about a
#: second, with one error); once connected, the recorder reconnects without end.
START_ATTEMPTS = 3
#: Wait between two NATS connection attempts, s.
RECONNECT_WAIT_S = 0.2
#: Event line types (every ``type`` but these three).
_NOT_EVENTS = frozenset({"HEADER", "SNAPSHOT", "DECISION", RECORD_END})


class ConnectError(OSError):
    """A server that cannot be reached when the recorder starts: the message names it
    and says why in one line (``NATS at nats://127.0.0.1:1: connection refused``)."""


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
            Req 10 AC 10); sent to the core service with each start.
        fetch_batch: messages fetched per request (≥ 1).
        poll_s: longest wait for new lines while recording, s (> 0).
        stop_wait_s: on stop, the longest wait for the core service to end the
            recording, s (≥ 0); the recording then ends at the last whole event read.
        start_timeout_s: the longest a start may take (the core catching up to the
            stream's end first), s; less than the admin API's command timeout (60 s),
            so a slow start is answered with its reason rather than timing out there.
        connect_timeout_s: the longest the recorder waits for NATS, and then for
            Redis, when it starts, s (> 0).

    Raises:
        ValueError: an option out of range.
    """

    nats_url: str = "nats://127.0.0.1:4222"
    redis_url: str = "redis://127.0.0.1:6379/0"
    recordings_dir: Path = Path("recordings")
    snapshot_interval: int = 10_000
    fetch_batch: int = 256
    poll_s: float = 0.1
    stop_wait_s: float = 30.0
    start_timeout_s: float = 45.0
    connect_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if not self.snapshot_interval >= 0:
            raise ValueError(f"snapshot_interval must be 0 or more, not {self.snapshot_interval}")
        if not self.fetch_batch >= 1:
            raise ValueError(f"fetch_batch must be 1 or more, not {self.fetch_batch}")
        for name in ("poll_s", "start_timeout_s", "connect_timeout_s"):
            value = getattr(self, name)
            if not 0 < value < math.inf:  # nan too
                raise ValueError(f"{name} must be positive and finite, not {value}")
        if not 0 <= self.stop_wait_s < math.inf:
            raise ValueError(f"stop_wait_s must be 0 or more and finite, not {self.stop_wait_s}")


def recording_id(name: str, suffix: str | None = None) -> str:
    """A fresh recording id for the file ``name``: the name with every character but
    letters, digits, ``_`` and ``-`` made ``_`` (at most 100), ``-``, and ``suffix``
    (default 12 random hex digits), e.g. ``night_jsonl_gz-3f9c0a1b2d4e``."""
    token = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:100]
    return f"{token}-{suffix if suffix is not None else secrets.token_hex(6)}"


@dataclass(frozen=True, slots=True)
class RecordLine:
    """One message of a record stream, decoded from its headers.

    Attributes:
        number: its number in the recording (from 0).
        seq: the event sequence it belongs to.
        type: the line's ``type`` (``END`` for the closing message).
        last: the last line of its event's group.
        data: the line (JSON text, no newline).
    """

    number: int
    seq: int
    type: str
    last: bool
    data: bytes


def decode_record_message(rid: str, msg: Msg) -> RecordLine | None:
    """The ``RecordLine`` of a message of recording ``rid``, or None when it is not
    one (another id, or no id)."""
    headers = msg.headers or {}
    mark = parse_record_msg_id(headers.get(MSG_ID_HEADER, ""))
    if mark is None or mark[0] != rid:
        return None
    seq_text = headers.get(RECORD_SEQ_HEADER, "")
    return RecordLine(
        number=mark[1],
        seq=int(seq_text) if seq_text.isdigit() else 0,
        type=headers.get(RECORD_TYPE_HEADER, ""),
        last=headers.get(RECORD_LAST_HEADER) == "1",
        data=msg.data,
    )


class RecordCursor:
    """Reads the messages of one recording from ``XCE_RECORD`` in number order,
    through an ephemeral pull consumer (no acknowledgements) filtered on its subject,
    from stream sequence ``start_seq`` on (none of its messages is before).

    A message read again (after a re-read) is skipped; a missing number makes the
    cursor re-read from the stream position after the last message taken, and is
    accepted as a gap (``gaps``) only when the stream itself lacks it.

    Attributes:
        next_number: the number expected next.
        gaps: messages found missing from the stream.
        duplicates: messages skipped as read already.
    """

    def __init__(self, js: JetStreamContext, rid: str, start_seq: int = 1) -> None:
        self.js = js
        self.rid = rid
        self.subject = record_subject(rid)
        self.next_number = 0
        self.gaps = 0
        self.duplicates = 0
        self._next_stream_seq = max(1, start_seq)
        self._sub: JetStreamContext.PullSubscription | None = None
        self._gap_at: int | None = None

    async def _open(self) -> JetStreamContext.PullSubscription:
        if self._sub is None:
            config = ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=self._next_stream_seq,
                ack_policy=AckPolicy.NONE,
                inactive_threshold=300.0,
            )
            self._sub = await self.js.pull_subscribe(
                self.subject, stream=RECORD_STREAM, config=config
            )
        return self._sub

    async def fetch(self, batch: int, timeout_s: float) -> list[RecordLine]:
        """The next messages in order (none when ``timeout_s`` passes first).

        Raises:
            nats.errors.Error: the server fails (the caller retries).
        """
        sub = await self._open()
        try:
            msgs = await sub.fetch(batch, timeout=timeout_s)
        except TimeoutError:
            return []
        except NatsError:
            await self.close()  # the next fetch reads again from where this one was
            raise
        taken: list[RecordLine] = []
        for msg in msgs:
            line = decode_record_message(self.rid, msg)
            if line is None:
                continue
            if line.number < self.next_number:
                self.duplicates += 1
                continue
            if line.number > self.next_number:
                if self._gap_at != self.next_number:
                    log.warning(
                        "%s: message %d follows %d; re-reading",
                        self.subject,
                        line.number,
                        self.next_number - 1,
                    )
                    self._gap_at = self.next_number
                    await self.close()
                    break
                log.error(
                    "%s: messages %d..%d are not in %s: the recording has a gap",
                    self.subject,
                    self.next_number,
                    line.number - 1,
                    RECORD_STREAM,
                )
                self.gaps += line.number - self.next_number
            self._gap_at = None
            taken.append(line)
            self.next_number = line.number + 1
            self._next_stream_seq = msg.metadata.sequence.stream + 1
        return taken

    async def close(self) -> None:
        """Drop the consumer (the server deletes an unused one by itself too)."""
        sub, self._sub = self._sub, None
        if sub is None:
            return
        with contextlib.suppress(NatsError, NotFoundError):
            await sub.unsubscribe()
        with contextlib.suppress(NatsError, NotFoundError):
            await self.js.delete_consumer(RECORD_STREAM, sub._consumer)


@dataclass
class _Session:
    """One recording in progress."""

    name: str
    key: str
    rid: str
    start_seq: int
    started: str
    cursor: RecordCursor
    #: Lines of the event being read (its last line not read yet).
    group: list[RecordLine] = field(default_factory=list)
    #: Whole events read, not yet in Redis.
    ready: list[RecordLine] = field(default_factory=list)
    #: The last event sequence in Redis, and the counts of lines there.
    seq: int = 0
    lines: int = 0
    snapshots: int = 0
    ended: bool = False
    stop_requested: bool = False
    stop_deadline: float = 0.0
    stop_task: asyncio.Task[None] | None = None
    #: Why the recording is not whole, when it is not.
    note: str | None = None
    gaps_counted: int = 0
    duplicates_counted: int = 0


class RecorderService:
    """The recorder (see the module docstring for ordering and control).

    Args:
        options: connections, recordings folder, snapshot interval.
        metrics: where to count; default a fresh ``RecorderMetrics``.

    ``run`` returns when ``stop`` is called; a recording on at that moment is
    finished (the core asked to stop it) and exported first.
    """

    def __init__(self, options: RecorderOptions, *, metrics: RecorderMetrics | None = None) -> None:
        self.options = options
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
            ConnectError: NATS or Redis cannot be reached at start, or NATS has no
                JetStream (one line naming the server and why).
            nats.errors.Error, redis.exceptions.RedisError: a server fails while the
                recorder gets ready.
            OSError: the recordings folder cannot be created.
        """
        if stop is not None:
            self._stop = stop
        self.options.recordings_dir.mkdir(parents=True, exist_ok=True)
        nc = self._nc = await self._connect_nats()
        try:
            self._js = nc.jetstream()
            self._redis = await self._connect_redis()
            try:
                try:
                    await ensure_record_stream(self._js)
                except (ServiceUnavailableError, NoRespondersError):
                    raise ConnectError(
                        f"NATS at {self.options.nats_url}: JetStream is not enabled "
                        "(start nats-server with -js)"
                    ) from None
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
        finally:
            if not nc.is_closed:
                await nc.close()

    async def _connect_nats(self) -> NatsClient:
        """A client connected to ``options.nats_url`` that reconnects without end.

        Failed tries at start are logged at DEBUG only: the error says why.

        Raises:
            ConnectError: no server answered ``START_ATTEMPTS`` tries, or not within
                ``connect_timeout_s``.
        """
        url, timeout = self.options.nats_url, self.options.connect_timeout_s
        failures: list[BaseException] = []
        nc_connected = False

        async def error_cb(exc: Exception) -> None:
            if nc_connected:
                log.warning("nats: %s", exc)
            else:
                failures.append(exc)
                log.debug("nats (connecting): %s", exc)

        try:
            servers = nats_servers(url)
        except ValueError as exc:
            raise ConnectError(f"NATS at {url}: not a NATS URL ({exc})") from None
        connecting = nats.connect(
            servers,
            name="xce-recorder",
            max_reconnect_attempts=START_ATTEMPTS,
            reconnect_time_wait=RECONNECT_WAIT_S,
            connect_timeout=timeout,
            error_cb=error_cb,
        )
        try:
            nc = await asyncio.wait_for(connecting, timeout)
        except (TimeoutError, NatsError, OSError) as exc:
            last = failures[-1] if failures else exc
            if isinstance(last, TimeoutError):  # asyncio's and nats-py's
                raise ConnectError(f"NATS at {url} did not answer within {timeout:g} s") from None
            raise ConnectError(f"NATS at {url}: {reason(last)}") from None
        nc.options["max_reconnect_attempts"] = -1  # later outages are waited out
        nc_connected = True
        return nc

    async def _connect_redis(self) -> aioredis.Redis:
        """A client of ``options.redis_url`` that has answered a PING.

        Raises:
            ConnectError: Redis cannot be reached, refuses or does not answer within
                ``connect_timeout_s``.
        """
        url, timeout = self.options.redis_url, self.options.connect_timeout_s
        client = aioredis.Redis.from_url(url)
        try:
            await asyncio.wait_for(client.ping(), timeout)
        except TimeoutError:
            why = f"Redis at {url} did not answer within {timeout:g} s"
        except RedisError as exc:
            why = f"Redis at {url}: {root_reason(exc)}"
        else:
            return client
        await client.aclose()
        raise ConnectError(why)

    def stop(self) -> None:
        """Ask ``run`` to finish the recording at hand, export it and return."""
        self._stop.set()
        self._wake.set()

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
            if self._stop.is_set() and not session.stop_requested:
                self._request_stop(session)
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
                self._request_stop(session)
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
            await self._begin(name)
        except StartError as exc:
            return self._reply(str(exc), conflict=exc.conflict)
        except (NatsError, RedisError, OSError) as exc:
            return self._reply(f"recording {name!r} not started: {exc}")
        self._wake.set()
        return self._reply()

    def _current(self) -> RecorderStatus:
        session = self._session
        status = self.status
        if session is not None:
            status = status.model_copy(
                update={"seq": session.seq, "lines": session.lines, "snapshots": session.snapshots}
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

    # --- the core service --------------------------------------------------------------

    async def _core(self, command: CoreRecordCommand, timeout_s: float) -> CoreRecordReply:
        """Send ``command`` to the core service and return its answer.

        Raises:
            nats.errors.NoRespondersError: no core service is listening.
            TimeoutError: it did not answer within ``timeout_s``.
            nats.errors.Error: the request failed otherwise.
            pydantic.ValidationError: the answer is not a ``CoreRecordReply``.
        """
        assert self._nc is not None
        msg = await self._nc.request(
            CORE_RECORD_SUBJECT, command.model_dump_json().encode(), timeout=max(0.05, timeout_s)
        )
        return CoreRecordReply.model_validate_json(msg.data)

    async def _abandon(self, rid: str) -> None:
        """Ask the core to stop recording ``rid``, which nobody will store (best effort:
        a core that does not answer ends it at its next start)."""
        with contextlib.suppress(NatsError, TimeoutError, ValidationError):
            await self._core(CoreRecordCommand(action="stop", id=rid), 2.0)

    # --- start -----------------------------------------------------------------------

    async def _begin(self, name: str) -> None:
        """Ask the core to start recording, store its HEADER and SNAPSHOT in Redis;
        the session is on when this returns.

        Raises:
            StartError: a recording of that name exists, the core service does not
                answer or refuses, or its first lines do not come in time.
        """
        assert self._js is not None and self._redis is not None
        options = self.options
        key = recording_key(name)
        if (options.recordings_dir / name).exists() or await self._redis.exists(key):
            raise StartError(f"a recording named {name!r} exists", conflict=True)
        deadline = time.monotonic() + options.start_timeout_s
        rid = recording_id(name)
        # The recording's messages all come after the stream's end now.
        first = (await self._js.stream_info(RECORD_STREAM)).state.last_seq + 1
        command = CoreRecordCommand(
            action="start", id=rid, name=name, snapshot_interval=options.snapshot_interval
        )
        try:
            reply = await self._core(command, options.start_timeout_s)
        except NoRespondersError:
            raise StartError(
                f"recording {name!r} not started: the core service is not running "
                f"(nobody answers on {CORE_RECORD_SUBJECT})"
            ) from None
        except TimeoutError:
            await self._abandon(rid)
            raise StartError(
                f"recording {name!r} not started: the core service did not start it within "
                f"{options.start_timeout_s:g} s"
            ) from None
        except ValidationError:
            raise StartError(
                f"recording {name!r} not started: the core answered nonsense"
            ) from None
        if not reply.ok or reply.start_seq is None:
            raise StartError(f"recording {name!r} not started: {reply.error}")
        started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        session = _Session(
            name=name,
            key=key,
            rid=rid,
            start_seq=reply.start_seq,
            started=started,
            cursor=RecordCursor(self._js, rid, first),
            seq=reply.start_seq,
        )
        try:
            while not session.ready and time.monotonic() < deadline:
                self._take(session, await session.cursor.fetch(options.fetch_batch, 0.5))
            if not session.ready:
                raise StartError(
                    f"recording {name!r} not started: its first lines did not come within "
                    f"{options.start_timeout_s:g} s"
                )
        except BaseException:
            await session.cursor.close()
            await self._abandon(rid)
            raise
        self.status = RecorderStatus(
            state="recording",
            name=name,
            start_seq=reply.start_seq,
            seq=reply.start_seq,
            started=started,
            last_file=self.status.last_file,
            recording_id=rid,
        )
        self._session = session
        self.metrics.recording.set(1)
        await self._flush(session)
        log.info("recording %s (%s) from event seq %d", name, rid, reply.start_seq)

    # --- recording -------------------------------------------------------------------

    async def _step(self, session: _Session) -> bool:
        """Read and store what came; True when the recording is over."""
        cursor = session.cursor
        self._take(session, await cursor.fetch(self.options.fetch_batch, self.options.poll_s))
        self.metrics.gaps.inc(cursor.gaps - session.gaps_counted)
        self.metrics.duplicates.inc(cursor.duplicates - session.duplicates_counted)
        session.gaps_counted, session.duplicates_counted = cursor.gaps, cursor.duplicates
        await self._flush(session)
        if session.ended:
            return True
        if session.stop_requested and time.monotonic() > session.stop_deadline:
            session.note = (
                f"the core service did not end recording {session.name} within "
                f"{self.options.stop_wait_s:g} s; the recording ends at event seq {session.seq}"
            )
            log.warning("%s", session.note)
            return True
        # A core that does not know this recording (it refused the stop) sends no more.
        stopper = session.stop_task
        return stopper is not None and stopper.done() and session.note is not None

    def _take(self, session: _Session, lines: list[RecordLine]) -> None:
        """Group the lines read into whole events, ready to store."""
        for line in lines:
            if line.type == RECORD_END:
                session.ended = True
                if session.group:
                    log.warning(
                        "recording %s: event seq %d left unfinished before END",
                        session.name,
                        session.group[0].seq,
                    )
                    session.group.clear()
                if line.data:  # the END line: the exported file says it is complete
                    session.ready.append(line)
                continue
            session.group.append(line)
            if line.last:
                session.ready.extend(session.group)
                session.group.clear()

    async def _flush(self, session: _Session) -> None:
        """Append the whole events read to the recording's Redis stream, with the
        status, in one transaction.

        Raises:
            redis.exceptions.RedisError: Redis fails (the lines stay ready).
        """
        assert self._redis is not None
        ready = session.ready
        if not ready and time.time() - self.status.heartbeat < 2.0:
            return
        snapshots = sum(line.type == "SNAPSHOT" for line in ready)
        events = sum(line.type not in _NOT_EVENTS for line in ready)
        decisions = sum(line.type == "DECISION" for line in ready)
        before = session.seq, session.lines, session.snapshots
        if ready:
            session.seq, session.lines = ready[-1].seq, session.lines + len(ready)
            session.snapshots += snapshots
        async with self._redis.pipeline(transaction=True) as tx:
            for line in ready:
                tx.xadd(session.key, {"line": line.data, "seq": line.seq})
            await self._save_status(tx)
            try:
                await tx.execute()
            except BaseException:  # not stored: counted when they are
                session.seq, session.lines, session.snapshots = before
                raise
        session.ready = []
        metrics = self.metrics
        metrics.lines.inc(len(ready))
        metrics.snapshots.inc(snapshots)
        metrics.events.inc(events)
        metrics.decisions.inc(decisions)
        if ready:
            metrics.seq.set(session.seq)

    # --- stop and export ---------------------------------------------------------------

    def _request_stop(self, session: _Session) -> None:
        session.stop_requested = True
        session.stop_deadline = time.monotonic() + self.options.stop_wait_s
        session.stop_task = asyncio.create_task(self._stop_core(session))

    async def _stop_core(self, session: _Session) -> None:
        """Ask the core to end the recording, again while it does not answer."""
        command = CoreRecordCommand(action="stop", id=session.rid)
        while not session.ended:
            left = session.stop_deadline - time.monotonic()
            if left <= 0:
                return
            try:
                # Asked again every few seconds: a core restarted meanwhile lost the
                # first request (a stop is idempotent).
                reply = await self._core(command, min(left, STOP_RETRY_S))
            except (NoRespondersError, TimeoutError):
                await asyncio.sleep(min(0.2, max(0.0, left)))
                continue
            except (NatsError, ValidationError) as exc:
                log.warning("stop of %s: %s; retrying", session.rid, exc)
                await asyncio.sleep(min(0.2, max(0.0, left)))
                continue
            if reply.ok:
                log.info("recording %s ends at event seq %s", session.name, reply.end_seq)
            else:
                session.note = f"the core service refused to stop {session.name}: {reply.error}"
                log.warning("%s", session.note)
                self._wake.set()
            return

    async def _finish(self, session: _Session) -> None:
        """Close the session and export its lines to the recordings folder."""
        if session.stop_task is not None and not session.stop_task.done():
            session.stop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await session.stop_task
        await session.cursor.close()
        self.metrics.recording.set(0)
        self.status = self._current().model_copy(update={"state": "exporting"})
        self._session = None
        await self._save_status()
        if session.cursor.gaps and session.note is None:
            session.note = f"{session.cursor.gaps} lines of {session.name} were missing"
        await self._export(session.name, session.note)

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
            update={
                "state": "idle",
                "name": None,
                "recording_id": None,
                "last_file": last_file,
                "last_error": error,
            }
        )
        await self._save_status()

    async def _recover(self) -> None:
        """Export a recording a previous recorder left unfinished (it crashed), after
        asking the core service to stop making it."""
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
        if left.recording_id is not None:
            await self._abandon(left.recording_id)
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


async def ensure_record_stream(js: JetStreamContext) -> None:
    """Create ``XCE_RECORD`` unless it exists (the core service creates the same one;
    an existing one is left as it is).

    Raises:
        nats.errors.Error: the server refuses or does not answer.
    """
    try:
        await js.stream_info(RECORD_STREAM)
    except NotFoundError:
        config = StreamConfig(
            name=RECORD_STREAM,
            subjects=[RECORD_SUBJECTS],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            duplicate_window=RECORD_DUPLICATE_WINDOW_S,
        )
        try:
            await js.add_stream(config)
        except BadRequestError:  # created meanwhile by another service
            await js.stream_info(RECORD_STREAM)


def _default_name() -> str:
    return "rec-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + ".jsonl.gz"


# --- the console script ---------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``xce-recorder`` command line: every value checked by its type, so that a
    bad one is one line naming the option and what it may be, exit status 2."""
    parser = Parser(
        prog="xce-recorder",
        description="Store the core service's record stream (XCE_RECORD: events, decisions, "
        "snapshots) in Redis and export each recording to a JSONL file; controlled on "
        f"NATS subject {RECORDER_CONTROL_SUBJECT} (xceadmin scheduler record start|stop).",
    )
    parser.add_argument(
        "--nats",
        type=nats_url,
        default="nats://127.0.0.1:4222",
        help="NATS server URL; several separated by commas (default nats://127.0.0.1:4222)",
    )
    parser.add_argument(
        "--redis",
        type=redis_url,
        default="redis://127.0.0.1:6379/0",
        help="Redis URL (default redis://127.0.0.1:6379/0)",
    )
    parser.add_argument(
        "--recordings-dir",
        type=Path,
        default=Path("recordings"),
        help="where recordings are exported, made if missing (default ./recordings)",
    )
    parser.add_argument(
        "--record-snapshot-interval",
        type=whole,
        default=10_000,
        metavar="N",
        help="a SNAPSHOT every N recorded events; 0: only the first (default 10000)",
    )
    parser.add_argument(
        "--stop-wait",
        type=stop_wait,
        default=30.0,
        metavar="S",
        help="on stop, wait at most S seconds (finite, ≥ 0) for the core service to end the "
        "recording; it then ends at the last whole event read (default 30)",
    )
    parser.add_argument(
        "--connect-timeout",
        type=seconds,
        default=10.0,
        metavar="S",
        help="give up when NATS or Redis does not answer within S seconds at start (default 10)",
    )
    parser.add_argument(
        "--metrics-port", type=port, default=None, metavar="P", help="serve /metrics on port P"
    )
    parser.add_argument(
        "--metrics-addr", default="0.0.0.0", help="address /metrics binds (default 0.0.0.0)"
    )
    parser.add_argument(
        "--log-level",
        type=log_level,
        default="INFO",
        help=", ".join(LOG_LEVELS) + " (default INFO)",
    )
    return parser


def _serve_metrics(metrics: RecorderMetrics, metrics_port: int, addr: str) -> WSGIServer:
    """``metrics.serve``, its failure one line naming the option at fault.

    Raises:
        OSError: the address or the port cannot be bound.
    """
    try:
        return metrics.serve(metrics_port, addr)
    except OSError as exc:
        at_fault = (
            f"--metrics-addr {addr}"
            if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL
            else f"--metrics-port {metrics_port}"
        )
        raise OSError(
            f"{at_fault}: cannot serve /metrics on {addr}:{metrics_port}: {reason(exc)}"
        ) from None


async def _serve(options: RecorderOptions, metrics_port: int | None, addr: str) -> None:
    metrics = RecorderMetrics()
    server = _serve_metrics(metrics, metrics_port, addr) if metrics_port is not None else None
    service = RecorderService(options, metrics=metrics)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, service.stop)
    try:
        await service.run()
    finally:
        if server is not None:
            server.shutdown()


def _make_folder(path: Path) -> str | None:
    """Make the recordings folder ``path``; None, or why it cannot be used."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return "not a folder"
    except OSError as exc:
        return f"cannot make the folder: {reason(exc)}"
    if not os.access(path, os.W_OK | os.X_OK):
        return "not writable"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the recorder until SIGTERM or SIGINT (a recording on is finished and
    exported first); exit status 0 after a clean stop, 2 on a bad option, 1 when a
    server cannot be reached, the metrics port not bound or the recordings folder
    not made: always after one line on stderr naming it, never a traceback."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    options = RecorderOptions(
        nats_url=args.nats,
        redis_url=args.redis,
        recordings_dir=args.recordings_dir,
        snapshot_interval=args.record_snapshot_interval,
        stop_wait_s=args.stop_wait,
        connect_timeout_s=args.connect_timeout,
    )
    why = _make_folder(options.recordings_dir)
    if why is not None:
        why = f"--recordings-dir {options.recordings_dir}: {why}"
    else:
        try:
            asyncio.run(_serve(options, args.metrics_port, args.metrics_addr))
        except NatsError as exc:  # after connecting (e.g. JetStream refused)
            why = f"NATS at {options.nats_url}: {exc}"
        except RedisError as exc:
            why = f"Redis at {options.redis_url}: {root_reason(exc)}"
        except OSError as exc:  # ConnectError, the metrics port
            why = str(exc)
        else:
            return 0
    print(f"xce-recorder: error: {why}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
