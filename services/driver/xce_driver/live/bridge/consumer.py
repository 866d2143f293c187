"""The bridge's two durable consumers, read in stream order
(``xce_kit.reader.InOrderReader``): ``XCE_CONTROLLER`` (controller messages in) and
``XCE_DECISIONS`` (decisions back), both with ``AckPolicy.ALL`` (one
acknowledgement covers every message before it) and no filter subject (each stream
holds only what the bridge reads; on a filtered consumer nats-server 2.9 counts the
pending messages by a scan under the consumer's lock, see the core service's
consumer). At start, each stream must still hold every message after where the
bridge goes on: one its limits dropped stops the bridge (``RetentionError``), as it
does once running (``InOrderReader``), rather than going on past it.
"""

from __future__ import annotations

import logging

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, ConsumerInfo, DeliverPolicy, StreamInfo
from nats.js.errors import NotFoundError
from xce_kit.reader import InOrderReader, consumer_position
from xce_kit.retention import check_info, consumer_done
from xce_schemas.bus import DECISIONS_STREAM
from xce_schemas.controller import CTL_STREAM

from xce_driver.live.bridge.options import CTL_MAX_ACK_PENDING, BridgeOptions

log = logging.getLogger(__name__)


async def ctl_consumer(
    js: JetStreamContext, options: BridgeOptions, stream: StreamInfo, from_events: int
) -> int:
    """Make sure the durable consumer ``options.ctl_durable`` of ``XCE_CONTROLLER``
    exists, and say where reading goes on: the later of ``from_events`` (the
    controller position ``XCE_EVENTS`` carries) and the consumer's. A consumer of an
    earlier version with another acknowledgement policy is made anew there.

    Args:
        stream: ``XCE_CONTROLLER``'s info.

    Returns:
        The last controller sequence already done.

    Raises:
        xce_kit.retention.RetentionError: ``XCE_CONTROLLER``'s limits dropped
            messages after that position.
        nats.errors.Error: the server refuses or does not answer.
    """
    durable = options.ctl_durable
    info: ConsumerInfo | None
    try:
        info = await js.consumer_info(CTL_STREAM, durable)
    except NotFoundError:
        info = None
    position = max(from_events, 0 if info is None else consumer_done(info))
    check_info(stream, position, f"consumer {durable}")
    if info is not None and info.config.ack_policy != AckPolicy.ALL:
        log.info("%s: consumer %s made anew with AckPolicy.ALL", CTL_STREAM, durable)
        await js.delete_consumer(CTL_STREAM, durable)
        info = None
    if info is None:
        config = ConsumerConfig(
            durable_name=durable,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=position + 1,
            ack_policy=AckPolicy.ALL,
            ack_wait=options.ctl_ack_wait_s,
            max_ack_pending=CTL_MAX_ACK_PENDING,
        )
        await js.add_consumer(CTL_STREAM, config)
    return position


async def decisions_consumer(js: JetStreamContext, durable: str) -> int:
    """Make sure the bridge's durable consumer ``durable`` of ``XCE_DECISIONS``
    exists: created at the first start (from the first decision) and kept, so a
    restart goes on after the last decision forwarded.

    Returns:
        The last decision sequence already forwarded.

    Raises:
        xce_kit.retention.RetentionError: ``XCE_DECISIONS``'s limits dropped
            decisions the consumer had not forwarded (a new consumer starts at the
            stream's first message: it has lost nothing).
        nats.errors.Error: the server refuses or does not answer.
    """
    try:
        info = await js.consumer_info(DECISIONS_STREAM, durable)
    except NotFoundError:
        config = ConsumerConfig(
            durable_name=durable,
            deliver_policy=DeliverPolicy.ALL,
            ack_policy=AckPolicy.ALL,
            ack_wait=30.0,
        )
        info = await js.add_consumer(DECISIONS_STREAM, config)
    stream = await js.stream_info(DECISIONS_STREAM)
    check_info(stream, consumer_done(info), f"consumer {durable}")
    return consumer_position(info, stream)


async def reader(
    nc: NatsClient, stream: str, durable: str, position: int, options: BridgeOptions
) -> InOrderReader:
    """A reader of ``stream`` through the bridge's consumer ``durable``, after
    ``position``, batched as the options say.

    Raises:
        nats.errors.Error: the consumer cannot be bound.
    """
    return await InOrderReader.bind(
        nc,
        stream,
        durable,
        position=position,
        batch=options.fetch_batch,
        fetch_timeout_s=options.fetch_timeout_s,
    )
