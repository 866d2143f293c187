"""The ``xce-core-service`` console script (``python -m xce_driver.live.core_service``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from xce_core.errors import CoreError
from xce_kit.arguments import add_service_arguments, stream_limits
from xce_kit.options import (
    OneLineParser,
    consumer_name,
    log_to_stderr,
    run_service,
    seconds,
    serve,
    whole,
)
from xce_schemas.bus import CORE_CHECKPOINT_KEY

from xce_driver.live.core_service.options import FAULT_POINTS, CoreServiceOptions
from xce_driver.live.core_service.positions import CheckpointError
from xce_driver.live.core_service.service import CoreService
from xce_driver.live.metrics import CoreMetrics

PROG = "xce-core-service"


def _fault(text: str) -> tuple[str, int]:
    """``--fault-kill-at POINT:N`` (crash tests only)."""
    point, _, count = text.partition(":")
    if point not in FAULT_POINTS or not count.isdigit() or int(count) < 1:
        raise argparse.ArgumentTypeError(f"expected POINT:N with POINT one of {FAULT_POINTS}")
    return point, int(count)


def build_parser() -> argparse.ArgumentParser:
    """The ``xce-core-service`` command line: the kit's service arguments
    (``add_service_arguments``: NATS, Redis, metrics, log level, stream limits) and
    the checkpoint cadence, PRNG seed, consumer name and checkpoint key."""
    parser = OneLineParser(
        prog=PROG,
        description="The XCE scheduling core as a service: events from NATS JetStream "
        "(XCE_EVENTS), decisions to XCE_DECISIONS, checkpoints in Redis.",
    )
    add_service_arguments(parser)
    parser.add_argument(
        "--snapshot-every",
        type=whole(1),
        default=10_000,
        metavar="N",
        help="checkpoint every N events (default 10,000)",
    )
    parser.add_argument(
        "--snapshot-seconds",
        type=seconds,
        default=30.0,
        metavar="T",
        help="... or every T seconds with new events (default 30)",
    )
    parser.add_argument(
        "--prng-seed", type=whole(0), default=0, help="PRNG seed of a fresh core (default 0)"
    )
    parser.add_argument(
        "--durable", type=consumer_name, default="xce-core", help="durable consumer name"
    )
    parser.add_argument("--checkpoint-key", default=CORE_CHECKPOINT_KEY, help="Redis key")
    parser.add_argument("--fault-kill-at", type=_fault, default=None, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the core service until SIGTERM or SIGINT; exit status 0 after a clean stop,
    2 on a bad option or an unusable checkpoint, 1 when a server cannot be reached."""
    parser = build_parser()
    args = parser.parse_args(argv)
    log_to_stderr(args.log_level)
    try:
        options = CoreServiceOptions(
            nats_url=args.nats,
            redis_url=args.redis,
            snapshot_every=args.snapshot_every,
            snapshot_seconds=args.snapshot_seconds,
            prng_seed=args.prng_seed,
            durable=args.durable,
            checkpoint_key=args.checkpoint_key,
            limits=stream_limits(args),
            fault=args.fault_kill_at,
        )
    except ValueError as exc:
        parser.error(str(exc))
    metrics = CoreMetrics()
    try:
        service = CoreService(options, metrics=metrics)
        serving = serve(service, metrics, args.metrics_port, args.metrics_addr)
        return run_service(PROG, serving, nats=args.nats, redis=args.redis)
    except (CheckpointError, CoreError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
