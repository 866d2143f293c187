"""The whole recording path with every piece a real process: the core service, the
recorder and the admin API (``xce-admin``) on real NATS and Redis; ``xceadmin``
starts and stops a recording, the file is listed and downloaded, and
``xce-sched replay FILE --sim-verify`` finds no mismatch."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from xce_driver.live.publish import publish_events
from xce_schemas import BeginRound

from tests.live.helpers import NS, ServiceProcess, connected, publish, scenario, wait_until
from tests.live.servers import free_port

pytestmark = [pytest.mark.nats, pytest.mark.redis]

TOKEN = "live-test-token"
WAIT_S = 60.0


def poll(check: Callable[[], Any], what: str, timeout_s: float = WAIT_S) -> Any:
    """Call ``check`` every 50 ms until it returns something true; that value."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = check()
        except httpx.HTTPError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


def xceadmin(url: str, *args: str, token: str | None = TOKEN) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XCE_ADMIN_TOKEN", "XCE_ADMIN_URL")}
    env["XCE_ADMIN_URL"] = url
    if token is not None:
        env["XCE_ADMIN_TOKEN"] = token
    program = [sys.executable, "-c", "from xce_admin.cli import main; raise SystemExit(main())"]
    return subprocess.run(
        [*program, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def stack(
    bus: tuple[str, str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, Path, list[ServiceProcess]]]:
    """Core service, recorder (snapshot every 5 events) and admin API as processes;
    ``(admin URL, recordings dir, processes)``."""
    nats_url, redis_url = bus
    recordings = workdir / "recordings"
    monkeypatch.setenv("XCE_ADMIN_TOKEN", TOKEN)
    port = free_port()
    python = sys.executable
    procs = [
        ServiceProcess(nats_url, redis_url, workdir / "core.log", "--snapshot-every", "5"),
        ServiceProcess(
            nats_url,
            redis_url,
            workdir / "recorder.log",
            "--recordings-dir",
            str(recordings),
            "--record-snapshot-interval",
            "5",
            program=[python, "-m", "xce_recorder.service"],
        ),
        ServiceProcess(
            nats_url,
            redis_url,
            workdir / "admin.log",
            "--port",
            str(port),
            "--recordings-dir",
            str(recordings),
            "--log-level",
            "warning",
            program=[python, "-m", "xce_admin.server"],
        ),
    ]
    url = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            for proc in procs:
                assert proc.exited() is None, proc.log_text()
            status = httpx.get(f"{url}/scheduler/record/status", timeout=2).json()
            return bool(status["recorder_up"])

        poll(ready, "the admin API and the recorder")
        yield url, recordings, procs
    finally:
        for proc in procs:
            proc.terminate()


def test_record_through_the_admin_api_and_replay_the_file(
    stack: tuple[str, Path, list[ServiceProcess]], bus: tuple[str, str], tmp_path: Path
) -> None:
    url, recordings, procs = stack
    nats_url, _ = bus
    events = scenario(rounds=10)
    half = len(events) // 2

    async def send(batch: list[Any]) -> list[int]:
        async with connected(nats_url) as js:
            return await publish(js, batch)

    asyncio.run(send(events[:half]))
    started = xceadmin(url, "scheduler", "record", "start", "live")
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith(f"recording live.jsonl.gz from event seq {half} ")
    asyncio.run(send(events[half:]))

    def core_done() -> bool:
        core = httpx.get(f"{url}/scheduler/status", timeout=2).json()["core"]
        return core is not None and core["seq"] == len(events)

    poll(core_done, "the core to handle every event")
    status = xceadmin(url, "scheduler", "status")
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"core: event seq {len(events)}, last round at ts ")
    assert "recorder: recording live.jsonl.gz" in status.stdout

    refused = xceadmin(url, "scheduler", "record", "stop", token=None)
    assert refused.returncode == 1 and refused.stderr.startswith("xceadmin: error: unauthorized")
    assert "Traceback" not in refused.stderr
    stopped = xceadmin(url, "scheduler", "record", "stop")
    assert stopped.returncode == 0, stopped.stderr

    def listed() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = httpx.get(f"{url}/scheduler/recordings", timeout=2).json()[
            "recordings"
        ]
        return found

    assert [r["name"] for r in poll(listed, "the recording to be listed")] == ["live.jsonl.gz"]
    assert httpx.get(f"{url}/scheduler/recordings/live.jsonl.gz").status_code == 401
    traversal = httpx.get(f"{url}/scheduler/recordings/..%2F..%2Fcore.log", headers=_auth())
    assert traversal.status_code == 400
    download = httpx.get(f"{url}/scheduler/recordings/live.jsonl.gz", headers=_auth())
    assert download.status_code == 200
    copy = tmp_path / "copy.jsonl.gz"
    copy.write_bytes(download.content)
    assert copy.read_bytes() == (recordings / "live.jsonl.gz").read_bytes()

    replayed = subprocess.run(
        [sys.executable, "-m", "xce_driver.cli", "replay", str(copy), "--sim-verify"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "0 mismatches" in replayed.stdout
    metrics = httpx.get(f"{url}/metrics").text
    assert (
        'xce_admin_requests_total{endpoint="/scheduler/record/start",status="200"} 1.0' in metrics
    )
    core, recorder, admin = procs
    assert core.terminate() == 0, core.log_text()
    assert recorder.terminate() == 0, recorder.log_text()
    # uvicorn shuts down cleanly, then re-raises the SIGTERM it caught.
    assert admin.terminate() in (0, -15), admin.log_text()


def admin_server_refusal(*argv: str, token: str | None) -> subprocess.CompletedProcess[str]:
    """``xce-admin`` on a free port with ``argv`` and ``XCE_ADMIN_TOKEN`` = ``token``
    (None: unset), expected to refuse at once."""
    env = {k: v for k, v in os.environ.items() if k != "XCE_ADMIN_TOKEN"}
    if token is not None:
        env["XCE_ADMIN_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "xce_admin.server", "--port", str(free_port()), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_admin_server_refuses_to_start_without_a_token() -> None:
    done = admin_server_refusal(token=None)
    assert done.returncode == 2
    assert done.stderr.startswith("xce-admin: error: XCE_ADMIN_TOKEN is not set")
    assert "Traceback" not in done.stderr


def test_the_admin_server_refuses_a_redis_url_that_is_not_one() -> None:
    done = admin_server_refusal("--redis", "notaurl", token="t")
    assert done.returncode == 2
    assert done.stderr == (
        "xce-admin: error: --redis: 'notaurl' is not a Redis URL "
        "(redis://host:port/db, rediss://, unix://)\n"
    )


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def test_status_and_health_fail_once_the_core_is_dead_or_gets_no_rounds(
    bus: tuple[str, str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 12, with every piece a real process: rounds flow (as the bridge sends
    them) and ``xceadmin scheduler status`` exits 0, ``/health`` is 200; the rounds
    stop while the core runs: ``no_rounds``, exit 4, 503; rounds again, then the core
    killed: ``down``, exit 4, 503. The limit comes from ``XCE_MAX_ROUND_AGE``."""
    nats_url, redis_url = bus
    monkeypatch.setenv("XCE_ADMIN_TOKEN", TOKEN)
    monkeypatch.setenv("XCE_MAX_ROUND_AGE", "3")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    admin_argv = ["--port", str(port), "--log-level", "warning"]
    program = [sys.executable, "-m", "xce_admin.server"]
    admin = ServiceProcess(nats_url, redis_url, workdir / "admin.log", *admin_argv, program=program)
    core = ServiceProcess(nats_url, redis_url, workdir / "core.log")

    async def health() -> tuple[int, dict[str, Any]]:
        async with httpx.AsyncClient() as client:
            answer = await client.get(f"{url}/health", timeout=2)
        return answer.status_code, answer.json()

    async def until_core(state: str) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        async def check() -> bool:
            assert admin.exited() is None, admin.log_text()
            try:
                _code, body = await health()
            except httpx.HTTPError:
                return False
            seen.update(body)
            return body["core"] == state

        await wait_until(check, f"the core to be {state!r} (last: {seen})", timeout_s=WAIT_S)
        return seen

    async def status() -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(xceadmin, url, "scheduler", "status")

    async def go() -> None:
        async with connected(nats_url) as js:
            await publish(js, scenario()[:2])  # the configuration and the hosts
            flowing = asyncio.Event()
            ts = 0

            async def bridge() -> None:  # a BEGIN_ROUND every 0.2 s while flowing
                nonlocal ts
                while True:
                    await flowing.wait()
                    ts += NS
                    await publish_events(js, [BeginRound(ts=ts)])
                    await asyncio.sleep(0.2)

            rounds = asyncio.create_task(bridge())
            try:
                flowing.set()
                await until_core("scheduling")
                assert await health() == (200, await until_core("scheduling"))
                done = await status()
                assert done.returncode == 0, done.stdout + done.stderr
                assert done.stdout.startswith("core: event seq ")

                flowing.clear()  # the bridge stops; the core runs on
                body = await until_core("no_rounds")
                assert (await health())[0] == 503 and body["status"] == "degraded"
                done = await status()
                assert done.returncode == 4, done.stdout + done.stderr
                assert done.stderr.startswith("xceadmin: error: the core service runs (heartbeat")
                assert "is the bridge running?" in done.stderr

                flowing.set()
                await until_core("scheduling")
                core.kill()  # dead, while rounds flow
                body = await until_core("down")
                assert (await health())[0] == 503
                assert body["problem"].startswith("the core service is down or stuck")
                done = await status()
                assert done.returncode == 4, done.stdout + done.stderr
                assert done.stderr.startswith("xceadmin: error: the core service is down or stuck")
                assert done.stdout.startswith("core: event seq ")  # the status, all the same
            finally:
                rounds.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await rounds

    try:
        asyncio.run(go())
    finally:
        core.kill()
        assert admin.terminate() in (0, -15), admin.log_text()
