"""Helpers of the live tests: a closed-loop scenario, its reference decisions, the
bus read back, and the core service run as a real process."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import nats
import orjson
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from xce_core.core import SchedCore
from xce_core.errors import CoreError
from xce_driver.live.event_codec import encode_batch
from xce_driver.live.publish import publish_events
from xce_kit.auth import nats_credentials
from xce_kit.redis_client import redis_from_url
from xce_kit.streams import ensure_streams
from xce_schemas import (
    BeginRound,
    ConfigPush,
    CoreEvent,
    Decision,
    Dispatch,
    HostSpec,
    JobSpec,
    JobsPush,
    JobState,
    JobStateChange,
    QueueSpec,
    SchedulerConfig,
    WorkersPush,
    dump_decision,
    dump_event,
)
from xce_schemas.bus import (
    EVENTS_BATCH_SUBJECT,
    EVENTS_STREAM,
    MSG_ID_HEADER,
    event_subject,
)
from xce_schemas.events import (
    ConfigPushPayload,
    JobsPushPayload,
    JobStateChangePayload,
    WorkersPushPayload,
)

NS = 1_000_000_000
T = TypeVar("T")
#: How long a test waits for the service to catch up, s (a loaded CI machine).
WAIT_S = 30.0
#: The lease time of the core services the tests start (``--lease-ttl``), s: one
#: started after another was killed takes over within about this long; a leader
#: whose event loop stalls for most of it loses the lead (exit status 3).
LEASE_TTL_S = 2.0


def scenario(rounds: int = 12, seed: int = 7) -> list[CoreEvent]:
    """A small closed-loop workload: two queues, four 4-slot hosts, a few jobs
    submitted before each round (every 10 s), each dispatched job DONE 5-35 s later.

    The loop runs an in-process core to learn which jobs start, so the events are
    those a controller would send.
    """
    rng = random.Random(seed)
    events: list[CoreEvent] = []
    core = SchedCore(on_decision=lambda d: out.append(d), prng_seed=0)
    out: list[Decision] = []

    def push(event: CoreEvent) -> None:
        events.append(event)
        core.push_event(event)

    queues = (QueueSpec(name="normal", priority=30), QueueSpec(name="high", priority=50))
    push(ConfigPush(ts=0, payload=ConfigPushPayload(config=SchedulerConfig(queues=queues))))
    hosts = tuple(HostSpec(name=f"h{i}", slots=4) for i in range(1, 5))
    push(WorkersPush(ts=0, payload=WorkersPushPayload(hosts=hosts)))
    jobid = 0
    finishes: dict[int, int] = {}  # jobid -> finish time, s
    for step in range(rounds):
        now = step * 10
        for done in sorted(j for j, at in finishes.items() if at <= now):
            del finishes[done]
            payload = JobStateChangePayload(jobid=done, state=JobState.DONE)
            push(JobStateChange(ts=now * NS, payload=payload))
        specs = []
        for _ in range(rng.randint(0, 4)):
            jobid += 1
            specs.append(
                JobSpec(
                    jobid=jobid,
                    queue=rng.choice(("normal", "normal", "high")),
                    user=rng.choice(("alice", "bob")),
                    tasks=rng.randint(1, 6),
                    resreq=rng.choice(("", "", "span[hosts=1]", "span[ptile=2]")),
                    submit_ts=now * NS,
                )
            )
        if specs:
            push(JobsPush(ts=now * NS, payload=JobsPushPayload(jobs=tuple(specs))))
        out.clear()
        push(BeginRound(ts=now * NS))
        for decision in out:
            if isinstance(decision, Dispatch):
                finishes[decision.jobid] = now + rng.randint(5, 35)
    return events


def run(coro: Awaitable[T]) -> T:
    """Run a coroutine to its end in a fresh event loop."""

    async def main() -> T:
        return await coro

    return asyncio.run(main())


def reference_decisions(events: Sequence[CoreEvent | dict[str, Any]]) -> list[bytes]:
    """The decisions (JSON) of an uninterrupted in-process core, seed 0 (the service's
    default), over ``events``; events it rejects are skipped as the service skips them."""
    out: list[Decision] = []
    core = SchedCore(on_decision=out.append, prng_seed=0)
    for event in events:
        with contextlib.suppress(CoreError):
            core.push_event(event)
    return [dump_decision(d) for d in out]


# --- the bus ---------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def connected(nats_url: str) -> AsyncIterator[JetStreamContext]:
    """A JetStream context of a fresh connection (as the environment's credentials
    say: ``xce_kit.auth``), closed at the end."""
    nc = await nats.connect(nats_url, **nats_credentials().connect_options())
    try:
        yield nc.jetstream()
    finally:
        await nc.close()


def reset_bus(nats_url: str, redis_url: str) -> None:
    """Delete every stream on the server (with its consumers): the XCE streams, the
    controller's, the record stream and the core services' lease bucket, whatever
    limits an earlier test gave them; and empty the Redis database."""

    async def reset() -> None:
        async with connected(nats_url) as js:
            for info in await js.streams_info():
                with contextlib.suppress(NotFoundError):
                    await js.delete_stream(info.config.name)
        client = redis_from_url(redis_url)
        await client.flushdb()
        await client.aclose()

    asyncio.run(reset())


async def publish(js: JetStreamContext, events: Sequence[CoreEvent], batch: int = 1) -> list[int]:
    """Create the streams if needed and publish ``events``, one per message, or
    ``batch`` per ``xce.events.BATCH`` message (as the bridge does, ids
    ``e<index>``); the messages' stream sequences."""
    await ensure_streams(js)
    if batch == 1:
        return await publish_events(js, events)
    seqs = []
    for start in range(0, len(events), batch):
        part = events[start : start + batch]
        data = encode_batch(
            [dump_event(e) for e in part],
            [f"e{start + i}" for i in range(len(part))],
        )
        seqs.append((await js.publish(EVENTS_BATCH_SUBJECT, data, stream=EVENTS_STREAM)).seq)
    return seqs


@dataclass(frozen=True)
class Stored:
    """A message as a stream stores it."""

    seq: int
    subject: str
    msg_id: str | None
    data: bytes


async def read_stream(js: JetStreamContext, stream: str) -> list[Stored]:
    """Every message of ``stream``, in order (deleted ones left out)."""
    info = await js.stream_info(stream)
    if not info.state.messages:
        return []
    stored = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            msg = await js.get_msg(stream, seq=seq)
        except NotFoundError:
            continue
        headers = msg.headers or {}
        assert msg.subject is not None
        stored.append(Stored(seq, msg.subject, headers.get(MSG_ID_HEADER), msg.data or b""))
    return stored


async def read_events(js: JetStreamContext) -> list[Stored]:
    """Every event of ``XCE_EVENTS``, in order, one ``Stored`` each: a batch message
    (``xce.events.BATCH``) gives one per event, with the batch's sequence, the
    event's subject and its id in the batch; any other message is as stored."""
    events = []
    for stored in await read_stream(js, EVENTS_STREAM):
        if stored.subject != EVENTS_BATCH_SUBJECT:
            events.append(stored)
            continue
        batch = orjson.loads(stored.data)
        ids = batch.get("ids") or [stored.msg_id] * len(batch["events"])
        for event, event_id in zip(batch["events"], ids, strict=True):
            subject = event_subject(event["type"])
            events.append(Stored(stored.seq, subject, event_id, orjson.dumps(event)))
    return events


async def events_last_seq(nats_url: str) -> int:
    """The sequence of the last message of ``XCE_EVENTS`` (0: none)."""
    async with connected(nats_url) as js:
        return (await js.stream_info(EVENTS_STREAM)).state.last_seq or 0


async def acked_seq(js: JetStreamContext, durable: str = "xce-core") -> int:
    """The last event sequence the core's consumer has acknowledged (0: none yet)."""
    try:
        info = await js.consumer_info(EVENTS_STREAM, durable)
    except (NotFoundError, TypeError):
        # Not there yet, or being re-created by a restarting core service: nats-py
        # then fails to read the server's answer as a ConsumerInfo (TypeError).
        return 0
    return info.ack_floor.stream_seq if info.ack_floor else 0


async def wait_until(
    check: Callable[[], Awaitable[bool]], what: str, timeout_s: float = WAIT_S
) -> None:
    """Poll ``check`` every 20 ms until it is true.

    Raises:
        AssertionError: naming ``what``, when ``timeout_s`` passes first.
    """
    deadline = time.monotonic() + timeout_s
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.02)


# --- the service as a process --------------------------------------------------------------


#: Every ServiceProcess started, so a test that fails half-way leaves none running:
#: one reconnecting to a port a later server reuses would join that test's bus.
STARTED: list[ServiceProcess] = []


def kill_leftovers() -> None:
    """SIGKILL every ServiceProcess still running, and forget them all."""
    while STARTED:
        proc = STARTED.pop()
        if proc.exited() is None:
            proc.kill()


class ServiceProcess:
    """``python -m xce_driver.live.core_service`` as a child process, logging to a file.

    Args:
        nats_url, redis_url: the servers.
        log: the log file (appended to).
        extra: more command-line arguments; with the default program,
            ``--lease-ttl LEASE_TTL_S`` unless they give one.
        program: the command; default ``python -m xce_driver.live.core_service``.
    """

    def __init__(
        self,
        nats_url: str,
        redis_url: str,
        log: Path,
        *extra: str,
        program: Sequence[str] | None = None,
    ) -> None:
        self.log = log
        lease: tuple[str, ...] = ()
        if program is None:
            program = [sys.executable, "-m", "xce_driver.live.core_service"]
            if "--lease-ttl" not in extra:
                lease = ("--lease-ttl", str(LEASE_TTL_S))
        argv = [*program, "--nats", nats_url, "--redis", redis_url, *lease, *extra]
        with open(log, "ab") as handle:
            self.proc = subprocess.Popen(
                argv, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        STARTED.append(self)

    def exited(self) -> int | None:
        """The exit status (negative: killed by that signal), or None while it runs."""
        return self.proc.poll()

    def kill(self) -> None:
        """SIGKILL it and wait for it to go."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def terminate(self, timeout_s: float = 20.0) -> int:
        """SIGTERM it; its exit status.

        Raises:
            subprocess.TimeoutExpired: it did not stop within ``timeout_s`` (then killed).
        """
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise

    def log_text(self) -> str:
        """Everything it logged."""
        return self.log.read_text(errors="replace")


def assert_each_job_submitted_and_ended_once(parsed: Sequence[CoreEvent], jobs: int) -> None:
    """``parsed`` holds one configuration, one host list, each of jobs 1..``jobs``
    submitted once and ended (DONE or EXIT) once, and ``ts`` never goes back."""
    kinds = Counter(event.type for event in parsed)
    assert kinds["CONFIG_PUSH"] == 1 and kinds["WORKERS_PUSH"] == 1, kinds
    submitted = [j.jobid for e in parsed if e.type == "JOBS_PUSH" for j in e.payload.jobs]
    assert sorted(submitted) == list(range(1, jobs + 1)), "a submission lost or repeated"
    ended = [
        e.payload.jobid
        for e in parsed
        if e.type == "JOB_STATE_CHANGE" and e.payload.state in (JobState.DONE, JobState.EXIT)
    ]
    assert sorted(ended) == list(range(1, jobs + 1)), "a job's end lost or repeated"
    timestamps = [event.ts for event in parsed]
    assert timestamps == sorted(timestamps), "ts went back"
