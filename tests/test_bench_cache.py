"""The cache benchmark's scenario, at a tiny size, keeps working and stays honest.

``benchmarks/bench_cache.py`` times one round with and without the session's
unsatisfiable-request cache. Here its scenario runs on 100 hosts: the cluster is
busy as planned, no pending job starts, every failure needs a search (the free-slot
index holds enough slots for every shape), the cache pends the twins of each
shape, and both runs make the same decisions. Not a speed test: no time is asserted.
"""

from __future__ import annotations

import pytest

from benchmarks import bench_cache

HOSTS, JOBS, SHAPES = 100, 400, 40


@pytest.fixture(scope="module")
def runs() -> tuple[bench_cache.Scenario, bench_cache.Scenario]:
    _, on = bench_cache.measure(HOSTS, JOBS, SHAPES, cache=True)
    _, off = bench_cache.measure(HOSTS, JOBS, SHAPES, cache=False)
    return on, off


def test_both_runs_make_the_same_decisions(
    runs: tuple[bench_cache.Scenario, bench_cache.Scenario],
) -> None:
    on, off = runs
    assert on.decisions == off.decisions
    assert [d.op for d in on.decisions] == ["NEW_SESSION"] + ["PEND"] * JOBS


def test_the_cache_pends_every_twin_of_a_failed_shape(
    runs: tuple[bench_cache.Scenario, bench_cache.Scenario],
) -> None:
    on, off = runs
    assert (on.core.cache_hits, off.core.cache_hits) == (JOBS - SHAPES, 0)


def test_every_pending_job_fails_for_memory_not_for_slots(
    runs: tuple[bench_cache.Scenario, bench_cache.Scenario],
) -> None:
    on, _ = runs
    state = on.core.state
    free = [host for host in state.host_order if host.free > 0]
    assert len(free) == HOSTS // bench_cache.MODELS
    assert all(host.free == bench_cache.SLOTS - bench_cache.HELD_SLOTS for host in free)
    # The free-slot index has room for the largest shape: only the search can refuse.
    assert state.free_index.total_free >= max(tasks for tasks, _ in bench_cache.shapes(SHAPES))
    # Memory short for one task, or for the span's share of a host: never slots.
    reasons = {d.reason.main.value for d in on.decisions if d.op == "PEND"}
    assert reasons == {"NOT_ENOUGH_RESOURCE", "NOT_ENOUGH_HOSTS_FOR_SPAN"}


def test_shapes_are_distinct() -> None:
    assert len(set(bench_cache.shapes(200))) == 200
