"""What the live services' console scripts share: command-line value types (a bad
option is one argparse error line, exit 2, never a traceback) and running a service
to its exit status (a server that cannot be reached is one line naming it, exit 1)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn, Protocol
from urllib.parse import urlsplit
from wsgiref.simple_server import WSGIServer

from nats.errors import Error as NatsError
from redis.exceptions import RedisError

#: The log levels the services take (``--log-level``).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def port(text: str) -> int:
    """A TCP port, 1-65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is not between 1 and 65535")
    return value


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, ``<prog>: error: ...``,
    exit status 2 (no usage block before it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def whole(minimum: int) -> Callable[[str], int]:
    """A type for a whole number ≥ ``minimum`` (``--snapshot-every``, ``--prng-seed``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, not {value}")
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


def redis_url(text: str) -> str:
    """A Redis URL: ``redis://``, ``rediss://`` or ``unix://``."""
    if urlsplit(text).scheme not in ("redis", "rediss", "unix"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a Redis URL (redis://host:port/db, rediss://, unix://)"
        )
    return text


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
        bound), after one line on stderr naming it (``prog: error: NATS at <url>: ...``).

    Raises:
        Whatever else the service raises (the caller maps its own errors).
    """
    try:
        asyncio.run(service)
    except NatsError as exc:
        why = f"NATS at {nats}: {exc}"
    except RedisError as exc:
        why = f"Redis at {redis}: {exc}"
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

    def serve(self, port: int, addr: str = "0.0.0.0") -> WSGIServer: ...


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
