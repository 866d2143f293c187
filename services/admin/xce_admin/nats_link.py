"""The admin server's NATS connection: made in the background, never waited on for
long, and never the reason a request that does not need NATS is slow.

A request that needs NATS takes the connection when it is up. While a connect is
under way it waits for it at most ``CONNECT_WAIT_S`` (every such request waits on
the same attempt, each with its own deadline; there is no lock to queue behind);
when NATS is down it is told so at once, in one line (HTTP 503). The connection
comes from the kit's ``connect_nats``, so once made it reconnects without end; a
request that comes while it is reconnecting is answered 503 at once rather than
parked in the client's buffer until the command timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from xce_kit.connection import connect_nats
from xce_kit.options import public_url
from xce_kit.tasks import cancel_and_wait

log = logging.getLogger("xce_admin.nats")

#: The longest a request waits for a connect under way, s; past it, 503.
CONNECT_WAIT_S = 3.0
#: The client name the NATS server shows.
CLIENT_NAME = "xce-admin"


class NatsDown(RuntimeError):
    """NATS cannot be reached now; the message says why, in one line."""


class NatsLink:
    """One NATS connection, made lazily in the background (module docstring).

    Args:
        url: server URL(s), comma-separated.
        wait_s: the longest a caller of ``client`` waits for a connect, s.
    """

    def __init__(self, url: str, wait_s: float = CONNECT_WAIT_S) -> None:
        self.url = url
        self.shown = public_url(url)  # for messages: no user name or password
        self.wait_s = wait_s
        self._nc: NatsClient | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._last_error = "not connected yet"
        self._closed = False

    def start(self) -> None:
        """Begin connecting in the background, unless connected or connecting."""
        if self._closed or (self._nc is not None and not self._nc.is_closed):
            return
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.create_task(self._connect(), name="xce-admin nats connect")

    async def _connect(self) -> None:
        try:
            nc = await connect_nats(self.url, CLIENT_NAME, log)
        except Exception as exc:  # any failure is reported to the requests, not raised
            self._last_error = str(exc) or type(exc).__name__
            log.warning("NATS at %s: %s", self.shown, self._last_error)
            return
        if self._closed:  # closed while connecting
            with contextlib.suppress(NatsError):
                await nc.close()
            return
        self._nc = nc

    @property
    def connected(self) -> bool:
        """Whether the connection is up now."""
        return self._nc is not None and self._nc.is_connected

    async def client(self) -> NatsClient:
        """The connected client.

        Raises:
            NatsDown: the connection is down and reconnecting, a connect failed, or
                none succeeded within ``wait_s``; the message names the URL and why.
        """
        nc = self._nc
        if nc is not None and not nc.is_closed:
            if nc.is_connected:
                return nc
            raise NatsDown(f"NATS at {self.shown} does not answer (connection lost; reconnecting)")
        self.start()
        if self._connecting is not None:
            # ``asyncio.wait`` leaves the attempt running when the wait ends: a slow
            # connect serves later requests once it is made.
            await asyncio.wait({self._connecting}, timeout=self.wait_s)
        if self.connected:
            assert self._nc is not None
            return self._nc
        if self._connecting is not None and not self._connecting.done():
            raise NatsDown(
                f"NATS at {self.shown} does not answer (no connection within {self.wait_s:g} s)"
            )
        raise NatsDown(f"NATS at {self.shown} does not answer ({self._last_error})")

    async def close(self) -> None:
        """Stop connecting and close the connection."""
        self._closed = True
        if self._connecting is not None:
            await cancel_and_wait(self._connecting)
        if self._nc is not None and not self._nc.is_closed:
            with contextlib.suppress(NatsError):
                await self._nc.close()
