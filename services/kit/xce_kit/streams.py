"""The JetStream streams of the live services, declared idempotently.

Every service that publishes or consumes calls ``ensure_streams`` at start; a stream
that already exists is left as its operator configured it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType, StreamConfig, StreamInfo
from nats.js.errors import BadRequestError, NotFoundError
from xce_schemas.bus import (
    DEADLETTER_STREAM,
    DEADLETTER_SUBJECTS,
    DECISIONS_STREAM,
    DECISIONS_SUBJECTS,
    EVENTS_STREAM,
    EVENTS_SUBJECTS,
)

log = logging.getLogger("xce_driver.live")

#: Default duplicate window of ``XCE_DECISIONS``, s: a core that restarts within it
#: has its re-published decisions dropped by the server (its own watermark covers
#: longer outages, see ``core_service``).
DECISIONS_DUPLICATE_WINDOW_S = 3600.0
#: Default duplicate window of ``XCE_EVENTS``, s, for publishers that set message ids.
EVENTS_DUPLICATE_WINDOW_S = 120.0


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """How much a stream keeps and on how many servers, for the streams a service
    creates (one that exists is left as its operator configured it).

    Attributes:
        max_age_s: messages older than this are dropped, s; 0 keeps them forever.
        max_bytes: the oldest messages are dropped beyond this size, bytes; -1 no limit.
        replicas: copies of the stream on a JetStream cluster (1 on a lone server).
    """

    max_age_s: float = 0.0
    max_bytes: int = -1
    replicas: int = 1


#: Limits of a stream created without any said: nothing expires, one copy.
NO_LIMITS = StreamLimits()


def stream_configs(
    decisions_window_s: float = DECISIONS_DUPLICATE_WINDOW_S, limits: StreamLimits = NO_LIMITS
) -> list[StreamConfig]:
    """The three streams: events, decisions, dead letters (file storage, limits
    retention).

    Args:
        decisions_window_s: duplicate window of ``XCE_DECISIONS``, s (> 0).
        limits: retention and replicas of each.

    Raises:
        ValueError: a window of 0 or less.
    """
    if decisions_window_s <= 0:
        raise ValueError(f"duplicate window must be positive, not {decisions_window_s} s")
    return [
        stream_config(EVENTS_STREAM, EVENTS_SUBJECTS, EVENTS_DUPLICATE_WINDOW_S, limits),
        stream_config(DECISIONS_STREAM, DECISIONS_SUBJECTS, decisions_window_s, limits),
        stream_config(DEADLETTER_STREAM, DEADLETTER_SUBJECTS, EVENTS_DUPLICATE_WINDOW_S, limits),
    ]


def stream_config(
    name: str, subject: str, window_s: float, limits: StreamLimits = NO_LIMITS
) -> StreamConfig:
    """A stream of the XCE bus: ``subject`` (a wildcard) kept in files within
    ``limits``, repeated message ids dropped within ``window_s`` seconds."""
    return StreamConfig(
        name=name,
        subjects=[subject],
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        duplicate_window=window_s,
        max_age=limits.max_age_s or None,
        max_bytes=limits.max_bytes,
        num_replicas=limits.replicas,
    )


async def ensure_stream(js: JetStreamContext, config: StreamConfig) -> StreamInfo | None:
    """Create the stream ``config`` describes unless it exists; one that exists is left
    as its operator configured it.

    Returns:
        The info of the stream that was there already (None: created now, here or
        by another service at the same moment).

    Raises:
        nats.errors.Error: the server refuses (e.g. JetStream is off) or does not answer.
    """
    assert config.name is not None
    try:
        return await js.stream_info(config.name)
    except NotFoundError:
        pass
    try:
        await js.add_stream(config)
    except BadRequestError:
        # Created meanwhile by another service, maybe with another configuration.
        await js.stream_info(config.name)
    return None


async def ensure_streams(
    js: JetStreamContext,
    decisions_window_s: float = DECISIONS_DUPLICATE_WINDOW_S,
    limits: StreamLimits = NO_LIMITS,
) -> None:
    """Create whichever of the three streams does not exist yet (``ensure_stream``);
    warn when one that exists keeps repeats for less than asked.

    Args:
        js: a JetStream context of a connected client.
        decisions_window_s: duplicate window of ``XCE_DECISIONS`` when it is created, s.
        limits: retention and replicas of the streams created now.

    Raises:
        nats.errors.Error: the server refuses (e.g. JetStream is off) or does not answer.
    """
    for config in stream_configs(decisions_window_s, limits):
        info = await ensure_stream(js, config)
        if info is None:
            continue
        have = info.config.duplicate_window or 0.0
        if have < config.duplicate_window:
            log.warning(
                "stream %s has a duplicate window of %g s, less than the %g s asked",
                config.name,
                have,
                config.duplicate_window,
            )
