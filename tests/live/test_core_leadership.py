"""The core service's leadership seam against real servers: a standby consumes,
publishes and checkpoints nothing until it leads, then makes exactly the
uninterrupted decision stream; a service that loses the lead stops at once (also
while it waits for events), publishing nothing more and writing no checkpoint, and
releases the lead after a clean stop; a fenced publisher sends nothing once its
fence says no. ``test_core_failover.py`` runs the real lease."""

from __future__ import annotations

import asyncio
import logging
import time

import nats
import pytest
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from xce_driver.live.core_service import CoreService, CoreServiceOptions, LeadershipLost
from xce_driver.live.core_service.leadership import STANDBY_NOTICE_S
from xce_kit.auth import nats_credentials
from xce_kit.publisher import ChainedPublisher, Outgoing, publish_until_acked
from xce_kit.redis_client import redis_from_url
from xce_kit.streams import ensure_streams
from xce_schemas.bus import CORE_CHECKPOINT_KEY, DECISIONS_STREAM, EVENTS_STREAM

from tests.live.helpers import (
    connected,
    publish,
    read_stream,
    reference_decisions,
    run,
    scenario,
    wait_until,
)

pytestmark = [pytest.mark.nats, pytest.mark.redis]


class Baton:
    """A leadership the test hands over and takes back (``Leadership``)."""

    term = 1
    holder_id = "baton"

    def __init__(self) -> None:
        self.granted = asyncio.Event()
        self.held = True
        self.released = False
        self.lost = asyncio.Event()

    @property
    def leading(self) -> bool:
        return self.granted.is_set() and self.held

    async def acquire(self) -> None:
        await self.granted.wait()

    async def release(self) -> None:
        self.released = True


async def has_consumer(js: JetStreamContext) -> bool:
    try:
        await js.consumer_info(EVENTS_STREAM, "xce-core")
    except NotFoundError:
        return False
    return True


async def checkpoint_of(redis_url: str) -> bytes | None:
    client = redis_from_url(redis_url)
    try:
        raw = await client.get(CORE_CHECKPOINT_KEY)
        return raw.encode() if isinstance(raw, str) else raw
    finally:
        await client.aclose()


def test_a_standby_waits_until_it_leads_then_makes_the_uninterrupted_stream(
    bus: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    nats_url, redis_url = bus
    events = scenario()
    baton = Baton()
    service = CoreService(
        CoreServiceOptions(nats_url=nats_url, redis_url=redis_url), leadership=lambda _js: baton
    )

    async def go() -> tuple[bool, int, bytes | None, int]:
        async with connected(nats_url) as js:
            seqs = await publish(js, events)
            task = asyncio.create_task(service.run())
            await asyncio.sleep(STANDBY_NOTICE_S + 0.5)  # a standby's chance to misbehave
            standby = (
                await has_consumer(js),
                len(await read_stream(js, DECISIONS_STREAM)),
                await checkpoint_of(redis_url),
                service.seq,
            )
            baton.granted.set()

            async def caught_up() -> bool:
                return service.seq >= seqs[-1]

            await wait_until(caught_up, "the service to lead and handle every event")
            service.stop()
            await task
            return standby

    with caplog.at_level(logging.INFO, "xce_driver.live.core_service.leadership"):
        standby = run(go())
    assert standby == (False, 0, None, 0)
    assert baton.released
    said = [r.getMessage() for r in caplog.records if r.name.endswith(".leadership")]
    assert said == ["a standby: waiting for the lead (the lease is held by another core)"]

    async def stored() -> list[bytes]:
        async with connected(nats_url) as js:
            return [s.data for s in await read_stream(js, DECISIONS_STREAM)]

    assert run(stored()) == reference_decisions(events)


def test_a_service_that_loses_the_lead_stops_at_once_and_writes_nothing_more(
    bus: tuple[str, str],
) -> None:
    nats_url, redis_url = bus
    events = scenario()
    half = len(events) // 2
    baton = Baton()
    baton.granted.set()
    service = CoreService(
        CoreServiceOptions(nats_url=nats_url, redis_url=redis_url), leadership=lambda _js: baton
    )

    async def go() -> tuple[int, int, int]:
        async with connected(nats_url) as js:
            seqs = await publish(js, events[:half])
            task = asyncio.create_task(service.run())

            async def handled() -> bool:
                return service.seq >= seqs[-1]

            await wait_until(handled, "the first half handled")
            before = len(await read_stream(js, DECISIONS_STREAM))
            baton.held = False
            await publish(js, events[half:])
            with pytest.raises(LeadershipLost, match=r"lost the lead \(term 1 of baton\)"):
                await asyncio.wait_for(task, 10)  # ends by itself: no stop asked
            after = len(await read_stream(js, DECISIONS_STREAM))
            return before, after, service.seq

    before, after, seq = run(go())
    assert before == len(reference_decisions(events[:half])) > 0
    assert (after, seq) == (before, half)
    # A lone core writes a last checkpoint when it stops; one that lost the lead
    # must not (its successor may have written one already).
    assert run(checkpoint_of(redis_url)) is None
    assert not baton.released


def test_a_lost_lead_stops_the_service_at_once_even_while_it_waits_for_events(
    bus: tuple[str, str],
) -> None:
    """Only the race against ``lost`` can stop it here: its fetch waits 30 s."""
    nats_url, redis_url = bus
    events = scenario()
    baton = Baton()
    baton.granted.set()
    options = CoreServiceOptions(nats_url=nats_url, redis_url=redis_url, fetch_timeout_s=30)
    service = CoreService(options, leadership=lambda _js: baton)

    async def go() -> tuple[int, float]:
        async with connected(nats_url) as js:
            seqs = await publish(js, events)
            task = asyncio.create_task(service.run())

            async def handled() -> bool:
                return service.seq >= seqs[-1]

            await wait_until(handled, "every event handled")
            await asyncio.sleep(0.5)  # into its next fetch
            baton.held = False
            baton.lost.set()
            began = time.monotonic()
            with pytest.raises(LeadershipLost):
                await asyncio.wait_for(task, 5)
            return len(await read_stream(js, DECISIONS_STREAM)), time.monotonic() - began

    stored, took = run(go())
    assert stored == len(reference_decisions(events))
    assert took < 5  # not the fetch's 30 s
    assert not baton.released


def test_a_fenced_publisher_sends_nothing_once_the_fence_says_no(bus: tuple[str, str]) -> None:
    """The fence is asked before each window of a ``ChainedPublisher`` and each try
    of ``publish_until_acked``; once it raises, nothing more reaches the stream."""
    nats_url, _ = bus
    allowed = [2]  # windows (tries) the fence lets through

    def fence() -> None:
        if not allowed[0]:
            raise LeadershipLost("fenced")
        allowed[0] -= 1

    async def go() -> list[str | None]:
        nc = await nats.connect(nats_url, **nats_credentials().connect_options())
        try:
            js = nc.jetstream()
            await ensure_streams(js)
            items = [Outgoing(f"xce.decisions.T{i}", b"{}", f"m{i}") for i in range(7)]
            publisher = ChainedPublisher(
                nc, DECISIONS_STREAM, ack_timeout_s=5, window=3, fence=fence
            )
            confirmed: list[Outgoing] = []
            with pytest.raises(LeadershipLost):
                await publisher.publish(items, confirmed.append)
            assert [item.msg_id for item in confirmed] == ["m0", "m1", "m2", "m3", "m4", "m5"]
            with pytest.raises(LeadershipLost):
                await publish_until_acked(
                    js, "xce.decisions.X", b"{}", stream=DECISIONS_STREAM, msg_id="x", fence=fence
                )
            return [s.msg_id for s in await read_stream(js, DECISIONS_STREAM)]
        finally:
            await nc.close()

    assert run(go()) == ["m0", "m1", "m2", "m3", "m4", "m5"]
