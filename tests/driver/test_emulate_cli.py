"""``xce-sched emulate`` refuses bad input with one line and never hangs on a NATS
server that is not there (the runs against real servers are in tests/live)."""

from __future__ import annotations

import pytest
from xce_driver.cli import build_parser, main

from tests.live.servers import free_port


def run_cli(argv: list[str]) -> int:
    """The exit status of ``xce-sched`` (argparse's usage errors exit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--speed", "0"], "argument --speed: '0' must be more than 0"),
        (["--speed", "fast"], "argument --speed: 'fast' is not a number"),
        (["--timeout", "-1"], "argument --timeout: '-1' must be more than 0 wall seconds"),
        (["--policy", "nosuch"], "unknown picker 'nosuch'"),
        (["--workload", "/nonexistent.swf"], "/nonexistent.swf"),
    ],
    ids=["speed zero", "speed not a number", "negative timeout", "unknown picker", "no file"],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["emulate", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("xce-sched: error: ") and message in err, err


def test_no_nats_server_is_exit_1_with_the_url(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"nats://127.0.0.1:{free_port()}"
    assert main(["emulate", "--jobs", "3", "--nats", url]) == 1
    err = capsys.readouterr().err
    port = url.rsplit(":", 1)[1]
    assert err == (
        f"xce-sched: error: --nats {url}: nats: no servers available for connection "
        f"(last try: [Errno 111] Connect call failed ('127.0.0.1', {port}))\n"
    )


SPEED = "more than 0 and at most 1,000,000,000 (workload seconds per wall second; 1: real time)"
TIMEOUT = "more than 0 wall seconds, or inf for no limit (the default)"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--speed", "0"], f"argument --speed: '0' must be {SPEED}"),
        (["--speed", "-1"], f"argument --speed: '-1' must be {SPEED}"),
        (["--speed=-inf"], f"argument --speed: '-inf' must be {SPEED}"),
        (["--speed", "2e9"], f"argument --speed: '2e9' must be {SPEED}"),
        (["--speed", "1e400"], f"argument --speed: '1e400' must be {SPEED}"),
        (
            ["--speed", "inf"],
            "argument --speed: 'inf' is not allowed: the emulator runs jobs on wall-clock "
            f"timers, so the speed must be finite, {SPEED}",
        ),
        (["--speed", "nan"], f"argument --speed: 'nan' is not a number: it must be {SPEED}"),
        (["--speed", "fast"], f"argument --speed: 'fast' is not a number: it must be {SPEED}"),
        (["--timeout", "0"], f"argument --timeout: '0' must be {TIMEOUT}"),
        (["--timeout", "-5"], f"argument --timeout: '-5' must be {TIMEOUT}"),
        (["--timeout=-inf"], f"argument --timeout: '-inf' must be {TIMEOUT}"),
        (["--timeout", "nan"], f"argument --timeout: 'nan' is not a number: it must be {TIMEOUT}"),
        (
            ["--timeout", "soon"],
            f"argument --timeout: 'soon' is not a number: it must be {TIMEOUT}",
        ),
    ],
)
def test_a_bad_speed_or_timeout_is_one_line_saying_what_is_allowed(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["emulate", *argv]) == 2
    assert capsys.readouterr().err == f"xce-sched: error: {message}\n"


@pytest.mark.parametrize(
    ("argv", "speed", "timeout"),
    [
        ([], 1.0, None),
        (["--speed", "0.001", "--timeout", "0.5"], 0.001, 0.5),
        (["--speed", "20000", "--timeout", "600"], 20000.0, 600.0),
        (["--speed", "1e9", "--timeout", "1e9"], 1e9, 1e9),
        (["--timeout", "inf"], 1.0, None),
        (["--timeout", "Infinity"], 1.0, None),
        (["--timeout", "1e400"], 1.0, None),
    ],
)
def test_good_speeds_and_timeouts_parse(
    argv: list[str], speed: float, timeout: float | None
) -> None:
    args = build_parser().parse_args(["emulate", *argv])
    assert (args.speed, args.timeout) == (speed, timeout)
