"""The docker-compose stack with the bus authenticated, run as local processes: each
service with the environment docker-compose.yml gives it (its own seed, Redis user
and password file: ``/run/xce`` is its folder of ``xce-bus-config``'s output), on a
nats-server and a redis-server started with the generated configuration.

The emulator plays a workload to its end, a recording is made and replays without a
mismatch, the decisions on ``XCE_DECISIONS`` are byte for byte those of an in-process
``SchedCore`` fed the same events (what the stack decides without authentication,
``test_stack.py``), and no service was refused anything on the way.
"""

from __future__ import annotations

import os
import subprocess

import httpx
import pytest

from tests.live.helpers import reference_decisions
from tests.live.secured import SecuredBus, act_as
from tests.live.servers import free_port
from tests.live.test_stack import (
    SERVICES,
    TOKEN,
    WAIT_S,
    Stack,
    Where,
    admin_url,
    assert_exact,
    assert_no_event_lost_or_repeated,
    assert_replays_without_mismatch,
    compose_argv,
    emulator_argv,
    metric,
    poll,
    read_back,
    stack,  # noqa: F401 (the fixture)
    summary_rows,
    xceadmin,
)
from tests.test_compose import SERVICES as COMPOSE_SERVICES
from tests.test_compose import secrets_volume

pytestmark = [pytest.mark.nats, pytest.mark.redis]


def compose_env(service: str, bus: SecuredBus) -> dict[str, str]:
    """``service``'s environment in docker-compose.yml with its secrets folder
    (``/run/xce``) the folder of its role in ``bus``, over this process's environment
    without any XCE credential."""
    _, role = secrets_volume(service)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XCE_NATS_", "XCE_REDIS_"))}
    for key, value in COMPOSE_SERVICES[service]["environment"].items():
        env[key] = (
            TOKEN
            if key == "XCE_ADMIN_TOKEN"
            else value.replace("/run/xce", str(bus.secrets / role))
        )
    return env


def test_the_compose_stack_runs_with_auth_on_and_decides_as_without(
    secured: SecuredBus,
    stack: Stack,  # noqa: F811 (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    where = Where(
        secured.nats_url,
        secured.redis_url,
        stack.folder / "recordings",
        {name: free_port() for name in SERVICES},
    )
    for name in SERVICES:
        stack.start(name, compose_argv(name, where), compose_env(name, secured))

    def ready() -> bool:
        stack.check_running()
        if metric(where, "bridge", "xce_bridge_rounds_total") < 1:
            return False
        answer = httpx.get(admin_url(where) + "/scheduler/record/status", timeout=2)
        return bool(answer.json()["recorder_up"])

    poll(ready, "the authenticated stack to come up")
    started = xceadmin(where, "scheduler", "record", "start", "secured")
    assert started.returncode == 0, started.stderr

    jobs = 24
    emulator = subprocess.run(
        emulator_argv(where, "--jobs", str(jobs), "--hosts", "12", "--speed", "20000"),
        env=compose_env("emulator", secured),
        capture_output=True,
        text=True,
        timeout=WAIT_S + 20,
        check=False,
    )
    assert emulator.returncode == 0, emulator.stdout + emulator.stderr
    assert summary_rows(emulator.stdout)["jobs"] == f"{jobs} total, {jobs} finished"

    stopped = xceadmin(where, "scheduler", "record", "stop")
    assert stopped.returncode == 0, stopped.stderr

    def exported() -> bool:
        listed = xceadmin(where, "scheduler", "recordings")
        return listed.returncode == 0 and listed.stdout.startswith("secured.jsonl.gz\t")

    poll(exported, "the recording to be exported")
    bridge = stack.procs[1]
    assert bridge.terminate() == 0, bridge.tail()

    act_as(secured, "ops", monkeypatch)  # this process reads the streams back as ops
    events, _ = read_back(secured.nats_url)

    def handled() -> bool:
        return metric(where, "core", "xce_core_events_total") >= len(events)

    poll(handled, "the core to handle every event")
    events, decisions = read_back(secured.nats_url)
    parsed = assert_no_event_lost_or_repeated(events, jobs)
    assert_exact(decisions, reference_decisions(parsed))
    assert sum(b'"op":"DISPATCH"' in s.data for s in decisions) == jobs

    for service in stack.procs:
        assert "permissions violation" not in service.tail(10**7).lower(), service.name
    assert_replays_without_mismatch(where.recordings / "secured.jsonl.gz")
