"""A secured bus for the live tests and ``bench_live``: ``xce-bus-config``'s
configuration and secrets, a nats-server and a redis-server started with them, TLS
certificates made on the spot (``tests.live.certs``), and the environment each
role's processes run with.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from xce_kit import auth
from xce_kit.bus_config import (
    NATS_CONFIG,
    PASSWORD_FILE,
    REDIS_ACL,
    SEED_FILE,
    SERVER_DIR,
    ServerOptions,
    generate,
)
from xce_kit.bus_policy import ROLES, role

from tests.live.servers import ServerProcess, acl_redis_server, configured_nats_server

if TYPE_CHECKING:
    from tests.live.certs import TlsFiles


@dataclass
class SecuredBus:
    """A nats-server and a redis-server configured by ``xce-bus-config``.

    Attributes:
        secrets: the generator's output folder.
        nats, redis: the servers (started by ``start``).
        tls: the TLS files when NATS requires TLS (and client certificates).
    """

    secrets: Path
    nats: ServerProcess
    redis: ServerProcess
    tls: TlsFiles | None = None

    @property
    def nats_url(self) -> str:
        return self.nats.url

    @property
    def redis_url(self) -> str:
        return self.redis.url + "/0"

    def env(self, name: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a process running as role ``name``: ``base`` (default
        this process's, without any XCE credential) plus that role's seed file, its
        Redis user and password file (if it has one) and the TLS files."""
        env = {
            k: v
            for k, v in (os.environ if base is None else base).items()
            if not k.startswith(("XCE_NATS_", "XCE_REDIS_"))
        }
        folder = self.secrets / name
        env[auth.SEED_FILE_VAR] = str(folder / SEED_FILE)
        if role(name).redis is not None:
            env[auth.REDIS_USERNAME_VAR] = name
            env[auth.REDIS_PASSWORD_FILE_VAR] = str(folder / PASSWORD_FILE)
        if self.tls is not None:
            env[auth.TLS_CA_VAR] = str(self.tls.ca)
            env[auth.TLS_CERT_VAR] = str(self.tls.client_cert)
            env[auth.TLS_KEY_VAR] = str(self.tls.client_key)
        return env

    def credentials(self, name: str) -> auth.NatsCredentials:
        """Role ``name``'s NATS credentials, as its processes resolve them."""
        return auth.nats_credentials(self.env(name))

    def start(self) -> None:
        self.nats.start()
        self.redis.start()

    def stop(self) -> None:
        self.nats.stop()
        self.redis.stop()


def secured_bus(
    folder: Path, nats_binary: str, redis_binary: str, *, tls: bool = False
) -> SecuredBus:
    """Generate every role's secrets and the servers' configuration in ``folder``
    (with TLS and client certificates required when ``tls``) and return the servers,
    not started yet."""
    files = None
    if tls:
        from tests.live.certs import make_tls  # cryptography: only for a TLS bus

        files = make_tls(folder / "tls")
    options = ServerOptions(store_dir=str(folder / "nats-store"))
    if files is not None:
        options = ServerOptions(
            store_dir=options.store_dir,
            tls_cert=str(files.server_cert),
            tls_key=str(files.server_key),
            tls_ca=str(files.ca),
            tls_verify=True,
        )
    secrets = folder / "secrets"
    generate(secrets, options, ROLES)
    server = secrets / SERVER_DIR
    nats = configured_nats_server(folder / "nats", nats_binary, server / NATS_CONFIG)
    redis = acl_redis_server(folder / "redis", redis_binary, server / REDIS_ACL)
    return SecuredBus(secrets, nats, redis, files)


def act_as(bus: SecuredBus, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this process's NATS and Redis clients (``connect_nats``, the test helpers'
    ``connected``, ``redis_from_url``) authenticate as role ``name`` for the rest of
    the test."""
    for key in list(os.environ):
        if key.startswith(("XCE_NATS_", "XCE_REDIS_")):
            monkeypatch.delenv(key)
    for key, value in bus.env(name, {}).items():
        monkeypatch.setenv(key, value)
