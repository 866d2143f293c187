"""The seam between a service and its bus: how it connects.

A service's loop runs on whatever client its ``Connect`` gives: ``connect_nats``
(a real NATS server; the default everywhere) or ``MemoryBus.connect``
(``xce_kit.memory_bus``: an in-memory JetStream, for the first tier of tests). Both
give a nats-py ``Client``, so nothing past the connection changes: the kit's
readers and publishers and the services speak JetStream the same way to either.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from nats.aio.client import Client as NatsClient

from xce_kit.connection import connect_nats


class Connect(Protocol):
    """Makes a service's connected client: ``connect_nats``'s signature.

    Args:
        url: server URL(s), comma-separated.
        name: the client name.
        log: where connection errors go.
        disconnected_cb, reconnected_cb: called on those events.
    """

    def __call__(
        self,
        url: str,
        name: str,
        log: logging.Logger,
        *,
        disconnected_cb: Callable[[], Awaitable[None]] | None = None,
        reconnected_cb: Callable[[], Awaitable[None]] | None = None,
    ) -> Awaitable[NatsClient]: ...


_nats: Connect = connect_nats  # the real bus fits the seam as it is
