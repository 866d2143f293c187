"""The core service's durable state in Redis: the checkpoint (``CoreCheckpoint``: the
last event's sequence and the core's snapshot, one ``SET``), when the next one is
due, and the recording commands' positions (``CoreRecording``).

A checkpoint is written only after the decisions and recording messages of every
event it covers are on their streams (the service flushes them first); a restarted
service goes on from it (see the package docstring).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import redis.asyncio as aioredis
from pydantic import ValidationError
from redis.exceptions import RedisError
from xce_core.core import SchedCore
from xce_core.snapshot import save_snapshot
from xce_kit.redis_client import redis_from_url
from xce_schemas.bus import EVENTS_STREAM, CoreCheckpoint, CoreRecording, RecordingRun
from xce_schemas.errors import describe

from xce_driver.live.core_service.options import CoreServiceOptions, Faults
from xce_driver.live.core_service.positions import CheckpointError
from xce_driver.live.metrics import CoreMetrics

log = logging.getLogger(__name__)


def redis_client(url: str) -> aioredis.Redis:
    """The core service's Redis client for ``url`` (connects at its first command),
    authenticated as the environment says (``xce_kit.redis_client``): the one place
    the service makes it.

    Raises:
        xce_kit.auth.CredentialsError: the URL carries a password, or the password
            file cannot be read.
    """
    return redis_from_url(url)


class Checkpoints:
    """The checkpoint and the recording positions of one core service in Redis.

    Args:
        redis: the client.
        options: the keys and the checkpoint cadence.
        metrics: where checkpoints and failures are counted.
        faults: the crash tests' fault points (``checkpoint``, ``checkpointed``).
        fence: called right before each write; raises when this service may no
            longer write (``leadership``: it lost the lead).
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        options: CoreServiceOptions,
        metrics: CoreMetrics,
        faults: Faults,
        fence: Callable[[], None],
    ) -> None:
        self.redis = redis
        self.options = options
        self.metrics = metrics
        self._faults = faults
        self._fence = fence
        #: The event sequence the last checkpoint covers.
        self.seq = 0
        #: Events taken since the last checkpoint (a message may hold several).
        self.since = 0
        self._last = time.monotonic()  # when the last one was tried
        self._written = True  # the last try was written (or none was made)

    async def load(self) -> CoreCheckpoint | None:
        """The checkpoint (None: none, a fresh core).

        Raises:
            CheckpointError: it cannot be used (malformed, or of another stream).
            redis.exceptions.RedisError: Redis does not answer.
        """
        key = self.options.checkpoint_key
        raw = await self.redis.get(key)
        if raw is None:
            log.info("no checkpoint under %s: a fresh core", key)
            return None
        try:
            checkpoint = CoreCheckpoint.model_validate_json(raw)
        except ValidationError as exc:
            why = describe(exc, default="document")
            raise CheckpointError(f"checkpoint {key}: {why}") from None
        if checkpoint.stream != EVENTS_STREAM:
            raise CheckpointError(
                f"checkpoint {key} counts in stream {checkpoint.stream}, not {EVENTS_STREAM}"
            )
        self.seq = checkpoint.seq
        self.metrics.checkpoint_seq.set(checkpoint.seq)
        return checkpoint

    def count_due(self, seq: int) -> bool:
        """``snapshot_every`` events since the last checkpoint, the last one taken
        ``seq``. After a failed write (Redis down) the next try waits
        ``snapshot_seconds``: a full snapshot per event would stall the events
        meanwhile."""
        return self.since >= self.options.snapshot_every and (self._written or self.time_due(seq))

    def time_due(self, seq: int) -> bool:
        """``snapshot_seconds`` since the last try, and event ``seq`` is not covered."""
        waited = time.monotonic() - self._last
        return seq > self.seq and waited >= self.options.snapshot_seconds

    async def write(
        self, seq: int, core: SchedCore, recording: RecordingRun | None, *, force: bool = False
    ) -> bool:
        """Write the checkpoint of the events up to ``seq`` (one atomic ``SET``);
        ``force``: even when it covers no new event (after a recording command).

        Returns:
            Whether it was written (or nothing was to be written); a Redis failure
            is logged and counted, and the next checkpoint tries again.

        Raises:
            Whatever the fence raises (nothing written).
        """
        if seq <= self.seq and not force:
            return True
        self._faults.hit("checkpoint")
        text = CoreCheckpoint(
            seq=seq, snapshot=save_snapshot(core), recording=recording
        ).model_dump_json()
        self._last = time.monotonic()
        self._fence()  # after the snapshot (~15 ms per 1,000 hosts), right before the SET
        try:
            await self.redis.set(self.options.checkpoint_key, text)
        except RedisError as exc:
            log.warning("checkpoint at event seq %d not written: %s", seq, exc)
            self.metrics.checkpoint_failures.inc()
            self._written = False
            return False
        self._written = True
        self.seq = seq
        self.since = 0
        self.metrics.checkpoints.inc()
        self.metrics.checkpoint_seq.set(seq)
        self._faults.hit("checkpointed")
        return True

    async def read_recording(self) -> CoreRecording | None:
        """The last recording command applied (``xce:core:recording``), if readable
        (an unreadable one is logged: the commands made after the checkpoint are
        then not re-applied)."""
        key = self.options.recording_key
        raw = await self.redis.get(key)
        if raw is None:
            return None
        try:
            return CoreRecording.model_validate_json(raw)
        except ValidationError as exc:
            log.error(
                "%s is unreadable (%s): recording commands made after the checkpoint "
                "are not re-applied",
                key,
                describe(exc, default="document"),
            )
            return None

    async def write_recording(self, doc: CoreRecording) -> None:
        """Note a recording start or stop, with its position, before it takes effect.

        Raises:
            redis.exceptions.RedisError: Redis refused (the command is not done).
            Whatever the fence raises (nothing written).
        """
        self._fence()
        await self.redis.set(self.options.recording_key, doc.model_dump_json())
