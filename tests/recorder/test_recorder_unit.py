"""The recorder without servers: its lines are those of ``xce-sched simulate
--record`` byte for byte, its options and command line refuse bad values in one line."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from xce_core.core import SchedCore
from xce_driver.recording import Recorder, RecordingWriter
from xce_recorder import service
from xce_recorder.service import RecorderOptions, RecorderService, _push
from xce_recorder.sink import LineBuffer
from xce_schemas import Decision
from xce_schemas.admin import RecorderCommand

from tests.live.helpers import scenario
from tests.live.servers import free_port


def record(writer: RecordingWriter, interval: int) -> None:
    out: list[Decision] = []
    core = SchedCore(on_decision=out.append, prng_seed=0)
    recorder = Recorder(writer, interval)
    recorder.start(core)
    for seq, event in enumerate(scenario(rounds=5), start=1):
        if isinstance(writer, LineBuffer):
            writer.seq = seq
        out.clear()
        recorder.event(event)
        core.push_event(event)
        for decision in out:
            recorder.decision(decision)
        recorder.after_event(core)


def test_the_buffer_holds_the_lines_a_file_recording_holds(tmp_path: Path) -> None:
    path = tmp_path / "sim.jsonl"
    with RecordingWriter(path) as writer:
        record(writer, interval=4)
    buffer = LineBuffer()
    record(buffer, interval=4)
    file_lines = path.read_bytes().splitlines()
    lines = buffer.take()
    assert buffer.pending == [] and buffer.lines == len(file_lines)
    # HEADER carries the wall time: compare it without.
    assert [line for _, line in lines][1:] == file_lines[1:]
    assert lines[0][0] == 0 and lines[-1][0] == len(scenario(rounds=5))
    seqs = [seq for seq, _ in lines]
    assert seqs == sorted(seqs)


def test_an_event_the_core_service_rejects_is_not_pushed() -> None:
    out: list[Decision] = []
    core = SchedCore(on_decision=out.append, prng_seed=0)
    assert _push(core, out, "xce.events.JOBS_PUSH", b"not json") is None
    assert _push(core, out, "xce.events.NOPE", b"{}") is None
    unknown_queue = (
        b'{"type":"JOBS_PUSH","ts":0,"payload":{"jobs":[{"jobid":1,"queue":"x","submit_ts":0}]}}'
    )
    assert _push(core, out, "xce.events.JOBS_PUSH", unknown_queue) is None
    assert core.state.jobs == {}
    event = _push(core, out, "xce.events.BEGIN_ROUND", b'{"type":"BEGIN_ROUND","ts":5}')
    assert event is not None and event.type == "BEGIN_ROUND" and core.last_ts == 5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"snapshot_interval": -1}, "snapshot interval must be 0 or more, not -1"),
        ({"fetch_batch": 0}, "fetch_batch must be 1 or more, not 0"),
        ({"poll_s": 0}, "poll_s and start_timeout_s must be positive, stop_wait_s ≥ 0"),
        ({"stop_wait_s": -1}, "poll_s and start_timeout_s must be positive, stop_wait_s ≥ 0"),
        ({"prng_seed": -2}, "prng_seed must be 0 or more, not -2"),
    ],
    ids=["negative interval", "empty batch", "no poll", "negative stop wait", "negative seed"],
)
def test_bad_options(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RecorderOptions(**kwargs)  # type: ignore[arg-type]


def test_commands_need_no_server_to_be_refused() -> None:
    recorder = RecorderService(RecorderOptions())

    async def go() -> list[str | None]:
        stop = await recorder.handle(RecorderCommand(action="stop"))
        status = await recorder.handle(RecorderCommand(action="status"))
        bad = await recorder.handle(RecorderCommand(action="start", name="a/b"))
        return [stop.error, status.error, bad.error]

    assert asyncio.run(go()) == [
        "not recording",
        None,
        "recording name 'a/b' is a path; give a file name only (no '/' or '\\')",
    ]


def test_the_command_line_refuses_a_bad_interval(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        service.main(["--record-snapshot-interval", "-5"])
    assert stop.value.code == 2
    assert "snapshot interval must be 0 or more, not -5" in capsys.readouterr().err


def test_a_server_that_does_not_answer_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    port = free_port()
    code = service.main(
        [
            "--nats",
            f"nats://127.0.0.1:{port}",
            "--recordings-dir",
            str(tmp_path / "r"),
            "--connect-timeout",
            "0.5",
            "--log-level",
            "ERROR",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert (
        err == f"xce-recorder: error: NATS at nats://127.0.0.1:{port} did not answer within 0.5 s\n"
    )
