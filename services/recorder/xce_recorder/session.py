"""One recording in progress: the lines read, grouped into whole events, and what
of it is in Redis.

Redis holds whole events only: an event's lines are kept back (``group``) until its
last line is read, then become ``ready``; the ready lines go to Redis together, with
the status (``store.RecordingStore.append``), and only then count as stored.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from xce_schemas.bus import RECORD_END

from xce_recorder.cursor import RecordCursor, RecordLine

log = logging.getLogger("xce_recorder.session")


@dataclass(frozen=True, slots=True)
class Tally:
    """What a recording's Redis stream holds once some lines are stored.

    Attributes:
        seq: the event sequence of the last line.
        lines, snapshots: lines in all, SNAPSHOT lines among them.
    """

    seq: int
    lines: int
    snapshots: int


@dataclass
class Session:
    """One recording in progress.

    Attributes:
        name: its file name; ``key``: its Redis stream; ``rid``: its recording id.
        start_seq: the event sequence it starts at; ``started``: when (ISO 8601 UTC).
        cursor: where its lines are read.
        group: lines of the event being read (its last line not read yet).
        ready: whole events read, not yet in Redis.
        seq, lines, snapshots: what Redis holds (``Tally``).
        ended: its ``END`` was read.
        stop_requested, stop_deadline: a stop was asked; by when (``time.monotonic``)
            the core must end it.
        stop_task: the task asking the core to stop it.
        note: why the recording is not whole, when it is not.
        gaps_counted, duplicates_counted: the cursor's counts already in the metrics.
    """

    name: str
    key: str
    rid: str
    start_seq: int
    started: str
    cursor: RecordCursor
    group: list[RecordLine] = field(default_factory=list)
    ready: list[RecordLine] = field(default_factory=list)
    seq: int = 0
    lines: int = 0
    snapshots: int = 0
    ended: bool = False
    stop_requested: bool = False
    stop_deadline: float = 0.0
    stop_task: asyncio.Task[None] | None = None
    note: str | None = None
    gaps_counted: int = 0
    duplicates_counted: int = 0

    def take(self, lines: list[RecordLine]) -> None:
        """Group ``lines`` (read in order) into whole events, ready to store; an
        ``END`` ends the recording (its line, when it has one, is stored last)."""
        for line in lines:
            if line.type == RECORD_END:
                self.ended = True
                if self.group:
                    log.warning(
                        "recording %s: event seq %d left unfinished before END",
                        self.name,
                        self.group[0].seq,
                    )
                    self.group.clear()
                if line.data:  # the END line: the exported file says it is complete
                    self.ready.append(line)
                continue
            self.group.append(line)
            if line.last:
                self.ready.extend(self.group)
                self.group.clear()

    def tally(self) -> Tally:
        """What Redis will hold once the ready lines are stored."""
        ready = self.ready
        if not ready:
            return Tally(self.seq, self.lines, self.snapshots)
        snapshots = sum(line.type == "SNAPSHOT" for line in ready)
        return Tally(ready[-1].seq, self.lines + len(ready), self.snapshots + snapshots)

    def stored(self, tally: Tally) -> list[RecordLine]:
        """Count the ready lines as stored (``tally`` is ``self.tally()`` before the
        write); returns them."""
        stored, self.ready = self.ready, []
        self.seq, self.lines, self.snapshots = tally.seq, tally.lines, tally.snapshots
        return stored
