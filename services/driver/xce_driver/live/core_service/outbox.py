"""Where the core service's messages go: decisions to ``xce.decisions.<OP>``
(``XCE_DECISIONS``) and recording messages to ``xce.record.<id>`` (``XCE_RECORD``),
each stream pipelined and chained (``xce_kit.publisher.ChainedPublisher``: none
overtakes another, none is stored twice, and the stream's last id stays the
watermark); dead letters to ``xce.deadletter.core``, one at a time, until stored.

Decision ids are ``decision_msg_id(event seq, index)``; recording messages are
queued as the core makes them and stored at the next flush, before the batch's
acknowledgement and before any checkpoint.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from xce_kit.publisher import ChainedPublisher, Outgoing, publish_until_acked
from xce_schemas.bus import (
    CORE_SOURCE,
    DEADLETTER_STREAM,
    DECISIONS_STREAM,
    RECORD_STREAM,
    DeadLetter,
    deadletter_subject,
)

from xce_driver.live.core_service.options import STOP_GRACE_S, CoreServiceOptions, Faults
from xce_driver.live.metrics import CoreMetrics

log = logging.getLogger(__name__)


class Outbox:
    """The core service's publishers (see the module docstring). ``queue_record``
    works from the start; the rest once ``bind`` gave it a connection.

    Args:
        options: the acknowledgement timeout.
        metrics: where stored, skipped, retried and foreign messages are counted.
        faults: the crash tests' fault points (``decision``, ``record``).
    """

    def __init__(self, options: CoreServiceOptions, metrics: CoreMetrics, faults: Faults) -> None:
        self.options = options
        self.metrics = metrics
        self._faults = faults
        self._stop = asyncio.Event()
        self._js: JetStreamContext | None = None
        self._decisions: ChainedPublisher | None = None
        self._records: ChainedPublisher | None = None
        #: Recording messages made but not yet on ``XCE_RECORD`` (``flush_records``).
        self._records_queue: list[Outgoing] = []
        self._fence: Callable[[], None] = lambda: None

    def bind(self, nc: NatsClient, stop: asyncio.Event, fence: Callable[[], None]) -> None:
        """Publish through ``nc``; once ``stop`` is set, failures are not retried for
        long (``stopping``); ``fence`` is called right before each send (each window
        of messages, each try of a dead letter) and raises when this service may no
        longer send (``leadership``)."""
        self._js = nc.jetstream()
        self._stop = stop
        self._fence = fence
        self._decisions = self._chained(nc, DECISIONS_STREAM)
        self._records = self._chained(nc, RECORD_STREAM)

    def _chained(self, nc: NatsClient, stream: str) -> ChainedPublisher:
        """This service's ordered publisher to ``stream``, chained after the stream's
        end as it is at the first publish (whoever wrote the last message)."""
        foreign = self.metrics.foreign_messages.labels(stream)
        return ChainedPublisher(
            nc,
            stream,
            ack_timeout_s=self.options.publish_timeout_s,
            on_retry=self.metrics.publish_retries.inc,
            on_foreign=foreign.inc,
            fence=self._fence,
        )

    def stopping(self) -> None:
        """Give up storing after ``STOP_GRACE_S`` of failures from now on."""
        for publisher in (self._decisions, self._records):
            if publisher is not None:
                publisher.give_up_after_s = STOP_GRACE_S

    async def store_decisions(self, items: list[Outgoing], seq: int) -> None:
        """Put the decisions ``items`` (made up to event ``seq``) on ``XCE_DECISIONS``.

        Raises:
            nats.errors.Error: stopping, and not all were stored in time.
        """
        await self._store(self._decisions, items, self._decision_stored, seq)

    async def queue_record(
        self, subject: str, payload: bytes, msg_id: str, headers: dict[str, str]
    ) -> None:
        """Queue a recording message (``record_stream.Publisher``)."""
        self._records_queue.append(Outgoing(subject, payload, msg_id, headers))

    def record_published(self, skipped: bool) -> None:
        """Count a recording message skipped by the record watermark (those made are
        counted once stored)."""
        if skipped:
            self.metrics.record_skipped.inc()

    async def flush_records(self, seq: int) -> None:
        """Put the queued recording messages (made up to event ``seq``) on
        ``XCE_RECORD``.

        Raises:
            nats.errors.Error: stopping, and they could not be stored in time.
        """
        queued, self._records_queue = self._records_queue, []
        await self._store(self._records, queued, self._record_stored, seq)

    async def dead_letter(self, letter: DeadLetter, msg_id: str) -> None:
        """Store ``letter`` under ``msg_id``, sending it again until stored.

        Raises:
            nats.errors.Error: stopping, and it could not be stored.
        """
        assert self._js is not None
        log.warning("event seq %s dead-lettered: %s", letter.seq, letter.reason)
        await publish_until_acked(
            self._js,
            deadletter_subject(CORE_SOURCE),
            letter.model_dump_json().encode(),
            stream=DEADLETTER_STREAM,
            msg_id=msg_id,
            timeout_s=self.options.publish_timeout_s,
            on_retry=self.metrics.publish_retries.inc,
            stop=self._stop,
            fence=self._fence,
        )
        self.metrics.dead_letters.inc()

    async def _store(
        self,
        publisher: ChainedPublisher | None,
        items: list[Outgoing],
        confirm: Callable[[Outgoing], None],
        seq: int,
    ) -> None:
        if not items:
            return
        assert publisher is not None
        if await publisher.publish(items, confirm) < len(items):
            raise NatsError(
                f"{publisher.stream}: messages up to event seq {seq} not stored before stopping"
            )

    def _decision_stored(self, item: Outgoing) -> None:
        self.metrics.decisions.labels(str(item.tag)).inc()
        self._faults.hit("decision")

    def _record_stored(self, _item: Outgoing) -> None:
        self.metrics.record_messages.inc()
        self._faults.hit("record")
