"""The ``xce-bridge`` console script (``python -m xce_driver.live.bridge``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from xce_kit.arguments import add_service_arguments, stream_limits
from xce_kit.options import OneLineParser, consumer_name, log_to_stderr, run_service, seconds, serve
from xce_schemas.controller import BRIDGE_CTL_DURABLE, CTL_STREAM

from xce_driver.live.bridge.options import BridgeOptions
from xce_driver.live.bridge.service import Bridge
from xce_driver.live.metrics import BridgeMetrics

PROG = "xce-bridge"


def build_parser() -> argparse.ArgumentParser:
    """The ``xce-bridge`` command line: the kit's service arguments
    (``add_service_arguments``: NATS, metrics, log level, stream limits; no Redis)
    and the round interval and consumer names."""
    parser = OneLineParser(
        prog=PROG,
        description="The XCE controller bridge: controller messages (xce.ctl.*) to core "
        "events (XCE_EVENTS) with the wall clock as time, a BEGIN_ROUND every round "
        "interval, decisions (XCE_DECISIONS) back to xce.ctl.decisions.<OP>.",
    )
    add_service_arguments(parser, redis=False)
    parser.add_argument(
        "--round-interval",
        type=seconds,
        default=1.0,
        metavar="SECONDS",
        help="wall time between scheduling rounds, s (default 1.0)",
    )
    parser.add_argument(
        "--durable",
        type=consumer_name,
        default="xce-bridge",
        help="durable consumer name on XCE_DECISIONS",
    )
    parser.add_argument(
        "--ctl-durable",
        type=consumer_name,
        default=BRIDGE_CTL_DURABLE,
        help=f"durable consumer name on {CTL_STREAM} (default {BRIDGE_CTL_DURABLE})",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bridge until SIGTERM or SIGINT; exit status 0 after a clean stop, 2 on
    a bad option, 1 when NATS cannot be reached or the metrics port not bound."""
    parser = build_parser()
    args = parser.parse_args(argv)
    log_to_stderr(args.log_level)  # --log-level and --metrics-port are checked by their types
    try:
        limits = stream_limits(args)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        options = BridgeOptions(
            nats_url=args.nats,
            round_interval_s=args.round_interval,
            durable=args.durable,
            ctl_durable=args.ctl_durable,
            limits=limits,
        )
    except ValueError as exc:  # the only option checked there: the round interval
        parser.error(f"--round-interval: {exc}")
    metrics = BridgeMetrics()
    bridge = Bridge(options, metrics=metrics)
    serving = serve(bridge, metrics, args.metrics_port, args.metrics_addr)
    return run_service(PROG, serving, nats=args.nats)
