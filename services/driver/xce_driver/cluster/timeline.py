"""The cluster's timeline: an agenda whose entries are things due, handed over one
instant at a time.

An entry is one thing due at its time (a finish, the submissions of that time, and
for the simulation an input or a round); stepped, it brings that thing into the
``Instant`` of its time, and the last entry of that time hands the whole instant
over (``settle``: the controller, ``xce_driver.cluster.model.Controller``), which
acts on it in the order of the table below (finishes, inputs, the submission, then
rounds). So everything due at one time is in before anything is done; what
settling schedules at that same time (a job that ends the instant it starts) makes
a further instant at that time.

| priority | what | why |
|---|---|---|
| FINISH (0) | jobs ending (or killed) now give slots back | a round now sees those slots free |
| INPUT (1) | input events due now, in their order (a what-if's file) | a round now sees them |
| SUBMIT (2) | jobs submitted now, in one submission | a round at this instant sees them |
| ROUND (3) | a round due (the simulation's) | last, so it sees everything of this instant |

The agenda holds one submission entry at a time: each, when due, puts the next in,
so a long workload does not fill the agenda with its arrivals.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from functools import partial
from operator import attrgetter

from xce_driver.cluster.agenda import Agenda
from xce_driver.cluster.jobs import NS
from xce_driver.workloads.mapping import SimJob

#: Event times are ns below 2**64 (the wire's limit, in the year 2554).
END_OF_TIME_NS = 2**64


class SimulationTimeError(ValueError):
    """Virtual time would pass ``END_OF_TIME_NS``; the message names the job or round."""


class EventPriority(IntEnum):
    """Order of agenda entries at one instant (see the module's table)."""

    FINISH = 0
    INPUT = 1
    SUBMIT = 2
    ROUND = 3


@dataclass(slots=True)
class Instant:
    """What the agenda's entries of one time brought, for its settling.

    Attributes:
        at: its time, ns.
        finished: jobs whose finish is due, in agenda order.
        inputs: indexes of the input events due (the simulation's), in order.
        submitted: jobs submitted now, in workload order.
        rounds: the kinds of the rounds due (the simulation's ROUND entries), in
            agenda order.
    """

    at: int
    finished: list[int]
    inputs: list[int]
    submitted: list[int]
    rounds: list[int]


class Timeline:
    """An agenda of things due, settled an instant at a time (see the module).

    Args:
        agenda: the agenda it fills (its ``now`` is the timeline's time).
        settle: takes each instant once it is whole, at its time.
        origin_ns: the workload's time 0 on the agenda's clock, ns (submit times
            are seconds from it).

    Attributes:
        agenda: the agenda it fills.
    """

    def __init__(
        self, agenda: Agenda, settle: Callable[[Instant], None], origin_ns: int = 0
    ) -> None:
        self.agenda = agenda
        self._settle = settle
        self._origin_ns = origin_ns
        self._instant: Instant | None = None  # the one of ``now``, while it fills
        self._arrivals: Iterator[tuple[int, Iterator[SimJob]]] = iter(())
        self._arriving: list[int] = []  # the jobs of the submission entry in the agenda

    def schedule(self, at: int, priority: EventPriority, item: int) -> int:
        """Put an entry in the agenda: at ``at`` (ns), ``item`` is due: a jobid
        (FINISH), an input's index (INPUT), a round's kind (ROUND, its
        scheduler's to tell); submissions come from ``arrivals``.

        Returns:
            The entry's id (``Agenda.cancel`` takes it).

        Raises:
            SimulationTimeError: ``at`` is past the end of virtual time.
        """
        if at >= END_OF_TIME_NS:
            raise self._past_end(at, priority, item)
        return self.agenda.schedule(at, partial(self._due, priority, item), priority)

    def arrivals(self, jobs: Iterable[SimJob]) -> None:
        """Put the jobs' first submission in the agenda (the jobs of one submit time
        are one entry, in the order given; each brings the next in).

        Raises:
            SimulationTimeError: a job is submitted past the end of virtual time
                (the first such in the order given; checked here for all).
        """
        jobs = list(jobs)
        for job in jobs:
            at = self._origin_ns + job.submit_s * NS
            if at >= END_OF_TIME_NS:
                raise self._past_end(at, EventPriority.SUBMIT, job.jobid)
        by_time = attrgetter("submit_s")  # a stable sort: ties stay in the order given
        self._arrivals = itertools.groupby(sorted(jobs, key=by_time), key=by_time)
        self._next_arrival()

    def _next_arrival(self) -> None:
        """Put the next submission time's entry in the agenda, its jobs aside."""
        group = next(self._arrivals, None)
        if group is not None:
            submit_s, jobs = group
            self._arriving = [job.jobid for job in jobs]
            at = self._origin_ns + submit_s * NS
            self.schedule(at, EventPriority.SUBMIT, self._arriving[0])

    def _due(self, priority: EventPriority, item: int) -> None:
        """An entry is due: bring its ``item`` into the instant of now; the last entry
        of its time hands the instant over."""
        instant = self._instant
        if instant is None:
            instant = self._instant = Instant(self.agenda.now, [], [], [], [])
        if priority is EventPriority.FINISH:
            instant.finished.append(item)
        elif priority is EventPriority.SUBMIT:
            instant.submitted += self._arriving
            self._next_arrival()  # at a later time: this instant stays whole
        elif priority is EventPriority.INPUT:
            instant.inputs.append(item)
        else:
            instant.rounds.append(item)
        if self.agenda.peek() != instant.at:
            self._instant = None
            self._settle(instant)

    def _past_end(self, at: int, priority: EventPriority, item: int) -> SimulationTimeError:
        """The error of an entry at ``at`` (ns), past the end of virtual time."""
        if priority is EventPriority.ROUND:
            what = "the round"
        elif priority is EventPriority.INPUT:
            what = f"input event {item + 1}"
        else:
            verb = "is submitted" if priority is EventPriority.SUBMIT else "ends"
            what = f"job {item} {verb}"
        return SimulationTimeError(
            f"{what} at {(at - self._origin_ns) // NS:,} s is past the end of "
            f"virtual time ({END_OF_TIME_NS:,} ns after the epoch)"
        )
