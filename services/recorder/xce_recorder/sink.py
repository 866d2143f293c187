"""The export of a recording's Redis stream to a ``.jsonl`` / ``.jsonl.gz`` file.

The lines are already JSON text, exactly as ``xce-sched simulate --record`` writes
them (the core service built them); the export writes them as they are, one a line.
A ``.gz`` file is compressed with an empty file name and modification time 0 in its
gzip header, so the same lines always give the same bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

#: Redis stream entries read per round trip when exporting.
EXPORT_CHUNK = 2000
#: gzip compression level of a ``.gz`` export (6: zlib's default speed/size balance).
GZIP_LEVEL = 6


class LineFile:
    """A new file that takes recording lines (bytes without newline) and writes each
    followed by ``\\n``; a name ending in ``.gz`` is gzip-compressed reproducibly.

    Args:
        path: the file to create; ``gz_name``: the name that decides compression
            (default ``path``'s), for a file written under a temporary name.

    Raises:
        OSError: the file cannot be created, written or closed; ``filename`` is its path.
    """

    def __init__(self, path: Path, gz_name: str | None = None) -> None:
        self.path = path
        self.lines = 0
        try:
            self._raw: io.BufferedWriter = open(path, "xb")  # noqa: SIM115
        except OSError as exc:
            raise self._named(exc) from exc
        self._out: io.BufferedIOBase = self._raw
        if (gz_name or path.name).endswith(".gz"):
            self._out = gzip.GzipFile(
                filename="", mode="wb", fileobj=self._raw, compresslevel=GZIP_LEVEL, mtime=0
            )

    def _named(self, exc: OSError) -> OSError:
        return OSError(exc.errno, exc.strerror or str(exc), str(self.path))

    def write(self, lines: list[bytes]) -> None:
        """Append ``lines``, each followed by a newline.

        Raises:
            OSError: the file refuses them (a full disk).
        """
        try:
            for line in lines:
                self._out.write(line)
                self._out.write(b"\n")
        except OSError as exc:
            raise self._named(exc) from exc
        self.lines += len(lines)

    def close(self) -> None:
        """Flush and close (the gzip trailer first).

        Raises:
            OSError: the last bytes cannot be written.
        """
        try:
            if self._out is not self._raw:
                self._out.close()
            self._raw.close()
        except OSError as exc:
            raise self._named(exc) from exc


def _line(fields: Mapping[Any, Any] | None) -> bytes:
    """The ``line`` field of a stream entry (bytes; text when the client decodes)."""
    value = (fields or {}).get(b"line", (fields or {}).get("line", b""))
    return value if isinstance(value, bytes) else str(value).encode()


def _publish(part: Path, path: Path) -> None:
    """Give the finished ``part`` its name, never replacing a file of that name."""
    os.link(part, path)  # FileExistsError when one appeared meanwhile
    part.unlink()


async def export_stream(client: aioredis.Redis, key: str, path: Path) -> int:
    """Write every line of the Redis stream ``key``, in stream order, to ``path``.

    The file is written under a hidden temporary name in the same folder and renamed
    when complete, so a listing never shows half a recording. ``.gz`` compresses
    (reproducibly: see the module docstring).

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
    part = path.with_name(f".part.{path.name}")
    with contextlib.suppress(FileNotFoundError):
        part.unlink()  # left by an export that crashed
    writer = await asyncio.to_thread(LineFile, part, path.name)
    try:
        last = "-"
        while True:
            entries = await client.xrange(key, min=last, max="+", count=EXPORT_CHUNK) or []
            if last != "-" and entries:
                entries = entries[1:]  # ``min`` is inclusive: the last one read again
            if not entries:
                break
            lines = [_line(fields) for _id, fields in entries]
            await asyncio.to_thread(writer.write, lines)
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
