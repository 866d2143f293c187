"""What the admin API talks to: the recorder (NATS requests), the recorder's and the
core's status (Redis hashes), and the recordings directory.

``Backend`` is the one seam the API depends on; ``LiveBackend`` is the real one, and
tests swap in another through ``app.dependency_overrides``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import nats
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from pydantic import ValidationError
from redis.exceptions import RedisError
from xce_schemas.admin import (
    CORE_STATUS_KEY,
    RECORDER_CONTROL_SUBJECT,
    RECORDER_STATUS_KEY,
    RECORDING_SUFFIXES,
    CoreStatus,
    RecorderCommand,
    RecorderReply,
    RecorderStatus,
    RecordingNameError,
    core_status_from_hash,
    recorder_status_from_hash,
    recording_name,
)

log = logging.getLogger("xce_admin.backend")


class Unavailable(RuntimeError):
    """A server the request needs does not answer (HTTP 503); the message names it."""


class Backend(Protocol):
    """The services behind the admin API."""

    async def command(self, command: RecorderCommand) -> RecorderReply:
        """Send a control command to the recorder and return its answer.

        Raises:
            Unavailable: NATS or the recorder does not answer.
        """
        ...

    async def recorder_status(self) -> RecorderStatus:
        """The recorder's last published state (idle when it never wrote one).

        Raises:
            Unavailable: Redis does not answer.
        """
        ...

    async def core_status(self) -> CoreStatus | None:
        """The core service's state after its last round; None before its first.

        Raises:
            Unavailable: Redis does not answer.
        """
        ...

    async def health(self) -> tuple[bool, bool]:
        """Whether ``(Redis, NATS)`` answer now."""
        ...


class LiveBackend:
    """The real backend: Redis and NATS, connected lazily and again after a failure.

    Args:
        redis_url: the Redis URL.
        nats_url: the NATS URL(s).
        timeout_s: how long a recorder command may take, s (a start waits for the
            core service to reach the end of the event stream).
    """

    def __init__(self, redis_url: str, nats_url: str, timeout_s: float = 60.0) -> None:
        self.redis_url = redis_url
        self.nats_url = nats_url
        self.timeout_s = timeout_s
        self._redis = aioredis.Redis.from_url(
            redis_url, socket_connect_timeout=2.0, socket_timeout=5.0
        )
        self._nc: NatsClient | None = None
        self._lock = asyncio.Lock()

    async def close(self) -> None:
        """Close both connections."""
        await self._redis.aclose()
        if self._nc is not None and not self._nc.is_closed:
            with contextlib.suppress(NatsError):
                await self._nc.close()

    async def _nats(self) -> NatsClient:
        async with self._lock:
            if self._nc is None or self._nc.is_closed:
                try:
                    self._nc = await nats.connect(
                        self.nats_url,
                        name="xce-admin",
                        allow_reconnect=False,
                        connect_timeout=2.0,
                    )
                except (NatsError, OSError, TimeoutError) as exc:
                    raise Unavailable(f"NATS at {self.nats_url} does not answer ({exc})") from None
            return self._nc

    async def command(self, command: RecorderCommand) -> RecorderReply:
        """See ``Backend.command``."""
        nc = await self._nats()
        try:
            msg = await nc.request(
                RECORDER_CONTROL_SUBJECT, command.model_dump_json().encode(), self.timeout_s
            )
        except NoRespondersError:
            raise Unavailable(
                f"the recorder service is not running (nobody answers on "
                f"{RECORDER_CONTROL_SUBJECT})"
            ) from None
        except TimeoutError:
            raise Unavailable(f"the recorder did not answer within {self.timeout_s:g} s") from None
        except NatsError as exc:
            raise Unavailable(f"NATS request failed ({exc})") from None
        try:
            return RecorderReply.model_validate_json(msg.data)
        except ValidationError:
            raise Unavailable("the recorder answered something that is not a reply") from None

    async def recorder_status(self) -> RecorderStatus:
        """See ``Backend.recorder_status``."""
        raw = await self._hgetall(RECORDER_STATUS_KEY)
        try:
            return recorder_status_from_hash(raw)
        except ValidationError:
            log.warning("%s is unreadable; reporting the recorder idle", RECORDER_STATUS_KEY)
            return RecorderStatus()

    async def core_status(self) -> CoreStatus | None:
        """See ``Backend.core_status``."""
        raw = await self._hgetall(CORE_STATUS_KEY)
        try:
            return core_status_from_hash(raw)
        except ValidationError:
            log.warning("%s is unreadable; reporting no core status", CORE_STATUS_KEY)
            return None

    async def _hgetall(self, key: str) -> dict[bytes, bytes]:
        try:
            raw: dict[bytes, bytes] = await self._redis.hgetall(key)  # type: ignore[assignment]
        except (RedisError, OSError) as exc:
            raise Unavailable(f"Redis at {self.redis_url} does not answer ({exc})") from None
        return raw

    async def health(self) -> tuple[bool, bool]:
        """See ``Backend.health``."""
        try:
            redis_ok = bool(await self._redis.ping())
        except (RedisError, OSError):
            redis_ok = False
        try:
            nats_ok = (await self._nats()).is_connected
        except Unavailable:
            nats_ok = False
        return redis_ok, nats_ok


@dataclass(frozen=True)
class RecordingInfo:
    """A recording file: name, size (bytes), last modified (ISO 8601 UTC)."""

    name: str
    size_bytes: int
    modified: str


class RecordingsDir:
    """The recordings directory; every name is checked by ``recording_name`` first,
    so no request can reach outside it.

    Args:
        path: the directory (the recorder's ``--recordings-dir``).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def list(self) -> list[RecordingInfo]:
        """The recordings (files with a recording suffix and a valid name), by name.

        A missing directory holds no recordings.
        """
        found = []
        try:
            entries = sorted(self.path.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            return []
        for entry in entries:
            if not entry.name.endswith(RECORDING_SUFFIXES):
                continue
            try:
                if recording_name(entry.name) != entry.name or not entry.is_file():
                    continue
                stat = entry.stat()
            except (ValueError, OSError):
                continue
            when = datetime.fromtimestamp(stat.st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            found.append(RecordingInfo(entry.name, stat.st_size, when))
        return found

    def file(self, name: str) -> Path | None:
        """The file of recording ``name``, or None when there is none.

        Raises:
            xce_schemas.admin.RecordingNameError: ``name`` is not a recording name
                (a path, ``..``, another character), or lacks a recording suffix.
        """
        checked = recording_name(name)
        if checked != name:
            raise RecordingNameError(
                f"recording name {name!r} must end in .jsonl or .jsonl.gz (did you mean "
                f"{checked!r}?)"
            )
        path = self.path / checked
        return path if path.is_file() else None
