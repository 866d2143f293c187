"""A job without ``span[]`` takes the free slots where they are (Req 4, LSF without
``span[]``): it dispatches exactly when the hosts it can use have free slots (and the
reservations) for all its tasks, on any fragmentation, and pends for slots or
resources, never for a span it did not ask for. A job with ``span[]`` keeps its shape."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xce_schemas import Dispatch, JobSpec, JobState, Pend

from tests.builders import ClusterBuilder, Scenario, cluster, job_spec

MEM_PER_HOST = 4000.0


@dataclass(frozen=True)
class HostCase:
    slots: int
    free: int
    linux: bool
    closed: bool
    mem: float


def fragmented(hosts: list[HostCase]) -> ClusterBuilder:
    """Hosts h1..hN; on each ok host a job pinned there (``select[hname==...]``,
    jobid 1000 + i, submitted at 0) takes all but ``free`` slots in the first round."""
    builder = cluster().queue("normal")
    for i, host in enumerate(hosts, start=1):
        builder.host(
            f"h{i}",
            host.slots,
            "closed" if host.closed else "ok",
            type="LINUX" if host.linux else "AIX",
            mem=host.mem,
        )
        if not host.closed and host.slots > host.free:
            builder.job(1000 + i, tasks=host.slots - host.free, resreq=f"select[hname=='h{i}']")
    return builder


def filled(builder: ClusterBuilder, *jobs: JobSpec) -> Scenario:
    """The scenario after the round that starts the pinned jobs (all start), with
    ``jobs`` submitted at 1 s."""
    sc = builder.build()
    decided = sc.round(0)
    assert all(kind == "DISPATCH" for kind, *_ in decided), decided
    sc.submit(*jobs, at_s=1)
    return sc


host_cases = st.builds(
    HostCase,
    slots=st.integers(1, 6),
    free=st.integers(0, 6),
    linux=st.booleans(),
    closed=st.booleans(),
    mem=st.sampled_from([0.0, 1000.0, MEM_PER_HOST]),
).map(lambda h: HostCase(h.slots, min(h.free, h.slots), h.linux, h.closed, h.mem))


@settings(max_examples=150, deadline=None)
@given(
    hosts=st.lists(host_cases, min_size=1, max_size=8),
    tasks=st.integers(1, 24),
    select=st.booleans(),
    mem=st.sampled_from([None, 500.0, 1000.0, 1500.0]),
)
def test_dispatched_iff_the_usable_free_slots_add_up(
    hosts: list[HostCase], tasks: int, select: bool, mem: float | None
) -> None:
    parts = []
    if select:
        parts.append("select[type==LINUX]")
    if mem is not None:
        parts.append(f"rusage[mem={mem:g}]")
    sc = filled(fragmented(hosts), job_spec(1, tasks=tasks, resreq=" ".join(parts), submit_s=1))
    # What each host the job can use can take: free slots, as far as memory goes.
    usable = {}
    for i, host in enumerate(hosts, start=1):
        if host.closed or (select and not host.linux):
            continue
        usable[f"h{i}"] = host.free if mem is None else min(host.free, int(host.mem // mem))
    decided = sc.round(1)
    assert len(decided) == 1
    if sum(usable.values()) >= tasks:
        dispatch = next(d for d in sc.decisions if isinstance(d, Dispatch) and d.jobid == 1)
        shares = [
            (h.host, int(a.value))
            for h in dispatch.alloc.hosts
            for a in h.allocs
            if a.name == "slots"
        ]
        # Conserved: every task once, each on a host that could take it, within its room.
        assert sum(n for _, n in shares) == tasks
        assert len({name for name, _ in shares}) == len(shares)
        assert all(name in usable and 0 < n <= usable[name] for name, n in shares)
        state = sc.core.state
        for i, host in enumerate(hosts, start=1):
            taken = dict(shares).get(f"h{i}", 0)
            placed = state.hosts[f"h{i}"]
            assert placed.used == (0 if host.closed else host.slots - host.free) + taken
            assert placed.reserved.get("mem", 0.0) == (0.0 if mem is None else taken * mem)
        assert state.free_index.total_free == sum(h.free for h in state.host_order if h.usable_free)
    else:
        assert decided[0][:2] == ("PEND", 1)
        reason = decided[0][2]
        if tasks > sum(h.slots for h in hosts):
            assert reason == "JOB_LARGER_THAN_CLUSTER"
        elif not any(not h.closed and (h.linux or not select) for h in hosts):
            # Open hosts, none passes the select; no open host at all: no slots.
            open_hosts = any(not h.closed for h in hosts)
            assert reason == ("NO_HOST_SELECTED" if open_hosts else "NOT_ENOUGH_SLOTS")
        elif mem is None:
            assert reason == "NOT_ENOUGH_SLOTS"
        else:
            assert reason in ("NOT_ENOUGH_SLOTS", "NOT_ENOUGH_RESOURCE")


@settings(max_examples=60, deadline=None)
@given(
    hosts=st.lists(host_cases, min_size=1, max_size=6),
    shapes=st.lists(
        st.tuples(st.integers(1, 12), st.sampled_from(["", "rusage[mem=900]"])),
        min_size=1,
        max_size=10,
    ),
)
def test_the_unsatisfiable_cache_never_pends_a_job_that_would_start(
    hosts: list[HostCase], shapes: list[tuple[int, str]]
) -> None:
    """Req 7: jobs of a few shapes, with and without the cache: the same jobs start,
    on the same hosts (a hit pends a job only when allocating it would have failed
    too). A hit keeps the reason first found (Req 7 AC 5), which a later attempt,
    with less free, may name differently: reasons are not compared."""
    runs = []
    for cache in (True, False):
        jobs = [
            job_spec(n, tasks=tasks, resreq=resreq, submit_s=1)
            for n, (tasks, resreq) in enumerate(shapes, start=1)
        ]
        sc = filled(fragmented(hosts), *jobs)
        sc.core.unsatisfiable_cache = cache
        runs.append([d if d[0] == "DISPATCH" else d[:2] for d in sc.round(1)])
    assert runs[0] == runs[1]


def test_the_issue_case_three_one_one_holds_four_tasks_on_a_busy_cluster() -> None:
    hosts = [HostCase(4, 3, True, False, 0.0), HostCase(4, 1, True, False, 0.0)]
    hosts.append(HostCase(4, 1, True, False, 0.0))
    sc = filled(fragmented(hosts), job_spec(1, tasks=4, submit_s=1))
    assert sc.round(1) == [("DISPATCH", 1, ("h1", "h2"))]


def test_a_job_without_span_that_cannot_fit_pends_for_slots_not_span() -> None:
    hosts = [HostCase(4, 3, True, False, 0.0), HostCase(4, 0, True, False, 0.0)]
    sc = filled(fragmented(hosts), job_spec(1, tasks=4, submit_s=1))
    assert sc.round(1) == [("PEND", 1, "NOT_ENOUGH_SLOTS")]


def test_a_job_without_span_short_of_memory_pends_naming_memory() -> None:
    # Six free slots, but memory for three tasks only (1000 MB on each host).
    hosts = [HostCase(4, 3, True, False, 1000.0), HostCase(4, 3, True, False, 1000.0)]
    sc = filled(fragmented(hosts), job_spec(1, tasks=4, resreq="rusage[mem=600]", submit_s=1))
    assert sc.round(1) == [("PEND", 1, "NOT_ENOUGH_RESOURCE")]
    pend = next(d for d in sc.decisions if isinstance(d, Pend))
    assert [r.resource for r in pend.reason.resources] == ["mem"]


@pytest.mark.parametrize(
    ("resreq", "expected"),
    [
        ("span[ptile=2]", ("PEND", 1, "NOT_ENOUGH_HOSTS_FOR_SPAN")),
        ("span[hosts=1]", ("PEND", 1, "NOT_ENOUGH_HOSTS_FOR_SPAN")),
        ("", ("DISPATCH", 1, ("h1", "h2"))),
    ],
    ids=[
        "ptile=2 keeps its shape: only h1 holds a share of 2",
        "hosts=1 keeps its shape: no host has 4 free",
        "no span: the free slots where they are",
    ],
)
def test_a_span_keeps_its_exact_shape(resreq: str, expected: tuple[object, ...]) -> None:
    hosts = [HostCase(4, 3, True, False, 0.0), HostCase(4, 1, True, False, 0.0)]
    hosts.append(HostCase(4, 1, True, False, 0.0))
    sc = filled(fragmented(hosts), job_spec(1, tasks=4, resreq=resreq, submit_s=1))
    assert sc.round(1) == [expected]


def test_a_preemptor_without_span_preempts_for_fragmented_room_and_starts_there() -> None:
    """The preemption trial places like the allocator: victims whose slots leave
    [3, 1] free make room for 4 tasks without span."""
    sc = (
        cluster()
        .queue("urgent", priority=100, preemptible_queues=("normal",))
        .queue("normal", priority=30, preemptible=True)
        .host("h1", 4)
        .host("h2", 4)
        .job(1, tasks=1, priority=5, resreq="select[hname=='h1']")
        .job(2, tasks=3, priority=1, resreq="select[hname=='h1']")
        .job(3, tasks=3, priority=5, resreq="select[hname=='h2']")
        .job(4, tasks=1, priority=1, resreq="select[hname=='h2']")
        .build()
    )
    assert [kind for kind, *_ in sc.round(0)] == ["DISPATCH"] * 4
    sc.submit(job_spec(5, queue="urgent", tasks=4, priority=10, submit_s=1), at_s=1)
    assert sc.round(1) == [("PREEMPT", 5, (2, 4)), ("PEND", 5, "PREEMPT_WAIT")]
    sc.state_change(2, JobState.SUSP, at_s=2)
    sc.state_change(4, JobState.SUSP, at_s=2)
    assert sc.round(2) == [("DISPATCH", 5, ("h1", "h2"))]
    assert sorted(h.used for h in sc.core.state.host_order) == [4, 4]
