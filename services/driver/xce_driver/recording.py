"""Recordings: JSONL, one object a line (Req 10 AC 15), written and read.

HEADER first, then a SNAPSHOT, then every event and decision in the order they
crossed the core's boundary, with further SNAPSHOTs every N events when asked, and
an ``END`` line once the recording is complete (format 1.1). A recording without it
was cut short: ``read_lines(..., require_end=True)`` says so at its end. A path
ending in ``.gz`` is written and read gzip-compressed.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import orjson
from xce_core.core import SchedCore
from xce_core.snapshot import save_snapshot
from xce_schemas import (
    EVENT_TYPES,
    RECORDING_VERSION,
    CoreEvent,
    Decision,
    End,
    Header,
    RunTime,
    SchedulerConfig,
    config_hash,
    dump_decision,
    dump_event,
)
from xce_schemas.snapshot import CoreSnapshot


class RecordingWriter:
    """Appends recording lines to a file.

    Args:
        path: the file; ``.gz`` means gzip.

    Raises:
        OSError: the file cannot be created, written or closed (a full disk, a
            device that refuses writes); its ``filename`` is always ``str(path)``,
            so the message can name the file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.lines = 0
        self._file: io.BufferedIOBase
        try:
            if self.path.name.endswith(".gz"):
                # The fastest level (a recording is written more often than read),
                # fed in large blocks; mtime 0 keeps the file byte-reproducible.
                compressed = gzip.GzipFile(self.path, "wb", compresslevel=1, mtime=0)
                self._file = io.BufferedWriter(compressed, buffer_size=1 << 20)
            else:
                self._file = open(self.path, "wb")  # noqa: SIM115
        except OSError as exc:
            raise self._named(exc) from exc

    def _named(self, exc: OSError) -> OSError:
        """``exc`` with this file as its ``filename``: a buffered write fails at a later
        write or at close, with no file name."""
        return OSError(exc.errno, exc.strerror or str(exc), str(self.path))

    def _write(self, line: bytes, kind: str) -> None:
        """Append one line of type ``kind`` (a writer that keeps lines elsewhere,
        ``LineBatch``, overrides this alone)."""
        try:
            self._file.write(line + b"\n")
        except OSError as exc:
            raise self._named(exc) from exc
        self.lines += 1

    def header(
        self,
        config: SchedulerConfig,
        start_ts: int,
        start_wall: str | None = None,
        round_interval_s: int | None = None,
        rounds: Literal["controller"] | None = None,
    ) -> None:
        """Write the HEADER line (version, configuration hash, start ts and wall time).

        Args:
            config: the configuration in effect (its hash goes in the line).
            start_ts: the core's time at the start, ns.
            start_wall: the wall time to write, ISO 8601 UTC; default now. The live
                core passes one derived from the events, so that a core restarted
                mid-recording writes the same HEADER.
            round_interval_s: a simulation's round interval, s (None: a round at
                every change, or a live recording); see ``Header``.
            rounds: ``controller`` for a live recording (its rounds are the
                controller's events); see ``Header``.
        """
        wall = start_wall or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        header = Header(
            version=RECORDING_VERSION,
            config_hash=config_hash(config),
            start_ts=start_ts,
            start_wall=wall,
            round_interval_s=round_interval_s,
            rounds=rounds,
        )
        self._write(header.model_dump_json(exclude_none=True).encode(), "HEADER")

    def snapshot(self, snapshot: CoreSnapshot) -> None:
        """Write a SNAPSHOT line holding ``snapshot``, at the snapshot's ts."""
        self._write(
            b'{"type":"SNAPSHOT","ts":%d,"data":%s}'
            % (snapshot.ts, snapshot.model_dump_json().encode()),
            "SNAPSHOT",
        )

    def event(self, event: CoreEvent) -> None:
        """Write one event line, exactly as the event's JSON."""
        self._write(dump_event(event), event.type)

    def decision(self, decision: Decision) -> None:
        """Write one DECISION line wrapping ``decision``."""
        self._write(
            b'{"type":"DECISION","ts":%d,"payload":%s}' % (decision.ts, dump_decision(decision)),
            "DECISION",
        )

    def run_time(self, line: RunTime) -> None:
        """Write one ``RUN_TIME`` line (an event file's: how long a job runs)."""
        self._write(line.model_dump_json().encode(), "RUN_TIME")

    def end(self, ts: int) -> None:
        """Write the ``END`` line: the recording is complete (``ts``: the core's time
        then, ns). Nothing may follow it."""
        self._write(End(ts=ts).model_dump_json().encode(), "END")

    def close(self) -> None:
        """Flush and close the file.

        Raises:
            OSError: the last lines cannot be written (``filename`` is the path).
        """
        try:
            self._file.close()
        except OSError as exc:
            raise self._named(exc) from exc

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Recorder:
    """Records what crosses a core's boundary into a ``RecordingWriter``.

    ``start`` writes HEADER (with the hash of the configuration in effect) and a
    SNAPSHOT of the core; from then on ``event`` writes each event line before the
    core handles it (so its decisions follow it), ``decision`` writes each decision,
    and ``after_event`` adds a SNAPSHOT every ``snapshot_interval`` events
    (0: only the first; Req 10 AC 10); ``finish`` writes the ``END`` line once the
    run is complete (a run that stops early leaves it out). Before ``start``
    nothing is written. Recording changes nothing in scheduling (Req 10 AC 9).

    Raises:
        ValueError: a negative snapshot interval.
    """

    def __init__(self, writer: RecordingWriter, snapshot_interval: int = 0) -> None:
        if snapshot_interval < 0:
            raise ValueError(f"snapshot interval must be 0 or more, not {snapshot_interval}")
        self.writer = writer
        self.snapshot_interval = snapshot_interval
        self.recording = False
        self._since_snapshot = 0

    def start(self, core: SchedCore, round_interval_s: int | None = None) -> None:
        """Begin: HEADER and the first SNAPSHOT of ``core``'s state now
        (``round_interval_s``: the simulation's, for the HEADER)."""
        self.writer.header(core.state.config, core.last_ts, round_interval_s=round_interval_s)
        self.writer.snapshot(save_snapshot(core))
        self.recording = True

    def finish(self, core: SchedCore) -> None:
        """End a complete recording: the ``END`` line at ``core``'s time."""
        if self.recording:
            self.writer.end(core.last_ts)
            self.recording = False

    def event(self, event: CoreEvent) -> None:
        """Record an event about to be pushed."""
        if self.recording:
            self.writer.event(event)

    def decision(self, decision: Decision) -> None:
        """Record a decision the core emitted."""
        if self.recording:
            self.writer.decision(decision)

    def after_event(self, core: SchedCore) -> None:
        """Count an event the core handled; snapshot when the interval is reached."""
        if not self.recording or not self.snapshot_interval:
            return
        self._since_snapshot += 1
        if self._since_snapshot >= self.snapshot_interval:
            self._since_snapshot = 0
            self.writer.snapshot(save_snapshot(core))


class RecordingError(ValueError):
    """A recording that cannot be read, named by file and line, e.g.
    ``run.jsonl:12: not JSON (unexpected character)``."""


class IncompleteRecording(RecordingError):
    """A recording of format 1.1 or later that ends without its ``END`` line: it was
    cut short (an interrupted ``simulate --record``, a recorder that lost its core,
    a copy stopped part way). Raised only once every line it holds was read."""


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a recording: its number (from 1), its decoded object and raw bytes."""

    number: int
    data: dict[str, Any]
    raw: bytes

    @property
    def type(self) -> str:
        """The line's ``type``."""
        return str(self.data["type"])

    @property
    def ts(self) -> int:
        """The line's ``ts`` (HEADER: its ``start_ts``), ns."""
        return int(self.data["ts"] if "ts" in self.data else self.data.get("start_ts", 0))


#: Every ``type`` a recording line may have.
LINE_TYPES = frozenset({"HEADER", "SNAPSHOT", "DECISION", "END", "RUN_TIME", *EVENT_TYPES})

#: The first format version whose complete recordings end with an ``END`` line.
_END_SINCE = (1, 1)


def _version(header: Line) -> tuple[int, int]:
    """The HEADER's format version as (major, minor); (0, 0) when unreadable."""
    parts = str(header.data.get("version", "")).split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return (0, 0)


def read_lines(
    path: str | Path,
    *,
    require_end: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[Line]:
    """The lines of a ``.jsonl`` or ``.jsonl.gz`` recording, decoded, in file order.

    A line after ``END`` is an error. With ``require_end``, a file whose HEADER says
    format 1.1 or later and that ends without ``END`` raises ``IncompleteRecording``
    after its last line (older recordings never had one: nothing can be said).

    Args:
        path: the file.
        require_end: check that the recording is complete (see above).
        progress: called as ``progress(bytes read, file size)`` every 4,096 lines
            (bytes of the file on disk: compressed ones for ``.gz``).

    Raises:
        RecordingError: the file is missing or unreadable, a line is not a JSON object
            with a known ``type`` and an integer ``ts``, a line follows ``END``, or
            the file is truncated.
        IncompleteRecording: ``require_end`` and no ``END`` line (see above), a
            last line cut in the middle, or a ``.gz`` whose stream stops part way
            (every whole line before was yielded).
    """
    path = Path(path)
    try:
        handle: io.BufferedIOBase = (
            gzip.GzipFile(path, "rb") if path.name.endswith(".gz") else open(path, "rb")  # noqa: SIM115
        )
    except FileNotFoundError:
        raise RecordingError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise RecordingError(f"{path}: is a directory, not a recording") from None
    except OSError as exc:
        raise RecordingError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    number = 0
    version = (0, 0)
    ended = 0
    size = _size(path) if progress is not None else 0
    disk = getattr(handle, "fileobj", None) or handle  # the compressed bytes of a .gz
    try:
        with handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    line = _decode(path, number, raw)
                except _CutShort as exc:
                    if require_end:  # the lines before it were whole: say it is cut short
                        raise IncompleteRecording(f"{exc}: the recording was cut short") from None
                    raise
                if ended:
                    raise RecordingError(
                        f"{path}:{number}: a {line.type} line after the END line "
                        f"(line {ended}): END closes a recording"
                    )
                if number == 1 and line.type == "HEADER":
                    version = _version(line)
                elif line.type == "END":
                    ended = number
                if progress is not None and number % 4096 == 0:
                    progress(disk.tell(), size)
                yield line
    except EOFError as exc:  # a .gz whose compressed stream stops part way
        if require_end:
            raise IncompleteRecording(
                f"{path}:{number + 1}: the compressed file ends early ({exc}): the recording "
                "was cut short"
            ) from None
        raise RecordingError(f"{path}:{number + 1}: cannot be read ({exc})") from None
    except (OSError, zlib.error) as exc:
        raise RecordingError(f"{path}:{number + 1}: cannot be read ({exc})") from None
    if require_end and not ended and version >= _END_SINCE:
        raise IncompleteRecording(
            f"{path}: ends at line {number:,} without its END line: the recording was "
            "cut short (interrupted, or its writer stopped) and its figures would be wrong"
        )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class _CutShort(RecordingError):
    """The last line of a file is incomplete: the file was cut inside it."""


def _decode(path: Path, number: int, raw: bytes) -> Line:
    where = f"{path}:{number}"
    if not raw.endswith(b"\n"):
        if not raw.strip():
            raise RecordingError(f"{where}: empty line at the end")
        try:
            orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise _CutShort(f"{where}: the file is truncated (last line incomplete)") from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise RecordingError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise RecordingError(f"{where}: not a JSON object")
    kind = data.get("type")
    if kind not in LINE_TYPES:
        raise RecordingError(f"{where}: unknown line type {kind!r}")
    stamp = data.get("start_ts" if kind == "HEADER" else "ts")
    if not isinstance(stamp, int) or isinstance(stamp, bool) or stamp < 0:
        field = "start_ts" if kind == "HEADER" else "ts"
        raise RecordingError(f"{where}: {kind} needs {field} as whole nanoseconds, not {stamp!r}")
    return Line(number, data, raw)
