"""``xce-sched emulate`` refuses bad input with one line and never hangs on a NATS
server that is not there (the runs against real servers are in tests/live)."""

from __future__ import annotations

import pytest
from xce_driver.cli import main

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
        (["--timeout", "-1"], "argument --timeout: '-1' must be a finite number, 0 or more"),
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
    assert err == f"xce-sched: error: --nats {url}: nats: no servers available for connection\n"
