"""The bridge's handler: one controller message decoded and validated, stamped with
the bridge's clock and turned into the core event it stands for, or the one-line
reason it is rejected (dead-lettered). No I/O here (``service`` queues the event
for ``XCE_EVENTS`` or stores the dead letter).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError
from xce_schemas import CoreEvent, dump_event
from xce_schemas.controller import (
    CTL_KINDS,
    CtlPayload,
    ctl_kind_of,
    parse_ctl_payload,
    to_core_event,
)
from xce_schemas.errors import describe


def decode_ctl(subject: str, data: bytes) -> tuple[str, CtlPayload] | str:
    """Decode and validate one controller message.

    Returns:
        ``(kind, payload)``, or why it is rejected: one line naming the kind and the
        field (``jobs rejected: jobs[0].tasks: Input should be ...``).
    """
    kind = ctl_kind_of(subject)
    if kind is None:
        return (
            f"subject {subject!r} names no controller kind "
            f"(xce.ctl.<kind>, kind one of {', '.join(CTL_KINDS)})"
        )
    try:
        return kind, parse_ctl_payload(kind, data)
    except ValidationError as exc:
        return f"{kind} rejected: {describe(exc, default='message')}"


def ctl_to_event(
    subject: str, data: bytes, stamp: Callable[[], int], room: int
) -> tuple[CoreEvent, bytes] | str:
    """The core event a controller message stands for, stamped with ``stamp()``
    (its ``ts``, ns), and its JSON; or why it is rejected (``decode_ctl``, or an
    event of more than ``room`` bytes: published, it would be refused for ever,
    "maximum payload exceeded", and hold up every message after it, across
    restarts too)."""
    decoded = decode_ctl(subject, data)
    if isinstance(decoded, str):
        return decoded
    kind, payload = decoded
    event = to_core_event(kind, payload, stamp())
    event_data = dump_event(event)
    if len(event_data) > room:
        return (
            f"{kind} rejected: its core event is {len(event_data):,} bytes, more than the "
            f"{room:,} one message on the bus can carry: send it in smaller messages"
        )
    return event, event_data
