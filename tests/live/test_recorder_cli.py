"""``xce-recorder`` against a real NATS server when the rest is wrong: Redis that
cannot be reached, or a NATS server without JetStream, is one line naming the server
and why (exit status 1), with no warnings before it and never a traceback. (The
command line's other mistakes: ``tests/recorder/test_recorder_cli.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest

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
