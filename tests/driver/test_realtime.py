"""Tests of the wall clock that moves an agenda (``xce_driver.cluster.realtime``) and of
the live emulator's hosts on it, without a bus: decisions are handed to it as its
decision reader would (``LiveEmulator._on_decision``).

Speeds are high (1,000 agenda seconds per wall second: a 100 s job runs 0.1 s), so
the assertions say what is stepped and in which order, and give times of the agenda
(exact) rather than of the wall clock (late by however long the event loop took).
"""

from __future__ import annotations

import asyncio
import math

import orjson
import pytest
from xce_driver.cluster.agenda import Agenda
from xce_driver.cluster.jobs import NS
from xce_driver.cluster.realtime import WallClock
from xce_driver.live.emulate import LiveEmulator
from xce_driver.workloads.mapping import SimJob
from xce_kit.reader import Delivered
from xce_schemas import (
    Decision,
    Dispatch,
    HostAlloc,
    HostSpec,
    JobAlloc,
    Preempt,
    QueueSpec,
    Resume,
    SchedulerConfig,
    dump_decision,
)
from xce_schemas.controller import DECISION_ID_HEADER

SPEED = 1000.0  # agenda seconds per wall second


def test_entries_are_stepped_when_the_wall_clock_reaches_them_at_their_own_times() -> None:
    agenda = Agenda()
    stepped: list[tuple[str, int]] = []

    async def go() -> None:
        clock = WallClock(agenda, SPEED)
        for name, seconds in (("b", 20), ("a", 10), ("c", 10_000)):
            agenda.schedule(seconds * NS, lambda name=name: stepped.append((name, agenda.now)))
        clock.arm()
        await asyncio.sleep(0.1)  # 100 s of the agenda: a and b are due, c is not
        clock.stop()

    asyncio.run(go())
    assert stepped == [("a", 10 * NS), ("b", 20 * NS)]
    assert agenda.peek() == 10_000 * NS


def test_an_earlier_entry_scheduled_from_outside_is_stepped_first_once_armed() -> None:
    agenda = Agenda()
    stepped: list[str] = []

    async def go() -> None:
        clock = WallClock(agenda, SPEED)
        agenda.schedule(5_000 * NS, lambda: stepped.append("late"))
        clock.arm()  # set for 5 s of the wall clock
        agenda.schedule(5 * NS, lambda: stepped.append("early"))
        clock.arm()  # set again: the new entry comes first
        await asyncio.sleep(0.05)
        clock.stop()

    asyncio.run(go())
    assert stepped == ["early"]


def test_advance_steps_what_is_due_and_leaves_now_at_the_wall_clocks_time() -> None:
    agenda = Agenda(now=100 * NS)
    stepped: list[int] = []

    async def go() -> tuple[int, int]:
        clock = WallClock(agenda, SPEED)
        agenda.schedule(101 * NS, lambda: stepped.append(agenda.now))
        agenda.schedule(10**6 * NS, lambda: stepped.append(agenda.now))
        await asyncio.sleep(0.01)  # no timer set: nothing steps by itself
        assert stepped == []
        now = clock.advance()  # an input arrives: the due entry goes first
        clock.stop()
        return now, clock.now()

    now, later = asyncio.run(go())
    assert stepped == [101 * NS]
    assert 105 * NS <= now <= later  # about 10 ms of the wall clock went by
    assert agenda.now == now


def test_a_stopped_clock_steps_nothing() -> None:
    agenda = Agenda()
    stepped: list[int] = []

    async def go() -> None:
        clock = WallClock(agenda, SPEED)
        agenda.schedule(1 * NS, lambda: stepped.append(1))
        clock.arm()
        clock.stop()
        await asyncio.sleep(0.02)

    asyncio.run(go())
    assert (stepped, agenda.peek()) == ([], 1 * NS)


@pytest.mark.parametrize("speed", [0.0, -1.0, math.nan], ids=["zero", "negative", "NaN"])
def test_speed_must_be_above_zero(speed: float) -> None:
    with pytest.raises(ValueError, match="speed must be above 0"):
        WallClock(Agenda(), speed)


# --- the live emulator's hosts: the cluster model on the wall clock ---------------------------


def delivered(decision: Decision, seq: int) -> Delivered:
    headers = {DECISION_ID_HEADER: f"xce-core:1:{seq}"}
    return Delivered(
        seq, f"xce.ctl.decisions.{decision.op}", dump_decision(decision), headers, None
    )


def sent_states(emulator: LiveEmulator) -> list[tuple[int, str]]:
    """The job_state messages queued so far, ``(jobid, state)``, in order."""
    states = []
    for kind, payload, _ in list(emulator._outbox._queue):  # type: ignore[attr-defined]
        if kind == "job_state":
            data = orjson.loads(payload)
            states.append((data["jobid"], data["state"]))
    return states


def test_the_live_hosts_suspend_resume_and_finish_a_job_as_the_model_says() -> None:
    """J1.R1000 in a queue with a 600 s run limit: dispatched, suspended about 20 s
    later, resumed about 30 s after that; the limit kills it after 600 s of running,
    time suspended left out."""
    job = SimJob(jobid=1, submit_s=0, run_s=1000, tasks=1, queue="short", user="u")
    limit = QueueSpec(name="short", preemptible=True, run_limit_s=600)
    config = SchedulerConfig(queues=(limit,))
    emulator = LiveEmulator(
        [job], (HostSpec(name="h1", slots=1),), config, nats_url="nats://unused", speed=SPEED
    )
    alloc = JobAlloc(jobid=1, hosts=(HostAlloc(host="h1", allocs=()),))

    async def go() -> None:
        now = emulator.model.agenda.now
        emulator._on_decision(delivered(Dispatch(ts=now, jobid=1, alloc=alloc), 1))
        await asyncio.sleep(0.02)
        preempt = Preempt(ts=now, preempting_jobid=2, victim_jobids=(1,))
        emulator._on_decision(delivered(preempt, 2))
        assert sent_states(emulator) == [(1, "SUSP")]
        await asyncio.sleep(0.03)
        emulator._on_decision(delivered(Resume(ts=now, jobid=1), 3))
        await asyncio.wait_for(emulator._all_done.wait(), 5)

    asyncio.run(go())
    assert sent_states(emulator) == [(1, "SUSP"), (1, "EXIT")]
    record = emulator.records[1]
    assert (record.times_suspended, record.times_resumed, record.killed_by_runlimit) == (1, 1, True)
    assert record.suspended_s >= 25  # about 30 s of the agenda
    assert record.ran_s in (599, 600, 601)  # whole seconds of exact agenda times
    assert emulator.stats.decisions == {"DISPATCH": 1, "PREEMPT": 1, "RESUME": 1}
    assert (emulator.stats.suspensions, emulator.stats.resumes, emulator.stats.done) == (1, 1, 1)
