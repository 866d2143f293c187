"""The bridge's events out: stamped events queued, then published on ``XCE_EVENTS``
in stamping order, in batch messages (``xce.events.BATCH``, at most
``batch_events`` events and about ``BATCH_BYTES`` each: the events waiting when the
last publish ended, so a batch never waits to fill), pipelined and chained
(``xce_kit.publisher.ChainedPublisher``: none overtakes another, none is stored
twice). Each batch carries the id of its last event and the controller position of
its last event (``Xce-Ctl-Seq``, ``Xce-Ctl-Epoch``); once the stream has it, the
controller messages it covers are done and acknowledged (``durability``).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from nats.aio.client import Client as NatsClient
from xce_kit.publisher import ChainedPublisher, Outgoing
from xce_schemas.bus import EVENTS_BATCH_SUBJECT, EVENTS_STREAM
from xce_schemas.controller import CTL_EPOCH_HEADER, CTL_SEQ_HEADER

from xce_driver.live.bridge.durability import CtlProgress
from xce_driver.live.bridge.options import BATCH_BYTES, STOP_RETRY_S, BridgeOptions
from xce_driver.live.event_codec import encode_batch
from xce_driver.live.metrics import BridgeMetrics

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Stamped:
    """An event stamped and waiting for the stream: its type, JSON, id, the
    controller position when it was stamped, and when (``time.perf_counter()``, s)."""

    type: str
    data: bytes
    event_id: str
    ctl_seq: int
    queued: float = field(default_factory=time.perf_counter)


class EventOutbox:
    """The queue of stamped events and its publisher (see the module docstring).

    Args:
        options: batching and the acknowledgement timeout.
        metrics: where events, their publish time and retries are counted.
        progress: the controller position the published events advance.
    """

    def __init__(self, options: BridgeOptions, metrics: BridgeMetrics, progress: CtlProgress):
        self.options = options
        self.metrics = metrics
        self._progress = progress
        #: Events the stream acknowledged in this run.
        self.published = 0
        self._queue: collections.deque[Stamped] = collections.deque()
        self._wake = asyncio.Event()
        self._closing = False
        self._events: ChainedPublisher | None = None

    def bind(self, nc: NatsClient) -> None:
        """Publish through ``nc``."""
        self._events = ChainedPublisher(
            nc,
            EVENTS_STREAM,
            ack_timeout_s=self.options.ack_timeout_s,
            on_retry=self.metrics.publish_retries.inc,
        )

    def put(self, event_type: str, ts: int, data: bytes, event_id: str) -> None:
        """Queue a stamped event (``ts``: its time, ns; ``data``: its JSON) for the
        stream, in stamping order, with the controller position now."""
        self._queue.append(Stamped(event_type, data, event_id, self._progress.taken))
        self.metrics.last_event_ts.set(ts / 1e9)
        self._wake.set()

    def close(self) -> None:
        """Publish what is queued, retrying for ``STOP_RETRY_S`` at most, then let
        ``run`` return."""
        self._closing = True
        if self._events is not None:
            self._events.give_up_after_s = STOP_RETRY_S
        self._wake.set()

    async def run(self) -> None:
        """Publish queued events in order, a batch at a time, until closed and empty;
        after each batch, acknowledge the controller messages it holds."""
        assert self._events is not None
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            take = min(len(self._queue), self.options.publish_batch)
            events = [self._queue.popleft() for _ in range(take)]
            self.metrics.events_queued.set(len(self._queue) + take)
            batches = self.batches(events)
            put = await self._events.publish(batches, self._confirm)
            self.metrics.events_queued.set(len(self._queue))
            await self._progress.ack_done()
            if put < len(batches):
                lost = sum(len(cast(list[Stamped], b.tag)) for b in batches[put:])
                log.error("stopping: %d events not published", lost)
                self._queue.clear()
                return

    def batches(self, events: Sequence[Stamped]) -> list[Outgoing]:
        """``events`` in batch messages of at most ``batch_events`` events and about
        ``BATCH_BYTES`` (an event larger than that goes alone), in order; each with
        the id and the controller position of its last event."""
        out: list[Outgoing] = []
        limit, epoch = self.options.batch_events, self._progress.epoch
        start = size = 0
        for end, stamped in enumerate(events, 1):
            size += len(stamped.data)
            if end - start == limit or size >= BATCH_BYTES or end == len(events):
                part = events[start:end]
                last = part[-1]
                headers = {CTL_SEQ_HEADER: str(last.ctl_seq), CTL_EPOCH_HEADER: epoch}
                data = encode_batch([e.data for e in part], [e.event_id for e in part])
                out.append(Outgoing(EVENTS_BATCH_SUBJECT, data, last.event_id, headers, tag=part))
                start, size = end, 0
        return out

    def _confirm(self, item: Outgoing) -> None:
        events = cast(list[Stamped], item.tag)
        self._progress.advance(events[-1].ctl_seq)
        self.published += len(events)
        now = time.perf_counter()
        for stamped in events:
            self.metrics.events.labels(stamped.type).inc()
            self.metrics.event_publish.observe(now - stamped.queued)
