"""The JetStream streams of the live services, declared idempotently, and how much
each keeps.

Every service that publishes or consumes calls ``ensure_streams`` (and the ensure of
its other streams) at start; a stream that already exists is left as its operator
configured it. Each stream is made by ``stream_config`` within ``StreamLimits``:
the services' command lines default to ``DEFAULT_LIMITS`` (a week, 1 GiB each),
library callers and tests to ``NO_LIMITS``. ``docs/operations.md`` gives the sizing
rule and what a limit may drop (``xce_kit.retention`` catches it).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig, StreamInfo
from nats.js.errors import APIError, NotFoundError
from xce_schemas.bus import (
    DEADLETTER_STREAM,
    DEADLETTER_SUBJECTS,
    DECISIONS_STREAM,
    DECISIONS_SUBJECTS,
    EVENTS_STREAM,
    EVENTS_SUBJECTS,
    RECORD_DUPLICATE_WINDOW_S,
    RECORD_STREAM,
    RECORD_SUBJECTS,
)
from xce_schemas.controller import CTL_DECISIONS_STREAM, CTL_STREAM

log = logging.getLogger("xce_kit.streams")

#: Default duplicate window of ``XCE_DECISIONS``, s: a core that restarts within it
#: has its re-published decisions dropped by the server (its own watermark covers
#: longer outages, see ``core_service``).
DECISIONS_DUPLICATE_WINDOW_S = 3600.0
#: Default duplicate window of ``XCE_EVENTS``, s, for publishers that set message ids.
EVENTS_DUPLICATE_WINDOW_S = 120.0
#: Every stream of the bus: events, decisions, dead letters, the controller's two
#: (declared in ``xce_driver.live.controller_bus``) and the record stream.
BUS_STREAMS = (
    EVENTS_STREAM,
    DECISIONS_STREAM,
    DEADLETTER_STREAM,
    CTL_STREAM,
    CTL_DECISIONS_STREAM,
    RECORD_STREAM,
)
#: Most copies of a stream JetStream keeps (nats-server refuses more).
MAX_REPLICAS = 5


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """How much a stream keeps and on how many servers, for the streams a service
    creates (one that exists is left as its operator configured it).

    The oldest messages go first, read or not (discard policy ``old``): a full
    stream that refused new events would stop scheduling, so a reader that falls
    behind the stream's head is caught instead (``xce_kit.retention``).

    Attributes:
        max_age_s: messages older than this are dropped, s; 0 keeps them forever.
        max_bytes: the oldest messages are dropped beyond this size, bytes (on each
            server holding a copy; nats-server reserves it in its store when the
            stream is created); -1 no limit.
        replicas: copies of the stream on a JetStream cluster, 1 to ``MAX_REPLICAS``
            (1 on a lone server).

    Raises:
        ValueError: a negative or infinite age, a size of 0 or below -1, replicas
            out of range.
    """

    max_age_s: float = 0.0
    max_bytes: int = -1
    replicas: int = 1

    def __post_init__(self) -> None:
        if not math.isfinite(self.max_age_s) or self.max_age_s < 0:
            raise ValueError(f"max age must be 0 (forever) or more seconds, not {self.max_age_s}")
        if self.max_bytes == 0 or self.max_bytes < -1:
            raise ValueError(f"max bytes must be -1 (no limit) or positive, not {self.max_bytes}")
        if not 1 <= self.replicas <= MAX_REPLICAS:
            raise ValueError(f"replicas must be 1 to {MAX_REPLICAS}, not {self.replicas}")

    @property
    def bounded(self) -> bool:
        """Whether the stream drops messages at all (an age or a size limit)."""
        return bool(self.max_age_s) or self.max_bytes > 0

    def __str__(self) -> str:
        """E.g. ``max age 604800 s, max bytes 8589934592, 3 replicas``."""
        parts = [f"max age {self.max_age_s:g} s"] if self.max_age_s else []
        parts += [f"max bytes {self.max_bytes}"] if self.max_bytes > 0 else []
        parts += [] if parts else ["no age or size limit"]
        return ", ".join([*parts, f"{self.replicas} replica{'s' * (self.replicas > 1)}"])


#: Limits of a stream created without any said: nothing expires, one copy.
NO_LIMITS = StreamLimits()
#: Seven days, s: a weekend's outage of any reader, with days to spare.
WEEK_S = 7 * 86400.0
#: The services' defaults (``--stream-max-age``, ``--stream-max-bytes``): a week, and
#: at most 1 GiB per stream. nats-server reserves a stream's max bytes in its store
#: when the stream is created, so the six streams of a stack need 6 GiB free on every
#: server that holds a copy. At the sizes docs/operations.md measured, the week binds
#: first up to about 57,000 jobs a day with rounds every second (``XCE_CTL_DECISIONS``
#: fills first; ``XCE_RECORD``, recording all the time, from about 27,000).
DEFAULT_LIMITS = StreamLimits(max_age_s=WEEK_S, max_bytes=2**30)


class StreamRefused(NatsError):
    """nats-server refused to create a stream; the text is one line naming it, its
    limits and the server's reason (e.g. ``insufficient storage resources``)."""


def stream_configs(
    decisions_window_s: float = DECISIONS_DUPLICATE_WINDOW_S, limits: StreamLimits = NO_LIMITS
) -> list[StreamConfig]:
    """The three streams: events, decisions, dead letters (``stream_config``).

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
        deadletter_stream_config(limits),
    ]


def deadletter_stream_config(limits: StreamLimits = NO_LIMITS) -> StreamConfig:
    """``XCE_DEADLETTER``, the events refused by the bridge or the core
    (``stream_config``), which the controller (the emulator) reads too."""
    return stream_config(DEADLETTER_STREAM, DEADLETTER_SUBJECTS, EVENTS_DUPLICATE_WINDOW_S, limits)


def stream_config(
    name: str, subject: str, window_s: float, limits: StreamLimits = NO_LIMITS
) -> StreamConfig:
    """A stream of the XCE bus: ``subject`` (a wildcard) kept in files within
    ``limits``, oldest messages dropped first, repeated message ids dropped within
    ``window_s`` seconds, or within the max age when that is shorter (nats-server
    refuses a window longer than the age)."""
    age = limits.max_age_s
    return StreamConfig(
        name=name,
        subjects=[subject],
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        discard=DiscardPolicy.OLD,
        duplicate_window=min(window_s, age) if age else window_s,
        max_age=age or None,
        max_bytes=limits.max_bytes,
        num_replicas=limits.replicas,
    )


def record_stream_config(
    window_s: float = RECORD_DUPLICATE_WINDOW_S, limits: StreamLimits = NO_LIMITS
) -> StreamConfig:
    """``XCE_RECORD``, the core service's record stream that the recorder reads
    (``stream_config``).

    Args:
        window_s: duplicate window, s (> 0).
        limits: retention and replicas.
    """
    return stream_config(RECORD_STREAM, RECORD_SUBJECTS, window_s, limits)


def limits_of(config: StreamConfig) -> StreamLimits:
    """The ``StreamLimits`` a stream's configuration holds (unset fields: none)."""
    max_bytes = config.max_bytes if config.max_bytes and config.max_bytes > 0 else -1
    return StreamLimits(config.max_age or 0.0, max_bytes, config.num_replicas or 1)


async def ensure_stream(js: JetStreamContext, config: StreamConfig) -> StreamInfo | None:
    """Create the stream ``config`` describes unless it exists; one that exists is left
    as its operator configured it (a line at INFO says so when its limits differ).

    Returns:
        The info of the stream that was there already (None: created now, here or
        by another service at the same moment).

    Raises:
        StreamRefused: the server refuses to create it (e.g. not enough storage for
            its max bytes, replicas on a lone server).
        nats.errors.Error: the server does not answer, or JetStream is off.
    """
    assert config.name is not None
    try:
        info = await js.stream_info(config.name)
    except NotFoundError:
        pass
    else:
        have, want = limits_of(info.config), limits_of(config)
        if have != want:
            log.info("stream %s exists with %s; left as it is (not %s)", config.name, have, want)
        return info
    try:
        await js.add_stream(config)
    except APIError as exc:
        try:  # created meanwhile by another service, maybe with another configuration
            await js.stream_info(config.name)
        except NotFoundError:
            raise StreamRefused(
                f"stream {config.name} ({limits_of(config)}) cannot be created: "
                f"{exc.description or exc}"
            ) from None
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
        StreamRefused: the server refuses to create one.
        nats.errors.Error: the server does not answer, or JetStream is off.
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


async def ensure_record_stream(js: JetStreamContext, limits: StreamLimits = NO_LIMITS) -> None:
    """Create ``XCE_RECORD`` within ``limits`` unless it exists (``ensure_stream``;
    the core service and the recorder both do).

    Raises:
        StreamRefused: the server refuses to create it.
        nats.errors.Error: the server does not answer, or JetStream is off.
    """
    await ensure_stream(js, record_stream_config(limits=limits))
