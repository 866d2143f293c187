"""Queue and job readiness: status, run windows, slot limits, each with its reason."""

from __future__ import annotations

import pytest
from xce_core.errors import EventError
from xce_core.snapshot import save_snapshot
from xce_schemas import JobState, JobUpdate, Pend, QueueSpec, QueueStatus, QueueUpdate
from xce_schemas.events import JobUpdatePayload, QueueUpdatePayload

from tests.builders import NS, Scenario, cluster, job_spec

HOUR = 3600
#: 1970-01-04 was a Sunday: day 3 of the epoch.
SUNDAY = 3 * 24 * HOUR


def update_queue(sc: Scenario, spec: QueueSpec, at_s: int) -> None:
    sc.now_s = at_s
    sc.push(QueueUpdate(ts=at_s * NS, payload=QueueUpdatePayload(queue=spec)))


def test_an_inactive_queue_holds_every_job_with_its_own_reason_until_activated() -> None:
    sc = (
        cluster()
        .hosts_n(2, slots=4)
        .queue("night", priority=40, active=False)
        .queue("normal")
        .job(1, queue="night")
        .job(2, queue="night")
        .job(3)
        .build()
    )
    assert sc.round(1) == [
        ("PEND", 1, "QUEUE_INACTIVE"),
        ("PEND", 2, "QUEUE_INACTIVE"),
        ("DISPATCH", 3, ("h1",)),
    ]
    assert sc.round(2) == []  # the reason did not change: no new PEND
    update_queue(sc, QueueSpec(name="night", priority=40), at_s=3)
    assert [d[:2] for d in sc.round(3)] == [("DISPATCH", 1), ("DISPATCH", 2)]


def test_run_windows_open_and_close_in_virtual_time() -> None:
    sc = cluster().hosts_n(1, slots=4).queue("day", run_windows=("8:00-18:00",)).build()
    sc.submit(job_spec(1, queue="day", submit_s=7 * HOUR), at_s=7 * HOUR)
    assert sc.round(7 * HOUR) == [("PEND", 1, "QUEUE_WINDOW")]
    pend = sc.decisions[-1]
    assert isinstance(pend, Pend) and pend.reason.detail == "8:00-18:00"
    assert sc.round(8 * HOUR) == [("DISPATCH", 1, ("h1",))]
    sc.submit(job_spec(2, queue="day", submit_s=18 * HOUR), at_s=18 * HOUR)
    assert sc.round(18 * HOUR) == [("PEND", 2, "QUEUE_WINDOW")]  # the end is exclusive


def test_a_weekly_window_from_friday_evening_to_monday_morning() -> None:
    sc = cluster().hosts_n(1, slots=8).queue("weekend", run_windows=("5:19:00-1:8:30",)).build()
    friday_noon = SUNDAY + 5 * 24 * HOUR + 12 * HOUR
    sc.submit(job_spec(1, queue="weekend", submit_s=friday_noon), at_s=friday_noon)
    assert sc.round(friday_noon) == [("PEND", 1, "QUEUE_WINDOW")]
    sunday_night = SUNDAY + 7 * 24 * HOUR + 23 * HOUR  # the next Sunday
    assert sc.round(sunday_night)[0][:2] == ("DISPATCH", 1)
    monday_nine = SUNDAY + 8 * 24 * HOUR + 9 * HOUR
    sc.submit(job_spec(2, queue="weekend", submit_s=monday_nine), at_s=monday_nine)
    assert sc.round(monday_nine) == [("PEND", 2, "QUEUE_WINDOW")]


def test_the_queue_slot_limit_counts_running_slots() -> None:
    sc = (
        cluster()
        .hosts_n(4, slots=4)
        .queue("capped", max_running=4)
        .job(1, queue="capped", tasks=2)
        .job(2, queue="capped", tasks=2)
        .job(3, queue="capped", tasks=2)
        .build()
    )
    assert sc.round(1) == [
        ("DISPATCH", 1, ("h1",)),
        ("DISPATCH", 2, ("h1",)),
        ("PEND", 3, "QUEUE_SLOT_LIMIT"),
    ]
    sc.finish(1, at_s=2)
    assert sc.round(2) == [("DISPATCH", 3, ("h1",))]
    assert sc.core.state.queue_slots == {"capped": 4}


def test_the_per_user_slot_limit_is_per_user_and_queue() -> None:
    sc = (
        cluster()
        .hosts_n(4, slots=4)
        .queue("shared", user_slot_limit=2)
        .queue("normal")
        .job(1, queue="shared", tasks=2, user="ann")
        .job(2, queue="shared", user="ann")
        .job(3, queue="shared", user="bob")
        .job(4, queue="normal", tasks=4, user="ann")
        .build()
    )
    decided = sc.round(1)
    assert ("PEND", 2, "QUEUE_USER_SLOT_LIMIT") in decided
    assert [d[:2] for d in decided if d[0] == "DISPATCH"] == [
        ("DISPATCH", 1),
        ("DISPATCH", 3),
        ("DISPATCH", 4),
    ]


def test_suspended_jobs_free_their_queue_slots_and_moving_a_job_moves_its_count() -> None:
    sc = (
        cluster()
        .hosts_n(2, slots=4)
        .queue("a", max_running=4)
        .queue("b")
        .job(1, queue="a", tasks=4)
        .build()
    )
    sc.round(1)
    assert sc.core.state.queue_slots == {"a": 4}
    sc.push(JobUpdate(ts=2 * NS, payload=JobUpdatePayload(jobid=1, queue="b")))
    assert sc.core.state.queue_slots == {"b": 4}
    sc.state_change(1, JobState.SUSP, at_s=3)
    assert sc.core.state.queue_slots == {}


def test_a_closed_queue_refuses_new_jobs_but_dispatches_those_it_has() -> None:
    sc = cluster().hosts_n(1, slots=4).queue("q").queue("other").job(1, queue="q").build()
    update_queue(sc, QueueSpec(name="q", priority=30, status=QueueStatus.CLOSED), at_s=1)
    before = save_snapshot(sc.core).model_dump_json()
    with pytest.raises(EventError, match=r"jobs\[1\]\.queue: queue 'q' is closed to new jobs"):
        sc.submit(job_spec(2, queue="other"), job_spec(3, queue="q"), at_s=2)
    assert save_snapshot(sc.core).model_dump_json() == before  # nothing accepted
    sc.submit(job_spec(4, queue="other"), at_s=2)
    with pytest.raises(EventError, match=r"payload\.queue: queue 'q' is closed"):
        sc.push(JobUpdate(ts=2 * NS, payload=JobUpdatePayload(jobid=4, queue="q")))
    assert [d[:2] for d in sc.round(3)] == [("DISPATCH", 1), ("DISPATCH", 4)]


def test_a_limited_queue_does_not_preempt_past_its_limit() -> None:
    sc = (
        cluster()
        .queue("urgent", priority=100, preemptible_queues=("normal",), max_running=1)
        .queue("normal", preemptible=True)
        .hosts_n(2, slots=1)
        .job(1, queue="urgent", priority=5)
        .job(2, queue="normal")
        .build()
    )
    sc.round(1)
    sc.submit(job_spec(3, queue="urgent", priority=5), at_s=2)
    assert sc.round(2) == [("PEND", 3, "QUEUE_SLOT_LIMIT")]
