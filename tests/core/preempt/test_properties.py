"""Properties of preemption over many random clusters (hypothesis): the safety rule
of Req 6 AC 9, no victim chosen twice, resources conserved through dispatch,
suspend, resume and finish, and the same decisions on every run."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from xce_core.core import SchedCore
from xce_schemas import (
    SLOTS,
    BeginRound,
    ConfigPush,
    Decision,
    HostSpec,
    JobSpec,
    JobsPush,
    JobState,
    JobStateChange,
    Preempt,
    QueueSpec,
    Resume,
    SchedulerConfig,
    WorkersPush,
    dump_decision,
)
from xce_schemas.events import (
    ConfigPushPayload,
    JobsPushPayload,
    JobStateChangePayload,
    WorkersPushPayload,
)

NS = 1_000_000_000
QUEUES = ("urgent", "normal", "low")


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    """A random cluster, queue set and script of what the controller does."""
    hosts = tuple(
        HostSpec(name=f"h{i}", slots=draw(st.integers(1, 4)), max_mem_mb=1000.0)
        for i in range(draw(st.integers(1, 5)))
    )
    mostly = st.sampled_from([True, True, True, False])
    queues = tuple(
        QueueSpec(
            name=name,
            priority=draw(st.integers(0, 3)),
            preemptible=draw(mostly),
            # urgent mostly preempts the others; any queue may preempt any, itself too
            preemptible_queues=tuple(
                q
                for q in QUEUES
                if draw(mostly if name == "urgent" and q != name else st.booleans())
            ),
            max_running=draw(st.none() | st.none() | st.integers(2, 12)),
        )
        for name in QUEUES
    )
    timeout = draw(st.integers(1, 4))
    # Urgent jobs mostly outrank the others (2-5 against 0-3): overlaps stay possible.
    submit = st.sampled_from(QUEUES).flatmap(
        lambda queue: st.tuples(
            st.just("submit"),
            st.just(queue),
            st.integers(2, 5) if queue == "urgent" else st.integers(0, 3),
            st.sampled_from([1, 1, 2, 3, 6]),  # tasks
            st.sampled_from(["", "", "rusage[mem=300]", "span[hosts=1]", "span[ptile=2]"]),
        )
    )
    steps = draw(
        st.lists(
            st.one_of(
                submit,
                submit,
                st.tuples(st.just("round")),
                st.tuples(st.just("round")),
                st.tuples(st.just("finish"), st.integers(0, 50)),
                st.tuples(st.just("obey"), mostly),  # suspend victims, or ignore them
            ),
            min_size=10,
            max_size=60,
        )
    )
    return {"hosts": hosts, "queues": queues, "timeout": timeout, "steps": steps}


def check_conservation(core: SchedCore) -> None:
    """used + free = capacity on every host, and what is used is what running jobs hold."""
    state = core.state
    slots: Counter[str] = Counter()
    mem: Counter[str] = Counter()
    per_queue: Counter[str] = Counter()
    for job in state.jobs.values():
        if job.state is JobState.RUN:
            assert job.alloc is not None
            for host_alloc in job.alloc.hosts:
                for item in host_alloc.allocs:
                    if item.name == SLOTS:
                        slots[host_alloc.host] += int(item.value)
                        per_queue[job.queue] += int(item.value)
                    else:
                        mem[host_alloc.host] += item.value
    for host in state.host_order:
        assert host.used == slots[host.name], host.name
        assert 0 <= host.used <= host.slots
        assert abs(host.reserved.get("mem", 0.0) - mem[host.name]) < 1e-6
        assert state.free_index.free_of(host.position) == host.usable_free
    assert state.queue_slots == {q: n for q, n in per_queue.items() if n}


def run(cluster: dict[str, Any]) -> list[str]:
    decisions: list[Decision] = []
    queues = {q.name: q for q in cluster["queues"]}

    def on_decision(decision: Decision) -> None:
        decisions.append(decision)
        state = core.state
        if isinstance(decision, Preempt):
            preemptor = state.jobs[decision.preempting_jobid]
            for victim_id in decision.victim_jobids:
                victim = state.jobs[victim_id]
                # Req 6 AC 9, and the target list of AC 7
                assert victim.state is JobState.RUN
                assert victim.priority < preemptor.priority
                assert queues[victim.queue].preemptible
                assert victim.queue in queues[preemptor.queue].preemptible_queues
                in_flight = [
                    r
                    for r in state.preemptions.values()
                    if victim_id in r.victims and r.preemptor != decision.preempting_jobid
                ]
                assert not in_flight, "a victim already chosen is chosen again"
                assert not victim.ignored_preemption
        if isinstance(decision, Resume):
            assert state.jobs[decision.jobid].state is JobState.RUN

    core = SchedCore(on_decision=on_decision, prng_seed=3)
    config = SchedulerConfig(queues=cluster["queues"], preempt_timeout_rounds=cluster["timeout"])
    core.push_event(ConfigPush(ts=0, payload=ConfigPushPayload(config=config)))
    core.push_event(WorkersPush(ts=0, payload=WorkersPushPayload(hosts=cluster["hosts"])))
    now, next_id, obey = 1, 1, True
    for step in cluster["steps"]:
        now += 1
        ts = now * NS
        kind = step[0]
        if kind == "submit":
            _, queue, priority, tasks, resreq = step
            spec = JobSpec(
                jobid=next_id,
                queue=queue,
                priority=priority,
                tasks=tasks,
                resreq=resreq,
                submit_ts=ts,
            )
            next_id += 1
            core.push_event(JobsPush(ts=ts, payload=JobsPushPayload(jobs=(spec,))))
        elif kind == "round":
            start = len(decisions)
            core.push_event(BeginRound(ts=ts))
            if obey:
                for decision in decisions[start:]:
                    if isinstance(decision, Preempt):
                        for victim in decision.victim_jobids:
                            if core.state.jobs[victim].state is JobState.RUN:
                                payload = JobStateChangePayload(jobid=victim, state=JobState.SUSP)
                                core.push_event(JobStateChange(ts=ts, payload=payload))
        elif kind == "finish":
            runners = sorted(j for j, job in core.state.jobs.items() if job.state is JobState.RUN)
            if runners:
                victim = runners[step[1] % len(runners)]
                payload = JobStateChangePayload(jobid=victim, state=JobState.DONE)
                core.push_event(JobStateChange(ts=ts, payload=payload))
        else:
            obey = step[1]
        check_conservation(core)
    return [dump_decision(d).decode() for d in decisions]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_preemption_is_safe_conserves_resources_and_is_deterministic(
    cluster: dict[str, Any],
) -> None:
    first = run(cluster)
    assert first == run(cluster)
    for op in ("PREEMPT", "RESUME"):
        event(f"{op} made: {any(op in line for line in first)}")
