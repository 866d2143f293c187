"""Start-time prediction (issue 15 item 5): ``SchedCore.expected_start`` gives a pending
job's reservation from the last session, ``SchedCore.no_expected_start`` says why a
pending job has none.

Scenarios run on one-slot hosts; each job's label gives its shape,
``J<jobid>.T<tasks>.L<run limit s>`` (``L-``: no run limit), and its comment its role.
"""

from __future__ import annotations

import pytest
from xce_core.alloc.outcome import Reservation
from xce_core.prediction import NoEstimateCode
from xce_core.snapshot import load_snapshot, save_snapshot
from xce_core.state import Preemption
from xce_schemas import BackfillPolicy

from tests.builders import NS, Scenario, cluster, job_spec
from tests.core.test_snapshot import fingerprint


def blocked_behind(
    policy: BackfillPolicy, *, head_limit_s: int | None = 100, **config: object
) -> Scenario:
    """4 hosts. t=0: J1.T4 starts (run limit ``head_limit_s``). t=10: J2.T4 and
    J3.T2 (L50 each) arrive and pend: nothing is free until J1 ends."""
    sc = (
        cluster()
        .hosts_n(4)
        .configure(backfill=policy, **config)
        .job(1, tasks=4, run_limit_s=head_limit_s)  # running
        .build()
    )
    assert sc.round(0) == [("DISPATCH", 1, ("h1", "h2", "h3", "h4"))]
    sc.submit(
        job_spec(2, tasks=4, run_limit_s=50, submit_s=10),  # blocked first
        job_spec(3, tasks=2, run_limit_s=50, submit_s=10),  # blocked second
        at_s=10,
    )
    # Under strict J3 waits behind J2 whatever is free.
    third = "ORDER_BLOCKED" if policy is BackfillPolicy.STRICT else "NOT_ENOUGH_SLOTS"
    assert sc.round(10) == [("PEND", 2, "NOT_ENOUGH_SLOTS"), ("PEND", 3, third)]
    return sc


def why(sc: Scenario, jobid: int) -> NoEstimateCode | None:
    estimate = sc.core.no_expected_start(jobid)
    return None if estimate is None else estimate.code


def test_easy_predicts_the_blocked_head_from_the_running_jobs_run_limit() -> None:
    sc = blocked_behind(BackfillPolicy.EASY)
    # J1 started at 0 with a 100 s limit: J2 is expected at 100 s on all four hosts,
    # until 150 s (its own 50 s limit), from one running job's expected end.
    assert sc.core.expected_start(2) == Reservation(
        2, 100 * NS, 150 * NS, (("h1", 1), ("h2", 1), ("h3", 1), ("h4", 1)), running=1
    )
    assert sc.core.no_expected_start(2) is None
    # EASY reserves for one job: J3 gets no prediction, and the core says why.
    assert sc.core.expected_start(3) is None
    estimate = sc.core.no_expected_start(3)
    assert estimate is not None
    assert (estimate.code, estimate.policy.name, estimate.policy.depth, estimate.ahead) == (
        NoEstimateCode.BEYOND_DEPTH,
        BackfillPolicy.EASY,
        1,
        (2,),  # the job whose reservation used the depth
    )
    # A running job has neither.
    assert (sc.core.expected_start(1), sc.core.no_expected_start(1)) == (None, None)


@pytest.mark.parametrize(
    ("policy", "config", "expected"),
    [
        (BackfillPolicy.GREEDY, {}, {2: NoEstimateCode.GREEDY, 3: NoEstimateCode.GREEDY}),
        (BackfillPolicy.STRICT, {}, {2: None, 3: NoEstimateCode.BEYOND_DEPTH}),
        (BackfillPolicy.EASY, {}, {2: None, 3: NoEstimateCode.BEYOND_DEPTH}),
        (BackfillPolicy.HYBRID, {"reservation_depth": 2}, {2: None, 3: None}),
        (BackfillPolicy.CONSERVATIVE, {}, {2: None, 3: None}),
    ],
    ids=[
        "greedy reserves for nobody",
        "strict reserves for the head; the next is held behind it",
        "easy reserves for the head only",
        "hybrid with depth 2 reserves for both",
        "conservative reserves for every blocked job",
    ],
)
def test_which_blocked_jobs_get_a_prediction_under_each_policy(
    policy: BackfillPolicy, config: dict[str, object], expected: dict[int, NoEstimateCode | None]
) -> None:
    sc = blocked_behind(policy, **config)
    assert {jobid: why(sc, jobid) for jobid in (2, 3)} == expected
    predicted = {jobid for jobid, code in expected.items() if code is None}
    assert {j for j in (2, 3) if sc.core.expected_start(j) is not None} == predicted
    if 3 in predicted:  # J3.T2 fits beside nothing until J2's window ends at 150 s
        reservation = sc.core.expected_start(3)
        assert reservation is not None and reservation.start_ts == 150 * NS


def test_a_job_behind_one_with_no_run_limit_gets_no_instant_and_that_survives_a_snapshot() -> None:
    # J1.T4.L- runs with no run limit: when its hosts free is not known, so the
    # planner finds no instant for J2 (the try EASY makes), and J3 is beyond the
    # depth that try used.
    sc = blocked_behind(BackfillPolicy.EASY, head_limit_s=None)
    assert (sc.core.expected_start(2), sc.core.expected_start(3)) == (None, None)
    assert (why(sc, 2), why(sc, 3)) == (NoEstimateCode.NO_INSTANT, NoEstimateCode.BEYOND_DEPTH)
    assert sc.core.state.unplanned == (2,)
    saved = save_snapshot(sc.core)
    assert saved.model_dump(mode="json")["unplanned"] == [2]
    loaded = load_snapshot(saved.model_dump_json(), on_decision=lambda d: None)
    assert save_snapshot(loaded).model_dump_json() == saved.model_dump_json()
    assert fingerprint(loaded) == fingerprint(sc.core)
    assert loaded.no_expected_start(2) == sc.core.no_expected_start(2)


def test_a_snapshot_with_nothing_unplanned_leaves_the_field_out() -> None:
    sc = blocked_behind(BackfillPolicy.EASY)
    assert "unplanned" not in save_snapshot(sc.core).model_dump(mode="json")


def test_a_job_its_queue_holds_is_not_planned_for() -> None:
    # The queue runs at most 2 slots: J1.T2.L100 runs on 2 of 4 hosts, J2.T1.L50
    # fits the free hosts but the queue holds it; EASY's depth is not used.
    sc = (
        cluster()
        .hosts_n(4)
        .queue("normal", max_running=2)
        .configure(backfill=BackfillPolicy.EASY)
        .job(1, tasks=2, run_limit_s=100)  # running
        .job(2, tasks=1, run_limit_s=50, submit_s=10)  # held by the queue's slot limit
        .build()
    )
    assert sc.round(10) == [("DISPATCH", 1, ("h1", "h2")), ("PEND", 2, "QUEUE_SLOT_LIMIT")]
    assert sc.core.expected_start(2) is None
    assert why(sc, 2) is NoEstimateCode.NOT_PLANNED


def test_a_queue_that_overrides_the_policy_counts_its_own_depth() -> None:
    # Global greedy; queue "bf" uses easy. J1.T4.L100 starts at 10 s; J2.T4 (normal)
    # and J3.T4 (bf) pend: J2 under greedy, J3 gets bf's one reservation, at 110 s.
    sc = (
        cluster()
        .hosts_n(4)
        .queue("normal")
        .queue("bf", backfill=BackfillPolicy.EASY)
        .job(1, tasks=4, run_limit_s=100)  # running
        .job(2, tasks=4, run_limit_s=50, submit_s=10)  # greedy: no prediction
        .job(3, tasks=4, run_limit_s=50, submit_s=10, queue="bf")  # reserved at 110 s
        .job(4, tasks=1, run_limit_s=50, submit_s=10, queue="bf")  # beyond bf's depth
        .build()
    )
    sc.round(10)
    assert why(sc, 2) is NoEstimateCode.GREEDY
    reservation = sc.core.expected_start(3)
    assert reservation is not None and reservation.start_ts == 110 * NS
    estimate = sc.core.no_expected_start(4)
    assert estimate is not None
    assert (estimate.code, estimate.policy.domain) == (NoEstimateCode.BEYOND_DEPTH, "bf")


def test_a_job_no_round_has_considered_has_neither() -> None:
    sc = blocked_behind(BackfillPolicy.EASY)
    sc.submit(job_spec(5, tasks=1, run_limit_s=10, submit_s=20), at_s=20)
    assert (sc.core.expected_start(5), sc.core.no_expected_start(5)) == (None, None)
    assert (sc.core.expected_start(99), sc.core.no_expected_start(99)) == (None, None)


def test_room_owed_to_a_preemptor_does_not_use_up_the_policys_depth() -> None:
    # As above, J2 is held by its queue (EASY's depth unused). Room owed to a
    # preemptor (its suspended victims' room) is reserved outside the depth: a
    # reservation of J3, pending with a preemption in flight, does not make J2
    # "not the one job easy reserves for". (The state is set by hand: which
    # sessions hold owed room is the backfill book's business.)
    sc = (
        cluster()
        .hosts_n(4)
        .queue("normal", max_running=2)
        .configure(backfill=BackfillPolicy.EASY)
        .job(1, tasks=2, run_limit_s=100)  # running
        .job(2, tasks=1, run_limit_s=50, submit_s=10)  # held by the queue's slot limit
        .job(3, tasks=1, run_limit_s=50, submit_s=10)  # a preemptor, by hand
        .build()
    )
    sc.round(10)
    state = sc.core.state
    state.preemptions[3] = Preemption(3, (1,), state.sessions)
    state.reservations[3] = Reservation(3, 10 * NS, 60 * NS, (("h1", 1),))
    assert why(sc, 2) is NoEstimateCode.NOT_PLANNED
    del state.preemptions[3]  # the same reservation made by the policy uses the depth
    assert why(sc, 2) is NoEstimateCode.BEYOND_DEPTH
