"""The controller-facing contract: subjects, payloads without time, and the core event
each kind becomes at the time the bridge stamps."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from xce_schemas import EVENT_TYPES, dump_event, parse_event
from xce_schemas.controller import (
    CTL_KINDS,
    JobsSubmit,
    ctl_decision_subject,
    ctl_kind_of,
    ctl_subject,
    parse_ctl_payload,
    to_core_event,
)

#: One valid message of every kind, and the event type it becomes.
MESSAGES = {
    "config": ({"config": {"queues": [{"name": "normal"}]}}, "CONFIG_PUSH"),
    "jobs": ({"jobs": [{"jobid": 7, "queue": "normal", "tasks": 2}]}, "JOBS_PUSH"),
    "hosts": ({"hosts": [{"name": "h1", "slots": 4}]}, "WORKERS_PUSH"),
    "resources": ({"resources": [{"name": "lic", "shared": True}]}, "RESOURCES_PUSH"),
    "resvals_full": ({"values": [{"resource": "lic", "value": 3}]}, "RESVALS_FULL"),
    "resvals_delta": ({"values": [{"resource": "lic", "value": 2}]}, "RESVALS_DELTA"),
    "job_state": ({"jobid": 7, "state": "DONE"}, "JOB_STATE_CHANGE"),
    "job_update": ({"jobid": 7, "priority": 5}, "JOB_UPDATE"),
    "queue": ({"queue": {"name": "high", "priority": 50}}, "QUEUE_UPDATE"),
    "job_rusage": ({"jobid": 7, "rusage": [{"resource": "mem", "value": 10}]}, "JOB_RUSAGE"),
}


def test_every_kind_has_a_message_and_every_event_but_begin_round_a_kind() -> None:
    assert set(MESSAGES) == set(CTL_KINDS)
    made = {event_type for _, event_type in MESSAGES.values()}
    assert made == set(EVENT_TYPES) - {"BEGIN_ROUND"}


@pytest.mark.parametrize("kind", list(MESSAGES), ids=list(MESSAGES))
def test_each_kind_becomes_its_core_event_at_the_stamped_time(kind: str) -> None:
    message, event_type = MESSAGES[kind]
    event = to_core_event(kind, parse_ctl_payload(kind, message), 42)
    assert (event.type, event.ts) == (event_type, 42)
    assert parse_event(dump_event(event)) == event
    assert ctl_kind_of(ctl_subject(kind)) == kind


def test_a_submitted_job_gets_the_stamped_time_as_its_submit_time() -> None:
    payload = parse_ctl_payload("jobs", b'{"jobs": [{"jobid": 1, "queue": "q"}]}')
    assert isinstance(payload, JobsSubmit)
    event = to_core_event("jobs", payload, 5)
    assert event.type == "JOBS_PUSH" and event.payload.jobs[0].submit_ts == 5


@pytest.mark.parametrize(
    ("kind", "message", "field"),
    [
        ("jobs", {"jobs": [{"jobid": 1, "queue": "q", "submit_ts": 3}]}, "submit_ts"),
        ("job_state", {"jobid": 1, "state": "DONE", "ts": 3}, "ts"),
        ("jobs", {"jobs": []}, "jobs"),
    ],
    ids=["a job's submit time", "an event time", "no jobs"],
)
def test_the_controller_sends_no_time_and_at_least_one_job(
    kind: str, message: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_ctl_payload(kind, message)
    assert caught.value.errors()[0]["loc"][-1] == field


def test_a_submitted_jobs_run_limit_reaches_the_core_event() -> None:
    payload = parse_ctl_payload(
        "jobs", b'{"jobs": [{"jobid": 1, "queue": "q", "run_limit_s": 3600}]}'
    )
    event = to_core_event("jobs", payload, 5)
    assert event.type == "JOBS_PUSH" and event.payload.jobs[0].run_limit_s == 3600
    update = to_core_event(
        "job_update", parse_ctl_payload("job_update", b'{"jobid": 1, "run_limit_s": 60}'), 6
    )
    assert update.type == "JOB_UPDATE" and update.payload.run_limit_s == 60


@pytest.mark.parametrize(
    ("kind", "message", "where"),
    [
        (
            "jobs",
            {"jobs": [{"jobid": 1, "queue": "q", "run_limit_s": 0}]},
            ("jobs", 0, "run_limit_s"),
        ),
        (
            "jobs",
            {"jobs": [{"jobid": 1, "queue": "q", "run_limit_s": -5}]},
            ("jobs", 0, "run_limit_s"),
        ),
        (
            "jobs",
            {"jobs": [{"jobid": 1, "queue": "q", "run_limit_s": 1.5}]},
            ("jobs", 0, "run_limit_s"),
        ),
        (
            "jobs",
            {"jobs": [{"jobid": 1, "queue": "q", "run_limit_s": "60"}]},
            ("jobs", 0, "run_limit_s"),
        ),
        ("job_update", {"jobid": 1, "run_limit_s": 60.0}, ("run_limit_s",)),
    ],
    ids=["zero", "negative", "fraction", "string", "float in an update"],
)
def test_a_bad_run_limit_is_refused_by_the_controller_contract(
    kind: str, message: dict[str, object], where: tuple[object, ...]
) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_ctl_payload(kind, message)
    assert caught.value.errors()[0]["loc"] == where


def test_subjects() -> None:
    assert ctl_subject("jobs") == "xce.ctl.jobs"
    assert ctl_decision_subject("DISPATCH") == "xce.ctl.decisions.DISPATCH"
    assert ctl_kind_of("xce.ctl.decisions") is None
    assert ctl_kind_of("xce.events.JOBS_PUSH") is None
    with pytest.raises(ValueError, match="not a controller kind"):
        ctl_subject("nosuch")
    with pytest.raises(ValueError, match="not a decision op"):
        ctl_decision_subject("NOPE")
    with pytest.raises(TypeError, match="is not a 'hosts' message"):
        to_core_event("hosts", parse_ctl_payload("job_state", MESSAGES["job_state"][0]), 1)
