"""The kit's command-line types, failure reasons, metrics serving and ``run_service``
as every live service gets them: a bad value is one line saying what is wrong; a
server or a port that cannot be used is one line naming it and why in a few words.
(The recorder's command line end to end: ``tests/recorder/test_recorder_cli.py``.)"""

from __future__ import annotations

import argparse
import errno
import logging
import socket
from collections.abc import Iterator

import pytest
import redis.asyncio as aioredis
from nats.js.errors import ServiceUnavailableError
from prometheus_client import CollectorRegistry
from redis.exceptions import ConnectionError as RedisConnectionError
from xce_kit.connection import connect_nats
from xce_kit.metrics import serve_registry
from xce_kit.options import MAX_WHOLE, nats_servers, nats_url, port, redis_url, run_service, whole
from xce_kit.reasons import reason, root_reason

from tests.live.servers import free_port


def refusal(parse: object, text: str) -> str:
    """What the type ``parse`` says of ``text``."""
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        parse(text)  # type: ignore[operator]
    return str(refused.value)


@pytest.mark.parametrize("text", [" 5", "5 ", "1_000", "٣", "１２", "1.0", "", "0x10"])
def test_a_whole_number_is_ascii_digits_as_typed(text: str) -> None:
    assert refusal(whole(0), text) == f"{text!r} is not a whole number"
    assert refusal(port, text) == f"{text!r} is not a port number"


def test_whole_numbers_within_bounds() -> None:
    assert whole(0)("007") == 7
    assert whole(-1)("-1") == -1
    assert whole(0)(str(MAX_WHOLE)) == MAX_WHOLE
    assert refusal(whole(0), "-3") == "must be 0 or more, not -3"
    assert refusal(whole(1, 5), "6") == "must be 5 or less, not 6"
    assert (
        refusal(whole(0), str(MAX_WHOLE + 1)) == f"must be {MAX_WHOLE} or less, not {MAX_WHOLE + 1}"
    )
    many = "9" * 5000  # more digits than ``int`` converts: still one line
    assert refusal(whole(0), many) == f"must be {MAX_WHOLE} or less, not {many}"
    assert refusal(whole(0), "-" + many) == f"must be 0 or more, not -{many}"
    assert port("0080") == 80
    assert refusal(port, many) == f"port {many} is not between 1 and 65535"


@pytest.mark.parametrize(
    ("text", "servers"),
    [
        ("nats://a:4222", ["nats://a:4222"]),
        ("nats://a:1, b:2,tls://c", ["nats://a:1", "b:2", "tls://c"]),
        ("ws://a:80,wss://b:443", ["ws://a:80", "wss://b:443"]),
        ("NATS://[::1]:4222", ["NATS://[::1]:4222"]),
    ],
)
def test_nats_urls_are_taken(text: str, servers: list[str]) -> None:
    assert nats_servers(text) == servers
    assert nats_url(text) == text


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("http://a:4222", "unknown scheme 'http'"),
        ("nats://a:99999", "bad port in 'nats://a:99999'"),
        ("nats://a:x", "bad port in 'nats://a:x'"),
        ("nats://:4222", "no host in 'nats://:4222'"),
        ("nats://a:1,", "an empty URL"),
        ("nats://a:1,wss://b:2", "websocket and other URLs mixed"),
    ],
)
def test_a_nats_url_that_is_not_one_says_why(text: str, why: str) -> None:
    assert refusal(nats_url, text) == (
        f"{text!r} is not a NATS URL (nats://host:port, tls://, ws:// or wss://; several "
        f"separated by commas): {why}"
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("http://h:6379", ""),
        ("redis://h:x/0", ": port could not be cast to integer value as 'x'"),
        ("redis://h:6379/zero", ": database 'zero' is not a number"),
    ],
)
def test_a_redis_url_that_is_not_one_says_why(text: str, why: str) -> None:
    assert refusal(redis_url, text) == (
        f"{text!r} is not a Redis URL (redis://host:port/db, rediss://, unix://){why}"
    )
    assert redis_url("unix:///run/redis.sock") == "unix:///run/redis.sock"


def test_reasons_are_a_few_words() -> None:
    assert reason(ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed")) == (
        "connection refused"
    )
    lookup = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert reason(lookup) == "host name lookup failed (Name or service not known)"
    assert reason(TimeoutError()) == "no answer in time"
    assert reason(ValueError("bad")) == "bad"
    assert reason(KeyError()) == "KeyError"


def test_the_root_reason_is_the_os_error_behind_a_library_error() -> None:
    try:
        try:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "refused")
        except OSError:
            raise RedisConnectionError("Error 111 connecting to h:1. Connection refused.")  # noqa: B904
    except RedisConnectionError as exc:
        assert root_reason(exc) == "connection refused"
    try:
        try:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "refused")
        except OSError:
            raise RuntimeError("said otherwise") from None
    except RuntimeError as exc:  # ``from None``: the OS error is not the cause
        assert root_reason(exc) == "said otherwise"


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port of 127.0.0.1 another socket listens on."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


def test_a_busy_metrics_port_is_named(busy_port: int) -> None:
    with pytest.raises(OSError) as failed:
        serve_registry(CollectorRegistry(), busy_port, "127.0.0.1")
    assert str(failed.value) == (
        f"--metrics-port {busy_port}: cannot serve /metrics on 127.0.0.1:{busy_port}: "
        "address already in use"
    )


@pytest.mark.parametrize(
    ("addr", "why"),
    [
        ("192.0.2.1", "cannot assign requested address"),  # TEST-NET-1: not of this host
        ("no-such-host.invalid", "host name lookup failed ("),
    ],
)
def test_a_metrics_address_that_cannot_be_bound_is_named(addr: str, why: str) -> None:
    port_ = free_port()
    with pytest.raises(OSError) as failed:
        serve_registry(CollectorRegistry(), port_, addr)
    assert str(failed.value).startswith(
        f"--metrics-addr {addr}: cannot serve /metrics on {addr}:{port_}: {why}"
    )


def test_run_service_names_an_unreachable_nats_server(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"nats://127.0.0.1:{free_port()}"

    async def service() -> None:
        await connect_nats(url, "test", logging.getLogger("test"))

    assert run_service("svc", service(), nats=url) == 1
    assert capsys.readouterr().err == f"svc: error: NATS at {url}: connection refused\n"


def test_run_service_says_when_jetstream_does_not_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def no_jetstream() -> None:
        raise ServiceUnavailableError  # what nats-py raises when nobody answers

    async def overloaded() -> None:
        raise ServiceUnavailableError(
            code=503, description="JetStream system temporarily unavailable"
        )

    assert run_service("svc", no_jetstream(), nats="nats://h:1") == 1
    assert run_service("svc", overloaded(), nats="nats://h:1") == 1
    assert capsys.readouterr().err == (
        "svc: error: NATS at nats://h:1: JetStream is not enabled (start nats-server with -js)\n"
        "svc: error: NATS at nats://h:1: JetStream system temporarily unavailable\n"
    )


def test_run_service_names_an_unreachable_redis(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"

    async def service() -> None:
        client = aioredis.Redis.from_url(url)
        try:
            await client.ping()
        finally:
            await client.aclose()

    assert run_service("svc", service(), nats="nats://h:1", redis=url) == 1
    assert capsys.readouterr().err == f"svc: error: Redis at {url}: connection refused\n"


@pytest.mark.parametrize(
    "text",
    ["nats://admin:s3cret@a:4222", "nats://s3cret@a:4222", "a:1, s3cret@b:2", "tls://u:s3cret@a"],
    ids=["user and password", "token", "token without scheme", "tls"],
)
def test_a_nats_url_with_credentials_is_refused_without_repeating_them(text: str) -> None:
    why = refusal(nats_url, text)
    assert "XCE_NATS_NKEY_SEED_FILE" in why and "XCE_NATS_CREDS" in why
    assert "s3cret" not in why
    with pytest.raises(ValueError) as refused:
        nats_servers(text)
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    "query",
    [
        "user%6eame=x&pass%77ord=s3cret",
        "PASSWORD=s3cret",
        "Username=x",
        "password=",
        "ssl_password=s3cret",
    ],
)
def test_a_redis_url_with_credentials_in_its_query_is_refused(query: str) -> None:
    why = refusal(redis_url, f"rediss://h:6379/0?{query}")
    assert "XCE_REDIS_PASSWORD_FILE" in why
    assert "s3cret" not in why


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("redis://h:6379/0?foo=1", "foo"),
        ("redis://h/0?socket_timeout=1&f%6fo=1", "foo"),
        ("redis://h/0?ssl_cert_reqs=none", "ssl_cert_reqs"),
        ("redis://core@h/0?DB=1", "DB"),
    ],
)
def test_a_redis_url_with_a_query_key_redis_py_does_not_take_names_it(text: str, key: str) -> None:
    """Such a key reached the connection's constructor: a 50-line ``TypeError``."""
    why = refusal(redis_url, text)
    assert why.endswith(f": unknown query parameter {key!r}")
    assert "core@" not in why  # the user info stays out (``public_url``)


@pytest.mark.parametrize(
    "text",
    [
        "redis://h:6379/0?db=2&socket_timeout=1.5&client_name=core",
        "rediss://h/0?ssl_cert_reqs=none&ssl_ca_certs=/etc/ca.pem&ssl_check_hostname=false",
        "unix:///run/redis.sock?db=1",
    ],
)
def test_a_redis_url_with_query_keys_redis_py_takes_is_taken(text: str) -> None:
    assert redis_url(text) == text
