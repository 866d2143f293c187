"""A pending reason says what blocks the job, not what was checked first: a job that
can never run gives the same reason on a full cluster as on an idle one (the quick
"fewer free slots than tasks" test, and a queue's slot limit reached, come after what
no load can change)."""

from __future__ import annotations

from typing import Any

import pytest
from xce_schemas import Pend

from tests.builders import NS, ClusterBuilder, Scenario, job_spec


def two_hosts(**queue: Any) -> ClusterBuilder:
    """h1 (4 slots, 8,000 MB, LINUX) and h2 (4 slots, 8,000 MB, AIX); a consumable
    host resource ``gpu`` that no host has, a shared pool ``lic`` of 2; queue
    ``normal``."""
    builder = ClusterBuilder().queue("normal", **queue)
    builder.host("h1", 4, type="LINUX", mem=8000).host("h2", 4, type="AIX", mem=8000)
    return builder


def scenario(builder: ClusterBuilder, full: bool) -> Scenario:
    """The cluster, full (job 100 holds every slot) or idle, after a first round."""
    if full:
        builder = builder.job(100, tasks=8)
    sc = builder.build()
    resources = [
        {"name": "gpu", "consumable": True},
        {"name": "lic", "consumable": True, "shared": True},
    ]
    sc.push({"type": "RESOURCES_PUSH", "ts": 0, "payload": {"resources": resources}})
    values = [{"resource": "lic", "value": 2}]
    sc.push({"type": "RESVALS_DELTA", "ts": 0, "payload": {"values": values}})
    sc.round(0)
    return sc


def reason_of(sc: Scenario, jobid: int, **spec: Any) -> tuple[str, str]:
    """Submit job ``jobid`` at 1 s, run a round, and return its PEND's code and detail."""
    sc.submit(job_spec(jobid, submit_s=1, **spec), at_s=1)
    decided = sc.round(1)
    assert [d[:2] for d in decided] == [("PEND", jobid)], decided
    pend = next(d for d in reversed(sc.decisions) if isinstance(d, Pend) and d.jobid == jobid)
    return pend.reason.main.value, pend.reason.detail


CASES = [
    ({"tasks": 1, "resreq": "select[fast]"}, "NO_HOST_SELECTED"),
    ({"tasks": 2, "resreq": "select[type==SPARC] rusage[mem=10]"}, "NO_HOST_SELECTED"),
    ({"tasks": 1, "resreq": "rusage[gpu=1]"}, "NOT_ENOUGH_RESOURCE"),
    ({"tasks": 1, "resreq": "rusage[mem=9000]"}, "NOT_ENOUGH_RESOURCE"),
    ({"tasks": 6, "resreq": "rusage[mem=3000]"}, "NOT_ENOUGH_RESOURCE"),
    ({"tasks": 5, "resreq": "span[hosts=1]"}, "NOT_ENOUGH_HOSTS_FOR_SPAN"),
    ({"tasks": 6, "resreq": "span[ptile=3] select[type==LINUX]"}, "NOT_ENOUGH_HOSTS_FOR_SPAN"),
    ({"tasks": 5, "resreq": "select[type==LINUX]"}, "NOT_ENOUGH_SLOTS"),
    ({"tasks": 9}, "JOB_LARGER_THAN_CLUSTER"),
    ({"tasks": 2, "resreq": "{span[hosts=1] select[fast]} || {select[fast]}"}, "NO_HOST_SELECTED"),
    ({"tasks": 1, "resreq": "rusage[lic=3]"}, "NOT_ENOUGH_RESOURCE"),
]
IDS = [
    "a select no host passes",
    "a select no host passes, with rusage",
    "rusage of a resource no host has",
    "rusage of more memory than any host has",
    "rusage: memory for 4 tasks of 3,000 MB in all, 6 asked",
    "span[hosts=1] larger than any host",
    "ptile=3 twice on the one LINUX host",
    "more tasks than the selected hosts have slots",
    "more tasks than the cluster has slots",
    "an alternative request none of whose alternatives fits",
    "more of a shared pool than it holds",
]


@pytest.mark.parametrize(("spec", "code"), CASES, ids=IDS)
def test_a_job_that_can_never_run_gives_the_same_reason_full_or_idle(
    spec: dict[str, Any], code: str
) -> None:
    idle = reason_of(scenario(two_hosts(), full=False), 1, **spec)
    full = reason_of(scenario(two_hosts(), full=True), 1, **spec)
    assert idle[0] == code
    assert full == idle


@pytest.mark.parametrize(("spec", "code"), CASES, ids=IDS)
def test_a_queue_slot_limit_reached_does_not_hide_a_job_that_can_never_run(
    spec: dict[str, Any], code: str
) -> None:
    # Job 100 holds 8 of the queue's 9 slots: a job that could run would pend
    # QUEUE_SLOT_LIMIT; this one can never run, and says why.
    limited = reason_of(scenario(two_hosts(max_running=9), full=True), 1, **spec)
    assert limited[0] == code


def test_a_job_that_could_run_pends_for_slots_or_for_the_queue_limit() -> None:
    assert reason_of(scenario(two_hosts(), full=True), 1, tasks=2)[0] == "NOT_ENOUGH_SLOTS"
    held = reason_of(scenario(two_hosts(max_running=9), full=True), 1, tasks=2)
    assert held == ("QUEUE_SLOT_LIMIT", "limit 9 slots")


def test_the_reason_of_a_job_that_never_fits_names_what_is_short() -> None:
    sc = scenario(two_hosts(), full=True)
    assert reason_of(sc, 1, tasks=5, resreq="select[type==LINUX]") == (
        "NOT_ENOUGH_SLOTS",
        "the hosts it can use have 4 slots, it asks for 5",
    )
    sc.submit(job_spec(2, tasks=6, resreq="rusage[mem=3000]", submit_s=1), at_s=1)
    sc.round(1)
    pend = next(d for d in reversed(sc.decisions) if isinstance(d, Pend) and d.jobid == 2)
    assert [r.resource for r in pend.reason.resources] == ["mem"]
    assert pend.reason.detail == "the hosts it can use hold the reservations of 4 of 6 tasks"


def test_an_alternative_that_can_never_fit_does_not_name_the_reason() -> None:
    """span[hosts=1] for 6 tasks never fits hosts of 4; span[ptile=3] waits for slots:
    the job pends for slots (and could preempt), not for the impossible shape."""
    sc = scenario(two_hosts(), full=True)
    spec = {"tasks": 6, "resreq": "{span[hosts=1]} || {span[ptile=3]}"}
    assert reason_of(sc, 1, **spec)[0] == "NOT_ENOUGH_SLOTS"
    idle = scenario(two_hosts(), full=False)
    idle.submit(job_spec(1, submit_s=1, **spec), at_s=1)
    assert idle.round(1) == [("DISPATCH", 1, ("h1", "h2"))]


def test_a_preemptor_whose_first_alternative_never_fits_still_preempts() -> None:
    sc = (
        ClusterBuilder()
        .queue("urgent", priority=100, preemptible_queues=("normal",))
        .queue("normal", priority=30, preemptible=True)
        .host("h1", 4)
        .host("h2", 4)
        .job(100, tasks=8, priority=1)
        .build()
    )
    sc.round(0)
    spec = {"queue": "urgent", "priority": 10, "tasks": 6}
    sc.submit(job_spec(1, resreq="{span[hosts=1]} || {span[ptile=3]}", submit_s=1, **spec), at_s=1)
    assert sc.round(1) == [("PREEMPT", 1, (100,)), ("PEND", 1, "PREEMPT_WAIT")]


@pytest.mark.parametrize(
    ("spec", "change", "before", "after"),
    [
        (
            {"tasks": 2, "resreq": "select[type==SPARC]"},
            {
                "type": "WORKERS_PUSH",
                "payload": {"hosts": [{"name": "s1", "slots": 1, "type": "SPARC"}]},
            },
            "NO_HOST_SELECTED",
            "NOT_ENOUGH_SLOTS",
        ),
        (
            {"tasks": 5, "resreq": "span[hosts=1]"},
            {
                "type": "WORKERS_PUSH",
                "payload": {"hosts": [{"name": "h1", "slots": 8, "max_mem_mb": 8000}]},
            },
            "NOT_ENOUGH_HOSTS_FOR_SPAN",
            "NOT_ENOUGH_SLOTS",
        ),
        (
            {"tasks": 1, "resreq": "rusage[gpu=1]"},
            {
                "type": "RESVALS_DELTA",
                "payload": {"values": [{"resource": "gpu", "host": "h2", "value": 2}]},
            },
            "NOT_ENOUGH_RESOURCE",
            "NOT_ENOUGH_SLOTS",
        ),
    ],
    ids=["a SPARC host of 1 slot comes", "h1 grows to 8 slots", "h2 is given 2 gpus"],
)
def test_what_never_fitted_is_looked_at_again_when_the_hosts_change(
    spec: dict[str, Any], change: dict[str, Any], before: str, after: str
) -> None:
    """The core remembers a request that can never fit while the hosts and resource
    values keep their shape; a change of either is looked at at the next round."""
    sc = scenario(two_hosts(), full=True)
    assert reason_of(sc, 1, **spec)[0] == before
    assert sc.round(2) == []  # remembered: nothing changed
    sc.push({"ts": 3 * NS, **change})
    assert sc.round(3) == [("PEND", 1, after)]  # could run once job 100 ends


def test_a_select_on_load_values_is_looked_at_every_round() -> None:
    builder = two_hosts().job(100, tasks=4, resreq="select[hname=='h1']")
    sc = scenario(builder.job(101, tasks=4, resreq="select[hname=='h2']"), full=False)
    # No host has 3 free slots: nothing passes the select.
    assert reason_of(sc, 1, tasks=6, resreq="select[slots>=3]")[0] == "NO_HOST_SELECTED"
    sc.finish(101, at_s=2)
    # h2 passes now, and alone could never hold 6 tasks.
    assert sc.round(2) == [("PEND", 1, "NOT_ENOUGH_SLOTS")]
