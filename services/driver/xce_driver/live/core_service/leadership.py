"""Whether this core service may consume and publish: the seam of a standby core.

Only one core service may consume ``XCE_EVENTS`` and publish decisions at a time.
A ``Leadership`` tells the service when it may. ``CoreService.run`` makes it from
its JetStream context (a ``LeadershipFactory``) once connected, awaits ``acquire``
before it reads the checkpoint or creates its consumer (a standby waits there), and
every turn of work (a batch of events, a checkpoint, a recording command, a
heartbeat: ``CoreService.turn``, the one place) reads ``leading`` first, so a
service that lost the lead publishes nothing more and writes no checkpoint: ``run``
returns at once. After a clean stop (its last checkpoint written) ``run`` calls
``release``, so a standby takes over without waiting for the lease to expire.

The default, ``AlwaysLeading``, is the lone core. The kit's lease in NATS KV
(``xce_kit.lease.Lease``) has the same three members.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from nats.js import JetStreamContext
from xce_kit.lease import Lease


class LeadershipLost(Exception):
    """This service no longer leads: it stops at once, publishing nothing more."""


class Leadership(Protocol):
    """When this core service may work (see the module docstring)."""

    @property
    def leading(self) -> bool:
        """Whether this service leads now; read before every turn of work."""
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
    """The lone core: it leads from the start and never stops leading."""

    @property
    def leading(self) -> bool:
        """Always True."""
        return True

    async def acquire(self) -> None:
        """Return at once."""

    async def release(self) -> None:
        """Nothing to release."""


def always_leading(_js: JetStreamContext) -> Leadership:
    """The default ``LeadershipFactory``: ``AlwaysLeading``."""
    return AlwaysLeading()


_: type[Leadership] = AlwaysLeading
_lease: type[Leadership] = Lease  # the lease fits the seam as it is
