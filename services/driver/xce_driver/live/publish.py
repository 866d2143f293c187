"""Put cluster events on the bus: ``xce.events.<TYPE>`` of the ``XCE_EVENTS`` stream."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nats.js import JetStreamContext
from xce_schemas import CoreEvent, dump_event
from xce_schemas.bus import EVENTS_STREAM, MSG_ID_HEADER, event_subject


async def publish_events(
    js: JetStreamContext,
    events: Iterable[CoreEvent],
    *,
    msg_ids: Sequence[str] | None = None,
    timeout_s: float | None = None,
) -> list[int]:
    """Publish ``events`` in order, each waiting for the stream's acknowledgement.

    Args:
        js: a JetStream context of a connected client; ``XCE_EVENTS`` must exist
            (``streams.ensure_streams``).
        events: the events; each goes to ``xce.events.<its type>`` as its JSON.
        msg_ids: optional ``Nats-Msg-Id`` per event, so a publisher that retries after
            a failure does not enter an event twice (within the stream's duplicate
            window); must be as long as ``events``.
        timeout_s: how long to wait for each acknowledgement, s; default the client's.

    Returns:
        The stream sequence of each event (of the first copy, for a duplicate).

    Raises:
        ValueError: ``msg_ids`` does not match ``events`` in length.
        nats.errors.Error: no stream answers (``NoStreamResponseError``), the server
            refuses or the acknowledgement times out; the events before it are in.
    """
    listed = list(events)
    if msg_ids is not None and len(msg_ids) != len(listed):
        raise ValueError(f"{len(msg_ids)} message ids for {len(listed)} events")
    seqs: list[int] = []
    for index, event in enumerate(listed):
        headers = None if msg_ids is None else {MSG_ID_HEADER: msg_ids[index]}
        ack = await js.publish(
            event_subject(event.type),
            dump_event(event),
            timeout=timeout_s,
            stream=EVENTS_STREAM,
            headers=headers,
        )
        seqs.append(ack.seq)
    return seqs
