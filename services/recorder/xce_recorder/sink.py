"""Where recording lines go: a buffer flushed into a Redis stream while recording, and
the export of that stream to a ``.jsonl`` / ``.jsonl.gz`` file.

Both reuse ``xce_driver.recording.RecordingWriter``, so a recording made live has
exactly the line format of one made by ``xce-sched simulate --record``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from xce_driver.recording import RecordingWriter

#: Redis stream entries read per round trip when exporting.
EXPORT_CHUNK = 2000


class LineBuffer(RecordingWriter):
    """A ``RecordingWriter`` that keeps its lines in memory, each tagged with the event
    sequence being recorded, until the recorder flushes them into Redis.

    Attributes:
        seq: the ``XCE_EVENTS`` sequence the next lines belong to (set by the recorder).
        pending: ``(seq, line)`` pairs not flushed yet, in order; a line has no newline.
    """

    def __init__(self) -> None:
        # No file: the lines go to Redis (``RecordingWriter`` opens one).
        self.path = Path("<redis>")
        self.lines = 0
        self.seq = 0
        self.pending: list[tuple[int, bytes]] = []

    def _write(self, line: bytes) -> None:
        self.pending.append((self.seq, line))
        self.lines += 1

    def close(self) -> None:
        """Nothing to close; unflushed lines stay in ``pending``."""

    def take(self) -> list[tuple[int, bytes]]:
        """The unflushed lines, which are no longer held."""
        taken, self.pending = self.pending, []
        return taken


def _line(fields: Mapping[Any, Any] | None) -> bytes:
    """The ``line`` field of a stream entry (bytes; text when the client decodes)."""
    value = (fields or {}).get(b"line", (fields or {}).get("line", b""))
    return value if isinstance(value, bytes) else str(value).encode()


def _publish(part: Path, path: Path) -> None:
    """Give the finished ``part`` its name, never replacing a file of that name."""
    os.link(part, path)  # FileExistsError when one appeared meanwhile
    part.unlink()


class _FileLines(RecordingWriter):
    """A ``RecordingWriter`` that also takes lines already serialized."""

    def raw(self, lines: list[bytes]) -> None:
        """Append ``lines`` (no newlines in them) as they are.

        Raises:
            OSError: the file refuses them (``filename`` is its path).
        """
        for line in lines:
            self._write(line)


async def export_stream(client: aioredis.Redis, key: str, path: Path) -> int:
    """Write every line of the Redis stream ``key``, in stream order, to ``path``.

    The file is written under a hidden temporary name in the same folder and renamed
    when complete, so a listing never shows half a recording. ``.gz`` compresses.

    Args:
        client: a Redis client.
        key: the recording's stream (entries with a ``line`` field).
        path: the file to create (it must not exist).

    Returns:
        The number of lines written.

    Raises:
        FileExistsError: ``path`` exists.
        OSError: the file cannot be written (a full disk); the temporary file is removed.
        redis.exceptions.RedisError: Redis fails meanwhile.
    """
    if path.exists():
        raise FileExistsError(17, "a recording of that name exists", str(path))
    part = path.with_name(f".part.{path.name}")  # same suffix: same compression
    writer = await asyncio.to_thread(_FileLines, part)
    try:
        last = "-"
        while True:
            entries = await client.xrange(key, min=last, max="+", count=EXPORT_CHUNK) or []
            if last != "-" and entries:
                entries = entries[1:]  # ``min`` is inclusive: the last one read again
            if not entries:
                break
            lines = [_line(fields) for _id, fields in entries]
            await asyncio.to_thread(writer.raw, lines)
            last_id = entries[-1][0]
            last = last_id.decode() if isinstance(last_id, bytes) else str(last_id)
        await asyncio.to_thread(writer.close)
        await asyncio.to_thread(_publish, part, path)
    except BaseException:
        with contextlib.suppress(OSError):
            writer.close()
        with contextlib.suppress(OSError):
            part.unlink()
        raise
    return writer.lines
