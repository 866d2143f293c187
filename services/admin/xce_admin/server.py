"""``xce-admin``: the admin API served by uvicorn.

The token comes from the environment (``XCE_ADMIN_TOKEN``), never from the command
line, where other users could read it; without it the server refuses to start.
``--max-round-age`` (default ``$XCE_MAX_ROUND_AGE``, else 10 s) is how old the core's
last round may be before ``/health`` answers 503 and ``xceadmin scheduler status``
exits 4.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import uvicorn

from xce_admin.app import AdminSettings, ConfigError, create_app
from xce_admin.cli import positive_seconds
from xce_admin.models import MAX_ROUND_AGE_S


def _port(text: str) -> int:
    """A TCP port, 1-65535 (an argparse type: a bad one is one error line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is not between 1 and 65535")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``xce-admin`` command line."""
    parser = argparse.ArgumentParser(
        prog="xce-admin",
        description="The XCE scheduler admin API (recording control, recordings, status). "
        "Set XCE_ADMIN_TOKEN to the token clients must send.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8080, help="port (default 8080)")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0", help="Redis URL")
    parser.add_argument("--nats", default="nats://127.0.0.1:4222", help="NATS server URL")
    parser.add_argument(
        "--recordings-dir",
        type=Path,
        default=Path("recordings"),
        help="the recorder's recordings directory (default ./recordings)",
    )
    parser.add_argument(
        "--command-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="how long a recorder command may take, s (default 60)",
    )
    parser.add_argument(
        "--max-round-age",
        type=positive_seconds,
        # A string default goes through the type too: a bad XCE_MAX_ROUND_AGE is one line.
        default=os.environ.get("XCE_MAX_ROUND_AGE", str(MAX_ROUND_AGE_S)),
        metavar="S",
        help="the core counts as scheduling while its last round is at most S seconds "
        "old; past it /health answers 503 (default $XCE_MAX_ROUND_AGE or %(default)s)",
    )
    parser.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug", "trace"),
        default="info",
        help="uvicorn log level (default info)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the admin API until SIGINT or SIGTERM; exit status 2 when
    ``XCE_ADMIN_TOKEN`` is unset or an option is bad. After a clean shutdown uvicorn
    re-raises the signal that stopped it, so the status is that signal's."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = AdminSettings(
            token=os.environ.get("XCE_ADMIN_TOKEN", ""),
            redis_url=args.redis,
            nats_url=args.nats,
            recordings_dir=args.recordings_dir,
            command_timeout_s=args.command_timeout,
            max_round_age_s=args.max_round_age,
        )
    except ConfigError as exc:
        print(f"xce-admin: error: {exc}", file=sys.stderr)
        return 2
    uvicorn.run(
        create_app(settings), host=args.host, port=args.port, log_level=args.log_level.lower()
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
