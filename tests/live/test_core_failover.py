"""A standby core against real servers: three core services contend for the lease
(``--lease-ttl 1``), events come in steadily, and the leader is killed again and
again: SIGKILL at a random moment (seeded), a ``--fault-kill-at`` point (mid-way
through its decisions, before an acknowledgement, before a checkpoint) and SIGTERM
(a clean stop that releases the lease). Each time a standby takes over from the
checkpoint and the stream positions, and a new standby is started in the dead
one's place, as a supervisor would. At the end the decision stream equals that of
an uninterrupted in-process core, byte for byte, no dead letter was written, every
term was greater than the one before, and each kill hit a different leader.

Failover time (kill → the successor's term seen through a watch of the lease key)
is printed per kill, with its median and maximum; nothing asserts on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import socket
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest
from nats.js import JetStreamContext
from nats.js.errors import BucketNotFoundError, KeyNotFoundError, NotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue
from xce_driver.live.core_service.cli import EXIT_LOST_LEAD
from xce_driver.live.event_codec import encode_batch
from xce_driver.live.publish import publish_events
from xce_kit.lease import LEASE_BUCKET, LEASE_KEY
from xce_kit.redis_client import redis_from_url
from xce_kit.streams import ensure_streams
from xce_schemas import CoreEvent, dump_event
from xce_schemas.admin import CORE_STATUS_KEY, CoreStatus, core_status_from_hash
from xce_schemas.bus import DEADLETTER_STREAM, DECISIONS_STREAM, EVENTS_BATCH_SUBJECT, EVENTS_STREAM

from tests.live.helpers import (
    ServiceProcess,
    acked_seq,
    connected,
    read_stream,
    reference_decisions,
    run,
    scenario,
    wait_until,
)
from tests.live.test_core_service import assert_exact

pytestmark = [pytest.mark.nats, pytest.mark.redis]

#: The lease time of the core services here, s.
TTL_S = 1.0
#: Core services running at once (one leads).
CONTENDERS = 3
#: How a standby stopped with SIGTERM exits: 0, or killed by it while still starting
#: (before its signal handlers are in place).
STANDBY_STOPPED = (0, -signal.SIGTERM)
#: Events published per tick, and the tick, s, while the leaders are killed: about
#: 65 events/s, for about 50 s (the rest at once after the last kill).
CHUNK = 10
TICK_S = 0.15
ROUNDS = 900
#: What happens to each leader in turn: ``sigkill`` (from outside, after a random
#: delay), ``sigterm`` (a clean stop: the lease is released), or a fault point
#: (``point:N``: the leader SIGKILLs itself there; the one standby left then is the
#: one started with it).
PLAN = (
    "sigkill",
    "sigkill",
    "decision:2",
    "sigkill",
    "sigterm",
    "ack:3",
    "sigkill",
    "sigkill",
    "checkpoint:1",
    "sigkill",
)


def holder_term(entry: KeyValue.Entry) -> tuple[int, int]:
    """The pid in a lease entry's ``host:pid`` holder id, and its term (a term's
    ``create`` carries none: it is the create's own revision)."""
    assert entry.value is not None and entry.revision is not None
    doc = orjson.loads(entry.value)
    term = doc.get("term", entry.revision)
    return int(str(doc["holder"]).rsplit(":", 1)[1]), int(term)


@dataclass
class TermWatch:
    """Every lease term seen through a watch of the lease key: ``(when, term, pid)``,
    ``when`` on ``time.monotonic()``, in the order seen."""

    terms: list[tuple[float, int, int]] = field(default_factory=list)

    async def follow(self, kv: KeyValue) -> None:
        """Record each new term (a ``create`` is its own revision), until cancelled."""
        watcher = await kv.watch(LEASE_KEY)
        try:
            async for entry in watcher:
                if entry is None or entry.operation in (KV_DEL, KV_PURGE) or not entry.value:
                    continue
                pid, term = holder_term(entry)
                if not self.terms or self.terms[-1][1] != term:
                    self.terms.append((time.monotonic(), term, pid))
        finally:
            with contextlib.suppress(Exception):
                await watcher.stop()  # type: ignore[no-untyped-call]

    def after(self, term: int) -> tuple[float, int, int] | None:
        """The first term seen after ``term``, if any."""
        return next((seen for seen in self.terms if seen[1] > term), None)


@dataclass
class Pacer:
    """Publishes ``events`` steadily, ``CHUNK`` per tick, every other chunk as one
    ``xce.events.BATCH`` message (as the bridge sends them) and the others one
    event per message; all that is left at once after ``hurry``."""

    events: list[CoreEvent]
    hurried: asyncio.Event = field(default_factory=asyncio.Event)
    sent: int = 0
    last_seq: int = 0

    async def run(self, js: JetStreamContext) -> None:
        """Publish every event, in order."""
        chunk = 0
        while self.sent < len(self.events):
            part = self.events[self.sent : self.sent + CHUNK]
            if chunk % 2:
                ids = [f"e{self.sent + i}" for i in range(len(part))]
                data = encode_batch([dump_event(e) for e in part], ids)
                ack = await js.publish(EVENTS_BATCH_SUBJECT, data, stream=EVENTS_STREAM)
                self.last_seq = ack.seq
            else:
                self.last_seq = (await publish_events(js, part))[-1]
            self.sent += len(part)
            chunk += 1
            if not self.hurried.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.hurried.wait(), TICK_S)


@dataclass
class Kill:
    """One leader killed: how, its pid and term, and how long until the next term."""

    kind: str
    pid: int
    term: int
    at: float
    failover_s: float | None = None


class Supervisor:
    """The core services of a test, started as a supervisor restarts them."""

    def __init__(self, nats_url: str, redis_url: str, folder: Path) -> None:
        self.nats_url, self.redis_url, self.folder = nats_url, redis_url, folder
        self.procs: dict[int, ServiceProcess] = {}
        #: The fault point each service started with one kills itself at, by pid.
        self.faults: dict[int, str] = {}
        self.started = 0

    def start(self, fault: str | None = None) -> ServiceProcess:
        """One more core service (a standby until it leads); ``fault``: it SIGKILLs
        itself at that point (``--fault-kill-at``)."""
        self.started += 1
        log = self.folder / f"core-{self.started}.log"
        argv = ["--lease-ttl", str(TTL_S), "--snapshot-every", "20", "--snapshot-seconds", "1"]
        if fault is not None:
            argv += ["--fault-kill-at", fault]
        proc = ServiceProcess(self.nats_url, self.redis_url, log, *argv)
        self.procs[proc.proc.pid] = proc
        if fault is not None:
            self.faults[proc.proc.pid] = fault
        return proc

    def running(self) -> list[ServiceProcess]:
        return [proc for proc in self.procs.values() if proc.exited() is None]

    def top_up(self) -> None:
        """Start standbys until ``CONTENDERS`` run."""
        for _ in range(CONTENDERS - len(self.running())):
            self.start()

    def statuses(self) -> dict[int, int | None]:
        return {pid: proc.exited() for pid, proc in self.procs.items()}

    def logs(self) -> str:
        return "\n".join(
            f"----- core pid {pid} (status {proc.exited()}):\n{proc.log_text()[-3000:]}"
            for pid, proc in self.procs.items()
        )


async def core_status(redis_url: str) -> CoreStatus | None:
    """The core's status hash as the admin API reads it."""
    client = redis_from_url(redis_url)
    try:
        return core_status_from_hash(await client.hgetall(CORE_STATUS_KEY))
    finally:
        await client.aclose()


async def lease_kv(js: JetStreamContext) -> KeyValue:
    """The lease bucket, once the first core service made it."""
    found: list[KeyValue] = []

    async def made() -> bool:
        with contextlib.suppress(BucketNotFoundError, NotFoundError):
            found.append(await js.key_value(LEASE_BUCKET))
        return bool(found)

    await wait_until(made, "the lease bucket")
    return found[0]


async def leader(kv: KeyValue, sup: Supervisor, after_term: int) -> tuple[int, int]:
    """The pid and term of a leader whose term is after ``after_term``, one of
    ``sup``'s running services."""
    seen: list[tuple[int, int]] = []

    async def leads() -> bool:
        try:
            entry = await kv.get(LEASE_KEY)
        except KeyNotFoundError:
            return False
        pid, term = holder_term(entry)
        proc = sup.procs.get(pid)
        assert proc is not None, f"the lease is held by pid {pid}, not a service of this test"
        # One started to kill itself at a fault point may be gone already: it led
        # (its term is there) and died at once, before this poll saw it running;
        # waiting for a running one then waits for a standby nobody starts.
        if term > after_term and (proc.exited() is None or pid in sup.faults):
            seen.append((pid, term))
        return bool(seen)

    await wait_until(leads, f"a leader after term {after_term}:\n{sup.logs()}")
    return seen[0]


async def exited(proc: ServiceProcess, what: str, timeout_s: float = 30.0) -> int:
    """Wait (without blocking the loop) until ``proc`` exits; its status."""

    async def gone() -> bool:
        return proc.exited() is not None

    await wait_until(gone, what, timeout_s)
    status = proc.exited()
    assert status is not None
    return status


async def progress(js: JetStreamContext, proc: ServiceProcess, beyond: int) -> None:
    """Wait until the leader ``proc`` acknowledged an event past ``beyond``."""

    async def acked() -> bool:
        assert proc.exited() in (None, EXIT_LOST_LEAD), proc.log_text()[-3000:]
        return proc.exited() is not None or await acked_seq(js) > beyond

    await wait_until(acked, f"the leader (pid {proc.proc.pid}) to handle new events")


async def failover_run(nats_url: str, redis_url: str, folder: Path, plan: tuple[str, ...]) -> None:
    """Run ``plan`` (see ``PLAN``) against three core services under a steady
    stream of events, then check the decision stream, the dead letters, the terms
    and the kills, and print the failover times."""
    rng = random.Random(19)
    events = scenario(rounds=ROUNDS, seed=5)
    expected = reference_decisions(events)
    sup = Supervisor(nats_url, redis_url, folder)
    pacer = Pacer(events)
    watch = TermWatch()
    kills: list[Kill] = []
    began = time.monotonic()
    async with connected(nats_url) as js:
        # A duplicate window shorter than a takeover: only the successor's own
        # watermark can keep a decision from being stored twice.
        await ensure_streams(js, decisions_window_s=0.5)
        publishing = asyncio.create_task(pacer.run(js))
        sup.top_up()
        kv = await lease_kv(js)
        watching = asyncio.create_task(watch.follow(kv))
        term, acked = 0, 0
        try:
            while len(kills) < len(plan):
                kind = plan[len(kills)]
                pid, term = await leader(kv, sup, term)
                proc = sup.procs[pid]
                sup.top_up()  # the dead ones' places, as a supervisor restarts them
                if ":" in kind:  # the leader was started to kill itself there
                    assert sup.faults.get(pid) == kind, (kind, sup.faults.get(pid))
                    assert await exited(proc, f"the fault {kind}") == -signal.SIGKILL
                    kills.append(Kill(kind, pid, term, time.monotonic()))
                    continue
                await progress(js, proc, acked)
                if proc.exited() is not None:  # it lost the lead by itself (a stall)
                    continue
                acked = await acked_seq(js)
                following = plan[len(kills) + 1] if len(kills) + 1 < len(plan) else ""
                if ":" in following:
                    # Leave one standby, started to kill itself at that point.
                    for other in sup.running():
                        if other is not proc:
                            other.proc.send_signal(signal.SIGTERM)
                            assert await exited(other, "a standby to stop") in STANDBY_STOPPED
                    sup.start(following)
                await asyncio.sleep(rng.uniform(0.0, 0.8))
                if proc.exited() is not None or (await leader(kv, sup, term - 1))[0] != pid:
                    continue  # it lost the lead by itself meanwhile
                proc.proc.send_signal(signal.SIGKILL if kind == "sigkill" else signal.SIGTERM)
                kills.append(Kill(kind, pid, term, time.monotonic()))
                status = await exited(proc, f"the leader to stop after {kind}")
                assert status == (-signal.SIGKILL if kind == "sigkill" else 0), proc.log_text()
            await leader(kv, sup, term)  # the last successor
            pacer.hurried.set()
            await publishing

            async def all_handled() -> bool:
                return await acked_seq(js) >= pacer.last_seq

            sup.top_up()
            await wait_until(all_handled, f"every event handled:\n{sup.logs()}", 60)
            await asyncio.sleep(3 * TTL_S)  # the last term's renewals, to the watch
            status = await core_status(redis_url)  # the leader's, written since it leads
            last = await leader(kv, sup, 0)
            assert status is not None and (status.term, status.holder) == (
                last[1],
                f"{socket.gethostname()}:{last[0]}",
            ), status
            for proc in sup.running():
                proc.proc.send_signal(signal.SIGTERM)
                assert await exited(proc, "a service to stop") in STANDBY_STOPPED, proc.log_text()
        finally:
            pacer.hurried.set()
            publishing.cancel()
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await publishing
            with contextlib.suppress(asyncio.CancelledError):
                await watching
        stored = await read_stream(js, DECISIONS_STREAM)
        letters = await read_stream(js, DEADLETTER_STREAM)

    assert_exact(stored, expected)
    assert letters == [], letters
    terms = [seen[1] for seen in watch.terms]
    assert terms == sorted(set(terms)), f"terms not strictly increasing: {terms}"
    assert len({kill.pid for kill in kills}) == len(plan), "a leader was killed twice"
    assert [kill.kind for kill in kills] == list(plan)
    assert all(seen[2] in sup.procs for seen in watch.terms)
    for kill in kills:
        seen = watch.after(kill.term)
        assert seen is not None, f"no term after {kill.term} ({kill.kind})"
        kill.failover_s = seen[0] - kill.at
    statuses = sup.statuses()
    lost = [pid for pid, status in statuses.items() if status == EXIT_LOST_LEAD]
    fine = (*STANDBY_STOPPED, -signal.SIGKILL, EXIT_LOST_LEAD)
    odd = {pid: s for pid, s in statuses.items() if s not in fine}
    assert not odd, f"unexpected exit statuses {odd}:\n{sup.logs()}"
    figures = [kill.failover_s for kill in kills if kill.failover_s is not None]
    print(
        f"\nfailover, lease {TTL_S:g} s, {len(kills)} kills, {len(events)} events, "
        f"{sup.started} core services started, {len(lost)} lost the lead by themselves, "
        f"{len(terms)} terms, {time.monotonic() - began:.1f} s:"
    )
    for kill in kills:
        print(f"  {kill.kind:<13} term {kill.term:>5}  pid {kill.pid:>7}  {kill.failover_s:.3f} s")
    print(f"  failover p50 {statistics.median(figures):.3f} s, max {max(figures):.3f} s")


def test_ten_leaders_killed_under_load_lose_and_repeat_no_decision(
    bus: tuple[str, str], workdir: Path
) -> None:
    nats_url, redis_url = bus
    run(failover_run(nats_url, redis_url, workdir, PLAN))


def test_a_leader_whose_lease_is_taken_stops_at_once_with_exit_status_3(
    bus: tuple[str, str], workdir: Path
) -> None:
    """An operator (or a successor after an expiry) wrote the lease key: the leader's
    next renewal is refused, and it stops with one line and exit status 3, releasing
    nothing (the key stays the intruder's)."""
    nats_url, redis_url = bus
    sup = Supervisor(nats_url, redis_url, workdir)

    async def go() -> tuple[int, int, bytes | None]:
        async with connected(nats_url) as js:
            await ensure_streams(js)
            proc = sup.start()
            kv = await lease_kv(js)
            pid, term = await leader(kv, sup, 0)
            assert pid == proc.proc.pid
            await kv.put(LEASE_KEY, b'{"holder": "intruder", "nonce": "0", "term": 1}')
            status = await exited(proc, "the leader to stop", 10 * TTL_S)
            return term, status, (await kv.get(LEASE_KEY)).value

    term, status, value = run(go())
    (proc,) = sup.procs.values()
    assert status == EXIT_LOST_LEAD, proc.log_text()
    last = proc.log_text().strip().splitlines()[-1]
    assert last == (
        f"xce-core-service: lost the lead (term {term} of {socket.gethostname()}:"
        f"{proc.proc.pid}) after event seq 0: stopped, sending nothing more (exit status 3)"
    ), proc.log_text()
    assert value == b'{"holder": "intruder", "nonce": "0", "term": 1}'
