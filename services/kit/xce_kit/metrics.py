"""Serving a service's Prometheus registry on ``/metrics``.

A registry per service object, not the process-global one, so that tests can run
several services in one process.
"""

from __future__ import annotations

from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

#: Where ``/metrics`` binds unless told otherwise: this host only. A metrics port
#: open on every interface shows queue names, users and rates to anyone who can
#: reach it; a deployment that scrapes from elsewhere says ``--metrics-addr``.
DEFAULT_METRICS_ADDR = "127.0.0.1"


def serve_registry(
    registry: CollectorRegistry, port: int, addr: str = DEFAULT_METRICS_ADDR
) -> WSGIServer:
    """Serve ``registry`` on ``http://addr:port/metrics`` from a daemon thread;
    ``shutdown()`` the returned server to stop.

    Raises:
        OSError: the port cannot be bound; the message names it.
    """
    try:
        server, _thread = start_http_server(port, addr, registry=registry)
    except OSError as exc:
        raise OSError(f"metrics port {addr}:{port}: {exc.strerror or exc}") from None
    return server
