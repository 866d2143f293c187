"""The built-in orders (issue 17): each on a hand-made five-job scenario whose order
can be read off, orders that age recomputed from the core's clock, and every order
with incremental rounds and snapshots as exact as ``builtin_fcfs``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xce_core.core import SchedCore
from xce_core.pickers.orders import ORDERS
from xce_core.pickers.sorted import SortedPicker
from xce_core.plugins import JobInfo, PickerConfig
from xce_core.snapshot import load_snapshot, save_snapshot
from xce_schemas import (
    BackfillPolicy,
    BeginRound,
    Decision,
    Dispatch,
    QueueSpec,
    QueueUpdate,
    dump_decision,
)
from xce_schemas.events import QueueUpdatePayload

from tests.builders import NS, ClusterBuilder, Scenario, cluster, job_spec
from tests.core.random_events import apply, operation, run

#: Five jobs on 128 one-slot hosts (all fit): ``(jobid, submit s, tasks, run limit s)``.
#: At the round (100 s) their waits are 100, 90, 80, 70 and 60 s.
FIVE = [(1, 0, 4, 100), (2, 10, 64, 100_000), (3, 20, 8, 10), (4, 30, 2, None), (5, 40, 16, 50)]


def five_jobs(picker: str) -> ClusterBuilder:
    """``FIVE`` under the global picker ``picker``."""
    builder = cluster().hosts_n(128).queue("normal").with_picker(picker)
    for jobid, submit_s, tasks, limit in FIVE:
        builder.job(jobid, submit_s=submit_s, tasks=tasks, run_limit_s=limit)
    return builder


def dispatch_order(scenario: Scenario, at_s: int) -> list[int]:
    """Job ids in the order one round dispatched them."""
    return [jobid for kind, jobid, _ in scenario.round(at_s) if kind == "DISPATCH"]


@pytest.mark.parametrize(
    ("picker", "expected"),
    [
        # FCFS: by submission.
        ("builtin_fcfs", [1, 2, 3, 4, 5]),
        # By run limit 10, 50, 100, 100000; J4 has none: last.
        ("sjf", [3, 5, 1, 2, 4]),
        # By tasks 64, 16, 8, 4, 2 / 2, 4, 8, 16, 64.
        ("largest_first", [2, 5, 3, 1, 4]),
        ("smallest_first", [4, 1, 3, 5, 2]),
        # log10(req) × procs + 870 × log10(submit s after J1's, at least 0.1):
        # J1 8 − 870 = −862; J3 8 + 1131.9 = 1139.9; J2 320 + 870 = 1190;
        # J5 27.2 + 1393.8 = 1421.0; J4 has no run limit: last.
        ("f1", [1, 3, 2, 5, 4]),
        # −(wait / req)³ × procs: J3 −4096, J5 −27.6, J1 −4, J2 −0.00000005; J4 last.
        ("wfp3", [3, 5, 1, 2, 4]),
        # −wait / (max(log2 procs, 1) × req): J3 −2.67, J1 −0.5, J5 −0.3, J2 −0.00015.
        ("unicep", [3, 1, 5, 2, 4]),
    ],
)
def test_each_order_on_five_jobs(picker: str, expected: list[int]) -> None:
    assert dispatch_order(five_jobs(picker).build(), 100) == expected


def test_job_priority_comes_before_the_order_and_queue_priority_before_both() -> None:
    sc = (
        cluster()
        .hosts_n(8)
        .queue("normal", 30)
        .queue("high", 50)
        .with_picker("largest_first")
        .job(1, tasks=4)
        .job(2, tasks=1, priority=5)  # a higher job priority beats more tasks
        .job(3, tasks=2, queue="high")  # a higher queue priority beats both
        .build()
    )
    assert dispatch_order(sc, 1) == [3, 2, 1]


def waiting_pair(picker: str, frees_at_s: int) -> list[int]:
    """A (J1: 2 tasks, 100 s limit, at 1 s) and B (J2: 1 task, 10 s limit, at 90 s)
    wait behind J9, which holds both hosts until ``frees_at_s``: who starts first."""
    sc = (
        cluster()
        .hosts_n(2)
        .queue("normal")
        .with_picker(picker)
        .job(9, tasks=2, submit_s=0, run_limit_s=1000)
        .job(1, tasks=2, submit_s=1, run_limit_s=100)
        .build()
    )
    assert dispatch_order(sc, 1) == [9]  # (it has waited 1 s, J1 none)
    sc.submit(job_spec(2, tasks=1, submit_s=90, run_limit_s=10), at_s=90)
    sc.round(95)
    sc.finish(9, at_s=frees_at_s)
    return dispatch_order(sc, frees_at_s)


@pytest.mark.parametrize(
    ("frees_at_s", "first"),
    # WFP3 at 101 s: A (100/100)³ × 2 = 2 beats B (11/10)³ = 1.33;
    # at 105 s: B (15/10)³ = 3.38 beats A (104/100)³ × 2 = 2.25.
    [(101, [1]), (105, [2])],
)
def test_wfp3_ages_with_the_cores_clock(frees_at_s: int, first: list[int]) -> None:
    assert waiting_pair("wfp3", frees_at_s) == first


def test_an_order_by_run_limit_follows_a_change_of_the_queues_run_limit() -> None:
    # J1 gives no run limit and its queue none: it comes after J2 (500 s) under SJF,
    # until the queue's limit becomes 100 s: then both are held to 100 s, and the
    # tie goes to the earlier submission, J1.
    sc = (
        cluster()
        .hosts_n(1)
        .queue("normal")
        .with_picker("sjf")
        .job(9, submit_s=0, run_limit_s=1)
        .job(1, submit_s=1)
        .job(2, submit_s=2, run_limit_s=500)
        .build()
    )
    assert dispatch_order(sc, 3) == [9]
    spec = QueueSpec(name="normal", priority=30, run_limit_s=100)
    sc.core.push_event(QueueUpdate(ts=4 * NS, payload=QueueUpdatePayload(queue=spec)))
    sc.finish(9, at_s=5)
    assert dispatch_order(sc, 5) == [1]


def test_f1_keeps_its_time_origin_through_a_snapshot() -> None:
    sc = five_jobs("f1").build()
    saved = save_snapshot(sc.core)
    assert saved.picker.state == {"origin_ts": 0}  # J1's submission
    decisions: list[Decision] = []
    copy = load_snapshot(saved.model_dump_json(), on_decision=decisions.append)
    assert save_snapshot(copy).model_dump_json() == saved.model_dump_json()
    copy.push_event(BeginRound(ts=100 * NS))
    assert [d.jobid for d in decisions if isinstance(d, Dispatch)] == [1, 3, 2, 5, 4]


class Reverse(SortedPicker):
    """A third-party order: newest first, written as one method."""

    name = "reverse"

    def order(self, job: JobInfo, now: int) -> Any:
        return -job.submit_ts


def test_a_picker_that_is_only_an_order_gets_the_rest() -> None:
    def make(config: PickerConfig, view: Any) -> Reverse:
        return Reverse(config, view)

    registry = SchedCore(on_decision=lambda d: None).registry
    registry.pickers.factories["reverse"] = make
    sc = cluster().hosts_n(8).queue("normal").with_picker("reverse")
    for jobid in (1, 2, 3):
        sc.job(jobid, submit_s=jobid)
    assert dispatch_order(sc.build(registry=registry), 10) == [3, 2, 1]


@pytest.mark.parametrize("picker", sorted([*ORDERS, "fairshare"]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(operation, min_size=10, max_size=60),
    backfill=st.sampled_from([BackfillPolicy.GREEDY, BackfillPolicy.EASY, BackfillPolicy.STRICT]),
)
def test_every_order_decides_the_same_with_incremental_and_full_rounds(
    picker: str, ops: list[tuple[Any, ...]], backfill: BackfillPolicy
) -> None:
    full = run(ops, check=False, backfill=backfill, incremental=False, picker=picker)
    assert run(ops, check=True, backfill=backfill, picker=picker) == full


@pytest.mark.parametrize("picker", sorted([*ORDERS, "fairshare"]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(operation, min_size=1, max_size=60), data=st.data())
def test_every_order_continues_the_same_from_a_snapshot(
    picker: str, ops: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    from tests.core.random_events import new_core

    split = data.draw(st.integers(0, len(ops)), label="snapshot after this many operations")
    original: list[Decision] = []
    core = new_core(original, picker=picker)
    for step, op in enumerate(ops[:split], start=1):
        apply(core, op, step)
    resumed: list[Decision] = []
    copy = load_snapshot(save_snapshot(core).model_dump_json(), on_decision=resumed.append)
    mark = len(original)
    for step, op in enumerate(ops[split:], start=split + 1):
        assert apply(core, op, step) == apply(copy, op, step)
    assert [dump_decision(d) for d in resumed] == [dump_decision(d) for d in original[mark:]]
