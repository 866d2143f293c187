"""Serving a service's Prometheus registry on ``/metrics``.

A registry per service object, not the process-global one, so that tests can run
several services in one process.
"""

from __future__ import annotations

import errno
import socket
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

from xce_kit.reasons import reason

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
        OSError: the address or the port cannot be bound; the message is one line
            naming the option at fault (as ``arguments.add_service_arguments``
            declares them) and why: ``--metrics-port 9101: cannot serve /metrics on
            127.0.0.1:9101: address already in use``.
    """
    try:
        server, _thread = start_http_server(port, addr, registry=registry)
    except OSError as exc:
        # A name that does not resolve, or an address not of this host, is the
        # address's fault; anything else (in use, privileged) the port's.
        addr_at_fault = isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL
        option = f"--metrics-addr {addr}" if addr_at_fault else f"--metrics-port {port}"
        raise OSError(f"{option}: cannot serve /metrics on {addr}:{port}: {reason(exc)}") from None
    return server
