"""The command-line arguments every live service takes, declared once.

``add_service_arguments`` adds the bus and Redis addresses, the metrics listener,
the log level and the limits of the streams a service creates; ``stream_limits``
turns the parsed values into the kit's ``StreamLimits``. Credentials are not
arguments: they come from files or the environment (``xce_kit.auth``), so they never
show in a process list or a shell history.
"""

from __future__ import annotations

import argparse

from xce_kit.metrics import DEFAULT_METRICS_ADDR
from xce_kit.options import (
    LOG_LEVELS,
    MIN_STREAM_BYTES,
    log_level,
    nats_url,
    port,
    redis_url,
    stream_max_age,
    stream_max_bytes,
    whole,
)
from xce_kit.streams import DEFAULT_LIMITS, MAX_REPLICAS, StreamLimits

#: Where the services look for NATS and Redis unless told otherwise.
DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def add_service_arguments(
    parser: argparse.ArgumentParser,
    *,
    redis: bool = True,
    metrics: bool = True,
    streams: bool = True,
) -> None:
    """Add ``--nats``, ``--redis`` (when the service uses Redis), ``--metrics-port``,
    ``--metrics-addr`` (loopback by default; when it serves metrics on a port of its
    own), ``--log-level`` and (when it creates streams) the stream limits
    ``--stream-max-age`` (s, 0 keeps forever; ``options.stream_max_age``),
    ``--stream-max-bytes`` (bytes, with a unit or not; -1 no limit;
    ``options.stream_max_bytes``) and ``--stream-replicas``, defaulting to
    ``streams.DEFAULT_LIMITS``, to ``parser``."""
    parser.add_argument(
        "--nats",
        type=nats_url,
        default=DEFAULT_NATS_URL,
        metavar="URL",
        help=f"NATS server URL; several separated by commas (default {DEFAULT_NATS_URL})",
    )
    if redis:
        parser.add_argument(
            "--redis", type=redis_url, default=DEFAULT_REDIS_URL, metavar="URL", help="Redis URL"
        )
    if metrics:
        parser.add_argument(
            "--metrics-port", type=port, default=None, metavar="P", help="serve /metrics on port P"
        )
        parser.add_argument(
            "--metrics-addr",
            default=DEFAULT_METRICS_ADDR,
            metavar="ADDR",
            help=f"address /metrics binds (default {DEFAULT_METRICS_ADDR}: this host only)",
        )
    parser.add_argument(
        "--log-level",
        type=log_level,
        default="INFO",
        help=", ".join(LOG_LEVELS) + " (default INFO)",
    )
    if not streams:
        return
    limits = DEFAULT_LIMITS
    parser.add_argument(
        "--stream-max-age",
        type=stream_max_age,
        default=limits.max_age_s,
        metavar="S",
        help="streams this service creates drop messages older than S seconds "
        f"(default {limits.max_age_s:g}; 0: never)",
    )
    parser.add_argument(
        "--stream-max-bytes",
        type=stream_max_bytes,
        default=limits.max_bytes,
        metavar="B",
        help="... and their oldest messages beyond B bytes each, e.g. 8GiB "
        f"(default {limits.max_bytes}; at least {MIN_STREAM_BYTES}; -1: no limit); "
        "see docs/operations.md",
    )
    parser.add_argument(
        "--stream-replicas",
        type=whole(1, MAX_REPLICAS),
        default=limits.replicas,
        metavar="R",
        help=f"... kept on R servers of a JetStream cluster (1-{MAX_REPLICAS}, default 1)",
    )


def stream_limits(args: argparse.Namespace) -> StreamLimits:
    """The stream limits ``add_service_arguments`` parsed into ``args``."""
    return StreamLimits(
        max_age_s=args.stream_max_age,
        max_bytes=args.stream_max_bytes,
        replicas=args.stream_replicas,
    )
