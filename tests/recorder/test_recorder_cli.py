"""``xce-recorder``'s command line without servers: a bad option is one argparse line
naming the option as typed and what it may be (exit status 2); a NATS server that
cannot be reached, a metrics port that cannot be bound and a recordings folder that
cannot be made are one line naming them and why (exit status 1), with no warnings
before it, no internal field names and never a traceback. (Redis unreachable and
NATS without JetStream need a NATS server: ``tests/live/test_recorder_cli.py``.)"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from xce_kit.arguments import stream_limits
from xce_kit.streams import StreamLimits
from xce_recorder import cli
from xce_recorder.config import RecorderOptions

from tests.live.servers import free_port

#: Words of the code that a user's error line must not show.
INTERNAL = re.compile(r"\w+_s\b|snapshot_interval|fetch_batch|RecorderOptions|Errno")


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | str | None, str]:
    """``main(argv)`` in this process: its exit status and what it wrote on stderr."""
    try:
        code: int | str | None = cli.main(argv)
    except SystemExit as exc:  # argparse's way of refusing
        code = exc.code
    return code, capsys.readouterr().err


def recorder(*argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m xce_recorder argv`` as a child (its real stderr, logging too)."""
    program = [sys.executable, "-m", "xce_recorder", *argv]
    return subprocess.run(program, capture_output=True, text=True, timeout=60)


def one_line(err: str) -> str:
    """The one line of ``err``, which holds nothing else (no traceback, no warning)."""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert err.endswith("\n")
    assert not INTERNAL.search(lines[0]), lines[0]
    return lines[0]


NATS_ALLOWED = "(nats://host:port, tls://, ws:// or wss://; several separated by commas)"
REDIS_ALLOWED = "(redis://host:port/db, rediss://, unix://)"
STOP_ENDS = (
    ": a stop must end even when the core service never answers; give a long wait, e.g. "
    "3600, instead"
)


#: Each mistake, and the line it gets (after ``xce-recorder: error: ``): the kit's
#: types (``xce_kit.options``), worded as for every live service.
BAD_OPTIONS: list[tuple[list[str], str]] = [
    (
        ["--stop-wait", "-3"],
        "argument --stop-wait: -3 is not a finite number of seconds, 0 or more",
    ),
    (
        ["--stop-wait", "nan"],
        "argument --stop-wait: nan is not a finite number of seconds, 0 or more",
    ),
    (["--stop-wait", "soon"], "argument --stop-wait: 'soon' is not a number of seconds"),
    (
        ["--stop-wait", "inf"],
        f"argument --stop-wait: inf is not a finite number of seconds, 0 or more{STOP_ENDS}",
    ),
    (
        ["--stop-wait", "1e400"],
        f"argument --stop-wait: 1e400 is not a finite number of seconds, 0 or more{STOP_ENDS}",
    ),
    (
        ["--connect-timeout", "0"],
        "argument --connect-timeout: 0 is not a positive, finite number of seconds",
    ),
    (
        ["--connect-timeout", "-1"],
        "argument --connect-timeout: -1 is not a positive, finite number of seconds",
    ),
    (
        ["--connect-timeout", "nan"],
        "argument --connect-timeout: nan is not a positive, finite number of seconds",
    ),
    (
        ["--connect-timeout", "inf"],
        "argument --connect-timeout: inf is not a positive, finite number of seconds",
    ),
    (
        ["--record-snapshot-interval", "-5"],
        "argument --record-snapshot-interval: must be 0 or more, not -5",
    ),
    (
        ["--record-snapshot-interval", "1.5"],
        "argument --record-snapshot-interval: '1.5' is not a whole number",
    ),
    (
        ["--record-snapshot-interval", "1_000"],
        "argument --record-snapshot-interval: '1_000' is not a whole number",
    ),
    (
        ["--record-snapshot-interval", "1" + "0" * 30],
        "argument --record-snapshot-interval: must be 9223372036854775807 or less, "
        "not 1000000000000000000000000000000",
    ),
    (["--metrics-port", "0"], "argument --metrics-port: port 0 is not between 1 and 65535"),
    (
        ["--metrics-port", "70000"],
        "argument --metrics-port: port 70000 is not between 1 and 65535",
    ),
    (["--metrics-port", "http"], "argument --metrics-port: 'http' is not a port number"),
    (["--metrics-port", "٩٠"], "argument --metrics-port: '٩٠' is not a port number"),
    (
        ["--log-level", "loud"],
        "argument --log-level: 'loud' is not one of DEBUG, INFO, WARNING, ERROR",
    ),
    (["--redis", "notaurl"], f"argument --redis: 'notaurl' is not a Redis URL {REDIS_ALLOWED}"),
    (
        ["--redis", "redis://h:x/0"],
        f"argument --redis: 'redis://h:x/0' is not a Redis URL {REDIS_ALLOWED}: "
        "port could not be cast to integer value as 'x'",
    ),
    (
        ["--redis", "redis://h:6379/zero"],
        f"argument --redis: 'redis://h:6379/zero' is not a Redis URL {REDIS_ALLOWED}: "
        "database 'zero' is not a number",
    ),
    (
        ["--nats", "http://h:4222"],
        f"argument --nats: 'http://h:4222' is not a NATS URL {NATS_ALLOWED}: unknown scheme 'http'",
    ),
    (
        ["--nats", "nats://h:99999"],
        f"argument --nats: 'nats://h:99999' is not a NATS URL {NATS_ALLOWED}: "
        "bad port in 'nats://h:99999'",
    ),
    (
        ["--nats", "nats://a:1,,nats://b:2"],
        f"argument --nats: 'nats://a:1,,nats://b:2' is not a NATS URL {NATS_ALLOWED}: an empty URL",
    ),
    (
        ["--nats", "nats://a:1,ws://b:2"],
        f"argument --nats: 'nats://a:1,ws://b:2' is not a NATS URL {NATS_ALLOWED}: "
        "websocket and other URLs mixed",
    ),
    (
        ["--stream-replicas", "9"],
        "argument --stream-replicas: must be 5 or less, not 9",
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
    args = cli.build_parser().parse_args(
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
            "--stream-max-age",
            "3600",
            "--stream-max-bytes",
            "1GiB",
            "--stream-replicas",
            "3",
        ]
    )
    assert (args.stop_wait, args.connect_timeout, args.record_snapshot_interval) == (0, 0.5, 0)
    assert (args.metrics_port, args.log_level) == (9103, "DEBUG")
    assert (args.nats, args.redis) == ("nats://a:4222, b:4223", "unix:///run/redis.sock")
    assert stream_limits(args) == StreamLimits(max_age_s=3600.0, max_bytes=2**30, replicas=3)


def test_metrics_are_served_on_this_host_only_unless_told() -> None:
    assert cli.build_parser().parse_args([]).metrics_addr == "127.0.0.1"


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


def test_the_options_refuse_a_url_that_is_not_a_nats_url(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"^nats_url 'http://h:4222' is not a NATS URL \(unknown scheme 'http'\)$"
    ):
        RecorderOptions(nats_url="http://h:4222", recordings_dir=tmp_path)
