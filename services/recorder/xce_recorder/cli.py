"""The ``xce-recorder`` console script (``python -m xce_recorder``).

The options every live service takes come from ``xce_kit.arguments``; a bad value
is one argparse line naming the option, exit status 2. A server that cannot be
reached, a metrics address or port that cannot be bound and a recordings folder
that cannot be made are one line naming it and why, exit status 1; never a
traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from xce_kit.arguments import add_service_arguments, stream_limits
from xce_kit.options import (
    OneLineParser,
    log_to_stderr,
    run_service,
    seconds,
    seconds_or_zero,
    serve,
    whole,
)
from xce_kit.reasons import reason
from xce_schemas.admin import RECORDER_CONTROL_SUBJECT

from xce_recorder.config import RecorderOptions, RefusedError
from xce_recorder.metrics import RecorderMetrics
from xce_recorder.service import RecorderService

PROG = "xce-recorder"


def stop_wait(text: str) -> float:
    """``--stop-wait``: a finite number of seconds, 0 or more. Not ``inf``: a stop
    must end even when the core service is down for good (the recording then ends
    at the last whole event read), or the recorder could not be stopped at all."""
    try:
        return seconds_or_zero(text)
    except argparse.ArgumentTypeError as exc:
        with contextlib.suppress(ValueError):
            if float(text) == math.inf:
                raise argparse.ArgumentTypeError(
                    f"{exc}: a stop must end even when the core service never answers; "
                    "give a long wait, e.g. 3600, instead"
                ) from None
        raise


def build_parser() -> argparse.ArgumentParser:
    """The ``xce-recorder`` command line: ``xce_kit.arguments.add_service_arguments``
    and the recorder's own options, every value checked by its type."""
    parser = OneLineParser(
        prog=PROG,
        description="Store the core service's record stream (XCE_RECORD: events, decisions, "
        "snapshots) in Redis and export each recording to a JSONL file; controlled on "
        f"NATS subject {RECORDER_CONTROL_SUBJECT} (xceadmin scheduler record start|stop).",
    )
    add_service_arguments(parser)
    defaults = RecorderOptions
    parser.add_argument(
        "--recordings-dir",
        type=Path,
        default=defaults.recordings_dir,
        help="where recordings are exported, made if missing "
        f"(default ./{defaults.recordings_dir})",
    )
    parser.add_argument(
        "--record-snapshot-interval",
        type=whole(0),
        default=defaults.snapshot_interval,
        metavar="N",
        help="a SNAPSHOT every N recorded events; 0: only the first "
        f"(default {defaults.snapshot_interval})",
    )
    parser.add_argument(
        "--stop-wait",
        type=stop_wait,
        default=defaults.stop_wait_s,
        metavar="S",
        help="on stop, wait at most S seconds (finite, ≥ 0) for the core service to end the "
        f"recording; it then ends at the last whole event read (default {defaults.stop_wait_s:g})",
    )
    parser.add_argument(
        "--connect-timeout",
        type=seconds,
        default=defaults.connect_timeout_s,
        metavar="S",
        help="give up when NATS or Redis does not answer within S seconds at start "
        f"(default {defaults.connect_timeout_s:g})",
    )
    return parser


def make_folder(path: Path) -> str | None:
    """Make the recordings folder ``path``; None, or why it cannot be used."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return "not a folder"
    except OSError as exc:
        return f"cannot make the folder: {reason(exc)}"
    if not os.access(path, os.W_OK | os.X_OK):
        return "not writable"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the recorder until SIGTERM or SIGINT (a recording on is finished and
    exported first); exit status 0 after a clean stop, 2 on a bad option, 1 when a
    server cannot be reached, the metrics endpoint not served or the recordings
    folder not made; 2 when Redis refuses the login or the user's rights: always
    after one line on stderr naming it, never a traceback."""
    args = build_parser().parse_args(argv)
    log_to_stderr(args.log_level)
    options = RecorderOptions(
        nats_url=args.nats,
        redis_url=args.redis,
        recordings_dir=args.recordings_dir,
        snapshot_interval=args.record_snapshot_interval,
        stop_wait_s=args.stop_wait,
        connect_timeout_s=args.connect_timeout,
        limits=stream_limits(args),
    )
    why = make_folder(options.recordings_dir)
    if why is not None:
        print(f"{PROG}: error: --recordings-dir {options.recordings_dir}: {why}", file=sys.stderr)
        return 1
    metrics = RecorderMetrics()
    service = RecorderService(options, metrics=metrics)
    serving = serve(service, metrics, args.metrics_port, args.metrics_addr)
    try:
        return run_service(PROG, serving, nats=args.nats, redis=args.redis)
    except RefusedError as exc:  # a login or right refused: configuration, as options
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
