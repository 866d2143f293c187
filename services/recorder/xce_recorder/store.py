"""The recorder's durability: what it keeps in Redis, and the export to a file.

**Status.** The Redis hash ``xce:recorder:status`` (``RecorderStatus``) says what
the recorder does; the admin API reads it. It is rewritten whole, and with every
batch of lines, so it always matches what the recording holds.

**Lines.** A recording's lines go to the Redis stream ``xce:recording:<name>``
(fields ``line``, the JSON text, and ``seq``, the event sequence), a batch of whole
events and the status in one MULTI/EXEC: Redis holds whole events only, and a
recorder that crashes leaves a status that says how far its recording got.

**Export.** When a recording ends, its stream is written to ``<recordings
dir>/<name>`` (the lines as they are; ``.gz``: compressed reproducibly, ``sink``)
and deleted. A recorder that finds a recording left unfinished by a crash exports
what Redis holds (``unfinished``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import redis.asyncio as aioredis
from pydantic import ValidationError
from redis.exceptions import RedisError
from xce_kit.redis_client import redis_from_url, redis_refusal
from xce_schemas.admin import (
    RECORDER_STATUS_KEY,
    RecorderStatus,
    RecordingNameError,
    recorder_status_from_hash,
    recording_key,
    recording_name,
    to_hash,
)

from xce_recorder.config import ConnectError, RefusedError
from xce_recorder.cursor import RecordLine
from xce_recorder.metrics import RecorderMetrics
from xce_recorder.sink import export_stream

log = logging.getLogger("xce_recorder.store")


class RecordingStore:
    """The recorder's Redis state and the recordings folder.

    Args:
        client: a connected Redis client (``connect``); the store closes it.
        recordings_dir: where recordings are exported.
        metrics: where exports are counted and timed.
    """

    def __init__(
        self, client: aioredis.Redis, recordings_dir: Path, metrics: RecorderMetrics
    ) -> None:
        self.client = client
        self.recordings_dir = recordings_dir
        self.metrics = metrics
        #: Where Redis is, for the message of a refusal (``connect`` sets it).
        self.url = "Redis"

    @classmethod
    async def connect(
        cls, url: str, timeout_s: float, recordings_dir: Path, metrics: RecorderMetrics
    ) -> RecordingStore:
        """A store on the Redis at ``url``, which has answered a PING.

        Raises:
            ConnectError: Redis did not answer within ``timeout_s`` seconds.
            RefusedError: it refused the login (wrong user or password).
            redis.exceptions.RedisError: it cannot be reached or fails.
            xce_kit.auth.CredentialsError: its password file cannot be read.
        """
        client = redis_from_url(url)  # authenticated as the environment says
        try:
            await asyncio.wait_for(client.ping(), timeout_s)
        except BaseException as exc:
            await client.aclose()
            if isinstance(exc, TimeoutError):
                raise ConnectError(
                    f"Redis at {url} did not answer within {timeout_s:g} s"
                ) from None
            refusal = redis_refusal(url, exc)
            if refusal is not None:
                raise RefusedError(refusal) from None
            raise
        store = cls(client, recordings_dir, metrics)
        store.url = url
        return store

    async def close(self) -> None:
        """Close the Redis client."""
        await self.client.aclose()

    async def write_status(self, status: RecorderStatus, *, first: bool = False) -> None:
        """Replace the status hash with ``status``; a Redis failure is logged only (the
        next write, at least every heartbeat, puts it right), except on the ``first``
        write, at start, where a command the user may not run is fatal.

        Raises:
            RefusedError: ``first``, and Redis refused the transaction to the user
                (NOPERM: it would be refused every heartbeat and every recording).
        """
        try:
            async with self.client.pipeline(transaction=True) as tx:
                _set_status(tx, status)
                await tx.execute()
        except RedisError as exc:
            refusal = redis_refusal(self.url, exc) if first else None
            if refusal is not None:
                raise RefusedError(refusal) from None
            log.warning("status not written: %s", exc)

    async def append(self, key: str, lines: list[RecordLine], status: RecorderStatus) -> None:
        """Append ``lines`` to the Redis stream ``key`` and write ``status``, in one
        transaction: both, or neither.

        Raises:
            redis.exceptions.RedisError: Redis fails (nothing was written).
        """
        async with self.client.pipeline(transaction=True) as tx:
            for line in lines:
                tx.xadd(key, {"line": line.data, "seq": line.seq})
            _set_status(tx, status)
            await tx.execute()

    async def taken(self, name: str) -> bool:
        """Whether a recording ``name`` exists: its file, or its lines in Redis.

        Raises:
            redis.exceptions.RedisError: Redis fails.
        """
        return (self.recordings_dir / name).exists() or bool(
            await self.client.exists(recording_key(name))
        )

    async def export(self, name: str) -> str | None:
        """Write recording ``name``'s lines to its file and delete them from Redis.

        Returns:
            None once done; else why it failed (the lines then stay in Redis).
        """
        key = recording_key(name)
        path = self.recordings_dir / name
        started = time.perf_counter()
        try:
            lines = await export_stream(self.client, key, path)
            await self.client.delete(key)
        except (OSError, RedisError) as exc:
            error = f"export of {name} failed: {exc}"
            log.error("%s (the lines stay in Redis under %s)", error, key)
            self.metrics.export_failures.inc()
            return error
        self.metrics.recordings.inc()
        self.metrics.export_seconds.observe(time.perf_counter() - started)
        log.info("recording %s exported: %d lines", path, lines)
        return None

    async def unfinished(self) -> tuple[RecorderStatus, str | None]:
        """The status a previous recorder left, and the name of the recording it left
        unfinished (it crashed) whose lines are in Redis, if any.

        Raises:
            redis.exceptions.RedisError: Redis fails.
        """
        raw: dict[bytes, bytes] = await self.client.hgetall(  # type: ignore[assignment]
            RECORDER_STATUS_KEY
        )
        try:
            left = recorder_status_from_hash(raw)
        except ValidationError as exc:
            log.warning("ignoring an unreadable %s: %s", RECORDER_STATUS_KEY, exc)
            return RecorderStatus(), None
        if left.state == "idle" or left.name is None:
            return left, None
        try:
            name = recording_name(left.name)
        except RecordingNameError:
            return left, None
        if not await self.client.exists(recording_key(name)):
            return left, None
        return left, name


def _set_status(tx: aioredis.client.Pipeline, status: RecorderStatus) -> None:
    """Queue the rewrite of the status hash on ``tx``."""
    tx.delete(RECORDER_STATUS_KEY)
    tx.hset(RECORDER_STATUS_KEY, mapping=to_hash(status))  # type: ignore[arg-type]
