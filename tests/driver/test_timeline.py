"""Tests of the timeline (``xce_driver.cluster.timeline``): an agenda's entries handed
over an instant at a time, whole, in the order of its table.

``settled`` keeps each instant as ``(s, finished, inputs, submitted, rounds)``.
"""

from __future__ import annotations

from xce_driver.cluster.agenda import Agenda
from xce_driver.cluster.jobs import NS
from xce_driver.cluster.timeline import EventPriority, Instant, Timeline
from xce_driver.workloads.mapping import SimJob

Settled = tuple[int, list[int], list[int], list[int], list[int]]


def timeline(settled: list[Settled], origin_ns: int = 0) -> Timeline:
    def settle(instant: Instant) -> None:
        settled.append(
            (
                (instant.at - origin_ns) // NS,
                instant.finished,
                instant.inputs,
                instant.submitted,
                instant.rounds,
            )
        )

    return Timeline(Agenda(origin_ns), settle, origin_ns)


def J(jobid: int, submit_s: int) -> SimJob:
    return SimJob(jobid=jobid, submit_s=submit_s, run_s=1, tasks=1, queue="normal", user="u1")


def test_everything_due_at_one_time_is_one_instant_in_the_tables_order() -> None:
    settled: list[Settled] = []
    line = timeline(settled)
    line.schedule(10 * NS, EventPriority.ROUND, 0)
    line.schedule(10 * NS, EventPriority.INPUT, 4)
    line.schedule(10 * NS, EventPriority.FINISH, 7)
    line.schedule(10 * NS, EventPriority.INPUT, 2)
    line.schedule(10 * NS, EventPriority.FINISH, 3)  # ties: scheduled later, comes later
    line.arrivals([J(5, 10), J(1, 10)])
    line.agenda.run()
    assert settled == [(10, [7, 3], [4, 2], [5, 1], [0])]


def test_times_are_instants_of_their_own_and_a_called_off_entry_brings_nothing() -> None:
    settled: list[Settled] = []
    line = timeline(settled, origin_ns=1_000 * NS)
    line.schedule(1_020 * NS, EventPriority.FINISH, 1)
    called_off = line.schedule(1_015 * NS, EventPriority.FINISH, 2)
    line.schedule(1_020 * NS, EventPriority.FINISH, 9)
    line.agenda.cancel(called_off)
    line.arrivals([J(3, 5), J(4, 20)])
    line.agenda.run()
    assert settled == [(5, [], [], [3], []), (20, [1, 9], [], [4], [])]  # nothing at 15 s


def test_what_settling_schedules_at_its_own_time_is_a_further_instant() -> None:
    settled: list[Settled] = []

    def settle(instant: Instant) -> None:
        settled.append((instant.at // NS, instant.finished, [], instant.submitted, []))
        if instant.submitted:  # a job that runs 0 s: it ends the instant it started
            line.schedule(instant.at, EventPriority.FINISH, instant.submitted[0])

    line = Timeline(Agenda(), settle)
    line.arrivals([J(1, 10)])
    line.schedule(10 * NS, EventPriority.FINISH, 8)
    line.agenda.run()
    assert settled == [(10, [8], [], [1], []), (10, [1], [], [], [])]


def test_arrivals_are_one_entry_per_submit_time_and_one_at_a_time_in_the_agenda() -> None:
    settled: list[Settled] = []
    line = timeline(settled)
    line.arrivals([J(1, 30), J(2, 10), J(3, 30), J(4, 10)])
    assert len(line.agenda) == 1
    line.agenda.step()  # the 10 s submission, which brings the 30 s one in
    assert (settled, len(line.agenda), line.agenda.peek()) == (
        [(10, [], [], [2, 4], [])],
        1,
        30 * NS,
    )
    line.agenda.run()
    assert settled[-1] == (30, [], [], [1, 3], [])
    assert not line.agenda
