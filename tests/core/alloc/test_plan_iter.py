"""The lazy plan iterators (Req 2) and parjob's plan sequence (Req 4 AC 1): the
spec's 1×N, 2×⌈N/2⌉, …, N×1 (one plan per distinct ⌈N/k⌉), then the packed plan."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xce_core.alloc.plan_iter import ParPlanIter, SeqPlanIter
from xce_core.plugins import AllocPlan

#: The packed plan, as ``plans`` shows it: the tasks wherever the free slots are.
PACKED = ("packed",)


def plans(it: ParPlanIter | SeqPlanIter) -> list[tuple[int, int, int] | tuple[str]]:
    out: list[tuple[int, int, int] | tuple[str]] = []
    while (plan := it.next()) is not None:
        if plan.packed:
            assert (plan.nhosts, plan.slots_per_host) == (1, plan.tasks)
            out.append(PACKED)
        else:
            out.append((plan.nhosts, plan.slots_per_host, plan.last_host_slots))
    return out


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [
        (1, [(1, 1, 1)]),
        (2, [(1, 2, 2), (2, 1, 1), PACKED]),
        (5, [(1, 5, 5), (2, 3, 2), (3, 2, 1), (5, 1, 1), PACKED]),
        (8, [(1, 8, 8), (2, 4, 4), (3, 3, 2), (4, 2, 2), (8, 1, 1), PACKED]),
        (
            12,
            [(1, 12, 12), (2, 6, 6), (3, 4, 4), (4, 3, 3), (6, 2, 2), (12, 1, 1), PACKED],
        ),
    ],
    ids=[
        "one task: one plan (1x1 is every placement)",
        "two tasks: 1x2 then 2x1, then packed",
        "five tasks: 4 hosts x 2 is the same allocation as 3 x 2 and is skipped",
        "eight tasks: last host of 3x3 takes the remaining 2",
        "twelve tasks: every divisor shape once",
    ],
)
def test_parjob_plan_sequence(tasks: int, expected: list[tuple[int, int, int]]) -> None:
    assert plans(ParPlanIter(tasks)) == expected


@given(st.integers(min_value=1, max_value=3000))
def test_plans_are_distinct_ordered_and_cover_the_spec_sequence(tasks: int) -> None:
    made = plans(ParPlanIter(tasks))
    if tasks > 1:
        assert made.pop() == PACKED  # the last resort, after the spec's sequence
    assert made[0] == (1, tasks, tasks) and made[-1] == (tasks, 1, 1)
    per_host = [p[1] for p in made]
    assert per_host == sorted(set(per_host), reverse=True)  # distinct, most slots first
    assert [p[0] for p in made] == sorted(p[0] for p in made)  # fewest hosts first
    for nhosts, slots, last in made:
        assert (nhosts - 1) * slots + last == tasks and 1 <= last <= slots
    # Every k hosts x ceil(N/k) of the spec is represented by the plan with that ceil.
    assert {math.ceil(tasks / k) for k in range(1, tasks + 1)} == set(per_host)
    assert len(made) <= 2 * math.isqrt(tasks) + 1


def test_exhaustion_is_stable_and_close_ends_iteration() -> None:
    it = ParPlanIter(3)
    assert it.next() == AllocPlan(1, 3, 3)
    it.close()
    assert [it.next() for _ in range(3)] == [None, None, None]
    last = ParPlanIter(3)
    assert plans(last)[-2:] == [(3, 1, 1), PACKED]
    assert [last.next() for _ in range(3)] == [None, None, None]
    assert [it.next() for _ in range(3)] == [None, None, None]
    done = ParPlanIter(2)
    plans(done)
    assert [done.next() for _ in range(3)] == [None, None, None]


def test_next_makes_exactly_one_plan_per_call() -> None:
    it = ParPlanIter(10**9)  # materializing every plan would never finish
    first, second = it.next(), it.next()
    assert first == AllocPlan(1, 10**9, 10**9)
    assert second == AllocPlan(2, 5 * 10**8, 10**9)


@pytest.mark.timeout(30)  # a hang guard, not a speed test: O(N) in all never ends
def test_each_next_jumps_to_the_next_distinct_plan() -> None:
    """Every ``next()`` is O(1): walking all ~2√N plans of N = 10⁹ tasks takes
    ~6·10⁴ calls (it took ~N steps in all when ``next()`` counted k one by one)."""
    tasks = 10**9
    it = ParPlanIter(tasks)
    made = []
    while (plan := it.next()) is not None:
        made.append(plan)
    assert made.pop() == AllocPlan(1, tasks, tasks, packed=True)
    per_host = [plan.slots_per_host for plan in made]
    assert per_host[0] == tasks and per_host[-1] == 1
    assert all(a > b for a, b in itertools.pairwise(per_host))
    # Each is ⌈N/k⌉ for k = its host count, and none is missed: for two plans m > m',
    # one host fewer than m''s plan already gives m or more.
    for plan, after in itertools.pairwise(made):
        assert -(-tasks // plan.nhosts) == plan.slots_per_host
        assert -(-tasks // (after.nhosts - 1)) >= plan.slots_per_host
    assert len(made) <= 2 * math.isqrt(tasks) + 1


def test_seqjob_has_one_plan() -> None:
    it = SeqPlanIter()
    assert plans(it) == [(1, 1, 1)]
    assert it.next() is None


def test_zero_tasks_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one task"):
        ParPlanIter(0)


@given(st.integers(1, 400), st.integers(-2, 450))
def test_a_largest_share_leaves_out_exactly_the_plans_no_host_can_take(
    tasks: int, largest: int
) -> None:
    """With the most free slots any host has, the sequence is the full one less the
    plans of more slots per host (which could not fit), in the same order."""
    full = plans(ParPlanIter(tasks))
    bound = max(1, largest)
    expected = [plan for plan in full if plan == PACKED or plan[1] <= bound]
    assert plans(ParPlanIter(tasks, largest)) == expected
