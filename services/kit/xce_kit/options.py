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

from xce_kit.auth import CredentialsError
from xce_kit.metrics import DEFAULT_METRICS_ADDR
from xce_kit.reasons import root_reason
from xce_kit.redis_client import check_redis_url
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


def redis_url(text: str) -> str:
    """A Redis URL as redis-py reads it (``redis://``, ``rediss://`` or ``unix://``),
    whose database, if given, is a number, and which carries no password (that comes
    from a file: ``xce_kit.redis_client``)."""
    try:
        check_redis_url(text)
    except CredentialsError as exc:  # said before anything that would repeat the URL
        raise argparse.ArgumentTypeError(str(exc)) from None
    refused = f"{text!r} is not a Redis URL (redis://host:port/db, rediss://, unix://)"
    try:
        parse_url(text)
    except ValueError as exc:
        why = str(exc)  # redis-py's reason, unless it is only its list of schemes
        detail = "" if "schemes" in why else f": {why[:1].lower()}{why[1:]}"
        raise argparse.ArgumentTypeError(refused + detail) from None
    parts = urlsplit(text)
    database = parts.path.strip("/")
    if parts.scheme != "unix" and database and not database.isdigit():
        raise argparse.ArgumentTypeError(f"{refused}: database {database!r} is not a number")
    return text


def nats_servers(text: str) -> list[str]:
    """The servers of a ``--nats`` value: URLs separated by commas, each
    ``scheme://host:port`` (``NATS_SCHEMES``) or ``host[:port]`` (``nats://``).

    Raises:
        ValueError: one is not a NATS URL (the message says why, e.g. ``unknown
            scheme 'http'``), or websocket and other URLs are mixed.
    """
    servers = [part.strip() for part in text.split(",")]
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
        (``prog: error: NATS at <url>: connection refused``, ``reasons.root_reason``);
        2 when a stream's retention dropped messages the service had not read
        (``retention.RetentionError``: its one line).

    Raises:
        Whatever else the service raises (the caller maps its own errors).
    """
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
