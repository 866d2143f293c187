"""What the admin API shows of the core: the ``CoreStatus`` hash ``xce:core:status``,
written after each batch with a ``BEGIN_ROUND`` (last round, job counts, lag) and,
as a heartbeat, at least every ``HEARTBEAT_S`` while the service runs, so that the
admin API tells a dead core from one that gets no rounds. Both carry the leader's
lease term and holder id (a standby, which does not lead, writes nothing). A Redis
failure is logged, never a stop: the next write tries again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import redis.asyncio as aioredis
from redis.exceptions import RedisError
from redis.typing import EncodableT, FieldT
from xce_schemas.admin import CORE_STATUS_KEY, CoreStatus, to_hash

from xce_driver.live.core_service.leadership import Leadership
from xce_driver.live.core_service.options import HEARTBEAT_S
from xce_driver.live.metrics import CoreMetrics

log = logging.getLogger(__name__)


class StatusWriter:
    """Writes the core's status and heartbeat into Redis.

    Args:
        redis: the client.
        metrics: the figures the status shows (job counts, lag, events waiting).
        fence: called right before each write; raises when this service may no
            longer write (it lost the lead).
        leadership: the term and holder id the status shows.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        metrics: CoreMetrics,
        fence: Callable[[], None],
        leadership: Leadership,
    ) -> None:
        self.redis = redis
        self.metrics = metrics
        self._fence = fence
        self._leadership = leadership
        self._beat_at = -HEARTBEAT_S  # monotonic time of the last heartbeat written
        self._beat_written = True  # the last one was written (or none was tried)

    async def heartbeat(self, seq: int) -> None:
        """Write ``heartbeat`` and ``seq`` (the last event handled) into
        ``xce:core:status`` once ``HEARTBEAT_S`` passed since the last write."""
        started = time.monotonic()
        if started - self._beat_at < HEARTBEAT_S:
            return
        self._beat_at = started
        fields: dict[FieldT, EncodableT] = {"heartbeat": str(time.time()), "seq": str(seq)}
        fields.update(self._leader())
        self._fence()
        try:
            await self.redis.hset(CORE_STATUS_KEY, mapping=fields)
        except RedisError as exc:
            if self._beat_written:  # once per outage, not every second
                log.warning("heartbeat not written (%s); the admin API shows the core down", exc)
            self._beat_written = False
        else:
            self._beat_written = True

    async def after_round(self, seq: int, round_ts: int, round_s: float) -> None:
        """Write the whole ``CoreStatus`` after a round (``round_ts``: its ``ts``, ns;
        ``round_s``: how long it took, s), heartbeat included."""
        sample = self.metrics.registry.get_sample_value
        now = time.time()
        self.metrics.last_round.set(now)
        self._beat_at = time.monotonic()
        status = CoreStatus(
            seq=seq,
            heartbeat=now,
            last_round_ts=round_ts,
            round_seconds=round_s,
            pending=self.metrics.totals[0],
            running=self.metrics.totals[1],
            suspended=self.metrics.totals[2],
            lag_seconds=sample("xce_core_event_lag_seconds") or 0.0,
            events_waiting=int(sample("xce_core_events_waiting") or 0),
            updated=now,
        )
        fields: dict[FieldT, EncodableT] = {k: v for k, v in to_hash(status).items()}
        fields.update(self._leader())
        self._fence()
        try:
            await self.redis.hset(CORE_STATUS_KEY, mapping=fields)
        except RedisError as exc:
            log.warning("status after event seq %d not written: %s", seq, exc)

    def _leader(self) -> dict[FieldT, EncodableT]:
        """The ``term`` and ``holder`` fields (none for a lone core)."""
        lead = self._leadership
        fields: dict[FieldT, EncodableT] = {}
        if lead.term is not None:
            fields["term"] = str(lead.term)
        if lead.holder_id:
            fields["holder"] = lead.holder_id
        return fields
