"""Backfill policies: for which blocked jobs a session reserves room, and the room
it holds for them while it goes on (DESIGN "Time-aware scheduling").

Order and policy are separate: the picker decides the order in which pending jobs
are tried; the policy decides whether a job that does not fit holds back the jobs
behind it. Every policy is one algorithm with a *reservation depth* (flux-sched's
qmanager): ``greedy`` reserves for none (first fit: every job that fits starts),
``easy`` for the first blocked job, ``hybrid`` for the first N, ``conservative``
for all; ``strict`` reserves for the first and starts nothing after it.

A policy is global (``SchedulerConfig.backfill``) with a per-queue override
(``QueueSpec.backfill``); a queue that overrides counts its own depth, the others
share the global one. Only a job that could run once room frees (an unsatisfied
allocation that is *resolvable*) is blocked: a job that can never run blocks nobody.

``ReservationBook`` keeps one session's reservations (``alloc.planner.Reservation``)
and holds the free room each takes now on the real state (*phantom* holds, given
back when the session ends), so a later job does not take it; a job whose run
limit ends it before a reservation starts may use that reservation's room, and
takes it before unreserved room (the index offers those hosts first).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xce_schemas import SLOTS, BackfillPolicy, JobAlloc, PendingCode

from xce_core.alloc.outcome import FOREVER, Reservation, Unsatisfied
from xce_core.alloc.planner import Planner
from xce_core.resreq.model import EMPTY, Resreq
from xce_core.runtime import effective_run_limit_s, expected_end_ns
from xce_core.state import ClusterState, Job, Queue

NS = 1_000_000_000

#: Reservations a policy makes in a session (``hybrid``'s is its own setting).
_DEPTH = {
    BackfillPolicy.GREEDY: 0,
    BackfillPolicy.STRICT: 1,
    BackfillPolicy.EASY: 1,
    BackfillPolicy.CONSERVATIVE: 1 << 62,
}


@dataclass(frozen=True, slots=True)
class Policy:
    """A job's backfill policy: its name, its reservation depth, and the domain
    that depth is counted in (the queue that overrides, or None: the scheduler's)."""

    name: BackfillPolicy
    depth: int
    domain: str | None


def policy_of(state: ClusterState, queue: Queue) -> Policy:
    """The backfill policy of ``queue``'s jobs: the queue's own, else the scheduler's."""
    config = state.config
    if queue.backfill is not None:
        name, depth, domain = queue.backfill, queue.reservation_depth, queue.name
    else:
        name, depth, domain = config.backfill, config.reservation_depth, None
    return Policy(name, depth if name is BackfillPolicy.HYBRID and depth else _DEPTH[name], domain)


def backfills(state: ClusterState) -> bool:
    """Whether any queue's policy is other than ``greedy`` (else sessions need no
    book: first fit, as the first release did)."""
    if state.config.backfill is not BackfillPolicy.GREEDY:
        return True
    return any(q.backfill not in (None, BackfillPolicy.GREEDY) for q in state.queues.values())


def run_limit_ns(state: ClusterState, job: Job) -> int | None:
    """The job's run limit in force, ns (``runtime.effective_run_limit_s``); None:
    not known."""
    limit = effective_run_limit_s(job, state.queues.get(job.queue))
    return None if limit is None else limit * NS


def expected_end(state: ClusterState, job: Job, now: int) -> int:
    """When a running job is expected to end, ns (``runtime.expected_end_ns``: start
    + run limit + time suspended; a job past it is expected to end now); one with no
    run limit never (``FOREVER``)."""
    end = expected_end_ns(job, state.queues.get(job.queue), now)
    return FOREVER if end is None else end


@dataclass(slots=True)
class ReservationBook:
    """One session's reservations and the free room they hold now.

    Attributes:
        reservations: made this session, in order.
        phantom: free slots held for reservations now, by host.
        blocked_by: under ``strict``, the job that blocks every later one.
    """

    state: ClusterState
    now: int
    reservations: list[Reservation] = field(default_factory=list)
    phantom: dict[str, int] = field(default_factory=dict)
    blocked_by: int | None = None
    _held: list[dict[str, int]] = field(default_factory=list)  # phantom, per reservation
    _made: dict[str | None, int] = field(default_factory=dict)  # reservations, per domain
    _first_need: dict[str, int] = field(default_factory=dict)  # earliest start naming a host
    _planner: Planner | None = None

    # --- reserving -------------------------------------------------------------------

    def wants(self, policy: Policy) -> bool:
        """Whether a blocked job under ``policy`` gets a reservation now (its domain's
        depth is not reached)."""
        return self._made.get(policy.domain, 0) < policy.depth

    def reserve(
        self,
        job: Job,
        request: Resreq,
        policy: Policy,
        check_cancel: Callable[[], None],
    ) -> Reservation | None:
        """Reserve room for a blocked job at its earliest start (``Planner``), hold
        the part of it free now, and count it in its policy's domain; None when it
        fits at no instant in view.

        Raises:
            SessionCancelled: the session was cancelled (nothing was held).
        """
        state = self.state
        if self._planner is None:
            ends = [(expected_end(state, j, self.now), j) for j in state.running.values()]
            self._planner = Planner(state, self.now, ends, self.phantom)
        reservation = self._planner.earliest_start(
            job, request, run_limit_ns(state, job), self.reservations, check_cancel
        )
        self._made[policy.domain] = self._made.get(policy.domain, 0) + 1
        if reservation is None:
            return None
        held: dict[str, int] = {}
        for name, slots in reservation.hosts:
            host = state.hosts[name]
            take = min(slots, host.usable_free)
            if take > 0:
                state.take_slots(host, take)
                held[name] = take
                self.phantom[name] = self.phantom.get(name, 0) + take
        self.reservations.append(reservation)
        self._held.append(held)
        for name, _ in reservation.hosts:
            self._first_need[name] = min(self._first_need.get(name, FOREVER), reservation.start_ts)
        return reservation

    def started(self, job: Job) -> None:
        """A job started this session: the planner's view holds it until its end."""
        if self._planner is not None:
            self._planner.started(job, expected_end(self.state, job, self.now))

    # --- allocating around reservations ------------------------------------------------

    def allocate(
        self, job: Job, allocate: Callable[[], JobAlloc | Unsatisfied]
    ) -> JobAlloc | Unsatisfied:
        """Allocate ``job`` (``allocate`` does it on the real state) with the room of
        every reservation that starts once it has ended (by its run limit) open to
        it, and offered first; the rest of the reserved room stays held."""
        limit = run_limit_ns(self.state, job)
        end = FOREVER if limit is None else self.now + limit
        open_ = [i for i, r in enumerate(self.reservations) if r.start_ts >= end and self._held[i]]
        if not open_:
            return allocate()
        state = self.state
        given: dict[str, int] = {}
        for index in open_:
            for name, slots in self._held[index].items():
                # Only the first reservation naming a free host holds it: a later one
                # that starts before the job ends may need it too, so it stays held.
                if self._first_need[name] >= end:
                    given[name] = given.get(name, 0) + slots
        if _plain(job) and state.free_index.total_free + sum(given.values()) < job.tasks:
            return allocate()  # too few slots even with that room: no need to open it
        for name, slots in given.items():
            state.give_slots(state.hosts[name], slots)
        state.free_index.prefer(tuple(sorted(state.hosts[name].position for name in given)))
        try:
            outcome = allocate()
        except BaseException:  # cancelled: held again, as the phantom says (close gives it)
            for name, slots in given.items():
                state.take_slots(state.hosts[name], slots)
            raise
        finally:
            state.free_index.prefer(())
        took = _slots_by_host(outcome) if isinstance(outcome, JobAlloc) else {}
        for name, slots in given.items():
            used = min(slots, took.get(name, 0))  # reserved room is taken first
            state.take_slots(state.hosts[name], slots - used)
            self.phantom[name] -= used
            if not self.phantom[name]:
                del self.phantom[name]
            for index in open_:  # the reservations lose it in their order
                held = self._held[index]
                lost = min(held.get(name, 0), used)
                used -= lost
                if lost and not (held[name] - lost):
                    del held[name]
                elif lost:
                    held[name] -= lost
        return outcome

    def in_the_way(
        self, job: Job, allocate: Callable[[], JobAlloc | Unsatisfied]
    ) -> Unsatisfied | None:
        """Why a job that did not fit pends, when only reserved room stopped it: it
        would fit were no room reserved (tried, then undone), but not ending before
        those reservations start, it may not use theirs. None otherwise."""
        if not self.phantom:
            return None
        state = self.state
        if _plain(job):  # slots only: it fits when the free slots add up (O(1))
            fits = state.free_index.total_free + sum(self.phantom.values()) >= job.tasks
            return self._reserved_for(job) if fits else None
        for name, slots in self.phantom.items():
            state.give_slots(state.hosts[name], slots)
        try:
            outcome = allocate()
            if isinstance(outcome, JobAlloc):
                state.release(outcome)
        finally:
            for name, slots in self.phantom.items():
                state.take_slots(state.hosts[name], slots)
        if not isinstance(outcome, JobAlloc):
            return None
        return self._reserved_for(job)

    def _reserved_for(self, job: Job) -> Unsatisfied:
        """RESERVED: the jobs whose reservations start before ``job`` would end."""
        limit = run_limit_ns(self.state, job)
        end = FOREVER if limit is None else self.now + limit
        ahead = sorted(r.jobid for r in self.reservations if r.start_ts < end)
        jobs = f"job{'s' if len(ahead) > 1 else ''} {', '.join(map(str, ahead))}"
        why = (
            "and this job has no run limit"
            if limit is None
            else "expected to start before this job would end"
        )
        return Unsatisfied(
            PendingCode.RESERVED, resolvable=True, detail=f"reserved for {jobs}, {why}"
        )

    def close(self) -> None:
        """Give back every phantom hold (the session ends)."""
        state = self.state
        for name, slots in self.phantom.items():
            state.give_slots(state.hosts[name], slots)
        self.phantom.clear()
        for held in self._held:
            held.clear()


def _plain(job: Job) -> bool:
    """Whether the job asks for slots only (no select, rusage, span, ...): then it
    fits wherever enough slots are free, which is known without allocating."""
    return job.request == EMPTY


def _slots_by_host(alloc: JobAlloc) -> dict[str, int]:
    out: dict[str, int] = {}
    for host in alloc.hosts:
        for item in host.allocs:
            if item.name == SLOTS:
                out[host.host] = out.get(host.host, 0) + int(item.value)
    return out
