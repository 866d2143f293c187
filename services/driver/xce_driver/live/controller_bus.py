"""The controller hop on JetStream (contract: ``xce_schemas.controller``): its two
streams, ``XCE_CONTROLLER`` (``xce.ctl.*``) and ``XCE_CTL_DECISIONS``
(``xce.ctl.decisions.>``), declared idempotently.

Reading them in order and publishing to them in order is the kit's
(``xce_kit.reader.InOrderReader``, ``xce_kit.publisher.ChainedPublisher``): nothing
there is about controllers.
"""

from __future__ import annotations

from nats.js import JetStreamContext
from nats.js.api import StreamConfig
from xce_kit.streams import NO_LIMITS, StreamLimits, ensure_stream, stream_config
from xce_schemas.controller import (
    CTL_DECISIONS_DUPLICATE_WINDOW_S,
    CTL_DECISIONS_STREAM,
    CTL_DECISIONS_SUBJECTS,
    CTL_DUPLICATE_WINDOW_S,
    CTL_STREAM,
    CTL_SUBJECTS,
)


def ctl_stream_configs(limits: StreamLimits = NO_LIMITS) -> list[StreamConfig]:
    """``XCE_CONTROLLER`` and ``XCE_CTL_DECISIONS``: file storage, limits retention
    within ``limits`` (default: nothing expires), duplicate windows of
    ``xce_schemas.controller``."""
    return [
        stream_config(CTL_STREAM, CTL_SUBJECTS, CTL_DUPLICATE_WINDOW_S, limits),
        stream_config(
            CTL_DECISIONS_STREAM, CTL_DECISIONS_SUBJECTS, CTL_DECISIONS_DUPLICATE_WINDOW_S, limits
        ),
    ]


async def ensure_ctl_streams(js: JetStreamContext, limits: StreamLimits = NO_LIMITS) -> None:
    """Create whichever of the two controller streams does not exist yet, within
    ``limits`` (one that exists is left as its operator configured it).

    Raises:
        nats.errors.Error: the server refuses (e.g. JetStream is off) or does not answer.
    """
    for config in ctl_stream_configs(limits):
        await ensure_stream(js, config)
