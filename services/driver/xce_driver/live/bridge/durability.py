"""What the bridge has done with the controller's messages, and where a restarted
bridge goes on.

``CtlProgress`` keeps the controller position: the last ``XCE_CONTROLLER`` sequence
turned into an event or a dead letter (*taken*) and the last one up to which every
message's event is on ``XCE_EVENTS`` or its dead letter stored (*done*); a
delivery is acknowledged only once done (``AckPolicy.ALL``: the last delivery
done covers every one before it). ``resume_point`` reads where ``XCE_EVENTS``
ends: its last ``ts`` and the controller position its last events carry
(``Xce-Ctl-Seq``, ``Xce-Ctl-Epoch``), so that a controller message delivered again
at or before it is acknowledged and dropped, never stamped a second time.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from xce_kit.pull import stream_seq
from xce_schemas.bus import EVENTS_STREAM
from xce_schemas.controller import CTL_EPOCH_HEADER, CTL_SEQ_HEADER

from xce_driver.live.bridge.options import RESUME_LOOKBACK
from xce_driver.live.event_codec import last_ts

log = logging.getLogger(__name__)


class CtlProgress:
    """The bridge's position on ``XCE_CONTROLLER`` and the deliveries waiting for it
    (see the module docstring).

    Args:
        ack: acknowledges one delivery (a lost acknowledgement only means the
            message comes again, and is dropped).
    """

    def __init__(self, ack: Callable[[Msg], Awaitable[None]]) -> None:
        self._ack = ack
        #: ``XCE_CONTROLLER``'s creation time, µs (``xce_kit.reader.stream_epoch``).
        self.epoch = "0"
        self.taken = 0
        self.done = 0
        #: Deliveries of controller messages to acknowledge once done, by sequence.
        self._acks: dict[int, Msg] = {}
        #: Dead-lettered controller messages not yet done (an earlier one is not).
        self._dead: set[int] = set()

    def start(self, position: int) -> None:
        """Go on after controller message ``position`` (taken and done)."""
        self.taken = self.done = position

    def took(self, seq: int, msg: Msg | None) -> None:
        """Controller message ``seq`` is an event on its way to the stream; its
        delivery ``msg`` (None: read from the stream) waits until it is done."""
        self.taken = seq
        if msg is not None:
            self._acks[seq] = msg

    async def dead_lettered(self, seq: int, msg: Msg | None) -> None:
        """Controller message ``seq``'s dead letter is stored. It is done once every
        message before it is: acknowledging it now would, under ``AckPolicy.ALL``,
        also acknowledge earlier messages whose events are not stored yet (lost if
        the bridge died then)."""
        self._dead.add(seq)
        self.took(seq, msg)
        self.advance(self.done)
        await self.ack_done()

    def advance(self, seq: int) -> None:
        """Everything up to controller message ``seq`` is done; so is each
        dead-lettered message right after it (its dead letter is stored)."""
        done = max(self.done, seq)
        while done + 1 in self._dead:
            done += 1
        self.done = done
        if self._dead:  # rare: do not rebuild an empty set for every event
            self._dead = {dead for dead in self._dead if dead > done}

    async def redelivered(self, msgs: Sequence[Msg]) -> None:
        """Deliveries again of messages taken before: acknowledged when done, else
        kept until their events are stored."""
        for msg in msgs:
            seq = stream_seq(msg)
            if seq <= self.done:
                await self._ack(msg)
            else:
                self._acks[seq] = msg

    async def ack_done(self) -> None:
        """Acknowledge every controller message done: the last such delivery
        (``AckPolicy.ALL`` covers the ones before it)."""
        done = [seq for seq in self._acks if seq <= self.done]
        if done:
            last = self._acks[max(done)]
            for seq in done:
                del self._acks[seq]
            await self._ack(last)


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where ``XCE_EVENTS`` ends: the ``ts`` of its last event (None: not known) and
    the last controller sequence already an event (0: none known)."""

    ts: int | None
    position: int


async def resume_point(js: JetStreamContext, epoch: str) -> ResumePoint:
    """Read the end of ``XCE_EVENTS``: the last event's ``ts``, and the controller
    position of the last event that carries one (looking back at most
    ``RESUME_LOOKBACK`` events, past another publisher's); a position of another
    ``XCE_CONTROLLER`` than ``epoch``'s counts as none.

    Raises:
        nats.errors.Error: the stream does not answer.
    """
    info = await js.stream_info(EVENTS_STREAM)
    last = info.state.last_seq
    ts: int | None = None
    position = 0
    if last and info.state.messages:
        first = max(info.state.first_seq or 1, last - RESUME_LOOKBACK + 1)
        for seq in range(last, first - 1, -1):
            try:
                msg = await js.get_msg(EVENTS_STREAM, seq=seq)
            except NotFoundError:
                continue
            headers = msg.headers or {}
            if seq == last:
                ts = last_ts(msg.subject or "", msg.data or b"")
            ctl_seq = headers.get(CTL_SEQ_HEADER)
            if ctl_seq is not None and ctl_seq.isdigit():
                if headers.get(CTL_EPOCH_HEADER) == epoch:
                    position = int(ctl_seq)
                break
        log.info(
            "the stream ends at seq %d, ts %s, controller seq %d: going on from there",
            last,
            ts,
            position,
        )
    return ResumePoint(ts, position)
