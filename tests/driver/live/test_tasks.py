"""``cancel_and_wait`` ends a task even when a cancellation is lost on the way
(python/cpython#86296: ``asyncio.wait_for`` on 3.11 can take a result instead of a
cancellation; nats-py waits with it under every fetch)."""

from __future__ import annotations

import asyncio

from xce_kit.tasks import cancel_and_wait


def test_a_task_that_loses_its_first_cancellations_is_ended_all_the_same() -> None:
    lost = 0

    async def reader() -> None:
        nonlocal lost
        while True:
            try:
                await asyncio.sleep(1)
            except asyncio.CancelledError:
                if lost < 3:  # as a swallowed cancellation: the loop reads on
                    lost += 1
                    continue
                raise

    async def main() -> asyncio.Task[None]:
        task = asyncio.create_task(reader())
        await asyncio.sleep(0)
        await asyncio.wait_for(cancel_and_wait(task), 5)
        return task

    task = asyncio.run(main())
    assert lost == 3
    assert task.cancelled()


def test_outcomes_of_tasks_that_ended_first_are_kept() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    async def main() -> tuple[asyncio.Task[int], asyncio.Task[None]]:
        done = asyncio.create_task(asyncio.sleep(0, result=7))
        failed = asyncio.create_task(fails())
        await asyncio.sleep(0.01)
        await cancel_and_wait(done, failed)
        return done, failed

    done, failed = asyncio.run(main())
    assert done.result() == 7
    assert isinstance(failed.exception(), ValueError)
