"""A reader of what a stream receives from now on, through a durable consumer of one
run (a client's run, not a service's life): what the stream held before is another
run's. The consumer is durable so a NATS server restarted meanwhile loses nothing,
and removed by the server should the run die without deleting it.
"""

from __future__ import annotations

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from xce_kit.reader import InOrderReader, consumer_position
from xce_kit.retention import check_info, consumer_done

#: How long the server waits for an acknowledgement before delivering again, s.
ACK_WAIT_S = 30.0
#: How long the server keeps a consumer nobody reads (its run died), s.
INACTIVE_THRESHOLD_S = 3600.0


async def reader_from_now(
    nc: NatsClient, js: JetStreamContext, stream: str, durable: str
) -> InOrderReader:
    """An in-order reader of ``stream`` through the durable consumer ``durable``,
    created (``js``) from the stream's end when it does not exist (acknowledged with
    ``AckPolicy.ALL``), read over the client ``nc``. A consumer that exists already
    (the run goes on after a NATS restart) is bound where it is.

    Raises:
        xce_kit.retention.RetentionError: the consumer exists and the stream's
            limits dropped messages it had not done.
        nats.errors.Error: the server refuses or does not answer.
    """
    config = ConsumerConfig(
        durable_name=durable,
        deliver_policy=DeliverPolicy.NEW,
        ack_policy=AckPolicy.ALL,
        ack_wait=ACK_WAIT_S,
        inactive_threshold=INACTIVE_THRESHOLD_S,
    )
    info = await js.add_consumer(stream, config)
    stream_info = await js.stream_info(stream)
    check_info(stream_info, consumer_done(info), f"consumer {durable}")
    position = consumer_position(info, stream_info)
    return await InOrderReader.bind(nc, stream, durable, position=position)
