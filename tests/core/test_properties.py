"""Properties over random event sequences: resources are conserved (invariant 6),
every pending job gets exactly one decision a session, and decisions are deterministic."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xce_core.core import SchedCore
from xce_core.errors import EventError
from xce_core.snapshot import save_snapshot
from xce_schemas import Decision, HostStatus, JobState

NS = 1_000_000_000
QUEUES = ("low", "normal", "high")

operation = st.one_of(
    st.tuples(st.just("submit"), st.integers(1, 12), st.integers(-2, 2), st.sampled_from(QUEUES)),
    st.tuples(st.just("round")),
    st.tuples(
        st.sampled_from(["finish", "fail", "requeue", "suspend", "resume", "kill"]),
        st.integers(0, 50),
    ),
    st.tuples(
        st.just("host"), st.integers(0, 6), st.integers(0, 6), st.sampled_from(list(HostStatus))
    ),
    st.tuples(st.just("update"), st.integers(0, 50), st.integers(-3, 3), st.sampled_from(QUEUES)),
)


def run(ops: list[tuple[Any, ...]], check: bool) -> list[str]:
    decisions: list[Decision] = []
    core = SchedCore(on_decision=decisions.append, prng_seed=7)
    core.push_event(
        {
            "type": "CONFIG_PUSH",
            "ts": 0,
            "payload": {
                "config": {
                    "queues": [
                        {"name": "low", "priority": 10},
                        {"name": "normal", "priority": 30},
                        {"name": "high", "priority": 30},
                    ]
                }
            },
        }
    )
    core.push_event(
        {
            "type": "WORKERS_PUSH",
            "ts": 0,
            "payload": {"hosts": [{"name": f"h{i}", "slots": 1 + i % 4} for i in range(5)]},
        }
    )
    next_jobid = 1
    for step, op in enumerate(ops, start=1):
        ts = step * NS
        jobs = core.state.jobs
        by_state = {s: [j for j in jobs.values() if j.state is s] for s in JobState}
        event: dict[str, Any] | None = None
        kind = op[0]
        if kind == "submit":
            event = {
                "type": "JOBS_PUSH",
                "ts": ts,
                "payload": {
                    "jobs": [
                        {
                            "jobid": next_jobid,
                            "queue": op[3],
                            "tasks": op[1],
                            "priority": op[2],
                            "submit_ts": ts,
                        }
                    ]
                },
            }
            next_jobid += 1
        elif kind == "round":
            pending = {j.jobid for j in by_state[JobState.PEND]}
            start = len(decisions)
            core.push_event({"type": "BEGIN_ROUND", "ts": ts, "payload": {}})
            decided = [d.jobid for d in decisions[start + 1 :]]  # type: ignore[union-attr]
            assert len(decided) == len(set(decided)) and set(decided) <= pending
            for job in core.state.jobs.values():  # every job left pending has a reason
                assert job.state is not JobState.PEND or job.pend_reason is not None
        elif kind == "host":
            event = {
                "type": "WORKERS_PUSH",
                "ts": ts,
                "payload": {
                    "hosts": [{"name": f"h{op[1]}", "slots": op[2], "status": op[3].value}]
                },
            }
        elif kind == "update":
            candidates = list(jobs)
            if candidates:
                event = {
                    "type": "JOB_UPDATE",
                    "ts": ts,
                    "payload": {
                        "jobid": candidates[op[1] % len(candidates)],
                        "priority": op[2],
                        "queue": op[3],
                    },
                }
        else:
            source, target = {
                "finish": (JobState.RUN, JobState.DONE),
                "fail": (JobState.RUN, JobState.EXIT),
                "requeue": (JobState.RUN, JobState.PEND),
                "suspend": (JobState.RUN, JobState.SUSP),
                "resume": (JobState.SUSP, JobState.RUN),
                "kill": (JobState.PEND, JobState.EXIT),
            }[kind]
            candidates = by_state[source]
            if candidates:
                job = candidates[op[1] % len(candidates)]
                event = {
                    "type": "JOB_STATE_CHANGE",
                    "ts": ts,
                    "payload": {"jobid": job.jobid, "state": target.value},
                }
        if event is not None:
            before = save_snapshot(core) if check else None
            try:
                core.push_event(event)
            except EventError:
                # Rejected (a host shrinking under its jobs, a resume without room):
                # nothing changed.
                if check:
                    assert save_snapshot(core) == before
        if check:
            assert_conserved(core)
    return [d.model_dump_json() for d in decisions]


def assert_conserved(core: SchedCore) -> None:
    state = core.state
    held: dict[str, int] = {h.name: 0 for h in state.host_order}
    for job in state.jobs.values():
        if job.state is JobState.RUN:
            assert job.alloc is not None
            for name, slots in job.alloc.slots_by_host().items():
                held[name] += slots
        elif job.state is JobState.PEND:
            assert job.alloc is None
        else:
            assert job.alloc is not None  # a suspended job keeps its hosts, not its slots
    for host in state.host_order:
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
