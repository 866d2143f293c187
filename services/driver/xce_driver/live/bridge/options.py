"""What the bridge is told: its options and its constants."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xce_kit.arguments import DEFAULT_NATS_URL
from xce_kit.streams import NO_LIMITS, StreamLimits
from xce_schemas.controller import BRIDGE_CTL_DURABLE

#: Longest round interval, s (a day): beyond it the option is surely a mistake.
MAX_ROUND_INTERVAL_S = 86_400.0
#: How long a stopping bridge keeps retrying events the stream has not taken, s.
STOP_RETRY_S = 10.0
#: How many events back a starting bridge looks for the controller position.
RESUME_LOOKBACK = 256
#: About the most bytes of events in one ``XCE_EVENTS`` message (NATS's default
#: largest message is 1 MiB).
BATCH_BYTES = 256 * 1024
#: Bytes kept free in a message around one event: the batch's frame, its id, headers.
BATCH_FRAME_BYTES = 4096
#: Most controller messages delivered to the bridge and not yet acknowledged.
CTL_MAX_ACK_PENDING = 100_000


@dataclass(frozen=True)
class BridgeOptions:
    """What the bridge connects to and how it paces and batches.

    Attributes:
        nats_url: NATS server URL(s), comma-separated.
        round_interval_s: wall time between two ``BEGIN_ROUND`` events, s (> 0).
        durable: name of the bridge's durable consumer on ``XCE_DECISIONS``.
        ctl_durable: name of its durable consumer on ``XCE_CONTROLLER``.
        ctl_ack_wait_s: that consumer's ack wait when the bridge creates it, s (> 0):
            a controller message not acknowledged in that time is delivered again
            (and dropped, when it is an event already).
        publish_batch: most events published before waiting for their
            acknowledgements (≥ 1).
        batch_events: most events in one ``XCE_EVENTS`` message (≥ 1).
        ack_timeout_s: how long to wait for an event's acknowledgement before
            publishing it again, s (> 0).
        fetch_batch: controller messages or decisions fetched per request (≥ 1).
        fetch_timeout_s: how long one fetch waits, s (> 0).
        limits: retention and replicas of the streams the bridge creates (the
            three of ``xce_kit.streams.ensure_streams`` and the two controller
            streams); one that exists is left as it is.

    Raises:
        ValueError: an option out of range, naming it.
    """

    nats_url: str = DEFAULT_NATS_URL
    round_interval_s: float = 1.0
    durable: str = "xce-bridge"
    ctl_durable: str = BRIDGE_CTL_DURABLE
    ctl_ack_wait_s: float = 30.0
    publish_batch: int = 512
    batch_events: int = 256
    ack_timeout_s: float = 5.0
    fetch_batch: int = 256
    fetch_timeout_s: float = 0.5
    limits: StreamLimits = NO_LIMITS

    def __post_init__(self) -> None:
        interval = self.round_interval_s
        if not (math.isfinite(interval) and 0 < interval <= MAX_ROUND_INTERVAL_S):
            raise ValueError(
                f"round interval must be more than 0 and at most {MAX_ROUND_INTERVAL_S:g} s, "
                f"not {interval:g}"
            )
        if min(self.publish_batch, self.fetch_batch, self.batch_events) < 1:
            raise ValueError("publish_batch, fetch_batch and batch_events must be 1 or more")
        if not (self.ack_timeout_s > 0 and self.fetch_timeout_s > 0 and self.ctl_ack_wait_s > 0):
            raise ValueError("ack_timeout_s, fetch_timeout_s and ctl_ack_wait_s must be positive")
