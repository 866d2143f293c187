"""Command-line value types the live services share: a bad option is one argparse
error line (exit 2), never a traceback."""

from __future__ import annotations

import argparse
import math
from urllib.parse import urlsplit

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


def seconds(text: str) -> float:
    """A finite, positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive, finite number of seconds")
    return value


def redis_url(text: str) -> str:
    """A Redis URL: ``redis://``, ``rediss://`` or ``unix://``."""
    if urlsplit(text).scheme not in ("redis", "rediss", "unix"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a Redis URL (redis://host:port/db, rediss://, unix://)"
        )
    return text


def log_level(text: str) -> str:
    """One of ``LOG_LEVELS``, any case."""
    if text.upper() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(LOG_LEVELS)}")
    return text.upper()
