"""The PRIMARY leaf of allocation: plan iterator × host iterator × try (Reqs 2-4).

``allocate_primary`` is the spec's composition algorithm for one simple requirement:
walk the plans most preferred first; for each, walk the candidate hosts and add each
that can take a share until the plan is complete; the first complete plan wins and
no further plan is looked at (Req 4 AC 3).

The plans come from the request's ``span[]`` when it has one (``ptile=N``: N slots a
host, the last fewer; ``hosts=1``: all on one host; ``hosts=N``: N hosts, as even as
possible) and otherwise from the allocator: ``seqjob`` for one task (Req 9 AC 1),
``parjob`` for more (Req 4).

A candidate host is ok, has room for a share (the free-slot index answers that
without looking at a host), passes the ``select[]`` expression, and has what the
``rusage[]`` section reserves for the share. ``order[]`` sorts the candidates (by
default they come in host order); ``same[res]`` tries the candidates one value of
``res`` at a time, so all hosts of the allocation share it.

Nothing here changes any state: the caller holds a ``Placement``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from xce_schemas import HostStatus, PendingCode
from xce_schemas.events import ReserveMethod

from xce_core.alloc.free_index import FreeSlotIndex
from xce_core.alloc.host_iter import SlotHostIter
from xce_core.alloc.plan_iter import ParPlanIter, SinglePlanIter
from xce_core.plugins import AllocPlan, AllocPlanIter, HostInfo, JobInfo
from xce_core.resreq.model import EMPTY, Primary, Select
from xce_core.resreq.order import sort_hosts
from xce_core.resreq.select import compile_select
from xce_core.state import EPSILON, ClusterState

#: Compiled selects by the identity of their (shared) Select object: hashing a whole
#: expression tree on every allocation attempt would cost more than evaluating it.
_COMPILED: dict[int, tuple[Select, Callable[[Mapping[str, float | str | bool]], bool]]] = {}


def compiled(select: Select) -> Callable[[Mapping[str, float | str | bool]], bool]:
    """The compiled form of ``select`` (compiled once per distinct select object)."""
    entry = _COMPILED.get(id(select))
    if entry is None or entry[0] is not select:
        if len(_COMPILED) > 65536:
            _COMPILED.clear()
        entry = _COMPILED[id(select)] = (select, compile_select(select))
    return entry[1]


#: A reservation to make: (resource, amount, duration s or -1).
Reservation = tuple[str, float, int]


@dataclass(frozen=True, slots=True)
class Placement:
    """A successful allocation of one primary.

    Attributes:
        shares: ``(host, slots, reservations on that host)`` in the order taken.
        shared: reservations from cluster-wide pools.
    """

    shares: tuple[tuple[HostInfo, int, tuple[Reservation, ...]], ...]
    shared: tuple[Reservation, ...] = ()


@dataclass(frozen=True, slots=True)
class Unsatisfied:
    """A failed allocation (Req 4 AC 4's not-satisfied signal) with its main reason.

    ``resolvable`` tells whether freeing running jobs' resources could ever help
    (preemption, Req 6); False means no plan can fit whatever runs. ``resources``
    names the resources found short; ``detail`` says more in words.
    """

    code: PendingCode
    resolvable: bool
    resources: tuple[str, ...] = ()
    detail: str = ""


Outcome = Placement | Unsatisfied


class Allocator(Protocol):
    """A primary allocator: it proposes plans for a job; ``allocate_primary`` fits them."""

    name: ClassVar[str]

    def plans(self, tasks: int) -> AllocPlanIter:
        """A fresh plan iterator for ``tasks`` slots."""
        ...


class SeqJob:
    """``seqjob_allocator``: one task, first host in host order with a free slot."""

    name: ClassVar[str] = "seqjob"

    def plans(self, tasks: int) -> AllocPlanIter:
        """The single plan 1 host × 1 slot."""
        return SinglePlanIter()


class ParJob:
    """``parjob_allocator``: N tasks over the plans 1×N, 2×⌈N/2⌉, …, N×1 (Req 4)."""

    name: ClassVar[str] = "parjob"

    def plans(self, tasks: int) -> AllocPlanIter:
        """The combinatorial plan sequence for ``tasks`` slots."""
        return ParPlanIter(tasks)


SEQJOB = SeqJob()
PARJOB = ParJob()


def allocator_for(tasks: int) -> Allocator:
    """``seqjob`` for one task, ``parjob`` for more (the spec's routing by maxTasks)."""
    return SEQJOB if tasks == 1 else PARJOB


#: The outcomes that need no search, made once (outcomes are frozen values).
_NO_HOSTS = Unsatisfied(PendingCode.NO_HOSTS, resolvable=False)
_TOO_LARGE = Unsatisfied(PendingCode.JOB_LARGER_THAN_CLUSTER, resolvable=False)
_SHORT = Unsatisfied(PendingCode.NOT_ENOUGH_SLOTS, resolvable=True)
_NO_PLAN = Unsatisfied(PendingCode.NOT_ENOUGH_HOSTS_FOR_SPAN, resolvable=True)


def plans_for(primary: Primary, tasks: int, allocator: Allocator | None = None) -> AllocPlanIter:
    """The plan iterator of a primary: its ``span[]`` shape, else the allocator's."""
    span = primary.span
    if span is not None:
        if span.ptile is not None:
            ptile = min(span.ptile, tasks)
            return SinglePlanIter(AllocPlan(-(-tasks // ptile), ptile, tasks))
        if span.hosts == 1:
            return SinglePlanIter(AllocPlan(1, tasks, tasks))
        if span.hosts is not None and span.hosts > 1:
            return SinglePlanIter(AllocPlan(span.hosts, -(-tasks // span.hosts), tasks, True))
    return (allocator or allocator_for(tasks)).plans(tasks)


def _plan_fits_index(plan: AllocPlan, index: FreeSlotIndex) -> bool:
    """Whether enough hosts have enough free slots for ``plan`` (an upper bound)."""
    big, big_count, small, small_count = plan.shares()
    if not small_count:
        return index.count_at_least(big) >= big_count
    return (
        index.count_at_least(big) >= big_count
        and index.count_at_least(small) >= big_count + small_count
    )


#: ``fits(host, slots, first)``: can ``host`` take a share of ``slots``, as the first
#: host of the allocation or not.
Fits = Callable[[HostInfo, int, bool], bool]


def try_plan(
    hosts: Iterable[HostInfo], plan: AllocPlan, fits: Fits | None = None
) -> list[tuple[HostInfo, int]] | None:
    """Fill ``plan`` from ``hosts`` in the order given (the spec's ``try_alloc``).

    Each host that can take a big share takes one until enough have; then a host that
    can take a small share takes one until enough have (greedy is enough: a host that
    can take a big share can take a small one). ``fits`` says whether a host can take
    a share (default: it has the free slots). Returns the shares, or None when the
    hosts run out first.
    """
    big, big_needed, small, small_needed = plan.shares()
    shares: list[tuple[HostInfo, int]] = []
    for host in hosts:
        first = not shares
        if big_needed and (host.free >= big if fits is None else fits(host, big, first)):
            shares.append((host, big))
            big_needed -= 1
        elif small_needed and (host.free >= small if fits is None else fits(host, small, first)):
            shares.append((host, small))
            small_needed -= 1
        else:
            continue
        if not big_needed and not small_needed:
            return shares
    return None


class _Request:
    """One primary's requirements resolved against the cluster's resource table."""

    __slots__ = (
        "_selected",
        "host_usages",
        "primary",
        "select",
        "shared_usages",
        "state",
        "tasks",
    )

    def __init__(self, primary: Primary, tasks: int, state: ClusterState) -> None:
        self.primary = primary
        self.tasks = tasks
        self.state = state
        self.select = None if primary.select is None else compiled(primary.select)
        self.host_usages: list[tuple[str, float, int, ReserveMethod]] = []
        self.shared_usages: list[tuple[str, float, int, ReserveMethod]] = []
        # Nothing changes during one attempt: each host's select result is computed
        # once, however many plans (and the diagnosis) look at it.
        self._selected: dict[int, bool] = {}

    def resolve(self) -> Unsatisfied | None:
        """Sort the rusage into host and shared reservations; a bad one is refused."""
        for usage in self.primary.rusage:
            duration = -1 if usage.duration_s is None else usage.duration_s
            if usage.resource == "mem":
                self.host_usages.append(("mem", usage.value, duration, ReserveMethod.PER_TASK))
                continue
            resource = self.state.resources.get(usage.resource)
            if resource is None or not resource.consumable:
                what = "unknown" if resource is None else "not consumable"
                return Unsatisfied(
                    PendingCode.BAD_RESREQ,
                    resolvable=False,
                    resources=(usage.resource,),
                    detail=f"rusage[{usage.resource}]: the resource is {what}",
                )
            if resource.shared:
                method = resource.reserve_method or ReserveMethod.PER_JOB
                self.shared_usages.append((usage.resource, usage.value, duration, method))
            else:
                method = resource.reserve_method or ReserveMethod.PER_TASK
                self.host_usages.append((usage.resource, usage.value, duration, method))
        return None

    def host_reservations(self, slots: int, first: bool) -> tuple[Reservation, ...]:
        """What a share of ``slots`` reserves on its host (per-job amounts go on the
        first host of the allocation)."""
        out = []
        for resource, value, duration, method in self.host_usages:
            if method is ReserveMethod.PER_TASK:
                amount = value * slots
            elif method is ReserveMethod.PER_HOST or first:
                amount = value
            else:
                continue
            out.append((resource, amount, duration))
        return tuple(out)

    def shared_reservations(self, nhosts: int) -> tuple[Reservation, ...]:
        """What the job takes from the cluster-wide pools for a plan of ``nhosts``."""
        out = []
        for resource, value, duration, method in self.shared_usages:
            factor = {
                ReserveMethod.PER_TASK: self.tasks,
                ReserveMethod.PER_HOST: nhosts,
                ReserveMethod.PER_JOB: 1,
            }[method]
            out.append((resource, value * factor, duration))
        return tuple(out)

    def shared_short(self, nhosts: int) -> tuple[str, ...]:
        """Shared resources whose pool cannot give what a plan of ``nhosts`` needs."""
        return tuple(
            resource
            for resource, amount, _ in self.shared_reservations(nhosts)
            if (self.state.shared_available(resource) or 0.0) + EPSILON < amount
        )

    def selected(self, host: HostInfo) -> bool:
        """Whether ``host`` passes the select expression."""
        if self.select is None:
            return True
        known = self._selected.get(host.position)
        if known is None:
            known = self._selected[host.position] = self.select(
                self.state.host_values(host)  # type: ignore[arg-type]
            )
        return known

    def room(self, host: HostInfo, slots: int, first: bool = False) -> bool:
        """Whether ``host`` has the slots and the reservations of a share."""
        if host.free < slots:
            return False
        state = self.state
        for resource, amount, _ in self.host_reservations(slots, first):
            left = state.available(host, resource)  # type: ignore[arg-type]
            if left is None or left + EPSILON < amount:
                return False
        return True


def _candidates(
    request: _Request, plan: AllocPlan, state: ClusterState, check_cancel: Callable[[], None]
) -> Iterator[HostInfo]:
    """The hosts that can hold a share of ``plan`` and pass the select, lazily."""
    hosts = SlotHostIter(plan, state.host_order, state.free_index, check_cancel)
    try:
        for host in hosts:
            if request.selected(host):
                yield host
    finally:
        hosts.close()


def _groups(request: _Request, hosts: Iterator[HostInfo]) -> Iterable[Iterable[HostInfo]]:
    """The candidate hosts, sorted by ``order[]``, split by ``same[]`` values."""
    primary = request.primary
    if not primary.order and not primary.same:
        return (hosts,)
    values = request.state.host_values
    listed: list[HostInfo] = list(hosts)
    if primary.order:
        listed = sort_hosts(listed, primary.order, values)  # type: ignore[arg-type]
    if not primary.same:
        return (listed,)
    groups: dict[tuple[object, ...], list[HostInfo]] = {}
    for host in listed:
        have = values(host)  # type: ignore[arg-type]
        key = tuple(have.get(resource) for resource in primary.same)
        if None not in key:
            groups.setdefault(key, []).append(host)
    return groups.values()  # in the order of each value's best host


def allocate_primary(
    job: JobInfo,
    hosts: Sequence[HostInfo],
    index: FreeSlotIndex,
    capacity: int,
    check_cancel: Callable[[], None],
    allocator: Allocator | None = None,
    *,
    primary: Primary = EMPTY,
    tasks: int | None = None,
    state: ClusterState | None = None,
) -> Outcome:
    """Allocate one primary requirement: the composition algorithm of the spec.

    Args:
        job: the job.
        hosts: every host by position (host order).
        index: the free-slot index of ``hosts``.
        capacity: slots of every host, whatever its status.
        check_cancel: cancellation point, called before each plan and host.
        allocator: proposes the plans when the request has no ``span[]``; default
            ``seqjob`` or ``parjob`` by task count.
        primary: the requirement (default: none).
        tasks: the slots to allocate (default ``job.tasks``; a compound part's count).
        state: the cluster state, needed when ``primary`` selects or reserves.

    Returns:
        ``Placement`` when a plan fits, else ``Unsatisfied`` with the reason.

    Raises:
        SessionCancelled: the session was cancelled; nothing was changed.
    """
    tasks = job.tasks if tasks is None else tasks
    span = primary.span
    if span is not None and span.ptile is not None and span.ptile > tasks:
        return Unsatisfied(
            PendingCode.PTILE_EXCEEDS_TASKS,
            resolvable=False,
            detail=f"span[ptile={span.ptile}] for {tasks} tasks",
        )
    if span is not None and span.hosts is not None and span.hosts > tasks:
        return Unsatisfied(
            PendingCode.BAD_RESREQ,
            resolvable=False,
            detail=f"span[hosts={span.hosts}] for {tasks} tasks",
        )
    if (
        span is not None
        and span.hosts is not None
        and span.hosts > 0
        and span.ptile is not None
        and -(-tasks // span.ptile) != span.hosts
    ):
        return Unsatisfied(
            PendingCode.BAD_RESREQ,
            resolvable=False,
            detail=f"span[hosts={span.hosts}:ptile={span.ptile}] does not fit {tasks} tasks",
        )
    request = None
    if state is not None and primary != EMPTY:
        request = _Request(primary, tasks, state)
        refused = request.resolve()
        if refused is not None:  # a bad request is bad however busy the cluster is
            return refused
    if index.total_free < tasks:  # the common case on a busy cluster: decided in O(1)
        if not hosts:
            return _NO_HOSTS
        return _TOO_LARGE if tasks > capacity else _SHORT
    if request is None or state is None:
        return _plain(tasks, hosts, index, check_cancel, allocator, primary)
    plans = plans_for(primary, tasks, allocator)
    try:
        while (plan := plans.next()) is not None:
            check_cancel()
            if not _plan_fits_index(plan, index) or request.shared_short(plan.nhosts):
                continue
            candidates = _candidates(request, plan, state, check_cancel)
            for group in _groups(request, candidates):
                shares = try_plan(group, plan, request.room if request.host_usages else None)
                if shares is not None:
                    return Placement(
                        tuple(
                            (host, slots, request.host_reservations(slots, position == 0))
                            for position, (host, slots) in enumerate(shares)
                        ),
                        request.shared_reservations(plan.nhosts),
                    )
    finally:
        plans.close()
    return diagnose(request, state)


def _plain(
    tasks: int,
    hosts: Sequence[HostInfo],
    index: FreeSlotIndex,
    check_cancel: Callable[[], None],
    allocator: Allocator | None,
    primary: Primary,
) -> Outcome:
    """A request with no select, rusage, order or same: slots only (the fast path)."""
    plans = plans_for(primary, tasks, allocator)
    try:
        while (plan := plans.next()) is not None:
            check_cancel()
            if not _plan_fits_index(plan, index):
                continue
            host_iter = SlotHostIter(plan, hosts, index, check_cancel)
            try:
                shares = try_plan(host_iter, plan)
            finally:
                host_iter.close()
            if shares is not None:
                return Placement(tuple((host, slots, ()) for host, slots in shares))
    finally:
        plans.close()
    return _NO_PLAN


def diagnose(request: _Request, state: ClusterState) -> Unsatisfied:
    """Why no plan fitted: the first of these that holds.

    * a shared pool is short even for one host: NOT_ENOUGH_RESOURCE naming it;
    * no ok host passes the select: NO_HOST_SELECTED;
    * no selected host with a free slot has the reservations of one task:
      NOT_ENOUGH_RESOURCE naming the host resources short;
    * the selected hosts have fewer free slots than tasks: NOT_ENOUGH_SLOTS;
    * else the slots are there but no plan shape fits: NOT_ENOUGH_HOSTS_FOR_SPAN.
    """
    short = request.shared_short(1)
    if short:
        return Unsatisfied(PendingCode.NOT_ENOUGH_RESOURCE, resolvable=True, resources=short)
    hosts = state.host_order
    if not any(h.status is HostStatus.OK and request.selected(h) for h in hosts):
        return Unsatisfied(PendingCode.NO_HOST_SELECTED, resolvable=True)
    # The selected ok hosts with a free slot, from the index (it holds just those
    # ok hosts with a free slot), not from a walk over every host.
    free = [
        host
        for host in map(hosts.__getitem__, state.free_index.positions_at_least(1))
        if request.selected(host)
    ]
    if request.host_usages and free and not any(request.room(h, 1, True) for h in free):
        names = tuple(dict.fromkeys(resource for resource, *_ in request.host_usages))
        return Unsatisfied(PendingCode.NOT_ENOUGH_RESOURCE, resolvable=True, resources=names)
    if sum(h.free for h in free) < request.tasks:
        return _SHORT
    return _NO_PLAN
