"""The controller bridge and the cluster emulator over NATS, against real servers.

End to end: ``xce-sched emulate`` (controller and hosts) → ``xce.ctl.*`` → the bridge
→ ``XCE_EVENTS`` → the core service → ``XCE_DECISIONS`` → the bridge →
``xce.ctl.decisions.*`` → the emulator, until every job finished or was rejected;
the decisions on the stream are, byte for byte, those of an in-process ``SchedCore``
fed the very events read back from ``XCE_EVENTS`` (the live path is the same core),
and no host ever holds more than its slots. Bad controller messages are
dead-lettered while the bridge goes on; ``ts`` never goes back, not across a clock
stepping back, a bridge restart, another publisher or a NATS server restart. The
controller hop is at least once and de-duplicated: NATS killed three times while
jobs are submitted and end loses no submission, no end and no decision, and a
controller message delivered again after a bridge restart is not a second event.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import orjson
import pytest
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig
from xce_core.core import SchedCore
from xce_driver.live.bridge import Bridge, BridgeOptions, decode_ctl
from xce_driver.live.controller_bus import ensure_ctl_streams
from xce_driver.live.core_service import CoreService, CoreServiceOptions
from xce_driver.live.emulate import LiveEmulator
from xce_driver.workloads.mapping import SimJob
from xce_kit.reader import Delivered
from xce_kit.streams import ensure_streams
from xce_schemas import (
    CoreEvent,
    DeadLetter,
    Decision,
    Dispatch,
    HostSpec,
    JobState,
    QueueSpec,
    SchedulerConfig,
    dump_decision,
    parse_event,
)
from xce_schemas.alloc import HostAlloc, JobAlloc
from xce_schemas.bus import DEADLETTER_STREAM, DECISIONS_STREAM, EVENTS_STREAM, MSG_ID_HEADER
from xce_schemas.controller import (
    BRIDGE_CTL_DURABLE,
    CTL_DECISIONS_STREAM,
    CTL_DECISIONS_SUBJECTS,
    CTL_STREAM,
    DECISION_ID_HEADER,
    ctl_msg_id,
    ctl_subject,
)

from tests.live.helpers import (
    Stored,
    assert_each_job_submitted_and_ended_once,
    connected,
    events_last_seq,
    read_events,
    read_stream,
    reference_decisions,
    run,
    scenario,
    wait_until,
)
from tests.live.servers import accepts, free_port

pytestmark = [pytest.mark.nats, pytest.mark.redis]

NS = 1_000_000_000


def swf_trace(path: Path, jobs: int = 30, seed: int = 5) -> Path:
    """A small SWF trace: ``jobs`` jobs over 300 s, 1-4 processors, 20-200 s each,
    queue 1 (``urgent``) for every fifth job, and one job of 100 processors, larger
    than any cluster the tests use."""
    rng = random.Random(seed)
    lines = ["; MaxProcs: 8", "; UnixStartTime: 0"]
    for number in range(1, jobs + 1):
        submit = (number - 1) * 300 // jobs
        procs = 100 if number == 7 else rng.randint(1, 4)
        run_s = rng.randint(20, 200)
        queue = 1 if number % 5 == 0 else 2
        fields = [number, submit, -1, run_s, procs, -1, -1, procs, run_s, -1, 1, 1, 1, 1]
        lines.append(" ".join(map(str, [*fields, queue, 1, -1, -1])))
    path.write_text("\n".join(lines) + "\n")
    return path


def queue_file(path: Path) -> Path:
    """``urgent`` preempts ``normal``; ``normal`` jobs are killed after 150 s."""
    queues = [
        {"name": "urgent", "priority": 100, "preemptible_queues": ["normal"]},
        {"name": "normal", "priority": 30, "preemptible": True, "run_limit_s": 150},
    ]
    path.write_bytes(orjson.dumps(queues))
    return path


def events_of(stored: list[Stored]) -> list[CoreEvent]:
    return [parse_event(s.data) for s in stored]


def occupancy_never_exceeds_capacity(events: list[CoreEvent]) -> Iterator[Decision]:
    """Feed ``events`` to an in-process core and follow every host's slots through
    its decisions and the job state changes; yields each decision.

    Raises:
        AssertionError: a host holds more slots than it has, naming it and when.
    """
    out: list[Decision] = []
    core = SchedCore(on_decision=out.append, prng_seed=0)
    capacity: dict[str, int] = {}
    allocs: dict[int, Counter[str]] = {}
    held: dict[int, Counter[str]] = {}
    used: Counter[str] = Counter()
    for event in events:
        if event.type == "WORKERS_PUSH":
            capacity.update({host.name: host.slots for host in event.payload.hosts})
        elif event.type == "JOB_STATE_CHANGE" and event.payload.state in (
            JobState.DONE,
            JobState.EXIT,
            JobState.SUSP,
        ):
            used.subtract(held.pop(event.payload.jobid, Counter()))
        out.clear()
        core.push_event(event)
        for decision in out:
            if isinstance(decision, Dispatch):
                slots = Counter(host.host for host in decision.alloc.hosts)
                allocs[decision.jobid] = slots
                held[decision.jobid] = slots
                used.update(slots)
            elif decision.op == "RESUME":
                held[decision.jobid] = allocs[decision.jobid]
                used.update(allocs[decision.jobid])
            for host, n in used.items():
                assert n <= capacity[host], f"{host} holds {n} > {capacity[host]} at ts {event.ts}"
            yield decision


async def start_services(
    nats_url: str, redis_url: str, round_interval_s: float = 0.05
) -> tuple[CoreService, Bridge, list[asyncio.Task[None]]]:
    """An in-process core service and bridge, the bridge listening."""
    core = CoreService(CoreServiceOptions(nats_url=nats_url, redis_url=redis_url))
    bridge = Bridge(BridgeOptions(nats_url=nats_url, round_interval_s=round_interval_s))
    tasks = [asyncio.create_task(core.run()), asyncio.create_task(bridge.run())]

    async def ready() -> bool:
        for task in tasks:
            if task.done():
                task.result()
        return bridge.ready.is_set()

    await wait_until(ready, "the bridge to listen")
    return core, bridge, tasks


async def stop_services(core: CoreService, bridge: Bridge, tasks: list[asyncio.Task[None]]) -> None:
    """Stop the bridge once it has done every controller message stored (an
    emulator's last one may still be on its way when the emulator exits), then the
    core once it has handled every event."""
    async with connected(core.options.nats_url) as js:
        ctl_last = (await js.stream_info(CTL_STREAM)).state.last_seq or 0

    async def bridged() -> bool:
        return bridge.controller_done >= ctl_last

    await wait_until(bridged, "the bridge to take every controller message")
    bridge.stop()
    await tasks[1]
    last = await events_last_seq(core.options.nats_url)

    async def caught_up() -> bool:
        return core.seq >= last

    await wait_until(caught_up, "the core to handle every event")
    core.stop()
    await tasks[0]


def test_the_emulator_runs_a_workload_through_bridge_and_core(
    bus: tuple[str, str], tmp_path: Path
) -> None:
    nats_url, redis_url = bus
    trace = swf_trace(tmp_path / "small.swf")
    queues = queue_file(tmp_path / "queues.json")
    argv = [
        *("-m", "xce_driver.cli", "emulate", "--workload", str(trace), "--nats", nats_url),
        *("--hosts", "4", "--slots-per-host", "2", "--speed", "150", "--timeout", "60"),
        *("--swf-queues", "1=urgent:100,*=normal:30", "--queues", str(queues)),
    ]

    async def go() -> tuple[int, str, str, list[Stored], list[Stored]]:
        core, bridge, tasks = await start_services(nats_url, redis_url)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 90)
        await stop_services(core, bridge, tasks)
        async with connected(nats_url) as js:
            events = await read_events(js)
            decisions = await read_stream(js, DECISIONS_STREAM)
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode(), events, decisions

    code, out, err, events, decisions = run(go())
    assert code == 0, out + err
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in out.splitlines()
        if line.count("│") == 3
    }
    assert rows["jobs"] == "30 total, 29 finished", out
    assert rows["skipped / rejected / never started"] == "0 / 1 / 0", out
    assert rows["wait mean / median / max"] != "n/a"
    assert "wall time" in rows
    # The live path is the same core: the very events, fed in-process, give the
    # very decisions, byte for byte, in order.
    parsed = events_of(events)
    assert [d.data for d in decisions] == reference_decisions(parsed)
    assert all(s.msg_id and s.msg_id.startswith("xce-bridge:") for s in events)
    timestamps = [event.ts for event in parsed]
    assert timestamps == sorted(timestamps), "ts went back"
    made = list(occupancy_never_exceeds_capacity(parsed))
    ops = Counter(d.op for d in made)
    assert ops["DISPATCH"] >= 29
    assert ops["PREEMPT"] >= 1 and ops["RESUME"] >= 1, ops  # urgent jobs preempt normal ones
    states = Counter(e.payload.state for e in parsed if e.type == "JOB_STATE_CHANGE")
    assert states[JobState.DONE] + states[JobState.EXIT] == 30  # 29 ended, 1 rejected
    assert states[JobState.SUSP] >= 1
    # Each job was submitted once, stamped by the bridge.
    submitted = [j for e in parsed if e.type == "JOBS_PUSH" for j in e.payload.jobs]
    assert sorted(j.jobid for j in submitted) == list(range(1, 31))
    assert all(j.submit_ts == e.ts for e in parsed if e.type == "JOBS_PUSH" for j in e.payload.jobs)


BAD_MESSAGES = [  # subject, data, the reason's start
    ("xce.ctl.jobs", b"not json", "jobs rejected: message: Invalid JSON"),
    (
        "xce.ctl.jobs",
        b'{"jobs": []}',
        "jobs rejected: jobs: List should have at least 1 item, not 0",
    ),
    (
        "xce.ctl.jobs",
        b'{"jobs": [{"jobid": 1, "queue": "normal", "submit_ts": 5}]}',
        "jobs rejected: jobs[0].submit_ts: Extra inputs are not permitted",
    ),
    (
        "xce.ctl.job_state",
        b'{"jobid": 1, "state": "FLYING"}',
        "job_state rejected: state: Input should be",
    ),
    ("xce.ctl.hosts", b'{"hosts": [{"name": "h 1", "slots": 1}]}', "hosts rejected: hosts[0].name"),
    ("xce.ctl.config", b'{"config": {}, "ts": 5}', "config rejected: ts: Extra inputs"),
    ("xce.ctl.nosuch", b"{}", "subject 'xce.ctl.nosuch' names no controller kind"),
    ("xce.ctl.decisions", b"{}", "subject 'xce.ctl.decisions' names no controller kind"),
    ("xce.ctl.queue", b"\xff\xfe", "queue rejected: message: Invalid JSON"),
]


@pytest.mark.parametrize(
    ("subject", "data", "reason"), BAD_MESSAGES, ids=[r for _, _, r in BAD_MESSAGES]
)
def test_decode_ctl_names_the_kind_and_field(subject: str, data: bytes, reason: str) -> None:
    decoded = decode_ctl(subject, data)
    assert isinstance(decoded, str) and decoded.startswith(reason), decoded


def test_bad_controller_messages_go_to_the_dead_letter_and_the_bridge_goes_on(
    bus: tuple[str, str],
) -> None:
    nats_url, _ = bus
    good_config = b'{"config": {"queues": [{"name": "normal"}]}}'
    good_job = b'{"jobs": [{"jobid": 1, "queue": "normal"}]}'

    async def go() -> tuple[list[Stored], list[Stored], Bridge]:
        bridge = Bridge(BridgeOptions(nats_url=nats_url, round_interval_s=3600))
        task = asyncio.create_task(bridge.run())
        await wait_until(lambda: _is_set(bridge.ready, task), "the bridge to listen")
        async with connected(nats_url) as js:
            nc = js._nc
            await nc.publish("xce.ctl.config", good_config)
            for subject, data, _ in BAD_MESSAGES:
                await nc.publish(subject, data)
            await nc.publish("xce.ctl.jobs", good_job)
            await nc.flush()

            async def through() -> bool:
                return bridge.published == 2 and bridge.metrics.dead_letters._value.get() == len(
                    BAD_MESSAGES
                )

            await wait_until(through, "both good messages on the stream")
            bridge.stop()
            await task
            return (
                await read_events(js),
                await read_stream(js, DEADLETTER_STREAM),
                bridge,
            )

    events, letters, bridge = run(go())
    assert [s.subject for s in events] == ["xce.events.CONFIG_PUSH", "xce.events.JOBS_PUSH"]
    job = parse_event(events[1].data)
    assert job.type == "JOBS_PUSH" and job.payload.jobs[0].submit_ts == job.ts
    assert [s.subject for s in letters] == ["xce.deadletter.bridge"] * len(BAD_MESSAGES)
    seqs = []
    for stored, (subject, data, reason) in zip(letters, BAD_MESSAGES, strict=True):
        letter = DeadLetter.model_validate_json(stored.data)
        assert letter.subject == subject
        assert letter.reason.startswith(reason), letter.reason
        assert letter.data == data.decode("utf-8", errors="backslashreplace")
        seqs.append(letter.seq)
    # Each names its XCE_CONTROLLER sequence, in the order sent.
    assert None not in seqs and seqs == sorted(set(seqs)), seqs
    sample = bridge.metrics.registry.get_sample_value
    assert sample("xce_bridge_dead_letters_total") == len(BAD_MESSAGES)
    assert sample("xce_bridge_messages_total", {"kind": "jobs"}) == 4
    assert sample("xce_bridge_messages_total", {"kind": "unknown"}) == 2
    assert sample("xce_bridge_events_total", {"type": "JOBS_PUSH"}) == 1
    assert sample("xce_bridge_event_publish_seconds_count") == 2


def _is_set(event: asyncio.Event, task: asyncio.Task[None]) -> Awaitable[bool]:
    async def check() -> bool:
        if task.done():
            task.result()
        return event.is_set()

    return check()


def test_a_valid_message_whose_event_is_too_big_for_the_bus_is_dead_lettered(
    bus: tuple[str, str],
) -> None:
    """9,000 jobs in one message (about 300 KB) make a core event of more than the
    1 MiB NATS carries: published, it was refused for ever and held up every message
    after it (across restarts too). It is dead-lettered with the reason; the next
    message goes through."""
    nats_url, _ = bus
    many = orjson.dumps({"jobs": [{"jobid": i, "queue": "normal"} for i in range(1, 9001)]})
    assert len(many) < 1024 * 1024

    async def go() -> tuple[list[Stored], list[Stored]]:
        bridge = Bridge(BridgeOptions(nats_url=nats_url, round_interval_s=3600))
        task = asyncio.create_task(bridge.run())
        await wait_until(lambda: _is_set(bridge.ready, task), "the bridge to listen")
        async with connected(nats_url) as js:
            await js.publish("xce.ctl.jobs", many)
            await js.publish("xce.ctl.jobs", b'{"jobs": [{"jobid": 9001, "queue": "normal"}]}')

            async def through() -> bool:
                return bridge.published == 1 and bridge.controller_done == 2

            await wait_until(through, "the small message on the stream")
            bridge.stop()
            await task
            return await read_events(js), await read_stream(js, DEADLETTER_STREAM)

    events, letters = run(go())
    assert [parse_event(e.data).payload.jobs[0].jobid for e in events] == [9001]
    (letter,) = [DeadLetter.model_validate_json(stored.data) for stored in letters]
    assert letter.subject == "xce.ctl.jobs" and letter.seq == 1
    assert letter.reason.startswith("jobs rejected: its core event is "), letter.reason
    assert "one message on the bus can carry: send it in smaller messages" in letter.reason


def test_ts_never_goes_back_across_clock_steps_restarts_and_other_publishers(
    bus: tuple[str, str],
) -> None:
    nats_url, _ = bus
    base = 1_700_000_000 * NS
    # The clock steps back by a minute after the second reading.
    readings = iter([base, base + 10, base - 60 * NS, base - 59 * NS, base + 20])
    job = b'{"jobid": %d, "state": "DONE"}'

    async def publish_and_wait(bridge: Bridge, task: asyncio.Task[None], count: int) -> None:
        async with connected(nats_url) as js:
            for jobid in range(count):
                await js._nc.publish("xce.ctl.job_state", job % jobid)
            await js._nc.flush()

        async def through() -> bool:
            if task.done():
                task.result()
            return bridge.published >= count

        await wait_until(through, f"{count} events on the stream")

    async def go() -> list[Stored]:
        options = BridgeOptions(nats_url=nats_url, round_interval_s=3600)
        first = Bridge(options, clock=lambda: next(readings))
        task = asyncio.create_task(first.run())
        await wait_until(lambda: _is_set(first.ready, task), "the first bridge")
        await publish_and_wait(first, task, 5)
        first.stop()
        await task
        async with connected(nats_url) as js:  # another publisher writes in between
            await js.publish("xce.events.BEGIN_ROUND", b'{"type":"BEGIN_ROUND","ts":0}')
        # A restarted bridge whose clock is an hour behind goes on from the stream.
        second = Bridge(options, clock=lambda: base - 3600 * NS)
        task = asyncio.create_task(second.run())
        await wait_until(lambda: _is_set(second.ready, task), "the second bridge")
        await publish_and_wait(second, task, 3)
        second.stop()
        await task
        async with connected(nats_url) as js:
            return await read_events(js)

    stored = run(go())
    ts = [parse_event(s.data).ts for s in stored]
    assert ts[:5] == [base, base + 10, base + 10, base + 10, base + 20]
    assert ts[5] == 0  # the other publisher's event
    # The restarted bridge read the stream's last event (the foreign one, ts 0) and
    # its own clock: an hour behind the first bridge, but never behind the stream.
    assert ts[6:] == [base - 3600 * NS] * 3
    assert len({s.msg_id for s in stored}) == len(stored)


def test_the_bridge_rides_out_a_nats_server_restart(
    bus: tuple[str, str], restart_nats: Callable[[], None]
) -> None:
    nats_url, _ = bus
    job = b'{"jobid": %d, "state": "DONE"}'

    async def publish(js: JetStreamContext, jobids: range) -> None:
        for jobid in jobids:
            await js._nc.publish("xce.ctl.job_state", job % jobid)
        await js._nc.flush()

    async def go() -> list[Stored]:
        options = BridgeOptions(nats_url=nats_url, round_interval_s=0.1, ack_timeout_s=1.0)
        bridge = Bridge(options)
        task = asyncio.create_task(bridge.run())
        await wait_until(lambda: _is_set(bridge.ready, task), "the bridge")
        async with connected(nats_url) as js:
            await publish(js, range(0, 20))
        received = bridge.metrics.messages.labels("job_state")

        async def taken() -> bool:
            return received._value.get() == 20

        # Killed with the bridge's publishes of them in flight, or some not yet acked.
        await wait_until(taken, "the bridge to receive the first 20")
        await asyncio.to_thread(restart_nats)

        async def reconnected() -> bool:
            if task.done():
                task.result()
            return bridge.reconnects >= 1

        await wait_until(reconnected, "the bridge to reconnect")
        async with connected(nats_url) as js:
            await publish(js, range(20, 40))
            rounds_before = int(bridge.metrics.rounds._value.get())

            async def through() -> bool:
                stored = await read_events(js)
                states = sum(s.subject.endswith("JOB_STATE_CHANGE") for s in stored)
                rounds_after = bridge.metrics.rounds._value.get()
                return states == 40 and rounds_after >= rounds_before + 2

            await wait_until(through, "every event after the restart")
            bridge.stop()
            await task
            return await read_events(js)

    stored = run(go())
    parsed = [parse_event(s.data) for s in stored]
    ts = [event.ts for event in parsed]
    assert ts == sorted(ts)
    jobids = [e.payload.jobid for e in parsed if e.type == "JOB_STATE_CHANGE"]
    assert jobids == list(range(40)), "a controller message lost, repeated or reordered"
    assert len({s.msg_id for s in stored}) == len(stored)


def test_the_console_script_forwards_decisions_serves_metrics_and_stops_on_sigterm(
    bus: tuple[str, str], tmp_path: Path
) -> None:
    nats_url, redis_url = bus
    script = shutil.which("xce-bridge")
    assert script is not None, "the console script xce-bridge is not installed"
    port = free_port()
    argv = [script, "--nats", nats_url, "--round-interval", "0.05", "--metrics-port", str(port)]
    log = tmp_path / "bridge.log"

    async def go() -> tuple[int, str, list[tuple[str, bytes, str | None]]]:
        core = CoreService(CoreServiceOptions(nats_url=nats_url, redis_url=redis_url))
        core_task = asyncio.create_task(core.run())
        with open(log, "wb") as handle:
            proc = await asyncio.create_subprocess_exec(*argv, stdout=handle, stderr=handle)
        forwarded: list[tuple[str, bytes, str | None]] = []
        async with connected(nats_url) as js:
            nc = js._nc

            async def on_decision(msg: object) -> None:
                headers = getattr(msg, "headers", None) or {}
                forwarded.append((msg.subject, msg.data, headers.get(DECISION_ID_HEADER)))  # type: ignore[attr-defined]

            await nc.subscribe(CTL_DECISIONS_SUBJECTS, cb=on_decision)

            async def listening() -> bool:
                assert proc.returncode is None, log.read_text()
                return accepts(port)

            await wait_until(listening, "the bridge's metrics port")

            async def configured() -> bool:
                # Sent again until the bridge, subscribing, takes it.
                await nc.publish("xce.ctl.config", b'{"config": {"queues": [{"name": "q"}]}}')
                await nc.flush()
                stored = await read_events(js)
                return any(s.subject == "xce.events.CONFIG_PUSH" for s in stored)

            await wait_until(configured, "the bridge to take the configuration")
            await nc.publish("xce.ctl.hosts", b'{"hosts": [{"name": "h1", "slots": 2}]}')
            await nc.publish("xce.ctl.jobs", b'{"jobs": [{"jobid": 1, "queue": "q", "tasks": 2}]}')

            async def dispatched() -> bool:
                return any(subject.endswith("DISPATCH") for subject, _, _ in forwarded)

            await wait_until(dispatched, "the job's DISPATCH on xce.ctl.decisions.DISPATCH")
            url = f"http://127.0.0.1:{port}/metrics"
            text = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 20)
            core.stop()
            await core_task
            stored = await read_stream(js, DECISIONS_STREAM)
        ids = {s.data: s.msg_id for s in stored}
        for _, data, decision_id in forwarded:
            assert decision_id == ids[data]
        return code, text.decode(), forwarded

    code, metrics, forwarded = run(go())
    assert code == 0, log.read_text()
    assert any(subject == "xce.ctl.decisions.DISPATCH" for subject, _, _ in forwarded)
    for name in (
        "xce_bridge_messages_total",
        "xce_bridge_rounds_total",
        "xce_bridge_decisions_forwarded_total",
        "xce_bridge_event_publish_seconds_bucket",
        "xce_bridge_dead_letters_total",
    ):
        assert name in metrics


def test_msg_ids_chain_events_in_order(bus: tuple[str, str]) -> None:
    """Each event names the one before it (``Nats-Expected-Last-Msg-Id``), so the
    stream holds the bridge's events in the order stamped."""
    nats_url, _ = bus

    async def go() -> list[Stored]:
        bridge = Bridge(BridgeOptions(nats_url=nats_url, round_interval_s=0.01))
        task = asyncio.create_task(bridge.run())

        async def rounds() -> bool:
            if task.done():
                task.result()
            return bridge.published >= 30

        await wait_until(rounds, "30 rounds")
        bridge.stop()
        await task
        async with connected(nats_url) as js:
            return await read_events(js)

    stored = run(go())
    counters = [int((s.msg_id or "").rsplit(":", 1)[1]) for s in stored]
    assert counters == list(range(1, len(stored) + 1))
    assert all(s.subject == "xce.events.BEGIN_ROUND" for s in stored)
    assert MSG_ID_HEADER == "Nats-Msg-Id"


# --- at least once, de-duplicated: the controller hop through NATS restarts -------------


def busy_trace(path: Path, jobs: int) -> Path:
    """An SWF trace of ``jobs`` one-slot jobs, one every 3 s, each running 20-59 s."""
    lines = ["; MaxProcs: 12", "; UnixStartTime: 0"]
    for number in range(1, jobs + 1):
        run_s = 20 + (number * 7) % 40
        fields = [number, number * 3, -1, run_s, 1, -1, -1, 1, run_s, -1, 1, 1, 1, 1, 1, 1, -1, -1]
        lines.append(" ".join(map(str, fields)))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_nats_restarts_while_jobs_are_submitted_and_end_lose_nothing(
    bus: tuple[str, str], restart_nats: Callable[[], None], tmp_path: Path
) -> None:
    """NATS is killed (SIGKILL) and restarted three times while the emulator submits
    jobs and reports their ends and the bridge forwards decisions: every job runs and
    ends, XCE_EVENTS holds each submission and each end once, and the decisions are
    those of an in-process core fed the stored events."""
    nats_url, redis_url = bus
    jobs = 160
    trace = busy_trace(tmp_path / "busy.swf", jobs)
    argv = [
        *("-m", "xce_driver.cli", "emulate", "--workload", str(trace), "--nats", nats_url),
        *("--hosts", "12", "--speed", "100", "--timeout", "60"),
    ]

    async def go() -> tuple[int, str, list[Stored], list[Stored], list[int]]:
        core, bridge, tasks = await start_services(nats_url, redis_url)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        submitted = bridge.metrics.messages.labels("jobs")
        ended = bridge.metrics.messages.labels("job_state")
        restarted_ns = []
        for at in (25, 70, 115):  # submissions taken by the bridge

            async def reached(at: int = at) -> bool:
                assert proc.returncode is None, "the emulator stopped early"
                # Jobs end meanwhile: both kinds of message in flight at each restart;
                # and the bridge is back from the last one (else two count as one).
                back = bridge.reconnects >= len(restarted_ns)
                return bool(submitted._value.get() >= at and ended._value.get() > 0 and back)

            await wait_until(reached, f"{at} submissions and a job ended")
            await asyncio.to_thread(restart_nats)
            restarted_ns.append(time.time_ns())
        out, err = await asyncio.wait_for(proc.communicate(), 90)
        assert bridge.reconnects >= 3
        await stop_services(core, bridge, tasks)
        async with connected(nats_url) as js:
            events = await read_events(js)
            decisions = await read_stream(js, DECISIONS_STREAM)
        assert proc.returncode is not None
        return proc.returncode, out.decode() + err.decode(), events, decisions, restarted_ns

    code, output, events, decisions, restarted_ns = run(go())
    assert code == 0, output
    assert f"{jobs} total, {jobs} finished" in output, output
    parsed = events_of(events)
    assert_each_job_submitted_and_ended_once(parsed, jobs)
    assert len({s.msg_id for s in events}) == len(events), "a message id twice"
    # Controller messages after the last restart went through the restarted server
    # (job ends: the emulator may have sent every submission before it).
    after = {e.type for e in parsed if e.ts > restarted_ns[-1]}
    assert after & {"JOBS_PUSH", "JOB_STATE_CHANGE"}, after
    assert [d.data for d in decisions] == reference_decisions(parsed)
    dispatched = Counter(d.subject for d in decisions)["xce.decisions.DISPATCH"]
    assert dispatched == jobs


class _EventsHeld(Bridge):
    """A bridge that stores no event until ``release`` is set."""

    def __init__(self, options: BridgeOptions) -> None:
        super().__init__(options)
        self.release = asyncio.Event()

    async def _publish_loop(self) -> None:
        await self.release.wait()
        await super()._publish_loop()


def test_a_dead_letter_is_not_acknowledged_before_the_events_ahead_of_it(
    bus: tuple[str, str],
) -> None:
    """One acknowledgement covers every message before it (``AckPolicy.ALL``): a bad
    message right behind a good one whose event is not stored yet is acknowledged only
    once that event is stored, or a bridge dying then would lose the good one."""
    nats_url, _ = bus

    async def ack_floor(js: JetStreamContext) -> int:
        info = await js.consumer_info(CTL_STREAM, BRIDGE_CTL_DURABLE)
        return info.ack_floor.stream_seq if info.ack_floor else 0

    async def go() -> tuple[int, int, int]:
        bridge = _EventsHeld(BridgeOptions(nats_url=nats_url, round_interval_s=3600))
        task = asyncio.create_task(bridge.run())
        await wait_until(lambda: _is_set(bridge.ready, task), "the bridge to listen")
        async with connected(nats_url) as js:
            await js.publish(ctl_subject("job_state"), b'{"jobid": 1, "state": "DONE"}')
            await js.publish(ctl_subject("job_state"), b"not json")

            async def dead_lettered() -> bool:
                return bool(bridge.metrics.dead_letters._value.get() == 1)

            await wait_until(dead_lettered, "the bad message dead-lettered")
            await asyncio.sleep(0.5)  # time for an acknowledgement to arrive
            held = await ack_floor(js)
            bridge.release.set()

            async def acked() -> bool:
                return await ack_floor(js) == 2

            await wait_until(acked, "both acknowledged once the event is stored")
            bridge.stop()
            await task
            return held, bridge.published, await ack_floor(js)

    held, published, floor = run(go())
    assert held == 0
    assert (published, floor) == (1, 2)


class _AcksLost(Bridge):
    """A bridge whose acknowledgements of controller messages never arrive."""

    async def _ack(self, msg: Msg) -> None:
        return None


def test_a_controller_message_delivered_again_is_not_a_second_event(
    bus: tuple[str, str],
) -> None:
    """A bridge stops with every controller message an event but none acknowledged;
    the next bridge gets them all again (the consumer's ack wait), drops them and
    acknowledges them, and goes on with the new ones: each once on XCE_EVENTS."""
    nats_url, _ = bus
    job = b'{"jobid": %d, "state": "DONE"}'

    async def send(js: JetStreamContext, jobids: range) -> None:
        for jobid in jobids:
            await js.publish(
                ctl_subject("job_state"),
                job % jobid,
                stream=CTL_STREAM,
                headers={MSG_ID_HEADER: ctl_msg_id("test", "run", jobid + 1)},
            )

    async def go() -> tuple[list[Stored], int, int]:
        options = BridgeOptions(nats_url=nats_url, round_interval_s=3600, ctl_ack_wait_s=1.0)
        first = _AcksLost(options)
        task = asyncio.create_task(first.run())
        await wait_until(lambda: _is_set(first.ready, task), "the first bridge")
        async with connected(nats_url) as js:
            await send(js, range(0, 10))
            await send(js, range(5, 10))  # sent again: the stream keeps one of each

            async def published(bridge: Bridge, count: int) -> bool:
                return bridge.published >= count

            await wait_until(lambda: published(first, 10), "ten events")
            first.stop()
            await task
            second = Bridge(options)
            task = asyncio.create_task(second.run())
            await wait_until(lambda: _is_set(second.ready, task), "the second bridge")
            await send(js, range(10, 15))
            await wait_until(lambda: published(second, 5), "five more events")

            async def all_acked() -> bool:
                info = await js.consumer_info(CTL_STREAM, BRIDGE_CTL_DURABLE)
                return bool(info.num_ack_pending == 0 and info.ack_floor.stream_seq == 15)

            await wait_until(all_acked, "the ten delivered again to be acknowledged")
            second.stop()
            await task
            return await read_events(js), first.published, second.published

    stored, first_count, second_count = run(go())
    assert (first_count, second_count) == (10, 5)
    jobids = [e.payload.jobid for e in events_of(stored) if e.type == "JOB_STATE_CHANGE"]
    assert jobids == list(range(15)), "a controller message lost, repeated or reordered"
    headers_ok = all(s.msg_id and s.msg_id.startswith("xce-bridge:ctl:") for s in stored)
    assert headers_ok


def test_the_emulator_applies_a_decision_id_once() -> None:
    """A decision forwarded twice (a bridge restart past the duplicate window) is
    applied once: the job is dispatched once and ends once."""
    job = SimJob(jobid=1, submit_s=0, run_s=1, tasks=1, queue="normal", user="u")
    config = SchedulerConfig(queues=(QueueSpec(name="normal"),))
    emulator = LiveEmulator(
        [job], (HostSpec(name="h1", slots=1),), config, nats_url="nats://unused", speed=100
    )
    dispatch = Dispatch(
        ts=time.time_ns(),
        jobid=1,
        alloc=JobAlloc(jobid=1, hosts=(HostAlloc(host="h1", allocs=()),)),
    )
    data = dump_decision(dispatch)
    headers = {DECISION_ID_HEADER: "xce-core:9:0"}

    async def go() -> int:
        for seq in (1, 2):  # the same decision at two sequences of XCE_CTL_DECISIONS
            emulator._on_decision(Delivered(seq, "xce.ctl.decisions.DISPATCH", data, headers, None))
        await asyncio.wait_for(emulator._all_done.wait(), 5)
        return emulator._outbox.qsize()

    reports = run(go())
    assert emulator.stats.decisions == {"DISPATCH": 1}
    assert reports == 1  # one DONE
    assert emulator.records[1].end_s is not None


def test_a_stray_message_on_the_event_stream_does_not_wedge_a_running_bridge(
    bus: tuple[str, str],
) -> None:
    nats_url, _ = bus
    job = b'{"jobid": %d, "state": "DONE"}'

    def published(bridge: Bridge, count: int) -> Callable[[], Awaitable[bool]]:
        async def enough() -> bool:
            return bridge.published >= count

        return enough

    async def go() -> list[Stored]:
        options = BridgeOptions(nats_url=nats_url, round_interval_s=3600, ack_timeout_s=1.0)
        bridge = Bridge(options)
        task = asyncio.create_task(bridge.run())
        await wait_until(lambda: _is_set(bridge.ready, task), "the bridge")
        async with connected(nats_url) as js:
            for jobid in range(3):
                await js._nc.publish("xce.ctl.job_state", job % jobid)
            await wait_until(published(bridge, 3), "3 events")
            # A stray plain publish (no message id) while the bridge runs.
            await js._nc.publish("xce.events.BEGIN_ROUND", b"x")
            await js._nc.flush()
            for jobid in range(3, 6):
                await js._nc.publish("xce.ctl.job_state", job % jobid)
            await wait_until(published(bridge, 6), "3 more events after the stray one")
        bridge.stop()
        await task
        async with connected(nats_url) as js:
            return await read_events(js)

    stored = run(go())
    assert [s.data for s in stored].count(b"x") == 1
    ours = [parse_event(s.data) for s in stored if s.data != b"x"]
    assert [event.payload.jobid for event in ours] == list(range(6))  # type: ignore[union-attr]
    ts = [event.ts for event in ours]
    assert ts == sorted(ts)


def test_a_controller_consumer_of_an_earlier_version_is_made_anew_at_its_position(
    bus: tuple[str, str],
) -> None:
    """A consumer with explicit acknowledgements (an earlier bridge's), four messages
    done: the bridge replaces it with an ``AckPolicy.ALL`` one from message 5, and
    one acknowledgement then covers all the rest."""
    nats_url, _ = bus
    job = b'{"jobid": %d, "state": "DONE"}'

    async def go() -> tuple[list[Stored], AckPolicy, int]:
        async with connected(nats_url) as js:
            await ensure_ctl_streams(js)
            await js.add_consumer(
                CTL_STREAM,
                ConsumerConfig(durable_name=BRIDGE_CTL_DURABLE, ack_policy=AckPolicy.EXPLICIT),
            )
            for jobid in range(10):
                await js.publish(ctl_subject("job_state"), job % jobid, stream=CTL_STREAM)
            old = await js.pull_subscribe_bind(durable=BRIDGE_CTL_DURABLE, stream=CTL_STREAM)
            for msg in await old.fetch(4, timeout=5):
                await msg.ack_sync()
            await old.unsubscribe()
            bridge = Bridge(BridgeOptions(nats_url=nats_url, round_interval_s=3600))
            task = asyncio.create_task(bridge.run())

            async def acked() -> bool:
                if task.done():
                    task.result()
                info = await js.consumer_info(CTL_STREAM, BRIDGE_CTL_DURABLE)
                return bool(bridge.published >= 6 and info.ack_floor.stream_seq == 10)

            await wait_until(acked, "messages 5-10 as events, acknowledged")
            bridge.stop()
            await task
            info = await js.consumer_info(CTL_STREAM, BRIDGE_CTL_DURABLE)
            stored = await read_events(js)
            return stored, info.config.ack_policy, bridge.published

    stored, policy, published = run(go())
    assert policy == AckPolicy.ALL
    assert published == 6
    jobids = [e.payload.jobid for e in events_of(stored) if e.type == "JOB_STATE_CHANGE"]
    assert jobids == list(range(4, 10))


def test_an_emulator_whose_connection_is_closed_for_good_stops_with_the_error(
    bus: tuple[str, str],
) -> None:
    """No waiting out the run's timeout in silence: the decision reader fails and the
    run ends with its error."""
    nats_url, _ = bus
    job = SimJob(jobid=1, submit_s=0, run_s=1, tasks=1, queue="normal", user="u")
    config = SchedulerConfig(queues=(QueueSpec(name="normal"),))
    emulator = LiveEmulator(
        [job], (HostSpec(name="h1", slots=1),), config, nats_url=nats_url, speed=1
    )

    async def go() -> float:
        task = asyncio.create_task(emulator.run(timeout_s=120))

        async def reading() -> bool:
            # Its readers made (the last decision's clock starts then): a close while
            # it still sets its consumers up ends in that request's timeout instead.
            nc = emulator._nc
            return nc is not None and nc.is_connected and emulator._last_decision > 0

        await wait_until(reading, "the emulator to read decisions")
        assert emulator._nc is not None
        started = time.monotonic()
        await emulator._nc.close()
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(task, 30)
        return time.monotonic() - started

    assert run(go()) < 30


def test_ctrl_c_stops_the_emulator_at_once(bus: tuple[str, str], tmp_path: Path) -> None:
    """SIGINT while waiting for decisions: ``xce-sched: interrupted``, exit 130, no
    task reading on after its connection is closed."""
    nats_url, _ = bus
    trace = swf_trace(tmp_path / "small.swf")
    argv = [sys.executable, "-m", "xce_driver.cli", "emulate", "--workload", str(trace)]
    argv += ["--nats", nats_url, "--hosts", "4", "--speed", "10", "--timeout", "120"]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.rstrip().endswith("xce-sched: interrupted"), err
    assert "Traceback" not in err


def test_a_backlog_of_controller_messages_goes_out_in_batches_in_order(
    bus: tuple[str, str],
) -> None:
    """Controller messages waiting when the bridge starts become batch messages of
    at most ``batch_events`` events, in controller order, each event with its
    controller message's id and each message with the position of its last one."""
    nats_url, _ = bus
    jobs = 35

    async def go() -> tuple[list[Stored], list[Stored]]:
        async with connected(nats_url) as js:
            await ensure_ctl_streams(js)
            acks = [await js.publish("xce.ctl.config", b'{"config":{"queues":[{"name":"q"}]}}')]
            for jobid in range(1, jobs + 1):
                data = b'{"jobs":[{"jobid":%d,"queue":"q"}]}' % jobid
                acks.append(await js.publish("xce.ctl.jobs", data))
            options = BridgeOptions(nats_url=nats_url, round_interval_s=3600, batch_events=10)
            bridge = Bridge(options)
            task = asyncio.create_task(bridge.run())

            async def through() -> bool:
                return bridge.published == jobs + 1

            await wait_until(through, "every job on the stream")
            bridge.stop()
            await task
            return await read_stream(js, EVENTS_STREAM), await read_events(js)

    messages, events = run(go())
    assert all(m.subject == "xce.events.BATCH" for m in messages)
    sizes = [len(orjson.loads(m.data)["events"]) for m in messages]
    assert sum(sizes) == jobs + 1 and max(sizes) <= 10
    assert len(messages) < jobs + 1, "the backlog went out one event per message"
    jobids = [parse_event(e.data).payload.jobs[0].jobid for e in events[1:]]  # type: ignore[union-attr]
    assert jobids == list(range(1, jobs + 1))
    epoch = events[0].msg_id.split(":")[2]  # type: ignore[union-attr]
    assert [e.msg_id for e in events] == [f"xce-bridge:ctl:{epoch}:{n}" for n in range(1, jobs + 2)]
    # Each message has the id of its last event.
    ends = list(itertools.accumulate(sizes))
    assert [m.msg_id for m in messages] == [events[end - 1].msg_id for end in ends]


def test_only_the_core_s_decisions_are_forwarded_to_the_controller(bus: tuple[str, str]) -> None:
    """Anyone may publish on ``xce.decisions.>``: a message there without a core
    decision id (none, or another publisher's) is counted and not forwarded; the
    core's decisions around it are, in order, and every message is acknowledged
    (the last one too, though nothing was forwarded after it)."""
    nats_url, _ = bus
    decisions = reference_decisions(scenario(rounds=4))[:2]
    assert len(decisions) == 2

    async def go() -> tuple[list[Stored], Bridge, int]:
        options = BridgeOptions(nats_url=nats_url, round_interval_s=3600)
        bridge = Bridge(options)
        task = asyncio.create_task(bridge.run())
        await wait_until(lambda: _is_set(bridge.ready, task), "the bridge")
        async with connected(nats_url) as js:
            await ensure_streams(js)
            subject = "xce.decisions.DISPATCH"
            await js.publish(subject, decisions[0], headers={MSG_ID_HEADER: "xce-core:3:0"})
            await js.publish(subject, b'{"op":"DISPATCH"}')  # no id
            await js.publish(subject, decisions[1], headers={MSG_ID_HEADER: "xce-core:7:0"})
            await js.publish(subject, b"{}", headers={MSG_ID_HEADER: "other:1"})

            async def acknowledged() -> bool:
                info = await js.consumer_info(DECISIONS_STREAM, options.durable)
                return (info.ack_floor.stream_seq if info.ack_floor else 0) >= 4

            await wait_until(acknowledged, "every message of XCE_DECISIONS acknowledged")
            forwarded = await read_stream(js, CTL_DECISIONS_STREAM)
        bridge.stop()
        await task
        sample = bridge.metrics.registry.get_sample_value("xce_bridge_foreign_decisions_total")
        return forwarded, bridge, int(sample or 0)

    forwarded, bridge, foreign = run(go())
    assert [(s.msg_id, s.data) for s in forwarded] == [
        ("xce-core:3:0", decisions[0]),
        ("xce-core:7:0", decisions[1]),
    ]
    assert (bridge.forwarded, foreign) == (2, 2)
