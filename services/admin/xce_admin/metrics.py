"""The admin server's own metrics: requests answered, by endpoint and status, and
the time each took, served on its ``/metrics``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Request durations, s.
LATENCY_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0)


@dataclass
class AdminMetrics:
    """``xce_admin_requests_total{endpoint,status}`` and
    ``xce_admin_request_duration_seconds{endpoint}``, in their own registry."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.requests = Counter(
            "xce_admin_requests",
            "Requests answered, by endpoint (route template) and HTTP status",
            ["endpoint", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "xce_admin_request_duration_seconds",
            "Wall time to answer a request, s",
            ["endpoint"],
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )


class MetricsMiddleware:
    """Counts every HTTP request by its route template (``/scheduler/recordings/{name}``,
    so the label set stays small; ``unmatched`` for unknown paths) and status."""

    def __init__(self, app: ASGIApp, metrics: AdminMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        code = 500

        async def sending(message: Message) -> None:
            nonlocal code
            if message["type"] == "http.response.start":
                code = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or "unmatched"
            self.metrics.requests.labels(endpoint, str(code)).inc()
            self.metrics.latency.labels(endpoint).observe(time.perf_counter() - started)
