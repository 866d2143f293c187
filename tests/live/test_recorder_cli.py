"""``xce-recorder`` against a real NATS server when the rest is wrong: Redis that
cannot be reached, or a NATS server without JetStream, is one line naming the server
and why (exit status 1), with no warnings before it and never a traceback. (The
command line's other mistakes: ``tests/recorder/test_recorder_cli.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.live.conftest import LIMITED_PASSWORD, LIMITED_USER
from tests.live.servers import ServerProcess, free_port
from tests.recorder.test_recorder_cli import one_line, recorder


@pytest.mark.nats
def test_an_unreachable_redis_is_one_line_naming_it(nats_url: str, tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    done = recorder("--nats", nats_url, "--redis", url, "--recordings-dir", str(tmp_path))
    assert done.returncode == 1
    assert one_line(done.stderr) == f"xce-recorder: error: Redis at {url}: connection refused"


@pytest.mark.nats
@pytest.mark.redis
def test_a_nats_server_without_jetstream_is_one_line(
    nats_server_proc: ServerProcess, redis_url: str, tmp_path: Path
) -> None:
    port = free_port()
    binary = nats_server_proc.argv[0]
    plain = ServerProcess(
        "nats-plain",
        [binary, "-a", "127.0.0.1", "-p", str(port)],
        port,
        tmp_path,
        "Server is ready",
        "nats",
    )
    plain.start()
    try:
        done = recorder(
            "--nats", plain.url, "--redis", redis_url, "--recordings-dir", str(tmp_path / "r")
        )
    finally:
        plain.stop()
    assert done.returncode == 1
    assert one_line(done.stderr) == (
        f"xce-recorder: error: NATS at {plain.url}: JetStream is not enabled "
        "(start nats-server with -js)"
    )


@pytest.mark.nats
@pytest.mark.redis
@pytest.mark.parametrize(
    ("password", "refusal"),
    [
        (LIMITED_PASSWORD, "refused a command (NOPERM"),
        ("not-the-password", "refused the login (invalid username-password pair"),
    ],
    ids=["a user without MULTI", "a wrong password"],
)
def test_a_redis_refusal_at_start_is_one_line_and_exit_2(
    nats_url: str,
    limited_redis: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    password: str,
    refusal: str,
) -> None:
    """Not a warning every heartbeat forever: trying again will not help."""
    secret = tmp_path / "redis-password"
    secret.write_text(password)
    secret.chmod(0o600)
    monkeypatch.setenv("XCE_REDIS_USERNAME", LIMITED_USER)
    monkeypatch.setenv("XCE_REDIS_PASSWORD_FILE", str(secret))
    # (At WARNING: another test may have left XCE_RECORD on the shared server, which
    # the recorder notes at INFO before it reaches Redis.)
    where = ("--nats", nats_url, "--redis", limited_redis, "--log-level", "warning")
    done = recorder(*where, "--recordings-dir", str(tmp_path / "r"))
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert line.startswith(f"xce-recorder: error: Redis at {limited_redis} {refusal}"), line
    assert line.endswith(
        "check XCE_REDIS_USERNAME, XCE_REDIS_PASSWORD_FILE and the user's rights (ACL)"
    )
    assert password not in line
