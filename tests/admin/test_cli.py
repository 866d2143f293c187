"""``xceadmin`` against a real HTTP server (uvicorn in a thread, in-memory backend):
its commands, one-line errors and exit statuses; never a traceback."""

from __future__ import annotations

import importlib
import os
import re
import time
from pathlib import Path

import pytest
from xce_admin import cli
from xce_schemas.admin import CoreStatus

from tests.admin.fakes import TOKEN, FakeBackend
from tests.live.servers import free_port


def xceadmin(
    capsys: pytest.CaptureFixture[str], url: str, *args: str, token: str | None = TOKEN
) -> tuple[int, str, str]:
    # The token as an operator gives it: in the environment, never an option.
    saved = os.environ.pop("XCE_ADMIN_TOKEN", None)
    if token:
        os.environ["XCE_ADMIN_TOKEN"] = token
    try:
        code = cli.main(["--url", url, *args])
    finally:
        os.environ.pop("XCE_ADMIN_TOKEN", None)
        if saved is not None:
            os.environ["XCE_ADMIN_TOKEN"] = saved
    out, err = capsys.readouterr()
    return code, out, err


def test_record_start_stop_and_status(
    server: str, backend: FakeBackend, capsys: pytest.CaptureFixture[str], recordings: Path
) -> None:
    code, out, err = xceadmin(capsys, server, "scheduler", "record", "start", "night")
    assert (code, err) == (0, "")
    assert (
        out
        == "recording night.jsonl.gz from event seq 0 (stop with: xceadmin scheduler record stop)\n"
    )
    backend.core = CoreStatus(
        seq=9, last_round_ts=5_000, round_seconds=0.0025, updated=time.time(), heartbeat=time.time()
    )
    code, out, _ = xceadmin(capsys, server, "scheduler", "status")
    assert code == 0
    core, recorder = out.splitlines()
    assert re.fullmatch(
        r"core: event seq 9, last round at ts 5000 \(2\.5 ms, [0-9.]+ s ago\); jobs pending 0, "
        r"running 0, suspended 0; lag 0\.000 s, 0 events waiting; heartbeat [0-9.]+ s ago",
        core,
    ), core
    assert recorder == (
        "recorder: recording night.jsonl.gz since 2024-01-01T00:00:00Z, events 0..0, 0 lines, 0 snapshots"
    )
    code, out, _ = xceadmin(capsys, server, "scheduler", "record", "stop")
    assert (code, out) == (
        0,
        "stopping; the recording will be night.jsonl.gz in the recordings directory\n",
    )
    code, out, _ = xceadmin(capsys, server, "scheduler", "record", "status")
    assert (code, out) == (0, "recorder: idle, last recording night.jsonl.gz\n")
    (recordings / "night.jsonl.gz").write_bytes(b"x")
    code, out, _ = xceadmin(capsys, server, "scheduler", "recordings")
    assert code == 0 and out.startswith("night.jsonl.gz\t1\t")


@pytest.mark.parametrize(
    ("round_ago", "beat_ago", "line", "error"),
    [
        (
            40.0,
            40.0,
            "core: event seq 3, last round at ts 1 (0.0 ms, 40.",
            "xceadmin: error: the core service is down or stuck (last round 40.",
        ),
        (
            40.0,
            0.0,
            "core: event seq 3, last round at ts 1 (0.0 ms, 40.",
            "xceadmin: error: the core service runs (heartbeat 0.",
        ),
        (
            None,
            0.0,
            "core: event seq 3, no round yet; heartbeat 0.",
            "xceadmin: error: the core service runs (heartbeat 0.",
        ),
        (None, None, "core: never seen", "xceadmin: error: the core service never wrote"),
    ],
    ids=["dead for 40 s", "no round for 40 s", "no round yet", "never ran"],
)
def test_status_exits_4_when_the_core_does_not_schedule(
    server: str,
    backend: FakeBackend,
    capsys: pytest.CaptureFixture[str],
    round_ago: float | None,
    beat_ago: float | None,
    line: str,
    error: str,
) -> None:
    """Item 12: the status is printed all the same, with one error line saying what
    does not run, and exit status 4."""
    now = time.time()
    if line != "core: never seen":
        backend.core = CoreStatus(
            seq=3,
            last_round_ts=None if round_ago is None else 1,
            updated=0.0 if round_ago is None else now - round_ago,
            heartbeat=0.0 if beat_ago is None else now - beat_ago,
        )
    code, out, err = xceadmin(capsys, server, "scheduler", "status")
    assert code == 4
    assert out.splitlines()[0].startswith(line), out
    assert out.splitlines()[1] == "recorder: idle"
    assert err.startswith(error) and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("args", "token", "code", "message"),
    [
        (
            ["scheduler", "record", "start"],
            None,
            1,
            "xceadmin: error: unauthorized: this endpoint needs 'Authorization: Bearer <XCE_ADMIN_TOKEN>' (set XCE_ADMIN_TOKEN_FILE or XCE_ADMIN_TOKEN)",
        ),
        (["scheduler", "record", "stop"], "nope", 1, "xceadmin: error: unauthorized: wrong token"),
        (
            ["scheduler", "record", "start", "../etc/passwd"],
            TOKEN,
            1,
            "xceadmin: error: recording name '../etc/passwd' is a path; give a file name only (no '/' or '\\')",
        ),
        (["scheduler", "record", "stop"], TOKEN, 1, "xceadmin: error: not recording"),
    ],
    ids=["no token", "wrong token", "path traversal", "stop when idle"],
)
def test_refusals_are_one_line(
    server: str,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    token: str | None,
    code: int,
    message: str,
) -> None:
    got, out, err = xceadmin(capsys, server, *args, token=token)
    assert (got, out, err) == (code, "", message + "\n")


def test_a_server_down_is_one_line_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code, out, err = xceadmin(capsys, url, "scheduler", "status")
    assert code == 3 and out == ""
    assert err.startswith(f"xceadmin: error: cannot reach the admin server at {url} (")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_backend_down_is_a_server_error_line(
    server: str, backend: FakeBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    backend.down = True
    code, _, err = xceadmin(capsys, server, "scheduler", "record", "start")
    assert code == 3
    assert err == (
        "xceadmin: error: server error 503: the recorder service is not running "
        "(nobody answers on xce.recorder.control)\n"
    )


@pytest.mark.parametrize(
    "url", ["ftp://example", "http://[::1", "not a url"], ids=["scheme", "bracket", "words"]
)
def test_a_bad_url_is_a_usage_error(capsys: pytest.CaptureFixture[str], url: str) -> None:
    code, _, err = xceadmin(capsys, url, "scheduler", "status")
    assert code == 2 and err.startswith("xceadmin: error: bad --url") and err.count("\n") == 1


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(["scheduler", "record", "pause"])
    assert stop.value.code == 2
    assert "invalid choice: 'pause'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "build, argv, message",
    [
        ("server", ["--port", "99999"], "port 99999 is not between 1 and 65535"),
        ("server", ["--log-level", "loud"], "'loud' is not one of DEBUG, INFO, WARNING, ERROR"),
        ("server", ["--max-body-bytes", "0"], "--max-body-bytes: must be 1 or more, not 0"),
        ("server", ["--redis", "notaurl"], "--redis: 'notaurl' is not a Redis URL"),
        ("server", ["--token", "x" * 32], "unrecognized arguments: --token"),
        ("cli", ["--token", "x" * 32, "scheduler", "status"], "set XCE_ADMIN_TOKEN_FILE"),
        ("cli", ["--timeout", "-1", "scheduler", "status"], "-1 is not a positive, finite"),
        (
            "cli",
            ["scheduler", "record", "start", "a\udcff"],  # the bytes a\xff of a shell
            "'a\ufffd' is not valid UTF-8 text",
        ),
    ],
)
def test_a_bad_option_is_one_argparse_line(
    build: str, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    module = importlib.import_module(f"xce_admin.{build}")
    with pytest.raises(SystemExit) as exit_status:
        module.build_parser().parse_args(argv)
    assert exit_status.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    if build == "server":  # the kit's one-line parser: no usage block
        assert err.startswith("xce-admin: error: ") and err.count("\n") == 1, err


def test_the_token_is_read_from_the_file_xce_admin_token_file_names(
    server: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")
    monkeypatch.setenv("XCE_ADMIN_TOKEN_FILE", str(secret))
    code, _out, err = xceadmin(capsys, server, "scheduler", "record", "stop", token="wrong")
    assert "unauthorized" not in err  # the file's token, not $XCE_ADMIN_TOKEN, was sent
    monkeypatch.setenv("XCE_ADMIN_TOKEN_FILE", str(tmp_path / "missing"))
    code, out, err = xceadmin(capsys, server, "scheduler", "status")
    assert (code, out) == (2, "")
    assert err.startswith("xceadmin: error: XCE_ADMIN_TOKEN_FILE=")
    assert TOKEN not in err and len(err.splitlines()) == 1


def test_the_status_names_the_leading_core_service(
    server: str, backend: FakeBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    now = time.time()
    backend.core = CoreStatus(
        seq=9, last_round_ts=5, updated=now, heartbeat=now, term=41, holder="core-2:1"
    )
    code, out, _ = xceadmin(capsys, server, "scheduler", "status")
    assert code == 0
    assert out.splitlines()[0].endswith(" s ago; leader core-2:1 (term 41)"), out


@pytest.mark.parametrize(
    "argv",
    [
        ["--token", "SECRET-TOKEN-1234", "scheduler", "status"],
        ["scheduler", "status", "--token", "SECRET-TOKEN-1234"],
        ["scheduler", "record", "start", "x", "--token=SECRET-TOKEN-1234"],
    ],
    ids=["before the command", "after it", "as --token=VALUE"],
)
def test_a_token_on_the_command_line_is_refused_wherever_it_stands_and_not_echoed(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_status:
        cli.main(argv)
    assert exit_status.value.code == 2
    err = capsys.readouterr().err
    assert "set XCE_ADMIN_TOKEN_FILE" in err and "SECRET-TOKEN-1234" not in err
