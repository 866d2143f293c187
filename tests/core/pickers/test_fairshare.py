"""The ``fairshare`` picker (issue 17): usage charged from running slots and decayed
exactly in virtual time, Slurm's classic factor and LSF's hierarchical dynamic
priority, usage that converges to the shares, no capacity held back, and usage
kept over a configuration push."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xce_core.pickers.fairshare import FairShare
from xce_driver.simulate import run_simulation
from xce_driver.workloads.mapping import MappedWorkload, SimJob
from xce_schemas import FairShareConfig, FairShareFormula, QueueSpec

from tests.builders import ClusterBuilder, Scenario, cluster, job_spec


def fair(builder: ClusterBuilder, **fields: Any) -> ClusterBuilder:
    """``builder`` under the ``fairshare`` picker configured with ``fields``."""
    return builder.with_picker("fairshare").configure(fairshare=FairShareConfig(**fields))


def dispatched(scenario: Scenario, at_s: int) -> list[int]:
    return [jobid for kind, jobid, _ in scenario.round(at_s) if kind == "DISPATCH"]


def test_usage_is_charged_from_running_slots_and_decays_with_the_half_life() -> None:
    # User a runs 2 slots for one half-life (3,600 s): its usage is
    # 2 × (1 − 1/2) / λ slot-s, λ = ln 2 / 3,600 s; one more half-life idle halves it.
    sc = fair(cluster().hosts_n(2).queue("normal"), half_life_s=3600)
    sc = sc.job(1, tasks=2, user="a").build()
    assert dispatched(sc, 0) == [1]
    sc.finish(1, at_s=3600)
    sc.submit(job_spec(2, tasks=3, user="a", submit_s=3600), at_s=3600)
    picker = sc.core.picker
    assert isinstance(picker, FairShare)
    job = sc.core.state.jobs[2]
    expected = 3600 / math.log(2)
    assert picker.factors(job)["user_usage_slot_s"] == pytest.approx(expected, rel=1e-12)
    sc.round(7200)  # (the clock moves to 7,200 s)
    assert picker.factors(job)["user_usage_slot_s"] == pytest.approx(expected / 2, rel=1e-12)
    # a is the only user known: all the usage is its own, its share is 1, and its
    # factor 2^(−1/1).
    factors = picker.factors(job)
    assert factors["normalised_usage"] == pytest.approx(1.0)
    assert factors["fairshare_factor"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("picker", "first"),
    [("builtin_fcfs", 2), ("fairshare", 3)],
    ids=["FCFS: a's older job", "fair share: b, who has used nothing"],
)
def test_the_user_who_used_less_goes_first(picker: str, first: int) -> None:
    sc = (
        cluster()
        .hosts_n(1)
        .queue("normal")
        .with_picker(picker)
        .job(1, user="a", submit_s=0)
        .job(2, user="a", submit_s=10)
        .job(3, user="b", submit_s=20)
        .build()
    )
    assert dispatched(sc, 20) == [1]
    sc.finish(1, at_s=100)
    assert dispatched(sc, 100) == [first]


@pytest.mark.parametrize(
    ("projects", "first"),
    # After p1/u1 ran 10 h, LSF's dynamic priority (HIST_HOURS 5): p1's decayed
    # run time is (1 − 0.01) × 18,000 / ln 10 s = 2.15 h, so p1 has
    # shares / (2.15 × 0.7 + 1 × 3) and p2 shares / (0 + 3).
    [({}, 3), ({"p1": 3}, 2)],
    ids=["equal project shares: p2, which used nothing", "p1 holds 3 shares: 0.67 beats 0.33"],
)
def test_lsf_orders_by_the_projects_dynamic_priority_then_the_users(
    projects: dict[str, int], first: int
) -> None:
    sc = fair(cluster().hosts_n(1).queue("normal"), formula=FairShareFormula.LSF, projects=projects)
    sc = (
        sc.job(1, user="u1", project="p1", submit_s=0)
        .job(2, user="u1", project="p1", submit_s=10)
        .job(3, user="u2", project="p2", submit_s=20)
        .build()
    )
    assert dispatched(sc, 20) == [1]
    sc.finish(1, at_s=36_000)
    assert dispatched(sc, 36_000) == [first]


def test_usage_survives_a_configuration_push_of_the_same_picker() -> None:
    sc = (
        fair(cluster().hosts_n(1).queue("normal"))
        .job(1, user="a", submit_s=0)
        .job(2, user="a", submit_s=10)
        .job(3, user="b", submit_s=20)
        .build()
    )
    assert dispatched(sc, 20) == [1]
    config = sc.core.state.config
    sc.core.push_event({"type": "CONFIG_PUSH", "ts": 50 * 10**9, "payload": {"config": config}})
    sc.finish(1, at_s=100)
    assert dispatched(sc, 100) == [3]  # b still first: a's usage was kept


def two_users(a_jobs: list[int], b_jobs: list[int], hosts: int) -> MappedWorkload:
    """Users a and b submit one-task jobs of these run times (s) at 0 s, a first."""
    jobs = [SimJob(i + 1, 0, run, 1, "normal", "a") for i, run in enumerate(a_jobs)]
    jobs += [SimJob(len(a_jobs) + i + 1, 0, run, 1, "normal", "b") for i, run in enumerate(b_jobs)]
    return MappedWorkload(tuple(jobs), {}, hosts, 1, 0, {"normal": 30})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    hosts=st.integers(2, 6),
    shares=st.sampled_from([(1, 1), (3, 1), (1, 2)]),
    runs=st.lists(st.integers(10, 200), min_size=200, max_size=200),
)
def test_usage_converges_to_the_shares_while_both_users_have_work(
    hosts: int, shares: tuple[int, int], runs: list[int]
) -> None:
    """User a floods the queue with 150 jobs, user b submits 50: while b still has
    work (until its last job starts), each host that frees goes to the user further
    below its share, so their slot-seconds stay in the ratio of their shares. The
    tolerance: a choice is revisited only when a job ends, so a user can lead by at
    most one job per host (``hosts × longest run``), plus the jobs running at the cut
    (as much again)."""
    config = FairShareConfig(users={"a": shares[0], "b": shares[1]}, half_life_s=10**9)
    workload = two_users(runs[:150], runs[150:], hosts)
    result = run_simulation(workload, source="two users", policy="fairshare", fairshare=config)
    records = result.records.values()
    cut = max(r.start_s for r in records if r.jobid > 150 and r.start_s is not None)
    used = {"a": 0, "b": 0}
    for r in records:
        if r.start_s is not None and r.start_s < cut:
            user = "a" if r.jobid <= 150 else "b"
            used[user] += min(r.end_s or cut, cut) - r.start_s
    share_a = shares[0] / sum(shares)
    total = used["a"] + used["b"]
    tolerance = 2 * hosts * max(runs)
    assert abs(used["a"] - share_a * total) <= tolerance


def test_a_user_alone_gets_the_whole_cluster() -> None:
    # b has nothing to run: a's jobs take every host at once (no idle room is held).
    workload = two_users([100] * 12, [], 4)
    result = run_simulation(workload, source="one user", policy="fairshare")
    starts = sorted(r.start_s for r in result.records.values() if r.start_s is not None)
    assert starts == [0] * 4 + [100] * 4 + [200] * 4


def test_a_queues_own_fair_share_follows_its_jobs_to_their_end() -> None:
    """Served as a queue's own picker, fair share still hears when the jobs it
    dispatched end (its queue's picker is told), so every job's queue being served
    by ``fairshare`` decides as ``fairshare`` as the global picker does."""
    runs = [(30 + 17 * i) % 200 + 10 for i in range(60)]
    workload = two_users(runs[:40], runs[40:], 3)
    config = FairShareConfig(users={"a": 1, "b": 2})
    own = QueueSpec(name="normal", priority=30, job_pick_plugin="fairshare")
    under_sjf = run_simulation(
        workload, source="w", policy="sjf", queues=(own,), fairshare=config
    ).records
    global_ = run_simulation(workload, source="w", policy="fairshare", fairshare=config).records
    assert [(r.jobid, r.start_s) for r in under_sjf.values()] == [
        (r.jobid, r.start_s) for r in global_.values()
    ]


def test_lsf_charges_the_cpu_time_job_rusage_reports() -> None:
    # Two projects of equal shares, each running a one-slot job: p1's for 58 s, p2's
    # for 98 s, so by run time alone p1 has used less; but p1's job reports 3,600 s
    # of CPU time, and cpu_time × CPU_TIME_FACTOR (0.7 h) outweighs the 40 s of run
    # time: p2's waiting job goes first.
    sc = fair(cluster().hosts_n(2).queue("normal"), formula=FairShareFormula.LSF)
    sc = (
        sc.job(1, user="u1", project="p1")
        .job(2, user="u2", project="p2")
        .job(3, user="u1", project="p1", submit_s=1)
        .job(4, user="u2", project="p2", submit_s=2)
        .build()
    )
    assert dispatched(sc, 2) == [1, 2]
    rusage = {"jobid": 1, "rusage": [{"resource": "cpu_time", "value": 3600.0}]}
    sc.core.push_event({"type": "JOB_RUSAGE", "ts": 50 * 10**9, "payload": rusage})
    picker = sc.core.picker
    assert isinstance(picker, FairShare)
    waiting = sc.core.state.jobs[3]
    assert picker.factors(waiting)["user_cpu_time_s"] == pytest.approx(3600, rel=1e-3)
    sc.finish(1, at_s=60)
    sc.finish(2, at_s=100)
    assert dispatched(sc, 100) == [4, 3]  # without the CPU time: [3, 4]
