"""The messages of ``XCE_EVENTS``: one event (``xce.events.<TYPE>``), or a batch of
events (``xce.events.BATCH``, an ``EventBatch``: see ``xce_schemas.bus``).

The bridge publishes batches (``encode_batch``): every per-message cost of the bus
(a store, a delivery, its headers and acknowledgement, in nats-server and in both
services) is then paid once per batch. The core service decodes either kind into
the events it takes, in order (``decode_message``); an event that cannot be taken
is named with the reason, and the others of its batch are taken all the same
(invariant 5: nothing already accepted is lost).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import orjson
from pydantic import ValidationError
from xce_schemas import CoreEvent, dump_event, parse_event
from xce_schemas.bus import EVENTS_BATCH_SUBJECT, EventBatch, event_type_of
from xce_schemas.errors import describe
from xce_schemas.events import EVENT_TYPES


@dataclass(frozen=True, slots=True)
class Taken:
    """One event of a message, decoded or not.

    Attributes:
        event: the event, or why it cannot be taken (one line naming the event type
            and field).
        subject: the subject to name in its dead letter.
        data: its bytes; for an event of a batch, that event alone as JSON, or
            empty when the batch decoded whole (``data_of`` gives them then).
        event_id: its id in the batch's ``ids`` (None: none given, or not a batch).
        index: its place in the batch (None: not a batch).
    """

    event: CoreEvent | str
    subject: str
    data: bytes
    event_id: str | None = None
    index: int | None = None


def data_of(taken: Taken) -> bytes:
    """The bytes of ``taken``'s event for a dead letter: ``taken.data``, or the
    event's JSON when the batch decoded whole (serialised only when needed)."""
    if taken.data or isinstance(taken.event, str):
        return taken.data
    return dump_event(taken.event)


def encode_batch(events: Sequence[bytes], ids: Sequence[str | None]) -> bytes:
    """The ``EventBatch`` JSON of events already serialised (each a ``CoreEvent``'s
    JSON) and their ids (one each).

    Raises:
        ValueError: no events, or not one id per event.
    """
    if not events or len(ids) != len(events):
        raise ValueError(f"a batch needs events and one id each: {len(events)}, {len(ids)}")
    # The events are JSON already (serialised once, when they were stamped): joined,
    # not parsed and dumped again.
    return b'{"events":[%s],"ids":%s}' % (b",".join(events), orjson.dumps(list(ids)))


def decode_message(subject: str, data: bytes) -> list[Taken]:
    """The events of one ``XCE_EVENTS`` message, in order: one for an event's subject,
    each of the batch for ``xce.events.BATCH``. A message that cannot be read at all
    is one ``Taken`` with the reason (and the whole message as its data)."""
    if subject != EVENTS_BATCH_SUBJECT:
        return [Taken(decode_event(subject, data), subject, data)]
    # The common case in one pass; a batch that fails it is decoded event by event.
    with contextlib.suppress(ValidationError):
        batch = EventBatch.model_validate_json(data)
        ids = batch.ids or (None,) * len(batch.events)
        return [
            Taken(event, subject, b"", ids[index], index)
            for index, event in enumerate(batch.events)
        ]
    return _decode_batch_slowly(subject, data)


def _decode_batch_slowly(subject: str, data: bytes) -> list[Taken]:
    """A batch that did not validate as a whole: its good events, and each bad one with
    its reason; or the reason the batch as a whole cannot be read."""
    try:
        decoded = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return [Taken(f"event batch rejected: not JSON ({exc})", subject, data)]
    if not isinstance(decoded, dict):
        return [Taken("event batch rejected: not a JSON object", subject, data)]
    events = decoded.get("events")
    if not isinstance(events, list) or not events:
        return [Taken("event batch rejected: events: not a list of 1 or more", subject, data)]
    reason = _batch_shape_error(decoded, len(events))
    if reason is not None:
        return [Taken(f"event batch rejected: {reason}", subject, data)]
    ids = decoded.get("ids") or [None] * len(events)
    taken = []
    for index, (item, event_id) in enumerate(zip(events, ids, strict=True)):
        try:
            item_data = orjson.dumps(item)
        except TypeError:  # nested deeper than orjson writes (it reads deeper)
            item_data = b'"(not shown: nested too deeply)"'
        event = _decode_object(item, None, subject)
        if isinstance(event, str):
            event = f"event {index} of the batch: {event}"
        taken.append(Taken(event, subject, item_data, event_id, index))
    return taken


def last_ts(subject: str, data: bytes) -> int | None:
    """The ``ts`` of the last event of an ``XCE_EVENTS`` message, ns (None: it cannot
    be read)."""
    with contextlib.suppress(orjson.JSONDecodeError, LookupError, AttributeError, TypeError):
        decoded = orjson.loads(data)
        last = decoded["events"][-1] if subject == EVENTS_BATCH_SUBJECT else decoded
        ts = last.get("ts")
        return ts if isinstance(ts, int) else None
    return None


def _batch_shape_error(decoded: dict[str, object], count: int) -> str | None:
    """What is wrong with a batch besides its events (unknown fields, ids), or None."""
    unknown = sorted(set(decoded) - set(EventBatch.model_fields))
    if unknown:
        return f"{unknown[0]}: unknown field (a batch has {', '.join(EventBatch.model_fields)})"
    ids = decoded.get("ids", [])
    if not isinstance(ids, list) or not all(i is None or isinstance(i, str) for i in ids):
        return "ids: not a list of texts (or nulls)"
    if ids and len(ids) != count:
        return f"ids: {len(ids)} ids for {count} events (one each, or none)"
    return None


def decode_event(subject: str, data: bytes) -> CoreEvent | str:
    """Decode and validate one message of ``XCE_EVENTS`` that holds one event.

    Returns:
        The event, or why it is rejected: one line naming the event type and field.
    """
    expected = event_type_of(subject)
    if expected is None:
        return f"subject {subject!r} names no event type (xce.events.<TYPE>)"
    # The common case in one pass (pydantic parses and validates the JSON text:
    # about half the time of orjson then validation); a message that fails it is
    # decoded again step by step below, for the reason.
    with contextlib.suppress(ValidationError):
        event = parse_event(data)
        if event.type == expected:
            return event
    try:
        decoded = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return f"{expected} rejected: not JSON ({exc})"
    return _decode_object(decoded, expected, subject)


def _decode_object(decoded: object, expected: str | None, subject: str) -> CoreEvent | str:
    """One decoded JSON value as an event of type ``expected`` (None: any type, in a
    batch on ``subject``), or why not."""
    name = expected or (decoded.get("type") if isinstance(decoded, dict) else None)
    label = name if isinstance(name, str) else "event"
    if not isinstance(decoded, dict):
        return f"{label} rejected: not a JSON object"
    if "type" not in decoded:
        return f"{label} rejected: type: missing (one of {', '.join(EVENT_TYPES)})"
    if expected is not None and decoded.get("type") != expected:
        return (
            f"{expected} rejected: type: {decoded.get('type')!r} does not match "
            f"the subject {subject}"
        )
    try:
        return parse_event(decoded)
    except ValidationError as exc:
        return f"{label} rejected: {describe(exc, skip=1, default='event')}"
