"""What the live services' console scripts share: command-line value types (a bad
option is one argparse error line, exit 2, never a traceback) and running a service
to its exit status (a server that cannot be reached is one line naming it, exit 1)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import re
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn, Protocol
from urllib.parse import urlsplit
from wsgiref.simple_server import WSGIServer

from nats.errors import Error as NatsError
from nats.js.errors import ServiceUnavailableError
from pydantic import ByteSize, TypeAdapter, ValidationError
from redis.asyncio.connection import parse_url
from redis.exceptions import RedisError

from xce_kit.auth import CREDS_VAR, SEED_FILE_VAR, CredentialsError
from xce_kit.metrics import DEFAULT_METRICS_ADDR
from xce_kit.reasons import root_reason, take_denial
from xce_kit.redis_client import check_redis_url, unknown_query_keys
from xce_kit.retention import RetentionError

#: The log levels the services take (``--log-level``).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
#: Reads ``8GiB``, ``1.5 GB``, ``1024``: pydantic's byte-size parser (``byte_size``).
_BYTE_SIZE: TypeAdapter[ByteSize] = TypeAdapter(ByteSize)
#: The largest whole-number option: what a signed 64-bit field (JetStream's, Redis's)
#: holds.
MAX_WHOLE = 2**63 - 1
#: The URL schemes nats-py connects with.
NATS_SCHEMES = ("nats", "tls", "ws", "wss")
#: A whole number as a user types it: ASCII digits, a sign at most. ``int`` alone
#: would also take `` 5``, ``1_000`` and other scripts' digits (``٣``).
_WHOLE = re.compile(r"[-+]?[0-9]+")


def _integer(text: str) -> int | None:
    """``text`` as an integer when it is one as typed (``_WHOLE``), else None;
    ``±(MAX_WHOLE + 1)`` stands for any larger (``int`` refuses thousands of digits)."""
    if not _WHOLE.fullmatch(text):
        return None
    if len(text.lstrip("-+").lstrip("0")) > len(str(MAX_WHOLE)):
        return -(MAX_WHOLE + 1) if text.startswith("-") else MAX_WHOLE + 1
    return int(text)


def port(text: str) -> int:
    """A TCP port, 1-65535, in ASCII digits."""
    value = _integer(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number")
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {text} is not between 1 and 65535")
    return value


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, ``<prog>: error: ...``,
    exit status 2 (no usage block before it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def whole(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A type for a whole number in ASCII digits ≥ ``minimum`` (``--snapshot-every``,
    ``--prng-seed``), and ≤ ``maximum`` (``--stream-replicas``; by default and at most
    ``MAX_WHOLE``)."""
    top = MAX_WHOLE if maximum is None else min(maximum, MAX_WHOLE)

    def parse(text: str) -> int:
        value = _integer(text)
        if value is None:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, not {text}")
        if value > top:
            raise argparse.ArgumentTypeError(f"must be {top} or less, not {text}")
        return value

    return parse


def seconds(text: str) -> float:
    """A finite, positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive, finite number of seconds")
    return value


def seconds_or_zero(text: str) -> float:
    """A finite number of seconds, 0 or more (0: no limit)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a finite number of seconds, 0 or more")
    return value


def byte_size(text: str) -> int:
    """A size in bytes, -1 for no limit: a whole number or one with a unit, decimal
    (``KB``, ``MB``, ``GB``, ``TB``) or binary (``KiB`` ... ``TiB``), e.g. ``8GiB``;
    never 0 (nats-server would read it as no limit)."""
    if text.strip() == "-1":
        return -1
    try:
        value = int(_BYTE_SIZE.validate_python(text))
    except ValidationError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size in bytes (e.g. 1073741824, 8GiB, 500MB; -1: no limit)"
        ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a size must be positive (or -1: no limit), not {text}")
    return value


#: The longest ``--stream-max-age``, s: a hundred years (nats-server takes the age
#: in int64 ns, which holds about 292 years; beyond it its JSON parse fails).
MAX_STREAM_AGE_S = 100 * 365.25 * 86400
#: The shortest ``--stream-max-age`` but 0, s: a stream that forgets faster drops
#: events before the services read them.
MIN_STREAM_AGE_S = 1.0
#: The smallest ``--stream-max-bytes`` but -1, bytes: a smaller stream drops events
#: before the services read them, and the stack fails later in confusing ways.
MIN_STREAM_BYTES = 2**20


def stream_max_age(text: str) -> float:
    """``--stream-max-age``: 0 (keep forever) or ``MIN_STREAM_AGE_S`` to
    ``MAX_STREAM_AGE_S`` seconds (``seconds_or_zero``)."""
    value = seconds_or_zero(text)
    if value and not MIN_STREAM_AGE_S <= value <= MAX_STREAM_AGE_S:
        raise argparse.ArgumentTypeError(
            f"a stream's max age must be 0 (forever) or {MIN_STREAM_AGE_S:g} to "
            f"{MAX_STREAM_AGE_S:.0f} s (100 years), not {text}"
        )
    return value


def stream_max_bytes(text: str) -> int:
    """``--stream-max-bytes``: -1 (no limit) or ``MIN_STREAM_BYTES`` to ``MAX_WHOLE``
    bytes (``byte_size``; nats-server's field is a signed 64-bit number)."""
    value = byte_size(text)
    if value != -1 and not MIN_STREAM_BYTES <= value <= MAX_WHOLE:
        raise argparse.ArgumentTypeError(
            f"a stream's max bytes must be -1 (no limit) or {MIN_STREAM_BYTES} (1MiB) to "
            f"{MAX_WHOLE} (2**63-1) bytes, not {text}"
        )
    return value


def redis_url(text: str) -> str:
    """A Redis URL as redis-py reads it (``redis://``, ``rediss://`` or ``unix://``),
    whose database, if given, is a number, whose query keys redis-py takes
    (``redis_client.unknown_query_keys``), and which carries no password or user name
    in its query (those come from files: ``xce_kit.redis_client``). Refusals show the
    URL without its user info (``public_url``)."""
    try:
        check_redis_url(text)
    except CredentialsError as exc:  # said before anything that would repeat the URL
        raise argparse.ArgumentTypeError(str(exc)) from None
    shown = public_url(text)  # a user name is not for messages either
    refused = f"{shown!r} is not a Redis URL (redis://host:port/db, rediss://, unix://)"
    try:
        parse_url(text)
    except ValueError as exc:
        why = str(exc)  # redis-py's reason, unless it is only its list of schemes
        detail = "" if "schemes" in why else f": {why[:1].lower()}{why[1:]}"
        raise argparse.ArgumentTypeError(refused + detail) from None
    unknown = unknown_query_keys(text)
    if unknown:
        raise argparse.ArgumentTypeError(f"{refused}: unknown query parameter {unknown[0]!r}")
    parts = urlsplit(text)
    database = parts.path.strip("/")
    if parts.scheme != "unix" and database and not database.isdigit():
        raise argparse.ArgumentTypeError(f"{refused}: database {database!r} is not a number")
    return text


class UserInfoInUrl(ValueError):
    """A NATS URL carries credentials (``nats://user:pass@host``, ``nats://TOKEN@host``);
    the message names the variables to use instead, never the secret."""


def nats_servers(text: str) -> list[str]:
    """The servers of a ``--nats`` value: URLs separated by commas, each
    ``scheme://host:port`` (``NATS_SCHEMES``) or ``host[:port]`` (``nats://``).

    Raises:
        UserInfoInUrl: one carries a user, password or token (the message does not
            repeat it).
        ValueError: one is not a NATS URL (the message says why, e.g. ``unknown
            scheme 'http'``), or websocket and other URLs are mixed.
    """
    servers = [part.strip() for part in text.split(",")]
    # First, so no later message repeats a secret.
    if any("@" in server.rpartition("://")[2].partition("/")[0] for server in servers):
        raise UserInfoInUrl(
            "a NATS URL must not carry a user, password or token (it would show in "
            f"process lists): name the service's key file in {SEED_FILE_VAR} or its "
            f".creds file in {CREDS_VAR}"
        )
    websockets = set()
    for server in servers:
        if not server:
            raise ValueError("an empty URL")
        scheme, sep, _rest = server.partition("://")
        if sep and scheme.lower() not in NATS_SCHEMES:
            raise ValueError(f"unknown scheme {scheme!r}")
        parts = urlsplit(server if sep else f"nats://{server}")
        try:
            parts.port  # noqa: B018 (raises on a port that is not one)
        except ValueError:
            raise ValueError(f"bad port in {server!r}") from None
        if not parts.hostname:
            raise ValueError(f"no host in {server!r}")
        websockets.add(parts.scheme.lower() in ("ws", "wss"))
    if len(websockets) > 1:
        raise ValueError("websocket and other URLs mixed")
    return servers


def nats_url(text: str) -> str:
    """A ``--nats`` value: one NATS URL or several separated by commas
    (``nats_servers``)."""
    try:
        nats_servers(text)
    except UserInfoInUrl as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a NATS URL (nats://host:port, tls://, ws:// or wss://; "
            f"several separated by commas): {exc}"
        ) from None
    return text


def public_url(url: str) -> str:
    """``url`` without the user name and password it may carry, for messages and
    logs: ``redis://:secret@db:6379/0`` → ``redis://db:6379/0``; a comma-separated
    list of URLs (``--nats``) URL by URL."""
    shown = []
    for part in url.split(","):
        scheme, sep, rest = part.strip().partition("://")
        if not sep:  # no scheme: ``host:port``
            scheme, rest = "", scheme
        netloc, slash, path = rest.partition("/")
        shown.append(scheme + sep + netloc.rpartition("@")[2] + slash + path)
    return ",".join(shown)


#: Characters a JetStream consumer name may not hold (nats-py refuses them with a
#: traceback at the first use, nats-server with an API error).
CONSUMER_NAME_FORBIDDEN = frozenset(">*. /\\\t\r\n")


def consumer_name(text: str) -> str:
    """A durable consumer name (``--durable``, ``--ctl-durable``): not empty, none of
    ``> * .``, no space, slash, backslash or line break."""
    if not text:
        raise argparse.ArgumentTypeError("a consumer name cannot be empty")
    bad = sorted({c for c in text if c in CONSUMER_NAME_FORBIDDEN})
    if bad:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a consumer name: it may not hold {' '.join(map(repr, bad))}"
        )
    return text


def log_level(text: str) -> str:
    """One of ``LOG_LEVELS``, any case."""
    if text.upper() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(LOG_LEVELS)}")
    return text.upper()


def run_service(
    prog: str, service: Coroutine[Any, Any, None], *, nats: str, redis: str | None = None
) -> int:
    """Run a service's coroutine until it returns; the console script's exit status.

    Returns:
        0 after a clean stop; 1 when NATS or Redis cannot be reached (or a port not
        bound), after one line on stderr naming it and why in a few words
        (``prog: error: NATS at <url>: connection refused``, ``reasons.root_reason``),
        with the server's refusal of a subject when ``connect_nats`` saw one
        (``reasons.take_denial``: a key of another service's role);
        2 when a stream's retention dropped messages the service had not read
        (``retention.RetentionError``: its one line).

    Raises:
        Whatever else the service raises (the caller maps its own errors).
    """
    take_denial()  # a refusal seen before this run is not its reason
    try:
        asyncio.run(service)
    except RetentionError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except ServiceUnavailableError as exc:
        # Nobody answers the JetStream API (nats-py turns "no responders" into this,
        # without a description); a server that answers 503 says why itself.
        jetstream_off = "JetStream is not enabled (start nats-server with -js)"
        why = f"NATS at {nats}: {exc.description or jetstream_off}"
    except NatsError as exc:
        why = f"NATS at {nats}: {root_reason(exc)}"
    except RedisError as exc:
        why = f"Redis at {redis}: {root_reason(exc)}"
    except OSError as exc:
        why = str(exc)
    else:
        return 0
    denied = take_denial()
    if denied is not None:  # the cause of the failure that shows (a request unanswered)
        why = f"{why} (the server said: {denied})"
    print(f"{prog}: error: {why}", file=sys.stderr)
    return 1


class Service(Protocol):
    """A live service: ``run`` until ``stop`` is called."""

    async def run(self) -> None: ...

    def stop(self) -> None: ...


class ServedMetrics(Protocol):
    """A service's metrics, served over HTTP on demand."""

    def serve(self, port: int, addr: str = DEFAULT_METRICS_ADDR) -> WSGIServer: ...


def log_to_stderr(level: str) -> None:
    """Log at ``level`` (one of ``LOG_LEVELS``, any case) to stderr, a line per
    record with its time, level and logger."""
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


async def serve(
    service: Service, metrics: ServedMetrics, metrics_port: int | None, metrics_addr: str
) -> None:
    """Serve ``metrics`` on ``metrics_addr:metrics_port`` (not without a port) and run
    ``service`` until it returns; SIGTERM and SIGINT ask it to stop.

    Raises:
        OSError: the metrics port cannot be bound (naming it).
    """
    server = metrics.serve(metrics_port, metrics_addr) if metrics_port is not None else None
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, service.stop)
    try:
        await service.run()
    finally:
        if server is not None:
            server.shutdown()
