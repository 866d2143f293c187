"""The controller bridge: controller messages in, core events out, decisions back.

``xce-bridge`` sits between a cluster controller and the core service
(contract: ``xce_schemas.controller``):

1. it subscribes to ``xce.ctl.*``; each message is validated against its kind's
   payload model. A malformed one goes to ``xce.deadletter.bridge`` (a
   ``bus.DeadLetter`` with the reason) and nothing else stops;
2. it stamps each valid message with ``ts`` = its wall clock in ns, never going back
   (``max`` of the clock and the last ``ts`` stamped, so a clock step backwards or a
   restart cannot make the core reject an event), and publishes the core event on
   ``xce.events.<TYPE>``; every ``round_interval_s`` of wall time it emits a
   ``BEGIN_ROUND`` the same way (DESIGN: rounds are events);
3. it forwards every decision of ``XCE_DECISIONS``, in stream order, through a
   durable pull consumer (so a restarted bridge goes on where it stopped), to
   ``xce.ctl.decisions.<OP>`` with the header ``Xce-Decision-Id``.

**Order and exactly-once on XCE_EVENTS.** The bridge is the only publisher of the
stream. Events are published in the order they were stamped, pipelined in batches
(``publish_async``) for throughput. Each carries a ``Nats-Msg-Id`` unique to this
run (``xce-bridge:<run>:<n>``) and ``Nats-Expected-Last-Msg-Id`` naming the event
before it, so the stream takes event *n* only right after event *n - 1*: when a
publish is lost (the server restarted, the connection dropped), the ones after it
are refused too, and the bridge publishes again from the first one not
acknowledged, with the same ids; JetStream drops those it already has (duplicate
detection comes before the order check). So ``ts`` never goes back in the stream
and no event is entered twice (within the stream's duplicate window). At start the
bridge reads the last event of the stream and goes on from its ``ts`` and id. If
something else published meanwhile (the order check fails right after an
acknowledged event), the bridge logs it and goes on from there.

Controller messages travel on core NATS (at most once): what a controller publishes
while no bridge is subscribed is lost, as with any NATS subscriber. SIGTERM or
SIGINT stops it cleanly: no new messages, every event stamped is published, then
exit 0. The client reconnects to a restarted NATS server without end.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import logging
import math
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

import orjson
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, PubAck
from nats.js.errors import APIError, NotFoundError
from pydantic import ValidationError
from xce_schemas import BeginRound, CoreEvent
from xce_schemas.bus import (
    DEADLETTER_STREAM,
    DECISIONS_PREFIX,
    DECISIONS_STREAM,
    DECISIONS_SUBJECTS,
    EVENTS_STREAM,
    MSG_ID_HEADER,
    DeadLetter,
    deadletter_subject,
    event_subject,
)
from xce_schemas.controller import (
    BRIDGE_SOURCE,
    CTL_KINDS,
    CTL_SUBJECTS,
    DECISION_ID_HEADER,
    CtlPayload,
    ctl_decision_subject,
    ctl_kind_of,
    parse_ctl_payload,
    to_core_event,
)
from xce_schemas.errors import describe

from xce_driver.live.connection import connect_nats
from xce_driver.live.metrics import BridgeMetrics
from xce_driver.live.streams import ensure_streams

log = logging.getLogger("xce_driver.live.bridge")

#: The JetStream header that makes the stream check the id of its last message.
EXPECTED_LAST_MSG_ID_HEADER = "Nats-Expected-Last-Msg-Id"
#: JetStream's error code for "wrong last msg ID" (the check above failed).
WRONG_LAST_MSG_ID = 10070
#: Longest round interval, s (a day): beyond it the option is surely a mistake.
MAX_ROUND_INTERVAL_S = 86_400.0
#: How long a stopping bridge keeps retrying events the stream has not taken, s.
STOP_RETRY_S = 10.0


@dataclass(frozen=True)
class BridgeOptions:
    """What the bridge connects to and how it paces and batches.

    Attributes:
        nats_url: NATS server URL(s), comma-separated.
        round_interval_s: wall time between two ``BEGIN_ROUND`` events, s (> 0).
        durable: name of the bridge's durable consumer on ``XCE_DECISIONS``.
        publish_batch: most events published before waiting for their
            acknowledgements (≥ 1).
        ack_timeout_s: how long to wait for an event's acknowledgement before
            publishing it again, s (> 0).
        fetch_batch: decisions fetched per request (≥ 1).
        fetch_timeout_s: how long one fetch of decisions waits, s (> 0).

    Raises:
        ValueError: an option out of range, naming it.
    """

    nats_url: str = "nats://127.0.0.1:4222"
    round_interval_s: float = 1.0
    durable: str = "xce-bridge"
    publish_batch: int = 512
    ack_timeout_s: float = 5.0
    fetch_batch: int = 256
    fetch_timeout_s: float = 0.5

    def __post_init__(self) -> None:
        interval = self.round_interval_s
        if not (math.isfinite(interval) and 0 < interval <= MAX_ROUND_INTERVAL_S):
            raise ValueError(
                f"round interval must be more than 0 and at most {MAX_ROUND_INTERVAL_S:g} s, "
                f"not {interval:g}"
            )
        if self.publish_batch < 1 or self.fetch_batch < 1:
            raise ValueError("publish_batch and fetch_batch must be 1 or more")
        if not (self.ack_timeout_s > 0 and self.fetch_timeout_s > 0):
            raise ValueError("ack_timeout_s and fetch_timeout_s must be positive")


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


@dataclass(slots=True)
class _Outgoing:
    """An event stamped and waiting for the stream: its id and when it was stamped
    (``time.perf_counter()``, s)."""

    event_type: str
    subject: str
    data: bytes
    msg_id: str
    stamped: float


class Bridge:
    """The controller bridge (see the module docstring for the protocol).

    Args:
        options: connection, round interval, batching.
        metrics: where to count; default a fresh ``BridgeMetrics``.
        clock: the wall clock, ns since the epoch (tests may pass another).

    ``run`` returns after ``stop``, once every event stamped is on the stream (or
    ``STOP_RETRY_S`` of failures passed).
    """

    def __init__(
        self,
        options: BridgeOptions,
        *,
        metrics: BridgeMetrics | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.options = options
        self.metrics = metrics if metrics is not None else BridgeMetrics()
        self._clock = clock
        #: The ``ts`` of the last event stamped, ns (0: none yet).
        self.last_ts = 0
        #: Events the stream acknowledged, and decisions forwarded, in this run.
        self.published = 0
        self.forwarded = 0
        #: Reconnections to NATS since the start.
        self.reconnects = 0
        #: Set once the bridge listens to the controller subjects.
        self.ready = asyncio.Event()
        self._run_id = f"xce-bridge:{time.time_ns():x}"
        self._count = 0
        self._queue: collections.deque[_Outgoing] = collections.deque()
        self._wake = asyncio.Event()
        self._closing = False
        self._chain: str | None = None  # id of the last event the stream took
        self._dead_count = 0
        self._stop = asyncio.Event()
        self._nc: NatsClient | None = None
        self._js: JetStreamContext | None = None

    # --- lifecycle -------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Connect, then bridge until ``stop`` is set (or ``self.stop()``).

        Raises:
            nats.errors.Error, OSError: the server cannot be reached at start (later
                outages are ridden out: the client reconnects without end).
        """
        if stop is not None:
            self._stop = stop
        nc = self._nc = await connect_nats(
            self.options.nats_url,
            "xce-bridge",
            log,
            disconnected_cb=self._nats_disconnected,
            reconnected_cb=self._nats_reconnected,
        )
        js = self._js = nc.jetstream()
        try:
            await ensure_streams(js)
            await self._resume_chain()
            decisions = await self._decisions_subscription()
            sub = await nc.subscribe(
                CTL_SUBJECTS,
                cb=self._on_ctl,
                pending_msgs_limit=1_000_000,
                pending_bytes_limit=1024 * 1024 * 1024,
            )
            await nc.flush()
            self.ready.set()
            log.info("bridging xce.ctl.* ↔ %s / %s", EVENTS_STREAM, DECISIONS_STREAM)
            publisher = asyncio.create_task(self._publish_loop(), name="publish")
            rounds = asyncio.create_task(self._round_loop(), name="rounds")
            forwarder = asyncio.create_task(self._forward_loop(decisions), name="forward")
            stopped = asyncio.create_task(self._stop.wait())
            tasks = {publisher, rounds, forwarder}
            await asyncio.wait({stopped, *tasks}, return_when=asyncio.FIRST_COMPLETED)
            # Stop taking input, then publish what was stamped, then stop forwarding.
            rounds.cancel()
            with contextlib.suppress(NatsError, asyncio.CancelledError):
                await sub.drain()  # type: ignore[no-untyped-call]
            self._closing = True
            self._wake.set()
            stopped.cancel()
            forwarder.cancel()
            results = await asyncio.gather(publisher, rounds, forwarder, return_exceptions=True)
            for result in results:
                if isinstance(result, Exception):
                    raise result
        finally:
            if not nc.is_closed:
                await nc.close()
            log.info("stopped: %d events published, %d decisions forwarded", *self.counts)

    @property
    def counts(self) -> tuple[int, int]:
        """``(events published, decisions forwarded)`` in this run."""
        return self.published, self.forwarded

    def stop(self) -> None:
        """Ask ``run`` to return (after publishing every event stamped)."""
        self._stop.set()

    async def _nats_disconnected(self) -> None:
        log.warning("disconnected from NATS; reconnecting")

    async def _nats_reconnected(self) -> None:
        self.reconnects += 1
        log.info("reconnected to NATS")

    # --- time ------------------------------------------------------------------------

    def _stamp(self) -> int:
        """The next event's ``ts``: the wall clock, ns, but never before the last."""
        now = self._clock()
        if now > self.last_ts:
            self.last_ts = now
        return self.last_ts

    async def _resume_chain(self) -> None:
        """Go on from the last event of ``XCE_EVENTS``: its ``ts`` and message id."""
        assert self._js is not None
        info = await self._js.stream_info(EVENTS_STREAM)
        last = info.state.last_seq
        if not last or not info.state.messages:
            return
        try:
            msg = await self._js.get_msg(EVENTS_STREAM, seq=last)
        except NotFoundError:
            return
        self._chain = (msg.headers or {}).get(MSG_ID_HEADER)
        with contextlib.suppress(orjson.JSONDecodeError, AttributeError):
            ts = orjson.loads(msg.data or b"").get("ts")
            if isinstance(ts, int) and ts > self.last_ts:
                self.last_ts = ts
        log.info("the stream ends at seq %d, ts %d: going on from there", last, self.last_ts)

    # --- controller messages in --------------------------------------------------------

    async def _on_ctl(self, msg: Msg) -> None:
        """One controller message: validated, stamped and queued, or dead-lettered."""
        self.metrics.messages.labels(ctl_kind_of(msg.subject) or "unknown").inc()
        decoded = decode_ctl(msg.subject, msg.data)
        if isinstance(decoded, str):
            await self._dead_letter(msg, decoded)
            return
        kind, payload = decoded
        self._emit(to_core_event(kind, payload, self._stamp()))

    def _emit(self, event: CoreEvent) -> None:
        """Queue a stamped event for the stream, in stamping order."""
        self._count += 1
        self._queue.append(
            _Outgoing(
                event.type,
                event_subject(event.type),
                event.model_dump_json().encode(),
                f"{self._run_id}:{self._count}",
                time.perf_counter(),
            )
        )
        self.metrics.last_event_ts.set(event.ts / 1e9)
        self._wake.set()

    async def _dead_letter(self, msg: Msg, reason: str) -> None:
        log.warning("%s dead-lettered: %s", msg.subject, reason)
        self.metrics.dead_letters.inc()
        assert self._js is not None
        letter = DeadLetter(
            subject=msg.subject,
            reason=reason,
            data=msg.data.decode("utf-8", errors="backslashreplace"),
        )
        self._dead_count += 1
        try:
            await self._js.publish(
                deadletter_subject(BRIDGE_SOURCE),
                letter.model_dump_json().encode(),
                stream=DEADLETTER_STREAM,
                headers={MSG_ID_HEADER: f"{self._run_id}:dl:{self._dead_count}"},
                timeout=self.options.ack_timeout_s,
            )
        except NatsError as exc:  # the letter is lost, the bridge goes on
            log.warning("dead letter for %s not stored: %s", msg.subject, exc)

    # --- rounds ------------------------------------------------------------------------

    async def _round_loop(self) -> None:
        """A ``BEGIN_ROUND`` every round interval of wall time; a tick missed (a busy
        loop) is skipped, not made up in a burst."""
        interval = self.options.round_interval_s
        loop = asyncio.get_running_loop()
        next_at = loop.time() + interval
        while True:
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            self._emit(BeginRound(ts=self._stamp()))
            self.metrics.rounds.inc()
            next_at += interval
            if next_at <= loop.time():
                next_at = loop.time() + interval

    # --- events out ----------------------------------------------------------------------

    async def _publish_loop(self) -> None:
        """Publish queued events in order, a batch at a time, until closing and empty."""
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            take = min(len(self._queue), self.options.publish_batch)
            batch = [self._queue.popleft() for _ in range(take)]
            self.metrics.events_queued.set(len(self._queue) + take)
            await self._publish_batch(batch)
            self.metrics.events_queued.set(len(self._queue))

    async def _publish_batch(self, batch: list[_Outgoing]) -> None:
        """Put ``batch`` on the stream in order (see the module docstring); retries
        from the first event not acknowledged until all are in."""
        assert self._js is not None
        js, options = self._js, self.options
        pos = 0
        delay = 0.05
        give_up_at: float | None = None
        while pos < len(batch):
            futures: list[asyncio.Future[PubAck]] = []
            failure: BaseException | None = None
            previous = self._chain
            try:
                for item in batch[pos:]:
                    headers = {MSG_ID_HEADER: item.msg_id}
                    if previous is not None:
                        headers[EXPECTED_LAST_MSG_ID_HEADER] = previous
                    previous = item.msg_id
                    futures.append(
                        await js.publish_async(
                            item.subject, item.data, stream=EVENTS_STREAM, headers=headers
                        )
                    )
            except NatsError as exc:  # not connected and the client's buffer is full
                failure = exc
            if futures:
                await asyncio.wait(futures, timeout=options.ack_timeout_s)
            first_failed = pos
            for future in futures:
                if not future.done():
                    failure = failure or TimeoutError(
                        f"no acknowledgement in {options.ack_timeout_s} s"
                    )
                    break
                error = future.exception()
                if error is not None:
                    failure = error
                    break
                self._confirm(batch[pos])
                pos += 1
            for future in futures:
                if not future.done():
                    future.cancel()
                elif not future.cancelled():
                    future.exception()  # retrieved: no "never retrieved" warning
            if pos == len(batch):
                return
            if (
                isinstance(failure, APIError)
                and failure.err_code == WRONG_LAST_MSG_ID
                and pos == first_failed
            ):
                # The event before it is in the stream, yet is not its last message:
                # someone else published. Go on after whatever is there.
                log.warning("another publisher wrote to %s; going on after it", EVENTS_STREAM)
                self._chain = None
                continue
            self.metrics.publish_retries.inc()
            log.warning(
                "publish of %s failed (%s); retrying in %.2f s", batch[pos].msg_id, failure, delay
            )
            if self._closing:
                give_up_at = give_up_at or time.monotonic() + STOP_RETRY_S
                if time.monotonic() > give_up_at:
                    log.error("stopping: %d events not published", len(batch) - pos)
                    return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _confirm(self, item: _Outgoing) -> None:
        self._chain = item.msg_id
        self.published += 1
        self.metrics.events.labels(item.event_type).inc()
        self.metrics.event_publish.observe(time.perf_counter() - item.stamped)

    # --- decisions back ------------------------------------------------------------------

    async def _decisions_subscription(self) -> JetStreamContext.PullSubscription:
        """The bridge's durable consumer of ``XCE_DECISIONS``, created at the first
        start (from the first decision) and kept, so a restart goes on after the last
        decision forwarded."""
        assert self._js is not None
        js, durable = self._js, self.options.durable
        try:
            await js.consumer_info(DECISIONS_STREAM, durable)
        except NotFoundError:
            config = ConsumerConfig(
                durable_name=durable,
                deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.ALL,
                ack_wait=30.0,
                filter_subject=DECISIONS_SUBJECTS,
            )
            await js.add_consumer(DECISIONS_STREAM, config)
        return await js.pull_subscribe_bind(durable=durable, stream=DECISIONS_STREAM)

    async def _forward_loop(self, sub: JetStreamContext.PullSubscription) -> None:
        """Forward decisions in stream order; acknowledge each batch once forwarded."""
        assert self._nc is not None
        nc, options = self._nc, self.options
        while True:
            try:
                msgs = await sub.fetch(options.fetch_batch, timeout=options.fetch_timeout_s)
            except TimeoutError:
                continue
            except NatsError as exc:
                log.warning("fetch of decisions failed (%s); retrying", exc)
                await asyncio.sleep(options.fetch_timeout_s)
                continue
            for msg in msgs:
                op = msg.subject[len(DECISIONS_PREFIX) :]
                try:
                    subject = ctl_decision_subject(op)
                except ValueError:
                    log.warning("decision on %s names no op; not forwarded", msg.subject)
                    continue
                msg_id = (msg.headers or {}).get(MSG_ID_HEADER)
                headers = None if msg_id is None else {DECISION_ID_HEADER: msg_id}
                await nc.publish(subject, msg.data, headers=headers)
                self.forwarded += 1
                self.metrics.decisions_forwarded.labels(op).inc()
            if msgs:
                with contextlib.suppress(NatsError):
                    await msgs[-1].ack()  # AckPolicy.ALL: acknowledges the batch


# --- the console script ---------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, ``xce-bridge: error: ...``, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"xce-bridge: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``xce-bridge`` command line."""
    parser = _Parser(
        prog="xce-bridge",
        description="The XCE controller bridge: controller messages (xce.ctl.*) to core "
        "events (XCE_EVENTS) with the wall clock as time, a BEGIN_ROUND every round "
        "interval, decisions (XCE_DECISIONS) back to xce.ctl.decisions.<OP>.",
    )
    parser.add_argument("--nats", default="nats://127.0.0.1:4222", help="NATS server URL")
    parser.add_argument(
        "--round-interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="wall time between scheduling rounds, s (default 1.0)",
    )
    parser.add_argument(
        "--metrics-port", type=int, default=None, metavar="P", help="serve /metrics on port P"
    )
    parser.add_argument("--metrics-addr", default="0.0.0.0", help="address /metrics binds")
    parser.add_argument("--durable", default="xce-bridge", help="durable consumer name")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    return parser


async def _serve(options: BridgeOptions, metrics_port: int | None, addr: str) -> None:
    metrics = BridgeMetrics()
    server = metrics.serve(metrics_port, addr) if metrics_port is not None else None
    bridge = Bridge(options, metrics=metrics)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, bridge.stop)
    try:
        await bridge.run()
    finally:
        if server is not None:
            server.shutdown()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bridge until SIGTERM or SIGINT; exit status 0 after a clean stop, 2 on
    a bad option, 1 when NATS cannot be reached or the metrics port not bound."""
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.getLevelName(args.log_level.upper())
    if not isinstance(level, int):
        parser.error(f"--log-level: unknown level {args.log_level!r}")
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.metrics_port is not None and not 0 < args.metrics_port < 65536:
        parser.error(f"--metrics-port: {args.metrics_port} is not a TCP port (1-65535)")
    try:
        options = BridgeOptions(
            nats_url=args.nats, round_interval_s=args.round_interval, durable=args.durable
        )
    except ValueError as exc:
        parser.error(f"--round-interval: {exc}")
    try:
        asyncio.run(_serve(options, args.metrics_port, args.metrics_addr))
    except (NatsError, OSError) as exc:
        print(f"xce-bridge: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
