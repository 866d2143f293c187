"""The live services' options: a mistake is one argparse line (exit 2), an
unreachable NATS server one error line (exit 1), never a traceback or a hang."""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys

import pytest
from xce_driver.live import bridge, core_service


def assert_one_line_error(
    parser: argparse.ArgumentParser,
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``argv`` is refused with exit status 2 and one line naming the option and
    holding ``message``: no usage block, no traceback."""
    with pytest.raises(SystemExit) as exit_status:
        parser.parse_args(argv)
    assert exit_status.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    # One line, no usage block: as the recorder and xce-sched do.
    assert err.startswith(f"{parser.prog}: error: argument ") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--metrics-port", "70000"], "port 70000 is not between 1 and 65535"),
        (["--metrics-port", "x"], "'x' is not a port number"),
        (["--log-level", "LOUD"], "'LOUD' is not one of DEBUG, INFO, WARNING, ERROR"),
        (["--redis", "http://127.0.0.1:6379"], "is not a Redis URL"),
        (["--snapshot-seconds", "nan"], "nan is not a positive, finite number of seconds"),
        (["--snapshot-seconds", "-5"], "-5 is not a positive, finite number of seconds"),
        (["--snapshot-every", "-1"], "argument --snapshot-every: must be 1 or more, not -1"),
        (["--snapshot-every", "1.5"], "argument --snapshot-every: '1.5' is not a whole number"),
        (["--prng-seed", "-1"], "argument --prng-seed: must be 0 or more, not -1"),
        (["--durable", ""], "argument --durable: a consumer name cannot be empty"),
        (["--durable", "a b"], "'a b' is not a consumer name: it may not hold ' '"),
        (["--lease-ttl", "0"], "argument --lease-ttl: 0 is not a positive, finite number"),
    ],
)
def test_a_bad_core_service_option_is_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_one_line_error(core_service.build_parser(), argv, message, capsys)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--round-interval", "inf"], "inf is not a positive, finite number of seconds"),
        (["--durable", ""], "argument --durable: a consumer name cannot be empty"),
        (["--ctl-durable", "a.b"], "argument --ctl-durable: 'a.b' is not a consumer name"),
    ],
)
def test_a_bad_bridge_option_is_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_one_line_error(bridge.build_parser(), argv, message, capsys)


def test_the_core_service_gives_up_on_an_unreachable_nats_server() -> None:
    argv = [
        sys.executable,
        "-m",
        "xce_driver.live.core_service",
        "--nats",
        "nats://127.0.0.1:1",
        "--redis",
        "redis://127.0.0.1:1/0",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "xce-core-service: error: NATS at nats://127.0.0.1:1: connection refused"
    )
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("module", ["xce_driver.live.core_service", "xce_driver.live.bridge"])
def test_a_metrics_port_in_use_is_named(module: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = [sys.executable, "-m", module, "--nats", "nats://127.0.0.1:1"]
        argv += ["--metrics-port", str(port), "--metrics-addr", "127.0.0.1"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    name = "xce-core-service" if module.endswith("core_service") else "xce-bridge"
    assert done.stderr.strip().splitlines()[-1] == (
        f"{name}: error: --metrics-port {port}: cannot serve /metrics on 127.0.0.1:{port}: "
        "address already in use"
    )
