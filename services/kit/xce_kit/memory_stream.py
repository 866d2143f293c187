"""The state of an in-memory JetStream: streams and their durable consumers, as
``xce_kit.memory_bus`` keeps them for the services' first tier of tests.

It answers in JetStream's own JSON (the API responses nats-py parses: publish
acknowledgements, stream and consumer info, stored messages) and refuses with
JetStream's own error codes, so that nats-py's ``JetStreamContext`` and the kit's
readers and publishers run unchanged over it. What it keeps of JetStream is what
the services depend on (``tests/live/test_bus_contract.py`` checks each point
against a real nats-server):

* a stream captures the subjects its patterns match (``*``, ``>``), numbers its
  messages from 1, remembers each ``Nats-Msg-Id`` for its duplicate window (a copy
  is acknowledged as a duplicate with the first one's sequence, not stored) and
  checks ``Nats-Expected-Stream`` (10060), ``Nats-Expected-Last-Sequence`` (10071)
  and ``Nats-Expected-Last-Msg-Id`` (10070) in the server's order;
* messages are read by sequence or last by subject, deleted one by one, purged;
* a pull consumer (durable, or named by its client as nats-py's ``pull_subscribe``
  does) starts by its deliver policy, delivers in stream order the messages its
  filter subject(s) match, counts deliveries, keeps the acknowledgement floor
  (``AckPolicy.ALL``: one acknowledgement covers every delivery before it;
  ``EXPLICIT``; ``NONE``) and delivers again what was not acknowledged within its
  ack wait; a ``no_wait`` pull request ends once served (``memory_bus``).

Not kept: retention limits (``max_age``, ``max_bytes``, ``max_msgs``), replicas,
``max_ack_pending``, ``inactive_threshold``, push consumers, a server restart.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: A JSON object as the JetStream API sends it.
Json = dict[str, Any]

#: The duplicate window of a stream whose configuration names none, ns (JetStream's 2 min).
DEFAULT_DUPLICATE_WINDOW_NS = 120 * 1_000_000_000
#: The consumer's ack wait when its configuration names none, ns (JetStream's 30 s).
DEFAULT_ACK_WAIT_NS = 30 * 1_000_000_000


class JetStreamError(Exception):
    """A JetStream API refusal: ``code`` (HTTP-like: 400, 404, 503), ``err_code``
    (JetStream's own, e.g. 10071) and the server's description."""

    def __init__(self, code: int, err_code: int, description: str) -> None:
        super().__init__(description)
        self.code = code
        self.err_code = err_code
        self.description = description

    def response(self) -> Json:
        """The API's error response."""
        error = {"code": self.code, "err_code": self.err_code, "description": self.description}
        return {"error": error}


def stream_not_found() -> JetStreamError:
    """JetStream's refusal for a stream that does not exist."""
    return JetStreamError(404, 10059, "stream not found")


def subject_matches(pattern: str, subject: str) -> bool:
    """Whether NATS subject ``pattern`` (``*``: one token, ``>``: the rest, at least
    one) matches ``subject``."""
    want, have = pattern.split("."), subject.split(".")
    for index, token in enumerate(want):
        if token == ">":
            return len(have) > index
        if index >= len(have) or (token != "*" and token != have[index]):
            return False
    return len(want) == len(have)


def iso_time(ns: int) -> str:
    """``ns`` since the epoch as JetStream writes times (RFC 3339, UTC, ``Z``)."""
    moment = datetime.datetime.fromtimestamp(ns / 1e9, datetime.UTC)
    return moment.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One message of a stream: its sequence, subject, bytes, headers and when it was
    stored (ns since the epoch)."""

    seq: int
    subject: str
    data: bytes
    headers: dict[str, str]
    time_ns: int


@dataclass(slots=True)
class _Delivery:
    """A delivery awaiting acknowledgement: its consumer sequence, how many times the
    message was delivered, and when it was last (monotonic ns)."""

    consumer_seq: int
    count: int
    at_ns: int


@dataclass
class MemoryConsumer:
    """A durable pull consumer of a ``MemoryStream`` (see the module docstring).

    Args:
        stream: what it delivers from.
        config: its configuration as the API sent it (``ConsumerConfig.as_dict()``).
        created_ns: when it was made, ns since the epoch.
    """

    stream: MemoryStream
    config: Json
    created_ns: int
    #: The last stream and consumer sequences delivered.
    delivered_stream: int = 0
    delivered_consumer: int = 0
    #: Everything up to these sequences is acknowledged.
    floor_stream: int = 0
    floor_consumer: int = 0
    pending: dict[int, _Delivery] = field(default_factory=dict)

    def __post_init__(self) -> None:
        policy = self.config.get("deliver_policy") or "all"
        if policy == "by_start_sequence":
            start = int(self.config.get("opt_start_seq") or 1) - 1
        elif policy == "new":
            start = self.stream.last_seq
        elif policy == "last":
            start = max(0, self.stream.last_seq - 1)
        else:
            start = max(0, self.stream.first_seq - 1)
        # The server reports no acknowledgement floor until the first acknowledgement.
        self.delivered_stream = start

    def wants(self, stored: StoredMessage) -> bool:
        """Whether its filter subject(s) match ``stored`` (no filter: every message)."""
        patterns = self.config.get("filter_subjects") or [self.config.get("filter_subject")]
        patterns = [p for p in patterns if p]
        return not patterns or any(subject_matches(p, stored.subject) for p in patterns)

    @property
    def ack_policy(self) -> str:
        """``all``, ``explicit`` or ``none``."""
        return str(self.config.get("ack_policy") or "explicit")

    def _ack_wait_ns(self) -> int:
        return int(self.config.get("ack_wait") or DEFAULT_ACK_WAIT_NS)

    def next_deliveries(self, batch: int, now_ns: int) -> list[tuple[StoredMessage, _Delivery]]:
        """Up to ``batch`` deliveries in order: first those whose ack wait passed
        (delivered again), then messages not delivered yet."""
        out: list[tuple[StoredMessage, _Delivery]] = []
        wait = self._ack_wait_ns()
        for seq in sorted(self.pending):
            if len(out) == batch:
                return out
            delivery = self.pending[seq]
            stored = self.stream.messages.get(seq)
            if stored is None:  # deleted meanwhile: nothing to deliver again
                del self.pending[seq]
            elif now_ns - delivery.at_ns >= wait:
                delivery.count += 1
                delivery.at_ns = now_ns
                out.append((stored, delivery))
        seq = self.delivered_stream
        while len(out) < batch and seq < self.stream.last_seq:
            seq += 1
            stored = self.stream.messages.get(seq)
            if stored is None or not self.wants(stored):
                continue
            self.delivered_stream = seq
            self.delivered_consumer += 1
            delivery = _Delivery(self.delivered_consumer, 1, now_ns)
            if self.ack_policy == "none":
                self.floor_stream, self.floor_consumer = seq, self.delivered_consumer
            else:
                self.pending[seq] = delivery
            out.append((stored, delivery))
        return out

    def next_redelivery_ns(self) -> int | None:
        """When the earliest delivery awaiting acknowledgement is due again
        (monotonic ns; None: none awaits)."""
        if not self.pending:
            return None
        return min(d.at_ns for d in self.pending.values()) + self._ack_wait_ns()

    def num_pending(self) -> int:
        """Messages of the stream it wants, not delivered yet."""
        messages = self.stream.messages
        return sum(
            1 for seq in messages if seq > self.delivered_stream and self.wants(messages[seq])
        )

    def ack(self, stream_seq: int) -> None:
        """The acknowledgement of the delivery of message ``stream_seq``."""
        delivery = self.pending.get(stream_seq)
        if delivery is None:
            return
        if self.ack_policy == "all":
            for seq in [s for s in self.pending if s <= stream_seq]:
                del self.pending[seq]
        else:
            del self.pending[stream_seq]
        if self.pending:
            first = min(self.pending)
            self.floor_stream = first - 1
            self.floor_consumer = self.pending[first].consumer_seq - 1
        else:
            self.floor_stream, self.floor_consumer = self.delivered_stream, self.delivered_consumer

    def info(self, name: str, waiting: int) -> Json:
        """The API's consumer info (``waiting``: open pull requests)."""
        return {
            "type": "io.nats.jetstream.api.v1.consumer_info_response",
            "stream_name": self.stream.name,
            "name": name,
            "created": iso_time(self.created_ns),
            "config": self.config,
            "delivered": {
                "consumer_seq": self.delivered_consumer,
                "stream_seq": self.delivered_stream,
            },
            "ack_floor": {"consumer_seq": self.floor_consumer, "stream_seq": self.floor_stream},
            "num_ack_pending": len(self.pending),
            "num_redelivered": sum(1 for d in self.pending.values() if d.count > 1),
            "num_waiting": waiting,
            "num_pending": self.num_pending(),
        }


class MemoryStream:
    """One stream (see the module docstring).

    Args:
        config: its configuration as the API sent it (``StreamConfig.as_dict()``).
        now_ns: the wall clock, ns since the epoch (stored times, duplicate window).
    """

    def __init__(self, config: Json, now_ns: Callable[[], int]) -> None:
        self.config = config
        self.name = str(config["name"])
        self._now_ns = now_ns
        self.created_ns = now_ns()
        self.messages: dict[int, StoredMessage] = {}
        self.last_seq = 0
        self._last_msg_id = ""
        self._ids: dict[str, tuple[int, int]] = {}  # msg id -> (seq, stored at ns)
        self.consumers: dict[str, MemoryConsumer] = {}

    @property
    def subjects(self) -> list[str]:
        """The subject patterns it captures."""
        return list(self.config.get("subjects") or [self.name])

    @property
    def first_seq(self) -> int:
        """Its first message's sequence (past the last when empty; 0: never a message)."""
        if self.messages:
            return next(iter(self.messages))
        return self.last_seq + 1 if self.last_seq else 0

    def captures(self, subject: str) -> bool:
        """Whether a message on ``subject`` is stored here."""
        return any(subject_matches(pattern, subject) for pattern in self.subjects)

    def store(self, subject: str, data: bytes, headers: dict[str, str]) -> Json:
        """Store one message, as JetStream checks it (see the module docstring).

        Returns:
            The publish acknowledgement (``{"stream", "seq"}``, ``"duplicate": true``
            for a copy within the window).

        Raises:
            JetStreamError: 10060 the expected stream is another, 10071 the last
                sequence is not the expected one, 10070 nor the last message id.
        """
        now = self._now_ns()
        expected_stream = headers.get("Nats-Expected-Stream")
        if expected_stream and expected_stream != self.name:
            raise JetStreamError(400, 10060, "expected stream does not match")
        msg_id = headers.get("Nats-Msg-Id", "")
        window = int(self.config.get("duplicate_window") or DEFAULT_DUPLICATE_WINDOW_NS)
        self._ids = {k: v for k, v in self._ids.items() if now - v[1] < window}
        if msg_id and msg_id in self._ids:
            return {"stream": self.name, "seq": self._ids[msg_id][0], "duplicate": True}
        expected_seq = headers.get("Nats-Expected-Last-Sequence")
        if expected_seq is not None and int(expected_seq) != self.last_seq:
            raise JetStreamError(400, 10071, f"wrong last sequence: {self.last_seq}")
        expected_id = headers.get("Nats-Expected-Last-Msg-Id")
        if expected_id and expected_id != self._last_msg_id:
            raise JetStreamError(400, 10070, f"wrong last msg ID: {self._last_msg_id}")
        self.last_seq += 1
        self.messages[self.last_seq] = StoredMessage(self.last_seq, subject, data, headers, now)
        self._last_msg_id = msg_id
        if msg_id:
            self._ids[msg_id] = (self.last_seq, now)
        return {"stream": self.name, "seq": self.last_seq}

    def get(self, request: Json) -> StoredMessage:
        """The message a ``STREAM.MSG.GET`` request names (``seq``, or
        ``last_by_subj``).

        Raises:
            JetStreamError: 10037, there is no such message.
        """
        found: StoredMessage | None = None
        if request.get("last_by_subj"):
            pattern = str(request["last_by_subj"])
            for stored in reversed(self.messages.values()):
                if subject_matches(pattern, stored.subject):
                    found = stored
                    break
        else:
            found = self.messages.get(int(request.get("seq") or 0))
        if found is None:
            raise JetStreamError(404, 10037, "no message found")
        return found

    def delete(self, seq: int) -> None:
        """Delete message ``seq``.

        Raises:
            JetStreamError: 10057, there is no such message.
        """
        if self.messages.pop(seq, None) is None:
            raise JetStreamError(400, 10057, f"msg delete error: sequence {seq} not found")

    def purge(self) -> None:
        """Drop every message (sequences go on from the last)."""
        self.messages.clear()

    def info(self) -> Json:
        """The API's stream info."""
        sizes = sum(len(m.data) + len(m.subject) for m in self.messages.values())
        last = self.messages.get(self.last_seq)
        return {
            "type": "io.nats.jetstream.api.v1.stream_info_response",
            "config": self.config,
            "created": iso_time(self.created_ns),
            "state": {
                "messages": len(self.messages),
                "bytes": sizes,
                "first_seq": self.first_seq,
                "last_seq": self.last_seq,
                "last_ts": iso_time(last.time_ns) if last else "0001-01-01T00:00:00Z",
                "num_deleted": max(0, self.last_seq - self.first_seq + 1 - len(self.messages))
                if self.messages
                else 0,
                "consumer_count": len(self.consumers),
            },
        }
