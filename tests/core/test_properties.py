"""Properties over random event sequences: resources are conserved (invariant 6),
every pending job gets at most one DISPATCH or PEND a session (a PEND only when its
reason changed) and preempts at most once, only suspended jobs are resumed, and
decisions are deterministic."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xce_core.core import SchedCore
from xce_core.snapshot import save_snapshot
from xce_schemas import Decision, Dispatch, JobState, Pend, Preempt, Resume

from tests.core.random_events import apply, new_core, operation


def run(ops: list[tuple[Any, ...]], check: bool) -> list[str]:
    decisions: list[Decision] = []
    core = new_core(decisions)
    for step, op in enumerate(ops, start=1):
        pending = {j.jobid for j in core.state.jobs.values() if j.state is JobState.PEND}
        suspended = {j.jobid for j in core.state.jobs.values() if j.state is JobState.SUSP}
        start = len(decisions)
        before = save_snapshot(core) if check else None
        if not apply(core, op, step) and check and op[0] != "round":
            assert save_snapshot(core) == before  # a rejected event changed nothing
        if check and op[0] == "round":
            made = decisions[start + 1 :]
            decided = [d.jobid for d in made if isinstance(d, Dispatch | Pend)]
            assert len(decided) == len(set(decided)) and set(decided) <= pending
            preemptors = [d.preempting_jobid for d in made if isinstance(d, Preempt)]
            assert len(preemptors) == len(set(preemptors)) and set(preemptors) <= pending
            assert {d.jobid for d in made if isinstance(d, Resume)} <= suspended
            for job in core.state.jobs.values():  # every job left pending has a reason
                assert job.state is not JobState.PEND or job.pend_reason is not None
        if check:
            assert_conserved(core)
    return [d.model_dump_json() for d in decisions]


def assert_conserved(core: SchedCore) -> None:
    state = core.state
    held: dict[str, int] = {h.name: 0 for h in state.host_order}
    reserved: dict[str, dict[str, float]] = {h.name: {} for h in state.host_order}
    shared: dict[str, float] = {}
    for job in state.jobs.values():
        if job.state is JobState.RUN:
            assert job.alloc is not None
            for name, slots in job.alloc.slots_by_host().items():
                held[name] += slots
            for h, host in enumerate(job.alloc.hosts):
                for a, item in enumerate(host.allocs):
                    if item.name != "slots" and (h, a) not in job.released:
                        mine = reserved[host.host]
                        mine[item.name] = mine.get(item.name, 0.0) + item.value
            for a, item in enumerate(job.alloc.shared):
                if (-1, a) not in job.released:
                    shared[item.name] = shared.get(item.name, 0.0) + item.value
        elif job.state is JobState.PEND:
            assert job.alloc is None
        else:
            assert job.alloc is not None  # a suspended job keeps its hosts, not its slots
    assert {k: v for k, v in shared.items() if v} == state.shared_in_use  # licences too
    assert all(used <= 4 for used in state.shared_in_use.values())  # never over the pool
    for host in state.host_order:
        assert {k: v for k, v in reserved[host.name].items() if v} == host.reserved
        assert host.reserved.get("mem", 0.0) <= host.max_mem
        assert host.used == held[host.name]  # used = what running jobs hold
        assert 0 <= host.used <= host.slots  # used + free = capacity, free ≥ 0
        assert state.free_index.free_of(host.position) == host.usable_free
    assert state.free_index.total_free == sum(h.usable_free for h in state.host_order)
    assert state.capacity == sum(h.slots for h in state.host_order)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, max_size=60))
def test_resources_are_conserved_after_any_event_sequence(ops: list[tuple[Any, ...]]) -> None:
    run(ops, check=True)


@settings(max_examples=50, deadline=None)
@given(st.lists(operation, max_size=60))
def test_same_events_give_the_same_decisions(ops: list[tuple[Any, ...]]) -> None:
    assert run(ops, check=False) == run(ops, check=False)
