"""One scheduling session, step by step (Req 1 AC 4), and its scratch state.

``Session.run`` is the loop a ``BEGIN_ROUND`` starts::

    begin_session
    while (job = next_job()):
        readiness → cache → allocate → preempt → decide
    end_session

each a named step:

* **readiness**: the queue dispatches nothing now (inactive, outside its run
  windows), or the job's queue or user is at its slot limit (a job that could never
  run says so instead, whatever the queue runs);
* **cache**: a request this session already proved unsatisfiable pends at once
  (Req 7);
* **allocate**: the allocator places the job on the real state and holds what it
  gets, or says why not;
* **preempt**: an unsatisfied job of a queue that preempts asks the preemption
  evaluator (Req 6), which may make room by suspending victims;
* **decide**: DISPATCH, or PREEMPT and PEND (a PEND only when the reason changed).

``SessionState`` is the session's scratch data (Kubernetes' ``CycleState``): made at
``BEGIN_ROUND``, dropped at ``end_session``; nothing in it outlives the round.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from xce_schemas import Dispatch, JobAlloc, JobState, NewSession, Pend, PendingCode

from xce_core.alloc.job import job_never_fits
from xce_core.alloc.outcome import Unsatisfied
from xce_core.alloc.primary import SHORT
from xce_core.backfill import Policy, ReservationBook, owe_preemptors, owe_resumes, policy_of
from xce_core.errors import SessionCancelled
from xce_core.preempt.preemptor import FINAL, Plan
from xce_core.preempt.resume import suspended_by_preemption
from xce_core.readiness import exceeds_limits, limit_hold, queue_hold
from xce_core.resreq.model import is_plain
from xce_core.state import Job, Queue

if TYPE_CHECKING:
    from xce_core.core import SchedCore

log = logging.getLogger("xce_core")

#: Not yet looked at (a queue's hold this session).
_UNSET: Any = object()

#: The unsatisfiable-request cache's key: (request identity, tasks, user, queue,
#: project, priority or None, the reservations open to it or None).
Fingerprint = tuple[int, int, str, str, str | None, int | None, tuple[bool, ...] | None]


class CancelToken:
    """Cooperative cancellation of a session (the Python form of ``pthread_cancel``).

    ``cancel()`` may be called from any thread, or from the decision callback; the
    session stops at its next cancellation point (``check()``).
    """

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        """Ask the session to stop at its next cancellation point."""
        self.cancelled = True

    def check(self) -> None:
        """A cancellation point.

        Raises:
            SessionCancelled: ``cancel()`` was called.
        """
        if self.cancelled:
            raise SessionCancelled


@dataclass(slots=True)
class SessionState:
    """One session's scratch data.

    Attributes:
        number: session count since the core started (1, 2, ...).
        start_ts: the session's ``BEGIN_ROUND`` ts, ns.
        from_s: allocation ``from``: ``start_ts // 10**9`` (alloc-equality Req 4).
        token: the session's cancel token.
        tried: jobs ``next_job`` returned this session (a picker may not repeat one).
        unsatisfiable: the session's unsatisfiable-request cache (Req 7): the outcome
            of every request that failed this session, by fingerprint ``(request
            identity, tasks, user, queue, project, priority)``; the request object
            covers select, rusage, span and the shape of compound and alternative
            requests; priority is None unless the queue preempts (it decides which
            victims a job may take).
        cache_hits: how many jobs the cache pended this session.
        queue_holds: per queue, why it dispatches nothing this session (inactive,
            outside its run windows) or None.
        candidates: the safe preemption candidates by (queue, job priority), until a
            preemption takes some of them.
        book: the session's reservations and the room they hold (None: every
            policy is ``greedy`` and no room is owed to a preemptor or a resume).
        policies: each queue's backfill policy, as looked up this session.
    """

    number: int
    start_ts: int
    token: CancelToken = field(default_factory=CancelToken)
    tried: dict[int, None] = field(default_factory=dict)
    unsatisfiable: dict[Fingerprint, Unsatisfied] = field(default_factory=dict)
    cache_hits: int = 0
    queue_holds: dict[str, Unsatisfied | None] = field(default_factory=dict)
    candidates: dict[tuple[str, int], list[Job]] = field(default_factory=dict)
    book: ReservationBook | None = None
    policies: dict[str, Policy] = field(default_factory=dict)

    @property
    def from_s(self) -> int:
        """The session start in whole seconds (``BEGIN_ROUND ts // 10**9``)."""
        return self.start_ts // 1_000_000_000


class Session:
    """One scheduling session of ``core`` at ``ts`` (ns): ``run`` does it.

    It reads and changes the core's state only through the core's own steps
    (allocation holds, ``ClusterState.start``, the preemptor), and says what it
    decided through the core's decision callback.
    """

    def __init__(self, core: SchedCore, state: SessionState) -> None:
        self.core = core
        self.state = state

    def run(self) -> None:
        """The session: NEW_SESSION, resumes, then every job the picker offers, in its
        order, through the steps; a cancellation stops it between two jobs."""
        core, session = self.core, self.state
        core.on_decision(NewSession(ts=session.start_ts, session=session.number))
        book = session.book
        if book is not None:  # room owed to a preemptor is not the resumes' either
            owe_preemptors(book)
        core.resume_preempted(session)
        if book is not None:
            owe_resumes(book, suspended_by_preemption(core.state, in_flight=False))
        picker = core.picker
        picker.begin_session()
        try:
            while True:
                core.cancellable = True
                info = picker.next_job()
                if info is None:
                    break
                job = core.state.jobs.get(info.jobid)
                if job is None or job.state is not JobState.PEND or job.jobid in session.tried:
                    raise core.picker_bug(info, job)
                session.tried[job.jobid] = None
                queue = core.state.queues[job.queue]
                outcome, plan = self._schedule(job, queue)
                # From here the job's decision is made whole: no cancellation point.
                core.cancellable = False
                self._decide(job, outcome, plan)
                if plan.final and core.parking is not None:
                    if outcome == SHORT:
                        self._park(job, queue, None)
                    elif outcome.__class__ is Unsatisfied:
                        if outcome.code is PendingCode.RESERVED:
                            self._park_reserved(job, queue)
                        elif outcome.code is PendingCode.ORDER_BLOCKED:
                            self._park_behind(job, queue)
        except SessionCancelled:
            log.info("session %d at ts=%d cancelled", session.number, session.start_ts)
        finally:
            core.cancellable = False
            picker.end_session()
            if book is not None:
                book.keep_unturned()

    def _park_reserved(self, job: Job, queue: Queue) -> None:
        """Park a plain job that pended for room reserved for others, when no
        reservation made before its turn is open to it. With reservations for the
        same jobs, none starting as late as it would end were it started now (so
        none opens to it as time goes on), it pends for that same reason while its
        tasks are more than the free slots outside the held room and at most the
        free slots were none held (``ReservationBook.reserved_room``). The rest as
        ``_park``."""
        book = self.state.book
        # (Around reservations on counts, the free slots alone do not tell.)
        plain = is_plain(job.request)
        if book is not None and plain and not book.counted and book.closed_to_all(job):
            names = book.reserved_room()[0]
            if names >= 0:  # (none while a domain still reserves: it might be next)
                self._park(job, queue, (names, book.end_of(job)))

    def _park_behind(self, job: Job, queue: Queue) -> None:
        """Park a job held back under ``strict`` behind its policy domain: its turn is
        decided, before anything else (``_schedule``), by whether an earlier job of
        the domain could not start this session, whichever job that is, so while one
        has by its turn (``CoreView.blocks``) the turn pends it again for the same
        reason. A job whose preemption is in flight is left to its turns."""
        domain = self._policy(queue).domain
        if job.jobid not in self.core.state.preemptions:
            behind = self.core.domain_number(domain)
            self.core.parking.park(job.jobid, 0, None, behind=behind)  # type: ignore[union-attr]

    def _park(self, job: Job, queue: Queue, reserved: tuple[int, int] | None) -> None:
        """Park a job that pended for too few free slots (or, with ``reserved``, for
        reserved room: ``_park_reserved``) when nothing but the free slots can
        change its turn (DESIGN "Incremental rounds"):

        * a plain request (slots only): it starts as soon as its tasks' slots are
          free, anywhere, and with fewer it pends for this same reason;
        * a queue whose readiness moves only with a queue event: active, no run
          windows, no slot limits; and no preemption, made or in flight;
        * a backfill policy that parks (``Policy.parks``: not ``strict``, where a
          job blocked pends for another reason once an earlier one blocks, nor
          ``conservative``, which reserves for every blocked job, so each is offered
          every round: parking would only cost). Around reservations its slots are
          counted as if none were reserved, and while a policy still reserves it
          is offered anyway (``ReservationBook.wake_slots``).

        Until then its turn would pend it again for the same reason, which is no
        decision, and change nothing.
        """
        if (
            is_plain(job.request)
            and not queue.preemptible_queues
            and not queue.limited
            and not queue.windows
            and job.jobid not in self.core.state.preemptions
            and (self.state.book is None or self._policy(queue).parks)
        ):
            self.core.parking.park(job.jobid, job.tasks, reserved)  # type: ignore[union-attr]

    def _schedule(self, job: Job, queue: Queue) -> tuple[JobAlloc | Unsatisfied, Plan]:
        """The job's outcome (an allocation held, or why not) and the preemption plan
        to carry out."""
        book = self.state.book
        if book is not None and book.standing:
            book.turn(job)
        if book is not None and book.blocked and self._policy(queue).domain in book.blocked:
            # A job that can never run says so (its controller may reject it now),
            # rather than that a job ahead of it cannot start.
            core = self.core
            never = job_never_fits(job, job.request, core.state, core.never)
            return (ORDER_BLOCKED if never is None else never), FINAL
        held = self._readiness(job, queue)
        if held is not None:
            # Held whatever room it gets; a preemption in flight for it stays in
            # flight while the hold can pass (its victims' room is still its own).
            return held, self.core.preemptor.on_hold(job, queue, held, self.state)
        # A job whose preemption is in flight always gets to its own record (wait, or
        # give up); it never takes a twin's verdict. Nor does a plain job around
        # reservations: whether it pends for slots or for reserved room depends on
        # how many slots are free (fewer as the session goes), which counting tells
        # at once; a twin's verdict could be stale, and a parked job's would differ
        # from what parking assumes (DESIGN "Incremental rounds").
        preempting = job.jobid in self.core.state.preemptions
        cacheable = self.state.book is None or not is_plain(job.request)
        fingerprint = self._fingerprint(job, queue) if cacheable else None
        cached = None if fingerprint is None or preempting else self._cached(fingerprint)
        if cached is not None:
            self._reserve(job, queue, cached)
            return cached, FINAL
        outcome = self._allocate(job)
        if outcome.__class__ is JobAlloc:
            return outcome, FINAL
        unsatisfied = cast(Unsatisfied, outcome)
        plan = FINAL
        if queue.preemptible_queues or preempting:
            unsatisfied, plan = self._preempt(job, queue, unsatisfied)
        if fingerprint is not None and plan.cache and self.core.unsatisfiable_cache:
            self.state.unsatisfiable[fingerprint] = unsatisfied
        if plan.final:
            self._reserve(job, queue, unsatisfied)
        return unsatisfied, plan

    def _allocate(self, job: Job) -> JobAlloc | Unsatisfied:
        """Allocate the job on the real state, around the session's reservations; a
        job that only reserved room stops says so (RESERVED)."""
        book = self.state.book
        if book is None or not (book.reservations or job.jobid in book.previous):
            return self.core.allocate(job, self.state)
        plain = is_plain(job.request)
        if plain and book.counted and book.unreserved_free() < job.tasks:
            return self.core.allocate(job, self.state)  # too few slots, reserved or not
        if book.delays(job):  # it would delay a reservation on counts
            if not plain:
                outcome = book.trial(job, lambda: self.core.allocate(job, self.state))
                return book.reserved_for(job) if outcome.__class__ is JobAlloc else outcome
            if book.unreserved_free() < job.tasks:
                return self.core.allocate(job, self.state)  # too few slots, reserved or not
            return book.reserved_for(job)
        if book.cannot_fit(job):  # known by counting: nothing is taken to find it out
            if book.unreserved_free() < job.tasks:
                return self.core.allocate(job, self.state)  # too few slots, reserved or not
            return book.reserved_for(job)
        outcome = book.allocate(job, lambda: self.core.allocate(job, self.state))
        if outcome.__class__ is JobAlloc or not cast(Unsatisfied, outcome).resolvable:
            return outcome
        return book.in_the_way(job, lambda: self.core.allocate(job, self.state)) or outcome

    def _reserve(self, job: Job, queue: Queue, outcome: Unsatisfied) -> None:
        """A job that could run once room frees holds back the jobs behind it as its
        backfill policy says: a reservation (up to the policy's depth), and under
        ``strict`` no later job starts. A job that can never run blocks nobody."""
        book = self.state.book
        if book is None or not outcome.resolvable or not book.could_run(job):
            return
        policy = self._policy(queue)
        if not policy.reserves:
            return
        if book.wants(policy) and not book.has(job):
            book.reserve(job, job.request, policy, self.core.view.check_cancel)  # type: ignore[arg-type]
        if policy.blocks:
            book.blocked.add(policy.domain)

    def _policy(self, queue: Queue) -> Policy:
        """The backfill policy of ``queue``'s jobs (looked up once a session)."""
        policy = self.state.policies.get(queue.name)
        if policy is None:
            policy = self.state.policies[queue.name] = policy_of(self.core.state, queue)
        return policy

    def _readiness(self, job: Job, queue: Queue) -> Unsatisfied | None:
        """Why the job's queue dispatches nothing now, or its queue or user is at a
        slot limit; None when it may be tried."""
        holds = self.state.queue_holds
        held = holds.get(queue.name, _UNSET)
        if held is _UNSET:
            held = holds[queue.name] = queue_hold(queue, self.state.from_s)
        if held is None and queue.limited:
            held = limit_hold(self.core.state, job, queue)
            if held is not None and not exceeds_limits(job, queue):
                # The limit is reached by what the queue runs now; a job that could
                # never run anyway says why, whatever the queue runs.
                held = job_never_fits(job, job.request, self.core.state, self.core.never) or held
        return cast(Unsatisfied | None, held)

    def _fingerprint(self, job: Job, queue: Queue) -> Fingerprint:
        """Req 7's key: what decides whether the request can be satisfied. Where the
        queue preempts, the job's priority decides which victims it may take, so it
        is part of it."""
        priority = job.priority if queue.preemptible_queues else None
        # Around reservations, what a job may use depends on which it ends before.
        book = self.state.book
        open_to = None if book is None else book.open_to(job)
        return (id(job.request), job.tasks, job.user, job.queue, job.project, priority, open_to)

    def _cached(self, fingerprint: Fingerprint) -> Unsatisfied | None:
        """Req 7: a request this session already proved unsatisfiable pends at once.
        Within a session resources only shrink, so a hit never pends a job that could
        have been dispatched."""
        cached = self.state.unsatisfiable.get(fingerprint)
        if cached is not None:
            self.state.cache_hits += 1
            self.core.cache_hits += 1
        return cached

    def _preempt(self, job: Job, queue: Queue, outcome: Unsatisfied) -> tuple[Unsatisfied, Plan]:
        """Req 6: the preemption evaluator's plan for an unsatisfied job."""
        if self.state.book is not None:
            self.state.book.hold()  # the evaluator sees the room reservations hold
        return self.core.preemptor.decide(job, queue, outcome, self.state)

    def _decide(self, job: Job, outcome: JobAlloc | Unsatisfied, plan: Plan) -> None:
        """DISPATCH a placed job; else carry out the preemption plan (PREEMPT) and
        PEND the job when its reason changed."""
        core, ts = self.core, self.state.start_ts
        if outcome.__class__ is JobAlloc:
            core.state.start(job, outcome, ts)
            if self.state.book is not None:
                self.state.book.started(job)
            core.picker.on_dispatch(job.jobid)
            core.on_decision(Dispatch(ts=ts, jobid=job.jobid, alloc=outcome))
            return
        if plan != FINAL and (preempt := core.preemptor.carry_out(job, plan, self.state)):
            core.on_decision(preempt)
        reason = core.reason(cast(Unsatisfied, outcome))
        last = job.pend_reason
        # A PEND is news only when the reason changed (identity first).
        if last is not reason and last != reason:
            job.pend_reason = reason
            core.on_decision(Pend(ts=ts, jobid=job.jobid, reason=reason))
        core.picker.on_pend(job.jobid)


#: The outcome of a job behind one that could not start under ``strict``. It names no
#: job: the head that blocks changes each time one starts, and naming it would make
#: every job behind a new pending reason then, a PEND each (a million for KTH-SP2's
#: first 8,000 jobs), and each of them a turn (``_park_behind``).
ORDER_BLOCKED = Unsatisfied(PendingCode.ORDER_BLOCKED, resolvable=False)
