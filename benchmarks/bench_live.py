"""Benchmark: the live stack (bridge → XCE_EVENTS → core service → XCE_DECISIONS →
bridge → controller) over a real NATS JetStream and Redis.

    python -m benchmarks.bench_live [--latency-rate 1000] [--seconds 8]
        [--rates 1000,2500,5000,10000,20000] [--step-seconds 4] [--round-interval 0.1]
        [--auth] [--tls]

It starts ``nats-server -js`` and ``redis-server`` on free loopback ports (the live
tests' helper, ``tests/live/servers.py``), the core service and the bridge as their
own processes, and plays a controller in this process: a closed loop of one-slot
jobs on 1,000 hosts of 64 slots. Each job is submitted (``xce.ctl.jobs``) and
reported DONE (``xce.ctl.job_state``) as soon as its DISPATCH arrives: two
controller events per job, one DISPATCH decision, a PEND only when it waited.

1. **Latency at ``--latency-rate`` events/s.** Per decision, from its round's
   ``BEGIN_ROUND`` being stamped by the bridge (the decision's ``ts``) to the
   controller receiving it on ``xce.ctl.decisions.<OP>``: p50 and p99. And per job,
   from its submission to its DISPATCH (this adds the wait for the next round: on
   average half a round interval).
2. **Highest sustained rate.** Steps of ``--rates`` events/s, ``--step-seconds``
   each; per step: the rate the controller sent, the rate the bridge stored on
   ``XCE_EVENTS`` and the rate the core handled (events, read from the services'
   ``/metrics``: the stream holds batches of events), and how long after the step's
   end the core took to catch up with the stream (the lag left). A rate is sustained when the
   core handled at least 95% of it and the lag left is under 1 s.
3. **Baseline, same process:** a raw JetStream round trip without the core: publish
   one message, consume it with a pull consumer; its p50/p99 at the latency rate,
   and its throughput pipelined; the ratios live / raw.

With ``--auth`` the servers run with ``xce-bus-config``'s configuration (nkey users,
subject permissions, Redis ACL users; ``tests/live/secured.py``) and each process as
its role: the services as core and bridge, the controller as controller, the
benchmark's own reads of the streams as ops. ``--tls`` adds TLS on NATS with client
certificates (made for the run), so every connection is encrypted and authenticated.

Everything shares this machine's cores (the servers, the two services and this
controller); the figures are what it measures here, nothing is extrapolated.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nats
import orjson
import psutil
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from nats.js.errors import NotFoundError
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console
from rich.table import Table
from xce_driver.live.bridge import BridgeOptions
from xce_driver.live.controller_bus import ensure_ctl_streams
from xce_driver.live.event_codec import encode_batch
from xce_kit.auth import nats_credentials
from xce_kit.streams import ensure_streams
from xce_schemas import BeginRound, CoreEvent, dump_event
from xce_schemas.bus import EVENTS_BATCH_SUBJECT, EVENTS_STREAM
from xce_schemas.controller import (
    BRIDGE_CTL_DURABLE,
    CTL_STREAM,
    parse_ctl_payload,
    to_core_event,
)

try:
    from tests.live.helpers import reset_bus
    from tests.live.secured import SecuredBus, secured_bus
    from tests.live.servers import ServerProcess, free_port, nats_server, redis_server
except ImportError:  # run outside the repository checkout
    ServerProcess = None  # type: ignore[assignment,misc]

SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin"])
HOSTS = 1000
SLOTS = 64


async def quiet(exc: Exception) -> None:
    """A NATS error callback for the benchmark's own clients: nats-py's default prints
    a traceback for each (a TLS connection closing says ``APPLICATION_DATA_AFTER_
    CLOSE_NOTIFY``); these are only logged, at DEBUG."""
    logging.getLogger("bench_live").debug("nats: %s", exc)


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values`` (nearest rank); NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered)) - 1))
    return ordered[rank]


@dataclass
class Controller:
    """The closed loop: submits jobs, answers each DISPATCH with DONE, and times the
    decisions it receives (wall ns)."""

    nc: NatsClient
    next_jobid: int = 1
    sent: int = 0
    submitted_at: dict[int, int] = field(default_factory=dict)
    decision_lag_ms: list[float] = field(default_factory=list)
    session_lag_ms: list[float] = field(default_factory=list)
    dispatch_ms: list[float] = field(default_factory=list)
    measuring: bool = False
    dones: list[int] = field(default_factory=list)

    async def on_decision(self, msg: Msg) -> None:
        now = time.time_ns()
        decision = orjson.loads(msg.data)
        if self.measuring:
            self.decision_lag_ms.append((now - decision["ts"]) / 1e6)
            if decision["op"] == "NEW_SESSION":  # a round's first decision
                self.session_lag_ms.append((now - decision["ts"]) / 1e6)
        if decision["op"] == "DISPATCH":
            jobid = decision["jobid"]
            submitted = self.submitted_at.pop(jobid, None)
            if self.measuring and submitted is not None:
                self.dispatch_ms.append((now - submitted) / 1e6)
            self.dones.append(jobid)

    async def send(self, count: int) -> None:
        """``count`` controller events: DONE reports owed first, then submissions."""
        for _ in range(count):
            if self.dones:
                jobid = self.dones.pop()
                data = b'{"jobid":%d,"state":"DONE"}' % jobid
                await self.nc.publish("xce.ctl.job_state", data)
            else:
                jobid = self.next_jobid
                self.next_jobid += 1
                self.submitted_at[jobid] = time.time_ns()
                data = b'{"jobs":[{"jobid":%d,"queue":"normal"}]}' % jobid
                await self.nc.publish("xce.ctl.jobs", data)
            self.sent += 1

    async def paced(self, rate: float, seconds: float) -> float:
        """Send at ``rate`` events/s for ``seconds``, in 5 ms ticks; the rate reached."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        sent0 = self.sent
        tick = 0.005
        while (elapsed := loop.time() - start) < seconds:
            owed = int(rate * elapsed) - (self.sent - sent0)
            if owed > 0:
                await self.send(owed)
            await asyncio.sleep(tick)
        return (self.sent - sent0) / (loop.time() - start)


def counted(port: int, name: str) -> float:
    """The sum of metric ``name`` (every label) a service serves on ``port``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    )


@dataclass(frozen=True)
class EventCounters:
    """Where the events the bridge stored and the core handled are counted."""

    bridge_port: int
    core_port: int

    async def read(self) -> tuple[float, float]:
        """``(events the bridge stored, events the core handled)`` so far."""
        return await asyncio.gather(
            asyncio.to_thread(counted, self.bridge_port, "xce_bridge_events_total"),
            asyncio.to_thread(counted, self.core_port, "xce_core_events_total"),
        )


async def core_acked(js: JetStreamContext) -> int:
    """The last event sequence the core service acknowledged."""
    try:
        info = await js.consumer_info(EVENTS_STREAM, "xce-core")
    except NotFoundError:
        return 0
    return info.ack_floor.stream_seq if info.ack_floor else 0


async def ctl_acked(js: JetStreamContext) -> int:
    """The last controller message the bridge acknowledged (its event is stored)."""
    try:
        info = await js.consumer_info(CTL_STREAM, BRIDGE_CTL_DURABLE)
    except NotFoundError:
        return 0
    return info.ack_floor.stream_seq if info.ack_floor else 0


async def stream_last(js: JetStreamContext) -> int:
    return (await js.stream_info(EVENTS_STREAM)).state.last_seq


async def drained(js: JetStreamContext, timeout_s: float) -> float | None:
    """Seconds until the core has acknowledged every event stored so far (None: not
    within ``timeout_s``)."""
    start = time.perf_counter()
    target = await stream_last(js)
    while await core_acked(js) < target:
        if time.perf_counter() - start > timeout_s:
            return None
        await asyncio.sleep(0.02)
    return time.perf_counter() - start


class CpuMeter:
    """CPU time of the stack's processes (this one included): cores each used
    between ``start`` and ``stop`` (CPU s / wall s)."""

    def __init__(self, pids: dict[str, int]) -> None:
        self._procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self._procs["controller"] = psutil.Process()
        self._start: dict[str, float] = {}
        self._t0 = 0.0

    def _cpu(self) -> dict[str, float]:
        out = {}
        for name, proc in self._procs.items():
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                out[name] = times.user + times.system
        return out

    def start(self) -> None:
        self._start, self._t0 = self._cpu(), time.perf_counter()

    def stop(self) -> dict[str, float]:
        wall = time.perf_counter() - self._t0
        return {
            name: (cpu - self._start.get(name, cpu)) / wall for name, cpu in self._cpu().items()
        }


@dataclass
class Step:
    target: int
    sent_rate: float
    stored_rate: float
    handled_rate: float
    lag_s: float | None
    cores: dict[str, float] = field(default_factory=dict)

    @property
    def sustained(self) -> bool:
        return self.handled_rate >= 0.95 * self.target and self.lag_s is not None and self.lag_s < 1


async def live(
    nats_url: str, args: argparse.Namespace, meter: CpuMeter, counters: EventCounters
) -> tuple[Controller, list[Step]]:
    # The controller as controller; the streams read as the environment says (ops).
    nc = await nats.connect(nats_url, error_cb=quiet, **args.controller_options)
    monitor = await nats.connect(nats_url, error_cb=quiet, **nats_credentials().connect_options())
    js = monitor.jetstream()
    ctl = Controller(nc)
    await nc.subscribe("xce.ctl.decisions.*", cb=ctl.on_decision, pending_msgs_limit=10**7)
    # The bridge is listening once a configuration comes through.
    queues = b'{"config":{"queues":[{"name":"normal","priority":30}]}}'
    deadline = time.monotonic() + 30
    while True:
        await nc.publish("xce.ctl.config", queues)
        await nc.flush()
        with contextlib.suppress(NotFoundError):
            if await stream_last(js) > 0:
                break
        if time.monotonic() > deadline:
            raise RuntimeError("the bridge did not come up in 30 s")
        await asyncio.sleep(0.1)
    hosts = [{"name": f"h{i:04d}", "slots": SLOTS} for i in range(HOSTS)]
    await nc.publish("xce.ctl.hosts", orjson.dumps({"hosts": hosts}))
    await ctl.paced(200, 1.0)  # warm up
    await drained(js, 30)
    ctl.measuring = True
    await ctl.paced(args.latency_rate, args.seconds)
    ctl.measuring = False
    await drained(js, 30)
    steps = []
    for rate in args.rates:
        (stored0, handled0), t0 = await counters.read(), time.perf_counter()
        meter.start()
        sent_rate = await ctl.paced(rate, args.step_seconds)
        cores = meter.stop()
        (stored1, handled1), t1 = await counters.read(), time.perf_counter()
        lag = await drained(js, 30)
        span = t1 - t0
        steps.append(
            Step(
                rate,
                sent_rate,
                (stored1 - stored0) / span,
                (handled1 - handled0) / span,
                lag,
                cores,
            )
        )
        if lag is None:
            break
        await asyncio.sleep(1.0)  # let the loop settle (DONE reports owed)
        await ctl.send(len(ctl.dones))
        await drained(js, 30)
    await nc.close()
    await monitor.close()
    return ctl, steps


async def raw_baseline(nats_url: str, rate: float, seconds: float) -> tuple[list[float], float]:
    """Publish → pull-consume round trips of a plain stream: latencies (ms) at
    ``rate``, and the pipelined throughput (messages/s)."""
    nc = await nats.connect(nats_url, error_cb=quiet, **nats_credentials().connect_options())
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="BENCH_RAW", subjects=["bench.raw.>"]))
    await js.add_consumer(
        "BENCH_RAW", ConsumerConfig(durable_name="raw", ack_policy=AckPolicy.EXPLICIT)
    )
    sub = await js.pull_subscribe_bind(durable="raw", stream="BENCH_RAW")
    latencies: list[float] = []
    payload = b'{"type":"JOB_STATE_CHANGE","ts":0,"payload":{"jobid":1,"state":"DONE"}}'
    start = time.perf_counter()
    n = 0
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        await js.publish("bench.raw.x", payload)
        msgs = await sub.fetch(1, timeout=5)
        await msgs[0].ack()
        latencies.append((time.perf_counter() - t0) * 1000)
        n += 1
        await asyncio.sleep(max(0.0, start + n / rate - time.perf_counter()))
    # Throughput: publish pipelined while consuming in batches.
    total = 50_000
    consumed = 0

    async def consume() -> None:
        nonlocal consumed
        while consumed < total:
            with contextlib.suppress(TimeoutError):
                batch = await sub.fetch(500, timeout=1)
                consumed += len(batch)
                await batch[-1].ack()
                for msg in batch[:-1]:
                    await msg.ack()

    t0 = time.perf_counter()
    consumer = asyncio.create_task(consume())
    futures = [await js.publish_async("bench.raw.x", payload) for _ in range(total)]
    await asyncio.gather(*futures)
    await consumer
    throughput = total / (time.perf_counter() - t0)
    await js.delete_stream("BENCH_RAW")
    await nc.close()
    return latencies, throughput


#: Events (or controller messages) in each service's backlog for the "alone" runs.
ALONE_EVENTS = 30_000
#: Events per message of the core's backlog: the bridge's most.
BATCH_EVENTS = BridgeOptions().batch_events


def core_backlog(count: int) -> Iterator[CoreEvent]:
    """Core events of the closed loop the controller plays: configuration and hosts,
    then per round 50 submissions, ``BEGIN_ROUND`` (all 50 dispatched), their 50
    DONE reports; ``count`` events or a few more (a round's DONEs are kept whole)."""
    ts = 1_000_000_000

    def event(kind: str, payload: object) -> CoreEvent:
        nonlocal ts
        ts += 1_000
        return to_core_event(kind, parse_ctl_payload(kind, orjson.dumps(payload)), ts)

    yield event("config", {"config": {"queues": [{"name": "normal", "priority": 30}]}})
    yield event("hosts", {"hosts": [{"name": f"h{i:04d}", "slots": SLOTS} for i in range(HOSTS)]})
    made, jobid = 2, 1
    while made < count:
        first = jobid
        for jobid in range(first, first + 50):
            yield event("jobs", {"jobs": [{"jobid": jobid, "queue": "normal"}]})
        jobid += 1
        ts += 1_000
        yield BeginRound(ts=ts)
        for done in range(first, jobid):
            yield event("job_state", {"jobid": done, "state": "DONE"})
        made += 101


async def fill(js: JetStreamContext, messages: Iterator[tuple[str, bytes]]) -> int:
    """Publish ``(subject, data)`` pipelined; how many."""
    futures = [await js.publish_async(subject, data) for subject, data in messages]
    await asyncio.gather(*futures)
    return len(futures)


async def timed(progress: Callable[[], Awaitable[int]], total: int) -> float:
    """Rate (per s) from the first unit of ``progress`` to ``total``."""
    t0 = 0.0
    first = 0
    deadline = time.monotonic() + 300
    while (done := await progress()) < total:
        if not t0 and done:
            t0, first = time.perf_counter(), done
        if time.monotonic() > deadline:
            raise RuntimeError(f"stalled at {done} of {total}")
        await asyncio.sleep(0.01)
    return (total - first) / (time.perf_counter() - t0)


#: The environment a role's process runs with (None: this process's, no credentials).
EnvOf = Callable[[str], "dict[str, str] | None"]


def no_auth(role: str) -> dict[str, str] | None:
    """``EnvOf`` of a bus without authentication."""
    return None


def alone(
    nats_url: str, redis_url: str, logs: Path, env_of: EnvOf = no_auth
) -> tuple[float, float]:
    """Each service alone on its backlog (the stream filled first, nothing else
    running but the servers): the core service's events/s from ``XCE_EVENTS`` to
    acknowledged with their decisions stored; the bridge's controller messages/s
    from ``XCE_CONTROLLER`` to events stored."""
    # The core's backlog in batch messages, as the bridge publishes them.
    events = [dump_event(e) for e in core_backlog(ALONE_EVENTS)]
    batches = [
        (EVENTS_BATCH_SUBJECT, encode_batch(chunk, [None] * len(chunk)))
        for chunk in (events[i : i + BATCH_EVENTS] for i in range(0, len(events), BATCH_EVENTS))
    ]
    core = service(
        logs,
        "core-alone",
        "xce_driver.live.core_service",
        nats_url,
        "--redis",
        redis_url,
        env=env_of("core"),
    )
    messages = (
        ("xce.ctl.jobs", b'{"jobs":[{"jobid":%d,"queue":"normal"}]}' % i)
        if i % 2
        else ("xce.ctl.job_state", b'{"jobid":%d,"state":"DONE"}' % (i - 1))
        for i in range(1, ALONE_EVENTS + 1)
    )
    bridge = service(
        logs,
        "bridge-alone",
        "xce_driver.live.bridge",
        nats_url,
        "--round-interval",
        "3600",
        env=env_of("bridge"),
    )
    messages_per_s = backlog_rate(nats_url, redis_url, iter(batches), core, core_acked)
    return (
        messages_per_s * len(events) / len(batches),
        backlog_rate(nats_url, redis_url, messages, bridge, ctl_acked),
    )


def backlog_rate(
    nats_url: str,
    redis_url: str,
    messages: Iterator[tuple[str, bytes]],
    worker: contextlib.AbstractContextManager[object],
    progress: Callable[[JetStreamContext], Awaitable[int]],
) -> float:
    """On an empty bus and Redis (``reset_bus``): publish ``messages``, then run
    ``worker`` until ``progress`` reaches their count; its rate (per s)."""
    reset_bus(nats_url, redis_url)

    async def go() -> float:
        nc = await nats.connect(nats_url, error_cb=quiet, **nats_credentials().connect_options())
        js = nc.jetstream()
        await ensure_streams(js)
        await ensure_ctl_streams(js)
        total = await fill(js, messages)
        with worker:
            rate = await timed(lambda: progress(js), total)
        await nc.close()
        return rate

    return asyncio.run(go())


@contextlib.contextmanager
def service(
    logs: Path, name: str, module: str, nats_url: str, *argv: str, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A service process (``python -m module --nats URL argv``, environment ``env``:
    default this process's), its output in ``logs/name.log``; terminated at the end."""
    with open(logs / f"{name}.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, "--nats", nats_url, *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextlib.contextmanager
def servers(
    workdir: Path, *, auth: bool = False, tls: bool = False
) -> Iterator[tuple[str, str, dict[str, int], SecuredBus | None]]:
    """NATS and Redis on free loopback ports: ``(nats URL, redis URL, their pids,
    the secured bus or None)``. With ``auth`` (or ``tls``) they run with
    ``xce-bus-config``'s configuration, TLS with client certificates with ``tls``."""
    nats_bin = shutil.which("nats-server", path=SEARCH_PATH)
    redis_bin = shutil.which("redis-server", path=SEARCH_PATH)
    if ServerProcess is None or nats_bin is None or redis_bin is None:
        missing = "tests/live/servers.py" if ServerProcess is None else "nats-server/redis-server"
        print(f"bench_live: skipped: {missing} not available (.ci/run installs the servers)")
        raise SystemExit(0)
    bus = None
    if auth or tls:
        bus = secured_bus(workdir / "bus", nats_bin, redis_bin, tls=tls)
        nats_proc, redis_proc = bus.nats, bus.redis
    else:
        nats_proc = nats_server(workdir / "nats", nats_bin)
        redis_proc = redis_server(workdir / "redis", redis_bin)
        (workdir / "redis").mkdir()
    nats_proc.start()
    try:
        redis_proc.start()
        try:
            assert nats_proc.proc is not None and redis_proc.proc is not None
            pids = {"nats-server": nats_proc.proc.pid, "redis-server": redis_proc.proc.pid}
            yield nats_proc.url, redis_proc.url + "/0", pids, bus
        finally:
            redis_proc.stop()
    finally:
        nats_proc.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_live")
    parser.add_argument("--latency-rate", type=float, default=1000.0, help="events/s")
    parser.add_argument("--seconds", type=float, default=8.0, help="latency run, s")
    parser.add_argument(
        "--rates",
        type=lambda text: [int(x) for x in text.split(",")],
        default=[1000, 2500, 5000, 10000, 20000],
        help="rate steps, events/s",
    )
    parser.add_argument("--step-seconds", type=float, default=4.0)
    parser.add_argument("--round-interval", type=float, default=0.1, help="bridge rounds, s")
    parser.add_argument(
        "--keep-logs", type=Path, default=None, metavar="DIR", help="copy the services' logs to DIR"
    )
    parser.add_argument(
        "--auth", action="store_true", help="servers and processes with the bus's credentials"
    )
    parser.add_argument("--tls", action="store_true", help="--auth, and TLS on NATS")
    args = parser.parse_args(argv)
    # asyncio warns at each TLS connection's end that nats-py's protocol "returns true
    # from eof_received()": harmless, and one line per connection.
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    console = Console(width=120)
    with (
        tempfile.TemporaryDirectory(prefix="bench_live") as tmp,
        servers(Path(tmp), auth=args.auth, tls=args.tls) as urls,
    ):
        nats_url, redis_url, pids, bus = urls
        env_of: EnvOf = no_auth if bus is None else bus.env
        args.controller_options = {}
        if bus is not None:
            # This process reads the streams (and resets the bus) as ops.
            os.environ.update(bus.env("ops", {}))
            args.controller_options = bus.credentials("controller").connect_options()
        logs = Path(tmp)
        round_interval = str(args.round_interval)
        counters = EventCounters(bridge_port=free_port(), core_port=free_port())
        with (
            service(
                logs,
                "core",
                "xce_driver.live.core_service",
                nats_url,
                "--redis",
                redis_url,
                "--metrics-port",
                str(counters.core_port),
                env=env_of("core"),
            ) as core,
            service(
                logs,
                "bridge",
                "xce_driver.live.bridge",
                nats_url,
                "--round-interval",
                round_interval,
                "--metrics-port",
                str(counters.bridge_port),
                env=env_of("bridge"),
            ) as bridge,
        ):
            pids |= {"core": core.pid, "bridge": bridge.pid}
            ctl, steps = asyncio.run(live(nats_url, args, CpuMeter(pids), counters))
            raw, raw_rate = asyncio.run(raw_baseline(nats_url, args.latency_rate, 3.0))
        core_alone, bridge_alone = alone(nats_url, redis_url, logs, env_of)
        if args.keep_logs is not None:
            args.keep_logs.mkdir(parents=True, exist_ok=True)
            for log in logs.glob("*.log"):
                shutil.copy(log, args.keep_logs)
    lag, dispatch, first = ctl.decision_lag_ms, ctl.dispatch_ms, ctl.session_lag_ms
    table = Table(title="bench_live: the live stack on this machine", show_header=False)
    table.add_column("figure", style="bold")
    table.add_column("value", justify="right")
    p50, p99 = percentile(lag, 50), percentile(lag, 99)
    raw50, raw99 = percentile(raw, 50), percentile(raw, 99)
    security = "nkey users, permissions, Redis ACL" if args.auth or args.tls else "none"
    if args.tls:
        security += ", TLS with client certificates"
    rows = [
        ("machine", f"{os.cpu_count()} CPUs; servers, core, bridge, controller all on it"),
        ("bus authentication", security),
        ("controller rate (latency run)", f"{args.latency_rate:,.0f} events/s"),
        ("decisions timed", f"{len(lag):,}"),
        ("round → decision at controller p50 / p99", f"{p50:.1f} / {p99:.1f} ms"),
        (
            "round → its first decision (NEW_SESSION) p50 / p99",
            f"{percentile(first, 50):.1f} / {percentile(first, 99):.1f} ms",
        ),
        (
            "submit → DISPATCH at controller p50 / p99",
            f"{percentile(dispatch, 50):.1f} / {percentile(dispatch, 99):.1f} ms "
            f"(rounds every {args.round_interval:g} s)",
        ),
        ("raw JetStream publish → consume p50 / p99", f"{raw50:.2f} / {raw99:.2f} ms"),
        ("live / raw p50", f"{p50 / raw50:,.1f}×"),
    ]
    for step in steps:
        lag_left = "not caught up in 30 s" if step.lag_s is None else f"{step.lag_s:.2f} s"
        rows.append(
            (
                f"step {step.target:,} events/s",
                f"sent {step.sent_rate:,.0f}/s, bridge stored {step.stored_rate:,.0f}/s, "
                f"core handled {step.handled_rate:,.0f}/s, "
                f"lag left {lag_left}" + (" ✓" if step.sustained else ""),
            )
        )
        rows.append(
            (
                "  CPU cores used",
                ", ".join(f"{name} {cores:.2f}" for name, cores in step.cores.items())
                + f" (total {sum(step.cores.values()):.2f})",
            )
        )
    best = max((s.target for s in steps if s.sustained), default=0)
    rows.append(("highest sustained rate (bounded lag)", f"{best:,} events/s (target ≥ 10,000)"))
    rows.append(
        (
            "each service alone (backlog of 30,000)",
            f"core service {core_alone:,.0f} events/s, bridge {bridge_alone:,.0f} events/s",
        )
    )
    rows.append(("raw JetStream pipelined throughput", f"{raw_rate:,.0f} messages/s"))
    rows.append(("live sustained / raw throughput", f"{best / raw_rate:.2f}"))
    if lag:
        rows.append(("mean round → decision", f"{statistics.fmean(lag):.1f} ms"))
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
