"""The stack on a three-server JetStream cluster, one server SIGKILLed mid-run.

The bus scales the way NATS does: every stream is kept on three servers
(``StreamLimits(replicas=3)``), the services are given the three servers' URLs, and
losing one server (here the leader of ``XCE_EVENTS``, killed while the emulator's
jobs are being dispatched) loses nothing: the two left elect new leaders, the
clients on the dead server reconnect to another, and the decisions on
``XCE_DECISIONS`` are, byte for byte, those of an uninterrupted in-process
``SchedCore`` fed the same events, each job dispatched once.

The streams are created here, replicated and bounded, before the services start
(a service leaves a stream that exists as it is). The cluster is ready only once it
has a JetStream meta leader and each stream a leader with its two replicas
current: both are polled for, from the servers' own answers.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import nats
import pytest
from nats.js import JetStreamContext
from nats.js.errors import Error as JetStreamError
from xce_driver.live.controller_bus import ensure_ctl_streams
from xce_kit.streams import (
    BUS_STREAMS,
    WEEK_S,
    StreamLimits,
    ensure_record_stream,
    ensure_streams,
)
from xce_schemas.bus import EVENTS_STREAM

from tests.live.helpers import run, wait_until
from tests.live.servers import NatsCluster, ServerProcess, free_port, nats_cluster
from tests.live.test_stack import (
    Stack,
    Where,
    compose_argv,
    metric,
    play_waves,
    poll,
    waves_decisions,
)
from tests.live.test_stack import stack as stack  # the fixture: processes killed after

pytestmark = [pytest.mark.nats, pytest.mark.redis]

#: Every stream on the three servers, bounded as in production (a small size cap:
#: nats-server reserves it on each server's store).
REPLICATED = StreamLimits(max_age_s=WEEK_S, max_bytes=64 << 20, replicas=3)
#: The same, as the services' options.
SERVICE_LIMITS = ("--stream-replicas", "3", "--stream-max-bytes", "64MiB")
#: How long the cluster may take to elect its leaders, s (3 servers on a loaded machine).
ELECTION_S = 60.0


@pytest.fixture
def cluster(nats_server_proc: ServerProcess, tmp_path: Path) -> Iterator[NatsCluster]:
    """Three JetStream servers routed into one cluster on loopback, stopped after."""
    servers = nats_cluster(tmp_path / "cluster", nats_server_proc.argv[0])
    servers.start()
    try:
        yield servers
    finally:
        servers.stop()


@contextlib.asynccontextmanager
async def jetstream(url: str) -> AsyncIterator[JetStreamContext]:
    """A JetStream context over the servers of ``url`` (comma-separated), closed after."""
    nc = await nats.connect([part for part in url.split(",") if part])
    try:
        yield nc.jetstream()
    finally:
        await nc.close()


async def answers(check: Callable[[], Awaitable[object]]) -> bool:
    """Whether ``check`` answers, truly, without a JetStream error or a timeout (a
    cluster electing a leader answers with neither, or "unavailable")."""
    try:
        return bool(await check())
    except (TimeoutError, JetStreamError, nats.errors.Error):
        return False


async def replicated(js: JetStreamContext, stream: str, alive: set[str]) -> bool:
    """Whether ``stream`` has a leader among ``alive`` and every other live server
    holds a current replica."""
    info = await js.stream_info(stream)
    cluster = info.cluster
    if cluster is None or cluster.leader not in alive:
        return False
    current = {peer.name for peer in cluster.replicas or [] if peer.current}
    return alive - {cluster.leader} <= current


def make_streams(cluster: NatsCluster) -> None:
    """Wait for JetStream's meta leader, create every stream with ``REPLICATED`` and
    wait until each has its leader and current replicas."""
    alive = {f"n{i}" for i in range(1, len(cluster.servers) + 1)}

    async def make() -> None:
        async with jetstream(cluster.url) as js:
            await wait_until(lambda: answers(js.account_info), "a meta leader", ELECTION_S)
            await ensure_streams(js, limits=REPLICATED)
            await ensure_ctl_streams(js, REPLICATED)
            await ensure_record_stream(js, REPLICATED)
            for stream in BUS_STREAMS:
                await wait_until(
                    lambda stream=stream: answers(lambda: replicated(js, stream, alive)),
                    f"{stream} to have a leader and two current replicas",
                    ELECTION_S,
                )
                info = await js.stream_info(stream)
                assert info.config.num_replicas == 3 and info.config.max_bytes == 64 << 20

    run(make())


def leader_of(cluster: NatsCluster, stream: str) -> str:
    """The ``server_name`` of ``stream``'s leader."""

    async def ask() -> str:
        async with jetstream(cluster.url) as js:
            info = await js.stream_info(stream)
            assert info.cluster is not None and info.cluster.leader is not None
            return info.cluster.leader

    return run(ask())


def wait_for_leaders(cluster: NatsCluster, alive: set[str]) -> None:
    """Wait until every stream has a leader among ``alive`` with the others current."""
    url = ",".join(cluster.servers[int(name[1:]) - 1].url for name in sorted(alive))

    async def wait() -> None:
        async with jetstream(url) as js:
            for stream in BUS_STREAMS:
                await wait_until(
                    lambda stream=stream: answers(lambda: replicated(js, stream, alive)),
                    f"{stream} to have a leader on a live server",
                    ELECTION_S,
                )

    run(wait())


def test_the_stack_rides_out_a_cluster_server_killed_mid_run(
    bus: tuple[str, str], cluster: NatsCluster, stack: Stack, tmp_path: Path
) -> None:
    _, redis_url = bus  # an empty Redis; the bus of this test is the cluster
    began = time.monotonic()
    make_streams(cluster)
    # As an operator runs them on a cluster: every server's URL, three copies of
    # whatever they create themselves (the streams exist already, with these limits).
    where = Where(
        cluster.url, redis_url, stack.folder, {"core": free_port(), "bridge": free_port()}
    )
    # The lease outlasts the lease bucket's leader election once a server dies (seen
    # taking over 4 s under load: a 5 s lease was lost, and the lone core exited 3).
    lease = {"core": ["--lease-ttl", "30"], "bridge": []}
    for name in ("core", "bridge"):
        stack.start(name, [*compose_argv(name, where), *SERVICE_LIMITS, *lease[name]])

    def ready() -> bool:
        stack.check_running()
        rounds = metric(where, "bridge", "xce_bridge_rounds_total")
        return rounds >= 1 and metric(where, "core", "xce_core_rounds_total") >= 1

    poll(ready, "the core and the bridge to come up")
    victims: list[str] = []

    def kill_events_leader() -> None:
        # The leader of XCE_EVENTS, where every event is stored first.
        victims.append(leader_of(cluster, EVENTS_STREAM))
        cluster.servers[int(victims[0][1:]) - 1].kill()

    play_waves(stack, where, tmp_path, kill_events_leader)
    # Every stream lives on: led by a server left, its other copy current.
    (victim,) = victims
    alive = {f"n{i}" for i in range(1, 4)} - {victim}
    wait_for_leaders(cluster, alive)
    assert leader_of(cluster, EVENTS_STREAM) != victim
    survivor = cluster.servers[int(min(alive)[1:]) - 1].url
    _, decisions = waves_decisions(stack, where, survivor)
    ops = [s.subject.rsplit(".", 1)[-1] for s in decisions]
    assert ops.count("DISPATCH") == 10
    print(f"cluster test: {time.monotonic() - began:.1f} s, killed {victim} (XCE_EVENTS leader)")
