"""The message-bus contract: subjects, decision message ids, dead letters."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from xce_schemas import DECISION_OPS, EVENT_TYPES, DeadLetter
from xce_schemas.bus import (
    DEADLETTER_DATA_MAX,
    deadletter_subject,
    decision_msg_id,
    decision_subject,
    event_subject,
    event_type_of,
    parse_decision_msg_id,
    parse_record_msg_id,
    record_msg_id,
    record_subject,
)


def test_every_event_type_has_a_subject_that_names_it_back() -> None:
    for event_type in EVENT_TYPES:
        assert event_type_of(event_subject(event_type)) == event_type
    assert event_subject("BEGIN_ROUND") == "xce.events.BEGIN_ROUND"
    assert decision_subject("DISPATCH") == "xce.decisions.DISPATCH"
    assert {decision_subject(op) for op in DECISION_OPS} == {
        f"xce.decisions.{op}" for op in DECISION_OPS
    }
    assert deadletter_subject("core") == "xce.deadletter.core"


@pytest.mark.parametrize(
    "subject",
    ["xce.events.NOPE", "xce.events.", "xce.decisions.DISPATCH", "xce.events.BEGIN_ROUND.x"],
    ids=["unknown type", "no type", "another family", "an extra token"],
)
def test_a_subject_of_no_event_type_names_none(subject: str) -> None:
    assert event_type_of(subject) is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: event_subject("NOPE"), "'NOPE' is not an event type"),
        (lambda: decision_subject("KILL"), "'KILL' is not a decision op"),
        (lambda: deadletter_subject("a.b"), "'a.b' is not a subject token"),
        (lambda: deadletter_subject("core\n"), "'core\\\\n' is not a subject token"),
        (lambda: record_subject("rec1\n"), "'rec1\\\\n' is not a subject token"),
        (lambda: record_msg_id("rec1\n", 0), "no record message id for 'rec1\\\\n'"),
        (lambda: decision_msg_id(0, 0), "no decision id for event seq 0"),
        (lambda: decision_msg_id(1, -1), "no decision id for event seq 1, index -1"),
    ],
    ids=[
        "unknown event type",
        "unknown op",
        "dotted source",
        "source with a final newline",
        "recording id with a final newline",
        "record message id with a final newline",
        "seq 0",
        "negative index",
    ],
)
def test_bad_names_are_refused(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


def test_decision_ids_round_trip_and_order_like_the_stream() -> None:
    pairs = [(1, 0), (1, 1), (1, 10), (2, 0), (10, 3), (2**63, 7)]
    ids = [decision_msg_id(seq, index) for seq, index in pairs]
    assert ids[0] == "xce-core:1:0"
    assert [parse_decision_msg_id(i) for i in ids] == pairs == sorted(pairs)
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize(
    "text", ["", "xce-core:1", "xce-core:a:0", "other:1:0", "xce-core:1:0:2", "xce-core:1:0\n"]
)
def test_other_ids_are_not_decision_ids(text: str) -> None:
    assert parse_decision_msg_id(text) is None


@pytest.mark.parametrize("text", ["xce-rec:r1:0\n", "xce-rec:r1\n:0", "xce-rec:r1:x", ""])
def test_other_ids_are_not_record_ids(text: str) -> None:
    assert parse_record_msg_id("xce-rec:r1:0") == ("r1", 0)
    assert parse_record_msg_id(text) is None


def test_a_dead_letter_round_trips_and_refuses_unknown_fields() -> None:
    letter = DeadLetter(
        subject="xce.events.JOBS_PUSH", reason="JOBS_PUSH rejected", data="{", seq=3
    )
    assert DeadLetter.model_validate_json(letter.model_dump_json()) == letter
    with pytest.raises(ValidationError):
        DeadLetter.model_validate({"subject": "s", "reason": "r", "data": "", "extra": 1})


def test_a_dead_letter_keeps_a_huge_payload_under_the_message_limit() -> None:
    """A refused message near NATS's 1 MiB limit (escaped bytes take four characters
    each) gives a dead letter of a bounded size, saying how big the payload was."""
    payload = b"\xff" * 900_000
    letter = DeadLetter.of("xce.events.BATCH", "r" * 900_000, payload, seq=3, event_id="e")
    assert len(letter.model_dump_json()) < 300_000
    assert letter.data_size == 900_000 and letter.data.startswith("\\xff")
    assert len(letter.data) == DEADLETTER_DATA_MAX and len(letter.reason) == DEADLETTER_DATA_MAX
    small = DeadLetter.of("s", "why", b"abc")
    assert (small.data, small.data_size, small.seq) == ("abc", None, None)
