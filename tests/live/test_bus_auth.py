"""The authenticated, least-privilege bus against a real nats-server and redis-server
started with ``xce-bus-config``'s configuration (``xce_kit.bus_policy``).

For each rule, the forbidden publish or subscription is refused (the server says
``Permissions Violation`` and nothing gets through) and the allowed one works (an
``ops`` client on the other side sees the message). A controller cannot delete, purge
or read the streams it has no business with; only the core can use the lease bucket;
a client without a key, or with a key the server does not know, is refused. Redis:
without a password nothing, and each service only its keys and commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import nats
import pytest
import redis.asyncio as aioredis
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import NoServersError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig
from redis.exceptions import AuthenticationError, NoPermissionError
from xce_driver.live.controller_bus import ensure_ctl_streams
from xce_kit.auth import SEED_FILE_VAR, CredentialsError
from xce_kit.bus_config import new_seed, write_secret
from xce_kit.bus_policy import CORE_LEASE_BUCKET
from xce_kit.connection import connect_nats
from xce_kit.lease import Lease
from xce_kit.options import run_service
from xce_kit.redis_client import redis_from_url
from xce_kit.streams import ensure_record_stream, ensure_streams
from xce_schemas.admin import CORE_STATUS_KEY, RECORDER_CONTROL_SUBJECT, RECORDER_STATUS_KEY
from xce_schemas.bus import CORE_CHECKPOINT_KEY, DECISIONS_STREAM, EVENTS_STREAM
from xce_schemas.controller import CTL_DECISIONS_STREAM, CTL_STREAM

from tests.live.helpers import run
from tests.live.secured import SecuredBus, act_as

pytestmark = [pytest.mark.nats, pytest.mark.redis]

log = logging.getLogger("test_bus_auth")
#: How long a test waits for the server's word, s (a loaded machine).
WAIT_S = 10.0


@dataclass
class Violations:
    """The permission violations the server reported to one client (lower case, as
    nats-py gives them)."""

    seen: list[str] = field(default_factory=list)

    async def add(self, exc: Exception) -> None:
        self.seen.append(str(exc).lower())

    def about(self, verb: str, subject: str) -> bool:
        """Whether the server refused ``verb`` (``publish``, ``subscription``) on
        ``subject``."""
        return any(f'{verb} to "{subject.lower()}"' in text for text in self.seen)


@contextlib.asynccontextmanager
async def client(bus: SecuredBus, name: str) -> AsyncIterator[tuple[NatsClient, Violations]]:
    """A connection as role ``name``, and the violations the server reports on it."""
    violations = Violations()
    nc = await nats.connect(
        bus.nats_url,
        error_cb=violations.add,
        allow_reconnect=False,
        **bus.credentials(name).connect_options(),
    )
    try:
        yield nc, violations
    finally:
        await nc.close()


async def first_of(
    send: Callable[[], Awaitable[None]], got: asyncio.Event, refused: Callable[[], bool]
) -> str:
    """``send`` until ``got`` is set (``"through"``) or ``refused()`` holds
    (``"refused"``). Sent again every 0.2 s: between two fresh connections nats-py
    2.16 and nats-server 2.9 lose about one first message in fifty, with or
    without authentication."""
    loop = asyncio.get_running_loop()
    deadline = next_send = loop.time()
    deadline += WAIT_S
    while loop.time() < deadline:
        if got.is_set():
            return "through"
        if refused():
            return "refused"
        if loop.time() >= next_send:
            await send()
            next_send = loop.time() + 0.2
        await asyncio.sleep(0.02)
    raise AssertionError("neither delivered nor refused")


@dataclass(frozen=True)
class Rule:
    """One right: may role ``who`` publish on (``verb="publish"``) or subscribe to
    (``"subscribe"``) ``subject``? ``{inbox}`` stands for the role's own inbox."""

    who: str
    verb: str
    subject: str
    allowed: bool


RULES = [
    Rule("bridge", "publish", "xce.events.JOBS_PUSH", True),
    Rule("core", "publish", "xce.events.JOBS_PUSH", False),
    Rule("controller", "publish", "xce.events.BATCH", False),
    Rule("recorder", "publish", "xce.events.BEGIN_ROUND", False),
    Rule("admin", "publish", "xce.events.JOBS_PUSH", False),
    Rule("core", "publish", "xce.decisions.DISPATCH", True),
    Rule("bridge", "publish", "xce.decisions.DISPATCH", False),
    Rule("controller", "publish", "xce.decisions.DISPATCH", False),
    Rule("core", "publish", "xce.record.r1", True),
    Rule("recorder", "publish", "xce.record.r1", False),
    Rule("controller", "publish", "xce.record.r1", False),
    Rule("recorder", "subscribe", "xce.recorder.control", True),
    Rule("core", "subscribe", "xce.recorder.control", False),
    Rule("admin", "subscribe", "xce.recorder.control", False),
    Rule("controller", "subscribe", "xce.recorder.control", False),
    Rule("admin", "publish", "xce.recorder.control", True),
    Rule("controller", "publish", "xce.recorder.control", False),
    Rule("bridge", "publish", "xce.recorder.control", False),
    Rule("core", "subscribe", "xce.core.record", True),
    Rule("controller", "subscribe", "xce.core.record", False),
    Rule("recorder", "publish", "xce.core.record", True),
    Rule("controller", "publish", "xce.core.record", False),
    Rule("admin", "publish", "xce.core.record", False),
    Rule("controller", "publish", "xce.ctl.jobs", True),
    Rule("core", "publish", "xce.ctl.jobs", False),
    Rule("controller", "publish", "xce.ctl.decisions.DISPATCH", False),
    Rule("bridge", "publish", "xce.ctl.decisions.DISPATCH", True),
    Rule("controller", "subscribe", "xce.ctl.decisions.DISPATCH", True),
    Rule("controller", "subscribe", "xce.events.>", False),
    Rule("controller", "subscribe", "xce.decisions.>", False),
    Rule("core", "publish", "xce.deadletter.core", True),
    Rule("core", "publish", "xce.deadletter.bridge", False),
    Rule("controller", "publish", "xce.deadletter.core", False),
    Rule("controller", "subscribe", "{inbox}.x", True),
    Rule("controller", "subscribe", "_INBOX.>", False),
    Rule("admin", "subscribe", "_INBOX.>", False),
]


async def publish(nc: NatsClient, subject: str) -> None:
    await nc.publish(subject, b"{}")
    await nc.flush()


def rule_id(rule: Rule) -> str:
    may = "may" if rule.allowed else "may not"
    return f"{rule.who} {may} {rule.verb} {rule.subject}"


@pytest.mark.parametrize("rule", RULES, ids=[rule_id(r) for r in RULES])
def test_each_role_publishes_and_subscribes_only_where_its_rules_say(
    secured: SecuredBus, rule: Rule
) -> None:
    async def go() -> str:
        async with client(secured, "ops") as (ops, _), client(secured, rule.who) as (nc, seen):
            subject = rule.subject.replace("{inbox}", nc._inbox_prefix.decode())
            got = asyncio.Event()

            async def arrived(msg: Msg) -> None:
                got.set()

            if rule.verb == "publish":
                await ops.subscribe(subject, cb=arrived)
                await ops.flush()
                send = partial(publish, nc, subject)
                return await first_of(send, got, lambda: seen.about("publish", subject))
            await nc.subscribe(subject, cb=arrived)
            await nc.flush()
            send = partial(publish, ops, subject.replace(">", "x"))
            return await first_of(send, got, lambda: seen.about("subscription", subject))

    assert run(go()) == ("through" if rule.allowed else "refused")


# --- JetStream: what a role may not do to the streams -------------------------------------


@pytest.fixture(scope="module")
def streams(secured: SecuredBus) -> SecuredBus:
    """The bus with every XCE stream made (by ``ops``) and an event in XCE_EVENTS."""

    async def make() -> None:
        async with client(secured, "ops") as (nc, _):
            js = nc.jetstream()
            await ensure_streams(js)
            await ensure_ctl_streams(js)
            await ensure_record_stream(js)
            await js.publish("xce.events.BEGIN_ROUND", b"{}", stream=EVENTS_STREAM)

    run(make())
    return secured


Call = Callable[[JetStreamContext], Awaitable[object]]
#: (who, what, the API call, its subject)
FORBIDDEN: list[tuple[str, str, Call, str]] = [
    (
        "controller",
        "delete XCE_EVENTS",
        lambda js: js.delete_stream(EVENTS_STREAM),
        "$JS.API.STREAM.DELETE.XCE_EVENTS",
    ),
    (
        "controller",
        "delete XCE_CONTROLLER",
        lambda js: js.delete_stream(CTL_STREAM),
        "$JS.API.STREAM.DELETE.XCE_CONTROLLER",
    ),
    (
        "controller",
        "purge XCE_CTL_DECISIONS",
        lambda js: js.purge_stream(CTL_DECISIONS_STREAM),
        "$JS.API.STREAM.PURGE.XCE_CTL_DECISIONS",
    ),
    (
        "controller",
        "read an event of XCE_EVENTS",
        lambda js: js.get_msg(EVENTS_STREAM, seq=1),
        "$JS.API.STREAM.MSG.GET.XCE_EVENTS",
    ),
    (
        "controller",
        "consume XCE_EVENTS",
        lambda js: js.add_consumer(
            EVENTS_STREAM, ConsumerConfig(durable_name="spy", ack_policy=AckPolicy.NONE)
        ),
        "$JS.API.CONSUMER.DURABLE.CREATE.XCE_EVENTS.spy",
    ),
    (
        "controller",
        "consume the core's XCE_DECISIONS",
        lambda js: js.add_consumer(
            DECISIONS_STREAM, ConsumerConfig(durable_name="spy", ack_policy=AckPolicy.NONE)
        ),
        "$JS.API.CONSUMER.DURABLE.CREATE.XCE_DECISIONS.spy",
    ),
    (
        "core",
        "delete XCE_EVENTS",
        lambda js: js.delete_stream(EVENTS_STREAM),
        "$JS.API.STREAM.DELETE.XCE_EVENTS",
    ),
    (
        "bridge",
        "purge XCE_DECISIONS",
        lambda js: js.purge_stream(DECISIONS_STREAM),
        "$JS.API.STREAM.PURGE.XCE_DECISIONS",
    ),
    (
        "recorder",
        "delete the bridge's consumer",
        lambda js: js.delete_consumer(CTL_STREAM, "xce-bridge-ctl"),
        "$JS.API.CONSUMER.DELETE.XCE_CONTROLLER.xce-bridge-ctl",
    ),
]


@pytest.mark.parametrize(
    ("who", "call", "subject"),
    [(who, call, subject) for who, _, call, subject in FORBIDDEN],
    ids=[f"{who} may not {what}" for who, what, _, _ in FORBIDDEN],
)
def test_jetstream_calls_outside_a_role_are_refused_and_change_nothing(
    streams: SecuredBus, who: str, call: Call, subject: str
) -> None:
    async def go() -> tuple[bool, int]:
        async with client(streams, who) as (nc, seen):
            with pytest.raises((NatsError, TimeoutError)):
                await call(nc.jetstream(timeout=2.0))
            refused = seen.about("publish", subject)
        async with client(streams, "ops") as (ops, _):
            return refused, (await ops.jetstream().stream_info(EVENTS_STREAM)).state.messages

    refused, events = run(go())
    assert refused
    assert events >= 1  # XCE_EVENTS is still there, its event too


def test_only_the_core_uses_the_lease_bucket(streams: SecuredBus) -> None:
    async def as_core() -> tuple[int, int, bool, list[str]]:
        async with client(streams, "core") as (a, seen_a), client(streams, "core") as (b, seen_b):
            first = Lease(a.jetstream(timeout=5.0), "core-a", ttl_s=2.0)
            second = Lease(b.jetstream(timeout=5.0), "core-b", ttl_s=2.0)
            term = await asyncio.wait_for(first.acquire(), WAIT_S)
            waiting = asyncio.create_task(second.acquire())
            await asyncio.sleep(0.5)
            held = not waiting.done()  # the standby waits while the leader holds it
            await first.release()
            taken = await asyncio.wait_for(waiting, WAIT_S)
            await second.release()
            return term, taken, held, seen_a.seen + seen_b.seen

    term, taken, held, violations = run(as_core())
    assert held and taken > term
    assert violations == []

    async def as_controller() -> tuple[bool, bool]:
        async with client(streams, "controller") as (nc, seen):
            with pytest.raises((NatsError, TimeoutError)):
                await nc.jetstream(timeout=2.0).key_value(CORE_LEASE_BUCKET)
            send = partial(publish, nc, "$KV.XCE_CORE_LEASE.leader")
            await first_of(
                send, asyncio.Event(), lambda: seen.about("publish", "$KV.XCE_CORE_LEASE.leader")
            )
            return (
                seen.about("publish", "$JS.API.STREAM.INFO.KV_XCE_CORE_LEASE"),
                seen.about("publish", "$KV.XCE_CORE_LEASE.leader"),
            )

    assert run(as_controller()) == (True, True)


# --- who may connect ---------------------------------------------------------------------


def test_a_client_without_a_key_is_refused(secured: SecuredBus) -> None:
    async def go() -> None:
        await nats.connect(
            secured.nats_url, allow_reconnect=False, connect_timeout=5, error_cb=_quiet
        )

    with pytest.raises(NatsError, match=r"(?i)authorization violation"):
        run(go())


async def _quiet(exc: Exception) -> None:
    """An error callback that keeps nats-py from logging the refusal's traceback."""


def test_a_key_the_server_does_not_know_is_refused_with_one_line(
    secured: SecuredBus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stranger = tmp_path / "stranger.nk"
    write_secret(stranger, new_seed())
    monkeypatch.setenv(SEED_FILE_VAR, str(stranger))
    with pytest.raises(NoServersError) as refused:
        run(connect_nats(secured.nats_url, "stranger", log))
    assert "authorization violation" in str(refused.value).lower()
    assert stranger.read_text().strip() not in str(refused.value)


def test_a_seed_of_the_wrong_role_is_named_in_the_error_the_service_stops_with(
    secured: SecuredBus, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The admin started with the bridge's key: its ask of the recorder is refused
    (the server says so only to the error callback) and goes unanswered."""
    act_as(secured, "bridge", monkeypatch)

    async def admin() -> None:
        nc = await connect_nats(secured.nats_url, "xce-admin", log)
        try:
            await nc.request(RECORDER_CONTROL_SUBJECT, b"{}", timeout=2)
        finally:
            await nc.close()

    assert run_service("xce-admin", admin(), nats=secured.nats_url) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.endswith(
        f"(the server said: permission denied for publish to {RECORDER_CONTROL_SUBJECT}: "
        "is XCE_NATS_NKEY_SEED_FILE (or XCE_NATS_CREDS) the xce-admin's seed?)\n"
    )


def test_a_missing_seed_file_is_named_and_nothing_connects(
    secured: SecuredBus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SEED_FILE_VAR, "/nonexistent/core.nk")
    with pytest.raises(CredentialsError, match=r"^XCE_NATS_NKEY_SEED_FILE=/nonexistent/core.nk: "):
        run(connect_nats(secured.nats_url, "core", log))


def test_connect_nats_applies_the_environment_s_credentials(
    secured: SecuredBus, monkeypatch: pytest.MonkeyPatch
) -> None:
    act_as(secured, "controller", monkeypatch)

    async def go() -> str:
        nc = await connect_nats(secured.nats_url, "emulator", log)
        try:
            return nc._inbox_prefix.decode()
        finally:
            await nc.close()

    public = secured.credentials("controller").public_key
    assert run(go()) == f"_INBOX.{public}"


# --- Redis ---------------------------------------------------------------------------------


def test_redis_refuses_a_client_without_the_password(secured: SecuredBus) -> None:
    async def go(**auth: str) -> None:
        r = aioredis.Redis.from_url(secured.redis_url, **auth)
        try:
            await r.get(CORE_CHECKPOINT_KEY)
        finally:
            await r.aclose()

    with pytest.raises(AuthenticationError):  # NOAUTH: the default user is off
        run(go())
    with pytest.raises(AuthenticationError):
        run(go(username="core", password="not-its-password"))


@pytest.mark.parametrize(
    ("who", "command", "allowed"),
    [
        ("core", ("set", CORE_CHECKPOINT_KEY, "{}"), True),
        ("core", ("hset", CORE_STATUS_KEY, "seq", "1"), True),
        ("core", ("get", "xce:recording:a.jsonl"), False),
        ("core", ("flushdb",), False),
        ("recorder", ("hset", RECORDER_STATUS_KEY, "state", "idle"), True),
        ("recorder", ("get", CORE_CHECKPOINT_KEY), False),
        ("admin", ("hgetall", CORE_STATUS_KEY), True),
        ("admin", ("hset", CORE_STATUS_KEY, "seq", "2"), False),
        ("admin", ("get", CORE_CHECKPOINT_KEY), False),
    ],
    ids=[
        "core writes its checkpoint",
        "core writes its status",
        "core may not read a recording",
        "core may not flush the database",
        "recorder writes its status",
        "recorder may not read the checkpoint",
        "admin reads the core's status",
        "admin may not write the core's status",
        "admin may not read the checkpoint (every job is in it)",
    ],
)
def test_each_redis_user_has_only_its_keys_and_commands(
    secured: SecuredBus,
    monkeypatch: pytest.MonkeyPatch,
    who: str,
    command: tuple[str, ...],
    allowed: bool,
) -> None:
    act_as(secured, who, monkeypatch)

    async def go() -> None:
        r = redis_from_url(secured.redis_url)
        try:
            await r.execute_command(*command)
        finally:
            await r.aclose()

    if allowed:
        run(go())
    else:
        with pytest.raises(NoPermissionError, match="no permissions"):
            run(go())
