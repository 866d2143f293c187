"""What the core service is told: its options, its constants, and the fault points
of the crash tests."""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass

from xce_kit.arguments import DEFAULT_NATS_URL, DEFAULT_REDIS_URL
from xce_kit.streams import DECISIONS_DUPLICATE_WINDOW_S, NO_LIMITS, StreamLimits
from xce_schemas.bus import CORE_CHECKPOINT_KEY, CORE_RECORDING_KEY

log = logging.getLogger(__name__)

#: Points where ``--fault-kill-at`` makes the service SIGKILL itself (crash tests):
#: after publishing its N-th decision, before acknowledging its N-th event, before
#: writing its N-th checkpoint, after writing it, after publishing its N-th record
#: message.
FAULT_POINTS = ("decision", "ack", "checkpoint", "checkpointed", "record")

#: How long a stopping service still tries to store the decisions of the events it
#: took, s (a bus that is gone is not waited for long).
STOP_GRACE_S = 5.0
#: How many messages back from the end of ``XCE_DECISIONS`` (``XCE_RECORD``) a
#: starting service looks for its own last one, past other publishers' messages.
RESUME_LOOKBACK = 10_000
#: How often the service writes its heartbeat into ``xce:core:status``, s.
HEARTBEAT_S = 1.0


@dataclass(frozen=True)
class CoreServiceOptions:
    """What the core service connects to and how often it checkpoints.

    Attributes:
        nats_url: NATS server URL(s), comma-separated.
        redis_url: Redis URL (``redis://host:port/db``).
        snapshot_every: write a checkpoint after this many events (≥ 1). A checkpoint
            of a 1,000-host cluster costs about 15 ms; a restart handles again at
            most this many events (10,000: about a second).
        snapshot_seconds: ... or once this many seconds passed since the last one with
            events handled since, s (> 0).
        prng_seed: seed of a fresh core's PRNG (a checkpoint carries its own).
        durable: name of the durable consumer on ``XCE_EVENTS``.
        checkpoint_key: the Redis key of the checkpoint.
        fetch_batch: messages fetched per request (≥ 1); also the most events taken
            before their decisions are flushed (a message's events are never split).
        fetch_timeout_s: how long one fetch waits for events, s; also the longest a
            stop request waits while the stream is idle.
        ack_wait_s: how long the server waits for an acknowledgement before it
            redelivers an event, s.
        publish_timeout_s: how long to wait for the stream's acknowledgement of a
            window of decisions or recording messages before looking at what the
            stream holds and sending the rest again, s (a request lost in a NATS
            restart is given up after this long).
        decisions_window_s: duplicate window of ``XCE_DECISIONS`` if this service
            creates the stream, s.
        recording_key: the Redis key of the recording commands' positions.
        limits: retention and replicas of the streams this service creates
            (``XCE_EVENTS``, ``XCE_DECISIONS``, the dead letters, ``XCE_RECORD``);
            one that exists is left as it is.
        fault: ``(point, n)``: SIGKILL this process at that point (crash tests only).

    Raises:
        ValueError: an option out of range.
    """

    nats_url: str = DEFAULT_NATS_URL
    redis_url: str = DEFAULT_REDIS_URL
    snapshot_every: int = 10_000
    snapshot_seconds: float = 30.0
    prng_seed: int = 0
    durable: str = "xce-core"
    checkpoint_key: str = CORE_CHECKPOINT_KEY
    fetch_batch: int = 256
    fetch_timeout_s: float = 0.5
    ack_wait_s: float = 60.0
    publish_timeout_s: float = 5.0
    decisions_window_s: float = DECISIONS_DUPLICATE_WINDOW_S
    recording_key: str = CORE_RECORDING_KEY
    limits: StreamLimits = NO_LIMITS
    fault: tuple[str, int] | None = None

    def __post_init__(self) -> None:
        if self.snapshot_every < 1:
            raise ValueError(f"snapshot_every must be 1 or more, not {self.snapshot_every}")
        if self.snapshot_seconds <= 0:
            raise ValueError(f"snapshot_seconds must be positive, not {self.snapshot_seconds}")
        if self.fetch_batch < 1:
            raise ValueError(f"fetch_batch must be 1 or more, not {self.fetch_batch}")
        if min(self.fetch_timeout_s, self.ack_wait_s, self.publish_timeout_s) <= 0:
            raise ValueError("fetch_timeout_s, ack_wait_s and publish_timeout_s must be positive")
        if self.prng_seed < 0:
            raise ValueError(f"prng_seed must be 0 or more, not {self.prng_seed}")
        if self.fault is not None and (self.fault[0] not in FAULT_POINTS or self.fault[1] < 1):
            raise ValueError(f"fault must be one of {FAULT_POINTS} with a count ≥ 1")


class Faults:
    """Fault injection for the crash tests: ``hit(point)`` SIGKILLs this process the
    N-th time it reaches ``point`` when the options' ``fault`` is ``(point, N)``.

    Args:
        fault: ``CoreServiceOptions.fault`` (None: never).
    """

    def __init__(self, fault: tuple[str, int] | None) -> None:
        self._fault = fault
        self._counts = dict.fromkeys(FAULT_POINTS, 0)

    def hit(self, point: str) -> None:
        """Count one pass through ``point``; SIGKILL this process on the N-th."""
        fault = self._fault
        if fault is None or fault[0] != point:
            return
        self._counts[point] += 1
        if self._counts[point] == fault[1]:
            log.warning("fault injection: SIGKILL at %s %d", point, fault[1])
            os.kill(os.getpid(), signal.SIGKILL)
