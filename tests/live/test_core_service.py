"""The core service against real servers: the decisions on ``XCE_DECISIONS`` are,
byte for byte, those of an uninterrupted in-process core, also when the service is
killed (SIGKILL) at any point and restarted, and a malformed event is dead-lettered
without stopping anything."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest
import redis.asyncio as aioredis
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.js import JetStreamContext
from prometheus_client.parser import text_string_to_metric_families
from xce_core.core import SchedCore
from xce_core.snapshot import save_snapshot
from xce_driver.live.core_service import Batch, CoreService, CoreServiceOptions
from xce_driver.live.event_codec import decode_event
from xce_kit.streams import ensure_streams
from xce_schemas import (
    CoreCheckpoint,
    CoreEvent,
    DeadLetter,
    Decision,
    JobState,
    parse_decision,
    parse_event,
)
from xce_schemas.bus import (
    CORE_CHECKPOINT_KEY,
    DEADLETTER_STREAM,
    DECISIONS_STREAM,
    EVENTS_STREAM,
    MSG_ID_HEADER,
    parse_decision_msg_id,
)

from tests.live.helpers import (
    LEASE_TTL_S,
    ServiceProcess,
    Stored,
    acked_seq,
    connected,
    publish,
    read_stream,
    reference_decisions,
    scenario,
    wait_until,
)
from tests.live.servers import free_port

pytestmark = [pytest.mark.nats, pytest.mark.redis]

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    """Run a coroutine to its end in a fresh event loop."""

    async def main() -> T:
        return await coro

    return asyncio.run(main())


def assert_exact(stored: list[Stored], expected: list[bytes]) -> None:
    """The decision stream is ``expected``, each once, in order, ids in order."""
    assert len(stored) == len(expected), (
        f"{len(stored)} decisions on the stream, {len(expected)} expected"
    )
    for index, (got, want) in enumerate(zip(stored, expected, strict=True)):
        assert got.data == want, f"decision {index}: {got.data!r} != {want!r}"
        decision = parse_decision_json(got.data)
        assert got.subject == f"xce.decisions.{decision.op}"
    ids = [parse_decision_msg_id(s.msg_id or "") for s in stored]
    assert None not in ids
    assert ids == sorted(ids) and len(set(ids)) == len(ids), "ids out of order or repeated"


def parse_decision_json(data: bytes) -> Decision:
    return parse_decision(orjson.loads(data))


async def run_service(
    js: JetStreamContext, options: CoreServiceOptions, last_seq: int
) -> CoreService:
    """Run an in-process service until it handled event ``last_seq``, then stop it."""
    service = CoreService(options)
    task = asyncio.create_task(service.run())

    async def caught_up() -> bool:
        if task.done():
            task.result()  # raises what the service raised
            raise AssertionError("the service stopped on its own")
        return service.seq >= last_seq

    await wait_until(caught_up, f"the service to handle event {last_seq}")
    service.stop()
    await task
    return service


async def checkpoint(redis_url: str) -> CoreCheckpoint | None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        raw = await client.get(CORE_CHECKPOINT_KEY)
    finally:
        await client.aclose()
    return None if raw is None else CoreCheckpoint.model_validate_json(raw)


def test_decisions_on_the_bus_equal_an_in_process_core(bus: tuple[str, str]) -> None:
    nats_url, redis_url = bus
    events = scenario()
    expected = reference_decisions(events)
    options = CoreServiceOptions(nats_url=nats_url, redis_url=redis_url, snapshot_every=5)

    async def go() -> tuple[list[Stored], CoreService, CoreCheckpoint | None]:
        async with connected(nats_url) as js:
            seqs = await publish(js, events)
            service = await run_service(js, options, seqs[-1])
            return await read_stream(js, DECISIONS_STREAM), service, await checkpoint(redis_url)

    stored, service, saved = run(go())
    assert_exact(stored, expected)
    # The checkpoint written at the stop covers every event, and is the very state
    # of an in-process core that took the same events.
    reference = SchedCore(on_decision=lambda d: None, prng_seed=0)
    for event in events:
        reference.push_event(event)
    assert saved is not None and saved.seq == len(events)
    assert saved.snapshot.model_dump_json() == save_snapshot(reference).model_dump_json()
    sample = service.metrics.registry.get_sample_value
    assert sample("xce_core_events_total") == len(events)
    assert sample("xce_core_rounds_total") == sum(e.type == "BEGIN_ROUND" for e in events)
    dispatches = sum(b'"op":"DISPATCH"' in d for d in expected)
    assert sample("xce_core_decisions_total", {"op": "DISPATCH"}) == dispatches
    assert sample("xce_core_checkpoint_seq") == len(events)
    assert (sample("xce_core_last_round_timestamp_seconds") or 0) > 0
    # The job gauges are by queue, as the reference core's jobs are after the last round.
    for state, name in ((JobState.PEND, "pending"), (JobState.RUN, "running")):
        for queue in reference.state.queues:
            count = sum(
                job.queue == queue and job.state is state for job in reference.state.jobs.values()
            )
            assert (sample(f"xce_core_{name}_jobs", {"queue": queue}) or 0) == count


class LosesADelivery(CoreService):
    """A core service whose first delivery of event 3 is lost in transit (as in a
    NATS restart): it never sees it; event 4 comes first."""

    lost = False

    async def _handle(self, msgs: Sequence[Msg]) -> Batch:
        kept = [msg for msg in msgs if msg.metadata.sequence.stream != 3 or self.lost]
        self.lost = self.lost or len(kept) < len(msgs)
        return await super()._handle(kept)


def test_an_event_whose_delivery_is_lost_is_taken_in_order_not_skipped(
    bus: tuple[str, str],
) -> None:
    nats_url, redis_url = bus
    events = scenario()
    expected = reference_decisions(events)
    options = CoreServiceOptions(
        nats_url=nats_url, redis_url=redis_url, fetch_batch=1, ack_wait_s=1.0
    )

    async def go() -> tuple[list[Stored], LosesADelivery]:
        async with connected(nats_url) as js:
            seqs = await publish(js, events)
            service = LosesADelivery(options)
            task = asyncio.create_task(service.run())

            async def done() -> bool:
                # every event handled and acknowledged (acknowledging event 4 covers 3)
                return service.seq >= seqs[-1] and await acked_seq(js) >= seqs[-1]

            await wait_until(done, "every event handled and acknowledged")
            service.stop()
            await task
            return await read_stream(js, DECISIONS_STREAM), service

    stored, service = run(go())
    assert service.lost
    assert_exact(stored, expected)
    assert service.metrics.registry.get_sample_value("xce_core_events_total") == len(events)


def dead_letters_among(
    bus: tuple[str, str], events: list[CoreEvent], bad: list[tuple[str, bytes]]
) -> list[Stored]:
    """Publish the configuration and the hosts (``events[:2]``), the ``bad`` messages
    ``(subject, data)``, then the other events; run the service through them. Its
    decisions must be those of an in-process core over ``events``; its dead letters."""
    nats_url, redis_url = bus

    async def go() -> tuple[list[Stored], list[Stored]]:
        async with connected(nats_url) as js:
            await publish(js, events[:2])
            for subject, data in bad:
                await js.publish(subject, data, stream=EVENTS_STREAM)
            seqs = await publish(js, events[2:])
            options = CoreServiceOptions(nats_url=nats_url, redis_url=redis_url)
            await run_service(js, options, seqs[-1])
            return await read_stream(js, DECISIONS_STREAM), await read_stream(js, DEADLETTER_STREAM)

    decisions, letters = run(go())
    assert_exact(decisions, reference_decisions(events))
    return letters


def test_a_malformed_event_goes_to_the_dead_letter_subject_and_nothing_stops(
    bus: tuple[str, str],
) -> None:
    events = scenario(rounds=6)
    unknown_queue = (
        b'{"type":"JOBS_PUSH","ts":0,"payload":{"jobs":[{"jobid":999,"queue":"nosuch",'
        b'"submit_ts":0}]}}'
    )
    bad: list[tuple[str, bytes, str]] = [  # subject, data, expected reason
        ("xce.events.JOBS_PUSH", b"not json{", "JOBS_PUSH rejected: not JSON"),
        ("xce.events.JOBS_PUSH", b"[1, 2]", "JOBS_PUSH rejected: not a JSON object"),
        (
            "xce.events.JOBS_PUSH",
            b'{"type":"BEGIN_ROUND","ts":0}',
            "JOBS_PUSH rejected: type: 'BEGIN_ROUND' does not match the subject",
        ),
        (
            "xce.events.JOBS_PUSH",
            b'{"type":"JOBS_PUSH","ts":0,"payload":{"jobs":[{"jobid":5,"queue":"normal",'
            b'"tasks":"x","submit_ts":0}]}}',
            "JOBS_PUSH rejected: payload.jobs[0].tasks",
        ),
        (
            "xce.events.JOBS_PUSH",
            unknown_queue,
            "JOBS_PUSH rejected: payload.jobs[0].queue: unknown queue 'nosuch'",
        ),
        ("xce.events.NOPE", b"\xff\xfe", "subject 'xce.events.NOPE' names no event type"),
    ]
    letters = dead_letters_among(bus, events, [(subject, data) for subject, data, _ in bad])
    assert [s.subject for s in letters] == ["xce.deadletter.core"] * len(bad)
    parsed = [DeadLetter.model_validate_json(s.data) for s in letters]
    for letter, (subject, data, reason), seq in zip(parsed, bad, range(3, 9), strict=True):
        assert letter.subject == subject
        assert letter.reason.startswith(reason), letter.reason
        assert letter.seq == seq
        assert letter.data == data.decode("utf-8", errors="backslashreplace")


def test_a_bad_event_of_a_batch_is_dead_lettered_with_its_id_and_the_rest_taken(
    bus: tuple[str, str],
) -> None:
    """One event of a batch the core refuses (an unknown queue) goes to the dead
    letter with its id and place; the events around it, in the same message, are
    decided as an in-process core decides them."""
    nats_url, redis_url = bus
    events = scenario(rounds=6)
    unknown_queue = parse_event(
        b'{"type":"JOBS_PUSH","ts":0,"payload":{"jobs":[{"jobid":999,"queue":"nosuch",'
        b'"submit_ts":0}]}}'
    )
    mixed = [*events[2:4], unknown_queue, *events[4:]]

    async def go() -> tuple[list[Stored], list[Stored], list[int]]:
        async with connected(nats_url) as js:
            await publish(js, events[:2])  # the configuration and the hosts
            seqs = await publish(js, mixed, batch=4)
            options = CoreServiceOptions(nats_url=nats_url, redis_url=redis_url)
            await run_service(js, options, seqs[-1])
            return (
                await read_stream(js, DECISIONS_STREAM),
                await read_stream(js, DEADLETTER_STREAM),
                seqs,
            )

    decisions, letters, seqs = run(go())
    assert_exact(decisions, reference_decisions(events))
    (stored,) = letters
    letter = DeadLetter.model_validate_json(stored.data)
    assert letter.reason == (
        "event 2 of the batch: JOBS_PUSH rejected: payload.jobs[0].queue: unknown queue 'nosuch'"
    )
    assert (letter.subject, letter.seq, letter.event_id) == ("xce.events.BATCH", seqs[0], "e2")
    assert parse_event(letter.data) == unknown_queue
    assert stored.msg_id == f"xce-core:dl:{seqs[0]}:2"


def test_a_refused_message_near_the_size_limit_does_not_jam_the_service(
    bus: tuple[str, str],
) -> None:
    """A batch of ~900 KB that is not JSON (bytes that are not UTF-8: escaped, they
    would take 3.6 MB) is dead-lettered with the start of its payload and its size,
    and the events after it are taken."""
    events = scenario(rounds=4)
    huge = b"\xff" * 900_000
    (stored,) = dead_letters_among(bus, events, [("xce.events.BATCH", huge)])
    letter = DeadLetter.model_validate_json(stored.data)
    assert letter.reason.startswith("event batch rejected: not JSON")
    assert letter.data_size == len(huge) and letter.seq == 3


def test_decode_event_names_the_event_type_and_field() -> None:
    assert decode_event("xce.events.BEGIN_ROUND", b'{"type":"BEGIN_ROUND","ts":-1}') == (
        "BEGIN_ROUND rejected: ts: Input should be greater than or equal to 0"
    )
    event = decode_event("xce.events.BEGIN_ROUND", b'{"type":"BEGIN_ROUND","ts":7}')
    assert not isinstance(event, str) and event.ts == 7


async def until_acked(js: JetStreamContext, proc: ServiceProcess, seq: int, what: str) -> None:
    """Wait until the running ``proc`` acknowledged event ``seq``; fail if it exits."""

    async def acked() -> bool:
        assert proc.exited() is None, f"the service exited:\n{proc.log_text()}"
        return await acked_seq(js) >= seq

    await wait_until(acked, what)


async def until_killed(js: JetStreamContext, proc: ServiceProcess, last: int, fault: str) -> None:
    """Wait until ``proc`` killed itself at ``fault``; fail if it caught up instead."""

    async def gone() -> bool:
        if proc.exited() is None and await acked_seq(js) >= last:
            raise AssertionError(f"fault {fault} never happened:\n{proc.log_text()}")
        return proc.exited() is not None

    await wait_until(gone, f"the service to kill itself at {fault}")
    assert proc.exited() == -signal.SIGKILL, proc.log_text()


async def until_checkpointed(redis_url: str, proc: ServiceProcess, seq: int, what: str) -> None:
    """Wait until the running ``proc`` wrote a checkpoint covering event ``seq`` (so
    every decision up to it is on the stream); fail if it exits."""

    async def covered() -> bool:
        assert proc.exited() is None, f"the service exited:\n{proc.log_text()}"
        saved = await checkpoint(redis_url)
        return saved is not None and saved.seq >= seq

    await wait_until(covered, what)


def service_argv(*extra: str) -> list[str]:
    lease = ("--lease-ttl", str(LEASE_TTL_S))  # the console script's run too
    return ["--snapshot-every", "4", "--snapshot-seconds", "60", *lease, *extra]


#: Where each run of the crash test kills itself (SIGKILL): in the middle of an
#: event's decisions, after its decisions but before its ack, before and after a
#: checkpoint. Counts are per process.
FAULTS = ("decision:3", "ack:2", "checkpoint:1", "decision:9", "checkpointed:1", "ack:7")


@pytest.mark.parametrize("batch", [1, 5], ids=["one event per message", "batches of 5"])
def test_sigkill_at_every_critical_point_loses_and_repeats_no_decision(
    bus: tuple[str, str], workdir: Path, batch: int
) -> None:
    nats_url, redis_url = bus
    events = scenario()
    expected = reference_decisions(events)
    log = workdir / "service.log"
    metrics_port = free_port()

    async def go() -> tuple[list[Stored], int, str, int]:
        async with connected(nats_url) as js:
            # A duplicate window shorter than a restart: only the service's own
            # watermark can keep a re-handled event from publishing twice.
            await ensure_streams(js, decisions_window_s=0.5)
            seqs = await publish(js, events, batch)
            for fault in FAULTS:
                argv = service_argv("--fault-kill-at", fault)
                proc = ServiceProcess(nats_url, redis_url, log, *argv)
                await until_killed(js, proc, seqs[-1], fault)
            # The last run goes through the console script, with metrics.
            script = shutil.which("xce-core-service")
            assert script is not None, "the console script xce-core-service is not installed"
            argv = service_argv("--metrics-port", str(metrics_port))
            proc = ServiceProcess(nats_url, redis_url, log, *argv, program=[script])
            await until_acked(js, proc, seqs[-1], "the last run to handle every event")
            url = f"http://127.0.0.1:{metrics_port}/metrics"
            text = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
            status = proc.terminate()
            return await read_stream(js, DECISIONS_STREAM), status, text.decode(), seqs[-1]

    stored, status, metrics, last = run(go())
    assert_exact(stored, expected)
    assert status == 0, (workdir / "service.log").read_text()
    assert "xce_core_events_total" in metrics
    assert "xce_core_round_duration_seconds_bucket" in metrics
    saved = run(checkpoint(redis_url))
    assert saved is not None and saved.seq == last


def test_sigkill_from_outside_while_events_stream_in(bus: tuple[str, str], workdir: Path) -> None:
    nats_url, redis_url = bus
    events = scenario(rounds=16, seed=11)
    expected = reference_decisions(events)
    log = workdir / "service.log"

    async def go() -> list[Stored]:
        async with connected(nats_url) as js:
            proc = ServiceProcess(nats_url, redis_url, log, *service_argv())
            kills = 0
            for start in range(0, len(events), 6):
                seqs = await publish(js, events[start : start + 6])
                if start // 6 % 2 == 1:
                    # Kill it somewhere in this chunk: once it is done with the last.
                    await until_acked(js, proc, seqs[0] - 1, "the service to reach the chunk")
                    proc.kill()
                    kills += 1
                    proc = ServiceProcess(nats_url, redis_url, log, *service_argv())
            await until_acked(js, proc, len(events), "the service to handle every event")
            assert proc.terminate() == 0
            assert kills >= 3
            return await read_stream(js, DECISIONS_STREAM)

    assert_exact(run(go()), expected)


def test_a_bad_option_is_refused() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "xce_driver.live.core_service", "--snapshot-every", "0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr == (
        "xce-core-service: error: argument --snapshot-every: must be 1 or more, not 0\n"
    )


def test_the_service_rides_out_a_nats_server_restart(
    bus: tuple[str, str], workdir: Path, restart_nats: Callable[[], None]
) -> None:
    nats_url, redis_url = bus
    events = scenario()
    expected = reference_decisions(events)
    half = len(events) // 2
    log = workdir / "service.log"
    # A lease that outlasts the restart: a leader cut off from NATS for most of its
    # lease time stops (exit status 3) rather than risk two leaders.
    argv = ["--snapshot-every", "1000", "--snapshot-seconds", "0.1", "--lease-ttl", "10"]

    async def first_half() -> ServiceProcess:
        async with connected(nats_url) as js:
            await publish(js, events[:half])
            proc = ServiceProcess(nats_url, redis_url, log, *argv)
            await until_checkpointed(redis_url, proc, half, "the first half")
            return proc

    proc = run(first_half())
    restart_nats()

    async def second_half() -> list[Stored]:
        async with connected(nats_url) as js:
            await publish(js, events[half:])
            # The server may lose its consumer's acknowledgements when killed (they
            # come back after ack_wait), so progress is read from the checkpoint.
            await until_checkpointed(redis_url, proc, len(events), "the second half")
            assert proc.terminate() == 0
            return await read_stream(js, DECISIONS_STREAM)

    try:
        assert_exact(run(second_half()), expected)
    finally:
        proc.kill()


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        (b"not json", "checkpoint xce:core:snapshot: document: Invalid JSON"),
        (
            b'{"seq": 3, "stream": "OTHER", "snapshot": {}}',
            "checkpoint xce:core:snapshot: snapshot",
        ),
    ],
    ids=["not JSON", "no snapshot"],
)
def test_an_unusable_checkpoint_stops_the_service_with_a_reason(
    bus: tuple[str, str], stored: bytes, message: str
) -> None:
    nats_url, redis_url = bus

    async def store() -> None:
        client = aioredis.Redis.from_url(redis_url)
        await client.set(CORE_CHECKPOINT_KEY, stored)
        await client.aclose()

    run(store())
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "xce_driver.live.core_service",
            "--nats",
            nats_url,
            "--redis",
            redis_url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert f"xce-core-service: error: {message}" in result.stderr


def test_a_connection_closed_for_good_stops_the_service_with_the_error(
    bus: tuple[str, str],
) -> None:
    """nats-py closes a connection for good after most server errors: the service
    stops with that error (its console script exits 1) instead of fetching on."""
    nats_url, redis_url = bus
    service = CoreService(CoreServiceOptions(nats_url=nats_url, redis_url=redis_url))

    async def go() -> None:
        task = asyncio.create_task(service.run())
        async with connected(nats_url) as js:
            await publish(js, scenario()[:1])

        async def handling() -> bool:  # past start-up: in its loop
            return service.seq >= 1

        await wait_until(handling, "the service to handle an event")
        assert service._nc is not None
        await service._nc.close()
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(task, 10)

    run(go())


def test_an_unreachable_redis_is_named(nats_url: str) -> None:
    argv = [sys.executable, "-m", "xce_driver.live.core_service", "--nats", nats_url]
    argv += ["--redis", "redis://127.0.0.1:1/0"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("xce-core-service: error: Redis at redis://127.0.0.1:1/0: "), last
    assert "Traceback" not in done.stderr
    assert "disconnected from NATS" not in done.stderr  # it was not: it closed


# --- resuming past what the core did not write (issue 14 items 10 and 11) -----------


def core_decisions(stored: list[Stored]) -> list[Stored]:
    """The messages of ``stored`` that carry a core decision id."""
    return [s for s in stored if parse_decision_msg_id(s.msg_id or "") is not None]


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The samples a service serves on ``/metrics``, by (name, sorted labels)."""
    url = f"http://127.0.0.1:{port}/metrics"
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


#: A service that writes no checkpoint before it is killed: a restart handles every
#: event again, and only the watermark keeps their decisions from going out twice.
NO_CHECKPOINT = ("--snapshot-every", "100000", "--snapshot-seconds", "3600")

#: What gets onto XCE_DECISIONS while the core is down: (id, publish or delete).
TAMPERING = {
    "a message without an id": "no id",
    "another publisher's id": "other:1",
    "the last decision deleted": "delete",
}


@pytest.mark.parametrize("window_s", [3600.0, 0.5], ids=["de-duplication on", "watermark only"])
@pytest.mark.parametrize("tamper", list(TAMPERING.values()), ids=list(TAMPERING))
def test_a_restart_goes_on_past_a_message_the_core_did_not_write(
    bus: tuple[str, str], workdir: Path, tamper: str, window_s: float
) -> None:
    """Item 10: the core's decisions on the stream, around whatever else is there,
    are exactly those of an uninterrupted core (a deleted decision comes back only
    once the duplicate window no longer knows its id); nothing wedges, nothing is
    published twice, the foreign message is counted, the skipped decisions too."""
    nats_url, redis_url = bus
    events = scenario()
    half = len(events) // 2
    expected = reference_decisions(events)
    log = workdir / "service.log"
    port = free_port()

    async def go() -> tuple[list[Stored], int, dict[Any, float]]:
        async with connected(nats_url) as js:
            await ensure_streams(js, decisions_window_s=window_s)
            seqs = await publish(js, events[:half])
            proc = ServiceProcess(nats_url, redis_url, log, *NO_CHECKPOINT)
            await until_acked(js, proc, seqs[-1], "the first half")
            proc.kill()
            before = core_decisions(await read_stream(js, DECISIONS_STREAM))
            if tamper == "delete":
                await js.delete_msg(DECISIONS_STREAM, before[-1].seq)
            else:
                headers = None if tamper == "no id" else {MSG_ID_HEADER: tamper}
                await js.publish("xce.decisions.DISPATCH", b"{}", headers=headers)
            await asyncio.sleep(window_s + 0.5 if window_s < 1 else 0)
            seqs = await publish(js, events[half:])
            argv = [*NO_CHECKPOINT, "--metrics-port", str(port)]
            proc = ServiceProcess(nats_url, redis_url, log, *argv)
            await until_acked(js, proc, seqs[-1], "the second half")
            samples = await asyncio.to_thread(scrape, port)
            assert proc.terminate() == 0, proc.log_text()
            return await read_stream(js, DECISIONS_STREAM), len(before), samples

    stored, before, samples = run(go())
    if tamper == "delete" and window_s > 1:
        # The server still knows the deleted decision's id: it drops it as a repeat.
        del expected[before - 1]
    assert_exact(core_decisions(stored), expected)
    assert len(stored) - len(core_decisions(stored)) == (tamper != "delete")
    foreign = samples.get(("xce_core_foreign_messages_total", (("stream", DECISIONS_STREAM),)))
    assert foreign == (tamper != "delete")
    skipped = before - 1 if tamper == "delete" else before
    assert samples[("xce_core_decisions_skipped_total", ())] == skipped


def reference_ids(events: Sequence[CoreEvent]) -> list[tuple[int, int]]:
    """The ``(event seq, index)`` of each decision of an uninterrupted core over
    ``events`` published one per message (event *k* at seq *k + 1*)."""
    ids: list[tuple[int, int]] = []
    out: list[Decision] = []
    core = SchedCore(on_decision=out.append, prng_seed=0)
    for seq, event in enumerate(events, start=1):
        out.clear()
        core.push_event(event)
        ids += [(seq, index) for index in range(len(out))]
    return ids


def start_core(nats_url: str, redis_url: str, timeout_s: float = 60) -> tuple[int, str]:
    """Run ``xce-core-service`` until it exits by itself; its status and the last
    line it wrote on stderr.

    Raises:
        subprocess.TimeoutExpired: it did not exit within ``timeout_s`` (it runs on).
    """
    argv = [sys.executable, "-m", "xce_driver.live.core_service", *NO_CHECKPOINT]
    argv += ["--nats", nats_url, "--redis", redis_url, "--lease-ttl", str(LEASE_TTL_S)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    return done.returncode, lines[-1] if lines else ""


AFRESH = (
    "to start afresh, stop the bridge and delete XCE_EVENTS, XCE_DECISIONS and "
    "XCE_CTL_DECISIONS and the Redis keys xce:core:snapshot and xce:core:recording together"
)

#: Operator slips after a clean stop (checkpoint at the last event, every decision on
#: XCE_DECISIONS), and the start of the error line each one gets.
SLIPS = {
    "XCE_EVENTS and the checkpoint deleted, the same events sent again": "events again",
    "XCE_EVENTS and the checkpoint deleted, no event yet": "events gone",
    "XCE_EVENTS deleted, the checkpoint kept": "checkpoint kept",
    "a decision id far past the last event": "forged",
    "an earlier decision's id after the last decision": "backwards",
    "the events after the checkpoint purged": "purged",
}


@pytest.mark.parametrize("slip", list(SLIPS.values()), ids=list(SLIPS))
def test_the_core_refuses_to_start_when_its_positions_disagree_with_xce_events(
    bus: tuple[str, str], workdir: Path, slip: str
) -> None:
    """Item 11: the checkpoint's position and the last decision's id must be
    positions of XCE_EVENTS as it is; else the service exits 2 with one line naming
    the streams, the positions and the fix, and publishes nothing."""
    nats_url, redis_url = bus
    events = scenario()
    half = len(events) // 2

    async def before() -> tuple[list[Stored], int]:
        async with connected(nats_url) as js:
            sent = events[:half] if slip == "purged" else events
            seqs = await publish(js, sent)
            proc = ServiceProcess(nats_url, redis_url, workdir / "service.log", *service_argv())
            await until_acked(js, proc, seqs[-1], "every event")
            assert proc.terminate() == 0, proc.log_text()
            client = aioredis.Redis.from_url(redis_url)
            if slip in ("events again", "events gone"):
                await client.delete(CORE_CHECKPOINT_KEY)
            await client.aclose()
            if slip in ("events again", "events gone", "checkpoint kept"):
                await js.delete_stream(EVENTS_STREAM)
            if slip == "events again":
                await asyncio.sleep(0.01)  # a new stream's first event comes later
                await publish(js, events)
            if slip in ("forged", "backwards"):
                forged = "xce-core:999999998:0" if slip == "forged" else "xce-core:1:0"
                await js.publish("xce.decisions.DISPATCH", b"{}", headers={MSG_ID_HEADER: forged})
            if slip == "purged":
                seqs = await publish(js, events[half:])
                await js.purge_stream(EVENTS_STREAM, seq=seqs[-1])
            return await read_stream(js, DECISIONS_STREAM), seqs[-1]

    async def after() -> list[Stored]:
        async with connected(nats_url) as js:
            return await read_stream(js, DECISIONS_STREAM)

    stored, last = run(before())
    core = core_decisions(stored)
    mark = f"{core[-1].msg_id} (seq {core[-1].seq})"
    made_from = (parse_decision_msg_id(core[-1].msg_id or "") or (0, 0))[0]
    code, line = start_core(nats_url, redis_url)
    assert code == 2, line
    expected = {
        "events again": f"XCE_DECISIONS ends with the core's decision {mark}, stored at ",
        "events gone": f"XCE_DECISIONS ends with the core's decision {mark}, made from event "
        f"seq {made_from}, past the end of XCE_EVENTS (seq 0): ",
        "checkpoint kept": f"checkpoint xce:core:snapshot is at event seq {len(events)}, past "
        "the end of XCE_EVENTS (seq 0): ",
        "forged": f"XCE_DECISIONS ends with the core's decision xce-core:999999998:0 (seq "
        f"{len(stored)}), made from event seq 999999998, past the end of XCE_EVENTS (seq "
        f"{len(events)}): if that message is not the core's, delete it (nats stream rmm "
        f"XCE_DECISIONS {len(stored)}); else ",
        "backwards": f"XCE_DECISIONS ends with the core's decision xce-core:1:0 (seq "
        f"{len(stored)}), which is not after the core's decision before it, {core[-2].msg_id} "
        f"(seq {core[-2].seq}): if that message is not the core's, delete it (nats stream rmm "
        f"XCE_DECISIONS {len(stored)}); else ",
        "purged": f"events {half + 1}..{last - 1} after checkpoint xce:core:snapshot (event seq "
        f"{half}) are no longer in XCE_EVENTS (it starts at seq {last}): ",
    }[slip]
    assert line.startswith(f"xce-core-service: error: {expected}"), line
    assert line.endswith(AFRESH), line
    assert run(after()) == stored  # nothing published


@pytest.mark.parametrize(
    "forged", ["one decision too many", "another decision"], ids=lambda f: str(f)
)
def test_a_last_decision_the_core_does_not_make_again_stops_it_before_it_publishes(
    bus: tuple[str, str], workdir: Path, forged: str
) -> None:
    """Item 11: a message with a core id that passes the start checks (its event is
    in XCE_EVENTS, before it) is the decision the core skips up to; re-handling the
    events, the core must make that very decision there. It does not: exit 2 at
    that point, nothing published after it."""
    nats_url, redis_url = bus
    events = scenario()
    half = len(events) // 2
    ids = reference_ids(events)

    async def before() -> list[Stored]:
        async with connected(nats_url) as js:
            seqs = await publish(js, events[:half])
            proc = ServiceProcess(nats_url, redis_url, workdir / "service.log", *NO_CHECKPOINT)
            await until_acked(js, proc, seqs[-1], "the first half")
            proc.kill()
            core = core_decisions(await read_stream(js, DECISIONS_STREAM))
            seq, index = parse_decision_msg_id(core[-1].msg_id or "") or (0, 0)
            await publish(js, events[half:])
            # One more decision from the last event decided, or the id of the first
            # decision of the second half with another payload.
            at = (seq, index + 1) if forged == "one decision too many" else ids[len(core)]
            headers = {MSG_ID_HEADER: f"xce-core:{at[0]}:{at[1]}"}
            await js.publish("xce.decisions.DISPATCH", b"{}", headers=headers)
            return await read_stream(js, DECISIONS_STREAM)

    async def after() -> list[Stored]:
        async with connected(nats_url) as js:
            return await read_stream(js, DECISIONS_STREAM)

    stored = run(before())
    code, line = start_core(nats_url, redis_url)
    assert code == 2, line
    mark = f"{stored[-1].msg_id} (seq {stored[-1].seq})"
    assert line.startswith(f"xce-core-service: error: XCE_DECISIONS ends with decision {mark}"), (
        line
    )
    why = "but the core makes only" if forged == "one decision too many" else "another one there"
    assert why in line and line.endswith(AFRESH), line
    assert run(after()) == stored
