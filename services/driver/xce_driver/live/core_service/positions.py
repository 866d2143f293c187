"""Where the core is, checked not trusted: the checkpoint's event sequence, the
*watermarks* (the core's last messages on ``XCE_DECISIONS`` and ``XCE_RECORD``) and
``XCE_EVENTS`` as it is now must agree, or the service refuses to start
(``PositionError``, naming the streams, the positions and what to delete together).
While catching up, the decisions up to the decision watermark are skipped, and the
core must make that very decision again (``Watermark``, ``past_watermark``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError
from xce_kit.publisher import Outgoing, msg_id_of, scan_tail
from xce_schemas import Decision, dump_decision
from xce_schemas.bus import (
    DECISIONS_STREAM,
    EVENTS_STREAM,
    RECORD_STREAM,
    decision_msg_id,
    decision_subject,
    parse_decision_msg_id,
    parse_record_msg_id,
)
from xce_schemas.controller import CTL_DECISIONS_STREAM

from xce_driver.live.core_service.options import RESUME_LOOKBACK, CoreServiceOptions
from xce_driver.live.metrics import CoreMetrics

log = logging.getLogger(__name__)


class CheckpointError(ValueError):
    """The checkpoint in Redis cannot be used; the message names the key and why."""


class PositionError(CheckpointError):
    """The checkpoint, ``XCE_EVENTS`` and ``XCE_DECISIONS`` do not agree on where the
    core is (a stream made anew or purged without the others, a message the core did
    not write); the message names the streams, the positions and how to fix it."""


def afresh(checkpoint_key: str, recording_key: str) -> str:
    """How to start afresh, for a ``PositionError`` (the controller's stream too: a
    fresh core's decision ids start again at ``xce-core:1:0``)."""
    return (
        f"to start afresh, stop the bridge and delete {EVENTS_STREAM}, {DECISIONS_STREAM} "
        f"and {CTL_DECISIONS_STREAM} and the Redis keys {checkpoint_key} and "
        f"{recording_key} together"
    )


@dataclass
class Watermark:
    """The core's last decision on ``XCE_DECISIONS`` at start: the decisions of
    re-handled events up to it are on the stream already and not published again.

    Attributes:
        id: its ``(event seq, index)``.
        seq: its ``XCE_DECISIONS`` sequence.
        subject, data: as stored; the core makes the same decision again, or the
            stream is not this core's (``PositionError``).
        fix: how to start afresh, for the error (``afresh``).
        skipped: decisions skipped so far.
    """

    id: tuple[int, int]
    seq: int
    subject: str
    data: bytes
    fix: str
    skipped: int = 0

    def skip(self, at: tuple[int, int], subject: str, data: bytes) -> None:
        """Skip decision ``at`` of a re-handled event: it is on ``XCE_DECISIONS``
        already. The last one skipped must be the very decision the stream ends with.

        Raises:
            PositionError: it is not (the stream's last decision is not this core's).
        """
        if at == self.id and (subject, data) != (self.subject, self.data):
            raise PositionError(
                f"{DECISIONS_STREAM} ends with decision {decision_msg_id(*at)} (seq {self.seq}) "
                f"on {self.subject}, but the core makes another one there, on {subject}: "
                f"that message is not this core's (delete it: nats stream rmm "
                f"{DECISIONS_STREAM} {self.seq}), or {self.fix}"
            )
        self.skipped += 1

    def passed(self, seq: int, made: int) -> None:
        """Event ``seq``, at or past the watermark's event, was taken (``made``
        decisions from it): nothing more to skip; log how many were.

        Raises:
            PositionError: the core made fewer decisions from the watermark's event
                than the stream holds.
        """
        if seq == self.id[0] and made <= self.id[1]:
            raise PositionError(
                f"{DECISIONS_STREAM} ends with decision {decision_msg_id(*self.id)} (seq "
                f"{self.seq}), but the core makes only {made} decision(s) from event seq "
                f"{seq}: that message is not this core's (delete it: nats stream rmm "
                f"{DECISIONS_STREAM} {self.seq}), or {self.fix}"
            )
        if self.skipped:
            log.info(
                "%d decisions of re-handled events skipped: on %s already, up to %s",
                self.skipped,
                DECISIONS_STREAM,
                decision_msg_id(*self.id),
            )


def past_watermark(
    mark: Watermark | None,
    seq: int,
    index: int,
    decisions: Iterable[Decision],
    out: list[Outgoing],
    metrics: CoreMetrics,
) -> int:
    """Queue the decisions of event message ``seq`` that are past the watermark
    ``mark`` (None: all) in ``out``, each as its message (subject, JSON, id
    ``decision_msg_id(seq, n)``); skip, checked (``Watermark.skip``) and counted
    (``xce_core_decisions_skipped_total``), those up to it.

    Args:
        index: the number ``n`` of the first decision among the message's.

    Returns:
        The number of the decision after the last one.

    Raises:
        PositionError: the last one skipped is not the stream's last decision.
    """
    for decision in decisions:
        subject, data = decision_subject(decision.op), dump_decision(decision)
        if mark is not None and (seq, index) <= mark.id:
            mark.skip((seq, index), subject, data)
            metrics.decisions_skipped.inc()
        else:
            out.append(Outgoing(subject, data, decision_msg_id(seq, index), tag=decision.op))
        index += 1
    return index


def passing(mark: Watermark | None, seq: int, made: int) -> Watermark | None:
    """The watermark still ahead once event message ``seq`` was taken (``made``
    decisions from it): None once it is passed (``Watermark.passed``, checked).

    Raises:
        PositionError: as ``Watermark.passed``.
    """
    if mark is None or seq < mark.id[0]:
        return mark
    mark.passed(seq, made)
    return None


@dataclass(frozen=True, slots=True)
class Positions:
    """What a starting core service found on its streams: the decision watermark
    (None: no decision of the core there) and the record watermark (the id of its
    last message on ``XCE_RECORD``; None: none)."""

    decisions: Watermark | None
    record: tuple[str, int] | None


async def check_positions(
    js: JetStreamContext, seq: int, metrics: CoreMetrics, options: CoreServiceOptions
) -> Positions:
    """Read where the core's messages end on ``XCE_DECISIONS`` and ``XCE_RECORD``
    (the watermarks) and check them, and the checkpoint at event ``seq``, against
    ``XCE_EVENTS``.

    The core goes on after event C (the checkpoint's) and skips the decisions up
    to its last one on the stream, made from event S: both positions count in
    ``XCE_EVENTS`` as it is now, so both must be of this very stream. Refused:
    C past the stream's end, events after C gone from it, S past its end, event
    S stored after that decision (it cannot be the event the decision was made
    from: the stream was made anew meanwhile), a last decision whose id is not
    after the core's one before it (a message the core did not write).

    Args:
        options: the Redis keys, for the errors (what to delete: ``afresh``).

    Raises:
        PositionError: one of those, in one line naming the streams, the
            positions and what to delete to start afresh.
        nats.errors.Error: a stream does not answer.
    """
    checkpoint_key = options.checkpoint_key
    fix = afresh(checkpoint_key, options.recording_key)
    events = (await js.stream_info(EVENTS_STREAM)).state
    first, last = events.first_seq or 1, events.last_seq or 0
    if seq > last:
        raise PositionError(
            f"checkpoint {checkpoint_key} is at event seq {seq}, past the end "
            f"of {EVENTS_STREAM} (seq {last}): {EVENTS_STREAM} was made anew or purged "
            f"after it; restore it, or {fix}"
        )
    if first > seq + 1 and last > seq:
        raise PositionError(
            f"events {seq + 1}..{first - 1} after checkpoint {checkpoint_key} "
            f"(event seq {seq}) are no longer in {EVENTS_STREAM} (it starts at seq {first}): "
            f"the core would miss them; restore them, or {fix}"
        )
    mark = None
    found = await _last_own(js, DECISIONS_STREAM, parse_decision_msg_id, fix, metrics)
    if found is not None:
        mark = await _checked_watermark(js, found, first, last, fix)
        log.info(
            "decisions already on %s up to %s (seq %d)",
            DECISIONS_STREAM,
            msg_id_of(found),
            found.seq,
        )
    record = await _last_own(js, RECORD_STREAM, parse_record_msg_id, fix, metrics)
    return Positions(mark, None if record is None else parse_record_msg_id(msg_id_of(record)))


async def _last_own(
    js: JetStreamContext,
    stream: str,
    parse: Callable[[str], object | None],
    fix: str,
    metrics: CoreMetrics,
) -> RawStreamMsg | None:
    """The core's last message on ``stream``, past other publishers' messages
    (counted in ``xce_core_foreign_messages`` and logged) and deleted ones; None:
    the core has none there.

    Raises:
        PositionError: none within ``RESUME_LOOKBACK`` messages of the end.
        nats.errors.Error: the stream does not answer.
    """
    tail = await scan_tail(
        js, stream, lambda msg_id: parse(msg_id) is not None, lookback=RESUME_LOOKBACK
    )
    if not tail.complete:
        raise PositionError(
            f"none of the last {RESUME_LOOKBACK:,} messages of {stream} (up to seq "
            f"{tail.last_seq}) is the core's: another publisher writes to it; remove "
            f"their messages (nats stream rmm), or {fix}"
        )
    if tail.foreign:
        metrics.foreign_messages.labels(stream).inc(tail.foreign)
        log.warning(
            "%s ends with %d message(s) the core did not write (up to seq %d): "
            "ignored; the core goes on after them",
            stream,
            tail.foreign,
            tail.last_seq,
        )
    return tail.found


async def _checked_watermark(
    js: JetStreamContext, found: RawStreamMsg, first: int, last: int, fix: str
) -> Watermark:
    """The watermark the core's last decision ``found`` makes, checked against
    ``XCE_EVENTS`` (``first``..``last``: its sequences now; see ``check_positions``).

    Raises:
        PositionError: the decision does not belong to this ``XCE_EVENTS``.
    """
    assert found.seq is not None
    msg_id = msg_id_of(found)
    mark = parse_decision_msg_id(msg_id)
    assert mark is not None
    where = f"{DECISIONS_STREAM} ends with the core's decision {msg_id} (seq {found.seq})"
    fix_it = (
        f"if that message is not the core's, delete it (nats stream rmm {DECISIONS_STREAM} "
        f"{found.seq}); else {fix}"
    )
    if mark[0] > last:
        raise PositionError(
            f"{where}, made from event seq {mark[0]}, past the end of {EVENTS_STREAM} "
            f"(seq {last}): {fix_it}"
        )
    if mark[0] >= first:
        with contextlib.suppress(NotFoundError):  # deleted: nothing to compare
            event = await js.get_msg(EVENTS_STREAM, seq=mark[0])
            if event.time and found.time and event.time > found.time:
                raise PositionError(
                    f"{where}, stored at {found.time:%Y-%m-%dT%H:%M:%S.%fZ}, before event "
                    f"seq {mark[0]} of {EVENTS_STREAM} (stored at "
                    f"{event.time:%Y-%m-%dT%H:%M:%S.%fZ}): {EVENTS_STREAM} was made anew "
                    f"since that decision; {fix_it}"
                )
    # The core's decision before it (none within RESUME_LOOKBACK: nothing to compare).
    before = (
        await scan_tail(
            js,
            DECISIONS_STREAM,
            lambda msg_id: parse_decision_msg_id(msg_id) is not None,
            below=found.seq,
            lookback=RESUME_LOOKBACK,
        )
    ).found
    earlier = None if before is None else parse_decision_msg_id(msg_id_of(before))
    if before is not None and earlier is not None and earlier > mark:
        raise PositionError(
            f"{where}, which is not after the core's decision before it, "
            f"{msg_id_of(before)} (seq {before.seq}): {fix_it}"
        )
    return Watermark(mark, found.seq, found.subject or "", found.data or b"", fix)
