"""What the recorder connects to and how it records (``RecorderOptions``), and the
errors it reports in one line."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from xce_kit.arguments import DEFAULT_NATS_URL, DEFAULT_REDIS_URL
from xce_kit.options import nats_servers, public_url
from xce_kit.streams import NO_LIMITS, StreamLimits


class RefusedError(Exception):
    """Redis refused the recorder's login or a command its user lacks the right to
    run, when it starts: trying again will not help; the message is one line naming
    the variables to fix (``xce_kit.redis_client.redis_refusal``)."""


class ConnectError(OSError):
    """A server that cannot be reached when the recorder starts: the message names it
    and says why in one line (``NATS at nats://127.0.0.1:1 did not answer within
    10 s``)."""


class StartError(RuntimeError):
    """A recording that cannot start; the message says why in one line.

    Attributes:
        conflict: refused because of what exists (a recording of that name), not
            because something failed.
    """

    def __init__(self, message: str, *, conflict: bool = False) -> None:
        super().__init__(message)
        self.conflict = conflict


@dataclass(frozen=True)
class RecorderOptions:
    """What the recorder connects to and how it records.

    Attributes:
        nats_url: NATS server URL(s), comma-separated (``xce_kit.options.nats_servers``).
        redis_url: Redis URL.
        recordings_dir: where exported recordings go (created if missing).
        snapshot_interval: a SNAPSHOT every N recorded events (0: only the first;
            Req 10 AC 10); sent to the core service with each start.
        fetch_batch: messages fetched per request (≥ 1).
        poll_s: longest wait for new lines while recording, s (> 0).
        stop_wait_s: on stop, the longest wait for the core service to end the
            recording, s (≥ 0); the recording then ends at the last whole event read.
        start_timeout_s: the longest a start may take (the core catching up to the
            stream's end first), s; less than the admin API's command timeout (60 s),
            so a slow start is answered with its reason rather than timing out there.
        connect_timeout_s: the longest the recorder waits for NATS, and then for
            Redis, when it starts, s (> 0).
        limits: retention and replicas of ``XCE_RECORD`` when the recorder creates it.

    Raises:
        ValueError: an option out of range, or a NATS URL that is not one.
    """

    nats_url: str = DEFAULT_NATS_URL
    redis_url: str = DEFAULT_REDIS_URL
    recordings_dir: Path = Path("recordings")
    snapshot_interval: int = 10_000
    fetch_batch: int = 256
    poll_s: float = 0.1
    stop_wait_s: float = 30.0
    start_timeout_s: float = 45.0
    connect_timeout_s: float = 10.0
    limits: StreamLimits = NO_LIMITS

    def __post_init__(self) -> None:
        try:
            nats_servers(self.nats_url)
        except ValueError as exc:
            shown = public_url(self.nats_url)  # never a secret in a message
            raise ValueError(f"nats_url {shown!r} is not a NATS URL ({exc})") from None
        if not self.snapshot_interval >= 0:
            raise ValueError(f"snapshot_interval must be 0 or more, not {self.snapshot_interval}")
        if not self.fetch_batch >= 1:
            raise ValueError(f"fetch_batch must be 1 or more, not {self.fetch_batch}")
        for name in ("poll_s", "start_timeout_s", "connect_timeout_s"):
            value = getattr(self, name)
            if not 0 < value < math.inf:  # nan too
                raise ValueError(f"{name} must be positive and finite, not {value}")
        if not 0 <= self.stop_wait_s < math.inf:
            raise ValueError(f"stop_wait_s must be 0 or more and finite, not {self.stop_wait_s}")
