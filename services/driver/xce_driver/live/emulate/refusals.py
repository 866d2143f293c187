"""Which dead letters refuse the live emulator's own messages, and what that means.

The emulator reads ``XCE_DEADLETTER`` (``xce.deadletter.>``), from its end at the
start, through a durable consumer of this run (``xce-sched-emulate-<run>-deadletters``,
deleted at the end). A dead letter is one of this run's messages when it names the
controller message: the bridge's dead letter has the id
``xce-bridge:ctl:<epoch>:<seq>`` itself, and the core's carries that id as
``event_id`` (an event of a batch), or names the event (its ``seq`` on
``XCE_EVENTS``), whose id is that of the controller message it was made from;
``<seq>`` is where ``XCE_CONTROLLER`` stored the emulator's message (its publish
acknowledgement), ``<epoch>`` that stream's creation time. When a message that
submitted jobs is refused (e.g. ``job 47 already exists``: an earlier run's jobs are
still in the core), none of its jobs will ever be decided on, so the run ends at once
with ``SubmissionRefused``; the refusal of another message of the run
(configuration, hosts) is logged as a warning.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from pydantic import ValidationError
from xce_kit.reader import Delivered
from xce_schemas.bus import (
    CORE_CHECKPOINT_KEY,
    CORE_RECORDING_KEY,
    CORE_SOURCE,
    DEADLETTER_PREFIX,
    DECISIONS_STREAM,
    EVENTS_STREAM,
    MSG_ID_HEADER,
    DeadLetter,
)
from xce_schemas.controller import BRIDGE_SOURCE, CTL_DECISIONS_STREAM

log = logging.getLogger(__name__)

#: How to empty the core of a run's jobs (the emulator's hints end with it).
RESET_STEPS = (
    "stop xce-bridge and xce-core-service, "
    f"delete the streams {EVENTS_STREAM}, {DECISIONS_STREAM} and {CTL_DECISIONS_STREAM} "
    f"and the Redis keys {CORE_CHECKPOINT_KEY} and {CORE_RECORDING_KEY}, then start them again"
)
#: What to do when the core refuses a job because it already has one of that id.
EARLIER_RUN_HINT = "the core still has the jobs of an earlier run: " + RESET_STEPS

#: The ``Nats-Msg-Id`` the bridge gives the event (or the dead letter) of a controller
#: message: ``xce-bridge:ctl:<epoch>:<seq>`` (``ctl_event_msg_id``).
_CTL_EVENT_ID = re.compile(r"xce-bridge:ctl:([0-9]+):([0-9]+)")  # fullmatch: no final "\n"
#: Where a refusal names a job of a jobs message (``payload.jobs[3]...``, ``jobs[3]...``).
_JOB_INDEX = re.compile(r"\bjobs\[([0-9]+)\]")
#: A refusal's parts: ``<TYPE or kind> rejected: <field>: <why>``.
_REJECTED = re.compile(r"^(?:event [0-9]+ of the batch: )?\S+ rejected: \S+: (.+)$")


class SubmissionRefused(Exception):
    """The core (or the bridge) refused a message of this run that submitted jobs:
    none of its jobs entered the core, so no decision will ever come for them.

    Attributes:
        jobid: the job the refusal names (else the message's first job).
        jobids: every job of the refused message, in submission order.
        source: who refused it, the dead letter's source: ``core`` or ``bridge``.
        reason: the dead letter's reason, as it gives it (``JOBS_PUSH rejected:
            payload.jobs[0].jobid: job 47 already exists``).

    ``str()`` is one line: the job, who refused it and why, and for a job id the core
    already knows, what to do (``EARLIER_RUN_HINT``).
    """

    def __init__(self, jobid: int, jobids: Sequence[int], source: str, reason: str) -> None:
        self.jobid = jobid
        self.jobids = tuple(jobids)
        self.source = source
        self.reason = reason
        match = _REJECTED.match(reason)
        why = match.group(1) if match else reason
        text = f"job {jobid} was refused by the {source}: {why}"
        if source == CORE_SOURCE and why.endswith("already exists"):
            text += f" ({EARLIER_RUN_HINT})"
        super().__init__(text)


@dataclass(frozen=True, slots=True)
class Sent:
    """A controller message of this run the stream has: its kind and, for ``jobs``,
    the job ids it submitted (in order)."""

    kind: str
    jobids: tuple[int, ...] = ()


async def tell_dead_letter(
    js: JetStreamContext, item: Delivered, ctl_epoch: str, sent: Mapping[int, Sent]
) -> None:
    """Tell a dead letter of one of this run's messages: raise for a jobs message,
    warn for another; ignore the rest.

    Args:
        js: reads the refused event back when the letter names it by ``seq`` only.
        item: the dead letter as delivered from ``XCE_DEADLETTER``.
        ctl_epoch: ``XCE_CONTROLLER``'s creation time (``stream_epoch``).
        sent: ``XCE_CONTROLLER`` sequence → the message of this run stored there.

    Raises:
        SubmissionRefused: it refuses a message that submitted jobs.
    """
    source = item.subject.removeprefix(DEADLETTER_PREFIX)
    if source not in (CORE_SOURCE, BRIDGE_SOURCE):
        return
    try:
        letter = DeadLetter.model_validate_json(item.data)
    except ValidationError:
        return
    if source == BRIDGE_SOURCE:  # its id names the controller message itself
        msg_id = item.headers.get(MSG_ID_HEADER)
    elif letter.event_id is not None:  # an event of a batch: its own id
        msg_id = letter.event_id
    else:
        msg_id = await event_msg_id(js, letter.seq)
    message = sent_as(msg_id, ctl_epoch, sent)
    if message is None:
        return
    if message.jobids:
        match = _JOB_INDEX.search(letter.reason)
        index = int(match.group(1)) if match else 0
        jobid = message.jobids[index] if index < len(message.jobids) else message.jobids[0]
        raise SubmissionRefused(jobid, message.jobids, source, letter.reason)
    log.warning("the %s refused this run's %s message: %s", source, message.kind, letter.reason)


async def event_msg_id(js: JetStreamContext, seq: int | None) -> str | None:
    """The ``Nats-Msg-Id`` of event ``seq`` of ``XCE_EVENTS`` (None: no such event
    or it cannot be read)."""
    if seq is None:
        return None
    try:
        event = await js.get_msg(EVENTS_STREAM, seq=seq)
    except NotFoundError:
        return None
    except NatsError as exc:
        log.warning("event %d of %s, refused by the core, not read: %s", seq, EVENTS_STREAM, exc)
        return None
    return (event.headers or {}).get(MSG_ID_HEADER)


def sent_as(msg_id: str | None, ctl_epoch: str, sent: Mapping[int, Sent]) -> Sent | None:
    """The message of this run (``sent``, in ``XCE_CONTROLLER`` of ``ctl_epoch``) a
    bridge id (``xce-bridge:ctl:<epoch>:<seq>``) names, or None (another
    controller's, or not a controller message's)."""
    match = _CTL_EVENT_ID.fullmatch(msg_id or "")
    if match is None or match.group(1) != ctl_epoch:
        return None
    return sent.get(int(match.group(2)))
