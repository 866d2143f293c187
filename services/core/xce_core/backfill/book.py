"""One session's reservations and the room they hold while it goes on (DESIGN
"Time-aware scheduling").

``ReservationBook`` keeps a session's reservations (``alloc.outcome.Reservation``):
it plans them (on counts, on the free profile, ``profile``; or naming hosts, with
``alloc.planner``), holds the free room a reservation naming hosts takes now on the
real state (*phantom* holds, given back when the session ends) so that a later job
does not take it, and lets a job that ends before a reservation starts use its room
(the index offers those hosts first). Only a job that could run once room frees (an
unsatisfied allocation that is *resolvable*) is blocked: a job that can never run
blocks nobody. Whom a session reserves for is its policy's (``policy``); room owed
to a preemptor or a resume is ``owed``'s.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

from xce_schemas import HostStatus, JobAlloc, JobState, PendingCode

from xce_core.alloc.outcome import FOREVER, Reservation, Unsatisfied
from xce_core.alloc.planner import Planner
from xce_core.backfill.memo import Chains, Check, Names, Plan, PlanMemo, Plans
from xce_core.backfill.policy import Policy, policy_of
from xce_core.backfill.profile import FreeProfile
from xce_core.backfill.times import on_the_clock, run_limit_ns
from xce_core.resreq.model import Resreq, is_plain
from xce_core.state import ClusterState, Job


@dataclass(slots=True)
class ReservationBook:
    """One session's reservations and the free room they hold now.

    The free room a reservation takes now (its *phantom* hold) is held on the real
    state only once a later job is allocated for real (``hold``): most jobs tried
    behind a blocked one are plain requests that counting shows cannot fit, and
    for them nothing is taken or given back.

    Attributes:
        reservations: made this session, in order.
        phantom: free slots held (or to hold) for reservations now, by host.
        held: whether ``phantom`` is taken on the state now.
        blocked: under ``strict``, the policy domains (the queue that overrides, or
            None: the scheduler's) where a job could not start this session, so
            that every later one there is held back.
        unplanned: blocked jobs reserved for in vain, in order: the planner found
            no instant in view at which they could start.
        reserving: the policy domains (other than ``greedy``'s) whose depth is not
            reached yet, with how many reservations each still makes (from every
            queue's policy, at the start of the session).
    """

    state: ClusterState
    now: int
    reservations: list[Reservation] = field(default_factory=list)
    phantom: dict[str, int] = field(default_factory=dict)
    held: bool = False
    blocked: set[str | None] = field(default_factory=set)
    unplanned: list[int] = field(default_factory=list)
    reserving: dict[str | None, int] = field(init=False)
    _held: list[dict[str, int]] = field(default_factory=list)  # phantom, per reservation
    _phantom_slots: int = 0  # sum of ``phantom``
    _ends: dict[int, int] = field(default_factory=dict)  # jobid → ``_end``
    # Per reservation: the priority above which a job may take its room anyway
    # (a suspended job's resume), or None.
    _yields_to: list[int | None] = field(default_factory=list)
    _for: set[int] = field(default_factory=set)  # the jobs of ``reservations``
    _first_end: int = FOREVER  # the first end of a reservation after now, ns
    _open: dict[int, tuple[bool, ...]] = field(default_factory=dict)  # jobid → ``open_to``
    _last_open: tuple[Job | None, tuple[bool, ...]] = (None, ())  # the job asked last
    # host → the reservations naming it, as (index, start ns, until ns, slots), for
    # the first ``_named`` reservations (indexed when first needed after a new one):
    # the first to take a free host holds it, but every one naming it needs it.
    _naming: dict[str, list[tuple[int, int, int, int]]] = field(default_factory=dict)
    _named: int = 0
    # by ``open_to`` and the standing reservations that bear on the job; around
    # reservations on counts alone, by how many start before the job would end
    _reasons: dict[tuple[object, ...], Unsatisfied] = field(default_factory=dict)
    # The reservations on counts (made and standing) as (start ns, jobid), sorted, and
    # a number that changes with them: those a job would meet are a prefix.
    _starts: list[tuple[int, int]] = field(default_factory=list)
    _starts_version: int = 0
    _planner: Planner | None = None
    memo: PlanMemo = field(default_factory=PlanMemo)
    plans_made: Plans = field(default_factory=dict)
    checks_made: dict[tuple[object, ...], Check] = field(default_factory=dict)
    chains_made: Chains = field(default_factory=dict)
    _chain: int = 0  # the chain of ``reservations``
    names_made: Names = field(default_factory=dict)
    _names: int = 0  # the names of ``reservations``
    _latest: int = 0  # the latest start of ``reservations``, ns
    previous: dict[int, Reservation] = field(default_factory=dict)
    # The reservations known to fit as they are (hosts free by their start, none
    # held by two at once), by id: planned by counting, or kept and checked; the
    # planner prunes its search by a count of them (``alloc.planner._Counted``).
    fit: dict[int, Reservation] = field(default_factory=dict)
    #: Free slots over time less every reservation and every job started since it
    #: was made (``profile``): made with the first reservation on counts.
    profile: FreeProfile | None = None
    #: Reservations on counts made this session: while there is one, a job starts
    #: only when the profile has its slots over its whole window (it delays none).
    counted: int = 0
    _end_times: list[int] = field(default_factory=list)  # running jobs' expected ends, ns
    #: Under compression (``Policy.compress``), the reservations on counts of the last
    #: round whose jobs have not had their turn yet: they stand in the profile while
    #: the others are planned, by jobid.
    standing: dict[int, Reservation] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.memo.begin(self.state)
        policies = [policy_of(self.state, queue) for queue in self.state.queues.values()]
        self.reserving = {p.domain: p.depth for p in policies if p.reserves}
        compressing = {p.domain for p in policies if p.compress}
        if compressing and self.previous:
            self._stand(compressing)

    def _stand(self, compressing: set[str | None]) -> None:
        """Compression: the last round's reservations on counts of pending jobs in
        ``compressing`` domains stand in the profile from the start, so no job
        (earlier in the order or not) takes room one of them was promised; each is
        planned again at its job's turn (``turn``), never later than it was while
        it still fits."""
        state = self.state
        standing = {}
        for jobid, reservation in self.previous.items():
            job = state.jobs.get(jobid)
            if (
                reservation.count
                and job is not None
                and job.state is JobState.PEND
                and policy_of(state, state.queues[job.queue]).domain in compressing
            ):
                standing[jobid] = reservation
        if standing:
            profile = self.free_profile()
            for reservation in standing.values():
                profile.take(reservation.start_ts, reservation.until, reservation.slots)
                self._start(reservation)
            self.standing = standing
            self.counted += len(standing)

    def turn(self, job: Job) -> None:
        """``job``'s turn in the session begins: under compression, its standing
        reservation leaves the profile, to be planned again (or to start)."""
        reservation = self.standing.pop(job.jobid, None)
        if reservation is not None:
            assert self.profile is not None
            self.profile.give(reservation.start_ts, reservation.until, reservation.slots)
            self.counted -= 1
            starts = self._starts
            del starts[bisect.bisect_left(starts, (reservation.start_ts, reservation.jobid))]
            self._starts_version += 1

    def _start(self, reservation: Reservation) -> None:
        """Index a reservation on counts by its start (``_starts``)."""
        bisect.insort(self._starts, (reservation.start_ts, reservation.jobid))
        self._starts_version += 1

    def keep_unturned(self) -> None:
        """The session ends before some jobs' turns (it was cancelled): their
        standing reservations stay theirs (``reservations``)."""
        for reservation in self.standing.values():
            self.reservations.append(reservation)
        self.standing.clear()

    # --- reserving -------------------------------------------------------------------

    def could_run(self, job: Job) -> bool:
        """Whether ``job`` could run were every running job gone: no more tasks than
        the hosts that take jobs have slots. One that could not (it needs hosts that
        are down or closed) waits for no running job, so it holds back nobody: no
        reservation, no depth counted, nothing blocked under ``strict``."""
        memo, version = self.memo, self.state.hosts_version
        if memo.usable[0] != version:
            ok = HostStatus.OK
            slots = sum(h.slots for h in self.state.host_order if h.status is ok)
            memo.usable = (version, slots)
        return job.tasks <= memo.usable[1]

    def wants(self, policy: Policy) -> bool:
        """Whether a blocked job under ``policy`` gets a reservation now (its domain's
        depth is not reached)."""
        return policy.domain in self.reserving

    def has(self, job: Job) -> bool:
        """Whether ``job`` was given a reservation this session."""
        return job.jobid in self._for

    def reserve(
        self,
        job: Job,
        request: Resreq,
        policy: Policy,
        check_cancel: Callable[[], None],
    ) -> Reservation | None:
        """Reserve room for a blocked job whose policy ``wants`` one, at its earliest
        start (``Planner``), hold the part of it free now, and count it in its
        policy's domain; None when it fits at no instant in view.

        Raises:
            SessionCancelled: the session was cancelled (nothing was held).
        """
        if policy.on_counts and _plain(job):
            return self._reserve_on_counts(job, policy)
        state = self.state
        run_ns = run_limit_ns(state, job)
        key: tuple[object, ...] | None = None
        if is_plain(request) and not state.multi_slot_hosts and not self.counted:
            key = (job.jobid, job.tasks, run_ns, state.plan_version, state.hosts_version)
            key += (self._chain,)
        # The job's reservation of the last round (kept on slots only: plain jobs).
        kept = self.previous.get(job.jobid) if is_plain(request) else None
        if kept is not None and kept.count:
            kept = None  # (planned on counts under another policy: nothing to keep)
        before = _bound(kept, policy)
        fits: bool | None = None  # whether ``kept`` still fits, once known
        plan = self._planned(key, before)
        if plan is not None and kept is not None and plan[4] != FOREVER:
            fits = self._kept_fits(key, kept)  # the plan says: no start before kept's
            if not fits:
                plan = None
        if plan is None:
            bound = FOREVER if fits is False else before
            plan = self._plan(job, request, run_ns, check_cancel, bound)
            if kept is not None and plan[4] != FOREVER:  # none before the kept one's start
                fits = self._kept_fits(key, kept)
                if not fits:
                    plan = self._plan(job, request, run_ns, check_cancel)
            if key is not None:
                self.plans_made[key] = plan
        reservation, held = plan[0], dict(plan[1])
        if key is not None and reservation is not None:  # planned by counting
            self.fit[id(reservation)] = reservation
        self._count_in(policy)
        if (
            kept is not None
            and kept != reservation
            and (reservation is None or _later(reservation, kept, policy))
            and (self._kept_fits(key, kept) if fits is None else fits)
        ):
            # A promise stands while it can be kept: planned afresh, the room may
            # come out on other hosts or later (other jobs' hosts moved), and a
            # job's start would drift later round after round.
            reservation, held = kept, dict(self._kept_room(key, kept))
            self.fit[id(kept)] = kept
        reservation = on_the_clock(reservation)
        if reservation is None:
            self.unplanned.append(job.jobid)
            return None
        self.add(reservation, held)
        return reservation

    def _count_in(self, policy: Policy) -> None:
        """Count a reservation made (or tried) in ``policy``'s domain: it reserves
        for no more once its depth is reached."""
        left = self.reserving.pop(policy.domain) - 1  # (reserved for only while it wants)
        if left:
            self.reserving[policy.domain] = left

    def _reserve_on_counts(self, job: Job, policy: Policy) -> Reservation | None:
        """``reserve`` for a plain job of a policy that plans on counts: its
        earliest start on the free profile (the slots free over its whole window
        around every reservation made before it), planned afresh each session, in
        queue order; no host named (they are chosen when it starts)."""
        profile = self.free_profile()
        end_now = self.end_of(job)  # (now + run limit: looked up once a session)
        length = FOREVER if end_now >= FOREVER else end_now - self.now
        start = profile.earliest(job.tasks, length)
        self._count_in(policy)
        reservation = None
        if start is not None:
            end = None if length >= FOREVER else start + length
            running = bisect.bisect_right(self._end_times, start)
            reservation = on_the_clock(
                Reservation(job.jobid, start, end, (), running=running, count=job.tasks)
            )
        if reservation is None:
            self.unplanned.append(job.jobid)
            return None
        self.counted += 1
        self.add(reservation, {})
        return reservation

    def free_profile(self) -> FreeProfile:
        """The session's free profile (``profile``), made when first needed: the
        free slots were no room held, the slots running jobs give back at their
        expected ends, less the window of every reservation made so far."""
        profile = self.profile
        if profile is None:
            state, now = self.state, self.now
            gives = [(end, self._gives_back(job)) for end, job in state.expected_ends(now)]
            self._end_times = [max(end, now) for end, _ in gives]
            profile = self.profile = FreeProfile(now, self.unreserved_free(), gives)
            for reservation in self.reservations:
                profile.take(reservation.start_ts, reservation.until, reservation.slots)
        return profile

    def _gives_back(self, job: Job) -> int:
        """The slots a running job gives back on ending on hosts that take jobs."""
        alloc = job.alloc
        assert alloc is not None
        known = self.memo.gives_back.get(job.jobid)
        if known is not None and known[0] is alloc:
            return known[1]
        hosts, ok = self.state.hosts, HostStatus.OK
        slots = sum(n for name, n in alloc.slots_by_host().items() if hosts[name].status is ok)
        self.memo.gives_back[job.jobid] = (alloc, slots)
        return slots

    def delays(self, job: Job) -> bool:
        """Whether starting ``job`` now would delay a reservation on counts: the
        profile has fewer free slots than its tasks at some instant before it
        would end (by its run limit). False while there is none (the reservations
        that name hosts hold their room on the hosts themselves)."""
        if not self.counted:
            return False
        assert self.profile is not None
        return self.profile.least(self.now, self.end_of(job)) < job.tasks

    def _room(self, at: int, length: int, tasks: int) -> bool:
        """Whether the free profile has ``tasks`` slots over ``[at, at + length)``
        (ns): a start the reservations on counts leave room for."""
        assert self.profile is not None
        end = FOREVER if length >= FOREVER else at + length
        return self.profile.least(at, end) >= tasks

    def _plan(
        self,
        job: Job,
        request: Resreq,
        run_ns: int | None,
        check_cancel: Callable[[], None],
        before: int = FOREVER,
    ) -> Plan:
        """The job's plan made now: its earliest start before ``before`` (ns) around
        the reservations made so far, and the instant until which it holds."""
        planner = self._planner
        if planner is None:
            ends = self.state.expected_ends(self.now)
            planner = self._planner = Planner(self.state, self.now, ends, self.fit, self.memo.frees)
        reservation = planner.earliest_start(
            job,
            request,
            run_ns,
            self.reservations,
            self.phantom if self.held else {},
            check_cancel,
            before,
            self._room if self.counted else None,
        )
        until = min(planner.next_end(), self._first_end)
        if reservation is not None:
            until = min(until, reservation.start_ts)
            before = FOREVER  # the earliest start there is
        return (reservation, self.room_now(reservation), self.now, until, before)

    def add(
        self, reservation: Reservation, held: dict[str, int], yields_to: int | None = None
    ) -> None:
        """Book ``reservation`` and hold ``held``, its room free now."""
        state, phantom = self.state, self.phantom
        for name, take in held.items():
            if self.held:
                state.take_slots(state.hosts[name], take)
            phantom[name] = phantom.get(name, 0) + take
            self._phantom_slots += take
        self.reservations.append(reservation)
        if self.profile is not None:
            self.profile.take(reservation.start_ts, reservation.until, reservation.slots)
        if reservation.count:
            self._start(reservation)
        if not self.counted:
            # (Chains key plans made by counting hosts, names the jobs parked for
            # reserved room: neither is used around reservations on counts.)
            memo = self.memo
            self._chain = memo.number(memo.chains, self.chains_made, (self._chain, reservation))
            named = (self._names, reservation.jobid, yields_to)
            self._names = memo.number(memo.names, self.names_made, named)
        self._latest = max(self._latest, reservation.start_ts)
        self._held.append(held)
        self._yields_to.append(yields_to)
        self._for.add(reservation.jobid)
        if self.now < reservation.until < self._first_end:
            self._first_end = reservation.until

    def room_now(self, reservation: Reservation | None) -> tuple[tuple[str, int], ...]:
        """The part of a reservation's room that is free now and not held already
        for another: ``(host, slots)`` to hold. On a host of several slots, what
        running jobs there give back by its start is not held now: only the rest
        of what it needs (the free slots beyond are the *extra* others may use)."""
        if reservation is None:
            return ()
        phantom, taken, hosts = self.phantom, self.held, self.state.hosts
        if not self.state.multi_slot_hosts:  # a free host, unless held for another
            ok = HostStatus.OK
            return tuple(
                [
                    (name, 1)
                    for name, _ in reservation.hosts
                    if (host := hosts[name]).used == 0
                    and host.status is ok
                    and (taken or name not in phantom)
                ]
            )
        out = []
        naming = self._naming_hosts()
        for name, slots in reservation.hosts:
            host = hosts[name]
            if host.used >= host.slots or host.status is not HostStatus.OK:
                continue  # busy now (or taking no jobs): nothing to hold
            free = host.slots - host.used
            if not taken:
                free -= phantom.get(name, 0)
            if host.slots > 1 and name not in naming:
                # (only the first reservation naming a host counts on what running
                # jobs free there: the others hold all they need)
                start = reservation.start_ts
                slots -= sum(n for end, n in self.running_on(name) if end <= start)
            take = min(slots, free)
            if take > 0:
                out.append((name, take))
        return tuple(out)

    def _kept_fits(self, key: tuple[object, ...] | None, kept: Reservation) -> bool:
        """``_still_fits`` of the job's kept reservation, taken from the last
        session's check under the same plan key when that was of this very
        reservation (all it rests on but the clock is in the key, and a start
        that has come is looked at again), and noted for the next session."""
        if key is None:
            return self._still_fits(kept)
        check = self.checks_made.get(key)
        if check is None or check[0] is not kept:
            check = self.memo.checks.get(key)
        if check is None or check[0] is not kept:
            check = (kept, self._still_fits(kept), None)
        self.checks_made[key] = check
        return check[1] and kept.start_ts > self.now

    def _kept_room(
        self, key: tuple[object, ...] | None, kept: Reservation
    ) -> tuple[tuple[str, int], ...]:
        """``_room_now`` of the job's kept reservation, known from the check under
        the same plan key (``_kept_fits``) once looked at, and noted there."""
        check = None if key is None else self.checks_made.get(key)
        if check is None or check[0] is not kept:
            return self.room_now(kept)
        if check[2] is None:
            assert key is not None
            check = self.checks_made[key] = (kept, check[1], self.room_now(kept))
        assert check[2] is not None
        return check[2]

    def _still_fits(self, reservation: Reservation) -> bool:
        """Whether a reservation of the last round still fits as it is: it starts
        later than now and each of its hosts has its slots then, given the running
        jobs' expected ends and the reservations made this round (slots only)."""
        start, until = reservation.start_ts, reservation.until
        if start <= self.now:
            return False
        state = self.state
        naming = self._naming_hosts()
        if not state.multi_slot_hosts:  # a host is free by then, and held by none
            hosts, on, ok = state.hosts, state.running_on, HostStatus.OK
            deadline_of = state.deadline_of  # (an expected end after now is the deadline)
            for name, _ in reservation.hosts:
                host = hosts.get(name)
                if host is None or host.status is not ok:
                    return False
                if host.used and name in on:
                    for jobid in on[name]:
                        if deadline_of[jobid] > start:
                            return False
                if name in naming:
                    for _, other_start, other_until, _ in naming[name]:
                        if other_start < until and other_until > start:
                            return False
            return True
        for name, slots in reservation.hosts:
            host = state.hosts.get(name)
            if host is None or host.status is not HostStatus.OK:
                return False
            busy = sum(taken for end, taken in self.running_on(name) if end > start)
            held = sum(
                taken
                for _, other_start, other_until, taken in naming.get(name, ())
                if other_start < until and other_until > start
            )
            if host.slots - busy - held < slots:
                return False
        return True

    def running_on(self, name: str) -> list[tuple[int, int]]:
        """The running jobs on host ``name`` with their expected ends: ``(end ns,
        slots)``."""
        running = self.state.running
        out = []
        for jobid in self.state.running_on.get(name, ()):
            job = running[jobid]
            assert job.alloc is not None
            out.append((self.expected_end_of(job), job.alloc.slots_by_host().get(name, 0)))
        return out

    def expected_end_of(self, job: Job) -> int:
        """``expected_end`` of a running job (``ClusterState.expected_end``)."""
        return self.state.expected_end(job, self.now)

    def _planned(self, key: tuple[object, ...] | None, before: int) -> Plan | None:
        """The last session's plan of a job planned by counting, when nothing it
        rests on changed since (``ClusterState.plan_version``, the hosts, the
        reservations before it) and no instant it was judged at has passed: no
        running job's expected end, no earlier reservation's end and not its own
        start. None otherwise."""
        if key is None:
            return None
        plan = self.memo.plans.get(key)
        if plan is None:
            return None
        then, until = plan[2], plan[3]
        if not (self.now == then or self.now < until) or plan[4] not in (FOREVER, before):
            return None
        self.plans_made[key] = plan
        return plan

    def started(self, job: Job) -> None:
        """A job started this session: the planner's view and the free profile hold
        it until its expected end."""
        if self._planner is not None:
            self._planner.started(job, self.expected_end_of(job))
        if self.profile is not None:
            end = self.expected_end_of(job)
            self.profile.take(self.now, end, self._gives_back(job))
            bisect.insort(self._end_times, max(end, self.now))

    def hold(self) -> None:
        """Take the phantom holds on the state (before anything is allocated for real
        or preempted around the reservations)."""
        if not self.held:
            state = self.state
            for name, slots in self.phantom.items():
                state.take_slots(state.hosts[name], slots)
            self.held = True

    # --- allocating around reservations ------------------------------------------------

    def open_to(self, job: Job) -> tuple[bool, ...]:
        """Whether ``job`` has a run limit, then which reservations it may use
        (``_opens``): all that decides how the reservations bear on it (the
        unsatisfiable cache's key); empty while there are none."""
        if not self.reservations:
            return ()  # nothing bears on it
        last = self._last_open
        if last[0] is job and len(last[1]) == len(self.reservations) + 1:
            return last[1]
        flags = self._open.get(job.jobid)
        if flags is None or len(flags) != len(self.reservations) + 1:  # none made since
            end = self.end_of(job)
            flags = tuple(
                [end < FOREVER] + [self._opens(i, job, end) for i in range(len(self._held))]
            )
            self._open[job.jobid] = flags
        self._last_open = (job, flags)
        return flags

    def _opens(self, index: int, job: Job, end: int) -> bool:
        """Whether reservation ``index`` is open to ``job``, which would end at ``end``
        (ns): it is the job's own, the job ends before it starts, or (room held for
        a suspended job's resume) the job is of higher priority."""
        reservation = self.reservations[index]
        if reservation.start_ts >= end or reservation.jobid == job.jobid:
            return True
        above = self._yields_to[index]
        return above is not None and job.priority > above

    def wake_slots(self) -> int:
        """``CoreView.wake_slots``: the free slots were no room reserved, or, while a
        domain still reserves (its next blocked job takes a reservation, which a
        parked job may be), every parked job (``FOREVER``)."""
        return FOREVER if self.reserving else self.unreserved_free()

    def reserved_room(self) -> tuple[int, int, int, int]:
        """``CoreView.reserved_room``: the names of the reservations made so far
        (-1 while a domain still reserves: a parked job may be the next to take
        one), their latest start (ns), the free slots outside the room they hold
        now, and the free slots were none held (slots)."""
        free = self.unreserved_free()
        names = -1 if self.reserving or self.counted else self._names
        return (names, self._latest, free - self._phantom_slots, free)

    def closed_to_all(self, job: Job) -> bool:
        """Whether no reservation made so far is open to ``job`` (``open_to``), and
        there is one: a plain job then fits exactly when the free slots outside the
        held room are enough, and pends for reserved room while only the room held
        would make them enough (``reserved_room``)."""
        flags = self.open_to(job)
        return len(flags) > 1 and not any(flags[1:])

    def unreserved_free(self) -> int:
        """The free slots were no room reserved (slots)."""
        free = self.state.free_index.total_free
        return free + self._phantom_slots if self.held else free

    def cannot_fit(self, job: Job) -> bool:
        """Whether counting alone shows a plain request cannot fit around the
        reservations (the free slots, less the reserved ones it may not use, are
        fewer than its tasks); False when only allocating can tell."""
        if not _plain(job):
            return False
        free, tasks = self.unreserved_free(), job.tasks
        if free < tasks:
            return True  # too few even with all the held room
        if free - self._phantom_slots >= tasks:
            return False  # enough outside it: which reservations are open is moot
        flags = self.open_to(job)
        if not self.phantom or not any(flags[1:]):
            opened = 0
        elif all(flags[1:]):
            opened = self._phantom_slots
        else:
            opened = sum(self._open_room(job).values())
        closed = self._phantom_slots - opened
        return free - closed < tasks

    def allocate(
        self, job: Job, allocate: Callable[[], JobAlloc | Unsatisfied]
    ) -> JobAlloc | Unsatisfied:
        """Allocate ``job`` (``allocate`` does it on the real state) with the room of
        every reservation that starts once it has ended (by its run limit) open to
        it, and offered first; the rest of the reserved room stays held."""
        state = self.state
        own = self._own_hosts(job)
        if not self.held and not state.multi_slot_hosts and _plain(job):
            return self._allocate_counted(job, allocate, own)
        self.hold()
        given = self._open_room(job)
        if not given and not own:
            return allocate()
        if _plain(job) and state.free_index.total_free + sum(given.values()) < job.tasks:
            return allocate()  # too few slots even with that room: no need to open it
        for name, slots in given.items():
            state.give_slots(state.hosts[name], slots)
        opened = sorted(state.hosts[name].position for name in given)
        state.free_index.prefer(tuple(own + [p for p in opened if p not in own]))
        try:
            outcome = allocate()
        except BaseException:  # cancelled mid-placement: the room is held again
            for name, slots in given.items():
                state.take_slots(state.hosts[name], slots)
            raise
        finally:
            state.free_index.prefer(())
        took = outcome.slots_by_host() if isinstance(outcome, JobAlloc) else {}
        for name, slots in given.items():
            state.take_slots(state.hosts[name], slots - min(slots, took.get(name, 0)))
        self._consume(given, took)
        return outcome

    def _own_hosts(self, job: Job) -> list[int]:
        """The positions of the hosts the job's reservation of the last round named
        (none without one): a job offered them first starts where it was planned,
        and the plans made around it still hold."""
        kept = self.previous.get(job.jobid)
        if kept is None:
            return []
        hosts = self.state.hosts
        return sorted(hosts[name].position for name, _ in kept.hosts if name in hosts)

    def _allocate_counted(
        self, job: Job, allocate: Callable[[], JobAlloc | Unsatisfied], own: list[int]
    ) -> JobAlloc | Unsatisfied:
        """``allocate`` for a plain job on one-slot hosts while the reserved room is
        not held: the hosts it would get were it held are known (the free hosts of
        its own last reservation, the open reserved hosts, then the free unreserved
        ones, each in host order), so they are offered first and nothing is taken
        or given back to find them."""
        state = self.state
        hosts, tasks, order = state.hosts, job.tasks, state.host_order
        given = self._open_room(job)
        reserved = {hosts[name].position for name in self.phantom}
        opened = {hosts[name].position for name in given}
        chosen = [
            p
            for p in own
            if order[p].status is HostStatus.OK
            and order[p].used < order[p].slots
            and (p not in reserved or p in opened)
        ][:tasks]
        for position in sorted(opened):
            if len(chosen) == tasks:
                break
            if position not in chosen:
                chosen.append(position)
        if len(chosen) < tasks:
            for position in state.free_index.positions_at_least(1):
                if position not in reserved and position not in chosen:
                    chosen.append(position)
                    if len(chosen) == tasks:
                        break
        if len(chosen) < tasks:  # cannot fit around the reservations
            self.hold()
            return allocate()
        state.free_index.prefer(tuple(chosen))
        try:
            outcome = allocate()
        finally:
            state.free_index.prefer(())
        if isinstance(outcome, JobAlloc):
            self._consume(given, outcome.slots_by_host())
        return outcome

    def _open_room(self, job: Job) -> dict[str, int]:
        """The held room ``job`` may take, by host: what is held there beyond all
        that the reservations not open to it (``open_to``) need on the host. On a
        one-slot host that is the host when every reservation naming it is open to
        the job; on a host of several slots, the planner counts the same room free
        (the held room less the window's reservations), so a start it promises
        now is one allocation grants."""
        flags = self.open_to(job)
        if not self.phantom or not any(flags[1:]):
            return {}
        if all(flags[1:]):
            return dict(self.phantom)
        naming = self._naming_hosts()
        room = {}
        for name, slots in self.phantom.items():
            need = sum(taken for index, _, _, taken in naming[name] if not flags[index + 1])
            if slots > need:
                room[name] = slots - need
        return room

    def _naming_hosts(self) -> dict[str, list[tuple[int, int, int, int]]]:
        """Each host named by a reservation, with those naming it: ``(index, start
        ns, until ns, slots)`` (the new ones indexed when first needed)."""
        naming = self._naming
        for index in range(self._named, len(self.reservations)):
            reservation = self.reservations[index]
            window = (reservation.start_ts, reservation.until)
            for name, slots in reservation.hosts:
                naming.setdefault(name, []).append((index, *window, slots))
        self._named = len(self.reservations)
        return naming

    def _consume(self, given: dict[str, int], took: dict[str, int]) -> None:
        """A job took ``took`` (slots by host), the held room ``given`` first: that
        room is reserved no longer (every reservation naming it was open to it)."""
        for name, slots in took.items():
            used = min(slots, given.get(name, 0))
            if not used:
                continue
            self._phantom_slots -= used
            self.phantom[name] -= used
            if not self.phantom[name]:
                del self.phantom[name]
            for held in self._held:
                lost = min(held.get(name, 0), used)
                used -= lost
                if lost and not (held[name] - lost):
                    del held[name]
                elif lost:
                    held[name] -= lost

    def in_the_way(
        self, job: Job, allocate: Callable[[], JobAlloc | Unsatisfied]
    ) -> Unsatisfied | None:
        """Why a job that did not fit pends, when only reserved room stopped it: it
        would fit were no room reserved (tried, then undone), but not ending before
        those reservations start, it may not use theirs. None otherwise."""
        if not self.phantom:
            return None
        if _plain(job):  # slots only: it fits when the free slots add up (O(1))
            return self.reserved_for(job) if self.unreserved_free() >= job.tasks else None
        if not isinstance(self.trial(job, allocate), JobAlloc):
            return None
        return self.reserved_for(job)

    def trial(
        self, job: Job, allocate: Callable[[], JobAlloc | Unsatisfied]
    ) -> JobAlloc | Unsatisfied:
        """What ``allocate`` gives ``job`` were no room held (tried, then undone):
        whether reserved room alone stops it, or why it cannot run otherwise."""
        state = self.state
        self.hold()
        for name, slots in self.phantom.items():
            state.give_slots(state.hosts[name], slots)
        try:
            outcome = allocate()
            if isinstance(outcome, JobAlloc):
                state.release(outcome)
        finally:
            for name, slots in self.phantom.items():
                state.take_slots(state.hosts[name], slots)
        return outcome

    def reserved_for(self, job: Job) -> Unsatisfied:
        """RESERVED: the jobs whose reservations start before ``job`` would end (those
        made this session, and under compression those still standing)."""
        end = self.end_of(job)
        if self.counted and self.counted == len(self.reservations) + len(self.standing):
            # On counts alone: those met are a prefix by start (no flags to compute).
            met = bisect.bisect_left(self._starts, (end,))
            key: tuple[object, ...] = (met, self._starts_version, end < FOREVER)
            reason = self._reasons.get(key)
            if reason is None:
                ahead = sorted(jobid for _, jobid in self._starts[:met])
                reason = self._reasons[key] = _reserved(ahead, end)
            return reason
        flags = self.open_to(job)
        standing: tuple[int, ...] = ()
        if self.standing:
            standing = tuple(sorted(j for j, r in self.standing.items() if r.start_ts < end))
        key = (flags, standing)
        reason = self._reasons.get(key)
        if reason is None:
            made = zip(self.reservations, flags[1:], strict=True) if flags else ()
            ahead = sorted([r.jobid for r, open_ in made if not open_] + list(standing))
            reason = self._reasons[key] = _reserved(ahead, end)
        return reason

    def end_of(self, job: Job) -> int:
        """When ``job`` would end were it started now, by its run limit (ns;
        ``FOREVER``: no run limit), looked up once a session."""
        end = self._ends.get(job.jobid)
        if end is None:
            limit = run_limit_ns(self.state, job)
            end = self._ends[job.jobid] = FOREVER if limit is None else self.now + limit
        return end

    def close(self) -> None:
        """Give back every phantom hold, and leave the plans made for the next
        session (the session ends)."""
        memo = self.memo
        memo.plans, memo.chains, memo.names = self.plans_made, self.chains_made, self.names_made
        memo.checks = self.checks_made
        if self.held:
            state = self.state
            for name, slots in self.phantom.items():
                state.give_slots(state.hosts[name], slots)
        self.phantom.clear()
        self._phantom_slots = 0
        self.held = False
        for held in self._held:
            held.clear()


def _reserved(ahead: list[int], end: int) -> Unsatisfied:
    """RESERVED for the jobs ``ahead`` (jobids, sorted), of a job that would end at
    ``end`` (ns; ``FOREVER``: it has no run limit)."""
    jobs = f"job{'s' if len(ahead) > 1 else ''} {', '.join(map(str, ahead))}"
    why = (
        "expected to start before this job would end"
        if end < FOREVER
        else ("and this job has no run limit")
    )
    return Unsatisfied(PendingCode.RESERVED, resolvable=True, detail=f"reserved for {jobs}, {why}")


def _bound(kept: Reservation | None, policy: Policy) -> int:
    """The instant before which a fresh plan can replace ``kept`` (``_later``): the
    search looks no further (ns; ``FOREVER`` without one)."""
    if kept is None:
        return FOREVER
    return kept.start_ts + (policy.depth == 1)


def _later(planned: Reservation, kept: Reservation, policy: Policy) -> bool:
    """Whether a reservation planned afresh is worse than the one kept from the last
    round: later; or, where several jobs hold reservations (``hybrid``,
    ``conservative``), no earlier, since the others were planned around the kept
    one's hosts. With one (``easy``, ``strict``) the fresh plan's hosts are taken at
    the same start: it takes busy-now hosts first, which leaves the most free room
    to backfill (EASY's extra slots)."""
    if policy.depth > 1:
        return planned.start_ts >= kept.start_ts
    return planned.start_ts > kept.start_ts


def _plain(job: Job) -> bool:
    """Whether the job asks for slots only (no select, rusage, span, ...): then it
    fits wherever enough slots are free, which is known without allocating."""
    return is_plain(job.request)
