"""The messages of XCE_EVENTS as the core reads them: an event, or a batch of events;
what a batch that cannot be read at all is rejected for."""

from __future__ import annotations

import pytest
from xce_driver.live.event_codec import decode_message, encode_batch, last_ts
from xce_schemas import BeginRound, EventBatch

BATCH = "xce.events.BATCH"
ROUND = b'{"type":"BEGIN_ROUND","ts":5}'


def test_encode_batch_is_an_event_batch() -> None:
    data = encode_batch([ROUND, b'{"type":"BEGIN_ROUND","ts":9}'], ["a", None])
    batch = EventBatch.model_validate_json(data)
    assert batch.events == (BeginRound(ts=5), BeginRound(ts=9))
    assert batch.ids == ("a", None)


@pytest.mark.parametrize(("events", "ids"), [([], []), ([ROUND], []), ([ROUND], ["a", "b"])])
def test_encode_batch_needs_events_and_one_id_each(events: list[bytes], ids: list[str]) -> None:
    with pytest.raises(ValueError, match="one id each"):
        encode_batch(events, ids)


def test_a_batch_without_ids_decodes_with_none() -> None:
    taken = decode_message(BATCH, b'{"events":[%s,%s]}' % (ROUND, ROUND))
    assert [(t.event, t.event_id, t.index) for t in taken] == [
        (BeginRound(ts=5), None, 0),
        (BeginRound(ts=5), None, 1),
    ]


def test_one_event_message_is_one_taken_without_index() -> None:
    (taken,) = decode_message("xce.events.BEGIN_ROUND", ROUND)
    assert taken.event == BeginRound(ts=5) and taken.index is None and taken.data == ROUND


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json{", "event batch rejected: not JSON"),
        (b"[1]", "event batch rejected: not a JSON object"),
        (b"null", "event batch rejected: not a JSON object"),
        (b'{"events":[]}', "event batch rejected: events: not a list of 1 or more"),
        (b'{"events":{}}', "event batch rejected: events: not a list of 1 or more"),
        (b'{"events":[%s],"extra":1}' % ROUND, "event batch rejected: extra: unknown field"),
        (b'{"events":[%s],"ids":[1]}' % ROUND, "event batch rejected: ids: not a list of texts"),
        (b'{"events":[%s],"ids":"a"}' % ROUND, "event batch rejected: ids: not a list of texts"),
        (b'{"events":[%s],"ids":null}' % ROUND, "event batch rejected: ids: not a list of texts"),
        (b'{"events":[%s],"ids":0}' % ROUND, "event batch rejected: ids: not a list of texts"),
        (b'{"events":[%s],"ids":""}' % ROUND, "event batch rejected: ids: not a list of texts"),
        (
            b'{"events":[%s],"ids":["a","b"]}' % ROUND,
            "event batch rejected: ids: 2 ids for 1 events",
        ),
    ],
)
def test_a_batch_that_cannot_be_read_is_one_rejection_of_the_whole(
    data: bytes, reason: str
) -> None:
    (taken,) = decode_message(BATCH, data)
    assert isinstance(taken.event, str) and taken.event.startswith(reason), taken.event
    assert taken.data == data and taken.index is None


def test_a_bad_event_of_a_batch_is_named_and_the_others_are_taken() -> None:
    data = b'{"events":[%s,{"type":"BEGIN_ROUND","ts":-1},[2],%s],"ids":["a","b","c","d"]}' % (
        ROUND,
        ROUND,
    )
    first, bad, not_object, last = decode_message(BATCH, data)
    assert first.event == BeginRound(ts=5) and last.event == BeginRound(ts=5)
    assert bad.event == "event 1 of the batch: BEGIN_ROUND rejected: ts: " + (
        "Input should be greater than or equal to 0"
    )
    assert (bad.event_id, bad.index, bad.data) == ("b", 1, b'{"type":"BEGIN_ROUND","ts":-1}')
    assert not_object.event == "event 2 of the batch: event rejected: not a JSON object"


@pytest.mark.parametrize(
    ("subject", "data", "ts"),
    [
        ("xce.events.BEGIN_ROUND", ROUND, 5),
        (BATCH, encode_batch([ROUND, b'{"type":"BEGIN_ROUND","ts":9}'], [None, None]), 9),
        (BATCH, b'{"events":[]}', None),
        (BATCH, b"x", None),
        ("xce.events.BEGIN_ROUND", b'{"ts":"5"}', None),
        ("xce.events.BEGIN_ROUND", b"[5]", None),
    ],
)
def test_last_ts_reads_the_last_event(subject: str, data: bytes, ts: int | None) -> None:
    assert last_ts(subject, data) == ts


def test_an_event_nested_deeper_than_json_can_be_written_is_rejected_not_a_crash() -> None:
    """orjson reads 1,024 levels but writes only about 255: the dead letter's copy of
    such an event says so instead of raising."""
    deep = b"[" * 300 + b"]" * 300
    nested = b'{"type":"BEGIN_ROUND","ts":1,"payload":{"x":%s}}' % deep
    for data in (b'{"events":[%s]}' % deep, b'{"events":[%s]}' % nested):
        (taken,) = decode_message(BATCH, data)
        assert isinstance(taken.event, str) and taken.event.startswith("event 0 of the batch: ")
        assert taken.data == b'"(not shown: nested too deeply)"'


def test_an_event_without_a_type_says_so() -> None:
    (taken,) = decode_message(BATCH, b'{"events":[{"ts":1}]}')
    assert isinstance(taken.event, str)
    assert taken.event.startswith("event 0 of the batch: event rejected: type: missing (one of ")
