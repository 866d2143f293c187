"""The docker-compose topology run as local processes, and server restarts it survives.

Each XCE service runs as docker-compose.yml runs it: the command is read from the
file and only the addresses change (``nats://nats:4222`` and ``redis://redis:6379/0``
become the test's servers, the served ports free loopback ports, ``/recordings`` a
temporary folder). ``xce-sched emulate`` then plays a small workload at high speed
against the stack: every job ends, ``xceadmin`` shows the core's rounds and counts,
every service's ``/metrics`` answers with its families, a recording made meanwhile
replays without a mismatch, and SIGTERM stops every service cleanly.

Restarts: Redis killed (SIGKILL) and restarted with its append-only file while events
flow (the core schedules on, its checkpoints fail, then resume, and a crash after that
restarts from them), and NATS killed and restarted on its store while the bridge and
the emulator run. In both, the decisions on ``XCE_DECISIONS`` are, byte for byte,
those of an uninterrupted in-process ``SchedCore`` fed the same events, and no event
is lost or entered twice. The controller hop is at least once and de-duplicated both
ways (``XCE_CONTROLLER``, ``XCE_CTL_DECISIONS``: see ``xce_schemas.controller``), so
NATS may be killed at any moment; ``tests/live/test_bridge.py`` kills it while
submissions, job ends and decisions are in flight.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import redis.asyncio as aioredis
import yaml
from prometheus_client.parser import text_string_to_metric_families
from xce_schemas import CoreCheckpoint, CoreEvent, parse_decision, parse_event
from xce_schemas.admin import CORE_STATUS_KEY
from xce_schemas.bus import (
    CORE_CHECKPOINT_KEY,
    DECISIONS_STREAM,
    parse_decision_msg_id,
)

from tests.live.helpers import (
    Stored,
    acked_seq,
    assert_each_job_submitted_and_ended_once,
    connected,
    publish,
    read_events,
    read_stream,
    reference_decisions,
    run,
    scenario,
)
from tests.live.servers import ServerProcess, free_port, persistent_redis_server

pytestmark = [pytest.mark.nats, pytest.mark.redis]

ROOT = Path(__file__).resolve().parents[2]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
#: The console scripts of this installation (beside the interpreter, not a shim).
BIN = Path(sys.executable).parent
TOKEN = "stack-test-token"
#: How long a test waits for the stack, s (a loaded machine; the tests take ~10 s).
WAIT_S = 40.0
#: The addresses of docker-compose.yml the test replaces.
COMPOSE_NATS = "nats://nats:4222"
COMPOSE_REDIS = "redis://redis:6379/0"
COMPOSE_RECORDINGS = "/recordings"
#: The services of the stack, in start order (the emulator comes last, on its own).
SERVICES = ("core", "bridge", "recorder", "admin")


# --- the compose commands, with the test's addresses ---------------------------------------


@dataclass(frozen=True)
class Where:
    """Where the test's stack is: its servers, recordings folder and served ports."""

    nats_url: str
    redis_url: str
    recordings: Path
    ports: dict[str, int]


def compose_argv(service: str, where: Where) -> list[str]:
    """``service``'s command in docker-compose.yml, run from this installation, with
    NATS, Redis, the recordings folder, the served port (``--metrics-port`` or
    ``--port``) and the bind address (``--host``) replaced by the test's.

    Raises:
        AssertionError: a compose address is left in the command (the file changed).
    """
    script, *args = COMPOSE["services"][service]["command"]
    program = BIN / script
    argv = [str(program) if program.exists() else script]
    swap = {
        COMPOSE_NATS: where.nats_url,
        COMPOSE_REDIS: where.redis_url,
        COMPOSE_RECORDINGS: str(where.recordings),
    }
    option = None
    for arg in map(str, args):
        if option in ("--metrics-port", "--port"):
            argv.append(str(where.ports[service]))
        elif option == "--host":
            argv.append("127.0.0.1")
        else:
            argv.append(swap.get(arg, arg))
        option = arg
    left = [arg for arg in argv if "nats:4222" in arg or "redis:6379" in arg or arg in swap]
    assert not left, f"{service}: compose addresses left in {argv}"
    return argv


class Service:
    """One process of the stack, its output (stdout and stderr) in ``<name>.log``."""

    def __init__(
        self, name: str, argv: Sequence[str], folder: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = folder / f"{name}.log"
        with open(self.log, "ab") as handle:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=handle,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
            )

    def tail(self, chars: int = 3000) -> str:
        """The end of what it printed."""
        return self.log.read_text(errors="replace")[-chars:]

    def check_running(self) -> None:
        """Raises AssertionError, with its output's end, when it has exited."""
        code = self.proc.poll()
        assert code is None, f"{self.name} exited with status {code}:\n{self.tail()}"

    def terminate(self, timeout_s: float = 20.0) -> int:
        """SIGTERM it; its exit status (SIGKILL and AssertionError after ``timeout_s``)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise AssertionError(
                f"{self.name} ignored SIGTERM for {timeout_s} s:\n{self.tail()}"
            ) from None

    def kill(self) -> None:
        """SIGKILL it and wait for it to go."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


class Stack:
    """The processes a test started, stopped at the end (SIGKILL for those left), each
    one's output printed then: pytest shows it when the test fails."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: list[Service] = []

    def start(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None) -> Service:
        taken = sum(proc.name.split("-")[0] == name for proc in self.procs)
        service = Service(f"{name}-{taken + 1}" if taken else name, argv, self.folder, env)
        self.procs.append(service)
        return service

    def check_running(self) -> None:
        for service in self.procs:
            if service.name != "emulator":
                service.check_running()

    def close(self) -> None:
        for service in self.procs:
            service.kill()
        for service in self.procs:
            print(f"----- {service.name}: {' '.join(service.argv)}\n{service.tail()}")


@pytest.fixture
def stack(workdir: Path) -> Iterator[Stack]:
    """A ``Stack`` whose processes are killed at the end, their output printed."""
    procs = Stack(workdir)
    try:
        yield procs
    finally:
        procs.close()


def start_services(
    stack: Stack, nats_url: str, redis_url: str, names: Sequence[str] = SERVICES
) -> Where:
    """Start ``names`` as docker-compose.yml runs them, on the test's servers; return
    once the bridge emits rounds and (when started) the admin API sees the recorder."""
    where = Where(
        nats_url, redis_url, stack.folder / "recordings", {name: free_port() for name in SERVICES}
    )
    env = {**os.environ, "XCE_ADMIN_TOKEN": TOKEN}
    for name in names:
        stack.start(name, compose_argv(name, where), env if name == "admin" else None)

    def ready() -> bool:
        stack.check_running()
        if metric(where, "bridge", "xce_bridge_rounds_total") < 1:
            return False
        if "admin" in names:
            answer = httpx.get(admin_url(where) + "/scheduler/record/status", timeout=2)
            return bool(answer.json()["recorder_up"])
        return "core" not in names or metric(where, "core", "xce_core_rounds_total") >= 1

    poll(ready, "the stack to come up")
    return where


def emulator_argv(where: Where, *workload: str) -> list[str]:
    """The compose emulator's command on the test's NATS, with ``workload`` options
    after it (argparse: a later option wins)."""
    return [*compose_argv("emulator", where), *workload]


def admin_url(where: Where) -> str:
    return f"http://127.0.0.1:{where.ports['admin']}"


# --- polling and metrics -----------------------------------------------------------------


def poll(check: Callable[[], Any], what: str, timeout_s: float = WAIT_S) -> Any:
    """Call ``check`` every 50 ms until it returns something true; that value.
    Connection errors count as not yet.

    Raises:
        AssertionError: naming ``what`` after ``timeout_s``; or what ``check`` raised.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = check()
        except (httpx.HTTPError, OSError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(where: Where, service: str) -> Samples:
    """Every sample of ``service``'s ``/metrics`` (``--metrics-port``, or the admin
    API's port), keyed by name and labels."""
    answer = httpx.get(f"http://127.0.0.1:{where.ports[service]}/metrics", timeout=5)
    answer.raise_for_status()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def metric(where: Where, service: str, name: str, **labels: str) -> float:
    """One sample of ``service``'s ``/metrics`` (0 when absent)."""
    return scrape(where, service).get((name, frozenset(labels.items())), 0.0)


def names_of(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


# --- the bus read back -------------------------------------------------------------------


def read_back(nats_url: str) -> tuple[list[Stored], list[Stored]]:
    """``(XCE_EVENTS, XCE_DECISIONS)``, every message in order."""

    async def read() -> tuple[list[Stored], list[Stored]]:
        async with connected(nats_url) as js:
            return await read_events(js), await read_stream(js, DECISIONS_STREAM)

    return run(read())


def core_acked(nats_url: str) -> int:
    async def read() -> int:
        async with connected(nats_url) as js:
            return await acked_seq(js)

    return run(read())


def assert_no_event_lost_or_repeated(events: list[Stored], jobs: int) -> list[CoreEvent]:
    """``events`` hold one configuration, one host list, each of jobs 1..``jobs``
    submitted once and ended (DONE or EXIT) once, ``ts`` never going back, no message
    id twice; the events parsed."""
    parsed = [parse_event(s.data) for s in events]
    assert_each_job_submitted_and_ended_once(parsed, jobs)
    assert len({s.msg_id for s in events}) == len(events), "a message id twice"
    return parsed


def assert_exact(stored: list[Stored], expected: list[bytes]) -> None:
    """The decision stream is ``expected``, each once, in order, ids in order."""
    assert [s.data for s in stored] == expected
    for got in stored:
        assert got.subject == f"xce.decisions.{parse_decision(orjson.loads(got.data)).op}"
    ids = [i for s in stored if (i := parse_decision_msg_id(s.msg_id or "")) is not None]
    assert len(ids) == len(stored), "a decision without a core's message id"
    assert ids == sorted(ids) and len(set(ids)) == len(ids), "ids out of order or repeated"


def summary_rows(out: str) -> dict[str, str]:
    """The rows of the ``simulate``/``emulate`` summary table."""
    return {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in out.splitlines()
        if line.count("│") == 3
    }


def xceadmin(where: Where, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``xceadmin`` console script against the stack's admin API."""
    env = {**os.environ, "XCE_ADMIN_URL": admin_url(where), "XCE_ADMIN_TOKEN": TOKEN}
    program = BIN / "xceadmin"
    return subprocess.run(
        [str(program) if program.exists() else "xceadmin", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def assert_replays_without_mismatch(recording: Path) -> None:
    """``xce-sched replay RECORDING --sim-verify`` finds 0 mismatches."""
    replayed = subprocess.run(
        [str(BIN / "xce-sched"), "replay", str(recording), "--sim-verify"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "0 mismatches" in replayed.stdout


# --- the whole stack -----------------------------------------------------------------------


def test_the_compose_stack_runs_a_workload_as_local_processes(
    bus: tuple[str, str], stack: Stack, tmp_path: Path
) -> None:
    nats_url, redis_url = bus
    where = start_services(stack, nats_url, redis_url)
    started = xceadmin(where, "scheduler", "record", "start", "stack")
    assert started.returncode == 0, started.stderr
    jobs = 24
    emulator = subprocess.run(
        emulator_argv(where, "--jobs", str(jobs), "--hosts", "12", "--speed", "20000"),
        capture_output=True,
        text=True,
        timeout=WAIT_S + 20,
        check=False,
    )
    assert emulator.returncode == 0, emulator.stdout + emulator.stderr
    rows = summary_rows(emulator.stdout)
    assert rows["jobs"] == f"{jobs} total, {jobs} finished", emulator.stdout
    stack.check_running()

    def idle() -> Any:
        core = httpx.get(admin_url(where) + "/scheduler/status", timeout=2).json()["core"]
        return core and core["pending"] == core["running"] == core["suspended"] == 0

    poll(idle, "a round that finds every job ended")
    status = xceadmin(where, "scheduler", "status")
    assert status.returncode == 0, status.stderr
    core_line, recorder_line = status.stdout.splitlines()
    assert core_line.startswith("core: event seq "), status.stdout
    assert "last round at ts " in core_line
    assert "jobs pending 0, running 0, suspended 0" in core_line
    assert recorder_line.startswith("recorder: recording stack.jsonl.gz"), status.stdout

    stopped = xceadmin(where, "scheduler", "record", "stop")
    assert stopped.returncode == 0, stopped.stderr

    def exported() -> bool:
        listed = xceadmin(where, "scheduler", "recordings")
        return listed.returncode == 0 and listed.stdout.startswith("stack.jsonl.gz\t")

    poll(exported, "the recording to be exported")
    bridged = scrape(where, "bridge")
    bridge = stack.procs[1]
    assert bridge.terminate() == 0, bridge.tail()  # publishes what it stamped first
    events, _ = read_back(nats_url)
    poll(lambda: core_acked(nats_url) >= events[-1].seq, "the core to handle every event")
    events, decisions = read_back(nats_url)

    # The live path is the same core: the very events give the very decisions.
    parsed = assert_no_event_lost_or_repeated(events, jobs)
    assert_exact(decisions, reference_decisions(parsed))
    dispatches = sum(b'"op":"DISPATCH"' in s.data for s in decisions)
    assert dispatches == jobs

    core = scrape(where, "core")
    rounds = sum(event.type == "BEGIN_ROUND" for event in parsed)
    assert core[("xce_core_rounds_total", frozenset())] == rounds > 0
    assert core[("xce_core_events_total", frozenset())] == len(events)
    assert core[("xce_core_decisions_total", frozenset({("op", "DISPATCH")}))] == dispatches
    assert "xce_core_round_duration_seconds_bucket" in names_of(core)
    recorder = scrape(where, "recorder")
    assert recorder[("xce_recorder_recordings_total", frozenset())] == 1
    assert recorder[("xce_recorder_lines_written_total", frozenset())] > 0
    assert {"xce_recorder_recording", "xce_recorder_snapshots_total"} <= names_of(recorder)
    admin = scrape(where, "admin")
    ok = frozenset({("endpoint", "/scheduler/status"), ("status", "200")})
    assert admin[("xce_admin_requests_total", ok)] >= 1
    assert "xce_admin_request_duration_seconds_bucket" in names_of(admin)
    # The bridge's, read before its stop: every DISPATCH reached the emulator.
    assert bridged[("xce_bridge_messages_total", frozenset({("kind", "job_state")}))] == jobs
    forwarded = ("xce_bridge_decisions_forwarded_total", frozenset({("op", "DISPATCH")}))
    assert bridged[forwarded] == jobs
    assert bridged[("xce_bridge_rounds_total", frozenset())] >= 1
    assert "xce_bridge_event_publish_seconds_bucket" in names_of(bridged)

    for service in stack.procs[:3]:  # core, bridge (stopped already), recorder
        assert service.terminate() == 0, service.tail()
    # uvicorn shuts down cleanly, then re-raises the SIGTERM it caught (README).
    assert stack.procs[3].terminate() in (0, -signal.SIGTERM), stack.procs[3].tail()

    assert_replays_without_mismatch(where.recordings / "stack.jsonl.gz")


# --- restarts --------------------------------------------------------------------------------


@pytest.fixture
def aof_redis(redis_server_proc: ServerProcess, tmp_path: Path) -> Iterator[ServerProcess]:
    """A Redis server of its own with an append-only file (as docker-compose.yml runs
    it), on a free port; ``restart`` kills it (SIGKILL) and starts it on the same file."""
    server = persistent_redis_server(tmp_path / "redis-aof", redis_server_proc.argv[0])
    server.start()
    yield server
    server.stop()


def redis_get(redis_url: str, key: str, field: str | None = None) -> bytes | None:
    """A string key (or one field of a hash) of Redis, None when absent."""

    async def get() -> bytes | None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            value = await (client.get(key) if field is None else client.hget(key, field))
            return value if isinstance(value, bytes) else None
        finally:
            await client.aclose()

    return run(get())


def checkpoint_seq(redis_url: str) -> int:
    """The event sequence the core's checkpoint covers (0: none)."""
    raw = redis_get(redis_url, CORE_CHECKPOINT_KEY)
    return 0 if raw is None else CoreCheckpoint.model_validate_json(raw).seq


def publish_events(nats_url: str, events: Sequence[CoreEvent]) -> list[int]:
    async def send() -> list[int]:
        async with connected(nats_url) as js:
            return await publish(js, events)

    return run(send())


def test_the_core_service_rides_out_a_redis_kill_and_restart(
    bus: tuple[str, str], aof_redis: ServerProcess, stack: Stack
) -> None:
    nats_url, _ = bus
    redis_url = aof_redis.url + "/0"
    events = scenario(rounds=16, seed=3)
    expected = reference_decisions(events)
    a, b, c = len(events) // 4, len(events) // 2, 3 * len(events) // 4
    where = Where(nats_url, redis_url, stack.folder, {"core": free_port()})
    # The compose command, checkpointing often so that writes fail while Redis is down.
    argv = [*compose_argv("core", where), "--snapshot-every", "3", "--snapshot-seconds", "0.2"]
    core = stack.start("core", argv)

    def handled(seq: int) -> Callable[[], bool]:
        def check() -> bool:
            core.check_running()
            return core_acked(nats_url) >= seq

        return check

    publish_events(nats_url, events[:a])
    poll(lambda: handled(a)() and checkpoint_seq(redis_url) == a, "a checkpoint of the start")
    aof_redis.kill()
    # Redis is down: scheduling goes on, the checkpoints and status writes fail.
    publish_events(nats_url, events[a:b])
    poll(handled(b), "the core to handle events with Redis down")
    assert metric(where, "core", "xce_core_checkpoint_failures_total") >= 1
    assert metric(where, "core", "xce_core_checkpoint_seq") == a
    decisions = read_back(nats_url)[1]
    assert [s.data for s in decisions] == expected[: len(decisions)]
    assert len(decisions) > len(reference_decisions(events[:a]))

    aof_redis.start()  # same port, same append-only file
    assert checkpoint_seq(redis_url) >= a, "the checkpoint acknowledged before the kill is lost"
    publish_events(nats_url, events[b:c])
    poll(lambda: checkpoint_seq(redis_url) == c, "the checkpoints to be written again")
    status_seq = redis_get(redis_url, CORE_STATUS_KEY, "seq")
    assert status_seq is not None and int(status_seq) >= b, "the status is not written again"
    # A crash now restarts from the checkpoint written after Redis came back.
    core.kill()
    core = stack.start("core", argv)
    publish_events(nats_url, events[c:])
    poll(handled(len(events)), "the restarted core to handle every event")
    assert core.terminate() == 0, core.tail()
    assert checkpoint_seq(redis_url) == len(events)
    assert_exact(read_back(nats_url)[1], expected)


def waves_trace(path: Path) -> Path:
    """An SWF trace for four 1-slot hosts: jobs 1-4 run 400 s from 0; jobs 5-8, also
    submitted at 0, wait for them and run 100 s; jobs 9-10 come at 700 s, run 100 s.
    At a speed of 100 the cluster is quiet for 4 s after the first dispatches: no
    submission, no job ending."""
    lines = ["; MaxProcs: 4", "; UnixStartTime: 0"]
    for number, submit, run_s in [
        *((n, 0, 400) for n in range(1, 5)),
        *((n, 0, 100) for n in range(5, 9)),
        *((n, 700, 100) for n in (9, 10)),
    ]:
        fields = [number, submit, -1, run_s, 1, -1, -1, 1, run_s, -1, 1, 1, 1, 1, 1, 1, -1, -1]
        lines.append(" ".join(map(str, fields)))
    path.write_text("\n".join(lines) + "\n")
    return path


def play_waves(stack: Stack, where: Where, tmp_path: Path, disrupt: Callable[[], None]) -> int:
    """Play ``waves_trace`` with the emulator through the stack's core and bridge
    (``stack.procs[:2]``), call ``disrupt`` right after the first four jobs are
    dispatched and forwarded, and return once the emulator has finished every job
    (exit status 0) and the bridge is stopped cleanly; when ``disrupt`` returned,
    wall ns."""
    trace = waves_trace(tmp_path / "waves.swf")
    argv = emulator_argv(where, "--workload", str(trace), "--hosts", "4", "--speed", "100")
    emulator = stack.start("emulator", [*argv, "--timeout", str(WAIT_S)])

    def dispatched() -> bool:
        stack.check_running()
        assert emulator.proc.poll() is None, emulator.tail()
        op = {"op": "DISPATCH"}
        return metric(where, "bridge", "xce_bridge_decisions_forwarded_total", **op) >= 4

    poll(dispatched, "the first four jobs to be dispatched and forwarded")
    disrupt()
    disrupted_ns = time.time_ns()
    try:
        code = emulator.proc.wait(timeout=WAIT_S + 10)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the emulator hangs:\n{emulator.tail()}") from None
    assert code == 0, emulator.tail()
    assert summary_rows(emulator.tail(10_000))["jobs"] == "10 total, 10 finished"
    stack.check_running()
    assert stack.procs[1].terminate() == 0, stack.procs[1].tail()  # the bridge
    return disrupted_ns


def waves_decisions(
    stack: Stack, where: Where, nats_url: str
) -> tuple[list[CoreEvent], list[Stored]]:
    """After ``play_waves``: wait for the core (``stack.procs[0]``) to handle every
    event, stop it cleanly, and check that no event was lost or repeated and that the
    decisions are exactly those of an uninterrupted in-process core; the events
    (parsed) and the decisions, read from ``nats_url``."""
    events = read_back(nats_url)[0]
    # The core's last event handled, not its consumer's ack floor: an acknowledgement
    # lost in a disruption holds the floor back until the event is delivered again
    # (ack wait), though the core handled it.
    last = events[-1].seq
    poll(lambda: metric(where, "core", "xce_core_event_seq") >= last, "the core to catch up")
    core = stack.procs[0]
    assert core.terminate() == 0, core.tail()
    events, decisions = read_back(nats_url)
    parsed = assert_no_event_lost_or_repeated(events, 10)
    assert_exact(decisions, reference_decisions(parsed))
    return parsed, decisions


def test_the_stack_rides_out_a_nats_server_restart_while_the_emulator_runs(
    bus: tuple[str, str],
    nats_server_proc: ServerProcess,
    restart_nats: Callable[[], None],
    stack: Stack,
    tmp_path: Path,
) -> None:
    nats_url, redis_url = bus
    where = start_services(stack, nats_url, redis_url, names=("core", "bridge"))
    starts = nats_server_proc.starts

    def restart() -> None:
        restart_nats()  # SIGKILL, then the same port and store
        assert nats_server_proc.starts == starts + 1

    # Killed right after the first dispatches are forwarded: some may not have reached
    # the emulator yet (it reads them from XCE_CTL_DECISIONS, durably).
    restarted_ns = play_waves(stack, where, tmp_path, restart)
    parsed, decisions = waves_decisions(stack, where, nats_url)
    # Every job ended, and jobs 9-10 were submitted, through the restarted server.
    after = [e for e in parsed if e.type in ("JOB_STATE_CHANGE", "JOBS_PUSH")]
    assert sum(e.ts > restarted_ns for e in after) == len(after) - 1  # all but jobs 1-8
    dispatched_jobs = [parse_decision(orjson.loads(s.data)) for s in decisions]
    assert sorted(d.jobid for d in dispatched_jobs if d.op == "DISPATCH") == list(range(1, 11))
