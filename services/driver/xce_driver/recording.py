"""Writing a recording: JSONL, one object a line (Req 10 AC 15).

HEADER first, then a SNAPSHOT, then every event and decision in the order they
crossed the core's boundary. A path ending in ``.gz`` is written gzip-compressed.
"""

from __future__ import annotations

import gzip
import io
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
from xce_schemas import (
    RECORDING_VERSION,
    CoreEvent,
    Decision,
    Header,
    SchedulerConfig,
    config_hash,
)


class RecordingWriter:
    """Appends recording lines to a file.

    Args:
        path: the file; ``.gz`` means gzip.

    Raises:
        OSError: the file cannot be created.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.lines = 0
        self._file: io.BufferedIOBase
        if self.path.name.endswith(".gz"):
            self._file = gzip.GzipFile(self.path, "wb")
        else:
            self._file = open(self.path, "wb")  # noqa: SIM115

    def _write(self, line: bytes) -> None:
        self._file.write(line)
        self._file.write(b"\n")
        self.lines += 1

    def header(self, config: SchedulerConfig, start_ts: int) -> None:
        """Write the HEADER line (version, configuration hash, start ts and wall time)."""
        wall = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        header = Header(
            version=RECORDING_VERSION,
            config_hash=config_hash(config),
            start_ts=start_ts,
            start_wall=wall,
        )
        self._write(header.model_dump_json().encode())

    def snapshot(self, ts: int, data: dict[str, Any]) -> None:
        """Write a SNAPSHOT line holding ``data``, the core state at ``ts``."""
        self._write(orjson.dumps({"type": "SNAPSHOT", "ts": ts, "data": data}))

    def event(self, event: CoreEvent) -> None:
        """Write one event line, exactly as the event's JSON."""
        self._write(event.model_dump_json().encode())

    def decision(self, decision: Decision) -> None:
        """Write one DECISION line wrapping ``decision``."""
        self._write(
            b'{"type":"DECISION","ts":%d,"payload":%s}'
            % (decision.ts, decision.model_dump_json().encode())
        )

    def close(self) -> None:
        """Flush and close the file."""
        self._file.close()

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
