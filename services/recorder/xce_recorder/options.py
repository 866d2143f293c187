"""The ``xce-recorder`` command line's value types and its one-line failure reasons.

A bad option is one argparse line naming it and saying what is allowed, exit status
2 (``argument --stop-wait: must be a number of seconds ≥ 0, not '-3'``), never a
traceback. The driver's services have types of their own; the recorder may not
import the driver (``tests/test_layering.py``), so it keeps these few.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import socket
import ssl
from typing import NoReturn
from urllib.parse import urlsplit

from redis.asyncio.connection import parse_url

#: The log levels ``--log-level`` takes (any case).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
#: The URL schemes nats-py connects with.
NATS_SCHEMES = ("nats", "tls", "ws", "wss")
#: The largest whole-number option (what a signed 64-bit integer holds).
MAX_WHOLE = 2**63 - 1

_DIGITS = re.compile(r"[0-9]+")
_NATS_ALLOWED = (
    "a NATS URL (nats://host:port, tls://, ws:// or wss://; several separated by commas)"
)
_REDIS_ALLOWED = "a Redis URL (redis://host:port/db, rediss://host:port/db or unix:///path)"


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, ``<prog>: error: ...``,
    exit status 2 (no usage text before it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def shown(text: str) -> str:
    """``text`` quoted for a message, cut after 40 characters."""
    return repr(text if len(text) <= 40 else text[:40] + "...")


def _refuse(allowed: str, text: str, why: str | None = None) -> NoReturn:
    raise argparse.ArgumentTypeError(
        f"must be {allowed}, not {shown(text)}" + (f" ({why})" if why else "")
    )


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def seconds(text: str) -> float:
    """A positive, finite number of seconds."""
    value = _float(text)
    if not value > 0:  # also nan, and what is not a number
        _refuse("a positive number of seconds", text)
    if math.isinf(value):
        _refuse("a finite number of seconds", text)
    return value


def stop_wait(text: str) -> float:
    """A finite number of seconds ≥ 0: how long a stop waits for the core service. Not
    ``inf``: a stop must end even when the core service is down for good (the
    recording then ends at the last whole event read), or the recorder could not be
    stopped at all."""
    value = _float(text)
    if not value >= 0:
        _refuse("a number of seconds ≥ 0", text)
    if math.isinf(value):
        _refuse(
            "a finite number of seconds",
            text,
            "a stop must end even when the core service never answers; give a long wait, "
            "e.g. 3600, instead",
        )
    return value


def whole(text: str) -> int:
    """A whole number from 0 to ``MAX_WHOLE``, in ASCII digits."""
    if not _DIGITS.fullmatch(text):
        _refuse("a whole number ≥ 0", text)
    digits = text.lstrip("0")
    if len(digits) > len(str(MAX_WHOLE)) or int(digits or "0") > MAX_WHOLE:
        _refuse(f"a whole number from 0 to {MAX_WHOLE}", text)
    return int(digits or "0")


def port(text: str) -> int:
    """A TCP port, 1-65535."""
    if not _DIGITS.fullmatch(text) or not 1 <= int(text.lstrip("0")[:6] or "0") <= 65535:
        _refuse("a port number from 1 to 65535", text)
    return int(text)


def log_level(text: str) -> str:
    """One of ``LOG_LEVELS``, any case; returned in capitals."""
    if text.upper() not in LOG_LEVELS:
        _refuse(f"one of {', '.join(LOG_LEVELS)}", text)
    return text.upper()


def nats_servers(text: str) -> list[str]:
    """The servers of a ``--nats`` value: URLs separated by commas, each
    ``scheme://host:port`` (``NATS_SCHEMES``) or ``host[:port]`` (``nats://``).

    Raises:
        ValueError: one is not a NATS URL (the message says why).
    """
    servers = [part.strip() for part in text.split(",")]
    schemes = set()
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
        schemes.add(parts.scheme.lower() in ("ws", "wss"))
    if len(schemes) > 1:
        raise ValueError("websocket and other URLs mixed")
    return servers


def nats_url(text: str) -> str:
    """A ``--nats`` value (see ``nats_servers``)."""
    try:
        nats_servers(text)
    except ValueError as exc:
        _refuse(_NATS_ALLOWED, text, str(exc))
    return text


def redis_url(text: str) -> str:
    """A Redis URL as redis-py reads it, whose database (if given) is a number."""
    try:
        parse_url(text)
    except ValueError as exc:
        reason = str(exc)
        _refuse(
            _REDIS_ALLOWED, text, None if "schemes" in reason else reason[:1].lower() + reason[1:]
        )
    parts = urlsplit(text)
    database = parts.path.strip("/")
    if parts.scheme != "unix" and database and not database.isdigit():
        _refuse(_REDIS_ALLOWED, text, f"database {database!r} is not a number")
    return text


def reason(exc: BaseException) -> str:
    """Why a connection or a bind failed, in a few words: ``connection refused``,
    ``host name lookup failed (Name or service not known)``, else the error's text."""
    if isinstance(exc, socket.gaierror):
        return f"host name lookup failed ({exc.strerror})"
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, OSError) and not isinstance(exc, ssl.SSLError) and exc.errno:
        try:
            text = os.strerror(exc.errno)
        except ValueError:
            text = ""
        if text and not text.startswith("Unknown error"):
            return text[:1].lower() + text[1:]
    return str(exc) or type(exc).__name__


def root_reason(exc: BaseException) -> str:
    """``reason`` of the OS error behind ``exc`` (a client library's error raised
    while handling it), else of ``exc`` itself."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, OSError):
            return reason(seen)
        seen = seen.__cause__ or seen.__context__
    return reason(exc)
