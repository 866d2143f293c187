"""Ending asyncio tasks for sure.

On Python 3.11, ``asyncio.wait_for`` loses a cancellation that arrives in the same
loop tick as the result it waits for (python/cpython#86296; the 3.12 rewrite fixed
it). nats-py waits with ``wait_for`` under every ``fetch`` and ``next_msg``, so a
task reading a stream can take a message instead of its cancellation and read on;
``task.cancel()`` followed by ``gather`` then waits forever. ``cancel_and_wait``
cancels again until the task has ended.
"""

from __future__ import annotations

import asyncio
from typing import Any

#: How long to wait for a cancelled task before cancelling it again, s.
RECANCEL_S = 0.05


async def cancel_and_wait(*tasks: asyncio.Future[Any]) -> None:
    """Cancel ``tasks`` and return once every one has ended, cancelling again any
    still running after ``RECANCEL_S``. Their outcomes stay on the tasks (cancelled,
    or a result or an exception when they ended first); nothing is raised here."""
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _done, pending = await asyncio.wait(pending, timeout=RECANCEL_S)
