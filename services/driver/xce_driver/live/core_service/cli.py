"""The ``xce-core-service`` console script (``python -m xce_driver.live.core_service``).

Every core service contends for the lead: the lease ``XCE_CORE_LEASE`` in NATS KV
(``xce_kit.lease``, ``--lease-ttl``, as many replicas as ``--stream-replicas``,
holder id ``host:pid``). One leads; the others are standbys that wait, reading and
writing nothing else, and take over from the checkpoint once the leader releases the
lease (a clean stop) or it expires (a crash: within about ``--lease-ttl``).

Exit status: 0 after a clean stop (SIGTERM, SIGINT; the lease released); 1 when
NATS or Redis cannot be reached; 2 on a bad option, an unusable checkpoint,
positions that disagree with the streams, events dropped by retention, or a lease
bucket made with another lease time; 3 when the service lost the lead (its lease
expired or was taken, e.g. after a stall): it stopped at once, sending nothing more,
with one line saying so. A supervisor restarts it (docker compose ``restart:
unless-stopped``), as a standby.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Sequence

from nats.js import JetStreamContext
from xce_core.errors import CoreError
from xce_kit.arguments import add_service_arguments, stream_limits
from xce_kit.lease import DEFAULT_LEASE_TTL_S, Lease, LeaseConfigError
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

from xce_driver.live.core_service.leadership import (
    Leadership,
    LeadershipFactory,
    LeadershipLost,
)
from xce_driver.live.core_service.options import FAULT_POINTS, CoreServiceOptions
from xce_driver.live.core_service.positions import CheckpointError
from xce_driver.live.core_service.service import CoreService
from xce_driver.live.metrics import CoreMetrics

PROG = "xce-core-service"
#: The exit status of a service that lost the lead.
EXIT_LOST_LEAD = 3


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
    parser.add_argument(
        "--lease-ttl",
        type=seconds,
        default=DEFAULT_LEASE_TTL_S,
        metavar="T",
        help="lease time of the lead, s: a standby takes over within about T after the "
        f"leader dies (default {DEFAULT_LEASE_TTL_S:g}; the same for every core service)",
    )
    parser.add_argument("--fault-kill-at", type=_fault, default=None, help=argparse.SUPPRESS)
    return parser


def lease_factory(ttl_s: float, replicas: int) -> LeadershipFactory:
    """What makes this process's lease (``xce_kit.lease.Lease``, holder id
    ``host:pid``) once it is connected.

    Raises:
        ValueError: ``ttl_s`` or ``replicas`` out of range (when it is made).
    """
    holder = f"{socket.gethostname()}:{os.getpid()}"

    def make(js: JetStreamContext) -> Leadership:
        return Lease(js, holder, ttl_s, replicas=replicas)

    return make


def main(argv: Sequence[str] | None = None) -> int:
    """Run the core service, leading or as a standby, until SIGTERM or SIGINT, or
    until it loses the lead; the exit status is the module docstring's."""
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
    lease = lease_factory(args.lease_ttl, args.stream_replicas)
    try:
        service = CoreService(options, metrics=metrics, leadership=lease)
        serving = serve(service, metrics, args.metrics_port, args.metrics_addr)
        return run_service(PROG, serving, nats=args.nats, redis=args.redis)
    except (CheckpointError, CoreError, LeaseConfigError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except LeadershipLost as exc:
        print(f"{PROG}: {exc} (exit status {EXIT_LOST_LEAD})", file=sys.stderr)
        return EXIT_LOST_LEAD
