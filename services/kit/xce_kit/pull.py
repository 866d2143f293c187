"""Fetching from a durable JetStream pull consumer without a task per message.

nats-py's ``PullSubscription.fetch`` waits for every message of a batch with its own
``asyncio.wait_for`` (a task each): about 110 µs of CPU per message on this project's
2-core machine, against about 28 µs through one subscription callback (50,000
messages, ``benchmarks/bench_live``'s "each service alone" rows show the effect).
The core service reads every event through a consumer, so that cost was a large
part of its CPU per event. ``xce_kit.reader.InOrderReader`` (the bridge and the
emulator) reads through it too.

``PullConsumer`` speaks the same JetStream pull API nats-py uses
(``$JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>``, a JSON request ``{"batch",
"expires"}`` answered on a reply inbox): one pull request is kept open at a time,
its messages are gathered by a plain subscription callback, and ``fetch`` hands
over what has arrived. A request lives until it has delivered its batch or the
server answers it with a status (``404`` no messages, ``408`` expired, ``409``
conflict); each request has its own reply subject, so a late status of an old
request is never taken for the current one's. A request counts as over
``LOST_REQUEST_GRACE_S`` after its expiry even when the server never answered it
(lost in a NATS restart, or left unanswered under load).
The consumer delivers in stream order over one connection, so the messages of
successive requests arrive in order too.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from dataclasses import dataclass

import orjson
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import ConnectionClosedError, NotJSMessageError
from nats.js.api import Header, StatusCode
from nats.js.errors import APIError

log = logging.getLogger("xce_kit.pull")

#: How long after its expiry an open request counts as over, answered or not, s. The
#: server holds no request past its expiry, but does not always say so: under load,
#: nats-server 2.9 was seen leaving a request unanswered (bench_live's core and
#: bridge, about once a minute); a request lost with a restarted server is never
#: answered either. Waiting for an answer stalled the reader (a p99 of 1.4 s).
LOST_REQUEST_GRACE_S = 0.05
#: Statuses that end a pull request without an error: nothing (more) to deliver.
_ENDS = frozenset({StatusCode.NO_MESSAGES.value, StatusCode.REQUEST_TIMEOUT.value})


@dataclass(slots=True)
class _Request:
    """One open pull request: its reply subject, messages still owed, and when the
    server ends it (monotonic s)."""

    reply: str
    owed: int
    deadline: float


class PullConsumer:
    """Batches of a durable pull consumer's deliveries (see the module docstring).

    Args:
        nc: a connected client.
        stream: the stream's name.
        durable: the durable consumer's name (it must exist; ``bind`` subscribes).
    """

    def __init__(self, nc: NatsClient, stream: str, durable: str) -> None:
        self._nc = nc
        self.stream = stream
        self.durable = durable
        self._api = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}"
        self._inbox = nc.new_inbox()
        self._sub: Subscription | None = None
        self._ready: deque[Msg] = deque()
        self._request: _Request | None = None
        self._numbers = itertools.count(1)
        self._arrived = asyncio.Event()
        self._error: APIError | None = None

    @classmethod
    async def bind(cls, nc: NatsClient, stream: str, durable: str) -> PullConsumer:
        """A consumer ready to fetch: its reply subscription is made.

        Raises:
            nats.errors.Error: the subscription could not be made.
        """
        consumer = cls(nc, stream, durable)
        # No limit on what waits in the subscription: a request never asks for
        # more than one batch, so at most about two batches are ever waiting.
        consumer._sub = await nc.subscribe(
            consumer._inbox + ".*", cb=consumer._on_msg, pending_msgs_limit=0, pending_bytes_limit=0
        )
        return consumer

    async def unsubscribe(self) -> None:
        """Stop receiving; deliveries not fetched come again after the ack wait."""
        if self._sub is not None:
            with contextlib.suppress(Exception):  # closed connection: nothing to undo
                await self._sub.unsubscribe()
            self._sub = None

    async def _on_msg(self, msg: Msg) -> None:
        headers = msg.headers
        status = headers.get(Header.STATUS) if headers else None
        request = self._request
        if status is None:
            self._ready.append(msg)
            if request is not None:
                request.owed -= 1
                if request.owed <= 0:
                    self._request = None
            self._arrived.set()
            return
        if status == StatusCode.CONTROL_MESSAGE.value or request is None:
            return  # a heartbeat, or the answer to a request already given up
        if msg.subject != request.reply:
            return  # a late answer to an earlier request
        self._request = None
        if status not in _ENDS:
            try:
                APIError.from_msg(msg)  # raises the error the status stands for
            except APIError as exc:
                self._error = exc
        self._arrived.set()

    async def fetch(self, batch: int, timeout: float) -> list[Msg]:
        """Up to ``batch`` deliveries in stream order: those already here, else the
        first to arrive within ``timeout`` s (with any that came with them). When
        no request is left open, the next one goes out before this returns.

        Raises:
            TimeoutError: nothing arrived within ``timeout``.
            nats.js.errors.APIError: the server refused the pull request (e.g. the
                consumer was deleted).
            nats.errors.ConnectionClosedError: the client is closed for good.
        """
        deadline = time.monotonic() + timeout
        while not self._ready:
            if self._nc.is_closed:
                raise ConnectionClosedError
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                raise TimeoutError
            request = self._request
            if request is not None and now > request.deadline + LOST_REQUEST_GRACE_S:
                log.debug(
                    "%s: pull request %s not answered; asking again", self.stream, request.reply
                )
                self._request = request = None  # over on the server, answered or not
            self._arrived.clear()
            if request is None:
                await self._pull(batch, left, now)
                request = self._request
            if not self._ready and self._error is None:
                # Woken by a message, by the end of the open request, or once that
                # request is over on the server whether answered or not (then a new
                # one goes out on the next turn, until this fetch's own deadline).
                wait = left if request is None else request.deadline + LOST_REQUEST_GRACE_S - now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._arrived.wait(), max(0.001, min(left, wait)))
        ready = self._ready
        taken = [ready.popleft() for _ in range(min(batch, len(ready)))]
        if self._request is None and not self._nc.is_closed:
            # Ask for the next batch now: it flows while the caller handles this one.
            await self._pull(batch, timeout, time.monotonic())
        return taken

    async def _pull(self, batch: int, timeout: float, now: float) -> None:
        """Open a request for ``batch`` messages that the server ends after
        ``timeout`` s (a little sooner, so its answer arrives within the wait)."""
        reply = f"{self._inbox}.{next(self._numbers)}"
        expires_ns = max(1_000_000, int(timeout * 1e9) - 10_000_000)
        self._request = _Request(reply, batch, now + timeout)
        await self._nc.publish(
            self._api, orjson.dumps({"batch": batch, "expires": expires_ns}), reply=reply
        )


#: Tokens of a delivery's reply subject without domain and account (the short form).
_SHORT_ACK_TOKENS = 9


def stream_seq(msg: Msg) -> int:
    """The stream sequence of a consumer's delivery, read from its reply subject:
    ``$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ts>.<pending>``,
    or the longer form with domain and account hash after ``ACK``. This is the part
    of ``msg.metadata`` the readers need per message, without the rest it builds (a
    datetime and three objects: about a tenth of the bridge's CPU when it was used).

    Raises:
        nats.errors.NotJSMessageError: ``msg`` is not a JetStream delivery.
    """
    reply = msg.reply
    if not reply.startswith("$JS.ACK."):
        raise NotJSMessageError
    tokens = reply.split(".")
    return int(tokens[5] if len(tokens) == _SHORT_ACK_TOKENS else tokens[Msg.Ack.StreamSeq])
