"""The controller bridge: controller messages in, core events out, decisions back.

``xce-bridge`` sits between a cluster controller and the core service
(contract and delivery guarantees: ``xce_schemas.controller``):

1. it reads ``XCE_CONTROLLER`` (the stream of ``xce.ctl.*``) in stream order through
   its durable pull consumer (``xce-bridge-ctl``); each message is validated against
   its kind's payload model. A malformed one goes to ``xce.deadletter.bridge`` (a
   ``bus.DeadLetter`` with the reason) and nothing else stops;
2. it stamps each valid message with ``ts`` = its wall clock in ns, never going back
   (``max`` of the clock and the last ``ts`` stamped, so a clock step backwards or a
   restart cannot make the core reject an event), and publishes the core event on
   ``XCE_EVENTS``, in a batch with the events stamped with it (``xce.events.BATCH``,
   at most ``batch_events`` each: the events waiting when the last publish ended,
   so a batch never waits to fill); only once the stream has it is the controller
   message acknowledged. Every ``round_interval_s`` of wall time it emits a ``BEGIN_ROUND``
   the same way (DESIGN: rounds are events);
3. it forwards every decision of ``XCE_DECISIONS``, in stream order, through a
   durable pull consumer (``xce-bridge``), to ``xce.ctl.decisions.<OP>`` (stream
   ``XCE_CTL_DECISIONS``, message id and header ``Xce-Decision-Id`` = the decision's
   id), and acknowledges it once the forward is stored; a message on the stream
   without a core decision id (``xce-core:<seq>:<index>``) is another publisher's:
   logged, counted (``xce_bridge_foreign_decisions_total``), not forwarded.

**Order and exactly-once on XCE_EVENTS.** The bridge is the only publisher of the
stream. Events are published in the order they were stamped, in batch messages
pipelined (``xce_kit.publisher.ChainedPublisher``): each carries a ``Nats-Msg-Id`` and
names what must come right before it in the stream, so after a lost publish
the bridge sends again from the first message not acknowledged, same ids, same
bytes, and the stream keeps them in stamping order, none twice. An event of a
controller message has the id ``xce-bridge:ctl:<epoch>:<controller seq>``; a
round ``xce-bridge:<run>:<n>``; a batch has its events' ids (``EventBatch.ids``)
and the id of its last event. Every message carries the controller position
(``Xce-Ctl-Seq``, ``Xce-Ctl-Epoch``): every controller message up to it is an event
or a dead letter. At start the bridge reads the last message of the stream and goes on
from its ``ts`` and that position: a controller message delivered again (an
acknowledgement lost, a bridge restart) at or before the position is acknowledged
and dropped, never stamped a second time. If something else published meanwhile
(the order check fails right after an acknowledged event), the bridge logs it and
goes on from there.

SIGTERM or SIGINT stops it cleanly: no new messages, every event stamped is
published (and its controller message acknowledged), then exit 0; what was not
acknowledged is delivered again to the next bridge. The client reconnects to a
restarted NATS server without end.

**Modules**, one job each: ``handler`` (decode → core event: a controller message
validated and stamped, or the reason it is rejected), ``consumer`` (the durable
consumers of ``XCE_CONTROLLER`` and ``XCE_DECISIONS``), ``durability`` (the
controller position, acknowledgements, where a restart goes on), ``outbox`` (the
events out, batched and chained), ``forward`` (decisions back), ``options``,
``service`` (``Bridge``: the parts put together, and its tasks) and ``cli`` (the
``xce-bridge`` console script).
"""

from xce_driver.live.bridge.cli import build_parser, main
from xce_driver.live.bridge.handler import ctl_to_event, decode_ctl
from xce_driver.live.bridge.options import (
    BATCH_BYTES,
    BATCH_FRAME_BYTES,
    CTL_MAX_ACK_PENDING,
    MAX_ROUND_INTERVAL_S,
    RESUME_LOOKBACK,
    STOP_RETRY_S,
    BridgeOptions,
)
from xce_driver.live.bridge.service import Bridge

__all__ = [
    "BATCH_BYTES",
    "BATCH_FRAME_BYTES",
    "CTL_MAX_ACK_PENDING",
    "MAX_ROUND_INTERVAL_S",
    "RESUME_LOOKBACK",
    "STOP_RETRY_S",
    "Bridge",
    "BridgeOptions",
    "build_parser",
    "ctl_to_event",
    "decode_ctl",
    "main",
]
