"""The PRIMARY leaf of allocation: plan iterator × host iterator × try (Reqs 2-4).

``allocate_primary`` is the spec's composition algorithm for one simple requirement:
walk the plans most preferred first; for each, walk the candidate hosts and add each
that can take a share until the plan is complete; the first complete plan wins and
no further plan is looked at (Req 4 AC 3).

The plans come from the request's ``span[]`` when it has one (``ptile=N``: N slots a
host, the last fewer; ``hosts=1``: all on one host; ``hosts=N``: N hosts, as even as
possible), a shape kept exactly, and otherwise from the allocator: ``seqjob`` for one
task (Req 9 AC 1), ``parjob`` for more (Req 4): its plans 1×N, 2×⌈N/2⌉, …, N×1, then
the packed plan, which takes the free slots where they are (LSF without ``span[]``).
So a job without ``span[]`` is placed whenever the hosts it can use have free slots
(and reservations) for all its tasks.

A candidate host is ok, has room for a share (the free-slot index answers that
without looking at a host), passes the ``select[]`` expression, and has what the
``rusage[]`` section reserves for the share. ``order[]`` sorts the candidates (by
default they come in host order); ``same[res]`` tries the candidates one value of
``res`` at a time, so all hosts of the allocation share it.

When no plan fits, ``diagnose`` says what blocks the job, the most fundamental
first: what no load can change (a select no host passes, more tasks than the hosts
it can use could ever hold) before what running jobs hold. The quick "fewer free
slots than tasks" test only skips the plans; it never decides the reason.

Nothing here changes any state: the caller holds a ``Placement``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import ClassVar, Protocol

from xce_schemas import HostStatus, PendingCode
from xce_schemas.events import ReserveMethod

from xce_core.alloc.free_index import FreeSlotIndex
from xce_core.alloc.host_iter import SlotHostIter
from xce_core.alloc.outcome import Outcome, Placement, RusageHold, Unsatisfied
from xce_core.alloc.plan_iter import ParPlanIter, SinglePlanIter
from xce_core.plugins import AllocPlan, AllocPlanIter, HostInfo, JobInfo
from xce_core.resreq.model import EMPTY, Binary, Defined, Name, Node, Primary, Select, Unary
from xce_core.resreq.order import sort_hosts
from xce_core.resreq.select import compile_select
from xce_core.state import EPSILON, ClusterState, Host

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


#: What no load changes, known of a request: ``_never``'s verdict by (primary
#: identity, tasks), with the primary (so a recycled identity never matches). The
#: owner clears it when ``ClusterState.hosts_version`` moves; a request whose select
#: reads load values (``slots``, ``mem``, a consumable) is never kept in it.
NeverMemo = dict[tuple[int, int], tuple[Primary, "Unsatisfied | None"]]

#: Names a select reads whose values move with load: the built-ins ``slots`` (free)
#: and ``mem`` (left); any consumable resource is one too (value less reserved).
_LOAD_NAMES = frozenset({"slots", "mem"})


class Allocator(Protocol):
    """A primary allocator: it proposes plans for a job; ``allocate_primary`` fits them."""

    name: ClassVar[str]

    def plans(self, tasks: int) -> AllocPlanIter:
        """A fresh plan iterator for ``tasks`` slots."""
        ...


class SeqJob:
    """``seqjob_allocator``: one task, first host in host order with a free slot."""

    name: ClassVar[str] = "seqjob"

    def plans(self, tasks: int, largest_share: int | None = None) -> AllocPlanIter:
        """The single plan 1 host × 1 slot (``largest_share`` changes nothing)."""
        return SinglePlanIter()


class ParJob:
    """``parjob_allocator``: N tasks over the plans 1×N, 2×⌈N/2⌉, …, N×1 (Req 4)."""

    name: ClassVar[str] = "parjob"

    def plans(self, tasks: int, largest_share: int | None = None) -> AllocPlanIter:
        """The combinatorial plan sequence for ``tasks`` slots, less the plans of
        shares over ``largest_share`` (``ParPlanIter``)."""
        return ParPlanIter(tasks, largest_share)


SEQJOB = SeqJob()
PARJOB = ParJob()


def allocator_for(tasks: int) -> SeqJob | ParJob:
    """``seqjob`` for one task, ``parjob`` for more (the spec's routing by maxTasks)."""
    return SEQJOB if tasks == 1 else PARJOB


#: The outcomes that need no search, made once (outcomes are frozen values).
_NO_HOSTS = Unsatisfied(PendingCode.NO_HOSTS, resolvable=False)
_TOO_LARGE = Unsatisfied(PendingCode.JOB_LARGER_THAN_CLUSTER, resolvable=False)
#: Fewer free slots than tasks: the outcome of a plain job (no select, rusage,
#: span, order or same) exactly while that holds, which the session's incremental
#: rounds rest on (``Session._park``).
SHORT = Unsatisfied(PendingCode.NOT_ENOUGH_SLOTS, resolvable=True)
_NO_PLAN = Unsatisfied(PendingCode.NOT_ENOUGH_HOSTS_FOR_SPAN, resolvable=True)


def span_plan(primary: Primary, tasks: int) -> AllocPlan | None:
    """The one shape ``primary``'s ``span[]`` allows for ``tasks`` slots, or None
    when it has no ``span[]`` (or one that sets no shape, ``hosts=-1``)."""
    span = primary.span
    if span is None:
        return None
    if span.ptile is not None:
        ptile = min(span.ptile, tasks)
        return AllocPlan(-(-tasks // ptile), ptile, tasks)
    if span.hosts == 1:
        return AllocPlan(1, tasks, tasks)
    if span.hosts is not None and span.hosts > 1:
        return AllocPlan(span.hosts, -(-tasks // span.hosts), tasks, True)
    return None


def plans_for(
    primary: Primary,
    tasks: int,
    allocator: Allocator | None = None,
    largest_share: int | None = None,
) -> AllocPlanIter:
    """The plan iterator of a primary: its ``span[]`` shape, else the allocator's.
    The built-in allocators make no plan of shares over ``largest_share`` (the most
    free slots a host has): such a plan cannot fit (``_plan_fits_index`` refuses
    it), and making and refusing them was most of a large job's placement."""
    shape = span_plan(primary, tasks)
    if shape is not None:
        return SinglePlanIter(shape)
    if allocator is None:
        return allocator_for(tasks).plans(tasks, largest_share)
    return allocator.plans(tasks)


def _plan_fits_index(plan: AllocPlan, index: FreeSlotIndex) -> bool:
    """Whether enough hosts have enough free slots for ``plan`` (an upper bound)."""
    if plan.packed:
        return index.total_free >= plan.tasks
    big, big_count, small, small_count = plan.shares()
    if not small_count:
        return index.count_at_least(big) >= big_count
    return (
        index.count_at_least(big) >= big_count
        and index.count_at_least(small) >= big_count + small_count
    )


#: ``most(host, slots, first)``: the most slots, at most ``slots``, that ``host`` can
#: take as one share, as the first host of the allocation or not.
Most = Callable[[HostInfo, int, bool], int]


def try_plan(
    hosts: Iterable[HostInfo], plan: AllocPlan, most: Most | None = None
) -> list[tuple[HostInfo, int]] | None:
    """Fill ``plan`` from ``hosts`` in the order given (the spec's ``try_alloc``).

    Each host that can take a big share takes one until enough have; then a host that
    can take a small share takes one until enough have (greedy is enough: a host that
    can take a big share can take a small one). A packed plan instead has each host
    in turn take what it can, at most ``slots_per_host``, until every task is placed.
    ``most`` says how much of a share a host can take (default: its free slots).
    Returns the shares, or None when the hosts run out first.
    """
    shares: list[tuple[HostInfo, int]] = []
    if plan.packed:
        left = plan.tasks
        for host in hosts:
            want = min(left, plan.slots_per_host)
            take = min(host.free, want) if most is None else most(host, want, not shares)
            if take > 0:
                shares.append((host, take))
                left -= take
                if not left:
                    return shares
        return None
    big, big_needed, small, small_needed = plan.shares()
    for host in hosts:
        first = not shares
        if big_needed and (host.free >= big if most is None else most(host, big, first) == big):
            shares.append((host, big))
            big_needed -= 1
        elif small_needed and (
            host.free >= small if most is None else most(host, small, first) == small
        ):
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

    def host_reservations(self, slots: int, first: bool) -> tuple[RusageHold, ...]:
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

    def shared_reservations(self, nhosts: int) -> tuple[RusageHold, ...]:
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

    def shared_short(self, nhosts: int, idle: bool = False) -> tuple[str, ...]:
        """Shared resources whose pool cannot give what a plan of ``nhosts`` needs:
        now, or (``idle``) even with nothing of it in use."""
        state = self.state
        return tuple(
            resource
            for resource, amount, _ in self.shared_reservations(nhosts)
            if (state.shared_available(resource) or 0.0)
            + (state.shared_in_use.get(resource, 0.0) if idle else 0.0)
            + EPSILON
            < amount
        )

    @property
    def shared_per_host(self) -> bool:
        """Whether a shared pool is reserved per host (the more hosts, the more)."""
        return any(method is ReserveMethod.PER_HOST for *_, method in self.shared_usages)

    def usage_names(self) -> tuple[str, ...]:
        """The resources the host reservations name, each once, in request order."""
        return tuple(dict.fromkeys(resource for resource, *_ in self.host_usages))

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
        return self.most(host, slots, first) == slots

    def most(self, host: HostInfo, slots: int, first: bool = False) -> int:
        """The most slots, at most ``slots``, a share on ``host`` can take now: its
        free slots, as far as what is left of each resource covers the reservations
        (0 when a per-host one, or the first host's per-job one, does not fit)."""
        free = host.free
        return self._limit(
            host,
            slots if slots <= free else free,
            first,
            self.state.available,  # type: ignore[arg-type]
        )

    def most_idle(self, host: Host, slots: int) -> int:
        """The most slots, at most ``slots``, a share on ``host`` could ever take:
        with no job running (all its slots, the whole of each resource). Per-job
        reservations (on one host only) are left out: a bound, never too low."""
        state = self.state

        def whole(of: Host, resource: str) -> float | None:
            left = state.available(of, resource)
            return None if left is None else left + of.reserved.get(resource, 0.0)

        return self._limit(host, min(host.slots, slots), False, whole)  # type: ignore[arg-type]

    def _limit(
        self,
        host: HostInfo,
        slots: int,
        first: bool,
        left_of: Callable[[HostInfo, str], float | None],
    ) -> int:
        """``slots`` cut down to what the host reservations allow, ``left_of(host,
        resource)`` being what there is of each (None: the host has none)."""
        if slots <= 0:
            return 0
        for resource, value, _, method in self.host_usages:
            if method is ReserveMethod.PER_TASK:
                left = left_of(host, resource)
                if left is None:
                    return 0
                if left + EPSILON < value * slots:  # not the whole share: how much
                    if value <= 0:  # nothing asked, and less than nothing left
                        return 0
                    slots = int((left + EPSILON) // value)
                    while slots > 0 and left + EPSILON < value * slots:  # rounding
                        slots -= 1
                    if slots <= 0:
                        return 0
            elif method is ReserveMethod.PER_HOST or first:  # per job: first host only
                left = left_of(host, resource)
                if left is None or left + EPSILON < value:
                    return 0
        return slots


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
    memo: NeverMemo | None = None,
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
        memo: the session's ``NeverMemo`` (None: nothing is remembered).

    Returns:
        ``Placement`` when a plan fits, else ``Unsatisfied`` with the reason
        (``diagnose``'s: what blocks the job, whatever was checked first).

    Raises:
        SessionCancelled: the session was cancelled; nothing was changed.
    """
    tasks = job.tasks if tasks is None else tasks
    request: _Request | None = None
    if state is not None and primary != EMPTY:
        request = _Request(primary, tasks, state)
    refused = _refused(primary, tasks, request, hosts, capacity)
    if refused is not None:  # a bad or oversized request is so however busy the cluster is
        return refused
    if request is None or state is None:
        if index.total_free < tasks:  # a plain job: only slots can hold it, known in O(1)
            return SHORT
        return _plain(tasks, hosts, index, check_cancel, allocator, primary)
    if index.total_free < tasks:
        # Too few free slots now, so no plan can fit; but a select that no host
        # passes (say) blocks the job as much on an idle cluster: diagnose decides.
        return diagnose(request, state, memo)
    plans = plans_for(primary, tasks, allocator, index.most_free)
    most = request.most if request.host_usages else None
    try:
        while (plan := plans.next()) is not None:
            check_cancel()
            if not _plan_fits_index(plan, index) or request.shared_short(plan.nhosts):
                continue
            candidates = _candidates(request, plan, state, check_cancel)
            for group in _groups(request, candidates):
                if plan.packed and request.shared_per_host:
                    # Most room first, so the fewest hosts (and the least of a per-host
                    # pool): with less free it can only need more, so a failure stands
                    # for the session (the unsatisfiable cache relies on it, Req 7).
                    group = sorted(group, key=lambda host: -request.most(host, tasks))
                shares = try_plan(group, plan, most)
                if shares is not None and not request.shared_short(len(shares)):
                    return Placement(
                        tuple(
                            (host, slots, request.host_reservations(slots, position == 0))
                            for position, (host, slots) in enumerate(shares)
                        ),
                        request.shared_reservations(len(shares)),
                    )
    finally:
        plans.close()
    return diagnose(request, state, memo)


def _refused(
    primary: Primary,
    tasks: int,
    request: _Request | None,
    hosts: Sequence[HostInfo],
    capacity: int,
) -> Unsatisfied | None:
    """Why ``primary`` for ``tasks`` can never be placed, known without looking at
    any host: a ``span[]`` that does not fit the task count, a bad ``rusage``, no
    hosts, more tasks than the cluster has slots. None when none of these holds."""
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
    if request is not None:
        refused = request.resolve()
        if refused is not None:
            return refused
    if not hosts:
        return _NO_HOSTS
    if tasks > capacity:
        return _TOO_LARGE
    return None


def never_fits(
    primary: Primary, tasks: int, state: ClusterState, memo: NeverMemo | None = None
) -> Unsatisfied | None:
    """Why ``primary`` for ``tasks`` slots could never be placed, whatever the running
    jobs hold: a bad request, no hosts, more than the cluster, or ``diagnose``'s
    load-independent reasons (no host selected, more than the hosts it can use hold
    when idle). None when it could be placed on an idle cluster.

    The core asks this before reporting a hold that depends on load (a queue's slot
    limit reached), so that a job that can never run says why.
    """
    request = None if primary == EMPTY else _Request(primary, tasks, state)
    refused = _refused(primary, tasks, request, state.host_order, state.capacity)
    if refused is not None or request is None:
        return refused
    return _never(request, state, memo)


def _plain(
    tasks: int,
    hosts: Sequence[HostInfo],
    index: FreeSlotIndex,
    check_cancel: Callable[[], None],
    allocator: Allocator | None,
    primary: Primary,
) -> Outcome:
    """A request with no select, rusage, order or same: slots only (the fast path).

    Without ``span[]`` the last plan (packed) fits whenever the free slots add up
    to the tasks, so only a ``span[]`` shape (or another allocator's plans) can fail.
    """
    plans = plans_for(primary, tasks, allocator, index.most_free)
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


def diagnose(request: _Request, state: ClusterState, memo: NeverMemo | None = None) -> Unsatisfied:
    """Why no plan fitted: the first of these that holds, what no load can change
    first (``_never``), so a reason never depends on what else runs:

    * no ok host passes the select: NO_HOST_SELECTED (no ok host at all: slots;
      resolvable only when the select reads load values);
    * a shared pool is too small even when unused: NOT_ENOUGH_RESOURCE (unresolvable);
    * the hosts it can use could not hold the tasks even idle: NOT_ENOUGH_RESOURCE
      when their slots would but the reservations would not, else NOT_ENOUGH_SLOTS;
      with a ``span[]``, NOT_ENOUGH_HOSTS_FOR_SPAN (all three unresolvable);

    then what the running jobs hold:

    * a shared pool is short even for one host: NOT_ENOUGH_RESOURCE naming it;
    * no selected host with a free slot has the reservations of one task:
      NOT_ENOUGH_RESOURCE naming the host resources short;
    * the selected hosts have fewer free slots than tasks: NOT_ENOUGH_SLOTS;
    * with a ``span[]``: the slots are there but not in its shape,
      NOT_ENOUGH_HOSTS_FOR_SPAN;
    * without: the reservations leave too few of those slots usable (or a pool
      reserved per host is short for the hosts it takes): NOT_ENOUGH_RESOURCE; or no
      ``same[]`` group has the slots: NOT_ENOUGH_SLOTS naming it.
    """
    never = _never(request, state, memo)
    if never is not None:
        return never
    short = request.shared_short(1)
    if short:
        return Unsatisfied(PendingCode.NOT_ENOUGH_RESOURCE, resolvable=True, resources=short)
    hosts = state.host_order
    # The selected ok hosts with a free slot, from the index (it holds just those
    # ok hosts with a free slot), not from a walk over every host.
    free = [
        host
        for host in map(hosts.__getitem__, state.free_index.positions_at_least(1))
        if request.selected(host)
    ]
    if request.host_usages and free and not any(request.room(h, 1, True) for h in free):
        return Unsatisfied(
            PendingCode.NOT_ENOUGH_RESOURCE, resolvable=True, resources=request.usage_names()
        )
    tasks = request.tasks
    if sum(h.free for h in free) < tasks:
        return SHORT
    if span_plan(request.primary, tasks) is not None:
        return _NO_PLAN
    if sum(request.most(h, tasks) for h in free) < tasks:
        return Unsatisfied(
            PendingCode.NOT_ENOUGH_RESOURCE, resolvable=True, resources=request.usage_names()
        )
    if request.primary.same:
        same = ":".join(request.primary.same)
        return Unsatisfied(
            PendingCode.NOT_ENOUGH_SLOTS,
            resolvable=True,
            detail=f"no same[{same}] group of hosts has {tasks} free slots",
        )
    names = request.usage_names() + tuple(resource for resource, *_ in request.shared_usages)
    return Unsatisfied(PendingCode.NOT_ENOUGH_RESOURCE, resolvable=True, resources=names)


def _never(
    request: _Request, state: ClusterState, memo: NeverMemo | None = None
) -> Unsatisfied | None:
    """The load-independent part of ``diagnose``: why the request could not be
    placed even with no job running, or None; from ``memo`` when it is known.

    It walks the ok hosts that pass the select, in host order, and stops as soon as
    they could hold the request idle (``_Request.most_idle``): without ``span[]``,
    their slots add up to the tasks; with one, enough of them hold its shares. (A
    select on load values, ``slots`` or ``mem``, is taken as it is at the walk.)
    """
    primary = request.primary
    key = (id(primary), request.tasks)
    known = None if memo is None else memo.get(key)
    if known is not None and known[0] is primary:
        return known[1]
    verdict = _walk(request, state)
    if memo is not None and not _reads_load(primary.select, state):
        if len(memo) > 65536:
            memo.clear()
        memo[key] = (primary, verdict)
    return verdict


def _reads_load(select: Select | None, state: ClusterState) -> bool:
    """Whether ``select`` reads a value that moves with load (``_LOAD_NAMES`` or a
    consumable resource)."""
    if select is None:
        return False
    names = _names(select)
    resources = state.resources
    return any(
        name in _LOAD_NAMES or (name in resources and resources[name].consumable) for name in names
    )


def _names(select: Select) -> frozenset[str]:
    """The resource names ``select`` reads (memoised per select object)."""
    entry = _NAMES.get(id(select))
    if entry is None or entry[0] is not select:
        if len(_NAMES) > 65536:
            _NAMES.clear()
        found: set[str] = set()
        stack: list[Node] = [select.expr]
        while stack:
            node = stack.pop()
            if isinstance(node, Name | Defined):
                found.add(node.name)
            elif isinstance(node, Unary):
                stack.append(node.operand)
            elif isinstance(node, Binary):
                stack.extend((node.left, node.right))
        entry = _NAMES[id(select)] = (select, frozenset(found))
    return entry[1]


_NAMES: dict[int, tuple[Select, frozenset[str]]] = {}


def _walk(request: _Request, state: ClusterState) -> Unsatisfied | None:
    """``_never``'s verdict, computed."""
    tasks = request.tasks
    shape = span_plan(request.primary, tasks)
    big, big_needed, small, small_needed = (0, 0, 0, 0) if shape is None else shape.shares()
    ok = selected = fits = False
    slots = held = 0  # slots of the hosts it can use; tasks they could hold
    for host in state.host_order:
        if host.status is not HostStatus.OK:
            continue
        ok = True
        if not request.selected(host):
            continue
        selected = True
        slots += host.slots
        if shape is None:
            held += request.most_idle(host, tasks - held)
            fits = held >= tasks
        else:
            can = request.most_idle(host, big)
            if big_needed and can == big:
                big_needed -= 1
            elif small_needed and can >= small:
                small_needed -= 1
            fits = not big_needed and not small_needed
        if fits:
            break
    if ok and not selected:  # (no ok host at all: too few slots, below)
        # Freeing room can only help a select that reads load values.
        resolvable = _reads_load(request.primary.select, state)
        return Unsatisfied(PendingCode.NO_HOST_SELECTED, resolvable=resolvable)
    short = request.shared_short(1, idle=True)
    if short:
        return Unsatisfied(
            PendingCode.NOT_ENOUGH_RESOURCE,
            resolvable=False,
            resources=short,
            detail="more than the cluster has",
        )
    if fits:
        return None
    if shape is not None:
        return Unsatisfied(
            PendingCode.NOT_ENOUGH_HOSTS_FOR_SPAN,
            resolvable=False,
            detail="not even on idle hosts: too few of the hosts it can use hold a share",
        )
    if slots >= tasks:
        return Unsatisfied(
            PendingCode.NOT_ENOUGH_RESOURCE,
            resolvable=False,
            resources=request.usage_names(),
            detail=f"the hosts it can use hold the reservations of {held} of {tasks} tasks",
        )
    return Unsatisfied(
        PendingCode.NOT_ENOUGH_SLOTS,
        resolvable=False,
        detail=f"the hosts it can use have {slots} slots, it asks for {tasks}",
    )
