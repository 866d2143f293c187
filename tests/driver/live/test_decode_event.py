"""The core service's one-pass decoding of an event agrees with decoding it step by
step (JSON first, then validation): same event when valid, a reason when not."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from xce_driver.live.event_codec import decode_event
from xce_schemas import parse_event
from xce_schemas.bus import event_subject

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
