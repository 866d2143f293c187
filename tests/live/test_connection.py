"""Connecting to NATS as every driver service does (``live.connection``)."""

from __future__ import annotations

import logging

import pytest
from xce_kit.connection import connect_nats

from tests.live.helpers import run
from tests.live.servers import free_port

pytestmark = pytest.mark.nats

log = logging.getLogger("test_connection")


def test_a_comma_separated_list_connects_to_the_server_that_answers(nats_url: str) -> None:
    """The documented ``--nats a,b`` form: a dead server first, then a live one."""
    dead = f"nats://127.0.0.1:{free_port()}"

    async def go() -> str | None:
        nc = await connect_nats(f"{dead}, {nats_url}", "test", log)
        try:
            return nc.connected_url.port if nc.connected_url else None
        finally:
            await nc.close()

    assert run(go()) == int(nats_url.rsplit(":", 1)[1])


def test_no_server_names_the_last_try_s_error() -> None:
    url = f"nats://127.0.0.1:{free_port()}"
    with pytest.raises(Exception, match=r"no servers available .*last try: .*Connect call failed"):
        run(connect_nats(url, "test", log))
