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

from collections.abc import Callable, Iterable, Sequence

from xce_schemas import SLOTS, HostStatus, JobAlloc

from xce_core.alloc.job import allocate_job
from xce_core.alloc.outcome import FOREVER, Placement, Reservation
from xce_core.alloc.records import build_records
from xce_core.resreq.model import Resreq
from xce_core.state import ClusterState, Host, Job


def earliest_start(
    state: ClusterState,
    job: Job,
    request: Resreq,
    now: int,
    run_ns: int | None,
    ends: Sequence[tuple[int, Job]],
    reservations: Iterable[Reservation],
    phantom: dict[str, int],
    check_cancel: Callable[[], None],
) -> Reservation | None:
    """The earliest start of ``job`` from ``now`` on, and the hosts it would take.

    Args:
        state: the real cluster state (read only).
        job: the job to place; ``request`` its parsed resource requirement.
        now: the session's time, ns.
        run_ns: its run limit, ns (None: not known; its window never ends).
        ends: every running job with its expected end (ns; ``FOREVER`` for none),
            sorted by end.
        reservations: the reservations made before it (their windows are taken).
        phantom: free slots the session holds for reservations, by host (they are
            not running jobs': the copy shows them free).
        check_cancel: the session's cancellation point.

    Returns:
        Its reservation, or None when it fits at no instant in view (it can never
        run, or only once jobs with no run limit end).

    Raises:
        SessionCancelled: the session was cancelled; nothing was changed.
    """
    length = FOREVER if run_ns is None else run_ns
    standing = list(reservations)
    times = sorted(
        {now}
        | {end for end, _ in ends if now < end < FOREVER}
        | {r.until for r in standing if now < r.until < FOREVER}
    )
    copy = _Copy(state, phantom)
    released = 0
    for at in times:
        check_cancel()
        while released < len(ends) and ends[released][0] <= at:
            copy.give_back(ends[released][1])
            released += 1
        window_end = at + length
        copy.reserve([r for r in standing if r.overlaps(at, window_end)])
        alloc = allocate_job(job, request, copy.state, check_cancel, copy.build)
        if isinstance(alloc, JobAlloc):
            copy.state.release(alloc)
            hosts = tuple(
                (host.host, int(sum(item.value for item in host.allocs if item.name == SLOTS)))
                for host in alloc.hosts
            )
            end = None if run_ns is None else at + run_ns
            return Reservation(job.jobid, at, end, hosts, running=released)
    return None


class _Copy:
    """A private copy of the hosts: the busiest now first (a reservation takes busy
    hosts before free ones), with running use as it is now (less the session's
    phantom holds) and the room of reservations held on top."""

    def __init__(self, state: ClusterState, phantom: dict[str, int]) -> None:
        copy = self.state = ClusterState(
            config=state.config,
            resources=state.resources,
            resvals=state.resvals,
            shared_in_use=dict(state.shared_in_use),
            capacity=state.capacity,
        )
        order = sorted(state.host_order, key=lambda host: (-_busy(host, phantom), host.position))
        for host in order:
            twin = copy.add_host(
                host.name, host.slots, host.status, host.type, host.model, host.max_mem
            )
            twin.reserved = dict(host.reserved)
            copy.take_slots(twin, host.used - phantom.get(host.name, 0))
        copy.capacity = state.capacity  # a job larger than the cluster stays so
        self._held: dict[str, int] = {}  # slots reservations hold, by host
        self._instids = iter(range(1, 1 << 62))

    def give_back(self, job: Job) -> None:
        """A running job has ended by now: what it holds is free."""
        assert job.alloc is not None
        self.state.release(job.alloc, skip=job.released)

    def reserve(self, reservations: Sequence[Reservation]) -> None:
        """Hold the room of exactly ``reservations`` (no more than a host has free:
        a host still busy then is not free for the job either way)."""
        wanted: dict[str, int] = {}
        for reservation in reservations:
            for name, slots in reservation.hosts:
                wanted[name] = wanted.get(name, 0) + slots
        state = self.state
        for name in sorted(set(self._held) | set(wanted)):
            host = state.hosts[name]
            host.used -= self._held.pop(name, 0)
            take = min(wanted.get(name, 0), max(0, host.slots - host.used))
            host.used += take
            if take:
                self._held[name] = take
            state.take_slots(host, 0)  # re-index the host's free slots

    def build(self, placement: Placement) -> JobAlloc:
        return build_records(0, placement, 0, self._instids.__next__)


def _busy(host: Host, phantom: dict[str, int]) -> int:
    """Slots running jobs use on ``host`` now (the phantom holds are not theirs)."""
    if host.status is not HostStatus.OK:
        return 0
    return host.used - phantom.get(host.name, 0)
