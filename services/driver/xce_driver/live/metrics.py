"""Prometheus metrics of the core service (``xce_core_*``), in their own registry.

A registry per service object, not the process-global one, so that tests can run
several services in one process; ``serve`` exposes it on ``/metrics``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
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
            "Decisions of re-processed events already on the stream before a restart",
            registry=r,
        )
        self.dead_letters = Counter(
            "xce_core_dead_letters", "Events rejected to the dead-letter subject", registry=r
        )
        self.rounds = Counter("xce_core_rounds", "Scheduling rounds (BEGIN_ROUND)", registry=r)
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
        self.pending_jobs = Gauge("xce_core_pending_jobs", "Jobs pending", registry=r)
        self.running_jobs = Gauge("xce_core_running_jobs", "Jobs running", registry=r)
        self.suspended_jobs = Gauge("xce_core_suspended_jobs", "Jobs suspended", registry=r)
        self.event_lag = Gauge(
            "xce_core_event_lag_seconds",
            "Wall time from an event entering the stream to the core finishing it, s",
            registry=r,
        )
        self.events_waiting = Gauge(
            "xce_core_events_waiting", "Events in the stream not yet delivered", registry=r
        )
        self.events_seq = Gauge(
            "xce_core_event_seq", "Stream sequence of the last event handled", registry=r
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

    def job_states(self, states: Iterable[JobState]) -> None:
        """Set the job gauges from every job's state."""
        pending = running = suspended = 0
        for state in states:
            if state is JobState.PEND:
                pending += 1
            elif state is JobState.RUN:
                running += 1
            elif state is JobState.SUSP:
                suspended += 1
        self.pending_jobs.set(pending)
        self.running_jobs.set(running)
        self.suspended_jobs.set(suspended)

    def serve(self, port: int, addr: str = "0.0.0.0") -> WSGIServer:
        """Serve ``/metrics`` on ``addr:port`` from a daemon thread; ``shutdown()`` the
        returned server to stop.

        Raises:
            OSError: the port cannot be bound.
        """
        server, _thread = start_http_server(port, addr, registry=self.registry)
        return server
