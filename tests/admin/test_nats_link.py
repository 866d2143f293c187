"""The admin's NATS connection when NATS cannot be had: a server that accepts and
never speaks (the worst case: every try runs to its timeout) and a port nobody
listens on. A request is told within the link's wait, every waiting request
shares the one attempt, and the attempt goes on for the requests after them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from xce_admin.nats_link import NatsDown, NatsLink

from tests.live.servers import free_port, silent_port


@pytest.fixture
def silent_nats() -> Iterator[str]:
    """A NATS URL that accepts connections and never says a word (``silent_port``)."""
    with silent_port() as port:
        yield f"nats://127.0.0.1:{port}"


def test_a_silent_server_is_reported_after_the_wait_not_after_the_connect(
    silent_nats: str,
) -> None:
    async def go() -> tuple[list[BaseException | object], float, bool]:
        link = NatsLink(silent_nats, wait_s=0.3)
        started = time.monotonic()
        # Three requests at once: none waits for another, all share one attempt.
        answers = await asyncio.gather(*(link.client() for _ in range(3)), return_exceptions=True)
        took = time.monotonic() - started
        attempt = link._connecting
        still_trying = attempt is not None and not attempt.done()
        await link.close()
        return answers, took, still_trying

    answers, took, still_trying = asyncio.run(go())
    for answer in answers:
        assert isinstance(answer, NatsDown)
        assert str(answer) == f"NATS at {silent_nats} does not answer (no connection within 0.3 s)"
    assert still_trying  # the one attempt goes on (the kit's connect: 3 tries of 2 s)
    print(f"three requests told NATS is silent after {took:.2f} s")


def refusal(url: str) -> str:
    """What ``NatsLink(url).client()`` raises, as text (it must raise)."""

    async def go() -> str:
        link = NatsLink(url, wait_s=30.0)
        try:
            await link.client()
        except NatsDown as exc:
            return str(exc)
        finally:
            await link.close()
        raise AssertionError(f"connected to {url}")

    return asyncio.run(go())


def test_a_port_nobody_listens_on_is_reported_with_the_cause() -> None:
    url = f"nats://127.0.0.1:{free_port()}"
    message = refusal(url)
    assert message.startswith(f"NATS at {url} does not answer (")
    assert "Connect call failed" in message or "refused" in message.lower(), message


def test_the_url_shown_carries_no_password() -> None:
    message = refusal(f"nats://admin:hunter2-secret@127.0.0.1:{free_port()}")
    assert "hunter2" not in message and message.startswith("NATS at nats://127.0.0.1:")
