"""Connecting to NATS the way every live client of the driver does.

The client tries a few times at start, so a wrong URL fails in about a second with
one clear error instead of hanging; once connected it reconnects without end, so a
NATS server that restarts is ridden out. The credentials (an nkey seed or a
``.creds`` file, TLS files) come from the environment (``xce_kit.auth``), so every
service authenticates the same way without an option of its own.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

import nats
from nats.aio.client import Client as NatsClient
from nats.errors import NoServersError

from xce_kit.auth import CREDS_VAR, SEED_FILE_VAR, TLS_CA_VAR, CredentialsError, nats_credentials
from xce_kit.options import public_url
from xce_kit.reasons import note_denial

#: Connection attempts at start before giving up.
START_ATTEMPTS = 3
#: Wait between two attempts, s.
RECONNECT_WAIT_S = 0.2


#: nats-py's text of the server's ``-ERR 'Permissions Violation for Publish to "s"'``.
_PERMISSION_VIOLATION = re.compile(
    r"permissions violation for (?P<op>\w+) to \"?(?P<subject>[^\"\s]+)", re.IGNORECASE
)


class _NoServers(NoServersError):
    """``NoServersError`` with the cause in its text (nats-py's text is fixed)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self._text = text

    def __str__(self) -> str:
        return self._text


def _encrypted(nc: NatsClient) -> bool:
    """Whether ``nc``'s connection runs over TLS. nats-py upgrades a ``nats://`` or
    ``tls://`` connection only when the server asks for TLS (its INFO's
    ``tls_required``), so a TLS context alone proves nothing; the stream's own
    ``ssl_object`` does (nats-py has no public accessor for it)."""
    url = nc.connected_url
    if url is not None and url.scheme == "wss":
        return True  # websocket over TLS from the first byte
    writer = getattr(nc._transport, "_io_writer", None)
    return writer is not None and writer.get_extra_info("ssl_object") is not None


def _telling(failures: list[Exception]) -> Exception:
    """The failed try that says most: the server's refusal of the credentials over a
    connection reset that may follow it (the server closes the connection after
    ``-ERR 'Authorization Violation'``, and the reset sometimes arrives last)."""
    for exc in reversed(failures):
        if "authorization violation" in str(exc).lower():
            return exc
    return failures[-1]


async def connect_nats(
    url: str,
    name: str,
    log: logging.Logger,
    *,
    disconnected_cb: Callable[[], Awaitable[None]] | None = None,
    reconnected_cb: Callable[[], Awaitable[None]] | None = None,
) -> NatsClient:
    """A connected NATS client that reconnects without end, authenticated (and on
    TLS) as the environment says (``xce_kit.auth.nats_credentials``).

    Args:
        url: server URL(s), comma-separated.
        name: the client name the server shows.
        log: where connection errors go once connected, one line each (no
            tracebacks; failed tries at start are logged at DEBUG).
        disconnected_cb, reconnected_cb: called on those events.

    Raises:
        xce_kit.auth.CredentialsError: a credential the environment names cannot be
            used (one line naming the variable and file).
        nats.errors.NoServersError: no server answered ``START_ATTEMPTS`` tries; its
            text ends with the last try's error (e.g. ``Connect call failed``), or the
            server's refusal of the credentials when there was one
            (``nats: 'Authorization Violation'``).
        nats.errors.Error, OSError: the server refused the connection.
        xce_kit.auth.CredentialsError: TLS was asked for (an ``XCE_NATS_TLS_*``
            variable or a ``tls://`` URL) and the server does not offer it; the
            connection is closed (naming the server, without user info).
    """

    settings = nats_credentials()
    credentials = settings.connect_options()
    servers = [server.strip() for server in url.split(",") if server.strip()]
    tls_wanted = settings.tls or any(s.lower().startswith("tls://") for s in servers)
    connected = False
    failures: list[Exception] = []

    async def error_cb(exc: Exception) -> None:
        # Failed tries at start are summed up by the error ``connect`` raises.
        if not connected:
            failures.append(exc)
        log.log(logging.WARNING if connected else logging.DEBUG, "nats: %s", exc)
        denied = _PERMISSION_VIOLATION.search(str(exc))
        if denied:  # the service's later "no answer in time" will name it
            note_denial(
                f"permission denied for {denied['op'].lower()} to {denied['subject']}: is "
                f"{SEED_FILE_VAR} (or {CREDS_VAR}) the {name}'s seed?"
            )

    try:
        nc = await nats.connect(
            servers,
            name=name,
            max_reconnect_attempts=START_ATTEMPTS,
            reconnect_time_wait=RECONNECT_WAIT_S,
            connect_timeout=2,
            error_cb=error_cb,
            disconnected_cb=disconnected_cb,
            reconnected_cb=reconnected_cb,
            **credentials,
        )
    except NoServersError as exc:
        if not failures:
            raise
        why = _telling(failures)
        raise _NoServers(f"{exc} (last try: {why})") from why
    if tls_wanted and not _encrypted(nc):
        shown = public_url(nc.connected_url.geturl()) if nc.connected_url else public_url(url)
        await nc.close()
        raise CredentialsError(
            f"the NATS server at {shown} does not offer TLS, which {TLS_CA_VAR} (or another "
            "XCE_NATS_TLS_* variable, or a tls:// URL) asks for: refusing to talk in plaintext"
        )
    nc.options["max_reconnect_attempts"] = -1  # from now on: reconnect without end
    connected = True
    return nc
