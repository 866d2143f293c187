"""seqjob and parjob over the plan and host iterators (Reqs 3, 4, 9 AC 1)."""

from __future__ import annotations

import pytest
from xce_core.alloc.free_index import FreeSlotIndex
from xce_core.alloc.host_iter import SlotHostIter
from xce_core.alloc.outcome import Placement, Unsatisfied
from xce_core.alloc.primary import PARJOB, SEQJOB, allocate_primary, try_plan
from xce_core.plugins import AllocPlan
from xce_core.state import ClusterState, Job
from xce_schemas import HostStatus, PendingCode


def make_cluster(
    free: list[int], slots: int | None = None, closed: tuple[int, ...] = ()
) -> ClusterState:
    """Hosts h1..hN; host i has ``free[i]`` free slots out of ``slots`` (default: max free)."""
    cap = slots if slots is not None else max([*free, 1])
    state = ClusterState()
    for i, f in enumerate(free, start=1):
        status = HostStatus.CLOSED if i in closed else HostStatus.OK
        host = state.add_host(f"h{i}", cap, status)
        state.take_slots(host, cap - f)
    return state


def job(tasks: int) -> Job:
    return Job(1, "normal", "u", None, 0, tasks, "", 0, 0)


def allocate(state: ClusterState, tasks: int) -> Placement | Unsatisfied:
    allocator = SEQJOB if tasks == 1 else PARJOB
    return allocate_primary(
        job(tasks), state.host_order, state.free_index, state.capacity, lambda: None, allocator
    )


def shares(outcome: Placement | Unsatisfied) -> object:
    if isinstance(outcome, Placement):
        return [(h.name, n) for h, n, _ in outcome.shares]
    return outcome.code.value


CASES = [
    ([0, 1, 1], 1, [("h2", 1)], "seqjob: first host in host order with a free slot"),
    ([2, 2, 2, 2], 5, [("h1", 2), ("h2", 2), ("h3", 1)], "parjob: 3 hosts x 2, last takes 1"),
    ([2, 8, 2], 8, [("h2", 8)], "parjob: one host with room wins over spreading"),
    ([1, 3, 1, 3], 6, [("h2", 3), ("h4", 3)], "parjob: 2 x 3 skips hosts too small"),
    ([1, 1, 1, 1], 4, [("h1", 1), ("h2", 1), ("h3", 1), ("h4", 1)], "parjob: N hosts x 1 last"),
    ([2, 1, 3], 5, [("h1", 2), ("h3", 3)], "parjob: 2 x 3 whose last host takes 2"),
    ([3, 1, 1], 4, [("h1", 3), ("h2", 1)], "no 1x4, 2x2 or 4x1: packed where the slots are"),
    ([1, 1, 1, 1, 4], 4, [("h5", 4)], "parjob: 1 host x 4 before packing four hosts"),
    (
        [4, 1, 1, 1, 1, 1, 1, 1],
        10,
        [("h1", 4), ("h2", 1), ("h3", 1), ("h4", 1), ("h5", 1), ("h6", 1), ("h7", 1)],
        "packed: one host of 4 and six of 1, where no k x ceil(10/k) fits",
    ),
    (
        [2, 2, 1, 1, 1, 1],
        6,
        [("h1", 1), ("h2", 1), ("h3", 1), ("h4", 1), ("h5", 1), ("h6", 1)],
        "the spec's 6 x 1 comes before the packed plan",
    ),
    ([1, 0, 1], 3, "NOT_ENOUGH_SLOTS", "fewer free slots than tasks"),
    ([0, 0], 1, "NOT_ENOUGH_SLOTS", "seqjob on a full cluster"),
    ([4, 4], 9, "JOB_LARGER_THAN_CLUSTER", "more tasks than the cluster has slots"),
    ([], 1, "NO_HOSTS", "no hosts at all"),
]


@pytest.mark.parametrize(
    ("free", "tasks", "expected"), [c[:3] for c in CASES], ids=[c[3] for c in CASES]
)
def test_allocation(free: list[int], tasks: int, expected: object) -> None:
    assert shares(allocate(make_cluster(free), tasks)) == expected


def test_closed_hosts_take_nothing() -> None:
    state = make_cluster([1, 1, 1], closed=(1,))
    assert shares(allocate(state, 1)) == [("h2", 1)]
    assert shares(allocate(state, 3)) == "NOT_ENOUGH_SLOTS"


def test_unresolvable_reasons_say_preemption_cannot_help() -> None:
    assert allocate(make_cluster([4, 4]), 9) == Unsatisfied(
        PendingCode.JOB_LARGER_THAN_CLUSTER, False
    )
    assert allocate(make_cluster([0, 0]), 1) == Unsatisfied(PendingCode.NOT_ENOUGH_SLOTS, True)


def test_allocation_changes_no_state() -> None:
    state = make_cluster([2, 2, 2])
    before = [(h.used, h.slots) for h in state.host_order], state.free_index.total_free
    allocate(state, 5)
    assert ([(h.used, h.slots) for h in state.host_order], state.free_index.total_free) == before


def test_host_iterator_is_lazy_and_skips_full_hosts_through_the_index() -> None:
    # 1,024 hosts; only the last 24 have 4 free slots.
    state = make_cluster([0] * 1000 + [4] * 24, slots=4)
    plan = AllocPlan(2, 4, 8)
    it = SlotHostIter(plan, state.host_order, state.free_index, lambda: None)
    placement = try_plan(it, plan)
    assert placement is not None
    assert [(h.name, n) for h, n in placement] == [("h1001", 4), ("h1002", 4)]
    assert it.evaluated == 2  # the 1,000 full hosts were never looked at


def test_host_iterator_ends_with_none_and_close_stops_it() -> None:
    state = make_cluster([1, 0, 1])
    it = SlotHostIter(AllocPlan(1, 1, 1), state.host_order, state.free_index, lambda: None)
    assert [it.next().name, it.next().name] == ["h1", "h3"]  # type: ignore[union-attr]
    assert it.next() is None and it.next() is None
    again = SlotHostIter(AllocPlan(1, 1, 1), state.host_order, state.free_index, lambda: None)
    again.close()
    assert again.next() is None and again.evaluated == 0


def test_free_index_counts_and_orders_hosts() -> None:
    index = FreeSlotIndex()
    for position, free in enumerate([3, 0, 5, 1, 5]):
        index.update(position, free)
    assert index.total_free == 14
    assert [index.count_at_least(k) for k in (1, 2, 4, 5, 6)] == [4, 3, 2, 2, 0]
    assert list(index.positions_at_least(2)) == [0, 2, 4]
    index.update(2, 0)
    assert list(index.positions_at_least(1)) == [0, 3, 4] and index.total_free == 9
