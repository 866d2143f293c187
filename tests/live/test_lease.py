"""The leader lease (``xce_kit.lease``) on a real nats-server: one contender leads,
the others wait; a release hands over at once; a leader cut off from NATS, killed,
or whose key was overwritten stops leading before anyone else can start; a NATS
restart keeps or loses the lease cleanly; never two leaders at once.

A leader cut off from NATS is one whose connection goes through ``StallingProxy``,
which holds every byte both ways while stalled (as a network partition does) and
lets the held bytes through once resumed (so a renewal sent during the stall
reaches the server late).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError
from xce_kit.connection import connect_nats
from xce_kit.lease import LEASE_BUCKET, LEASE_KEY, Lease, LeaseConfigError, LeaseHolder
from xce_kit.streams import StreamRefused

from tests.live.helpers import WAIT_S, connected, run
from tests.live.servers import ServerProcess

pytestmark = pytest.mark.nats

ROOT = Path(__file__).resolve().parents[2]
#: The lease time of most tests, s: short, so that expiries come quickly.
TTL = 1.0
log = logging.getLogger("tests.live.test_lease")


@pytest.fixture
def lease_url(nats_url: str) -> str:
    """The NATS URL, with no lease bucket on the server."""

    async def drop() -> None:
        async with connected(nats_url) as js:
            with contextlib.suppress(NotFoundError):
                await js.delete_key_value(LEASE_BUCKET)

    run(drop())
    return nats_url


@contextlib.asynccontextmanager
async def contender(url: str, holder: str, ttl_s: float = TTL, **kw: Any) -> AsyncIterator[Lease]:
    """A ``Lease`` on a connection of its own, released and closed at the end."""
    nc = await connect_nats(url, holder, log)
    lease = None
    try:
        lease = Lease(nc.jetstream(), holder, ttl_s, **kw)
        yield lease
    finally:
        await close(nc, lease)


async def close(nc: NatsClient, lease: Lease | None) -> None:
    """Release ``lease`` (if any) and close ``nc``, giving up after a few seconds."""
    with contextlib.suppress(Exception):
        if lease is not None:
            await asyncio.wait_for(lease.release(), 5)
        await asyncio.wait_for(nc.close(), 5)


class StallingProxy:
    """A TCP proxy to ``127.0.0.1:upstream`` that can stall: while stalled, every
    byte read either way is held, and goes on once resumed."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._pumps: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    async def __aenter__(self) -> StallingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.flowing.set()
        assert self._server is not None
        self._server.close()
        for task in self._pumps:
            task.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)

    def stall(self) -> None:
        self.flowing.clear()

    def resume(self) -> None:
        self.flowing.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pump(source, sink))
            self._pumps.add(task)
            task.add_done_callback(self._pumps.discard)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                await self.flowing.wait()
                sink.write(data)
                await sink.drain()
        except OSError:
            pass
        finally:
            sink.close()


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


@dataclass
class Watchdog:
    """Samples ``leading`` of every contender every 2 ms; ``both`` lists the times
    two led at once, ``leaders`` who led at each sample where one did."""

    leases: list[Lease]
    both: list[tuple[float, list[str]]] = field(default_factory=list)
    leaders: set[str] = field(default_factory=set)

    async def run(self) -> None:
        while True:
            now = [lease.holder_id for lease in self.leases if lease.leading]
            if len(now) > 1:
                self.both.append((time.monotonic(), now))
            self.leaders.update(now)
            await asyncio.sleep(0.002)


@contextlib.asynccontextmanager
async def watching(*leases: Lease) -> AsyncIterator[Watchdog]:
    """A running ``Watchdog`` of ``leases``; on leaving, asserts none overlapped."""
    dog = Watchdog(list(leases))
    task = asyncio.create_task(dog.run())
    try:
        yield dog
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert dog.both == [], f"two leaders at once: {dog.both[:5]}"


# --- one leads; a release hands over ------------------------------------------------------


def test_one_of_two_contenders_leads_and_the_other_takes_over_when_it_releases(
    lease_url: str,
) -> None:
    ttl = 3.0  # a release must hand over well before the key could expire

    async def go() -> None:
        async with contender(lease_url, "a", ttl) as a, contender(lease_url, "b", ttl) as b:
            async with watching(a, b):
                tasks = {asyncio.create_task(a.acquire()): a, asyncio.create_task(b.acquire()): b}
                done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                first, waiting = tasks[done.pop()], pending.pop()
                second = tasks[waiting]
                revision = first.revision
                await asyncio.sleep(2 * ttl / 3 + 0.2)  # two renewals
                assert first.leading and not second.leading and not waiting.done()
                assert first.revision is not None and revision is not None
                assert first.revision > revision  # renewed
                assert second.seen == LeaseHolder(first.holder_id, first.term)
                released = time.monotonic()
                await first.release()
                term = await asyncio.wait_for(waiting, WAIT_S)
            assert second.leading and not first.leading
            assert first.term is not None and term > first.term
            assert not first.lost.is_set() and first.lost_reason is None
            assert second.started_at is not None
            # Taken over on the delete, not when the key expired (≥ 2 s later).
            assert second.started_at - released < 2 * ttl / 3, second.started_at - released

    run(go())


def test_a_lease_acquired_twice_keeps_its_term_and_a_release_without_a_term_does_nothing(
    lease_url: str,
) -> None:
    async def go() -> None:
        async with contender(lease_url, "a") as a:
            await a.release()  # never led: nothing to delete
            term = await a.acquire()
            assert await a.acquire() == term
            await a.release()
            assert not a.leading
            await a.release()
            assert await a.acquire() > term  # a new term after a release

    run(go())


# --- a leader that stops renewing --------------------------------------------------------


def test_a_leader_cut_off_from_nats_stops_before_the_other_takes_over(lease_url: str) -> None:
    async def go() -> None:
        async with (
            StallingProxy(port_of(lease_url)) as proxy,
            contender(proxy.url, "a") as a,
            contender(lease_url, "b") as b,
            watching(a, b),
        ):
            await a.acquire()
            waiting = asyncio.create_task(b.acquire())
            await asyncio.sleep(TTL)
            proxy.stall()
            await asyncio.wait_for(a.lost.wait(), WAIT_S)
            assert not a.leading and a.lost_reason == "no renewal stored for 0.8 s"
            await asyncio.wait_for(waiting, WAIT_S)
            assert a.deadline is not None and a.lost_at is not None
            assert b.started_at is not None
            # The successor starts after the leader deposed itself, by its own clock.
            assert a.deadline <= a.lost_at < b.started_at
            assert b.term is not None and a.term is not None and b.term > a.term
            # The renewal held in the stall reaches the server now: refused, and the
            # old leader waits as a standby.
            proxy.resume()
            again = asyncio.create_task(a.acquire())
            await asyncio.sleep(2 * TTL)
            assert b.leading and not a.leading and not again.done()
            assert a.seen == LeaseHolder("b", b.term)
            again.cancel()

    run(go())


def test_a_killed_leader_is_replaced_after_its_deadline(lease_url: str) -> None:
    async def go() -> None:
        holder = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.live.lease_holder",
            lease_url,
            str(TTL),
            "killed",
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
        )
        assert holder.stdout is not None
        try:
            first = (await asyncio.wait_for(holder.stdout.readline(), WAIT_S)).decode()
            assert first.startswith("term "), first
            async with contender(lease_url, "b") as b:
                waiting = asyncio.create_task(b.acquire())
                deadlines = []
                while len(deadlines) < 4:  # its first deadline and three renewals
                    line = (await asyncio.wait_for(holder.stdout.readline(), WAIT_S)).decode()
                    deadlines.append(float(line.split()[1]))
                holder.send_signal(signal.SIGKILL)
                deadlines += [float(line.split()[1]) for line in await remaining(holder)]
                await asyncio.wait_for(waiting, WAIT_S)
                assert b.started_at is not None and b.started_at > deadlines[-1]
                assert b.term is not None and b.term > int(first.split()[1])
        finally:
            if holder.returncode is None:
                holder.kill()
            await holder.wait()
        assert holder.returncode == -signal.SIGKILL

    run(go())


async def remaining(proc: asyncio.subprocess.Process) -> list[str]:
    """The lines ``proc`` wrote that were not read yet, once it has ended."""
    assert proc.stdout is not None
    await proc.wait()
    return (await proc.stdout.read()).decode().splitlines()


# --- a key written by someone else --------------------------------------------------------


def test_a_leader_whose_key_was_overwritten_loses_at_its_next_renewal(lease_url: str) -> None:
    async def go() -> None:
        async with contender(lease_url, "a") as a, connected(lease_url) as js:
            await a.acquire()
            kv = await js.key_value(LEASE_BUCKET)
            await kv.put(LEASE_KEY, b"an operator's hand")
            await asyncio.wait_for(a.lost.wait(), WAIT_S)
            assert not a.leading
            assert a.lost_reason == "taken by an operator's hand (term None)"
            # Found at a renewal, before its deadline, not when it ran out.
            assert a.lost_at is not None and a.deadline is not None and a.lost_at < a.deadline
            await a.release()  # nothing to delete: the key is not its own
            assert (await kv.get(LEASE_KEY)).value == b"an operator's hand"

    run(go())


def test_a_renewal_stored_whose_acknowledgement_was_lost_is_adopted(lease_url: str) -> None:
    async def go() -> None:
        async with contender(lease_url, "a") as a, connected(lease_url) as js:
            await a.acquire()
            await asyncio.sleep(TTL / 2)  # past the first renewal: the value names the term
            kv = await js.key_value(LEASE_BUCKET)
            entry = await kv.get(LEASE_KEY)
            assert entry.value is not None and entry.revision is not None
            # The leader's own value, written as its renewal would have been.
            await kv.update(LEASE_KEY, entry.value, last=entry.revision)
            await asyncio.sleep(2 * TTL)
            assert a.leading and not a.lost.is_set()
            assert a.revision is not None and a.revision > entry.revision + 1

    run(go())


# --- NATS restarted while leading --------------------------------------------------------


@pytest.mark.parametrize(
    "ttl, down_s",
    [(4.0, 0.0), (0.5, 1.5)],
    ids=["restarted within the lease", "down for three lease times"],
)
def test_a_nats_restart_while_leading_keeps_or_loses_the_lease_cleanly(
    lease_url: str, nats_server_proc: ServerProcess, ttl: float, down_s: float
) -> None:
    def restart() -> None:
        nats_server_proc.kill()
        time.sleep(down_s)
        nats_server_proc.start()

    async def go() -> None:
        async with (
            contender(lease_url, "a", ttl) as a,
            contender(lease_url, "b", ttl) as b,
            watching(a, b),
        ):
            await a.acquire()
            waiting = asyncio.create_task(b.acquire())
            await asyncio.sleep(ttl / 2)
            await asyncio.to_thread(restart)
            restarted = a.revision
            assert restarted is not None
            await asyncio.sleep(2 * ttl)  # settle
            if down_s > ttl:
                assert a.lost.is_set(), "a leader cut off longer than its lease must stop"
            if a.lost.is_set():
                await asyncio.wait_for(waiting, WAIT_S)
                assert b.leading and not a.leading
                assert a.deadline is not None and b.started_at is not None
                assert a.deadline < b.started_at
            else:  # kept: renewed since, and the standby still waits, watching
                assert a.leading and not waiting.done()
                assert a.revision is not None and a.revision > restarted
                released = time.monotonic()
                await a.release()
                await asyncio.wait_for(waiting, WAIT_S)
                assert b.started_at is not None
                # Taken over on the delete (the standby watches anew after the
                # restart), not when the key expired (≥ 2.7 s later).
                assert b.started_at - released < 2 * ttl / 3, b.started_at - released

    run(go())


# --- random handovers -----------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2])
def test_random_releases_and_stalls_never_make_two_leaders(lease_url: str, seed: int) -> None:
    """Three contenders, each behind its own proxy, take turns: each term ends after a
    random time with a release, or a stall of its connection (as a crash looks to
    the others) resumed once it lost. Terms grow, and a term after a stall starts
    after the stalled leader's deadline."""
    rng = random.Random(seed)
    ttl, terms_wanted = 0.5, 8
    terms: list[tuple[int, str, float, float, str]] = []  # term, holder, start, end, how

    async def turn(lease: Lease, proxy: StallingProxy) -> None:
        while len(terms) < terms_wanted:
            term = await lease.acquire()
            assert lease.started_at is not None
            await asyncio.sleep(rng.uniform(0, 2 * ttl))
            if rng.random() < 0.5:
                await lease.release()
                terms.append((term, lease.holder_id, lease.started_at, time.monotonic(), "release"))
            else:
                proxy.stall()
                await lease.lost.wait()
                assert lease.deadline is not None
                terms.append((term, lease.holder_id, lease.started_at, lease.deadline, "stall"))
                proxy.resume()

    async def go() -> None:
        upstream = port_of(lease_url)
        async with contextlib.AsyncExitStack() as stack:
            proxies = [await stack.enter_async_context(StallingProxy(upstream)) for _ in "abc"]
            leases = [
                await stack.enter_async_context(contender(p.url, name, ttl))
                for p, name in zip(proxies, "abc", strict=True)
            ]
            async with watching(*leases):
                tasks = [
                    asyncio.create_task(turn(*pair)) for pair in zip(leases, proxies, strict=True)
                ]
                try:
                    await asyncio.wait_for(
                        asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION), 120
                    )
                finally:
                    for task in tasks:
                        task.cancel()
                    results = await asyncio.gather(*tasks, return_exceptions=True)
            for result in results:
                if not isinstance(result, asyncio.CancelledError | type(None)):
                    raise result

    run(go())
    terms.sort()
    assert len(terms) >= terms_wanted
    for before, after in itertools.pairwise(terms):
        assert after[0] > before[0]
        if before[4] == "stall":  # the next started only after the stalled one's deadline
            assert after[2] > before[3], (before, after)


# --- refused configurations -----------------------------------------------------------------


@pytest.mark.parametrize(
    "args, kw, message",
    [
        (("a", 0), {}, "lease time must be a positive number of seconds, not 0"),
        (("a", -1.0), {}, "lease time must be a positive number of seconds, not -1.0"),
        (("a", float("nan")), {}, "lease time must be a positive number of seconds, not nan"),
        (("a", float("inf")), {}, "lease time must be a positive number of seconds, not inf"),
        (
            ("a", 3.0),
            {"margin_s": 2.0},
            "lease margin must be 0 s to 2/3 of the 3 s lease, not 2.0",
        ),
        (
            ("a", 3.0),
            {"margin_s": -0.1},
            "lease margin must be 0 s to 2/3 of the 3 s lease, not -0.1",
        ),
        (("a", 3.0), {"replicas": 0}, "lease replicas must be 1 to 5, not 0"),
        (("a", 3.0), {"replicas": 6}, "lease replicas must be 1 to 5, not 6"),
        ((" ", 3.0), {}, "lease holder id must not be empty"),
        (
            ("a", 3.0),
            {"bucket": "a.b"},
            "lease bucket name must be letters, digits, - and _, not 'a.b'",
        ),
    ],
)
def test_bad_arguments_are_refused_in_one_line(
    args: tuple[str, float], kw: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        Lease(None, *args, **kw)  # type: ignore[arg-type]  # refused before any use
    assert str(caught.value) == message


def test_a_bucket_with_another_lease_time_is_refused_in_one_line(lease_url: str) -> None:
    async def go() -> None:
        async with contender(lease_url, "a", 2.0) as a:
            await a.acquire()
            async with contender(lease_url, "b", 3.0) as b:
                with pytest.raises(LeaseConfigError) as caught:
                    await b.acquire()
        assert str(caught.value) == (
            "lease bucket XCE_CORE_LEASE has a max age of 2 s, not the lease time of 3 s: "
            "start every contender with the same lease time, or delete the bucket "
            "(nats kv del XCE_CORE_LEASE) while none runs"
        )

    run(go())


def test_replicas_a_lone_server_cannot_keep_are_refused_in_one_line(lease_url: str) -> None:
    async def go() -> None:
        async with contender(lease_url, "a", replicas=3) as a:
            with pytest.raises(StreamRefused) as caught:
                await a.acquire()
        text = str(caught.value)
        assert text.startswith(
            "lease bucket XCE_CORE_LEASE (max age 1 s, 3 replicas) cannot be created: "
        ), text
        assert "\n" not in text

    run(go())
