"""The bridge's first tier: its handler and forward path over the in-memory bus
(``xce_kit.memory_bus``), no nats-server. Controller messages in become stamped core
events on ``XCE_EVENTS`` (a malformed one a dead letter, the rest going on), and the
core's decisions go back to ``XCE_CTL_DECISIONS`` (another publisher's do not).
What only a real server shows (restarts, redeliveries) stays in ``test_bridge.py``."""

from __future__ import annotations

import asyncio
import logging

from nats.js import JetStreamContext
from xce_driver.live.bridge import Bridge, BridgeOptions
from xce_kit.memory_bus import MemoryBus
from xce_schemas import DeadLetter
from xce_schemas.bus import DEADLETTER_STREAM, MSG_ID_HEADER
from xce_schemas.controller import CTL_DECISIONS_STREAM, DECISION_ID_HEADER

from tests.live.helpers import read_events, read_stream, run, wait_until

NS = 1_000_000_000


async def count(js: JetStreamContext, stream: str) -> int:
    return (await js.stream_info(stream)).state.messages


def test_controller_messages_in_and_decisions_back() -> None:
    async def go() -> None:
        bus = MemoryBus()
        nc = await bus.connect("memory://", "test", logging.getLogger(__name__))
        js = nc.jetstream()
        clock = iter(range(10 * NS, 1000 * NS, NS))
        bridge = Bridge(
            BridgeOptions(nats_url="memory://", round_interval_s=3600, fetch_timeout_s=0.02),
            clock=lambda: next(clock),
            connect=bus.connect,
        )
        task = asyncio.create_task(bridge.run())
        await asyncio.wait_for(bridge.ready.wait(), 5)
        await js.publish("xce.ctl.config", b'{"config": {"queues": [{"name": "q"}]}}')
        await js.publish("xce.ctl.jobs", b'{"jobs": [{"jobid": "one"}]}')
        await js.publish("xce.ctl.hosts", b'{"hosts": [{"name": "h1", "slots": 2}]}')

        async def events_in() -> bool:
            return len(await read_events(js)) == 2 and await count(js, DEADLETTER_STREAM) == 1

        await wait_until(events_in, "two events and a dead letter", timeout_s=5)
        events = await read_events(js)
        assert [e.subject for e in events] == ["xce.events.CONFIG_PUSH", "xce.events.WORKERS_PUSH"]
        assert [e.msg_id for e in events] == [
            f"xce-bridge:ctl:{bridge.progress.epoch}:1",
            f"xce-bridge:ctl:{bridge.progress.epoch}:3",
        ]
        [letter] = await read_stream(js, DEADLETTER_STREAM)
        dead = DeadLetter.model_validate_json(letter.data)
        assert dead.subject == "xce.ctl.jobs" and dead.seq == 2 and "jobid" in dead.reason

        decision = b'{"op":"DISPATCH","jobid":1,"alloc":[]}'
        await js.publish(
            "xce.decisions.DISPATCH", decision, headers={MSG_ID_HEADER: "xce-core:3:0"}
        )
        await js.publish("xce.decisions.DISPATCH", decision)  # another publisher's

        async def forwarded() -> bool:
            foreign = bridge.metrics.registry.get_sample_value("xce_bridge_foreign_decisions_total")
            return foreign == 1 and bridge.forwarded == 1

        await wait_until(forwarded, "the core's decision forwarded", timeout_s=5)
        [out] = await read_stream(js, CTL_DECISIONS_STREAM)
        got = await js.get_msg(CTL_DECISIONS_STREAM, seq=out.seq)
        assert (out.subject, out.data, out.msg_id) == (
            "xce.ctl.decisions.DISPATCH",
            decision,
            "xce-core:3:0",
        )
        assert (got.headers or {})[DECISION_ID_HEADER] == "xce-core:3:0"
        assert bridge.controller_done == 3
        bridge.stop()
        await task
        info = await js.consumer_info("XCE_CONTROLLER", bridge.options.ctl_durable)
        assert info.ack_floor.stream_seq == 3  # every controller message acknowledged

    run(go())
