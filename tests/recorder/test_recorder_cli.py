"""``xce-recorder``'s command line without servers: a bad option is one argparse line
naming the option as typed and what it may be (exit status 2); a NATS server that
cannot be reached, a metrics port that cannot be bound and a recordings folder that
cannot be made are one line naming them and why (exit status 1), with no warnings
before it, no internal field names and never a traceback. (Redis unreachable and
NATS without JetStream need a NATS server: ``tests/live/test_recorder_cli.py``.)"""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from xce_recorder import service
from xce_recorder.service import ConnectError, RecorderOptions, RecorderService

from tests.live.servers import free_port

#: Words of the code that a user's error line must not show.
INTERNAL = re.compile(r"\w+_s\b|snapshot_interval|fetch_batch|RecorderOptions|Errno")


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | str | None, str]:
    """``main(argv)`` in this process: its exit status and what it wrote on stderr."""
    try:
        code: int | str | None = service.main(argv)
    except SystemExit as exc:  # argparse's way of refusing
        code = exc.code
    return code, capsys.readouterr().err


def recorder(*argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m xce_recorder.service argv`` as a child (its real stderr, logging too)."""
    program = [sys.executable, "-m", "xce_recorder.service", *argv]
    return subprocess.run(program, capture_output=True, text=True, timeout=60)


def one_line(err: str) -> str:
    """The one line of ``err``, which holds nothing else (no traceback, no warning)."""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert err.endswith("\n")
    assert not INTERNAL.search(lines[0]), lines[0]
    return lines[0]


NATS_ALLOWED = "a NATS URL (nats://host:port, tls://, ws:// or wss://; several separated by commas)"
REDIS_ALLOWED = "a Redis URL (redis://host:port/db, rediss://host:port/db or unix:///path)"


#: Each mistake, and the line it gets (after ``xce-recorder: error: ``).
BAD_OPTIONS: list[tuple[list[str], str]] = [
    (["--stop-wait", "-3"], "argument --stop-wait: must be a number of seconds ≥ 0, not '-3'"),
    (
        ["--stop-wait", "nan"],
        "argument --stop-wait: must be a number of seconds ≥ 0, not 'nan'",
    ),
    (
        ["--stop-wait", "soon"],
        "argument --stop-wait: must be a number of seconds ≥ 0, not 'soon'",
    ),
    (
        ["--stop-wait", "inf"],
        "argument --stop-wait: must be a finite number of seconds, not 'inf' (a stop must end "
        "even when the core service never answers; give a long wait, e.g. 3600, instead)",
    ),
    (
        ["--stop-wait", "1e400"],
        "argument --stop-wait: must be a finite number of seconds, not '1e400' (a stop must end "
        "even when the core service never answers; give a long wait, e.g. 3600, instead)",
    ),
    (
        ["--connect-timeout", "0"],
        "argument --connect-timeout: must be a positive number of seconds, not '0'",
    ),
    (
        ["--connect-timeout", "-1"],
        "argument --connect-timeout: must be a positive number of seconds, not '-1'",
    ),
    (
        ["--connect-timeout", "nan"],
        "argument --connect-timeout: must be a positive number of seconds, not 'nan'",
    ),
    (
        ["--connect-timeout", "inf"],
        "argument --connect-timeout: must be a finite number of seconds, not 'inf'",
    ),
    (
        ["--record-snapshot-interval", "-5"],
        "argument --record-snapshot-interval: must be a whole number ≥ 0, not '-5'",
    ),
    (
        ["--record-snapshot-interval", "1.5"],
        "argument --record-snapshot-interval: must be a whole number ≥ 0, not '1.5'",
    ),
    (
        ["--record-snapshot-interval", "1" + "0" * 30],
        "argument --record-snapshot-interval: must be a whole number from 0 to "
        "9223372036854775807, not '1000000000000000000000000000000'",
    ),
    (
        ["--metrics-port", "0"],
        "argument --metrics-port: must be a port number from 1 to 65535, not '0'",
    ),
    (
        ["--metrics-port", "70000"],
        "argument --metrics-port: must be a port number from 1 to 65535, not '70000'",
    ),
    (
        ["--metrics-port", "http"],
        "argument --metrics-port: must be a port number from 1 to 65535, not 'http'",
    ),
    (
        ["--log-level", "loud"],
        "argument --log-level: must be one of DEBUG, INFO, WARNING, ERROR, not 'loud'",
    ),
    (["--redis", "notaurl"], f"argument --redis: must be {REDIS_ALLOWED}, not 'notaurl'"),
    (
        ["--redis", "redis://h:x/0"],
        f"argument --redis: must be {REDIS_ALLOWED}, not 'redis://h:x/0' "
        "(port could not be cast to integer value as 'x')",
    ),
    (
        ["--redis", "redis://h:6379/zero"],
        f"argument --redis: must be {REDIS_ALLOWED}, not 'redis://h:6379/zero' "
        "(database 'zero' is not a number)",
    ),
    (
        ["--nats", "http://h:4222"],
        f"argument --nats: must be {NATS_ALLOWED}, not 'http://h:4222' (unknown scheme 'http')",
    ),
    (
        ["--nats", "nats://h:99999"],
        f"argument --nats: must be {NATS_ALLOWED}, not 'nats://h:99999' "
        "(bad port in 'nats://h:99999')",
    ),
    (
        ["--nats", "nats://a:1,,nats://b:2"],
        f"argument --nats: must be {NATS_ALLOWED}, not 'nats://a:1,,nats://b:2' (an empty URL)",
    ),
    (["--no-such-option"], "unrecognized arguments: --no-such-option"),
]


@pytest.mark.parametrize(
    ("argv", "expected"), BAD_OPTIONS, ids=[" ".join(argv) for argv, _ in BAD_OPTIONS]
)
def test_a_bad_option_is_one_argparse_line(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_main(argv, capsys)
    assert code == 2
    assert one_line(err) == f"xce-recorder: error: {expected}"


def test_good_options_are_taken() -> None:
    args = service.build_parser().parse_args(
        [
            "--stop-wait",
            "0",
            "--connect-timeout",
            "0.5",
            "--record-snapshot-interval",
            "0",
            "--metrics-port",
            "9103",
            "--log-level",
            "debug",
            "--nats",
            "nats://a:4222, b:4223",
            "--redis",
            "unix:///run/redis.sock",
        ]
    )
    assert (args.stop_wait, args.connect_timeout, args.record_snapshot_interval) == (0, 0.5, 0)
    assert (args.metrics_port, args.log_level) == (9103, "DEBUG")
    assert (args.nats, args.redis) == ("nats://a:4222, b:4223", "unix:///run/redis.sock")


def unreachable() -> list[str]:
    """Options whose servers nobody listens on."""
    return ["--redis", f"redis://127.0.0.1:{free_port()}/0"]


def test_an_unreachable_nats_server_is_one_line_naming_it(tmp_path: Path) -> None:
    port = free_port()
    url = f"nats://127.0.0.1:{port}"
    done = recorder("--nats", url, "--recordings-dir", str(tmp_path / "r"), *unreachable())
    assert done.returncode == 1
    assert one_line(done.stderr) == f"xce-recorder: error: NATS at {url}: connection refused"


def test_several_unreachable_nats_servers_are_one_line(tmp_path: Path) -> None:
    url = f"nats://127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    done = recorder("--nats", url, "--recordings-dir", str(tmp_path / "r"), *unreachable())
    assert done.returncode == 1
    assert one_line(done.stderr) == f"xce-recorder: error: NATS at {url}: connection refused"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that takes TCP connections and never says a word."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield int(sock.getsockname()[1])


def test_a_nats_server_that_does_not_answer_is_one_line(tmp_path: Path, silent_port: int) -> None:
    url = f"nats://127.0.0.1:{silent_port}"
    done = recorder(
        "--nats",
        url,
        "--connect-timeout",
        "0.5",
        "--recordings-dir",
        str(tmp_path / "r"),
        *unreachable(),
    )
    assert done.returncode == 1
    assert (
        one_line(done.stderr) == f"xce-recorder: error: NATS at {url} did not answer within 0.5 s"
    )


@pytest.mark.parametrize(
    ("addr", "option", "why"),
    [
        ("127.0.0.1", "--metrics-port {port}", "address already in use"),  # busy
        ("192.0.2.1", "--metrics-addr 192.0.2.1", "cannot assign requested address"),
    ],
    ids=["a busy port", "an address not of this host"],
)
def test_a_metrics_endpoint_that_cannot_be_served_is_one_line(
    tmp_path: Path,
    silent_port: int,
    capsys: pytest.CaptureFixture[str],
    addr: str,
    option: str,
    why: str,
) -> None:
    """The line names the option at fault (TEST-NET-1's 192.0.2.1 is no address here)."""
    port = silent_port if addr == "127.0.0.1" else free_port()
    argv = ["--metrics-addr", addr, "--metrics-port", str(port)]
    argv += ["--nats", f"nats://127.0.0.1:{free_port()}", "--recordings-dir", str(tmp_path)]
    code, err = run_main(argv, capsys)
    assert code == 1
    assert one_line(err) == (
        f"xce-recorder: error: {option.format(port=port)}: cannot serve /metrics on "
        f"{addr}:{port}: {why}"
    )


@pytest.mark.parametrize("inside", [False, True], ids=["a file", "inside a file"])
def test_a_recordings_folder_that_cannot_be_made_is_one_line(
    tmp_path: Path, inside: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("not a folder\n")
    folder = blocker / "sub" if inside else blocker
    argv = ["--recordings-dir", str(folder), "--nats", f"nats://127.0.0.1:{free_port()}"]
    code, err = run_main(argv, capsys)
    assert code == 1
    why = "cannot make the folder: not a directory" if inside else "not a folder"
    assert one_line(err) == f"xce-recorder: error: --recordings-dir {folder}: {why}"


def test_the_service_refuses_a_url_that_is_not_a_nats_url(tmp_path: Path) -> None:
    options = RecorderOptions(nats_url="http://h:4222", recordings_dir=tmp_path)
    with pytest.raises(ConnectError, match=r"^NATS at http://h:4222: not a NATS URL \("):
        asyncio.run(RecorderService(options).run())
