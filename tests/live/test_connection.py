"""Connecting to NATS as every driver service does (``live.connection``)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from xce_kit.auth import TLS_CA_VAR
from xce_kit.connection import connect_nats
from xce_kit.options import run_service

from tests.live.certs import make_tls
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


@pytest.mark.parametrize("how", ["a TLS variable", "a tls:// URL"])
def test_tls_asked_for_against_a_server_without_it_is_refused(
    nats_url: str,
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/security.md: any TLS variable turns TLS on. A server that does not offer
    it must not get a plaintext connection silently; the service stops, exit 1, one
    line naming the server."""
    url = nats_url
    if how == "a TLS variable":
        monkeypatch.setenv(TLS_CA_VAR, str(make_tls(tmp_path).ca))
    else:
        url = "tls://" + nats_url.partition("://")[2]

    async def service() -> None:
        nc = await connect_nats(url, "test", log)
        await nc.close()  # not reached

    assert run_service("svc", service(), nats=url) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"svc: error: the NATS server at {url} does not offer TLS")
