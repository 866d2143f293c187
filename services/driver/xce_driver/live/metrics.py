"""Prometheus metrics of the core service (``xce_core_*``), in their own registry.

A registry per service object, not the process-global one, so that tests can run
several services in one process; ``serve`` exposes it on ``/metrics``.
"""

from __future__ import annotations

from collections import Counter as Counter_
from collections.abc import Iterable
from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from xce_kit.metrics import DEFAULT_METRICS_ADDR, serve_registry
from xce_schemas import JobState

#: Round durations, s: from a small cluster's millisecond to a huge backlog's seconds.
ROUND_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass
class CoreMetrics:
    """The core service's metrics; the names follow Prometheus conventions.

    Counters count in this process only (they restart at 0 with it, as Prometheus
    expects); ``events_seq`` and ``checkpoint_seq`` tell where the core is in the stream.
    """

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.events = Counter("xce_core_events", "Events the core handled", registry=r)
        self.decisions = Counter(
            "xce_core_decisions", "Decisions published, by op", ["op"], registry=r
        )
        self.decisions_skipped = Counter(
            "xce_core_decisions_skipped",
            "Decisions of re-processed events not published again: on XCE_DECISIONS "
            "already, up to the core's last decision there at start",
            registry=r,
        )
        self.foreign_messages = Counter(
            "xce_core_foreign_messages",
            "Messages the core did not write found on its streams (at start, or after a "
            "publish they got in the way of), by stream; skipped, never waited on",
            ["stream"],
            registry=r,
        )
        self.dead_letters = Counter(
            "xce_core_dead_letters", "Events rejected to the dead-letter subject", registry=r
        )
        self.rounds = Counter("xce_core_rounds", "Scheduling rounds (BEGIN_ROUND)", registry=r)
        self.last_round = Gauge(
            "xce_core_last_round_timestamp_seconds",
            "Wall time the core finished its last scheduling round, s since the epoch",
            registry=r,
        )
        self.round_duration = Histogram(
            "xce_core_round_duration_seconds",
            "Wall time of one scheduling round, s",
            buckets=ROUND_BUCKETS_S,
            registry=r,
        )
        self.cache_hits = Counter(
            "xce_core_unsatisfiable_cache_hits",
            "Jobs pended by the session's unsatisfiable-request cache (Req 7)",
            registry=r,
        )
        self.pending_jobs = Gauge(
            "xce_core_pending_jobs", "Jobs pending, by queue", ["queue"], registry=r
        )
        self.running_jobs = Gauge(
            "xce_core_running_jobs", "Jobs running, by queue", ["queue"], registry=r
        )
        self.suspended_jobs = Gauge(
            "xce_core_suspended_jobs", "Jobs suspended, by queue", ["queue"], registry=r
        )
        self.preemptions = Counter("xce_core_preemptions", "PREEMPT decisions made", registry=r)
        self.preemptions_given_up = Counter(
            "xce_core_preemptions_given_up",
            "Preemptions given up because their victims did not suspend in time",
            registry=r,
        )
        #: Jobs pending, running and suspended over all queues (the last round's).
        self.totals: tuple[int, int, int] = (0, 0, 0)
        self.event_lag = Gauge(
            "xce_core_event_lag_seconds",
            "Wall time from an event entering the stream to the core finishing it, s",
            registry=r,
        )
        self.events_waiting = Gauge(
            "xce_core_events_waiting",
            "Messages of XCE_EVENTS not yet delivered (a batch message holds several events)",
            registry=r,
        )
        self.events_seq = Gauge(
            "xce_core_event_seq",
            "Stream sequence of the last XCE_EVENTS message handled",
            registry=r,
        )
        self.checkpoints = Counter(
            "xce_core_checkpoints", "Checkpoints written to Redis", registry=r
        )
        self.checkpoint_failures = Counter(
            "xce_core_checkpoint_failures", "Checkpoints Redis did not take", registry=r
        )
        self.checkpoint_seq = Gauge(
            "xce_core_checkpoint_seq", "Stream sequence the last checkpoint covers", registry=r
        )
        self.publish_retries = Counter(
            "xce_core_publish_retries", "Publishes retried after a bus failure", registry=r
        )
        self.recording = Gauge(
            "xce_core_recording", "1 while the core publishes a recording, else 0", registry=r
        )
        self.record_messages = Counter(
            "xce_core_record_messages",
            "Messages published on XCE_RECORD (recording lines and END)",
            registry=r,
        )
        self.record_skipped = Counter(
            "xce_core_record_skipped",
            "Record messages of re-processed events already on the stream before a restart",
            registry=r,
        )

    def job_states(self, jobs: Iterable[tuple[str, JobState]]) -> None:
        """Set the job gauges, by queue, from every job's ``(queue, state)``."""
        counts: dict[JobState, Counter_[str]] = {
            JobState.PEND: Counter_(),
            JobState.RUN: Counter_(),
            JobState.SUSP: Counter_(),
        }
        for queue, state in jobs:
            if state in counts:
                counts[state][queue] += 1
        for gauge, state in (
            (self.pending_jobs, JobState.PEND),
            (self.running_jobs, JobState.RUN),
            (self.suspended_jobs, JobState.SUSP),
        ):
            gauge.clear()  # a queue that emptied or went away shows no stale series
            for queue, count in sorted(counts[state].items()):
                gauge.labels(queue=queue).set(count)
        self.totals = tuple(sum(counts[state].values()) for state in counts)  # type: ignore[assignment]

    def serve(self, port: int, addr: str = DEFAULT_METRICS_ADDR) -> WSGIServer:
        """Serve ``/metrics`` on ``addr:port`` (``serve_registry``)."""
        return serve_registry(self.registry, port, addr)


#: Publish latencies of the bridge, s: from stamping an event to the stream's ack.
PUBLISH_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


@dataclass
class BridgeMetrics:
    """The controller bridge's metrics (``xce_bridge_*``), Prometheus naming.

    ``messages{kind}`` counts every controller message received (``kind`` is
    ``unknown`` for a subject that names none); ``events{type}`` the core events it
    put on ``XCE_EVENTS``; ``event_publish`` the wall time from stamping an event to
    the stream's acknowledgement, s.
    """

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.messages = Counter(
            "xce_bridge_messages", "Controller messages received, by kind", ["kind"], registry=r
        )
        self.dead_letters = Counter(
            "xce_bridge_dead_letters",
            "Controller messages rejected to xce.deadletter.bridge",
            registry=r,
        )
        self.events = Counter(
            "xce_bridge_events",
            "Core events published on XCE_EVENTS, by type",
            ["type"],
            registry=r,
        )
        self.rounds = Counter("xce_bridge_rounds", "BEGIN_ROUND events emitted", registry=r)
        self.foreign_decisions = Counter(
            "xce_bridge_foreign_decisions",
            "Messages on XCE_DECISIONS without a core decision id, not forwarded",
            registry=r,
        )
        self.decisions_forwarded = Counter(
            "xce_bridge_decisions_forwarded",
            "Decisions forwarded to xce.ctl.decisions.<OP>, by op",
            ["op"],
            registry=r,
        )
        self.event_publish = Histogram(
            "xce_bridge_event_publish_seconds",
            "Wall time from stamping an event to the stream's acknowledgement, s",
            buckets=PUBLISH_BUCKETS_S,
            registry=r,
        )
        self.publish_retries = Counter(
            "xce_bridge_publish_retries", "Event publishes retried after a bus failure", registry=r
        )
        self.events_queued = Gauge(
            "xce_bridge_events_queued", "Events stamped and not yet on the stream", registry=r
        )
        self.last_event_ts = Gauge(
            "xce_bridge_last_event_ts_seconds", "ts of the last event stamped, s", registry=r
        )

    def serve(self, port: int, addr: str = DEFAULT_METRICS_ADDR) -> WSGIServer:
        """Serve ``/metrics`` on ``addr:port`` (``serve_registry``)."""
        return serve_registry(self.registry, port, addr)
