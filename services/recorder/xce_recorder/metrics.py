"""Prometheus metrics of the recorder service (``xce_recorder_*``), in their own registry."""

from __future__ import annotations

from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

#: Export durations, s: a few lines to a day of a busy cluster.
EXPORT_BUCKETS_S = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0)


@dataclass
class RecorderMetrics:
    """The recorder's metrics. Counters count in this process only."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.lines = Counter(
            "xce_recorder_lines_written", "Recording lines appended to Redis", registry=r
        )
        self.recording = Gauge(
            "xce_recorder_recording", "1 while a recording is on, else 0", registry=r
        )
        self.snapshots = Counter(
            "xce_recorder_snapshots", "SNAPSHOT lines recorded (start and periodic)", registry=r
        )
        self.events = Counter("xce_recorder_events", "Event lines recorded", registry=r)
        self.decisions = Counter("xce_recorder_decisions", "DECISION lines recorded", registry=r)
        self.duplicates = Counter(
            "xce_recorder_record_duplicates",
            "Record messages read twice (after a re-read) and skipped",
            registry=r,
        )
        self.gaps = Counter(
            "xce_recorder_record_gaps",
            "Record messages missing from XCE_RECORD (a recording with a gap is not valid)",
            registry=r,
        )
        self.recordings = Counter(
            "xce_recorder_recordings", "Recordings exported to a file", registry=r
        )
        self.export_failures = Counter(
            "xce_recorder_export_failures", "Exports that failed", registry=r
        )
        self.export_seconds = Histogram(
            "xce_recorder_export_seconds",
            "Wall time of one export from Redis to a file, s",
            buckets=EXPORT_BUCKETS_S,
            registry=r,
        )
        self.seq = Gauge(
            "xce_recorder_event_seq", "XCE_EVENTS sequence of the last event recorded", registry=r
        )

    def serve(self, port: int, addr: str = "0.0.0.0") -> WSGIServer:
        """Serve ``/metrics`` on ``addr:port`` from a daemon thread.

        Raises:
            OSError: the port cannot be bound.
        """
        server, _thread = start_http_server(port, addr, registry=self.registry)
        return server
