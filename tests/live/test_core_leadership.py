"""The core service's leadership seam against real servers: a standby consumes,
publishes and checkpoints nothing until it leads, then makes exactly the
uninterrupted decision stream; a service that loses the lead stops at once,
publishing nothing more and writing no checkpoint, and releases the lead after a
clean stop."""

from __future__ import annotations

import asyncio

import pytest
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from xce_driver.live.core_service import CoreService, CoreServiceOptions
from xce_kit.redis_client import redis_from_url
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

    def __init__(self) -> None:
        self.granted = asyncio.Event()
        self.held = True
        self.released = False

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
    bus: tuple[str, str],
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
            await asyncio.sleep(1.0)  # a standby's chance to do what it must not
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

    standby = run(go())
    assert standby == (False, 0, None, 0)
    assert baton.released

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
            await asyncio.wait_for(task, 10)  # returns by itself: no stop asked
            after = len(await read_stream(js, DECISIONS_STREAM))
            return before, after, service.seq

    before, after, seq = run(go())
    assert before == len(reference_decisions(events[:half])) > 0
    assert (after, seq) == (before, half)
    # A lone core writes a last checkpoint when it stops; one that lost the lead
    # must not (its successor may have written one already).
    assert run(checkpoint_of(redis_url)) is None
    assert not baton.released
