"""The core service's consumer of ``XCE_EVENTS``: a durable pull consumer recreated
at each start to deliver from right after the checkpoint, fetched a batch at a
time, and the stream itself for an event whose delivery came late.

Only one core service may consume the stream at a time, the leader
(``leadership``): it deletes and recreates the consumer once it leads. The consumer
keeps a pull request open while a batch is handled and flushed
(``xce_kit.pull.PullConsumer``), so the next batch is on its way meanwhile.
Acknowledgements use ``AckPolicy.ALL``: one covers a batch.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.errors import Error as NatsError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, RawStreamMsg
from nats.js.errors import NotFoundError
from xce_kit.pull import PullConsumer
from xce_kit.retention import check_position
from xce_schemas.bus import EVENTS_STREAM

from xce_driver.live.core_service.options import CoreServiceOptions

log = logging.getLogger(__name__)


class EventConsumer:
    """The durable consumer ``options.durable`` of ``XCE_EVENTS``.

    Args:
        nc: the connected client.
        options: the consumer's name, batch, fetch timeout and ack wait.
        pause: waits that many seconds, or less when the service is asked to stop.
    """

    def __init__(
        self,
        nc: NatsClient,
        options: CoreServiceOptions,
        pause: Callable[[float], Awaitable[None]],
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self.options = options
        self._pause = pause
        self._sub: PullConsumer | None = None

    async def start(self, after: int) -> None:
        """(Re)create the consumer to deliver from event ``after + 1`` and bind to it.

        Raises:
            nats.errors.Error: the server refuses or does not answer.
        """
        js, durable = self._js, self.options.durable
        with contextlib.suppress(NotFoundError):
            await js.delete_consumer(EVENTS_STREAM, durable)
        # No filter subject: the stream holds only xce.events.>, and on a filtered
        # consumer nats-server 2.9 counts the pending messages by a scan under the
        # consumer's lock at every CONSUMER.INFO, holding up the fetches (a
        # monitor polling it slowed the service from ~8,500 to ~1,800 events/s).
        config = ConsumerConfig(
            durable_name=durable,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=after + 1,
            ack_policy=AckPolicy.ALL,
            ack_wait=self.options.ack_wait_s,
            max_ack_pending=max(1000, self.options.fetch_batch),
        )
        await js.add_consumer(EVENTS_STREAM, config)
        self._sub = await PullConsumer.bind(self._nc, EVENTS_STREAM, durable)

    async def fetch(self) -> list[Msg]:
        """The next deliveries (none within the fetch timeout, or after a failed
        fetch, logged).

        Raises:
            nats.errors.ConnectionClosedError: the client is closed for good (after
                a server error): the service stops with it.
        """
        assert self._sub is not None
        options = self.options
        try:
            return await self._sub.fetch(options.fetch_batch, timeout=options.fetch_timeout_s)
        except TimeoutError:
            return []
        except ConnectionClosedError:
            raise
        except NatsError as exc:
            log.warning("fetch failed (%s); retrying", exc)
            await self._pause(options.fetch_timeout_s)
            return []

    async def read(self, seq: int) -> RawStreamMsg | None:
        """Event ``seq`` straight from the stream (its delivery came late); None
        when it was deleted from it (logged).

        Raises:
            xce_kit.retention.RetentionError: the stream's limits dropped it (and
                maybe more) before the core read it: going on would schedule without
                it, so the service stops (exit status 2, one line).
            nats.errors.Error: the stream does not answer.
        """
        try:
            stored = await self._js.get_msg(EVENTS_STREAM, seq=seq)
        except NotFoundError:
            reader = f"consumer {self.options.durable}"
            await check_position(self._js, EVENTS_STREAM, seq - 1, reader)
            log.warning("event seq %d was deleted from %s: skipped", seq, EVENTS_STREAM)
            return None
        log.info("event seq %d taken from the stream (its delivery came late)", seq)
        return stored

    async def close(self) -> None:
        """Stop fetching; deliveries not taken come again to the next start."""
        if self._sub is not None:
            await self._sub.unsubscribe()
