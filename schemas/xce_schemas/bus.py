"""The message-bus contract of the live services: NATS JetStream subjects, streams,
message ids, dead letters and the core's checkpoint document in Redis.

Subjects (payloads are the JSON of the ``xce_schemas`` models, UTF-8):

| subject | stream | payload |
|---|---|---|
| ``xce.events.<TYPE>`` (``EVENT_TYPES``) | ``XCE_EVENTS`` | a ``CoreEvent`` of that ``type`` |
| ``xce.events.BATCH`` | ``XCE_EVENTS`` | an ``EventBatch``: several events, in order |
| ``xce.decisions.<OP>`` (``DECISION_OPS``) | ``XCE_DECISIONS`` | a ``Decision`` of that ``op`` |
| ``xce.deadletter.<SOURCE>`` | ``XCE_DEADLETTER`` | a ``DeadLetter`` |
| ``xce.record.<RECORDING ID>`` | ``XCE_RECORD`` | one recording line (JSONL text, no newline) |
| ``xce.core.record`` (request/reply) | none | a ``CoreRecordCommand`` → ``CoreRecordReply`` |

The core service consumes ``XCE_EVENTS`` in stream order. A message holds one event,
or (``xce.events.BATCH``, what the bridge publishes) a batch of events taken in
their order: every per-message cost of the bus (a store, a delivery, headers, an
acknowledgement) is then paid once per batch instead of once per event. The
decisions of the message at stream sequence ``seq`` are published with the
JetStream message id ``decision_msg_id(seq, index)``, ``index`` counting the
decisions of that message's events from 0, across the events of a batch.
The id is a function of the event stream alone, so a core that restarts from a
snapshot and processes an event again publishes the same ids, and JetStream drops
the duplicates (``Nats-Msg-Id``, within the stream's duplicate window); the id also
tells a restarted core how far the decision stream already goes.

**The ordered record stream.** While a recording is on, the core service publishes
its lines on ``record_subject(id)``: HEADER and a SNAPSHOT of its state at the start
position, then for every event it takes the event line, that event's DECISION lines
and, every ``snapshot_interval`` events, a SNAPSHOT (the events of a batch one by
one, each with the batch's sequence); a last message of type ``END``
closes it, its payload the recording's ``END`` line (``{"type":"END","ts":...}``,
the core's time; an empty payload from a core of recording format 1.0). Message
``n`` (from 0) of recording ``id`` has the JetStream message id
``record_msg_id(id, n)`` and the headers ``RECORD_SEQ_HEADER`` (the ``XCE_EVENTS``
sequence the line belongs to; the start lines: the start
position), ``RECORD_TYPE_HEADER`` (the line's ``type``, or ``END``) and, on the last
line of an event's group (or of the start pair), ``RECORD_LAST_HEADER: 1``. The
numbering is a function of the event stream and the start position alone, so a
core restarted from its checkpoint publishes the same lines under the same ids.
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

from pydantic import Field, Strict, model_validator

from xce_schemas.base import WireModel
from xce_schemas.decisions import DECISION_OPS
from xce_schemas.events import EVENT_TYPES, CoreEvent
from xce_schemas.snapshot import CoreSnapshot

#: The stream of cluster events (Req 10 AC 4), one subject per event type.
EVENTS_STREAM: Final = "XCE_EVENTS"
#: The stream of the core's decisions (Req 10 AC 5), one subject per op.
DECISIONS_STREAM: Final = "XCE_DECISIONS"
#: The stream of messages a service could not handle.
DEADLETTER_STREAM: Final = "XCE_DEADLETTER"

EVENTS_PREFIX: Final = "xce.events."
#: The subject of a batch of events (``EventBatch``) on ``XCE_EVENTS``.
EVENTS_BATCH_SUBJECT: Final = EVENTS_PREFIX + "BATCH"
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

#: Most characters of a refused payload (and of its reason) a dead letter carries:
#: the dead letter of a message near NATS's 1 MiB limit must itself fit (escaped
#: bytes take up to four characters each).
DEADLETTER_DATA_MAX: Final = 64 * 1024

#: The dead-letter source name of the core service.
CORE_SOURCE: Final = "core"

#: The stream of recording lines the core service emits while recording.
RECORD_STREAM: Final = "XCE_RECORD"
RECORD_PREFIX: Final = "xce.record."
RECORD_SUBJECTS: Final = RECORD_PREFIX + ">"
#: Duplicate window of ``XCE_RECORD`` when a service creates it, s.
RECORD_DUPLICATE_WINDOW_S: Final = 3600.0
#: The subject the core service answers recording commands on (request/reply).
CORE_RECORD_SUBJECT: Final = "xce.core.record"
#: The Redis key of the recording the core service is (or was last) asked to make
#: (a ``CoreRecording`` as JSON), written by the core service only.
CORE_RECORDING_KEY: Final = "xce:core:recording"
#: Headers of a record message (see the module docstring).
RECORD_SEQ_HEADER: Final = "Xce-Record-Seq"
RECORD_TYPE_HEADER: Final = "Xce-Record-Type"
RECORD_LAST_HEADER: Final = "Xce-Record-Last"
#: ``RECORD_TYPE_HEADER`` of the message that ends a recording.
RECORD_END: Final = "END"

# Used with fullmatch: "$" would let a final "\n" through.
_DECISION_ID = re.compile(r"xce-core:([0-9]+):([0-9]+)")
_RECORD_ID = re.compile(r"xce-rec:([A-Za-z0-9_\-]+):([0-9]+)")

#: A subject token: printable, no spaces, dots or wildcards.
_TOKEN = re.compile(r"[A-Za-z0-9_\-]+")

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
    if not _TOKEN.fullmatch(source):
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
    match = _DECISION_ID.fullmatch(msg_id)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2))


#: A recording id: one subject token (letters, digits, ``_``, ``-``), at most 160 long.
RecordingId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_\-]+$", min_length=1, max_length=160)]


def record_subject(recording_id: str) -> str:
    """The subject the lines of recording ``recording_id`` go on: ``xce.record.<id>``.

    Raises:
        ValueError: ``recording_id`` is not a single subject token.
    """
    if not _TOKEN.fullmatch(recording_id):
        raise ValueError(f"{recording_id!r} is not a subject token (letters, digits, '_', '-')")
    return RECORD_PREFIX + recording_id


def record_msg_id(recording_id: str, number: int) -> str:
    """The ``Nats-Msg-Id`` of message ``number`` (from 0) of a recording:
    ``xce-rec:<id>:<number>``.

    Raises:
        ValueError: a negative number, or an id that is not a subject token.
    """
    if number < 0 or not _TOKEN.fullmatch(recording_id):
        raise ValueError(f"no record message id for {recording_id!r}, number {number}")
    return f"xce-rec:{recording_id}:{number}"


def parse_record_msg_id(msg_id: str) -> tuple[str, int] | None:
    """``(recording id, number)`` of a ``record_msg_id``, or None for any other text."""
    match = _RECORD_ID.fullmatch(msg_id)
    if match is None:
        return None
    return match.group(1), int(match.group(2))


class CoreRecordCommand(WireModel):
    """A recording command to the core service, on ``CORE_RECORD_SUBJECT``.

    ``start`` takes effect once the core has handled every event the stream held when
    the command arrived (its *start position*); ``stop`` likewise. Both are
    idempotent for the same ``id``; a ``start`` of another id while a recording is on
    ends that one first.

    Attributes:
        action: ``start`` or ``stop`` recording ``id``.
        id: the recording id, chosen by the sender, unique per recording; its lines
            go on ``record_subject(id)``.
        name: ``start`` only: the recording's file name (informational).
        snapshot_interval: ``start`` only: a SNAPSHOT every N recorded events (0:
            only the start one; Req 10 AC 10).
    """

    action: Literal["start", "stop"]
    id: RecordingId
    name: str | None = None
    snapshot_interval: int = Field(default=0, ge=0)


class CoreRecordReply(WireModel):
    """The core service's answer to a ``CoreRecordCommand``.

    Attributes:
        ok: the command took effect (or had already).
        error: why not, in one line, when ``ok`` is false.
        id: the recording the answer is about.
        start_seq: the ``XCE_EVENTS`` sequence the start SNAPSHOT covers.
        end_seq: after a stop: the last event recorded.
        messages: messages published on ``record_subject(id)`` so far (the ``END``
            message included).
    """

    ok: bool
    error: str | None = None
    id: str
    start_seq: StreamSeq | None = None
    end_seq: StreamSeq | None = None
    messages: int = Field(default=0, ge=0)


class CoreRecording(WireModel):
    """The recording the core service was last asked to make, with the positions at
    which it started and stopped (Redis key ``CORE_RECORDING_KEY``).

    A core restarted from a checkpoint older than these positions re-applies them
    when its re-handling of the event stream reaches them, so its record stream is
    that of an uninterrupted run.

    Attributes:
        id: the recording id.
        name: its file name (informational).
        snapshot_interval: a SNAPSHOT every N recorded events (0: only the first).
        start_seq: the event sequence the start SNAPSHOT covers.
        end_seq: the last event recorded, once stopped.
    """

    id: RecordingId
    name: str | None = None
    snapshot_interval: int = Field(ge=0)
    start_seq: StreamSeq
    end_seq: StreamSeq | None = None


class RecordingRun(CoreRecording):
    """A recording as a core checkpoint holds it: ``CoreRecording`` plus where its
    numbering and snapshot cadence stand after the checkpoint's event.

    Attributes:
        messages: messages published on its subject so far.
        since_snapshot: events recorded since its last SNAPSHOT.
    """

    messages: int = Field(ge=0)
    since_snapshot: int = Field(ge=0)


class EventBatch(WireModel):
    """Several core events in one ``XCE_EVENTS`` message (``EVENTS_BATCH_SUBJECT``),
    taken by the core in this order, as if each were a message of its own at the
    batch's stream sequence.

    Attributes:
        events: the events, in order (1 or more).
        ids: optional, one per event: the id the event is known by to its publisher
            (the bridge's ``xce-bridge:ctl:<epoch>:<seq>`` of the controller message
            it came from), or None. A dead letter of an event of the batch carries its
            id (``DeadLetter.event_id``), so the publisher can tell which one it was.

    Raises:
        pydantic.ValidationError: no events, or ``ids`` of another length.
    """

    events: tuple[CoreEvent, ...] = Field(min_length=1)
    ids: tuple[str | None, ...] = ()

    @model_validator(mode="after")
    def _ids_match(self) -> EventBatch:
        if self.ids and len(self.ids) != len(self.events):
            raise ValueError(
                f"ids: {len(self.ids)} ids for {len(self.events)} events (one each, or none)"
            )
        return self


class DeadLetter(WireModel):
    """A message a service could not handle, published on ``xce.deadletter.<source>``.

    Attributes:
        subject: the subject the message arrived on.
        reason: why it was rejected, naming the field (e.g. ``JOBS_PUSH rejected:
            payload.jobs[0].queue: unknown queue 'nosuch'``).
        data: the message payload as text (bytes that are not UTF-8 are written as
            ``\\xNN`` escapes).
        seq: its stream sequence, when it came from a stream.
        event_id: for an event of an ``EventBatch``: its entry in the batch's ``ids``
            (``data`` is then that event alone, as JSON).
        data_size: the payload's size in bytes when ``data`` holds only its first
            ``DEADLETTER_DATA_MAX`` characters (None: ``data`` is all of it).
    """

    subject: str
    reason: str
    data: str
    seq: StreamSeq | None = None
    event_id: str | None = None
    data_size: int | None = Field(default=None, ge=0)

    @classmethod
    def of(
        cls,
        subject: str,
        reason: str,
        payload: bytes,
        seq: int | None = None,
        event_id: str | None = None,
    ) -> DeadLetter:
        """The dead letter of ``payload``, kept well under NATS's 1 MiB message limit
        whatever was refused: at most ``DEADLETTER_DATA_MAX`` characters of the
        payload (bytes that are not UTF-8 as ``\\xNN`` escapes) and of the reason.

        Raises:
            pydantic.ValidationError: ``seq`` is not a stream sequence.
        """
        data = payload.decode("utf-8", errors="backslashreplace")
        cut = len(data) > DEADLETTER_DATA_MAX
        return cls(
            subject=subject[:DEADLETTER_DATA_MAX],
            reason=reason[:DEADLETTER_DATA_MAX],
            data=data[:DEADLETTER_DATA_MAX],
            seq=seq,
            event_id=None if event_id is None else event_id[:DEADLETTER_DATA_MAX],
            data_size=len(payload) if cut else None,
        )


class CoreCheckpoint(WireModel):
    """The core service's checkpoint in Redis (key ``CORE_CHECKPOINT_KEY``).

    Attributes:
        seq: the last ``XCE_EVENTS`` stream sequence the snapshot covers (0: none); the
            decisions of every event up to it are on ``XCE_DECISIONS``. A restarted
            core loads ``snapshot`` and goes on from ``seq + 1``.
        stream: the event stream ``seq`` counts in.
        snapshot: the whole core state after event ``seq``.
        recording: the last recording the core made or is making, as of event
            ``seq`` (None: none yet); ``end_seq`` is set once it stopped.
    """

    seq: StreamSeq
    stream: str = EVENTS_STREAM
    snapshot: CoreSnapshot
    recording: RecordingRun | None = None
