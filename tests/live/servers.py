"""Real ``nats-server -js`` and ``redis-server`` processes on free loopback ports.

A server is started from the system binary with its data in a temporary folder;
``start`` returns once it logs that it is ready and accepts TCP connections, ``kill``
stops it hard (SIGKILL) and ``restart`` starts it again on the same port with the
same store, as a crashed server comes back.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

#: How long a server may take to become ready, s.
START_TIMEOUT_S = 20.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def silent_port() -> Iterator[int]:
    """A loopback port where TCP connections are accepted (by the kernel's backlog)
    and nothing is ever said or read, while the context lasts: a server that hangs,
    or a firewall that swallows, as a client sees it (every try to its timeout)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield int(listener.getsockname()[1])


def accepts(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@dataclass
class ServerProcess:
    """One server process: its command line, port, folder and log.

    Args:
        name: ``nats`` or ``redis`` (names the log file).
        argv: the command line (port and folders already in it).
        port: the client port.
        workdir: the server's data folder (kept across restarts).
        ready_text: the log line that says the server is ready.
    """

    name: str
    argv: list[str]
    port: int
    workdir: Path
    ready_text: str
    url_scheme: str
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    starts: int = 0

    @property
    def url(self) -> str:
        """The client URL, e.g. ``nats://127.0.0.1:4222``."""
        return f"{self.url_scheme}://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        """The log of the current (last) start."""
        return self.workdir / f"{self.name}-{self.starts}.log"

    def start(self) -> None:
        """Start the server and wait until it is ready.

        Raises:
            RuntimeError: it exited or was not ready within ``START_TIMEOUT_S``; the
                message holds the end of its log.
        """
        self.starts += 1
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited at start:\n{self._log_tail()}")
            if self.ready_text in self._log_tail() and accepts(self.port):
                return
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"{self.name} not ready in {START_TIMEOUT_S} s:\n{self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except FileNotFoundError:
            return ""

    def kill(self) -> None:
        """SIGKILL the server (no clean shutdown) and wait for it to go."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    def stop(self) -> None:
        """Stop the server cleanly (SIGTERM, then SIGKILL after 10 s)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def restart(self) -> None:
        """Kill the server and start it again on the same port with the same store.

        Raises:
            RuntimeError: as ``start``.
        """
        self.kill()
        self.start()


def nats_server(workdir: Path, binary: str) -> ServerProcess:
    """A JetStream-enabled NATS server (file store under ``workdir/store``)."""
    port = free_port()
    store = workdir / "store"
    store.mkdir(parents=True, exist_ok=True)
    argv = [binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(store)]
    return ServerProcess("nats", argv, port, workdir, "Server is ready", "nats")


def redis_server(workdir: Path, binary: str) -> ServerProcess:
    """A Redis server that keeps nothing on disk (no RDB saves, no AOF)."""
    return _redis(workdir, binary, "--appendonly", "no")


def persistent_redis_server(workdir: Path, binary: str) -> ServerProcess:
    """A Redis server with an append-only file written before each answer
    (``--appendonly yes --appendfsync always``), as docker-compose.yml runs Redis with
    AOF: killed (SIGKILL) and started again on the same folder, it holds every write it
    acknowledged."""
    workdir.mkdir(parents=True, exist_ok=True)
    return _redis(workdir, binary, "--appendonly", "yes", "--appendfsync", "always")


def _redis(workdir: Path, binary: str, *persistence: str) -> ServerProcess:
    """A Redis server on a free loopback port, no RDB saves, in ``workdir``."""
    port = free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", *persistence]
    argv += ["--dir", str(workdir)]
    return ServerProcess("redis", argv, port, workdir, "Ready to accept connections", "redis")


def configured_nats_server(workdir: Path, binary: str, config: Path) -> ServerProcess:
    """A NATS server run with the configuration file ``config`` (its accounts, users,
    permissions, TLS and JetStream store, as ``xce-bus-config`` writes them), on a free
    loopback port: the command line's address and port win over the file's ``listen``."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [binary, "-c", str(config), "-a", "127.0.0.1", "-p", str(port)]
    return ServerProcess("nats", argv, port, workdir, "Server is ready", "nats")


def acl_redis_server(workdir: Path, binary: str, aclfile: Path) -> ServerProcess:
    """A Redis server whose users are those of ``aclfile`` (``default`` off, as
    ``xce-bus-config`` writes it), keeping nothing on disk."""
    workdir.mkdir(parents=True, exist_ok=True)
    return _redis(workdir, binary, "--appendonly", "no", "--aclfile", str(aclfile))


@dataclass
class NatsCluster:
    """JetStream-enabled NATS servers routed into one cluster on loopback, each with
    its own ``server_name``, client port and store (``nats_cluster``).

    Attributes:
        servers: the servers, ``n1``, ``n2``, ...; ``kill`` one to take it out.
    """

    servers: list[ServerProcess]

    @property
    def url(self) -> str:
        """Every server's client URL, comma-separated, as the services' ``--nats``
        takes them."""
        return ",".join(server.url for server in self.servers)

    def start(self) -> None:
        """Start every server (each returns once it accepts clients; JetStream has
        a meta leader only once a majority have found each other by their routes).

        Raises:
            RuntimeError: a server exited or was not ready in time (its log's end).
        """
        for server in self.servers:
            server.start()

    def stop(self) -> None:
        """Stop the servers still running, cleanly."""
        for server in self.servers:
            server.stop()


def nats_cluster(workdir: Path, binary: str, size: int = 3) -> NatsCluster:
    """A cluster of ``size`` JetStream servers on free loopback ports (not started):
    server ``n<i>`` has its configuration, store and logs under ``workdir/n<i>`` and
    a route to every server (its own included, which nats-server ignores)."""
    clients = [free_port() for _ in range(size)]
    routes = [free_port() for _ in range(size)]
    route_list = ", ".join(f'"nats-route://127.0.0.1:{port}"' for port in routes)
    servers = []
    for number, (client, route) in enumerate(zip(clients, routes, strict=True), start=1):
        folder = workdir / f"n{number}"
        store = folder / "store"
        store.mkdir(parents=True, exist_ok=True)
        config = folder / "nats.conf"
        config.write_text(
            f'server_name: "n{number}"\n'
            f'listen: "127.0.0.1:{client}"\n'
            f'jetstream {{ store_dir: "{store}" }}\n'
            f'cluster {{ name: "xce", listen: "127.0.0.1:{route}", routes: [{route_list}] }}\n'
        )
        argv = [binary, "-c", str(config)]
        servers.append(
            ServerProcess(f"nats-n{number}", argv, client, folder, "Server is ready", "nats")
        )
    return NatsCluster(servers)
