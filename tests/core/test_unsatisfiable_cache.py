"""The session's unsatisfiable-request cache (Req 7)."""

from __future__ import annotations

from xce_schemas import Pend

from tests.builders import cluster


def test_a_hit_pends_a_job_of_the_same_shape_with_the_same_reason() -> None:
    sc = (
        cluster()
        .hosts_n(4, slots=8)
        .queue("normal")
        .job(1, tasks=64, resreq="select[maxmem>=0]")  # C64: never fits on 32 slots
        .job(2, tasks=64, resreq="select[maxmem>=0]", submit_s=1)  # C64: a hit
        .build()
    )
    assert sc.round(2) == [
        ("PEND", 1, "JOB_LARGER_THAN_CLUSTER"),
        ("PEND", 2, "JOB_LARGER_THAN_CLUSTER"),
    ]
    assert sc.core.cache_hits == 1


def test_a_one_task_job_is_never_pended_by_a_64_task_entry() -> None:
    sc = (
        cluster()
        .hosts_n(4, slots=8)
        .queue("normal")
        .job(1, tasks=20, resreq="select[maxmem>=0] rusage[mem=0]")  # fits
        .job(2, tasks=64, resreq="select[maxmem>=0] rusage[mem=0]", submit_s=1)  # cached
        .job(3, tasks=1, resreq="select[maxmem>=0] rusage[mem=0]", submit_s=2)  # same request
        .build()
    )
    decided = sc.round(3)
    assert decided[1] == ("PEND", 2, "JOB_LARGER_THAN_CLUSTER")
    assert decided[2][0:2] == ("DISPATCH", 3)
    assert sc.core.cache_hits == 0


def test_the_cache_is_per_user_queue_and_session() -> None:
    sc = (
        cluster()
        .hosts_n(2, slots=2)
        .queue("normal")
        .queue("other")
        .job(1, tasks=4)  # fills the cluster
        .job(2, tasks=2, submit_s=1)  # short: cached
        .job(3, tasks=2, submit_s=2)  # a hit
        .job(4, tasks=2, submit_s=3, user="u2")  # another user: no hit
        .job(5, tasks=2, submit_s=4, queue="other")  # another queue: no hit
        .build()
    )
    sc.round(5)
    assert sc.core.cache_hits == 1
    sc.finish(1, at_s=6)
    assert sc.round(6)[:2] == [("DISPATCH", 2, ("h1",)), ("DISPATCH", 3, ("h2",))]  # cleared
    pends = [d for d in sc.decisions if isinstance(d, Pend) and d.jobid == 3]
    assert pends[0].reason.main.value == "NOT_ENOUGH_SLOTS"
