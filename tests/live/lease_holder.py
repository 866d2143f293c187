"""A lease contender as its own process, for crash tests (SIGKILL it while it leads).

    python -m tests.live.lease_holder NATS_URL TTL_S HOLDER_ID

It takes the lease (``xce_kit.lease``, default bucket), prints ``term N`` once it
leads, then ``deadline T`` each time a renewal moves its deadline (``T``: its
``time.monotonic()``, the same clock in every process of this machine), until killed.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from xce_kit.connection import connect_nats
from xce_kit.lease import Lease


async def hold(nats_url: str, ttl_s: float, holder_id: str) -> None:
    """Lead and report each new deadline on stdout, until killed."""
    nc = await connect_nats(nats_url, holder_id, logging.getLogger(holder_id))
    lease = Lease(nc.jetstream(), holder_id, ttl_s)
    print(f"term {await lease.acquire()}", flush=True)
    reported = None
    while lease.leading:
        if lease.deadline != reported:
            reported = lease.deadline
            print(f"deadline {reported!r}", flush=True)
        await asyncio.sleep(0.005)
    print(f"lost {lease.lost_reason}", flush=True)


if __name__ == "__main__":
    asyncio.run(hold(sys.argv[1], float(sys.argv[2]), sys.argv[3]))
