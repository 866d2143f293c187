"""The recorder service: stores the core service's ordered record stream in Redis and
exports each recording to a ``.jsonl`` / ``.jsonl.gz`` file when it stops (Req 10
AC 9-10, 15).

It is controlled on ``xce.recorder.control`` (``control``: start, stop, status; the
admin API sends them) and keeps its state in the Redis hash ``xce:recorder:status``
(``store``), which the admin API reads.

**The core service makes the lines.** On ``start`` the recorder picks a recording id
and asks the core service to record (``core_link``). The core publishes HEADER and
the SNAPSHOT of its state at the start position on ``xce.record.<id>`` of stream
``XCE_RECORD``; then, for every event it takes, the event line, its DECISION lines
and every N events a SNAPSHOT, in the format of ``xce-sched simulate --record``. The
recorder is answered once that first pair is in Redis. It has no scheduling core of
its own, and recording changes nothing in scheduling (Req 10 AC 9).

**Recording.** ``start`` opens it; the handler is ``_step``: read what came
(``cursor``), group it into whole events (``session``), append them to Redis with
the status (``store``).

**Stop.** ``stop`` is answered at once (state ``stopping``); the recorder asks the
core to stop (retried while the core does not answer, for at most ``stop_wait_s``),
the core stops once it has handled every event the stream held then and publishes
``END``, whose payload is the recording's ``END`` line; the recorder stores that
line last and then exports the recording and deletes it from Redis. If ``END`` does
not come within ``stop_wait_s`` (the core is down), the recording ends at the last
whole event read, without the ``END`` line, and ``last_error`` says so. A recorder
that finds a recording left unfinished by a crash asks the core to stop it and
exports what Redis holds (a recording that ends early, without ``END``: replay says
it was cut short and replays it only with ``--force``).

The recorder imports only ``xce_schemas``, ``xce_kit``, nats, redis,
prometheus_client and the standard library (``tests/test_layering.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import UTC, datetime

from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from redis.exceptions import RedisError
from xce_kit.bus import Connect
from xce_kit.connection import connect_nats
from xce_kit.retention import RetentionError
from xce_kit.streams import ensure_record_stream
from xce_schemas.admin import (
    RecorderCommand,
    RecorderReply,
    RecorderStatus,
    RecordingNameError,
    recording_name,
)

from xce_recorder.config import ConnectError, RecorderOptions, StartError
from xce_recorder.control import subscribe_control
from xce_recorder.core_link import CoreLink
from xce_recorder.metrics import RecorderMetrics
from xce_recorder.session import Session, Tally
from xce_recorder.start import start_session
from xce_recorder.store import RecordingStore

log = logging.getLogger("xce_recorder.service")

#: The status in Redis is rewritten at least this often, s: its ``heartbeat`` says
#: the recorder is alive.
HEARTBEAT_S = 2.0
#: Wait after a failed read or write before trying again, s.
RETRY_PAUSE_S = 0.5


class RecorderService:
    """The recorder (see the module docstring for ordering and control).

    Args:
        options: connections, recordings folder, snapshot interval.
        metrics: where to count; default a fresh ``RecorderMetrics``.
        connect: makes the NATS client (``xce_kit.bus.Connect``; default
            ``connect_nats``, a real server; ``MemoryBus.connect`` in tests).

    ``run`` returns when ``stop`` is called; a recording on at that moment is
    finished (the core asked to stop it) and exported first.
    """

    def __init__(
        self,
        options: RecorderOptions,
        *,
        metrics: RecorderMetrics | None = None,
        connect: Connect = connect_nats,
    ) -> None:
        self.options = options
        self._connect = connect
        self.metrics = metrics if metrics is not None else RecorderMetrics()
        self.status = RecorderStatus()
        self._session: Session | None = None
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._js: JetStreamContext | None = None
        self._core: CoreLink | None = None
        self._store: RecordingStore | None = None

    # --- lifecycle -------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Connect, answer control requests and record until ``stop`` is set.

        Raises:
            ConnectError: NATS or Redis does not answer within ``connect_timeout_s``.
            nats.errors.Error: NATS cannot be reached, has no JetStream
                (``ServiceUnavailableError``) or fails while the recorder gets ready.
            redis.exceptions.RedisError: Redis cannot be reached or fails so.
            RefusedError: Redis refused the login or the status transaction.
            OSError: the recordings folder cannot be created.
        """
        if stop is not None:
            self._stop = stop
        options = self.options
        options.recordings_dir.mkdir(parents=True, exist_ok=True)
        nc = await self._connect_nats()
        try:
            self._js = nc.jetstream()
            self._core = CoreLink(nc)
            store = self._store = await RecordingStore.connect(
                options.redis_url, options.connect_timeout_s, options.recordings_dir, self.metrics
            )
            try:
                await ensure_record_stream(self._js, options.limits)
                await self._recover()
                await self._save_status(first=True)
                sub = await subscribe_control(nc, self.handle, self._reply)
                try:
                    await self._loop()
                finally:
                    with contextlib.suppress(NatsError):
                        await sub.unsubscribe()
            finally:
                await store.close()
        finally:
            if not nc.is_closed:
                await nc.close()

    async def _connect_nats(self) -> NatsClient:
        """The ``connect`` given (``connect_nats``), within ``connect_timeout_s``.

        Raises:
            ConnectError: no answer in time.
            nats.errors.Error, OSError: as ``connect_nats``.
        """
        url, timeout = self.options.nats_url, self.options.connect_timeout_s
        try:
            return await asyncio.wait_for(self._connect(url, "xce-recorder", log), timeout)
        except TimeoutError:  # the wait's, or nats-py's: no answer either way
            raise ConnectError(f"NATS at {url} did not answer within {timeout:g} s") from None

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
                    await asyncio.wait_for(self._wake.wait(), HEARTBEAT_S)
                self._wake.clear()
                if time.time() - last_beat >= HEARTBEAT_S:
                    last_beat = time.time()
                    await self._save_status()
                continue
            if self._stop.is_set() and not session.stop_requested:
                self._request_stop(session)
            try:
                done = await self._step(session)
            except (NatsError, RedisError) as exc:
                log.warning("recording %s: %s; retrying", session.name, exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), RETRY_PAUSE_S)
                continue
            if done:
                await self._finish(session)

    # --- commands (carried by ``control``) ---------------------------------------------

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

    def _reply(self, error: str | None = None, *, conflict: bool = False) -> RecorderReply:
        return RecorderReply(
            ok=error is None, error=error, conflict=conflict, status=self._current()
        )

    def _current(self, tally: Tally | None = None) -> RecorderStatus:
        """The status now: with the counts of the recording on (``tally``: once its
        ready lines are stored) and a fresh heartbeat."""
        status = self.status
        session = self._session
        if session is not None:
            tally = tally or Tally(session.seq, session.lines, session.snapshots)
            status = status.model_copy(
                update={"seq": tally.seq, "lines": tally.lines, "snapshots": tally.snapshots}
            )
        return status.model_copy(update={"heartbeat": time.time()})

    async def _save_status(self, *, first: bool = False) -> None:
        assert self._store is not None
        self.status = self._current()
        await self._store.write_status(self.status, first=first)

    # --- start -----------------------------------------------------------------------

    async def _begin(self, name: str) -> None:
        """Ask the core to start recording, store its HEADER and SNAPSHOT in Redis;
        the session is on when this returns.

        Raises:
            StartError: a recording of that name exists, the core service does not
                answer or refuses, or its first lines do not come in time.
        """
        assert self._js is not None and self._store is not None and self._core is not None
        session = await start_session(name, self.options, self._js, self._store, self._core)
        start_seq = session.start_seq
        self.status = RecorderStatus(
            state="recording",
            name=name,
            start_seq=start_seq,
            seq=start_seq,
            started=session.started,
            last_file=self.status.last_file,
            recording_id=session.rid,
        )
        self._session = session
        self.metrics.recording.set(1)
        await self._flush(session)
        log.info("recording %s (%s) from event seq %d", name, session.rid, start_seq)

    # --- recording: the handler ------------------------------------------------------

    async def _step(self, session: Session) -> bool:
        """Read and store what came; True when the recording is over."""
        cursor = session.cursor
        try:
            lines = await cursor.fetch(self.options.fetch_batch, self.options.poll_s)
        except RetentionError as exc:  # the recording has a hole: it ends here
            session.note = f"recording {session.name} stopped: {exc}"
            log.error("%s", session.note)
            assert self._core is not None
            await self._core.abandon(session.rid)
            return True
        session.take(lines)
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

    async def _flush(self, session: Session) -> None:
        """Store the whole events read, with the status (at least every heartbeat).

        Raises:
            redis.exceptions.RedisError: Redis fails (the lines stay ready).
        """
        assert self._store is not None
        if not session.ready and time.time() - self.status.heartbeat < HEARTBEAT_S:
            return
        tally = session.tally()
        status = self._current(tally)
        await self._store.append(session.key, session.ready, status)
        self.status = status
        self.metrics.stored(session.stored(tally))

    # --- stop and export ---------------------------------------------------------------

    def _request_stop(self, session: Session) -> None:
        session.stop_requested = True
        session.stop_deadline = time.monotonic() + self.options.stop_wait_s
        session.stop_task = asyncio.create_task(self._stop_core(session))

    async def _stop_core(self, session: Session) -> None:
        """Ask the core to end the recording; a refusal ends it here (``_step``)."""
        assert self._core is not None
        refused = await self._core.stop(
            session.rid, session.name, session.stop_deadline, lambda: session.ended
        )
        if refused is not None:
            session.note = refused
            log.warning("%s", refused)
            self._wake.set()

    async def _finish(self, session: Session) -> None:
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
        """Export recording ``name`` and go idle; ``note``: why it is not whole."""
        assert self._store is not None
        failed = await self._store.export(name)
        self.status = self.status.model_copy(
            update={
                "state": "idle",
                "name": None,
                "recording_id": None,
                "last_file": self.status.last_file if failed else name,
                "last_error": failed or note,
            }
        )
        await self._save_status()

    async def _recover(self) -> None:
        """Export a recording a previous recorder left unfinished (it crashed), after
        asking the core service to stop making it."""
        assert self._store is not None and self._core is not None
        left, name = await self._store.unfinished()
        self.status = RecorderStatus(last_file=left.last_file, last_error=left.last_error)
        if left.state != "idle" and left.name is not None and left.recording_id is not None:
            await self._core.abandon(left.recording_id)
        if name is None:
            return
        note = (
            f"the recorder stopped while recording {name}; the recording ends at "
            f"event seq {left.seq}"
        )
        log.warning("%s: exporting what it holds", note)
        await self._export(name, note)


def _default_name() -> str:
    return "rec-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + ".jsonl.gz"
