"""The core service's one-pass decoding of an event (or a batch of events) agrees
with decoding it step by step (JSON first, then validation): same event when valid,
a reason when not."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from xce_driver.live.event_codec import data_of, decode_event, decode_message, encode_batch
from xce_schemas import parse_event
from xce_schemas.bus import EVENTS_BATCH_SUBJECT, event_subject

from tests.core.random_events import apply, event_for, new_core, operation

#: Ways to spoil a valid event: (field path, value), applied to a copy.
SPOILERS: list[tuple[tuple[str, ...], Any]] = [
    (("ts",), -1),
    (("ts",), "1"),
    (("ts",), 1.5),
    (("type",), "NO_SUCH_EVENT"),
    (("payload",), []),
    (("extra",), 1),
    (("payload", "jobid"), "7"),
    (("payload", "jobs"), []),
]


def spoiled(event: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    copy = orjson.loads(orjson.dumps(event))
    target = copy
    for key in path[:-1]:
        if not isinstance(target.get(key), dict):
            return copy
        target = target[key]
    target[path[-1]] = value
    return copy


def step_by_step(data: bytes) -> object | None:
    try:
        return parse_event(orjson.loads(data))
    except ValidationError:
        return None


@settings(max_examples=60, deadline=None)
@given(st.lists(operation, min_size=1, max_size=25))
def test_one_pass_decoding_agrees_with_step_by_step(ops: list[tuple[Any, ...]]) -> None:
    core = new_core([])
    for step, op in enumerate(ops, start=1):
        event = event_for(core, op, step)
        if event is None:
            continue
        subject = event_subject(event["type"])
        for variant in [event, *(spoiled(event, path, value) for path, value in SPOILERS)]:
            data = orjson.dumps(variant)
            want = step_by_step(data)
            got = decode_event(subject, data)
            if want is None or variant["type"] != event["type"]:
                assert isinstance(got, str), (variant, got)
                assert got.startswith(event["type"]), got
            else:
                assert got == want
        apply(core, op, step)


@settings(max_examples=40, deadline=None)
@given(st.lists(operation, min_size=1, max_size=25), st.data())
def test_a_batch_decodes_to_its_events_in_order_and_names_each_bad_one(
    ops: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    """Every event of a batch comes back in order with its id: the valid ones as
    ``parse_event`` reads them, each spoiled one as a reason naming its place."""
    core = new_core([])
    variants: list[dict[str, Any]] = []
    for step, op in enumerate(ops, start=1):
        event = event_for(core, op, step)
        if event is not None:
            spoil = data.draw(st.none() | st.sampled_from(SPOILERS))
            variants.append(event if spoil is None else spoiled(event, *spoil))
        apply(core, op, step)
    if not variants:
        return
    ids = [f"id-{i}" for i in range(len(variants))]
    taken = decode_message(
        EVENTS_BATCH_SUBJECT, encode_batch([orjson.dumps(v) for v in variants], ids)
    )
    assert [t.event_id for t in taken] == ids
    assert [t.index for t in taken] == list(range(len(variants)))
    for index, (variant, item) in enumerate(zip(variants, taken, strict=True)):
        want = step_by_step(orjson.dumps(variant))
        if want is None:
            assert isinstance(item.event, str), (variant, item)
            assert item.event.startswith(f"event {index} of the batch: "), item.event
            assert orjson.loads(item.data) == variant  # the dead letter shows the event
        else:
            assert item.event == want
            assert parse_event(data_of(item)) == want  # its dead letter shows it
