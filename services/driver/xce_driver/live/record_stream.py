"""The core service's ordered record stream: recording lines on ``XCE_RECORD``.

While a recording is on, the core service hands each event it took, with that
event's decisions, to a ``RecordStream``, which builds the lines exactly as
``xce-sched simulate --record`` writes them (``xce_driver.recording.RecordingWriter``)
and publishes them, one message a line, on ``record_subject(id)`` (the message ids,
headers and ``END`` message are described in ``xce_schemas.bus``). The recorder
service stores them; nothing here changes a decision.

**Exactly the uninterrupted stream after a crash.** Every line is a function of the
core's state and the event stream: the HEADER's wall time is derived from the core's
time (in the live system the events' ``ts`` is the bridge's wall clock), SNAPSHOTs
are ``save_snapshot`` of a state that a restarted core rebuilds exactly, and the
message number ``n`` and the snapshot cadence are carried in the core's checkpoint
(``RecordingRun``). A restarted core therefore publishes the same messages under the
same ids; those already on the stream are skipped by the *watermark* (the id of the
core's last message on the stream, read at start past any other publisher's: the
core service publishes them in order, each chained to the one before it, so
everything before it is there too), and JetStream's de-duplication drops any other
repeat within the duplicate window.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from xce_core.core import SchedCore
from xce_core.snapshot import save_snapshot

# XCE_RECORD is declared in the kit: the recorder, which may not import this
# package, creates it too.
from xce_kit.streams import ensure_record_stream as ensure_record_stream
from xce_kit.streams import record_stream_config as record_stream_config
from xce_schemas import CoreEvent, Decision
from xce_schemas.bus import (
    RECORD_END,
    RECORD_LAST_HEADER,
    RECORD_SEQ_HEADER,
    RECORD_TYPE_HEADER,
    CoreRecording,
    RecordingRun,
    record_msg_id,
    record_subject,
)

from xce_driver.recording import RecordingWriter

log = logging.getLogger("xce_driver.live.record_stream")

#: ``publish(subject, payload, msg_id, headers)``: hand a message on to ``XCE_RECORD``,
#: in order (the core service queues it and stores the queue, chained, before it
#: acknowledges events or writes a checkpoint).
Publisher = Callable[[str, bytes, str, dict[str, str]], Awaitable[None]]


def start_wall(ts_ns: int) -> str:
    """The HEADER wall time of a live recording starting at core time ``ts_ns`` (ns):
    that time in whole seconds, ISO 8601 UTC (the live events' ``ts`` is wall time)."""
    return datetime.fromtimestamp(ts_ns // 10**9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class LineBatch(RecordingWriter):
    """A ``RecordingWriter`` that keeps the lines of one step in memory, each with its
    ``type``, until they are published.

    Attributes:
        pending: ``(type, line)`` pairs not taken yet; a line has no newline.
    """

    def __init__(self) -> None:
        # No file: the lines go to the bus (``RecordingWriter`` would open one).
        self.path = Path("<XCE_RECORD>")
        self.lines = 0
        self.pending: list[tuple[str, bytes]] = []

    def _write(self, line: bytes, kind: str) -> None:
        self.pending.append((kind, line))
        self.lines += 1

    def close(self) -> None:
        """Nothing to close."""

    def take(self) -> list[tuple[str, bytes]]:
        """The pending lines, which are no longer held."""
        taken, self.pending = self.pending, []
        return taken


class RecordStream:
    """The recording the core service is making (at most one at a time).

    Args:
        publish: how a message reaches ``XCE_RECORD``, in the order handed over.
        on_message: called after each message is handed over or skipped (metrics,
            fault injection), with True when it was skipped.

    Attributes:
        watermark: ``(id, number)`` of the last message on the stream when the
            service started; messages of that recording up to that number are not
            published again.
    """

    def __init__(
        self, publish: Publisher, on_message: Callable[[bool], None] | None = None
    ) -> None:
        self._publish = publish
        self._on_message = on_message
        self.watermark: tuple[str, int] | None = None
        self._run: CoreRecording | None = None
        self._messages = 0
        self._since_snapshot = 0
        self._lines = LineBatch()

    # --- state -------------------------------------------------------------------------

    @property
    def on(self) -> bool:
        """A recording is on (started and not ended)."""
        return self._run is not None and self._run.end_seq is None

    def state(self) -> RecordingRun | None:
        """The last recording (on or ended) with its counters, for a checkpoint."""
        if self._run is None:
            return None
        return RecordingRun(
            **self._run.model_dump(),
            messages=self._messages,
            since_snapshot=self._since_snapshot,
        )

    def restore(self, run: RecordingRun | None) -> None:
        """Take up the recording a checkpoint holds (None: none)."""
        if run is None:
            self._run, self._messages, self._since_snapshot = None, 0, 0
            return
        self._run = CoreRecording.model_validate(
            run.model_dump(exclude={"messages", "since_snapshot"})
        )
        self._messages = run.messages
        self._since_snapshot = run.since_snapshot

    # --- lines -------------------------------------------------------------------------

    async def start(self, core: SchedCore, seq: int, recording: CoreRecording) -> None:
        """Start ``recording`` at event ``seq``: HEADER and a SNAPSHOT of ``core`` now.

        Raises:
            nats.errors.Error: publishing failed while the service stops.
        """
        self._run = recording.model_copy(update={"start_seq": seq, "end_seq": None})
        self._messages = self._since_snapshot = 0
        lines = self._lines
        # The rounds are the bridge's ticks, events like any other: a what-if pushes them.
        lines.header(core.state.config, core.last_ts, start_wall(core.last_ts), rounds="controller")
        lines.snapshot(save_snapshot(core))
        await self._send(seq)
        log.info("recording %s started at event seq %d", recording.id, seq)

    async def event(
        self, core: SchedCore, seq: int, event: CoreEvent, decisions: Sequence[Decision]
    ) -> None:
        """Record event ``seq`` (which ``core`` took) and its decisions, and a SNAPSHOT
        when the interval is reached; nothing when no recording is on.

        Raises:
            nats.errors.Error: publishing failed while the service stops.
        """
        run = self._run
        if run is None or run.end_seq is not None:
            return
        lines = self._lines
        lines.event(event)
        for decision in decisions:
            lines.decision(decision)
        if run.snapshot_interval:
            self._since_snapshot += 1
            if self._since_snapshot >= run.snapshot_interval:
                self._since_snapshot = 0
                lines.snapshot(save_snapshot(core))
        await self._send(seq)

    async def end(self, core: SchedCore, seq: int) -> None:
        """End the recording after event ``seq``: the ``END`` message, whose payload is
        the recording's ``END`` line at ``core``'s time (the recorder stores it, so
        the exported file says it is complete).

        Raises:
            nats.errors.Error: publishing failed while the service stops.
        """
        run = self._run
        if run is None or run.end_seq is not None:
            return
        self._lines.end(core.last_ts)
        ((_, line),) = self._lines.take()
        await self._message(run.id, seq, RECORD_END, line, last=True)
        self._run = run.model_copy(update={"end_seq": seq})
        log.info("recording %s ended at event seq %d", run.id, seq)

    async def _send(self, seq: int) -> None:
        assert self._run is not None
        batch = self._lines.take()
        for index, (kind, line) in enumerate(batch):
            await self._message(self._run.id, seq, kind, line, last=index == len(batch) - 1)

    async def _message(self, rid: str, seq: int, kind: str, payload: bytes, *, last: bool) -> None:
        number = self._messages
        mark = self.watermark
        skipped = mark is not None and mark[0] == rid and number <= mark[1]
        if not skipped:
            headers = {RECORD_SEQ_HEADER: str(seq), RECORD_TYPE_HEADER: kind}
            if last:
                headers[RECORD_LAST_HEADER] = "1"
            await self._publish(record_subject(rid), payload, record_msg_id(rid, number), headers)
        self._messages = number + 1
        if self._on_message is not None:
            self._on_message(skipped)
