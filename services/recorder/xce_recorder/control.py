"""The recorder's command protocol: ``RecorderCommand`` requests (JSON) on the NATS
subject ``xce.recorder.control``, each answered by a ``RecorderReply``.

``start`` (an optional file name), ``stop`` and ``status``; the admin API sends them.
A request that is not a ``RecorderCommand`` is answered ``ok: false`` with what is
wrong with it; one sent without a reply subject is done but not answered. What each
command does is the service's (``RecorderService.handle``); this module only carries
them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from pydantic import ValidationError
from xce_schemas.admin import RECORDER_CONTROL_SUBJECT, RecorderCommand, RecorderReply
from xce_schemas.errors import describe

#: Does one command: its reply.
Handler = Callable[[RecorderCommand], Awaitable[RecorderReply]]
#: The reply refusing a request, from why (one line).
Refusal = Callable[[str], RecorderReply]


async def answer(msg: Msg, handle: Handler, refuse: Refusal) -> None:
    """Decode the request ``msg``, do it with ``handle`` and respond with its reply
    (``refuse`` a malformed one). A reply that cannot be sent (the requester gone,
    NATS down) is dropped: the requester times out and asks again."""
    try:
        command = RecorderCommand.model_validate_json(msg.data)
    except ValidationError as exc:
        reply = refuse(f"bad control request: {describe(exc, default='request')}")
    else:
        reply = await handle(command)
    if msg.reply:
        with contextlib.suppress(NatsError):
            await msg.respond(reply.model_dump_json().encode())


async def subscribe_control(nc: NatsClient, handle: Handler, refuse: Refusal) -> Subscription:
    """Answer every request on ``RECORDER_CONTROL_SUBJECT`` (``answer``) until the
    returned subscription is unsubscribed.

    Raises:
        nats.errors.Error: the subscription fails.
    """

    async def callback(msg: Msg) -> None:
        await answer(msg, handle, refuse)

    return await nc.subscribe(RECORDER_CONTROL_SUBJECT, cb=callback)
