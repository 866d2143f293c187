"""``xce-sched emulate`` against a core that refuses its jobs, against real servers.

An interrupted run leaves its jobs in the core; a second run of the same workload
(the same job ids) has its submissions refused by the core (``job 1 already
exists`` on ``xce.deadletter.core``). The emulator tells such a refusal of its own
messages at once, with the core's reason and what to do, and exits 1, instead of
waiting out ``--timeout``; doing what it says makes the next run go through. The
refusal of another controller's message, even of a job id of the run, is not taken
for the run's.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from xce_driver.live.bridge import Bridge, BridgeOptions
from xce_driver.live.core_service import CoreService, CoreServiceOptions
from xce_driver.live.emulate import LiveEmulator, SubmissionRefused, _Sent
from xce_driver.workloads.mapping import SimJob
from xce_kit.reader import Delivered
from xce_schemas import DeadLetter, HostSpec, QueueSpec, SchedulerConfig
from xce_schemas.bus import (
    CORE_CHECKPOINT_KEY,
    DEADLETTER_STREAM,
    DECISIONS_STREAM,
    EVENTS_STREAM,
    MSG_ID_HEADER,
)
from xce_schemas.controller import CTL_DECISIONS_STREAM, CTL_STREAM, ctl_msg_id, ctl_subject

from tests.live.helpers import connected, events_last_seq, read_stream, run, wait_until

pytestmark = [pytest.mark.nats, pytest.mark.redis]

#: The line a second run of the same workload ends with (stderr's last line).
REFUSED = (
    "xce-sched: error: job 1 was refused by the core: job 1 already exists (the core "
    "still has the jobs of an earlier run: stop xce-bridge and xce-core-service, delete "
    "the streams XCE_EVENTS, XCE_DECISIONS and XCE_CTL_DECISIONS and the Redis keys "
    "xce:core:snapshot and xce:core:recording, then start them again)"
)
#: The second run's --timeout, s: it must end well before.
TIMEOUT_S = 30


def trace(path: Path, jobs: int = 8) -> Path:
    """An SWF trace of ``jobs`` one-processor jobs, one every 10 s from 0, each running
    50-150 s, on a machine of 4 processors (jobs numbered from 1)."""
    lines = ["; MaxProcs: 4", "; UnixStartTime: 0"]
    for number in range(1, jobs + 1):
        run_s = 50 + (number * 37) % 101
        fields = [number, (number - 1) * 10, -1, run_s, 1, -1, -1, 1, run_s, -1]
        lines.append(" ".join(map(str, [*fields, 1, 1, 1, 1, 1, 1, -1, -1])))
    path.write_text("\n".join(lines) + "\n")
    return path


def emulate_argv(nats_url: str, workload: Path, speed: float, timeout_s: float) -> list[str]:
    return [
        *(sys.executable, "-m", "xce_driver.cli", "emulate", "--workload", str(workload)),
        *("--nats", nats_url, "--hosts", "4", "--quiet"),
        *("--speed", str(speed), "--timeout", str(timeout_s)),
    ]


class Services:
    """An in-process core service (a checkpoint after every event) and bridge."""

    def __init__(self, nats_url: str, redis_url: str) -> None:
        self.core = CoreService(
            CoreServiceOptions(nats_url=nats_url, redis_url=redis_url, snapshot_every=1)
        )
        self.bridge = Bridge(BridgeOptions(nats_url=nats_url, round_interval_s=0.05))
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self) -> Services:
        self.tasks = [asyncio.create_task(self.core.run()), asyncio.create_task(self.bridge.run())]

        async def ready() -> bool:
            for task in self.tasks:
                if task.done():
                    task.result()
            return self.bridge.ready.is_set()

        await wait_until(ready, "the bridge to listen")
        return self

    async def stop(self) -> None:
        """Stop the bridge, then the core once it has handled every event."""
        self.bridge.stop()
        await self.tasks[1]
        last = await events_last_seq(self.core.options.nats_url)

        async def caught_up() -> bool:
            return self.core.seq >= last

        await wait_until(caught_up, "the core to handle every event")
        self.core.stop()
        await self.tasks[0]


async def emulate(argv: list[str]) -> tuple[int, str, float]:
    """Run ``argv`` to its end: exit status, stderr, wall seconds."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(proc.communicate(), TIMEOUT_S + 60)
    assert proc.returncode is not None
    return proc.returncode, err.decode(), time.monotonic() - started


def test_a_second_run_of_the_same_jobs_is_refused_at_once_and_the_hint_works(
    bus: tuple[str, str], tmp_path: Path
) -> None:
    nats_url, redis_url = bus
    workload = trace(tmp_path / "eight.swf")

    async def go() -> tuple[int, str, tuple[int, str, float], int, str]:
        services = await Services(nats_url, redis_url).start()
        # 1. A run interrupted (Ctrl-C) once the core has its first job.
        first = await asyncio.create_subprocess_exec(
            *emulate_argv(nats_url, workload, speed=1, timeout_s=TIMEOUT_S),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )

        async def has_job_1() -> bool:
            assert first.returncode is None, "the first run ended early"
            return 1 in services.core.core.state.jobs

        await wait_until(has_job_1, "the core to have job 1")
        first.send_signal(signal.SIGINT)
        _, first_err = await asyncio.wait_for(first.communicate(), 30)
        assert first.returncode is not None
        # 2. The same workload again, on the same core.
        second = await emulate(emulate_argv(nats_url, workload, speed=1000, timeout_s=TIMEOUT_S))
        # 3. As the hint says: stop both, delete the three streams and the checkpoint,
        # start them again; the same workload then runs to its end.
        await services.stop()
        async with connected(nats_url) as js:
            for stream in (EVENTS_STREAM, DECISIONS_STREAM, CTL_DECISIONS_STREAM):
                await js.delete_stream(stream)
        client = aioredis.Redis.from_url(redis_url)
        assert await client.delete(CORE_CHECKPOINT_KEY) == 1  # the hint names a real key
        await client.aclose()
        services = await Services(nats_url, redis_url).start()
        third_code, third_err, _ = await emulate(
            emulate_argv(nats_url, workload, speed=1000, timeout_s=TIMEOUT_S)
        )
        await services.stop()
        return first.returncode, first_err.decode(), second, third_code, third_err

    first_code, first_err, second, third_code, third_err = run(go())
    assert first_code == 130, first_err
    code, err, wall_s = second
    assert code == 1, err
    assert err.rstrip().splitlines()[-1] == REFUSED, err
    assert "Traceback" not in err
    assert wall_s < TIMEOUT_S / 3, f"the refusal took {wall_s:.1f} s to tell"
    assert third_code == 0, third_err


def test_another_controllers_refused_message_is_not_the_runs(
    bus: tuple[str, str], tmp_path: Path
) -> None:
    """While the emulator runs, another controller submits job 1 (a job of the run,
    already in the core): the core refuses that message, and the run goes on to its
    end, every job finished."""
    nats_url, redis_url = bus
    workload = trace(tmp_path / "eight.swf")
    argv = emulate_argv(nats_url, workload, speed=50, timeout_s=TIMEOUT_S)
    argv.remove("--quiet")

    async def go() -> tuple[int, str, str, list[DeadLetter]]:
        services = await Services(nats_url, redis_url).start()
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )

        async def has_job_1() -> bool:
            assert proc.returncode is None, "the run ended early"
            return 1 in services.core.core.state.jobs

        await wait_until(has_job_1, "the core to have job 1")
        async with connected(nats_url) as js:
            await js.publish(
                ctl_subject("jobs"),
                b'{"jobs": [{"jobid": 1, "queue": "normal", "user": "other"}]}',
                stream=CTL_STREAM,
                headers={MSG_ID_HEADER: ctl_msg_id("other", "run", 1)},
            )
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT_S + 30)
        await services.stop()
        async with connected(nats_url) as js:
            letters = [
                DeadLetter.model_validate_json(s.data)
                for s in await read_stream(js, DEADLETTER_STREAM)
            ]
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode(), letters

    code, out, err, letters = run(go())
    assert [letter.reason for letter in letters] == [
        "event 0 of the batch: JOBS_PUSH rejected: payload.jobs[0].jobid: job 1 already exists"
    ]
    assert code == 0, out + err
    assert "8 total, 8 finished" in out, out


def _emulator() -> LiveEmulator:
    jobs = [
        SimJob(jobid=jobid, submit_s=0, run_s=10, tasks=1, queue="normal", user="u")
        for jobid in (5, 6)
    ]
    config = SchedulerConfig(queues=(QueueSpec(name="normal"),))
    hosts = (HostSpec(name="h1", slots=2),)
    return LiveEmulator(jobs, hosts, config, nats_url="nats://unused", speed=100)


@pytest.mark.parametrize(
    ("msg_id", "refused"),
    [
        ("xce-bridge:ctl:123:7", True),
        ("xce-bridge:ctl:999:7", False),
        ("xce-bridge:ctl:123:8", False),
    ],
    ids=["this run's message", "another stream's", "another controller's"],
)
def test_a_bridge_dead_letter_of_the_runs_jobs_message_names_the_job(
    msg_id: str, refused: bool
) -> None:
    """The bridge's dead letter carries the id of the controller message (epoch 123,
    sequence 7 is the run's jobs message of jobs 5 and 6); the reason names the job
    by its index in the message."""
    emulator = _emulator()
    emulator._ctl_epoch = "123"
    emulator._sent[7] = _Sent("jobs", (5, 6))
    letter = DeadLetter(
        subject="xce.ctl.jobs",
        reason="jobs rejected: jobs[1].tasks: Input should be greater than 0",
        data="{}",
        seq=7,
    )
    item = Delivered(
        3, "xce.deadletter.bridge", letter.model_dump_json().encode(), {MSG_ID_HEADER: msg_id}, None
    )

    async def go() -> SubmissionRefused | None:
        try:
            await emulator._on_dead_letter(None, item)  # type: ignore[arg-type]
        except SubmissionRefused as exc:
            return exc
        return None

    error = run(go())
    if not refused:
        assert error is None
        return
    assert error is not None
    assert (error.jobid, error.jobids, error.source) == (6, (5, 6), "bridge")
    assert str(error) == "job 6 was refused by the bridge: Input should be greater than 0"


def test_a_timed_out_run_says_whether_the_services_answered(
    bus: tuple[str, str], tmp_path: Path
) -> None:
    """At ``--timeout`` the last line tells apart services that never answered from a
    run whose jobs are still running in the core (and how to empty it)."""
    nats_url, redis_url = bus
    workload = trace(tmp_path / "eight.swf")  # jobs of 50-150 s: none ends in 3 s

    async def go() -> tuple[tuple[int, str, float], tuple[int, str, float]]:
        services = await Services(nats_url, redis_url).start()
        answered = await emulate(emulate_argv(nats_url, workload, speed=1, timeout_s=3))
        await services.stop()
        # No service on the bus now: nothing answers.
        silent = await emulate(emulate_argv(nats_url, workload, speed=1, timeout_s=2))
        return silent, answered

    (silent_code, silent_err, _), (code, err, _) = run(go())
    assert silent_code == 1
    assert silent_err.rstrip().splitlines()[-1] == (
        "xce-sched: error: --timeout 2 s passed with 8 of 8 jobs neither finished nor "
        "rejected (no decision came: are xce-bridge and xce-core-service running?)"
    )
    assert code == 1
    assert err.rstrip().splitlines()[-1] == (
        "xce-sched: error: --timeout 3 s passed with 8 of 8 jobs neither finished nor "
        "rejected (the services answered, and this run's jobs stay in the core: to run "
        "them again, stop xce-bridge and xce-core-service, delete the streams XCE_EVENTS, "
        "XCE_DECISIONS and XCE_CTL_DECISIONS and the Redis keys xce:core:snapshot and "
        "xce:core:recording, then start them again)"
    )
