"""The core service's first tier: its loop over the in-memory bus
(``xce_kit.memory_bus``), no nats-server. Events in, decisions out byte for byte as an
in-process core makes them; a malformed event dead-lettered; a restart from an
earlier checkpoint skipping the decisions already on the stream (the watermark).
The checkpoints go to a real redis-server (the service has no Redis seam, and Redis
starts in milliseconds); what only a real NATS server shows (restarts, SIGKILLs,
lost deliveries) stays in ``test_core_service.py``."""

from __future__ import annotations

import asyncio
import logging

import pytest
from nats.js import JetStreamContext
from xce_core.core import SchedCore
from xce_core.snapshot import save_snapshot
from xce_driver.live.core_service import CoreService, CoreServiceOptions
from xce_kit.memory_bus import MemoryBus
from xce_kit.redis_client import redis_from_url
from xce_schemas import CoreCheckpoint, CoreEvent, DeadLetter
from xce_schemas.bus import CORE_CHECKPOINT_KEY, DEADLETTER_STREAM, DECISIONS_STREAM

from tests.live.helpers import (
    Stored,
    publish,
    read_stream,
    reference_decisions,
    run,
    scenario,
    wait_until,
)
from tests.live.test_core_service import assert_exact, checkpoint

pytestmark = pytest.mark.redis


def options(redis_url: str) -> CoreServiceOptions:
    """Options for a quick stop: a short fetch, a checkpoint every 5 events."""
    return CoreServiceOptions(
        nats_url="memory://", redis_url=redis_url, snapshot_every=5, fetch_timeout_s=0.02
    )


async def run_until(bus: MemoryBus, opts: CoreServiceOptions, last_seq: int) -> CoreService:
    """Run a core service on ``bus`` until it handled event ``last_seq``, then stop it."""
    service = CoreService(opts, connect=bus.connect)
    task = asyncio.create_task(service.run())

    async def caught_up() -> bool:
        if task.done():
            task.result()
            raise AssertionError("the service stopped on its own")
        return service.seq >= last_seq

    await wait_until(caught_up, f"the service to handle event {last_seq}", timeout_s=10)
    service.stop()
    await task
    return service


async def client(bus: MemoryBus) -> JetStreamContext:
    """A JetStream context of a test client of ``bus``."""
    return (await bus.connect("memory://", "test", logging.getLogger(__name__))).jetstream()


def test_decisions_equal_an_in_process_core_and_the_checkpoint_covers_all(redis_db: str) -> None:
    events = scenario()

    async def go() -> tuple[list[Stored], CoreService, CoreCheckpoint | None]:
        bus = MemoryBus()
        js = await client(bus)
        seqs = await publish(js, events, batch=4)
        service = await run_until(bus, options(redis_db), seqs[-1])
        return await read_stream(js, DECISIONS_STREAM), service, await checkpoint(redis_db)

    stored, service, saved = run(go())
    assert_exact(stored, reference_decisions(events))
    reference = SchedCore(on_decision=lambda d: None, prng_seed=0)
    for event in events:
        reference.push_event(event)
    assert saved is not None
    assert saved.snapshot.model_dump_json() == save_snapshot(reference).model_dump_json()
    sample = service.metrics.registry.get_sample_value
    assert sample("xce_core_events_total") == len(events)


def test_a_malformed_event_is_dead_lettered_and_the_rest_taken(redis_db: str) -> None:
    events = scenario(rounds=4)

    async def go() -> tuple[list[Stored], list[Stored]]:
        bus = MemoryBus()
        js = await client(bus)
        await publish(js, events[:2])
        bad = await js.publish("xce.events.JOBS_PUSH", b'{"type": "JOBS_PUSH", "ts": "soon"}')
        seqs = await publish(js, events[2:])
        await run_until(bus, options(redis_db), seqs[-1])
        letters = await read_stream(js, DEADLETTER_STREAM)
        assert [s.msg_id for s in letters] == [f"xce-core:dl:{bad.seq}"]
        return await read_stream(js, DECISIONS_STREAM), letters

    decisions, letters = run(go())
    letter = DeadLetter.model_validate_json(letters[0].data)
    assert letter.seq == 3 and letter.subject == "xce.events.JOBS_PUSH"
    assert "ts" in letter.reason
    assert_exact(decisions, reference_decisions(events))


def test_a_restart_from_an_earlier_checkpoint_skips_what_is_on_the_stream(redis_db: str) -> None:
    events = scenario()
    back = 10  # the checkpoint the restart goes on from: after event 10

    def core_after(taken: list[CoreEvent]) -> CoreCheckpoint:
        core = SchedCore(on_decision=lambda d: None, prng_seed=0)
        for event in taken:
            core.push_event(event)
        return CoreCheckpoint(seq=len(taken), snapshot=save_snapshot(core))

    async def go() -> tuple[list[Stored], CoreService]:
        bus = MemoryBus()
        js = await client(bus)
        seqs = await publish(js, events[:-5])
        await run_until(bus, options(redis_db), seqs[-1])
        redis = redis_from_url(redis_db)
        await redis.set(CORE_CHECKPOINT_KEY, core_after(events[:back]).model_dump_json())
        await redis.aclose()
        seqs = await publish(js, events[-5:])
        service = await run_until(bus, options(redis_db), seqs[-1])
        return await read_stream(js, DECISIONS_STREAM), service

    stored, service = run(go())
    # Each decision once, in order: those of events 11.. up to the watermark were
    # skipped, the rest published after them.
    assert_exact(stored, reference_decisions(events))
    skipped = len(reference_decisions(events[: len(events) - 5])) - len(
        reference_decisions(events[:back])
    )
    assert skipped > 0
    assert service.metrics.registry.get_sample_value("xce_core_decisions_skipped_total") == skipped
