"""Connecting to NATS the way every live client of the driver does.

The client tries a few times at start, so a wrong URL fails in about a second with
one clear error instead of hanging; once connected it reconnects without end, so a
NATS server that restarts is ridden out.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import nats
from nats.aio.client import Client as NatsClient

#: Connection attempts at start before giving up.
START_ATTEMPTS = 3
#: Wait between two attempts, s.
RECONNECT_WAIT_S = 0.2


async def connect_nats(
    url: str,
    name: str,
    log: logging.Logger,
    *,
    disconnected_cb: Callable[[], Awaitable[None]] | None = None,
    reconnected_cb: Callable[[], Awaitable[None]] | None = None,
) -> NatsClient:
    """A connected NATS client that reconnects without end.

    Args:
        url: server URL(s), comma-separated.
        name: the client name the server shows.
        log: where connection errors go once connected, one line each (no
            tracebacks; failed tries at start are logged at DEBUG).
        disconnected_cb, reconnected_cb: called on those events.

    Raises:
        nats.errors.NoServersError: no server answered ``START_ATTEMPTS`` tries.
        nats.errors.Error, OSError: the server refused the connection.
    """

    connected = False

    async def error_cb(exc: Exception) -> None:
        # Failed tries at start are summed up by the error ``connect`` raises.
        log.log(logging.WARNING if connected else logging.DEBUG, "nats: %s", exc)

    nc = await nats.connect(
        url,
        name=name,
        max_reconnect_attempts=START_ATTEMPTS,
        reconnect_time_wait=RECONNECT_WAIT_S,
        connect_timeout=2,
        error_cb=error_cb,
        disconnected_cb=disconnected_cb,
        reconnected_cb=reconnected_cb,
    )
    nc.options["max_reconnect_attempts"] = -1  # from now on: reconnect without end
    connected = True
    return nc
