"""Room owed to a job (DESIGN "Room owed to a job is a reservation too"): held for it
with the same reservations, before any job of the session is tried, under every
policy: a preemptor's suspended victims' room, and a suspended job's own hosts for
its resume."""

from __future__ import annotations

from xce_schemas import HostStatus, JobState

from xce_core.alloc.outcome import FOREVER, Reservation
from xce_core.backfill.book import ReservationBook
from xce_core.backfill.times import expected_end, on_the_clock
from xce_core.state import Job


def owe_preemptors(book: ReservationBook) -> None:
    """Hold for each preemption in flight the room its suspended victims freed,
    for the preemptor alone, from now until it starts or its preemption is given
    up (also while its queue holds it: the preemption stays in flight), under
    every policy, ``greedy`` included: no other job (nor a resume) takes it, so
    one preemption is enough. The holds are taken at once (resumes come next)."""
    state, now = book.state, book.now
    for jobid in sorted(state.preemptions):
        job = state.jobs.get(jobid)
        if job is None or job.state is not JobState.PEND:
            continue
        freed = [
            victim
            for v in state.preemptions[jobid].victims
            if (victim := state.jobs.get(v)) is not None and victim.state is JobState.SUSP
        ]
        hosts = slots_of(freed)
        if hosts:
            end = book.end_of(job)
            owed = on_the_clock(Reservation(jobid, now, None if end == FOREVER else end, hosts))
            if owed is not None:
                book.add(owed, dict(book.room_now(owed)))
    if book.reservations:
        book.hold()


def owe_resumes(book: ReservationBook, suspended: list[Job]) -> None:
    """Hold for each job suspended by a preemption (and not its victim still) its
    own hosts, from when the running jobs' expected ends leave them room for it:
    a job of equal or lower priority may take that room only if it ends before
    then (backfilling around the resume, not over it). Under every policy,
    ``greedy`` included."""
    state, now = book.state, book.now
    if not suspended:
        return
    for job in suspended:
        hosts = slots_of([job])
        start = now
        for name, slots in hosts:
            host = state.hosts[name]
            if host.status is not HostStatus.OK:
                start = FOREVER
                break
            free = host.slots - host.used
            for at, frees in sorted(book.running_on(name)):
                if free >= slots:
                    break
                free += frees
                start = max(start, at)
            if free < slots:
                start = FOREVER
        if start == FOREVER:
            continue
        left = expected_end(state, job, now) - now
        until = None if left >= FOREVER - now else start + left
        rests_on = sum(
            1
            for jobs in state.running_on.values()
            for jobid in jobs
            if now < book.expected_end_of(state.running[jobid]) <= start
        )
        owed = on_the_clock(Reservation(job.jobid, start, until, hosts, running=rests_on))
        if owed is not None:
            book.add(owed, dict(book.room_now(owed)), yields_to=job.priority)


def slots_of(jobs: list[Job]) -> tuple[tuple[str, int], ...]:
    """The slots the allocations of ``jobs`` hold, by host, in their order."""
    out: dict[str, int] = {}
    for job in jobs:
        assert job.alloc is not None
        for name, slots in job.alloc.slots_by_host().items():
            out[name] = out.get(name, 0) + slots
    return tuple(out.items())
