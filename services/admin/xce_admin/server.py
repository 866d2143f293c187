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
import asyncio
import contextlib
import errno
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import uvicorn
from redis.exceptions import RedisError
from xce_kit.arguments import add_service_arguments
from xce_kit.auth import CredentialsError, nats_credentials
from xce_kit.options import OneLineParser, log_to_stderr, port, seconds, whole
from xce_kit.reasons import reason
from xce_kit.redis_client import redis_from_url, redis_refusal

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


def folder_problem(path: Path) -> str | None:
    """Why the recordings folder ``path`` cannot be read, or None. The admin only
    reads it, so a missing one is refused rather than made (the recorder makes it)."""
    if not path.exists():
        return "no such folder (the recorder makes it; give the recorder's --recordings-dir)"
    if not path.is_dir():
        return "not a folder"
    if not os.access(path, os.R_OK | os.X_OK):
        return "not readable"
    return None


def redis_login_refused(redis_url: str, timeout_s: float = 5.0) -> str | None:
    """One PING at ``redis_url`` as the environment says to log in; why the login was
    refused (``xce_kit.redis_client.redis_refusal``'s line), or None when it answers
    or cannot be reached (the admin then starts degraded, as when Redis goes later)."""

    async def ping() -> str | None:
        client = redis_from_url(redis_url, socket_connect_timeout=timeout_s)
        try:
            await asyncio.wait_for(client.ping(), timeout_s)
        except (RedisError, OSError) as exc:
            return redis_refusal(redis_url, exc)  # None: not reachable now, degrade
        finally:
            await client.aclose()
        return None

    return asyncio.run(ping())


def listen(host: str, port_number: int) -> socket.socket:
    """A socket listening on ``host:port_number`` for uvicorn (bound here, so that a
    port in use is one line rather than uvicorn's traceback and exit 3).

    Raises:
        OSError: one line naming the option at fault and why.
    """
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host, port_number), family=family)
    except OSError as exc:
        addr_at_fault = isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL
        option = f"--host {host}" if addr_at_fault else f"--port {port_number}"
        raise OSError(
            f"{option}: cannot listen on {host} port {port_number}: {reason(exc)}"
        ) from None


class _Server(uvicorn.Server):
    """uvicorn's server, except that a SIGTERM or SIGINT after which it shut down
    cleanly ends the process with status 0 (as the other services), not by the
    signal uvicorn raises again."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's signal handling, minus raising the caught signal again."""
        with super().capture_signals():
            yield
            self._captured_signals.clear()


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the admin API until SIGINT or SIGTERM (then exit status 0); exit status 2
    when the token is missing, short or unreadable, a NATS or Redis credential the
    environment names cannot be used or Redis refuses the login, the recordings
    folder cannot be read, or an option is bad; 1 when the port cannot be listened
    on."""
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
        problem = folder_problem(args.recordings_dir)
        if problem:
            raise ConfigError(f"--recordings-dir {args.recordings_dir}: {problem}")
        refused = redis_login_refused(args.redis)
        if refused:
            raise ConfigError(refused)
        app = create_app(settings)
    except (ConfigError, CredentialsError) as exc:
        print(f"xce-admin: error: {exc}", file=sys.stderr)
        return 2
    try:
        sock = listen(args.host, args.port)
    except OSError as exc:
        print(f"xce-admin: error: {exc}", file=sys.stderr)
        return 1
    log_to_stderr(args.log_level)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level.lower())
    with sock:
        _Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
