"""TLS on the bus: a nats-server that requires TLS and client certificates (made here
with ``cryptography``), and a service that connects through the ``XCE_NATS_TLS_*``
variables alone, as docker-compose.yml would run it."""

from __future__ import annotations

import asyncio

import nats
import pytest
from xce_kit.auth import TLS_CERT_VAR, TLS_KEY_VAR, nats_credentials
from xce_schemas.bus import EVENTS_STREAM

from tests.live.helpers import run
from tests.live.secured import SecuredBus
from tests.live.servers import free_port
from tests.live.test_stack import (
    Stack,
    Where,
    compose_argv,
    metric,
    poll,
    stack,  # noqa: F401 (the fixture)
)

pytestmark = pytest.mark.nats


def test_a_service_connects_over_tls_with_its_certificate_and_key(
    secured_tls: SecuredBus,
    stack: Stack,  # noqa: F811 (the fixture imported above)
) -> None:
    where = Where(
        secured_tls.nats_url, secured_tls.redis_url, stack.folder, {"bridge": free_port()}
    )
    bridge = stack.start("bridge", compose_argv("bridge", where), secured_tls.env("bridge"))

    def rounds() -> bool:
        bridge.check_running()
        return metric(where, "bridge", "xce_bridge_rounds_total") >= 1

    poll(rounds, "the bridge to publish a round over TLS")

    async def stored() -> int:
        options = secured_tls.credentials("ops").connect_options()
        nc = await nats.connect(secured_tls.nats_url, **options)
        try:
            return (await nc.jetstream().stream_info(EVENTS_STREAM)).state.messages
        finally:
            await nc.close()

    assert run(stored()) >= 1
    assert bridge.terminate() == 0, bridge.tail()


async def _quiet(exc: Exception) -> None:
    """Keeps nats-py from logging each refused try with a traceback."""


@pytest.mark.parametrize("how", ["no client certificate", "no TLS at all"])
def test_a_client_without_its_certificate_is_refused(secured_tls: SecuredBus, how: str) -> None:
    env = secured_tls.env("bridge", {})
    for var in (TLS_CERT_VAR, TLS_KEY_VAR):
        env.pop(var)
    options = nats_credentials(env).connect_options()
    if how == "no TLS at all":
        options.pop("tls")

    async def go() -> None:
        await nats.connect(
            secured_tls.nats_url,
            allow_reconnect=False,
            connect_timeout=5,
            error_cb=_quiet,
            **options,
        )

    with pytest.raises((nats.errors.Error, OSError, asyncio.TimeoutError)):
        run(go())
