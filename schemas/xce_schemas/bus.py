"""The message-bus contract of the live services: NATS JetStream subjects, streams,
message ids, dead letters and the core's checkpoint document in Redis.

Subjects (payloads are the JSON of the ``xce_schemas`` models, UTF-8):

| subject | stream | payload |
|---|---|---|
| ``xce.events.<TYPE>`` (``EVENT_TYPES``) | ``XCE_EVENTS`` | a ``CoreEvent`` of that ``type`` |
| ``xce.decisions.<OP>`` (``DECISION_OPS``) | ``XCE_DECISIONS`` | a ``Decision`` of that ``op`` |
| ``xce.deadletter.<SOURCE>`` | ``XCE_DEADLETTER`` | a ``DeadLetter`` |

The core service consumes ``XCE_EVENTS`` in stream order. The decisions of the event
at stream sequence ``seq`` are published with the JetStream message id
``decision_msg_id(seq, index)``, ``index`` counting that event's decisions from 0.
The id is a function of the event stream alone, so a core that restarts from a
snapshot and processes an event again publishes the same ids, and JetStream drops
the duplicates (``Nats-Msg-Id``, within the stream's duplicate window); the id also
tells a restarted core how far the decision stream already goes.
"""

from __future__ import annotations

import re
from typing import Annotated, Final

from pydantic import Field, Strict

from xce_schemas.base import WireModel
from xce_schemas.decisions import DECISION_OPS
from xce_schemas.events import EVENT_TYPES
from xce_schemas.snapshot import CoreSnapshot

#: The stream of cluster events (Req 10 AC 4), one subject per event type.
EVENTS_STREAM: Final = "XCE_EVENTS"
#: The stream of the core's decisions (Req 10 AC 5), one subject per op.
DECISIONS_STREAM: Final = "XCE_DECISIONS"
#: The stream of messages a service could not handle.
DEADLETTER_STREAM: Final = "XCE_DEADLETTER"

EVENTS_PREFIX: Final = "xce.events."
DECISIONS_PREFIX: Final = "xce.decisions."
DEADLETTER_PREFIX: Final = "xce.deadletter."

#: Every subject of a stream (NATS ``>`` wildcard: one or more tokens).
EVENTS_SUBJECTS: Final = EVENTS_PREFIX + ">"
DECISIONS_SUBJECTS: Final = DECISIONS_PREFIX + ">"
DEADLETTER_SUBJECTS: Final = DEADLETTER_PREFIX + ">"

#: The JetStream header that de-duplicates publishes within the duplicate window.
MSG_ID_HEADER: Final = "Nats-Msg-Id"

#: The Redis key of the core service's checkpoint (a ``CoreCheckpoint`` as JSON).
CORE_CHECKPOINT_KEY: Final = "xce:core:snapshot"

#: The dead-letter source name of the core service.
CORE_SOURCE: Final = "core"

_DECISION_ID = re.compile(r"^xce-core:([0-9]+):([0-9]+)$")

#: A subject token: printable, no spaces, dots or wildcards.
_TOKEN = re.compile(r"^[A-Za-z0-9_\-]+$")

#: A JetStream stream sequence: 1 or more (0 means "before the first message").
StreamSeq = Annotated[int, Strict(), Field(ge=0, lt=2**64)]


def event_subject(event_type: str) -> str:
    """The subject events of ``event_type`` are published on: ``xce.events.<TYPE>``.

    Raises:
        ValueError: ``event_type`` is not one of the eleven ``EVENT_TYPES``.
    """
    if event_type not in EVENT_TYPES:
        raise ValueError(f"{event_type!r} is not an event type; expected one of {EVENT_TYPES}")
    return EVENTS_PREFIX + event_type


def event_type_of(subject: str) -> str | None:
    """The event type a subject names (``xce.events.JOBS_PUSH`` → ``JOBS_PUSH``), or
    None when the subject is not an event subject of a known type."""
    if not subject.startswith(EVENTS_PREFIX):
        return None
    name = subject[len(EVENTS_PREFIX) :]
    return name if name in EVENT_TYPES else None


def decision_subject(op: str) -> str:
    """The subject decisions of ``op`` are published on: ``xce.decisions.<OP>``.

    Raises:
        ValueError: ``op`` is not one of ``DECISION_OPS``.
    """
    if op not in DECISION_OPS:
        raise ValueError(f"{op!r} is not a decision op; expected one of {DECISION_OPS}")
    return DECISIONS_PREFIX + op


def deadletter_subject(source: str) -> str:
    """The dead-letter subject of a service: ``xce.deadletter.<source>``.

    Raises:
        ValueError: ``source`` is not a single subject token (letters, digits, ``_-``).
    """
    if not _TOKEN.match(source):
        raise ValueError(f"{source!r} is not a subject token (letters, digits, '_' and '-')")
    return DEADLETTER_PREFIX + source


def decision_msg_id(event_seq: int, index: int) -> str:
    """The ``Nats-Msg-Id`` of the ``index``-th decision (from 0) of the event at stream
    sequence ``event_seq`` of ``XCE_EVENTS``: ``xce-core:<event_seq>:<index>``.

    Raises:
        ValueError: a sequence below 1 or a negative index.
    """
    if event_seq < 1 or index < 0:
        raise ValueError(f"no decision id for event seq {event_seq}, index {index}")
    return f"xce-core:{event_seq}:{index}"


def parse_decision_msg_id(msg_id: str) -> tuple[int, int] | None:
    """``(event_seq, index)`` of a ``decision_msg_id``, or None for any other text.

    The pairs order like the decisions in the stream: lexicographically.
    """
    match = _DECISION_ID.match(msg_id)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2))


class DeadLetter(WireModel):
    """A message a service could not handle, published on ``xce.deadletter.<source>``.

    Attributes:
        subject: the subject the message arrived on.
        reason: why it was rejected, naming the field (e.g. ``JOBS_PUSH rejected:
            payload.jobs[0].queue: unknown queue 'nosuch'``).
        data: the message payload as text (bytes that are not UTF-8 are written as
            ``\\xNN`` escapes).
        seq: its stream sequence, when it came from a stream.
    """

    subject: str
    reason: str
    data: str
    seq: StreamSeq | None = None


class CoreCheckpoint(WireModel):
    """The core service's checkpoint in Redis (key ``CORE_CHECKPOINT_KEY``).

    Attributes:
        seq: the last ``XCE_EVENTS`` stream sequence the snapshot covers (0: none); the
            decisions of every event up to it are on ``XCE_DECISIONS``. A restarted
            core loads ``snapshot`` and goes on from ``seq + 1``.
        stream: the event stream ``seq`` counts in.
        snapshot: the whole core state after event ``seq``.
    """

    seq: StreamSeq
    stream: str = EVENTS_STREAM
    snapshot: CoreSnapshot
