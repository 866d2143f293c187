"""Fixtures of the live tests: a real NATS JetStream server and a real Redis server.

Both are started once per session from the system binaries (``nats-server``,
``redis-server``; ``.ci/run`` installs them) on free loopback ports, each with its
data in a temporary folder, and stopped at the end. A missing binary skips the tests
that need it, naming the binary. ``restart_nats`` / ``restart_redis`` kill a server
and start it again on the same port and store, as a crashed server comes back.
``bus`` gives each test empty streams and an empty Redis database.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from xce_kit.redis_client import redis_from_url

from tests.live.helpers import kill_leftovers, reset_bus
from tests.live.secured import SecuredBus, secured_bus
from tests.live.servers import ServerProcess, acl_redis_server, nats_server, redis_server

#: Where to look for the server binaries: PATH, then the sbin folders Debian uses.
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin"])


def _binary(name: str, package: str) -> str:
    found = shutil.which(name, path=SEARCH_PATH)
    if found is None:
        pytest.skip(f"{name} is not installed (apt-get install {package}; .ci/run installs it)")
    return found


@pytest.fixture(scope="session")
def nats_server_proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A ``nats-server -js`` on a free loopback port, file store in a temp folder."""
    binary = _binary("nats-server", "nats-server")
    server = nats_server(tmp_path_factory.mktemp("nats"), binary)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_server_proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A ``redis-server`` on a free loopback port that keeps nothing on disk."""
    binary = _binary("redis-server", "redis-server")
    server = redis_server(tmp_path_factory.mktemp("redis"), binary)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def nats_url(nats_server_proc: ServerProcess) -> str:
    """The URL of the running NATS server (restarted first if a test left it down)."""
    if nats_server_proc.proc is None or nats_server_proc.proc.poll() is not None:
        nats_server_proc.start()
    return nats_server_proc.url


@pytest.fixture
def redis_url(redis_server_proc: ServerProcess) -> str:
    """The URL of database 0 of the running Redis server (restarted if left down)."""
    if redis_server_proc.proc is None or redis_server_proc.proc.poll() is not None:
        redis_server_proc.start()
    return redis_server_proc.url + "/0"


@pytest.fixture
def redis_db(redis_url: str) -> str:
    """The URL of an empty Redis database (the first tier's: no NATS server)."""

    async def flush() -> None:
        client = redis_from_url(redis_url)
        await client.flushdb()
        await client.aclose()

    asyncio.run(flush())
    return redis_url


@pytest.fixture
def restart_nats(nats_server_proc: ServerProcess) -> Callable[[], None]:
    """Kill the NATS server (SIGKILL) and start it on the same port and store."""
    return nats_server_proc.restart


@pytest.fixture
def restart_redis(redis_server_proc: ServerProcess) -> Callable[[], None]:
    """Kill the Redis server (SIGKILL) and start it on the same port (its data is gone:
    it keeps nothing on disk)."""
    return redis_server_proc.restart


@pytest.fixture
def bus(nats_url: str, redis_url: str) -> tuple[str, str]:
    """``(nats_url, redis_url)`` with no XCE streams and an empty Redis database."""
    reset_bus(nats_url, redis_url)
    return nats_url, redis_url


def _secured(folder: Path, *, tls: bool) -> SecuredBus:
    nats_bin = _binary("nats-server", "nats-server")
    bus = secured_bus(folder, nats_bin, _binary("redis-server", "redis-server"), tls=tls)
    bus.start()
    return bus


#: ``limited_redis``'s user without MULTI, and its password.
LIMITED_USER, LIMITED_PASSWORD = "xce-limited", "limited-password-0123"


@pytest.fixture(scope="module")
def limited_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a Redis server of this module's own whose ``default`` user may do
    anything and whose ``LIMITED_USER`` (password ``LIMITED_PASSWORD``) may do
    anything but MULTI."""
    folder = tmp_path_factory.mktemp("limited-redis")
    acl = folder / "users.acl"
    acl.write_text(
        "user default on nopass ~* &* +@all\n"
        f"user {LIMITED_USER} on >{LIMITED_PASSWORD} ~* &* +@all -multi\n"
    )
    server = acl_redis_server(folder / "redis", _binary("redis-server", "redis-server"), acl)
    server.start()
    yield server.url + "/0"
    server.stop()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBus]:
    """A NATS and a Redis server of this module's own, with the bus's users and
    permissions (``xce-bus-config``'s configuration and secrets), TLS off."""
    bus = _secured(tmp_path_factory.mktemp("secured"), tls=False)
    yield bus
    bus.stop()


@pytest.fixture(scope="module")
def secured_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBus]:
    """As ``secured``, with TLS on NATS and client certificates required."""
    bus = _secured(tmp_path_factory.mktemp("secured-tls"), tls=True)
    yield bus
    bus.stop()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder for a test's service logs."""
    return tmp_path


@pytest.fixture(autouse=True)
def no_service_left_running() -> Iterator[None]:
    """Kill the core services a test started and left running (it failed half-way)."""
    yield
    kill_leftovers()
