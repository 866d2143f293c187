"""The recorder's consumer: one recording's messages of ``XCE_RECORD``, in order.

The core service publishes a recording on ``xce.record.<id>`` of stream
``XCE_RECORD``, every message numbered in its ``Nats-Msg-Id`` and marked with its
event sequence, line type and whether it is the last line of its event (headers of
``xce_schemas.bus``). The recorder reads it through an ephemeral pull consumer: a
repeat (after a re-read) is skipped, a missing number read again, and accepted as a
gap only when the stream itself lacks it, and not because its limits dropped it
before it was read (``RetentionError``: the recording stops with that reason).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError
from xce_kit.retention import check_position
from xce_schemas.bus import (
    MSG_ID_HEADER,
    RECORD_END,
    RECORD_LAST_HEADER,
    RECORD_SEQ_HEADER,
    RECORD_STREAM,
    RECORD_TYPE_HEADER,
    parse_record_msg_id,
    record_subject,
)

log = logging.getLogger("xce_recorder.cursor")

#: How long the server keeps a cursor's consumer once nobody reads it, s.
INACTIVE_THRESHOLD_S = 300.0
#: Line types that are not events (every other ``type`` is one).
NOT_EVENTS = frozenset({"HEADER", "SNAPSHOT", "DECISION", RECORD_END})


@dataclass(frozen=True, slots=True)
class RecordLine:
    """One message of a record stream, decoded from its headers.

    Attributes:
        number: its number in the recording (from 0).
        seq: the event sequence it belongs to.
        type: the line's ``type`` (``END`` for the closing message).
        last: the last line of its event's group.
        data: the line (JSON text, no newline).
    """

    number: int
    seq: int
    type: str
    last: bool
    data: bytes


def decode_record_message(rid: str, msg: Msg) -> RecordLine | None:
    """The ``RecordLine`` of a message of recording ``rid``, or None when it is not
    one (another id, or no id)."""
    headers = msg.headers or {}
    mark = parse_record_msg_id(headers.get(MSG_ID_HEADER, ""))
    if mark is None or mark[0] != rid:
        return None
    seq_text = headers.get(RECORD_SEQ_HEADER, "")
    return RecordLine(
        number=mark[1],
        seq=int(seq_text) if seq_text.isdigit() else 0,
        type=headers.get(RECORD_TYPE_HEADER, ""),
        last=headers.get(RECORD_LAST_HEADER) == "1",
        data=msg.data,
    )


class RecordCursor:
    """Reads the messages of one recording from ``XCE_RECORD`` in number order,
    through an ephemeral pull consumer (no acknowledgements) filtered on its subject,
    from stream sequence ``start_seq`` on (none of its messages is before).

    A message read again (after a re-read) is skipped; a missing number makes the
    cursor re-read from the stream position after the last message taken, and is
    accepted as a gap (``gaps``) only when the stream itself lacks it.

    Attributes:
        next_number: the number expected next.
        gaps: messages found missing from the stream.
        duplicates: messages skipped as read already.
    """

    def __init__(self, js: JetStreamContext, rid: str, start_seq: int = 1) -> None:
        self.js = js
        self.rid = rid
        self.subject = record_subject(rid)
        self.next_number = 0
        self.gaps = 0
        self.duplicates = 0
        self._next_stream_seq = max(1, start_seq)
        self._sub: JetStreamContext.PullSubscription | None = None
        self._gap_at: int | None = None

    async def _open(self) -> JetStreamContext.PullSubscription:
        if self._sub is None:
            config = ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=self._next_stream_seq,
                ack_policy=AckPolicy.NONE,
                inactive_threshold=INACTIVE_THRESHOLD_S,
            )
            self._sub = await self.js.pull_subscribe(
                self.subject, stream=RECORD_STREAM, config=config
            )
        return self._sub

    async def fetch(self, batch: int, timeout_s: float) -> list[RecordLine]:
        """The next messages in order (none when ``timeout_s`` passes first).

        Raises:
            xce_kit.retention.RetentionError: messages missing from the recording
                were dropped by ``XCE_RECORD``'s limits before they were read.
            nats.errors.Error: the server fails (the caller retries).
        """
        sub = await self._open()
        try:
            msgs = await sub.fetch(batch, timeout=timeout_s)
        except TimeoutError:
            return []
        except NatsError:
            await self.close()  # the next fetch reads again from where this one was
            raise
        taken: list[RecordLine] = []
        for msg in msgs:
            line = decode_record_message(self.rid, msg)
            if line is None:
                continue
            if line.number < self.next_number:
                self.duplicates += 1
                continue
            if line.number > self.next_number:
                if self._gap_at != self.next_number:
                    log.warning(
                        "%s: message %d follows %d; re-reading",
                        self.subject,
                        line.number,
                        self.next_number - 1,
                    )
                    self._gap_at = self.next_number
                    await self.close()
                    break
                reader = f"recording {self.rid}"
                await check_position(self.js, RECORD_STREAM, self._next_stream_seq - 1, reader)
                log.error(
                    "%s: messages %d..%d are not in %s: the recording has a gap",
                    self.subject,
                    self.next_number,
                    line.number - 1,
                    RECORD_STREAM,
                )
                self.gaps += line.number - self.next_number
            self._gap_at = None
            taken.append(line)
            self.next_number = line.number + 1
            self._next_stream_seq = msg.metadata.sequence.stream + 1
        return taken

    async def close(self) -> None:
        """Drop the consumer (the server deletes an unused one by itself too)."""
        sub, self._sub = self._sub, None
        if sub is None:
            return
        with contextlib.suppress(NatsError, NotFoundError):
            await sub.unsubscribe()
        with contextlib.suppress(NatsError, NotFoundError):
            await self.js.delete_consumer(RECORD_STREAM, sub._consumer)
