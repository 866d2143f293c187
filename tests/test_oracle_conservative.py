"""The conservative and hybrid backfilling oracle (``benchmarks/naive_conservative.py``)
on cases worked out by hand.

Each job is ``(jobid, submit_s, run_s, tasks, run_limit_s)`` on one-slot hosts; its
label gives its shape, ``J<jobid>.S<submit>.R<run>.T<tasks>.L<limit>``, and its
comment its role. Every expected start time and first prediction is derived in the
comments, round by round, from the rules in the oracle's docstring. A profile is
written ``[t0:f0, t1:f1, ...]``: f0 slots free from t0 until t1, and so on, the last
value forever. With depth 1 the oracle must be textbook EASY, which is checked
against ``benchmarks/naive_easy.py`` (itself checked by hand in
``test_oracle_easy.py``) on its hand cases, on trace prefixes and on random
workloads.
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xce_driver.workloads.mapping import map_trace
from xce_driver.workloads.swf import read_swf

from benchmarks.naive_conservative import Job, simulate
from benchmarks.naive_easy import simulate as naive_easy
from benchmarks.naive_fcfs import simulate as naive_fcfs
from tests.driver.conftest import shared_trace
from tests.test_oracle_easy import CASE_IDS as EASY_CASE_IDS
from tests.test_oracle_easy import CASES as EASY_CASES
from tests.test_oracle_easy import _check_schedule

# The three-host case: J3 is blocked behind J1 and J2; J4 comes later.
THREE_HOSTS: list[Job] = [
    (1, 0, 100, 1, 100),  # J1.S0.R100.T1.L100
    (2, 0, 200, 2, 200),  # J2.S0.R200.T2.L200
    (3, 10, 1000, 2, 1000),  # J3.S10.R1000.T2.L1000   blocked: reserved at 200
    (4, 20, 500, 1, 500),  # J4.S20.R500.T1.L500      fits in J1's slot from 100
]

# A job EASY backfills but which delays the second blocked job.
EASY_DELAYS_THE_SECOND: list[Job] = [
    (1, 0, 10, 3, 10),  # J1.S0.R10.T3.L10
    (2, 1, 10, 2, 10),  # J2.S1.R10.T2.L10       first blocked: reserved at 10
    (3, 1, 10, 4, 10),  # J3.S1.R10.T4.L10       second blocked: reserved at 20
    (4, 2, 100, 1, 100),  # J4.S2.R100.T1.L100   EASY's extra slot, J3's slot at 20
]

# A job that fits past two reservations but not past the third.
DEPTH_TWO_LETS_IT_PASS: list[Job] = [
    (1, 0, 10, 2, 10),  # J1.S0.R10.T2.L10
    (2, 1, 10, 3, 10),  # J2.S1.R10.T3.L10       reserved at 10
    (3, 1, 10, 3, 10),  # J3.S1.R10.T3.L10       reserved at 20
    (4, 1, 10, 4, 10),  # J4.S1.R10.T4.L10       the third blocked job: at 30, or none
    (5, 1, 100, 1, 100),  # J5.S1.R100.T1.L100   fits beside J2 and J3, not J4
]

# (jobs, hosts, depth, starts, first predictions)
CASES: list[tuple[list[Job], int, int | None, dict[int, int], dict[int, int]]] = [
    (
        # Conservative. t=0: J1 and J2 start, free 0: [0:0, 100:1, 200:3].
        # t=10: J3 (2 slots for 1000 s): 0 at 10, 1 from 100, 3 from 200: earliest fit
        # 200, reserved [200, 1200): [10:0, 100:1, 200:1, 1200:3]; prediction 200.
        # t=20: J3 again at 200. J4 (1 slot for 500 s): 0 at 20; from 100, [100, 600)
        # has 1, 1: earliest fit 100, reserved; prediction 100.
        # t=100: J1 ends, free 1: [100:1, 200:3]. J3: 1 < 2 at 100, reserved at 200:
        # [100:1, 200:1, 1200:3]. J4 fits now, [100, 600) holds 1, and 1 slot is free:
        # starts at 100. t=200: J2 ends, free 2: J3 starts.
        THREE_HOSTS,
        3,
        None,
        {1: 0, 2: 0, 3: 200, 4: 100},
        {3: 200, 4: 100},
    ),
    (
        # The same with depth 1 (EASY): at t=20 J3 takes the one reservation, J4 does
        # not fit now (free 0) and may not reserve: no prediction. t=100: free 1, J3
        # reserves at 200 ([100:1, 200:1, 1200:3]); J4 fits now: starts at 100 (EASY:
        # shadow 200, extra 1+2-2 = 1, J4 ends at 600 > 200 but 1 <= 1). t=200: J3.
        THREE_HOSTS,
        3,
        1,
        {1: 0, 2: 0, 3: 200, 4: 100},
        {3: 200},
    ),
    (
        # Conservative. 4 hosts. t=0: J1 starts, free 1: [0:1, 10:4].
        # t=1: J2 (2): earliest fit 10, reserved [10, 20): [1:1, 10:2, 20:4]; J3 (4):
        # earliest 20, reserved [20, 30): [1:1, 10:2, 20:0, 30:4].
        # t=2: J2 at 10, J3 at 20 again. J4 (1 for 100 s): [2, 102) meets 0 at 20;
        # after that piece, from 30: 4. Reserved at 30; prediction 30.
        # t=10: J1 ends, free 4: [10:4]. J2 fits: starts, [10:2, 20:4]. J3 reserved at
        # 20: [10:2, 20:0, 30:4]. J4: [10, 110) meets 0 at 20: at 30 again.
        # t=20: J2 ends, free 4: J3 starts. J4: at 30. t=30: J3 ends: J4 starts.
        EASY_DELAYS_THE_SECOND,
        4,
        None,
        {1: 0, 2: 10, 3: 20, 4: 30},
        {2: 10, 3: 20, 4: 30},
    ),
    (
        # Depth 1 (EASY). t=1: J2 reserves at 10 (shadow 10, extra 1+3-2 = 2); J3
        # neither fits nor reserves. t=2: J2 at 10 again: [2:1, 10:2, 20:4]. J4 fits
        # over [2, 102) (1, 2, 4) and 1 slot is free: starts (EASY: 1 <= extra 2).
        # t=10: J1 ends, free 3 (J4 holds 1): [10:3, 102:4]. J2 fits: starts,
        # [10:1, 20:3, 102:4]. J3 (4): earliest fit 102 (J4's expected end),
        # reserved; prediction 102. t=20: J2 ends, J3 at 102 again. t=102: J4 ends:
        # J3 starts, 82 s later than under conservative, for J4.
        EASY_DELAYS_THE_SECOND,
        4,
        1,
        {1: 0, 2: 10, 3: 102, 4: 2},
        {2: 10, 3: 102},
    ),
    (
        # Hybrid, depth 2. 4 hosts. t=0: J1 starts, free 2: [0:2, 10:4].
        # t=1: J2 (3): earliest 10, reserved: [1:2, 10:1, 20:4]. J3 (3): 1 at 10,
        # earliest 20, reserved: [1:2, 10:1, 20:1, 30:4]. J4 (4): earliest 30, but
        # two jobs have reserved: neither. J5 (1 for 100 s): [1, 101) holds 2, 1, 1,
        # 4: starts at 1 (free 1): [1:1, 10:0, 20:0, 30:3, 101:4].
        # t=10: J1 ends, free 3: [10:3, 101:4]. J2 fits: starts, [10:0, 20:3, 101:4].
        # J3: earliest 20, reserved. J4: depth used up, neither.
        # t=20: J2 ends, free 3: J3 starts: [20:0, 30:3, 101:4]. J4 (4): earliest
        # 101, reserved (the first of this round); prediction 101.
        # t=30: J3 ends; J4 at 101 again. t=101: J5 ends, free 4: J4 starts.
        DEPTH_TWO_LETS_IT_PASS,
        4,
        2,
        {1: 0, 2: 10, 3: 20, 4: 101, 5: 1},
        {2: 10, 3: 20, 4: 101},
    ),
    (
        # Conservative. t=1: J2 at 10, J3 at 20 as above; J4 (4): earliest 30,
        # reserved [30, 40): [1:2, 10:1, 20:1, 30:0, 40:4]. J5: [1, 101) meets 0 at 30:
        # earliest 40, reserved; prediction 40.
        # t=10: J1 ends, free 4: J2 starts, [10:1, 20:4]; J3 at 20, J4 at 30, J5 at 40.
        # t=20: J3 starts; t=30: J4 starts; t=40: J5 starts, 39 s later than with
        # depth 2, where J4 started 71 s later.
        DEPTH_TWO_LETS_IT_PASS,
        4,
        None,
        {1: 0, 2: 10, 3: 20, 4: 30, 5: 40},
        {2: 10, 3: 20, 4: 30, 5: 40},
    ),
    (
        # The fit must hold over the whole run limit, not only at its start.
        # 2 hosts, conservative. t=0: J1 and J2 start, free 0: [0:0, 10:1, 30:2].
        # t=1: J3 (2): earliest 30, reserved: [1:0, 10:1, 30:0, 40:2]. J4 (1 for
        # 25 s): from 10, [10, 35) meets 0 at 30: too short a hole; earliest 40,
        # reserved: [1:0, 10:1, 30:0, 40:1, 65:2]. J5 (1 for 20 s): from 10, [10, 30)
        # holds 1 (ending where J3's reservation begins): earliest 10, reserved.
        # t=10: J1 ends, free 1: [10:1, 30:2]. J3 at 30: [10:1, 30:0, 40:2]. J4 at 40.
        # J5 fits now over [10, 30): starts. t=30: J2 and J5 end: J3 starts. t=40: J4.
        [
            (1, 0, 10, 1, 10),  # J1.S0.R10.T1.L10
            (2, 0, 30, 1, 30),  # J2.S0.R30.T1.L30
            (3, 1, 10, 2, 10),  # J3.S1.R10.T2.L10   reserved at 30
            (4, 1, 25, 1, 25),  # J4.S1.R25.T1.L25   the hole [10, 30) is too short
            (5, 1, 20, 1, 20),  # J5.S1.R20.T1.L20   fills the hole exactly
        ],
        2,
        None,
        {1: 0, 2: 0, 3: 30, 4: 40, 5: 10},
        {3: 30, 4: 40, 5: 10},
    ),
    (
        # A job past its run limit is expected to end now: its slots count on the
        # profile from now, but a job starts only in slots really free. 3 hosts,
        # conservative. t=0: J1 (asks 10 s, runs 100) and J2 start, free 1.
        # t=20: J1 is past its limit: [20:2, 50:3]. J3 (2): earliest fit now, but 1 slot
        # is free: it reserves at 20 ([20:0, 30:2, 50:3]); prediction 20. J4 (1 for
        # 30 s): earliest 30, reserved; prediction 30.
        # t=50: J2 ends, free 2: [50:3] (J1 still counted from now). J3 fits, 2 free:
        # starts, [50:1, 60:3], free 0. J4 fits over [50, 80) on the profile, but no
        # slot is free: reserves at 50 (its prediction stays 30).
        # t=60: J3 ends, free 2: J4 starts. Both start after their predictions: J1
        # overran its limit. (EASY gives the same starts.)
        [
            (1, 0, 100, 1, 10),  # J1.S0.R100.T1.L10  runs past its limit
            (2, 0, 50, 1, 50),  # J2.S0.R50.T1.L50
            (3, 20, 10, 2, 10),  # J3.S20.R10.T2.L10  reserved from now
            (4, 20, 30, 1, 30),  # J4.S20.R30.T1.L30
        ],
        3,
        None,
        {1: 0, 2: 0, 3: 50, 4: 60},
        {3: 20, 4: 30},
    ),
    (
        # A prediction is the first reservation's start, kept when a job ends early.
        # 1 host, conservative. t=0: J1 (asks 100 s, runs 10) starts: [0:0, 100:1].
        # t=1: J2 reserved at 100 ([1:0, 100:0, 105:1]); prediction 100. t=2: J2 at
        # 100; J3 at 105; prediction 105. t=10: J1 ends, free 1: J2 starts ([10:0,
        # 15:1]); J3 reserved at 15 (prediction stays 105). t=15: J2 ends: J3 starts.
        [
            (1, 0, 10, 1, 100),  # J1.S0.R10.T1.L100  ends 90 s early
            (2, 1, 5, 1, 5),  # J2.S1.R5.T1.L5        predicted 100, starts at 10
            (3, 2, 5, 1, 5),  # J3.S2.R5.T1.L5        predicted 105, starts at 15
        ],
        1,
        None,
        {1: 0, 2: 10, 3: 15},
        {2: 100, 3: 105},
    ),
    (
        # A job larger than the cluster never starts, blocks nobody, never reserves;
        # a job that ends the instant it starts gives a further round then. 1 host,
        # conservative. t=0: J1 dropped. J2 (run 0) starts: [0:0, 1:1]; J3 reserved at
        # 1 (J2's limit); prediction 1. J2 ends at 0: a further round at 0, free 1:
        # J3 starts at 0.
        [
            (1, 0, 10, 2, 10),  # J1.S0.R10.T2.L10   larger than the cluster
            (2, 0, 0, 1, 1),  # J2.S0.R0.T1.L1      ends the instant it starts
            (3, 0, 5, 1, 5),  # J3.S0.R5.T1.L5
        ],
        1,
        None,
        {2: 0, 3: 0},
        {3: 1},
    ),
]
CASE_IDS = [
    "three hosts: conservative",
    "three hosts: depth 1",
    "EASY's backfill would delay the second blocked job: conservative",
    "EASY's backfill would delay the second blocked job: depth 1",
    "a job passes two reservations: depth 2",
    "the third reservation stops it: conservative",
    "the fit holds over the whole run limit",
    "a job past its limit counts on the profile, not in the free slots",
    "the first prediction is kept when a job ends early",
    "a job larger than the cluster; a job ending the instant it starts",
]


@pytest.mark.parametrize(("jobs", "hosts", "depth", "starts", "predictions"), CASES, ids=CASE_IDS)
def test_by_hand(
    jobs: list[Job],
    hosts: int,
    depth: int | None,
    starts: dict[int, int],
    predictions: dict[int, int],
) -> None:
    assert simulate(jobs, hosts, depth=depth) == (starts, predictions)


def test_depth_two_and_conservative_differ_and_depth_three_is_conservative() -> None:
    # In the case above, only J4 and J5 move: J5 passes J4 with depth 2 (1 vs 40),
    # J4 waits for it (101 vs 30). A third reservation is all conservative makes.
    hybrid, _ = simulate(DEPTH_TWO_LETS_IT_PASS, 4, depth=2)
    conservative, _ = simulate(DEPTH_TWO_LETS_IT_PASS, 4)
    assert {j: (hybrid[j], conservative[j]) for j in hybrid if hybrid[j] != conservative[j]} == {
        4: (101, 30),
        5: (1, 40),
    }
    assert simulate(DEPTH_TWO_LETS_IT_PASS, 4, depth=3) == simulate(DEPTH_TWO_LETS_IT_PASS, 4)


def test_easy_backfills_a_job_conservative_holds_back() -> None:
    jobs = EASY_DELAYS_THE_SECOND
    easy = naive_easy(jobs, 4)
    conservative, _ = simulate(jobs, 4)
    # EASY starts J4 at 2 into its extra slot; J3 then waits for J4 until 102.
    assert (easy[4], easy[3]) == (2, 102)
    assert (conservative[4], conservative[3]) == (30, 20)


@pytest.mark.parametrize(("jobs", "hosts", "easy", "strict"), EASY_CASES, ids=EASY_CASE_IDS)
def test_depth_one_gives_easy_on_its_hand_cases(
    jobs: list[Job], hosts: int, easy: dict[int, int], strict: dict[int, int]
) -> None:
    assert simulate(jobs, hosts, depth=1)[0] == easy


def test_a_run_limit_below_one_second_is_refused() -> None:
    with pytest.raises(ValueError, match="job 1: run limit 0 s is below 1 s"):
        simulate([(1, 0, 0, 1, 0)], 1)


def test_a_negative_depth_is_refused() -> None:
    with pytest.raises(ValueError, match="reservation depth -1 is below 0"):
        simulate([(1, 0, 1, 1, 1)], 1, depth=-1)


# --- whole schedules: trace prefixes and random workloads ------------------------------------


@cache
def _prefix(trace: str, estimate: str) -> tuple[list[Job], int]:
    """The first 1,500 jobs of a shared trace as oracle jobs, and its host count."""
    workload = map_trace(read_swf(shared_trace(trace)), max_jobs=1500, estimate=estimate)
    jobs = [(j.jobid, j.submit_s, j.run_s, j.tasks, j.run_limit_s or 0) for j in workload.jobs]
    return jobs, workload.hosts


@pytest.mark.parametrize("estimate", ["requested", "exact"])
@pytest.mark.parametrize(
    "trace",
    ["SDSC-SP2-1998-4.2-cln.swf.gz", "KTH-SP2-1996-2.1-cln.swf.gz"],
    ids=["SDSC-SP2 prefix", "KTH-SP2 prefix"],
)
def test_on_trace_prefixes_depth_one_is_easy_and_conservative_is_whole(
    trace: str, estimate: str
) -> None:
    jobs, hosts = _prefix(trace, estimate)
    easy = naive_easy(jobs, hosts)
    assert len(easy) > 1000
    assert simulate(jobs, hosts, depth=1)[0] == easy
    assert simulate(jobs, hosts, depth=0)[0] == naive_fcfs([job[:4] for job in jobs], hosts)
    conservative, predictions = simulate(jobs, hosts)
    hybrid, _ = simulate(jobs, hosts, depth=4)
    for starts in (conservative, hybrid):
        _check_schedule(jobs, hosts, starts)
        assert starts != easy
    assert conservative != hybrid
    assert all(predictions[j] >= submit for j, submit, *_ in jobs if j in predictions)
    if estimate == "exact":
        # Exact limits (a run of 0 s asks for 1 s: it only ends early) delay nobody.
        assert all(conservative[j] <= predictions[j] for j in predictions)


JOBS = st.lists(
    st.tuples(
        st.integers(0, 30),  # submit
        st.integers(0, 20),  # run
        st.integers(1, 5),  # tasks (5 may exceed the cluster)
        st.integers(-10, 10),  # limit - run: under, over or exact
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(JOBS, st.integers(1, 4), st.sampled_from([None, 0, 1, 2, 3]))
def test_random_schedules_are_whole_and_within_the_cluster(
    raw: list[tuple[int, int, int, int]], hosts: int, depth: int | None
) -> None:
    jobs = [(n, s, r, t, max(r + d, 1)) for n, (s, r, t, d) in enumerate(raw, 1)]
    starts, predictions = simulate(jobs, hosts, depth=depth)
    _check_schedule(jobs, hosts, starts)
    submits = {job[0]: job[1] for job in jobs}
    assert all(predictions[j] >= submits[j] for j in predictions)
    if depth == 1:
        assert starts == naive_easy(jobs, hosts)
    if depth is not None and depth >= len(jobs):
        assert (starts, predictions) == simulate(jobs, hosts)


@settings(max_examples=200, deadline=None)
@given(JOBS, st.integers(1, 4))
def test_with_exact_limits_conservative_starts_no_job_after_its_prediction(
    raw: list[tuple[int, int, int, int]], hosts: int
) -> None:
    jobs = [(n, s, max(r, 1), t, max(r, 1)) for n, (s, r, t, _) in enumerate(raw, 1)]
    starts, predictions = simulate(jobs, hosts)
    _check_schedule(jobs, hosts, starts)
    assert all(starts[j] <= predictions[j] for j in predictions)
