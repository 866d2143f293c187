"""Corners of backfilling where a blocked job must hold the queue, or must not.

* A job whose queue may preempt, when no victim helps, is a blocked job like any
  other: it gets its reservation (``easy``) or holds back the jobs behind it
  (``strict``). The session once reserved only when the preemption plan was the
  very ``FINAL`` object, and the preemptor returned an equal new one.
* A job that could not run were every running job gone (it needs more slots than
  the hosts that take jobs have: the others are down or closed) waits for no
  running job: it holds nobody back, and does not take the reservation a job that
  can start once room frees needs.
"""

from __future__ import annotations

import pytest
from xce_schemas import BackfillPolicy

from tests.builders import NS, cluster, job_spec

POLICIES = ["easy", "strict", "hybrid", "conservative"]


def _policy(name: str) -> dict[str, object]:
    depth = {"reservation_depth": 1} if name == "hybrid" else {}
    return {"backfill": BackfillPolicy(name), **depth}


@pytest.mark.parametrize(
    ("backfill", "n2"),
    [
        ("easy", ("PEND", 3, "RESERVED")),
        ("strict", ("PEND", 3, "ORDER_BLOCKED")),
        ("hybrid", ("PEND", 3, "RESERVED")),
        ("conservative", ("PEND", 3, "RESERVED")),
    ],
    ids=[
        "easy: U is predicted at 100, N2 would delay it",
        "strict: N2 waits behind U",
        "hybrid 1: as easy",
        "conservative: as easy",
    ],
)
def test_a_job_whose_queue_may_preempt_reserves_when_no_victim_helps(
    backfill: str, n2: tuple[str, int, str]
) -> None:
    sc = (
        cluster()
        .host("h1", slots=2)
        .host("h2", slots=2)
        .queue("normal", priority=30)
        .queue("urgent", priority=50, preemptible_queues=("standby",))
        .queue("standby", priority=10, preemptible=True)
        .configure(**_policy(backfill))
        .job(1, tasks=2, run_limit_s=100)  # N1.T2.L100  one host until 100
        .build()
    )
    assert sc.round(0) == [("DISPATCH", 1, ("h1",))]
    sc.submit(
        job_spec(2, queue="urgent", tasks=4, run_limit_s=100, submit_s=1),  # U.T4  both hosts
        job_spec(3, tasks=2, run_limit_s=1000, submit_s=1),  # N2.T2.L1000  would take h2
        at_s=1,
    )
    assert sc.round(1) == [("PEND", 2, "NOT_ENOUGH_SLOTS"), n2]
    if backfill != "strict":
        reservation = sc.core.expected_start(2)
        assert reservation is not None and reservation.start_ts == 100 * NS
    sc.finish(1, at_s=100)
    assert sc.round(100)[0] == ("DISPATCH", 2, ("h1", "h2"))


@pytest.mark.parametrize("backfill", POLICIES)
def test_a_job_that_needs_hosts_that_are_down_holds_nobody_back(backfill: str) -> None:
    sc = (
        cluster()
        .hosts_n(4)
        .host("h5", status="unavail")
        .configure(**_policy(backfill))
        .job(1, tasks=3, run_limit_s=100)  # J1.T3.L100  h1-h3 until 100
        .build()
    )
    sc.round(0)
    sc.submit(
        job_spec(2, tasks=5, run_limit_s=10, submit_s=1),  # J2.T5  only 4 hosts take jobs
        job_spec(3, tasks=4, run_limit_s=10, submit_s=1),  # J3.T4.L10  can start at 100
        job_spec(4, tasks=1, run_limit_s=1000, submit_s=1),  # J4.T1.L1000  would delay J3
        at_s=1,
    )
    j4 = ("PEND", 4, "ORDER_BLOCKED" if backfill == "strict" else "RESERVED")
    assert sc.round(1) == [("PEND", 2, "NOT_ENOUGH_SLOTS"), ("PEND", 3, "NOT_ENOUGH_SLOTS"), j4]
    assert 2 not in sc.core.state.reservations and 2 not in sc.core.state.unplanned
    assert sc.core.state.reservations[3].start_ts == 100 * NS
    sc.finish(1, at_s=100)
    assert sc.round(100)[0] == ("DISPATCH", 3, ("h1", "h2", "h3", "h4"))


def test_under_strict_a_job_that_can_never_run_says_so_behind_a_blocked_one() -> None:
    """Not ``ORDER_BLOCKED`` ("a job ahead of it cannot start"): its own reason, at
    once, so its controller can reject it (it was told only when its turn came)."""
    sc = (
        cluster()
        .hosts_n(4)
        .configure(backfill=BackfillPolicy.STRICT)
        .job(1, tasks=2, run_limit_s=100)  # J1.T2.L100  h1-h2 until 100
        .build()
    )
    sc.round(0)
    sc.submit(
        job_spec(2, tasks=4, run_limit_s=10, submit_s=1),  # J2.T4  blocked: holds the queue
        job_spec(3, tasks=9, submit_s=1),  # J3.T9  larger than the cluster
        job_spec(4, resreq="select[hname==elsewhere]", submit_s=1),  # J4  no host selected
        job_spec(5, tasks=1, submit_s=1),  # J5.T1  held back behind J2
        at_s=1,
    )
    assert sc.round(1) == [
        ("PEND", 2, "NOT_ENOUGH_SLOTS"),
        ("PEND", 3, "JOB_LARGER_THAN_CLUSTER"),
        ("PEND", 4, "NO_HOST_SELECTED"),
        ("PEND", 5, "ORDER_BLOCKED"),
    ]
