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
from dataclasses import dataclass, field
from pathlib import Path

#: How long a server may take to become ready, s.
START_TIMEOUT_S = 20.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
