"""The textbook EASY oracle (``benchmarks/naive_easy.py``) on cases worked out by hand.

Each job is ``(jobid, submit_s, run_s, tasks, run_limit_s)`` on one-slot hosts; its
label gives its shape, ``J<jobid>.S<submit>.R<run>.T<tasks>.L<limit>``, and its
comment its role. Every expected start time is derived in the comments, round by
round, from the rules in the oracle's docstring. The core's ``easy`` policy is
checked against this oracle elsewhere; here the oracle itself is checked.
"""

from __future__ import annotations

import pytest
from xce_driver.simulate import run_simulation
from xce_driver.workloads.mapping import map_trace
from xce_driver.workloads.swf import read_swf
from xce_schemas import BackfillPolicy

from benchmarks.naive_easy import Job, simulate
from benchmarks.naive_fcfs import simulate as naive_fcfs
from tests.driver.conftest import shared_trace

# (jobs, hosts, EASY starts, strict starts)
CASES: list[tuple[list[Job], int, dict[int, int], dict[int, int]]] = [
    (
        # The classic: a small job backfills before the head's shadow time.
        # t=0: J1 starts (free 2). t=1: J2 needs 4, free 2: blocked; J1's expected end
        # 10 frees 2 more: shadow 10, extra 2+2-4 = 0. t=2: J3 fits, 2+5 = 7 <= 10:
        # backfilled. t=3: J4, free 0. t=7 (J3 ends): J2 blocked as before; J4 fits
        # but ends at 27 > 10 and 1 > extra 0: waits. t=10: J2 starts. t=15: J4.
        # Strict: J3 waits behind J2 (t=15 with J4, once J2 ends).
        [
            (1, 0, 10, 2, 10),  # J1.S0.R10.T2.L10   started at once
            (2, 1, 5, 4, 5),  # J2.S1.R5.T4.L5      blocked: reserved at 10
            (3, 2, 5, 2, 5),  # J3.S2.R5.T2.L5      backfilled, ends by the shadow
            (4, 3, 20, 1, 20),  # J4.S3.R20.T1.L20  would delay J2: waits
        ],
        4,
        {1: 0, 2: 10, 3: 2, 4: 15},
        {1: 0, 2: 10, 3: 15, 4: 15},
    ),
    (
        # A job that ends after the shadow starts because it fits in the extra slots.
        # t=0: J1 starts (free 1). t=1: J2 needs 2: blocked; shadow 10 (J1), extra
        # 1+3-2 = 2. t=2: J3 fits (1 free), ends at 102 > 10 but 1 <= extra 2:
        # backfilled (extra 1). t=10: J1 ends, free 3: J2 starts, not delayed.
        [
            (1, 0, 10, 3, 10),  # J1.S0.R10.T3.L10
            (2, 1, 5, 2, 5),  # J2.S1.R5.T2.L5       reserved at 10
            (3, 2, 100, 1, 100),  # J3.S2.R100.T1.L100  backfilled into the extra slots
        ],
        4,
        {1: 0, 2: 10, 3: 2},
        {1: 0, 2: 10, 3: 10},
    ),
    (
        # The same, but the blocked job needs every host: extra 1+3-4 = 0, so J3
        # (ending after the shadow) may not start: it would delay J2. t=10: J2 takes
        # all 4 hosts; t=15: J3.
        [
            (1, 0, 10, 3, 10),  # J1.S0.R10.T3.L10
            (2, 1, 5, 4, 5),  # J2.S1.R5.T4.L5       reserved at 10
            (3, 2, 100, 1, 100),  # J3.S2.R100.T1.L100  no extra slot: waits
        ],
        4,
        {1: 0, 2: 10, 3: 15},
        {1: 0, 2: 10, 3: 15},
    ),
    (
        # A job that ends after the shadow takes its slots off the extra.
        # 5 hosts. t=0: J1 (3) starts, free 2. t=1: J2 needs 4: blocked; shadow 10,
        # extra 2+3-4 = 1. J3 fits, ends at 51 > 10, 1 <= extra 1: starts (extra 0).
        # J4 fits (free 1), ends at 51 > 10, 1 > extra 0: waits. J5 fits, 1+5 = 6
        # <= 10: starts (free 0). t=6 (J5 ends, free 1): shadow 10, extra 1+3-4 = 0,
        # J4 still waits. t=10: J2 starts (free 0). t=20: J2 ends, J4 starts.
        # Strict: nothing passes J2; t=10: J2 then J3 (the new head, 1 free); t=20:
        # J4 and J5.
        [
            (1, 0, 10, 3, 10),  # J1.S0.R10.T3.L10
            (2, 1, 10, 4, 10),  # J2.S1.R10.T4.L10    reserved at 10
            (3, 1, 50, 1, 50),  # J3.S1.R50.T1.L50    takes the one extra slot
            (4, 1, 50, 1, 50),  # J4.S1.R50.T1.L50    extra used up: waits
            (5, 1, 5, 1, 5),  # J5.S1.R5.T1.L5       ends by the shadow
        ],
        5,
        {1: 0, 2: 10, 3: 1, 4: 20, 5: 1},
        {1: 0, 2: 10, 3: 10, 4: 20, 5: 20},
    ),
    (
        # Ending exactly at the shadow time is ending by it. 2 hosts. t=0: J1 starts;
        # J2 needs 2: blocked, shadow 10, extra 0; J3 ends at 0+10 = 10 <= 10:
        # backfilled. t=10: both end, J2 starts.
        [
            (1, 0, 10, 1, 10),  # J1.S0.R10.T1.L10
            (2, 0, 5, 2, 5),  # J2.S0.R5.T2.L5      reserved at 10
            (3, 0, 10, 1, 10),  # J3.S0.R10.T1.L10  ends at the shadow: backfilled
        ],
        2,
        {1: 0, 2: 10, 3: 0},
        {1: 0, 2: 10, 3: 15},
    ),
    (
        # Every running job expected to end by the shadow counts for the extra, ties
        # included. 4 hosts. t=0: J1 (2) and J2 (1) start, free 1, both expected at
        # 10. t=1: J3 needs 3: shadow 10, extra 1+2+1-3 = 1 (counting only the job
        # whose end made it fit would give 0). J4 fits, ends at 101 > 10, 1 <= 1:
        # backfilled. t=10: J1, J2 end, free 3: J3 starts. Strict: t=10, J3 then J4
        # (the new head, 1 free).
        [
            (1, 0, 10, 2, 10),  # J1.S0.R10.T2.L10
            (2, 0, 10, 1, 10),  # J2.S0.R10.T1.L10
            (3, 1, 10, 3, 10),  # J3.S1.R10.T3.L10    reserved at 10
            (4, 1, 100, 1, 100),  # J4.S1.R100.T1.L100  in the extra slot of the tie
        ],
        4,
        {1: 0, 2: 0, 3: 10, 4: 1},
        {1: 0, 2: 0, 3: 10, 4: 10},
    ),
    (
        # A running job past its expected end is expected to end now. 3 hosts.
        # t=0: J1 (asked 10 s, runs 100) and J2 start, free 1. t=20: J3 needs 2;
        # J1's expected end 10 has passed: it is expected now, 20, and frees 1:
        # shadow 20, extra 1+1-2 = 0. J4 fits but ends at 50 > 20 and 1 > 0: waits
        # (had J1 been left out as overdue, J2's end 50 would be the shadow and J4
        # would start). t=50: J2 ends, free 2: J3 starts (free 0). t=60: J3 ends: J4.
        [
            (1, 0, 100, 1, 10),  # J1.S0.R100.T1.L10  runs past its request
            (2, 0, 50, 1, 50),  # J2.S0.R50.T1.L50
            (3, 20, 10, 2, 10),  # J3.S20.R10.T2.L10  reserved from now
            (4, 20, 30, 1, 30),  # J4.S20.R30.T1.L30  would end after the shadow: waits
        ],
        3,
        {1: 0, 2: 0, 3: 50, 4: 60},
        {1: 0, 2: 0, 3: 50, 4: 60},
    ),
    (
        # A job larger than the cluster never starts and blocks nobody. 2 hosts.
        # J1 (3 tasks) is dropped; J2 and J3 start at 0 as if it were not there.
        [
            (1, 0, 10, 3, 10),  # J1.S0.R10.T3.L10   larger than the cluster
            (2, 0, 10, 1, 10),  # J2.S0.R10.T1.L10
            (3, 1, 10, 1, 10),  # J3.S1.R10.T1.L10
        ],
        2,
        {2: 0, 3: 1},
        {2: 0, 3: 1},
    ),
    (
        # A job that ends the instant it starts gives a further round then. 1 host.
        # t=0: J1 (run 0) starts; J2 is blocked (shadow 1, J1's limit). J1 ends at
        # 0: a further round at 0 starts J2.
        [
            (1, 0, 0, 1, 1),  # J1.S0.R0.T1.L1
            (2, 0, 5, 1, 5),  # J2.S0.R5.T1.L5
        ],
        1,
        {1: 0, 2: 0},
        {1: 0, 2: 0},
    ),
]
CASE_IDS = [
    "classic: a small job backfills before the head's shadow time",
    "a job ending after the shadow fits in the extra slots",
    "no extra slot: a job ending after the shadow waits",
    "a job ending after the shadow takes its slots off the extra",
    "ending exactly at the shadow time is ending by it",
    "every job expected to end by the shadow counts, ties included",
    "a job past its expected end is expected to end now",
    "a job larger than the cluster blocks nobody",
    "a job ending the instant it starts gives a further round",
]


@pytest.mark.parametrize(("jobs", "hosts", "easy", "strict"), CASES, ids=CASE_IDS)
def test_easy_by_hand(
    jobs: list[Job], hosts: int, easy: dict[int, int], strict: dict[int, int]
) -> None:
    assert simulate(jobs, hosts) == easy


@pytest.mark.parametrize(("jobs", "hosts", "easy", "strict"), CASES, ids=CASE_IDS)
def test_strict_by_hand(
    jobs: list[Job], hosts: int, easy: dict[int, int], strict: dict[int, int]
) -> None:
    assert simulate(jobs, hosts, strict=True) == strict


def test_greedy_first_fit_would_delay_the_head_easy_does_not() -> None:
    jobs, hosts, easy, _ = CASES[0]
    # Greedy starts J4 at 7 (it fits), holding a host to 27: J2 starts at 27, not 10.
    greedy = naive_fcfs([job[:4] for job in jobs], hosts)
    assert (greedy[2], greedy[4], easy[2]) == (27, 7, 10)


def test_a_run_limit_below_one_second_is_refused() -> None:
    with pytest.raises(ValueError, match="job 1: run limit 0 s is below 1 s"):
        simulate([(1, 0, 0, 1, 0)], 1)


def _check_schedule(jobs: list[Job], hosts: int, starts: dict[int, int]) -> None:
    """Every job that fits the cluster starts, at or after its submission, and the
    slots in use never exceed the cluster."""
    assert set(starts) == {job[0] for job in jobs if job[3] <= hosts}
    events: list[tuple[int, int]] = []
    for jobid, submit, run, tasks, _ in jobs:
        if jobid in starts:
            assert starts[jobid] >= submit
            events += [(starts[jobid] + run, -tasks), (starts[jobid], tasks)]
    in_use = 0
    for _, delta in sorted(events):  # at one instant, ends (negative) first
        in_use += delta
        assert in_use <= hosts


@pytest.mark.parametrize("estimate", ["requested", "exact"])
def test_on_an_sdsc_prefix_the_schedule_is_whole_and_within_the_cluster(estimate: str) -> None:
    trace = read_swf(shared_trace("SDSC-SP2-1998-4.2-cln.swf.gz"))
    workload = map_trace(trace, max_jobs=1500, estimate=estimate)
    jobs = [(j.jobid, j.submit_s, j.run_s, j.tasks, j.run_limit_s or 0) for j in workload.jobs]
    easy = simulate(jobs, workload.hosts)
    strict = simulate(jobs, workload.hosts, strict=True)
    _check_schedule(jobs, workload.hosts, easy)
    _check_schedule(jobs, workload.hosts, strict)
    greedy = naive_fcfs([job[:4] for job in jobs], workload.hosts)
    # Backfilling sits between strict FCFS and greedy first fit in how much it waits.
    waits = [
        sum(result[job[0]] - job[1] for job in jobs) / len(jobs)
        for result in (strict, easy, greedy)
    ]
    assert waits[0] > waits[1]
    assert easy != greedy


# --- the core's EASY and strict against the oracle, job by job -----------------------------


@pytest.mark.parametrize("policy", ["easy", "strict"], ids=["EASY", "strict"])
@pytest.mark.parametrize(
    "trace",
    ["SDSC-SP2-1998-4.2-cln.swf.gz", "KTH-SP2-1996-2.1-cln.swf.gz", "lublin_256.swf"],
    ids=["SDSC-SP2 prefix", "KTH-SP2 prefix", "overloaded Lublin model"],
)
def test_the_core_starts_every_job_when_the_oracle_does(trace: str, policy: str) -> None:
    """On one-slot hosts with plain requests, the core's host-level reservations give
    exactly textbook EASY (and strict order), with requested-time estimates."""
    workload = map_trace(read_swf(shared_trace(trace)), max_jobs=1500)
    result = run_simulation(workload, source="oracle", backfill=BackfillPolicy(policy))
    ours = {r.jobid: r.start_s for r in result.records.values() if r.start_s is not None}
    theirs = simulate(
        [(j.jobid, j.submit_s, j.run_s, j.tasks, j.run_limit_s) for j in workload.jobs],
        workload.hosts,
        strict=policy == "strict",
    )
    assert len(ours) == len(theirs) > 1000
    assert ours == theirs
