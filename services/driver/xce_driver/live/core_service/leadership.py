"""Whether this core service may consume and publish: the seam of a standby core.

Only one core service may consume ``XCE_EVENTS`` and publish decisions at a time.
A ``Leadership`` tells the service when it may. ``CoreService.run`` makes it from
its JetStream context (a ``LeadershipFactory``) once connected, awaits ``acquire``
before it reads the checkpoint or creates its consumer (a standby waits there), and
every turn of work (a batch of events, a checkpoint, a recording command, a
heartbeat: ``CoreService.turn``) reads ``leading`` first, and so does every write
right before it is sent (each window of decisions or recording messages, a dead
letter, the acknowledgement, the checkpoint, a recording command's key, the status:
the *fence*), so a service that lost the lead publishes nothing more and writes no
checkpoint. ``run`` also races its work against ``lost``: once it is set the work is
cancelled wherever it waits, and ``run`` raises ``LeadershipLost`` at once, writing
nothing more and releasing nothing. After a clean stop (its last checkpoint written)
``run`` calls ``release``, so a standby takes over without waiting for the lease to
expire.

The default, ``AlwaysLeading``, is the lone core. The kit's lease in NATS KV
(``xce_kit.lease.Lease``) has the same members. ``lead`` and ``while_leading`` are
the waiting and the race ``run`` makes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

from nats.js import JetStreamContext
from xce_kit.lease import Lease
from xce_kit.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: How long a core waits for the lease before it says, once, that it is a standby, s.
STANDBY_NOTICE_S = 1.0

T = TypeVar("T")


class LeadershipLost(Exception):
    """This service no longer leads: it stops at once, publishing nothing more."""


def lost_lead(leadership: Leadership, seq: int) -> LeadershipLost:
    """The error of a service that lost the lead after event ``seq``: one line
    naming its term and holder id."""
    who = leadership.holder_id or "this service"
    return LeadershipLost(
        f"lost the lead (term {leadership.term} of {who}) after event seq {seq}: "
        "stopped, sending nothing more"
    )


class Leadership(Protocol):
    """When this core service may work (see the module docstring)."""

    @property
    def leading(self) -> bool:
        """Whether this service leads now; read before every turn of work."""
        ...

    @property
    def lost(self) -> asyncio.Event:
        """Set once the lead was lost (not by ``release``): the current term's
        event, read after ``acquire``."""
        ...

    @property
    def term(self) -> int | None:
        """The current term's number (None: none, or a lone core)."""
        ...

    @property
    def holder_id(self) -> str:
        """Who this service is to the others (e.g. ``host:pid``; "" for a lone core)."""
        ...

    async def acquire(self) -> object:
        """Return once this service leads (at once when it already does).

        Raises:
            Whatever keeps it from ever leading (the service stops with it).
        """
        ...

    async def release(self) -> None:
        """Stop leading, so that another service may take over at once."""
        ...


#: Makes a service's ``Leadership`` from its JetStream context, once connected.
LeadershipFactory = Callable[[JetStreamContext], Leadership]


class AlwaysLeading:
    """The lone core: it leads from the start and never stops leading (no term, no
    holder id)."""

    term: int | None = None
    holder_id = ""

    def __init__(self) -> None:
        self._never = asyncio.Event()

    @property
    def leading(self) -> bool:
        """Always True."""
        return True

    @property
    def lost(self) -> asyncio.Event:
        """Never set."""
        return self._never

    async def acquire(self) -> None:
        """Return at once."""

    async def release(self) -> None:
        """Nothing to release."""


def always_leading(_js: JetStreamContext) -> Leadership:
    """The default ``LeadershipFactory``: ``AlwaysLeading``."""
    return AlwaysLeading()


_: type[Leadership] = AlwaysLeading
_lease: type[Leadership] = Lease  # the lease fits the seam as it is


async def lead(leadership: Leadership, stop: asyncio.Event) -> bool:
    """Wait until this service leads (a standby waits here, doing nothing else).

    Returns:
        True once it leads; False when ``stop`` was set first.

    Raises:
        Whatever ``leadership.acquire`` raises (what keeps it from ever leading).
    """
    acquire = asyncio.create_task(leadership.acquire())
    stopped = asyncio.create_task(stop.wait())
    try:
        done, _ = await asyncio.wait(
            {acquire, stopped}, timeout=STANDBY_NOTICE_S, return_when=asyncio.FIRST_COMPLETED
        )
        if not done:
            # The operator's answer to "why does this core do nothing": it is a standby.
            log.info("a standby: waiting for the lead (the lease is held by another core)")
            await asyncio.wait({acquire, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        led = acquire.done()
        await cancel_and_wait(stopped, acquire)  # those still running
    if led:
        acquire.result()  # what kept it from leading, raised
    return led


async def while_leading(
    leadership: Leadership, work: Coroutine[Any, Any, T], seq: Callable[[], int]
) -> T:
    """Run ``work`` while this service leads: once ``leadership.lost`` is set it is
    cancelled wherever it waits (``xce_kit.tasks.cancel_and_wait``: nothing it had
    not sent yet goes out).

    Args:
        seq: the last event handled, for the error (``lost_lead``).

    Returns:
        What ``work`` returned.

    Raises:
        LeadershipLost: the lead was lost first.
        Whatever ``work`` raised.
    """
    task = asyncio.create_task(work)
    lost = asyncio.create_task(leadership.lost.wait())
    try:
        await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait(lost, task)  # those still running
    if task.cancelled():
        raise lost_lead(leadership, seq())
    return task.result()
