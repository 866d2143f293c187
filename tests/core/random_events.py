"""Random event sequences for property tests: a hypothesis strategy, a driver, and
the checks every sequence must pass (``run``, ``assert_conserved``).

An operation is a small tuple; ``apply`` turns it into an event that fits the
core's current state (a finish for a running job, a resume for a suspended one, ...)
and pushes it. Job ids come from the step number, so two cores driven from the same
step give the same ids.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from xce_core.backfill import expected_end
from xce_core.core import SchedCore
from xce_core.errors import EventError
from xce_core.snapshot import save_snapshot
from xce_schemas import (
    BackfillPolicy,
    Decision,
    Dispatch,
    HostStatus,
    JobState,
    Pend,
    Preempt,
    Resume,
    dump_decision,
)

NS = 1_000_000_000
QUEUES = ("low", "normal", "high")

#: Requests random jobs carry: plain, spans, selects, reservations, composites, bad.
REQUESTS = (
    "",
    "",
    "span[ptile=2]",
    "span[hosts=1]",
    "select[maxslots >= 3] order[slots]",
    "rusage[mem=500]",
    "rusage[lic=1:duration=2]",
    "rusage[lic=2] span[ptile=1]",
    "same[model]",
    "2*{-} + 1*{rusage[mem=100]}",
    "{span[hosts=1]} || {span[ptile=1]}",
    "select[mem>",
)

#: The shared licence pool of ``new_core`` (resource ``lic``).
LICENCES = 4

#: Run limits random jobs carry, s (None: none given; in an update: unchanged).
RUN_LIMITS = (None, None, 1, 5, 3600)

operation = st.one_of(
    st.tuples(
        st.just("submit"),
        st.integers(1, 12),
        st.integers(-2, 2),
        st.sampled_from(QUEUES),
        st.sampled_from(REQUESTS),
        st.sampled_from(RUN_LIMITS),
    ),
    st.tuples(st.just("round")),
    st.tuples(
        st.sampled_from(["finish", "fail", "requeue", "suspend", "resume", "kill", "obey"]),
        st.integers(0, 50),
    ),
    st.tuples(
        st.just("host"), st.integers(0, 6), st.integers(0, 6), st.sampled_from(list(HostStatus))
    ),
    st.tuples(
        st.just("queue"),
        st.sampled_from(QUEUES),
        st.booleans(),
        st.sampled_from([None, 3, 8]),
        st.sampled_from([None, None, 2, 3600]),
    ),
    st.tuples(
        st.just("update"),
        st.integers(0, 50),
        st.integers(-3, 3),
        st.sampled_from((*QUEUES, None)),  # (None: the queue is unchanged)
        st.sampled_from(RUN_LIMITS),
    ),
)

TRANSITIONS = {
    "finish": (JobState.RUN, JobState.DONE),
    "fail": (JobState.RUN, JobState.EXIT),
    "requeue": (JobState.RUN, JobState.PEND),
    "suspend": (JobState.RUN, JobState.SUSP),
    "obey": (JobState.RUN, JobState.SUSP),
    "resume": (JobState.SUSP, JobState.RUN),
    "kill": (JobState.PEND, JobState.EXIT),
}


#: ``new_core``'s queues as configured (a ``queue`` operation redefines one from here).
QUEUE_SPECS: dict[str, dict[str, Any]] = {
    "low": {"name": "low", "priority": 10, "preemptible": True, "max_running": 8},
    "normal": {"name": "normal", "priority": 30, "preemptible": True},
    "high": {
        "name": "high",
        "priority": 30,
        "preemptible_queues": ["low", "normal"],
        "user_slot_limit": 10,
    },
}


def new_core(
    decisions: list[Any],
    backfill: BackfillPolicy = BackfillPolicy.GREEDY,
    reservation_depth: int | None = None,
    incremental: bool = True,
    picker: str = "builtin_fcfs",
) -> SchedCore:
    """A core with three queues (two of equal priority; ``high`` preempts the others,
    ``low`` has a slot limit) and five hosts of 1-4 slots, under the backfill policy
    ``backfill`` (``reservation_depth`` with ``hybrid``), with incremental rounds or
    not, and the global picker ``picker``."""
    core = SchedCore(on_decision=decisions.append, prng_seed=7, incremental=incremental)
    core.push_event(
        {
            "type": "CONFIG_PUSH",
            "ts": 0,
            "payload": {
                "config": {
                    "queues": list(QUEUE_SPECS.values()),
                    "job_pick_plugin": picker,
                    "preempt_timeout_rounds": 2,
                    "backfill": backfill.value,
                    "reservation_depth": reservation_depth,
                }
            },
        }
    )
    core.push_event(
        {
            "type": "WORKERS_PUSH",
            "ts": 0,
            "payload": {
                "hosts": [
                    {"name": f"h{i}", "slots": 1 + i % 4, "max_mem_mb": 2000, "model": f"m{i % 2}"}
                    for i in range(5)
                ]
            },
        }
    )
    resources = [{"name": "lic", "consumable": True, "shared": True}]
    core.push_event({"type": "RESOURCES_PUSH", "ts": 0, "payload": {"resources": resources}})
    licences = [{"resource": "lic", "value": LICENCES}]
    core.push_event({"type": "RESVALS_FULL", "ts": 0, "payload": {"values": licences}})
    return core


def event_for(core: SchedCore, op: tuple[Any, ...], step: int) -> dict[str, Any] | None:
    """The event ``op`` means at ``step`` in ``core``'s state (None: nothing applies)."""
    ts = step * NS
    kind = op[0]
    jobs = core.state.jobs
    if kind == "submit":
        return {
            "type": "JOBS_PUSH",
            "ts": ts,
            "payload": {
                "jobs": [
                    {
                        "jobid": step,
                        "queue": op[3],
                        "tasks": op[1],
                        "priority": op[2],
                        "submit_ts": ts,
                        "resreq": op[4],
                        "run_limit_s": op[5],
                    }
                ]
            },
        }
    if kind == "round":
        return {"type": "BEGIN_ROUND", "ts": ts, "payload": {}}
    if kind == "host":
        return {
            "type": "WORKERS_PUSH",
            "ts": ts,
            "payload": {"hosts": [{"name": f"h{op[1]}", "slots": op[2], "status": op[3].value}]},
        }
    if kind == "queue":  # (in)activate a queue, give or take its slot and run limits
        spec = {**QUEUE_SPECS[op[1]], "active": op[2], "max_running": op[3]}
        if len(op) > 4:
            spec["run_limit_s"] = op[4]
        return {"type": "QUEUE_UPDATE", "ts": ts, "payload": {"queue": spec}}
    if kind == "update":
        if not jobs:
            return None
        jobid = list(jobs)[op[1] % len(jobs)]
        return {
            "type": "JOB_UPDATE",
            "ts": ts,
            "payload": {"jobid": jobid, "priority": op[2], "queue": op[3], "run_limit_s": op[4]},
        }
    source, target = TRANSITIONS[kind]
    if kind == "obey":  # a victim of a preemption in flight suspends, as asked
        victims = {v for record in core.state.preemptions.values() for v in record.victims}
        candidates = [j for j in sorted(victims) if j in jobs and jobs[j].state is source]
    else:
        candidates = [j.jobid for j in jobs.values() if j.state is source]
    if not candidates:
        return None
    jobid = candidates[op[1] % len(candidates)]
    return {
        "type": "JOB_STATE_CHANGE",
        "ts": ts,
        "payload": {"jobid": jobid, "state": target.value},
    }


def apply(core: SchedCore, op: tuple[Any, ...], step: int) -> bool:
    """Push the event ``op`` means; False when the core rejected it (or none applied)."""
    event = event_for(core, op, step)
    if event is None:
        return False
    try:
        core.push_event(event)
    except EventError:
        return False  # e.g. a host shrinking under its jobs, a resume without room
    return True


#: Extra checks after each round: the core and the round's decisions (NEW_SESSION first).
RoundCheck = Callable[[SchedCore, list[Decision]], None]


def run(
    ops: list[tuple[Any, ...]],
    check: bool,
    backfill: BackfillPolicy = BackfillPolicy.GREEDY,
    reservation_depth: int | None = None,
    on_round: RoundCheck | None = None,
    incremental: bool = True,
    picker: str = "builtin_fcfs",
) -> list[str]:
    """Drive a ``new_core`` through ``ops``; with ``check``, after every event assert
    that a rejected event changed nothing, that each round decided each pending job
    at most once (and ``on_round``'s checks), and that resources are conserved;
    ``incremental`` as ``SchedCore``'s; ``picker`` the global picker.

    Returns:
        Every decision as JSON, in order.
    """
    decisions: list[Decision] = []
    core = new_core(decisions, backfill, reservation_depth, incremental, picker)
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
            if on_round is not None:
                on_round(core, decisions[start:])
        if check:
            assert_conserved(core)
    return [dump_decision(d).decode() for d in decisions]


def assert_conserved(core: SchedCore) -> None:
    """Resources are conserved (DESIGN invariant 6): every host's used slots and
    reserved amounts, and the shared pools in use, are exactly what running jobs
    hold, within capacity, and the free-slot index agrees."""
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
    assert all(used <= LICENCES for used in state.shared_in_use.values())  # never over the pool
    for host in state.host_order:
        assert {k: v for k, v in reserved[host.name].items() if v} == host.reserved
        assert host.reserved.get("mem", 0.0) <= host.max_mem
        assert host.used == held[host.name]  # used = what running jobs hold
        assert 0 <= host.used <= host.slots  # used + free = capacity, free ≥ 0
        assert state.free_index.free_of(host.position) == host.usable_free
    assert state.free_index.total_free == sum(h.usable_free for h in state.host_order)
    # The running jobs' deadlines, kept as they start and stop, are what their run
    # limits in force say now (``runtime.expected_end_ns``).
    now = core.last_ts
    expected = {
        job.jobid: expected_end(state, job, now)
        for job in state.jobs.values()
        if job.state is JobState.RUN
    }
    assert {jobid: state.expected_end(state.running[jobid], now) for jobid in state.running} == (
        expected
    )
    assert [end for end, _ in state.expected_ends(now)] == sorted(expected.values())
    assert state.capacity == sum(h.slots for h in state.host_order)
