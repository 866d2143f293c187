"""What the admin API talks to: the recorder (NATS requests), the recorder's and the
core's status (Redis hashes), and the recordings directory.

``Backend`` is the one seam the API depends on; ``LiveBackend`` is the real one, and
tests swap in another through ``app.dependency_overrides``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from pydantic import ValidationError
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from xce_kit.redis_client import redis_from_url
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

from xce_admin.nats_link import NatsDown, NatsLink

log = logging.getLogger("xce_admin.backend")

#: Tries of a Redis command after the first, on a connection error (a restarted
#: Redis closed the pooled connection; the retry reconnects), 0.1 then 0.2 s apart.
REDIS_RETRIES = 2
#: How long connecting to Redis may take, s, and a command's answer.
REDIS_CONNECT_TIMEOUT_S = 1.0
REDIS_TIMEOUT_S = 5.0


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
    """The real backend: Redis, and NATS through a ``NatsLink`` (connected in the
    background; a request that needs NATS while it is down is answered 503 within
    ``NatsLink.wait_s``, and one that needs only Redis does not wait for it).

    Redis commands are retried on a connection error (``REDIS_RETRIES`` times), so a
    Redis that restarted between two requests costs the next one a reconnect, not a
    failure; every command the admin sends only reads, so a retry is safe.

    Both authenticate as the environment says (``xce_kit.auth``).

    Args:
        redis_url: the Redis URL.
        nats_url: the NATS URL(s).
        timeout_s: how long a recorder command may take, s (a start waits for the
            core service to reach the end of the event stream).

    Raises:
        xce_kit.auth.CredentialsError: the Redis credentials the environment names
            cannot be used, or ``redis_url`` carries a password.
    """

    def __init__(self, redis_url: str, nats_url: str, timeout_s: float = 60.0) -> None:
        self.redis_url = redis_url
        self.nats_url = nats_url
        self.timeout_s = timeout_s
        self._redis = redis_from_url(
            redis_url,
            socket_connect_timeout=REDIS_CONNECT_TIMEOUT_S,
            socket_timeout=REDIS_TIMEOUT_S,
            # Not on a timeout: a Redis that hangs is reported after one.
            retry=Retry(
                ExponentialBackoff(cap=0.5, base=0.05), REDIS_RETRIES, (RedisConnectionError,)
            ),
        )
        self._link = NatsLink(nats_url)

    def start(self) -> None:
        """Begin connecting to NATS in the background (call within the event loop)."""
        self._link.start()

    async def close(self) -> None:
        """Close both connections."""
        await self._redis.aclose()
        await self._link.close()

    async def _nats(self) -> NatsClient:
        try:
            return await self._link.client()
        except NatsDown as exc:
            raise Unavailable(str(exc)) from None

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
            nats_ok = (await self._link.client()).is_connected
        except NatsDown:
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
