"""Prometheus metrics of the recorder service (``xce_recorder_*``), in their own registry."""

from __future__ import annotations

from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from xce_kit.metrics import DEFAULT_METRICS_ADDR, serve_registry

from xce_recorder.cursor import NOT_EVENTS, RecordLine

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

    def stored(self, lines: list[RecordLine]) -> None:
        """Count ``lines``, now in Redis (in stream order)."""
        self.lines.inc(len(lines))
        self.snapshots.inc(sum(line.type == "SNAPSHOT" for line in lines))
        self.events.inc(sum(line.type not in NOT_EVENTS for line in lines))
        self.decisions.inc(sum(line.type == "DECISION" for line in lines))
        if lines:
            self.seq.set(lines[-1].seq)

    def serve(self, port: int, addr: str = DEFAULT_METRICS_ADDR) -> WSGIServer:
        """Serve ``/metrics`` on ``addr:port`` (``xce_kit.metrics.serve_registry``).

        Raises:
            OSError: the address or the port cannot be bound (one line naming the
                option at fault).
        """
        return serve_registry(self.registry, port, addr)
