"""The wire contract: JSON Schema files in step with the models, strict validation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from xce_schemas import (
    EVENT_TYPES,
    JOB_ALLOC_ADAPTER,
    Alloc,
    Dispatch,
    HostAlloc,
    JobAlloc,
    NewSession,
    PendingReason,
    decision_fields,
    dump_decision,
    dump_event,
    parse_decision,
    parse_event,
    parse_job_alloc,
    parse_recording_line,
)
from xce_schemas.errors import describe
from xce_schemas.export import schema_texts

JSON_DIR = Path(__file__).resolve().parents[2] / "schemas" / "json"

EXAMPLES = {
    "CONFIG_PUSH": {
        "config": {
            "job_pick_plugin": "builtin_fcfs",
            "queues": [{"name": "normal", "priority": 30}],
        }
    },
    "JOBS_PUSH": {"jobs": [{"jobid": 1, "queue": "normal", "tasks": 4, "submit_ts": 5}]},
    "WORKERS_PUSH": {"hosts": [{"name": "h1", "slots": 8, "status": "ok"}]},
    "RESOURCES_PUSH": {"resources": [{"name": "mem", "value_type": "numeric"}]},
    "RESVALS_FULL": {"values": [{"resource": "mem", "host": "h1", "value": 4000}]},
    "RESVALS_DELTA": {"values": [{"resource": "mem", "host": "h1", "value": 3500.5}]},
    "JOB_STATE_CHANGE": {"jobid": 1, "state": "DONE"},
    "JOB_UPDATE": {"jobid": 1, "priority": 5},
    "QUEUE_UPDATE": {"queue": {"name": "high", "priority": 50}},
    "JOB_RUSAGE": {"jobid": 1, "rusage": [{"resource": "mem", "value": 100}]},
    "BEGIN_ROUND": {},
}


def test_committed_json_schemas_match_the_models() -> None:
    texts = schema_texts()
    committed = {p.name: p.read_text() for p in JSON_DIR.glob("*.json")}
    assert committed == texts, "schemas/json drifted: run python -m xce_schemas.export"


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_every_event_type_round_trips(event_type: str) -> None:
    event = parse_event({"type": event_type, "ts": 10**18, "payload": EXAMPLES[event_type]})
    assert event.type == event_type and event.ts == 10**18
    assert parse_event(dump_event(event)) == event
    assert parse_recording_line(dump_event(event)) == event


def test_eleven_event_types_in_spec_order() -> None:
    assert EVENT_TYPES[0] == "CONFIG_PUSH" and EVENT_TYPES[-1] == "BEGIN_ROUND"
    assert len(EVENT_TYPES) == 11 == len(set(EVENT_TYPES))


def test_alloc_from_is_written_as_from_and_read_back() -> None:
    alloc = Alloc(name="slots", value=2.0, from_=1_700_000_000, instid=3)
    job_alloc = JobAlloc(jobid=1, hosts=(HostAlloc(host="h1", allocs=(alloc,)),))
    text = JOB_ALLOC_ADAPTER.dump_json(job_alloc)
    assert b'"from":1700000000' in text and b"from_" not in text
    assert JOB_ALLOC_ADAPTER.validate_json(text) == job_alloc


def test_alloc_records_are_validated_at_the_boundary() -> None:
    # Plain objects inside the process; read from JSON, every field is checked.
    good = {"name": "slots", "value": 1, "from": 5, "instid": 1}
    parsed = parse_job_alloc({"jobid": 7, "hosts": [{"host": "h1", "allocs": [good]}]})
    assert parsed.hosts[0].allocs[0] == Alloc(name="slots", value=1.0, from_=5, instid=1)
    assert isinstance(parsed.hosts, tuple) and isinstance(parsed.hosts[0].allocs, tuple)
    for bad, field in (
        ({**good, "instid": -1}, "hosts.0.allocs.0.instid"),
        ({**good, "name": ""}, "hosts.0.allocs.0.name"),
        ({**good, "bogus": 1}, "hosts.0.allocs.0.bogus"),
        ({**good, "instid": "7"}, "hosts.0.allocs.0.instid"),
        ({**good, "reserve": "yes"}, "hosts.0.allocs.0.reserve"),
        ({**good, "value": "1"}, "hosts.0.allocs.0.value"),
        ({**good, "from": 5.0}, "hosts.0.allocs.0.from"),
    ):
        with pytest.raises(ValidationError) as caught:
            parse_job_alloc({"jobid": 7, "hosts": [{"host": "h1", "allocs": [bad]}]})
        assert caught.value.errors()[0]["loc"] == tuple(
            int(part) if part.isdigit() else part for part in field.split(".")
        )
    with pytest.raises(ValidationError):
        parse_decision(
            {
                "op": "DISPATCH",
                "ts": 1,
                "jobid": 7,
                "alloc": {"jobid": 7, "hosts": [{"host": "", "allocs": []}]},
            }
        )


def test_decisions_are_validated_at_the_boundary() -> None:
    # Plain objects inside the process; read from JSON, every field is checked.
    assert parse_decision({"op": "NEW_SESSION", "ts": 5, "session": 1}) == NewSession(
        ts=5, session=1
    )
    for bad, where in (
        ({"op": "NEW_SESSION", "ts": 5, "session": 0}, ("NEW_SESSION", "session")),
        ({"op": "RESUME", "ts": "5", "jobid": 1}, ("RESUME", "ts")),
        (
            {"op": "PEND", "ts": 5, "jobid": 1, "reason": {"main": "NOPE"}},
            ("PEND", "reason", "main"),
        ),
        (
            {"op": "PREEMPT", "ts": 5, "preempting_jobid": 1, "victim_jobids": []},
            ("PREEMPT", "victim_jobids"),
        ),
        ({"op": "RESUME", "ts": 5, "jobid": 1, "extra": 1}, ("RESUME", "extra")),
    ):
        with pytest.raises(ValidationError) as caught:
            parse_decision(bad)
        assert caught.value.errors()[0]["loc"] == where


def test_decision_and_recording_lines_parse() -> None:
    alloc = parse_job_alloc(
        {
            "jobid": 7,
            "hosts": [
                {"host": "h1", "allocs": [{"name": "slots", "value": 1.0, "from": 5, "instid": 1}]}
            ],
        }
    )
    decision = Dispatch(ts=5 * 10**9, jobid=7, alloc=alloc)
    assert parse_decision(decision_fields(decision)) == decision
    line = parse_recording_line(
        b'{"type":"DECISION","ts":5000000000,"payload":' + dump_decision(decision) + b"}"
    )
    assert line.payload == decision  # type: ignore[union-attr]
    header = parse_recording_line(
        '{"type":"HEADER","version":"1.0","config_hash":"sha256:'
        + "0" * 64
        + '","start_ts":0,"start_wall":"2026-01-01T00:00:00Z"}'
    )
    assert header.type == "HEADER"
    assert alloc.slots_by_host() == {"h1": 1}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (
            {
                "type": "JOBS_PUSH",
                "ts": 1,
                "payload": {"jobs": [{"jobid": -1, "queue": "q", "submit_ts": 0}]},
            },
            "jobid",
        ),
        (
            {
                "type": "JOB_STATE_CHANGE",
                "ts": 1,
                "payload": {"jobid": 1, "state": "DONE", "why": "x"},
            },
            "why",
        ),
        ({"type": "BEGIN_ROUND", "ts": 2**64, "payload": {}}, "ts"),
        ({"type": "WORKERS_PUSH", "ts": 1, "payload": {"hosts": []}}, "hosts"),
    ],
    ids=["negative jobid", "unknown field", "ts beyond 64 bits", "empty host list"],
)
def test_invalid_events_name_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_event(data)
    assert field in str(info.value)


def test_models_are_frozen() -> None:
    reason = PendingReason(main="NOT_ENOUGH_SLOTS")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        reason.main = "NO_HOSTS"  # type: ignore[assignment]
    assert hash(reason) == hash(PendingReason(main="NOT_ENOUGH_SLOTS"))  # type: ignore[arg-type]


def test_records_decisions_and_events_hash_and_compare_by_value() -> None:
    # The plain classes keep the frozen models' contract: equal values, equal hashes.
    def alloc() -> JobAlloc:
        return parse_job_alloc(
            {
                "jobid": 7,
                "hosts": [
                    {
                        "host": "h1",
                        "allocs": [{"name": "slots", "value": 1.0, "from": 5, "instid": 1}],
                    }
                ],
            }
        )

    one, two = Dispatch(ts=5, jobid=7, alloc=alloc()), Dispatch(ts=5, jobid=7, alloc=alloc())
    assert one is not two and one == two and hash(one) == hash(two)
    assert len({one, two, Dispatch(ts=6, jobid=7, alloc=alloc())}) == 2
    for event_type, payload in EXAMPLES.items():
        event = parse_event({"type": event_type, "ts": 1, "payload": payload})
        again = parse_event({"type": event_type, "ts": 1, "payload": payload})
        assert event == again and hash(event) == hash(again), event_type


@pytest.mark.parametrize(
    ("parse", "data", "said"),
    [
        (
            parse_job_alloc,
            {
                "jobid": 1,
                "hosts": [
                    {
                        "host": "h1",
                        "allocs": [
                            {"name": "slots", "value": 1, "from": 5, "instid": 1, "size": 2}
                        ],
                    }
                ],
            },
            "hosts[0].allocs[0].size: Extra inputs are not permitted",
        ),
        (
            parse_decision,
            {"op": "RESUME", "ts": 5, "jobid": 1, "why": 9},
            "RESUME.why: Extra inputs are not permitted",
        ),
        (
            parse_event,
            {"type": "BEGIN_ROUND", "ts": 5, "payload": {}, "why": 1},
            "BEGIN_ROUND.why: Extra inputs are not permitted",
        ),
    ],
    ids=["record", "decision", "event"],
)
def test_an_unknown_field_is_said_alike_in_every_wire_type(
    parse: Callable[[object], object], data: dict[str, object], said: str
) -> None:
    # Dataclasses report "Unexpected keyword argument"; users see the models' words.
    with pytest.raises(ValidationError) as caught:
        parse(data)
    assert describe(caught.value) == said


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (
            {"type": "JOBS_PUSH", "ts": 1, "payload": {"jobs": []}},
            "payload.jobs: List should have at least 1 item, not 0",
        ),
        (
            {"type": "JOBS_PUSH", "ts": 1, "payload": {"jobs": "abc"}},
            "payload.jobs: Input should be a valid list",
        ),
        (
            {"type": "WORKERS_PUSH", "ts": 1, "payload": {"hosts": []}},
            "payload.hosts: List should have at least 1 item, not 0",
        ),
        (
            {"type": "JOBS_PUSH", "ts": 1, "payload": "abc"},
            "payload: Input should be a valid dictionary",
        ),
    ],
    ids=[
        "an empty job list",
        "jobs that are not a list",
        "an empty host list",
        "a payload that is not an object",
    ],
)
def test_sequences_and_objects_are_said_as_json_writes_them(
    data: dict[str, Any], said: str
) -> None:
    """A sequence is a JSON array on the wire: its errors say "list", not the tuple
    pydantic holds it in, nor "after validation"; an object is a dictionary, not an
    instance of the class that holds it inside."""
    with pytest.raises(ValidationError) as caught:
        parse_event(data)
    assert describe(caught.value, skip=1) == said
