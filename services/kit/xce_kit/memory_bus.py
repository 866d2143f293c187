"""An in-memory NATS JetStream for the services' first tier of tests: no nats-server.

``MemoryBus`` is a server in the process: it keeps subscriptions, streams and
consumers (``xce_kit.memory_stream``) and answers the JetStream API. Its
``connect`` has ``connect_nats``'s signature (``xce_kit.bus.Connect``) and gives a
``MemoryClient``: a nats-py ``Client`` whose ``publish``, ``request`` and
``subscribe`` go to the bus instead of a socket. Everything above the client runs
unchanged over it: nats-py's ``JetStreamContext`` (it speaks the API through
``request``; its ``pull_subscribe`` and ``fetch`` too), ``Msg.ack`` and
``Msg.metadata``, the kit's ``PullConsumer`` (the raw ``CONSUMER.MSG.NEXT``
requests), ``InOrderReader`` and ``ChainedPublisher``, and the services' loops. So
the seam a service needs is its connection factory, nothing else.

What it answers: publishes captured by a stream (acknowledged when sent as a
request, refused with JetStream's errors), ``$JS.API.STREAM.{CREATE,UPDATE,INFO,
DELETE,PURGE,MSG.GET,MSG.DELETE}``, ``$JS.API.CONSUMER.{CREATE,DURABLE.CREATE,INFO,
DELETE,MSG.NEXT}``, ``$JS.ACK.*`` and plain subject subscriptions and
request/reply (``*``/``>`` wildcards; a request nobody answers raises
``NoRespondersError``). Each subscription's callback runs in its own task, one
message at a time in arrival order, as nats-py runs it. What it does not keep of
JetStream: ``memory_stream``'s docstring.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.aio.client import ServerVersion
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import ConnectionClosedError, NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from xce_kit.memory_stream import (
    JetStreamError,
    Json,
    MemoryConsumer,
    MemoryStream,
    StoredMessage,
    iso_time,
    stream_not_found,
    subject_matches,
)

log = logging.getLogger("xce_kit.memory_bus")

#: What a ``MemoryClient`` tells a service about its server.
SERVER_VERSION = "2.9.10"
MAX_PAYLOAD = 1024 * 1024
_API = "$JS.API."


@dataclass(eq=False)
class _Sub:
    """One subscription: its client, id, subject pattern, callback, and the task
    that runs the callback over its queue."""

    client: MemoryClient
    sid: int
    pattern: str
    cb: Callable[[Msg], Awaitable[None]]
    queue: asyncio.Queue[Msg] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name=f"memory-sub-{self.pattern}")

    async def _run(self) -> None:
        while True:
            msg = await self.queue.get()
            try:
                await self.cb(msg)
            except Exception:  # as nats-py: a failing callback does not end the subscription
                log.exception("subscription %s: the callback failed", self.pattern)


@dataclass(slots=True)
class _PullRequest:
    """An open pull request of a consumer: where to answer, messages still owed,
    whether it ends once served (``no_wait``), and the timer that ends it."""

    reply: str
    owed: int
    no_wait: bool = False
    timer: asyncio.TimerHandle | None = None


class MemoryBus:
    """An in-memory NATS JetStream server (see the module docstring).

    Args:
        clock: the wall clock, ns since the epoch (stored times, duplicate windows).
    """

    def __init__(self, clock: Callable[[], int] = time.time_ns) -> None:
        self.clock = clock
        self.streams: dict[str, MemoryStream] = {}
        self._subs: list[_Sub] = []
        self._sids = itertools.count(1)
        self._requests: dict[tuple[str, str], list[_PullRequest]] = {}
        self._redelivery: dict[tuple[str, str], asyncio.TimerHandle] = {}

    async def connect(
        self,
        url: str,
        name: str,
        log: logging.Logger,
        *,
        disconnected_cb: Callable[[], Awaitable[None]] | None = None,
        reconnected_cb: Callable[[], Awaitable[None]] | None = None,
    ) -> NatsClient:
        """A client of this bus (``xce_kit.bus.Connect``; the URL and callbacks are
        not used: the bus never disconnects)."""
        return MemoryClient(self, name)

    # --- core NATS ----------------------------------------------------------------------

    def subscribe(
        self, client: MemoryClient, pattern: str, cb: Callable[[Msg], Awaitable[None]]
    ) -> int:
        """Add a subscription; its id."""
        sub = _Sub(client, next(self._sids), pattern, cb)
        sub.start()
        self._subs.append(sub)
        return sub.sid

    def unsubscribe(self, sid: int) -> None:
        """Remove subscription ``sid`` (its callback task is cancelled)."""
        for sub in [s for s in self._subs if s.sid == sid]:
            self._subs.remove(sub)
            if sub.task is not None:
                sub.task.cancel()

    def drop_client(self, client: MemoryClient) -> None:
        """Remove every subscription of ``client`` (closed)."""
        for sub in [s for s in self._subs if s.client is client]:
            self.unsubscribe(sub.sid)

    def _deliver(
        self,
        subject: str,
        data: bytes,
        reply: str = "",
        headers: dict[str, str] | None = None,
        to: str | None = None,
    ) -> int:
        """Hand a message on ``subject`` to every subscription matching ``to`` (default
        ``subject``; a consumer's delivery goes to the pull request's inbox but keeps
        its stream subject); how many."""
        count = 0
        for sub in self._subs:
            if subject_matches(sub.pattern, subject if to is None else to):
                msg = Msg(sub.client, subject, reply, data, headers or None, _sid=sub.sid)
                sub.queue.put_nowait(msg)
                count += 1
        return count

    def _status(self, reply: str, status: str, description: str) -> None:
        self._deliver(reply, b"", headers={"Status": status, "Description": description})

    def publish(self, subject: str, data: bytes, reply: str, headers: dict[str, str]) -> None:
        """A message from a client: JetStream's when its subject is the API's, an
        acknowledgement's or a stream's; delivered to the subscriptions as well."""
        if subject.startswith(_API + "CONSUMER.MSG.NEXT."):
            stream, durable = subject.split(".")[-2:]
            self._pull(stream, durable, json.loads(data or b"{}"), reply)
            return
        if subject.startswith("$JS.ACK."):
            self._ack(subject, data)
            return
        answer = self.jetstream(subject, data, headers)
        if answer is not None and reply:
            self._deliver(reply, json.dumps(answer).encode())
        if answer is None or not subject.startswith(_API):
            delivered = self._deliver(subject, data, reply, headers)
            if answer is None and not delivered and reply:
                self._status(reply, "503", "No Responders")

    # --- JetStream ----------------------------------------------------------------------

    def jetstream(self, subject: str, data: bytes, headers: dict[str, str]) -> Json | None:
        """JetStream's answer to a message on ``subject`` (None: JetStream does not
        take it)."""
        try:
            if subject.startswith(_API):
                return self._api(subject[len(_API) :], json.loads(data) if data else {})
            for stream in self.streams.values():
                if stream.captures(subject):
                    ack = stream.store(subject, data, headers)
                    if not ack.get("duplicate"):
                        self._serve(stream.name)
                    return ack
        except JetStreamError as exc:
            return exc.response()
        return None

    def _stream(self, name: str) -> MemoryStream:
        stream = self.streams.get(name)
        if stream is None:
            raise stream_not_found()
        return stream

    def _consumer(self, stream: str, name: str) -> MemoryConsumer:
        consumer = self._stream(stream).consumers.get(name)
        if consumer is None:
            raise JetStreamError(404, 10014, "consumer not found")
        return consumer

    def _api(self, call: str, request: Json) -> Json:
        """One JetStream API request (``call``: the subject after ``$JS.API.``)."""
        tokens = call.split(".")
        head = ".".join(tokens[:2])
        if head in ("STREAM.CREATE", "STREAM.UPDATE"):
            return self._add_stream(request, update=head == "STREAM.UPDATE")
        if head == "STREAM.INFO":
            return self._stream(tokens[2]).info()
        if head == "STREAM.DELETE":
            self._stream(tokens[2])
            for durable in list(self.streams[tokens[2]].consumers):
                self._end_requests(tokens[2], durable, "409", "Consumer Deleted")
            del self.streams[tokens[2]]
            return {"success": True}
        if head == "STREAM.PURGE":
            self._stream(tokens[2]).purge()
            return {"success": True, "purged": 0}
        if call.startswith("STREAM.MSG.GET."):
            return {"message": _raw(self._stream(tokens[3]).get(request))}
        if call.startswith("STREAM.MSG.DELETE."):
            self._stream(tokens[3]).delete(int(request["seq"]))
            return {"success": True}
        if call.startswith("CONSUMER.DURABLE.CREATE.") or head == "CONSUMER.CREATE":
            return self._add_consumer(tokens[-2] if "DURABLE" in call else tokens[2], request)
        if head == "CONSUMER.INFO":
            stream, durable = tokens[2], tokens[3]
            waiting = len(self._requests.get((stream, durable), []))
            return self._consumer(stream, durable).info(durable, waiting)
        if head == "CONSUMER.DELETE":
            self._consumer(tokens[2], tokens[3])
            del self.streams[tokens[2]].consumers[tokens[3]]
            self._end_requests(tokens[2], tokens[3], "409", "Consumer Deleted")
            return {"success": True}
        raise JetStreamError(400, 10000, f"the in-memory bus does not answer $JS.API.{call}")

    def _add_stream(self, config: Json, *, update: bool) -> Json:
        name = str(config["name"])
        existing = self.streams.get(name)
        if update:
            if existing is None:
                raise stream_not_found()
            existing.config = config
            return existing.info()
        if existing is not None:
            if existing.config != config:
                raise JetStreamError(
                    400, 10058, "stream name already in use with a different configuration"
                )
            return existing.info()
        stream = MemoryStream(config, self.clock)
        for other in self.streams.values():
            if any(
                subject_matches(a, b) or subject_matches(b, a)
                for a in stream.subjects
                for b in other.subjects
            ):
                raise JetStreamError(400, 10065, "subjects overlap with an existing stream")
        self.streams[name] = stream
        return stream.info()

    def _add_consumer(self, stream_name: str, request: Json) -> Json:
        stream = self._stream(stream_name)
        config = dict(request["config"])
        name = str(config.get("durable_name") or config.get("name"))
        existing = stream.consumers.get(name)
        if existing is not None:
            if existing.config != config:
                raise JetStreamError(400, 10013, "consumer name already in use")
            return existing.info(name, 0)
        consumer = stream.consumers[name] = MemoryConsumer(stream, config, self.clock())
        return consumer.info(name, 0)

    # --- pull consumers -----------------------------------------------------------------

    def _pull(self, stream: str, durable: str, request: Json, reply: str) -> None:
        """A ``CONSUMER.MSG.NEXT`` request: served now as far as the consumer has
        messages, the rest as they come, until it expires. A ``no_wait`` request
        (nats-py's ``fetch`` of more than one) ends with ``404 No Messages`` once
        it got what there was; with nothing there, at once, or with ``expires``
        (as nats-server 2.9 does) at the first messages that come."""
        try:
            self._consumer(stream, durable)
        except JetStreamError:
            self._status(reply, "503", "No Responders")
            return
        no_wait = bool(request.get("no_wait"))
        pull = _PullRequest(reply, max(1, int(request.get("batch") or 1)), no_wait)
        expires_ns = int(request.get("expires") or 0)
        if expires_ns:
            loop = asyncio.get_running_loop()
            pull.timer = loop.call_later(expires_ns / 1e9, self._expire, stream, durable, pull)
        waiting = self._requests.setdefault((stream, durable), [])
        waiting.append(pull)
        self._serve(stream)
        if no_wait and not expires_ns and pull in waiting:
            waiting.remove(pull)
            self._status(reply, "404", "No Messages")

    def _expire(self, stream: str, durable: str, pull: _PullRequest) -> None:
        waiting = self._requests.get((stream, durable), [])
        if pull in waiting:
            waiting.remove(pull)
            self._status(pull.reply, "408", "Request Timeout")

    def _end_requests(self, stream: str, durable: str, status: str, description: str) -> None:
        for pull in self._requests.pop((stream, durable), []):
            if pull.timer is not None:
                pull.timer.cancel()
            self._status(pull.reply, status, description)

    def _serve(self, stream_name: str) -> None:
        """Give the open pull requests of ``stream_name``'s consumers what is due."""
        stream = self.streams.get(stream_name)
        if stream is None:
            return
        for durable, consumer in stream.consumers.items():
            waiting = self._requests.get((stream_name, durable), [])
            while waiting:
                pull = waiting[0]
                now = time.monotonic_ns()
                served = False
                # Pending after each delivery: the messages behind it (deleted ones
                # counted too, where the server would not: nothing reads that close).
                for stored, delivery in consumer.next_deliveries(pull.owed, now):
                    reply = (
                        f"$JS.ACK.{stream_name}.{durable}.{delivery.count}.{stored.seq}."
                        f"{delivery.consumer_seq}.{stored.time_ns}.{stream.last_seq - stored.seq}"
                    )
                    self._deliver(stored.subject, stored.data, reply, stored.headers, to=pull.reply)
                    pull.owed -= 1
                    served = True
                if pull.owed > 0 and not (pull.no_wait and served):
                    break
                waiting.pop(0)
                if pull.timer is not None:
                    pull.timer.cancel()
                if pull.owed > 0:  # a no_wait request ends with what there was
                    self._status(pull.reply, "404", "No Messages")
            self._arm_redelivery(stream_name, durable, consumer)

    def _arm_redelivery(self, stream: str, durable: str, consumer: MemoryConsumer) -> None:
        """Serve again once the earliest unacknowledged delivery's ack wait passes."""
        key = (stream, durable)
        timer = self._redelivery.pop(key, None)
        if timer is not None:
            timer.cancel()
        due = consumer.next_redelivery_ns()
        if due is not None and self._requests.get(key):
            delay = max(0.0, (due - time.monotonic_ns()) / 1e9)
            self._redelivery[key] = asyncio.get_running_loop().call_later(
                delay, self._serve, stream
            )

    def _ack(self, subject: str, data: bytes) -> None:
        """``$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.…``: positive
        acknowledgements only (``+ACK`` or empty)."""
        tokens = subject.split(".")
        if data not in (b"", b"+ACK"):
            return
        with contextlib.suppress(JetStreamError):
            self._consumer(tokens[2], tokens[3]).ack(int(tokens[5]))


def _raw(stored: StoredMessage) -> Json:
    """A stored message as ``STREAM.MSG.GET`` answers it (base64 bytes and headers)."""
    raw: Json = {
        "subject": stored.subject,
        "seq": stored.seq,
        "data": base64.b64encode(stored.data).decode(),
        "time": iso_time(stored.time_ns),
    }
    if stored.headers:
        lines = "".join(f"{k}: {v}\r\n" for k, v in stored.headers.items())
        raw["hdrs"] = base64.b64encode(f"NATS/1.0\r\n{lines}\r\n".encode()).decode()
    return raw


class MemoryClient(NatsClient):
    """A nats-py client of a ``MemoryBus`` (see the module docstring): connected from
    the start, never reconnecting; ``close`` drops its subscriptions.

    Args:
        bus: the bus.
        name: the client's name.
    """

    def __init__(self, bus: MemoryBus, name: str) -> None:
        super().__init__()
        self._bus = bus
        self.options["name"] = name
        self._status = NatsClient.CONNECTED
        self._max_payload = MAX_PAYLOAD
        self._server_info = {"version": SERVER_VERSION, "max_payload": MAX_PAYLOAD}

    @property
    def connected_server_version(self) -> ServerVersion:
        """The version a nats-server of the same features would say (``SERVER_VERSION``)."""
        return ServerVersion(SERVER_VERSION)

    def _check_open(self) -> None:
        if self.is_closed:
            raise ConnectionClosedError

    async def publish(
        self,
        subject: str,
        payload: bytes = b"",
        reply: str = "",
        headers: dict[str, Any] | None = None,
    ) -> None:
        """Publish to the bus (see ``MemoryBus.publish``).

        Raises:
            nats.errors.ConnectionClosedError: the client is closed.
        """
        self._check_open()
        self._bus.publish(subject, payload, reply, {k: str(v) for k, v in (headers or {}).items()})

    async def request(
        self,
        subject: str,
        payload: bytes = b"",
        timeout: float = 0.5,
        old_style: bool = False,
        headers: dict[str, Any] | None = None,
    ) -> Msg:
        """Publish with a reply inbox and wait for the first answer.

        Raises:
            nats.errors.NoRespondersError: nobody answers the subject.
            nats.errors.TimeoutError: no answer within ``timeout`` s.
            nats.errors.ConnectionClosedError: the client is closed.
        """
        self._check_open()
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Msg] = loop.create_future()

        async def on_answer(msg: Msg) -> None:
            if not answer.done():
                answer.set_result(msg)

        inbox = self.new_inbox()
        sid = self._bus.subscribe(self, inbox, on_answer)
        try:
            await self.publish(subject, payload, reply=inbox, headers=headers)
            try:
                msg = await asyncio.wait_for(answer, timeout)
            except TimeoutError:
                raise NatsTimeoutError from None
        finally:
            self._bus.unsubscribe(sid)
        if msg.headers and msg.headers.get("Status") == "503":
            raise NoRespondersError
        return msg

    async def subscribe(
        self,
        subject: str,
        queue: str = "",
        cb: Callable[[Msg], Awaitable[None]] | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> Subscription:
        """Subscribe ``cb`` to ``subject``; without a callback, the messages wait
        for ``Subscription.next_msg`` (as nats-py's ``pull_subscribe`` reads). No
        queue groups.

        Raises:
            nats.errors.ConnectionClosedError: the client is closed.
        """
        self._check_open()
        if queue:
            raise NotImplementedError("the in-memory bus takes no queue groups")
        if cb is not None:
            return Subscription(self, self._bus.subscribe(self, subject, cb), subject, cb=cb)
        sub = Subscription(self, 0, subject)

        async def hold(msg: Msg) -> None:
            sub._pending_size += len(msg.data)
            sub._pending_queue.put_nowait(msg)

        sub._id = self._bus.subscribe(self, subject, hold)
        return sub

    def _remove_sub(self, sid: int, max_msgs: int = 0) -> None:
        self._bus.unsubscribe(sid)

    async def _send_unsubscribe(self, sid: int, limit: int = 0) -> None:
        """Nothing to send: ``_remove_sub`` did it."""

    async def flush(self, timeout: int = 10) -> None:
        """Let the subscriptions' callbacks take what was delivered so far."""
        self._check_open()
        await asyncio.sleep(0)

    async def close(self) -> None:
        """Close: no more publishing; the subscriptions are dropped."""
        if not self.is_closed:
            self._status = NatsClient.CLOSED
            self._bus.drop_client(self)

    async def drain(self) -> None:
        """As ``close``."""
        await self.close()
