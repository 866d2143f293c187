"""The allocation benchmark's plan-iterator figure measures what it says: every plan
of parjob's iterator, and a floor that makes the same plans. No time is asserted."""

from __future__ import annotations

from xce_core.plugins import AllocPlan

from benchmarks.bench_alloc import floor_plans, walk_plans


def test_the_walk_makes_every_plan_and_the_floor_the_same_ones() -> None:
    total, worst, made = walk_plans(1000)
    assert made[0] == AllocPlan(1, 1000, 1000)
    assert made[-1] == AllocPlan(1, 1000, 1000, packed=True)
    assert len(made) == len({p.slots_per_host for p in made[:-1]}) + 1
    assert 0 <= worst <= total
    assert floor_plans(made) > 0
