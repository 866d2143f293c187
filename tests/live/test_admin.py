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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from xce_driver.live.publish import publish_events
from xce_schemas import BeginRound

from tests.live.conftest import LIMITED_USER
from tests.live.helpers import NS, ServiceProcess, connected, publish, scenario, wait_until
from tests.live.servers import ServerProcess, free_port, silent_port

pytestmark = [pytest.mark.nats, pytest.mark.redis]

TOKEN = "live-test-token-0123"
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
    recordings.mkdir()  # the admin refuses a missing one; the recorder may not have made it yet
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
            program=[python, "-m", "xce_recorder"],
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
    assert admin.terminate() == 0, admin.log_text()  # a clean stop, as the other services


def admin_server_refusal(
    *argv: str, token: str | None, cwd: Path | None = None, **environ: str
) -> subprocess.CompletedProcess[str]:
    """``xce-admin`` on a free port with ``argv`` and ``XCE_ADMIN_TOKEN`` = ``token``
    (None: unset) and ``environ`` more, in ``cwd``, expected to refuse at once."""
    env = {k: v for k, v in os.environ.items() if k != "XCE_ADMIN_TOKEN"} | environ
    if token is not None:
        env["XCE_ADMIN_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "xce_admin.server", "--port", str(free_port()), *argv],
        cwd=cwd,
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
    done = admin_server_refusal("--redis", "notaurl", token=TOKEN)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "xce-admin: error: argument --redis: 'notaurl' is not a Redis URL"
    )
    assert done.stderr.count("\n") == 1


def test_the_admin_server_refuses_a_short_token_without_showing_it() -> None:
    done = admin_server_refusal(token="guessable")
    assert done.returncode == 2
    assert done.stderr.startswith(
        "xce-admin: error: XCE_ADMIN_TOKEN is 9 characters long; the admin API needs at least 16"
    )
    assert done.stderr.count("\n") == 1 and "guessable" not in done.stderr


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
    admin_argv = ["--port", str(port), "--log-level", "warning", "--recordings-dir", str(workdir)]
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


def start_admin(
    nats_url: str, redis_url: str, workdir: Path, *extra: str
) -> tuple[str, ServiceProcess]:
    """``xce-admin`` as a process on a free port (token from the environment); its URL
    and process, once it answers ``/scheduler/record/status`` (Redis only)."""
    port = free_port()
    admin = ServiceProcess(
        nats_url,
        redis_url,
        workdir / "admin.log",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--recordings-dir",
        str(workdir),
        *extra,
        program=[sys.executable, "-m", "xce_admin.server"],
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert admin.exited() is None, admin.log_text()
        return httpx.get(f"{url}/scheduler/record/status", timeout=5).status_code == 200

    poll(up, "the admin API")
    return url, admin


def timed(method: str, url: str, **kwargs: Any) -> tuple[httpx.Response, float]:
    """One request and its wall time, s. The client's timeout (60 s) only stops a
    hung server from hanging the test."""
    started = time.monotonic()
    answer = httpx.request(method, url, timeout=60, **kwargs)
    return answer, time.monotonic() - started


@pytest.fixture
def silent_nats() -> Iterator[str]:
    """A NATS URL that accepts connections and never says a word (``silent_port``)."""
    with silent_port() as port:
        yield f"nats://127.0.0.1:{port}"


def test_nats_down_is_a_503_in_seconds_and_redis_requests_do_not_wait(
    silent_nats: str, redis_url: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19 item 4: with NATS silent, a start (it needs NATS) is answered 503 with
    the reason once the admin's connect wait is over, not after the connect's
    minutes of retries; a status read (Redis only) asked meanwhile is answered
    first, with 200."""
    monkeypatch.setenv("XCE_ADMIN_TOKEN", TOKEN)
    url, admin = start_admin(silent_nats, redis_url, workdir)
    try:
        with ThreadPoolExecutor(2) as pool:
            start = pool.submit(timed, "POST", f"{url}/scheduler/record/start", headers=_auth())
            time.sleep(0.2)  # the start is waiting on NATS now
            status, status_s = timed("GET", f"{url}/scheduler/record/status")
            start_waiting = not start.done()
            started, start_s = start.result()
        assert status.status_code == 200
        assert start_waiting, "the status read waited for the start's NATS connect"
        assert started.status_code == 503
        detail = started.json()["detail"]
        assert detail.startswith(f"NATS at {silent_nats} does not answer ("), detail
        health, health_s = timed("GET", f"{url}/health")
        assert health.status_code == 503 and health.json()["nats"] is False
        print(
            f"NATS silent: start 503 after {start_s:.2f} s ({detail}); status 200 after "
            f"{status_s:.3f} s meanwhile; /health 503 after {health_s:.2f} s"
        )
    finally:
        assert admin.terminate() in (0, -15), admin.log_text()


def test_nats_lost_is_a_503_at_once_and_back_when_nats_is(
    nats_server_proc: ServerProcess,
    nats_url: str,
    redis_url: str,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Connected, then NATS killed: a start is answered 503 at once (the connection
    is reconnecting), not parked in the client's buffer until the command timeout;
    Redis requests go on; once NATS is back, requests reach it again (no recorder
    runs here, so NATS itself says nobody answers)."""
    monkeypatch.setenv("XCE_ADMIN_TOKEN", TOKEN)
    url, admin = start_admin(nats_url, redis_url, workdir)
    no_recorder = "the recorder service is not running (nobody answers on xce.recorder.control)"
    try:
        first, _ = timed("POST", f"{url}/scheduler/record/start", headers=_auth())
        assert (first.status_code, first.json()["detail"]) == (503, no_recorder)
        nats_server_proc.kill()
        lost, lost_s = timed("POST", f"{url}/scheduler/record/start", headers=_auth())
        assert lost.status_code == 503
        assert lost.json()["detail"] == (
            f"NATS at {nats_url} does not answer (connection lost; reconnecting)"
        )
        status, _ = timed("GET", f"{url}/scheduler/status")
        assert status.status_code == 200
        nats_server_proc.start()

        def back() -> bool:
            again = httpx.post(f"{url}/scheduler/record/start", headers=_auth(), timeout=60)
            return again.json()["detail"] == no_recorder

        poll(back, "the admin to reach NATS again")
        print(f"NATS killed: start 503 after {lost_s:.3f} s")
    finally:
        assert admin.terminate() in (0, -15), admin.log_text()


def test_a_redis_restart_between_two_requests_fails_neither(
    nats_url: str,
    redis_url: str,
    restart_redis: Callable[[], None],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 19 item 4: the pooled Redis connection dies with the server; the next
    request reconnects (a retry on the connection error) instead of failing."""
    monkeypatch.setenv("XCE_ADMIN_TOKEN", TOKEN)
    url, admin = start_admin(nats_url, redis_url, workdir)
    try:
        for _ in range(3):
            assert httpx.get(f"{url}/scheduler/status", timeout=30).status_code == 200
            restart_redis()
            after, after_s = timed("GET", f"{url}/scheduler/status")
            assert after.status_code == 200, after.text
            record, _ = timed("GET", f"{url}/scheduler/record/status")
            assert record.status_code == 200, record.text
        print(f"Redis restarted: the next request 200 after {after_s:.3f} s")
    finally:
        assert admin.terminate() in (0, -15), admin.log_text()


def test_the_token_can_come_from_a_file(
    nats_url: str, redis_url: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = workdir / "admin-token"
    token_file.write_text("from-a-file-0123456789\n")
    token_file.chmod(0o600)
    monkeypatch.delenv("XCE_ADMIN_TOKEN", raising=False)
    monkeypatch.setenv("XCE_ADMIN_TOKEN_FILE", str(token_file))
    url, admin = start_admin(nats_url, redis_url, workdir)
    try:
        wrong = httpx.post(f"{url}/scheduler/record/stop", headers=_auth(), timeout=30)
        assert wrong.status_code == 401
        right = httpx.post(
            f"{url}/scheduler/record/stop",
            headers={"Authorization": "Bearer from-a-file-0123456789"},
            timeout=30,
        )
        assert right.status_code == 503  # past the token: no recorder runs here
    finally:
        assert admin.terminate() in (0, -15), admin.log_text()


def test_the_admin_server_refuses_a_recordings_folder_that_is_not_there(tmp_path: Path) -> None:
    """It only reads the folder: a missing one would list no recordings, answered 200."""
    missing = tmp_path / "no" / "such"
    done = admin_server_refusal("--recordings-dir", str(missing), token=TOKEN)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"xce-admin: error: --recordings-dir {missing}: no such folder " + (
        "(the recorder makes it; give the recorder's --recordings-dir)\n"
    )
    assert not missing.exists()


def test_the_admin_server_refuses_a_port_in_use_in_one_line(tmp_path: Path) -> None:
    with silent_port() as taken:
        done = admin_server_refusal(
            "--port", str(taken), "--recordings-dir", str(tmp_path), token=TOKEN
        )
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"xce-admin: error: --port {taken}: cannot listen on 127.0.0.1 port {taken}: "
        "address already in use\n"
    )


def test_the_admin_server_refuses_a_redis_login_refused_and_starts_without_redis(
    limited_redis: str, workdir: Path, nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrong password is one line naming the variables, exit 2; a Redis that does
    not answer at start is no reason to refuse (the admin degrades, /health says so)."""
    secret = workdir / "redis-password"
    secret.write_text("not-the-password")
    secret.chmod(0o600)
    done = admin_server_refusal(
        "--redis",
        limited_redis,
        "--recordings-dir",
        str(workdir),
        token=TOKEN,
        XCE_REDIS_USERNAME=LIMITED_USER,
        XCE_REDIS_PASSWORD_FILE=str(secret),
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"xce-admin: error: Redis at {limited_redis} refused the login")
    assert done.stderr.endswith(
        "check XCE_REDIS_USERNAME, XCE_REDIS_PASSWORD_FILE and the user's rights (ACL)\n"
    )
    assert done.stderr.count("\n") == 1 and "not-the-password" not in done.stderr
    monkeypatch.setenv("XCE_ADMIN_TOKEN", TOKEN)
    port = free_port()
    admin = ServiceProcess(
        nats_url,
        f"redis://127.0.0.1:{free_port()}/0",  # nothing listens there
        workdir / "admin.log",
        *("--port", str(port), "--recordings-dir", str(workdir)),
        program=[sys.executable, "-m", "xce_admin.server"],
    )

    def health() -> int | None:
        assert admin.exited() is None, admin.log_text()
        with contextlib.suppress(httpx.TransportError):
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code
        return None

    assert poll(health, "the admin API without Redis") == 503
    assert admin.terminate() == 0, admin.log_text()
