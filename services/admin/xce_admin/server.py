"""``xce-admin``: the admin API served by uvicorn.

The token comes from the environment, ``XCE_ADMIN_TOKEN``, or from the file
``XCE_ADMIN_TOKEN_FILE`` names, never from the command line, where other users could
read it; without one of at least 16 characters the server refuses to start (one
line, exit 2, the token not shown). ``--max-round-age`` (default
``$XCE_MAX_ROUND_AGE``, else 10 s) is how old the core's last round may be before
``/health`` answers 503 and ``xceadmin scheduler status`` exits 4. ``--host``
defaults to 127.0.0.1: the API, its ``/metrics`` with it, is reachable from this
host only unless told otherwise (docker-compose says ``--host 0.0.0.0`` inside its
network). ``--nats``, ``--redis`` and ``--log-level`` are the kit's, as every live
service takes them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import uvicorn
from xce_kit.arguments import add_service_arguments
from xce_kit.auth import CredentialsError, nats_credentials
from xce_kit.options import OneLineParser, log_to_stderr, port, seconds, whole

from xce_admin.app import create_app
from xce_admin.models import MAX_ROUND_AGE_S
from xce_admin.settings import DEFAULT_MAX_BODY_BYTES, AdminSettings, ConfigError, read_token


def build_parser() -> argparse.ArgumentParser:
    """The ``xce-admin`` command line (a bad option is one error line, exit 2)."""
    parser = OneLineParser(
        prog="xce-admin",
        description="The XCE scheduler admin API (recording control, recordings, status). "
        "Set XCE_ADMIN_TOKEN, or XCE_ADMIN_TOKEN_FILE to a file holding it, to the token "
        "clients must send (at least 16 characters).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=port, default=8080, help="port (default 8080)")
    add_service_arguments(parser, metrics=False, streams=False)
    parser.add_argument(
        "--recordings-dir",
        type=Path,
        default=Path("recordings"),
        help="the recorder's recordings directory (default ./recordings)",
    )
    parser.add_argument(
        "--command-timeout",
        type=seconds,
        default=60.0,
        metavar="S",
        help="how long a recorder command may take, s (default 60)",
    )
    parser.add_argument(
        "--max-round-age",
        type=seconds,
        # A string default goes through the type too: a bad XCE_MAX_ROUND_AGE is one line.
        default=os.environ.get("XCE_MAX_ROUND_AGE", str(MAX_ROUND_AGE_S)),
        metavar="S",
        help="the core counts as scheduling while its last round is at most S seconds "
        "old; past it /health answers 503 (default $XCE_MAX_ROUND_AGE or %(default)s)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=whole(1),
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="B",
        help="the largest request body taken, bytes; a larger one is answered 413 "
        "(default %(default)s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the admin API until SIGINT or SIGTERM; exit status 2 when the token is
    missing, short or unreadable, a NATS or Redis credential the environment names
    cannot be used, or an option is bad. After a clean shutdown
    uvicorn re-raises the signal that stopped it, so the status is that signal's."""
    args = build_parser().parse_args(argv)
    try:
        settings = AdminSettings(
            token=read_token(os.environ),
            redis_url=args.redis,
            nats_url=args.nats,
            recordings_dir=args.recordings_dir,
            command_timeout_s=args.command_timeout,
            max_round_age_s=args.max_round_age,
            max_body_bytes=args.max_body_bytes,
        )
        # Checked now, so that a credential that cannot be used is one line at start
        # rather than a 503 on every request that needs NATS.
        nats_credentials(os.environ)
        app = create_app(settings)
    except (ConfigError, CredentialsError) as exc:
        print(f"xce-admin: error: {exc}", file=sys.stderr)
        return 2
    log_to_stderr(args.log_level)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level.lower())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
