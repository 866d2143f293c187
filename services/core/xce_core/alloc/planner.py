"""The planner: when and where a job could start, looking ahead in time.

The core knows "now": which slots are free. To reserve room for a job that does not
fit now, it must know *when* room will be free. Like Flux's planner, the time-indexed
availability comes from what is known of the future: each running job gives its
slots back at its *expected end* (start + run limit; a job past it is expected to end
now; one with no run limit never), and each reservation already made holds its
room over its window ``[start, start + run limit)``.

``earliest_start`` walks the instants at which room can appear (now, then each
expected end and each reservation's end, in order), and at each asks the real
allocator (plan and host iterators, select, rusage, span: ``allocate_job``) whether
the job fits the room free over its whole window, on a private copy of the hosts; the
first instant where it does is its start, and the hosts it got there are its
reservation. The real state is never changed.

Two placement rules make host-level reservations count as the textbook's slot
counts do (EASY's *extra* slots):

* a reservation takes, among the hosts that suit it, those busy now before those
  free now (the copy lists the busiest hosts first), so the free room left
  unreserved is what the job does not need;
* a job that ends before a reservation starts takes that reservation's room before
  unreserved room (``ReservationBook``), so the unreserved room is kept for jobs
  that do not.

The window is judged conservatively on hosts of several slots: a host's running use
at the window's start and the most any reservation holds on it within the window are
both counted, which may put a reservation later than it need be, never too early.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate
from operator import itemgetter

from sortedcontainers import SortedDict
from xce_schemas import HostStatus, JobAlloc

from xce_core.alloc.job import allocate_job
from xce_core.alloc.outcome import FOREVER, Placement, Reservation
from xce_core.alloc.records import build_records
from xce_core.resreq.model import EMPTY, Resreq
from xce_core.state import ClusterState, Host, Job

#: The ok hosts a running job gives back on ending: their names, and their
#: positions in host order (``ClusterState.host_order``).
Freed = tuple[list[str], list[int]]

#: ``room(at ns, length ns, tasks)``: whether reservations on counts leave ``tasks``
#: slots free over ``[at, at + length)`` (``backfill.ReservationBook``).
Room = Callable[[int, int, int], bool]

#: For running jobs, ``Freed`` by jobid with the allocation it was read from (valid
#: while that allocation is the job's and the hosts keep their shape).
Frees = dict[int, tuple[JobAlloc, Freed]]


class Planner:
    """One session's view of the future, on the real state itself: each
    ``earliest_start`` lets time pass there (running jobs give back at their
    expected ends, reservations hold their windows, the session's phantom holds are
    lifted), allocates, and puts everything back as it was, so no copy of the
    cluster is ever made.

    Args:
        state: the cluster state (changed only inside ``earliest_start``, and back).
        now: the session's time, ns.
        ends: every running job with its expected end (ns; ``FOREVER`` for none),
            sorted by ``(end, jobid)`` (``ClusterState.expected_ends``); the planner
            keeps this list and adds the jobs started in the session to it.
        fit: the reservations known to fit as they are (their hosts free by their
            start, none held by another at once), by id: the caller's, and each one
            planned here is added to it.
        frees: the caller's memo of the hosts running jobs give back on ending
            (``backfill.PlanMemo.frees``: kept from session to session), else one of
            this planner's own.
    """

    def __init__(
        self,
        state: ClusterState,
        now: int,
        ends: list[tuple[int, Job]],
        fit: dict[int, Reservation] | None = None,
        frees: Frees | None = None,
    ) -> None:
        self.state = state
        self.now = now
        self._ends = ends
        self._next_instid = 1  # the plan's own records' ids: unique, never seen
        # Plain requests on one-slot hosts are planned by counting (``_Counted``).
        self._counted = None if state.multi_slot_hosts else _Counted(state, frees)
        if self._counted is not None:
            self._counted.start(now, self._ends, {} if fit is None else fit)

    def next_end(self) -> int:
        """The first running job's expected end after now (ns; ``FOREVER`` when
        none): with the reservations' ends, when a search could see other room."""
        index = bisect.bisect_right(self._ends, self.now, key=_end_of)
        return self._ends[index][0] if index < len(self._ends) else FOREVER

    def started(self, job: Job, end: int) -> None:
        """A job started this session; it runs until ``end`` (ns)."""
        bisect.insort(self._ends, (end, job), key=lambda pair: (pair[0], pair[1].jobid))
        if self._counted is not None:
            self._counted.started(job, end)

    def earliest_start(
        self,
        job: Job,
        request: Resreq,
        run_ns: int | None,
        reservations: Sequence[Reservation],
        phantom: dict[str, int],
        check_cancel: Callable[[], None],
        before: int = FOREVER,
        room: Room | None = None,
    ) -> Reservation | None:
        """The earliest start of ``job`` from now on, and the hosts it would take.

        Args:
            job: the job to place; ``request`` its parsed resource requirement.
            run_ns: its run limit, ns (None: not known; its window never ends).
            reservations: the reservations made before it (their windows are taken).
            phantom: the free slots taken on the state now for those reservations,
                by host (lifted during the search: their windows stand for them).
            check_cancel: the session's cancellation point.
            before: only a start before this instant is looked for (ns).
            room: ``room(at, length, tasks)``: whether reservations on counts
                (``backfill.profile``) leave ``tasks`` slots over ``[at, at +
                length)``; None: there are none. A start must have that room too.

        Returns:
            Its reservation, or None when it fits at no instant in view before
            ``before`` (it can never run, or only once jobs with no run limit end).

        Raises:
            SessionCancelled: the session was cancelled; the state is as it was.
        """
        state, ends, now = self.state, self._ends, self.now
        if self._counted is not None and request == EMPTY:
            return self._counted.earliest_start(
                job, run_ns, reservations, phantom, check_cancel, before, room
            )
        length = FOREVER if run_ns is None else run_ns
        times = _instants(now, ends, reservations, before)
        phantom = dict(phantom)
        for name, slots in phantom.items():
            state.give_slots(state.hosts[name], slots)
        # Rule 1: a reservation takes hosts busy now before hosts free now.
        state.free_index.prefer(tuple(h.position for h in state.host_order if h.used))
        window = _Window(state, reservations, length)
        released = 0
        try:
            for at in times:
                check_cancel()
                freed: list[str] = []  # the hosts whose use the ended jobs change
                while released < len(ends) and ends[released][0] <= at:
                    ended = ends[released][1]
                    assert ended.alloc is not None
                    state.release(ended.alloc, skip=ended.released)
                    freed.extend(record.host for record in ended.alloc.hosts)
                    released += 1
                window.move(at, freed)
                if window.free_slots() < job.tasks:
                    continue  # too few slots for any allocation: the state need not move
                if room is not None and not room(at, length, job.tasks):
                    continue  # it would delay a reservation on counts
                window.apply()
                alloc = allocate_job(job, request, state, check_cancel, self._build)
                if isinstance(alloc, JobAlloc):
                    state.release(alloc)
                    hosts = tuple(alloc.slots_by_host().items())
                    end = None if run_ns is None else at + run_ns
                    return Reservation(job.jobid, at, end, hosts, running=released)
            return None
        finally:  # everything back as it was
            state.free_index.prefer(())
            window.clear()
            for _, ended in ends[:released]:
                assert ended.alloc is not None
                state.hold(ended.alloc, skip=ended.released)
            for name, slots in phantom.items():
                state.take_slots(state.hosts[name], slots)

    def _build(self, placement: Placement) -> JobAlloc:
        alloc, self._next_instid = build_records(0, placement, 0, self._next_instid)
        return alloc


class _Window:
    """The room reservations hold over a search's window, on the state (no more
    than a host has free: a host still busy then is not free for the job either).

    A search tries its instants in order, each with a window of the same length
    (the job's run limit), so both of a window's bounds only move forward: a
    reservation overlaps the window from the first instant whose window reaches
    its start until its end is passed, and never again. It therefore joins the
    held room once and leaves it once (``move``), and only the hosts whose wanted
    room or use changed are held again, not every host at every instant.

    Args:
        state: the cluster state whose slots are taken and given back.
        reservations: the reservations whose windows the search must respect.
        length: the job's run limit, ns (``FOREVER``: none).
    """

    def __init__(self, state: ClusterState, reservations: Sequence[Reservation], length: int):
        self.state = state
        self._reservations = reservations
        self._length = length
        # Reservation indices by start (to join) and by end (to leave); stable sorts.
        self._by_start = sorted(range(len(reservations)), key=lambda i: reservations[i].start_ts)
        self._by_until = sorted(range(len(reservations)), key=lambda i: reservations[i].until)
        self._joined = 0  # how many of ``_by_start`` were looked at
        self._left = 0  # how many of ``_by_until`` were looked at
        self._in: set[int] = set()  # the indices overlapping the window now
        self._wanted: dict[str, int] = {}  # host → slots they hold there
        self._held: dict[str, int] = {}  # host → slots taken on the state for them
        # Hosts to hold again at the next ``apply``, with the change it makes to
        # their usable free slots (and ``_change``, its sum).
        self._pending: dict[str, int] = {}
        self._change = 0

    def move(self, at: int, changed: Iterable[str]) -> None:
        """Let the window be ``[at, at + length)`` (``at``, ns, no earlier than the
        last move's): the reservations that overlap it (``Reservation.overlaps``)
        are the ones to hold; ``changed`` names the hosts whose use changed since
        (jobs ended). Nothing is held on the state until ``apply``."""
        reservations, wanted, inside = self._reservations, self._wanted, self._in
        dirty = set(changed)
        end = at + self._length
        by_start, by_until = self._by_start, self._by_until
        while self._joined < len(by_start):
            index = by_start[self._joined]
            reservation = reservations[index]
            if reservation.start_ts >= end:
                break
            self._joined += 1
            if reservation.until > at:  # (else it ended before this window)
                inside.add(index)
                for name, slots in reservation.hosts:
                    wanted[name] = wanted.get(name, 0) + slots
                    dirty.add(name)
        while self._left < len(by_until):
            index = by_until[self._left]
            reservation = reservations[index]
            if reservation.until > at:
                break
            self._left += 1
            if index in inside:
                inside.discard(index)
                for name, slots in reservation.hosts:
                    wanted[name] -= slots
                    if not wanted[name]:
                        del wanted[name]
                    dirty.add(name)
        hosts, pending = self.state.hosts, self._pending
        for name in dirty:
            host = hosts[name]
            # (only hosts that take jobs count in ``total_free``)
            ok = host.status is HostStatus.OK
            change = self._held.get(name, 0) - self._take(host) if ok else 0
            self._change += change - pending.get(name, 0)
            pending[name] = change

    def free_slots(self) -> int:
        """The usable free slots of the whole cluster once ``apply`` holds the
        window's room (no allocation can get more: each task takes a slot)."""
        return self.state.free_index.total_free + self._change

    def apply(self) -> None:
        """Hold on the state the room of the reservations the last ``move`` found;
        only the hosts whose wanted room or use changed since are touched."""
        state, held = self.state, self._held
        for name in sorted(self._pending):
            host = state.hosts[name]
            had, take = held.get(name, 0), self._take(host)
            if take > had:
                state.take_slots(host, take - had)
            elif take < had:
                state.give_slots(host, had - take)
            if take:
                held[name] = take
            else:
                held.pop(name, None)
        self._pending.clear()
        self._change = 0

    def clear(self) -> None:
        """Give back all the room held (the search ends)."""
        self._wanted.clear()
        self._in.clear()
        self._pending = dict.fromkeys(self._held, 0)
        self.apply()

    def _take(self, host: Host) -> int:
        """What the window holds on ``host``: the reservations' slots there, as far
        as the slots not used by jobs allow."""
        had = self._held.get(host.name, 0)
        return min(self._wanted.get(host.name, 0), max(0, host.slots - (host.used - had)))


class _Counted:
    """``earliest_start`` for a plain request (slots only) on a cluster of one-slot
    hosts, by counting instead of allocating: there a job fits when enough hosts are
    free, and the allocator takes them in the order the generic search offers them
    (busy-now hosts first, then free-now hosts, each in host order), so the same
    reservation comes out without touching the state (tests/core/test_planner.py
    checks both against each other). This is the textbook's case and the common one
    in trace simulation, where the generic search would release and re-hold every
    running job at every search.

    The instants a search tries are pruned by a *count profile* kept for the session
    (Flux's planner, in counts): how many hosts are free and held by no reservation,
    from each instant on. A host usable over a window is free and unheld at every
    instant of it, so an instant whose window meets fewer such hosts than the job's
    tasks cannot be its start, and only the instants the profile leaves are tried
    host by host. The profile counts a reservation's hosts as held over its window,
    which is exact while every reservation's hosts are free by its start and no two
    reservations hold a host at once: true of the reservations made here, and
    checked of the others (a kept or owed one); one that fails the check turns the
    pruning off for the rest of the session.
    """

    def __init__(self, state: ClusterState, frees: Frees | None = None) -> None:
        self.state = state
        self.now = 0
        self._ends: list[tuple[int, Job]] = []
        # jobid → (its allocation, the ok hosts it frees on ending)
        self._frees: Frees = {} if frees is None else frees
        # id of a reservation → ``_shape``
        self._shapes: dict[int, tuple[int, int, frozenset[str]]] = {}
        # The profile: instant (ns) → (change in the hosts free and unheld then,
        # whether room can appear then: an expected end or a reservation's end).
        self._steps: SortedDict | None = None  # made by ``_build``
        self._cumulative: tuple[list[int], list[int], list[bool]] | None = None
        self._folded: list[Reservation] = []  # the reservations the profile counts
        self._fit: dict[int, Reservation] = {}  # known to fit as they are (``Planner``)
        self._shape_list: list[tuple[int, int, frozenset[str]]] = []  # of ``_folded``
        self._windows: dict[str, list[tuple[int, int]]] = {}  # host → reservations' windows
        self._free_from: dict[str, int] = {}  # busy host → its running job's expected end
        self._exact = True  # whether the profile may prune
        self._built = False  # whether the profile is made (``_build``)

    def start(self, now: int, ends: list[tuple[int, Job]], fit: dict[int, Reservation]) -> None:
        """Begin the session at ``now`` (ns) with the running jobs' expected ends
        (``Planner._ends``, kept sorted there) and the reservations known to fit."""
        self.now, self._ends, self._fit = now, ends, fit

    def _build(self) -> None:
        """Make the profile (when the first search behind ``_PRUNE_FROM``
        reservations needs it): now, and the running jobs' expected ends."""
        self._built = True
        # What ``started`` does for each running job, with no reservation counted
        # yet (none can be run into): summed in a plain dict, sorted once.
        now, free_from = self.now, self._free_from
        steps: dict[int, tuple[int, bool]] = {now: (0, True)}
        for end, job in self._ends:
            freed = self._freed(job)[0]
            for name in freed:
                free_from[name] = end
            if end < FOREVER and freed:
                at = max(end, now)
                old = steps.get(at)
                change, appears = len(freed), end > now
                steps[at] = (
                    (change, appears) if old is None else (old[0] + change, old[1] or appears)
                )
        self._steps = SortedDict(steps)
        self._cumulative = None

    def started(self, job: Job, end: int) -> None:
        """A job runs until ``end`` (ns): its hosts are free from then on. One that
        runs into a counted reservation's window on its hosts (a job of higher
        priority than a resume it took the room of, a preemptor its owed room)
        turns the pruning off."""
        if not self._built:
            return  # ``_build`` finds it among the ends
        freed = self._freed(job)[0]
        windows = self._windows
        for name in freed:
            self._free_from[name] = end
            if any(first < end for first, _ in windows.get(name, ())):
                self._exact = False
        if end < FOREVER and freed:
            self._step(max(end, self.now), len(freed), end > self.now)

    def _step(self, at: int, change: int, appears: bool) -> None:
        steps = self._steps
        assert steps is not None, "the profile is made first (_build)"
        old = steps.get(at)
        steps[at] = (change, appears) if old is None else (old[0] + change, old[1] or appears)
        self._cumulative = None

    def _freed(self, job: Job) -> Freed:
        """The ok hosts a running job frees on ending: their names and their
        positions (memo ``_frees``)."""
        alloc = job.alloc
        known = self._frees.get(job.jobid)
        if known is not None and known[0] is alloc:
            return known[1]
        assert alloc is not None
        hosts = self.state.hosts
        # Every host record holds slots (``build_records``), records that are
        # never released early (only ``rusage`` durations end before the job).
        ok = [host for h in alloc.hosts if (host := hosts[h.host]).status is HostStatus.OK]
        freed = ([host.name for host in ok], [host.position for host in ok])
        self._frees[job.jobid] = (alloc, freed)
        return freed

    def _fold(self, reservations: Sequence[Reservation], phantom: dict[str, int]) -> None:
        """Count in the profile the reservations it does not count yet (the book
        only ever appends to its list in a session)."""
        folded = self._folded
        if len(reservations) < len(folded) or (
            folded and reservations[len(folded) - 1] is not folded[-1]
        ):
            self._exact = False  # not the list the profile was built on
            return
        now, fit = self.now, self._fit
        windows = self._windows
        for reservation in reservations[len(folded) :]:
            folded.append(reservation)
            start, until = max(reservation.start_ts, now), reservation.until
            shape = self._shape(reservation)
            names = shape[2]
            self._shape_list.append(shape)
            if fit.get(id(reservation)) is not reservation and not self._holds_free(
                start, until, names, phantom
            ):
                self._exact = False
            window = (start, until)
            for name in names:
                known = windows.get(name)
                if known is None:
                    windows[name] = [window]
                else:
                    known.append(window)
            self._step(start, -len(names), False)
            if until < FOREVER:
                self._step(until, len(names), until > now)

    def _holds_free(
        self, start: int, until: int, names: Iterable[str], phantom: dict[str, int]
    ) -> bool:
        """Whether hosts ``names`` are each free by ``start`` and held by no counted
        reservation within ``[start, until)`` (what the profile's count assumes)."""
        hosts = self.state.hosts
        for name in names:
            host = hosts.get(name)
            if host is None or host.status is not HostStatus.OK:
                return False
            free_now = host.used < host.slots or name in phantom
            if not free_now and self._free_from.get(name, FOREVER) > start:
                return False
            for first, last in self._windows.get(name, ()):
                if first < until and last > start:
                    return False
        return True

    def _profile(self) -> tuple[list[int], list[int], list[bool]]:
        """The profile's instants, the change in free unheld hosts from now to each
        (cumulative), and whether room can appear at each."""
        if self._cumulative is None:
            steps = self._steps
            assert steps is not None, "the profile is made first (_build)"
            keys = list(steps)  # (a sorted dict's values view iterates in Python)
            changes = list(map(steps.__getitem__, keys))
            self._cumulative = (
                keys,
                list(accumulate(map(itemgetter(0), changes))),
                list(map(itemgetter(1), changes)),
            )
        return self._cumulative

    def earliest_start(
        self,
        job: Job,
        run_ns: int | None,
        reservations: Sequence[Reservation],
        phantom: dict[str, int],
        check_cancel: Callable[[], None],
        before: int,
        room: Room | None = None,
    ) -> Reservation | None:
        """As ``Planner.earliest_start`` (the same arguments and result)."""
        state, tasks, now = self.state, job.tasks, self.now
        length = FOREVER if run_ns is None else run_ns
        if not reservations and not phantom and room is None:
            return self._first_fit(job, run_ns, check_cancel, before)
        count = state.free_index.total_free + sum(phantom.values())  # free now
        if len(reservations) >= _PRUNE_FROM:
            if not self._built:
                self._build()
            self._fold(reservations, phantom)
        candidates: Iterable[int]
        if self._built and self._exact:
            candidates, shapes = self._count_fits(tasks, length, count, before), self._shape_list
        else:
            candidates = _instants(now, self._ends, reservations, before)
            shapes = self._shapes_of(reservations)
        ends = self._ends
        freed: list[str] = []  # busy-now hosts free by the instant, in the order they end
        released = 0
        for at in candidates:  # in order
            check_cancel()
            while released < len(ends) and ends[released][0] <= at:
                freed.extend(self._freed(ends[released][1])[0])
                released += 1
            if len(freed) + count < tasks:
                continue
            held = self._held(at, at + length, shapes, set(freed), phantom)
            if len(freed) + count - len(held) < tasks:
                continue
            if room is not None and not room(at, length, tasks):
                continue
            hosts = self._take(tasks, freed, held, phantom)
            end = None if run_ns is None else at + run_ns
            reservation = Reservation(job.jobid, at, end, hosts, running=released)
            self._fit[id(reservation)] = reservation
            return reservation
        return None

    def _first_fit(
        self,
        job: Job,
        run_ns: int | None,
        check_cancel: Callable[[], None],
        before: int,
    ) -> Reservation | None:
        """``earliest_start`` with no reservation made before it (the first blocked
        job: EASY's shadow time): the first instant (now, then each expected end
        before ``before``) by which the hosts free now and those the ended jobs
        free are ``job.tasks``; it takes the freed ones first, in host order, then
        free-now ones. Nothing is held over any window, so the instants are those
        of the ends themselves, walked once, and no host is looked at twice."""
        tasks, now, ends = job.tasks, self.now, self._ends
        free_index = self.state.free_index
        count = free_index.total_free
        bound = min(before, FOREVER)
        if now >= bound:
            return None
        last = len(ends)
        busy: list[int] = []  # positions of busy-now hosts free by ``at``
        released = 0
        at = now
        while True:
            check_cancel()
            while released < last and ends[released][0] <= at:
                busy += self._freed(ends[released][1])[1]
                released += 1
            if len(busy) + count >= tasks:
                break
            if released == last or (at := ends[released][0]) >= bound:
                return None
        order = self.state.host_order
        busy.sort()
        hosts = [(order[position].name, 1) for position in busy[:tasks]]
        if len(hosts) < tasks:
            for position in free_index.positions_at_least(1):
                hosts.append((order[position].name, 1))
                if len(hosts) == tasks:
                    break
        end = None if run_ns is None else at + run_ns
        reservation = Reservation(job.jobid, at, end, tuple(hosts), running=released)
        self._fit[id(reservation)] = reservation
        return reservation

    def _count_fits(self, tasks: int, length: int, count: int, before: int) -> Iterator[int]:
        """In order, the instants before ``before`` at which room can appear and
        whose window ``[at, at + length)`` the profile leaves ``tasks`` hosts free
        and unheld throughout (``count``: hosts free now)."""
        keys, cumulative, appears = self._profile()
        need = tasks - count  # the cumulative change the profile must stay at or above
        n = bisect.bisect_left(keys, before)  # (later changes still bound a window)
        last = len(keys)
        index = 0
        while index < n:
            while index < n and not (appears[index] and cumulative[index] >= need):
                index += 1
            if index == n:
                return
            at = keys[index]
            end = at + length
            after = index + 1
            while after < last and keys[after] < end and cumulative[after] >= need:
                after += 1
            if after < last and keys[after] < end:
                # Too few hosts at keys[after], within the window of every instant
                # up to it: the next try is past it.
                index = after + 1
                continue
            yield at
            index += 1

    def _shapes_of(
        self, reservations: Sequence[Reservation]
    ) -> list[tuple[int, int, frozenset[str]]]:
        """``_shape`` of each reservation."""
        return [self._shape(reservation) for reservation in reservations]

    def _shape(self, reservation: Reservation) -> tuple[int, int, frozenset[str]]:
        """``(start ns, until ns, hosts)`` of a reservation, for ``_held`` (kept by id:
        the book keeps its reservations alive for the session, so an id stays
        theirs)."""
        shape = self._shapes.get(id(reservation))
        if shape is None:
            names = frozenset(name for name, _ in reservation.hosts)
            shape = self._shapes[id(reservation)] = (reservation.start_ts, reservation.until, names)
        return shape

    def _held(
        self,
        start: int,
        end: int,
        shapes: list[tuple[int, int, frozenset[str]]],
        freed: set[str],
        phantom: dict[str, int],
    ) -> set[str]:
        """The hosts free over ``[start, end)`` that earlier reservations (their
        ``_shapes_of``) hold then."""
        named: set[str] = set()
        for first, until, names in shapes:
            if first < end and until > start:
                named |= names
        hosts = self.state.hosts
        return {
            name for name in named if name in freed or name in phantom or hosts[name].usable_free
        }

    def _take(
        self, tasks: int, freed: list[str], held: set[str], phantom: dict[str, int]
    ) -> tuple[tuple[str, int], ...]:
        """The first ``tasks`` hosts not held: busy now first, then free now, each in
        host order."""
        state = self.state
        hosts, order = state.hosts, state.host_order
        busy = sorted([hosts[name].position for name in freed if name not in held])
        taken = [(order[position].name, 1) for position in busy[:tasks]]
        if len(taken) < tasks:
            free_now = heapq.merge(
                state.free_index.positions_at_least(1),
                sorted(state.hosts[name].position for name in phantom),
            )
            for position in free_now:
                name = order[position].name
                if name not in held:
                    taken.append((name, 1))
                    if len(taken) == tasks:
                        break
        return tuple(taken)


def _end_of(pair: tuple[int, Job]) -> int:
    return pair[0]


#: Reservations behind which a search is pruned by the count profile: behind
#: fewer (``easy``, ``strict``), trying every instant costs less than the profile.
_PRUNE_FROM = 2


def _instants(
    now: int, ends: list[tuple[int, Job]], reservations: Sequence[Reservation], before: int
) -> list[int]:
    """The instants before ``before`` at which room can appear, in order: now,
    then each running job's expected end and each reservation's end."""
    bound = min(before, FOREVER)
    times = {end for end, _ in ends if now < end < bound}
    times |= {r.until for r in reservations if now < r.until < bound}
    if now < bound:
        times.add(now)
    return sorted(times)
