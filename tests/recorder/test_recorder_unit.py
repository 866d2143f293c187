"""The recording path without servers: the core service's record lines are those of
``xce-sched simulate --record`` byte for byte, numbered so that a restart publishes
none twice; the recorder's export writes them as they are, reproducibly; its
options refuse bad values in one line (its command line: ``test_recorder_cli.py``)."""

from __future__ import annotations

import asyncio
import gzip
import math
from pathlib import Path
from typing import Any

import pytest
from xce_core.core import SchedCore
from xce_driver.live.record_stream import RecordStream
from xce_driver.recording import Recorder, RecordingWriter
from xce_recorder.config import RecorderOptions
from xce_recorder.core_link import recording_id
from xce_recorder.cursor import RecordLine, decode_record_message
from xce_recorder.metrics import RecorderMetrics
from xce_recorder.service import RecorderService
from xce_recorder.session import Session
from xce_recorder.sink import export_stream
from xce_schemas import Decision
from xce_schemas.admin import RecorderCommand
from xce_schemas.bus import CoreRecording

from tests.live.helpers import scenario

Sent = tuple[str, bytes, str, dict[str, str]]


def simulate_lines(path: Path, interval: int) -> list[bytes]:
    """The lines ``simulate --record`` writes for the scenario (the driver's Recorder)."""
    out: list[Decision] = []
    core = SchedCore(on_decision=out.append, prng_seed=0)
    with RecordingWriter(path) as writer:
        recorder = Recorder(writer, interval)
        recorder.start(core)
        for event in scenario(rounds=5):
            out.clear()
            recorder.event(event)
            core.push_event(event)
            for decision in out:
                recorder.decision(decision)
            recorder.after_event(core)
        recorder.finish(core)
    return path.read_bytes().splitlines()


async def record_live(
    stream: RecordStream, interval: int, upto: int | None = None
) -> tuple[SchedCore, list[Decision]]:
    """Feed the scenario through a core and ``stream`` as the core service does."""
    out: list[Decision] = []
    core = SchedCore(on_decision=out.append, prng_seed=0)
    recording = CoreRecording(id="t-1", snapshot_interval=interval, start_seq=0)
    await stream.start(core, 0, recording)
    events = scenario(rounds=5)
    for seq, event in enumerate(events[:upto], start=1):
        out.clear()
        core.push_event(event)
        await stream.event(core, seq, event, out)
    if upto is None:
        await stream.end(core, len(events))
    return core, out


def collector() -> tuple[list[Sent], RecordStream]:
    sent: list[Sent] = []

    async def publish(subject: str, payload: bytes, msg_id: str, headers: dict[str, str]) -> None:
        sent.append((subject, payload, msg_id, headers))

    return sent, RecordStream(publish)


def test_the_record_stream_holds_the_lines_of_a_file_recording(tmp_path: Path) -> None:
    file_lines = simulate_lines(tmp_path / "sim.jsonl", interval=4)
    sent, stream = collector()
    asyncio.run(record_live(stream, interval=4))
    payloads = [payload for _, payload, _, _ in sent]
    # HEADER carries the wall time (here the core's time, the epoch), and says the
    # rounds are the controller's events (a what-if pushes them).
    assert payloads[0].endswith(
        b'"start_ts":0,"start_wall":"1970-01-01T00:00:00Z","rounds":"controller"}'
    )
    assert payloads[1:] == file_lines[1:]  # the END message carries the END line
    assert {subject for subject, _, _, _ in sent} == {"xce.record.t-1"}
    assert [msg_id for _, _, msg_id, _ in sent] == [f"xce-rec:t-1:{n}" for n in range(len(sent))]
    kinds = [headers["Xce-Record-Type"] for _, _, _, headers in sent]
    assert kinds[:2] == ["HEADER", "SNAPSHOT"] and kinds[-1] == "END"
    # The last line of each group (start pair, event with its decisions and snapshot).
    last = [n for n, (_, _, _, headers) in enumerate(sent) if headers.get("Xce-Record-Last")]
    groups = 1 + len(scenario(rounds=5)) + 1
    assert len(last) == groups and last[0] == 1 and last[-1] == len(sent) - 1
    seqs = [int(headers["Xce-Record-Seq"]) for _, _, _, headers in sent]
    assert seqs == sorted(seqs) and seqs[0] == 0 and seqs[-1] == len(scenario(rounds=5))


def test_a_restart_publishes_nothing_twice_and_goes_on_numbering() -> None:
    """A stream restored from a checkpoint taken after event 7, with the watermark of
    the 4 messages a crashed core published after it, publishes exactly the rest."""
    whole, stream = collector()
    asyncio.run(record_live(stream, interval=3))
    _, before = collector()
    asyncio.run(record_live(before, interval=3, upto=7))
    checkpoint = before.state()
    assert checkpoint is not None and checkpoint.end_seq is None
    crashed_at = checkpoint.messages + 4  # the last message out before the crash
    assert crashed_at < len(whole) - 1

    async def restart() -> list[Sent]:
        sent, after = collector()
        after.restore(checkpoint)
        after.watermark = ("t-1", crashed_at)
        out: list[Decision] = []
        core = SchedCore(on_decision=out.append, prng_seed=0)
        events = scenario(rounds=5)
        for event in events[:7]:
            core.push_event(event)
        for seq, event in enumerate(events[7:], start=8):
            out.clear()
            core.push_event(event)
            await after.event(core, seq, event, out)
        await after.end(core, len(events))
        return sent

    assert whole[: crashed_at + 1] + asyncio.run(restart()) == whole


def test_recording_ids_are_subject_tokens() -> None:
    assert recording_id("night.jsonl.gz", "ab12") == "night_jsonl_gz-ab12"
    first, second = recording_id("x.jsonl"), recording_id("x.jsonl")
    assert first != second and first.startswith("x_jsonl-")


class FakeRedis:
    """The one Redis call ``export_stream`` makes, over a list of lines."""

    def __init__(self, lines: list[bytes]) -> None:
        self.entries = [(f"{n + 1}-0".encode(), {b"line": line}) for n, line in enumerate(lines)]

    async def xrange(self, key: str, min: str, max: str, count: int) -> list[Any]:
        start = (
            0
            if min == "-"
            else next(i for i, (e, _) in enumerate(self.entries) if e == min.encode())
        )
        return self.entries[start : start + count]


def test_an_export_writes_the_lines_as_they_are_and_gzip_reproducibly(tmp_path: Path) -> None:
    lines = [b'{"type":"HEADER"}', b'{"type":"BEGIN_ROUND","ts":1}'] * 3000
    plain, one, two = tmp_path / "a.jsonl", tmp_path / "b" / "x.jsonl.gz", tmp_path / "x.jsonl.gz"
    one.parent.mkdir()
    client: Any = FakeRedis(lines)
    assert asyncio.run(export_stream(client, "k", plain)) == len(lines)
    assert plain.read_bytes() == b"".join(line + b"\n" for line in lines)
    asyncio.run(export_stream(client, "k", one))
    asyncio.run(export_stream(client, "k", two))
    assert one.read_bytes() == two.read_bytes()
    assert gzip.decompress(one.read_bytes()) == plain.read_bytes()
    assert not list(tmp_path.glob(".part.*"))
    with pytest.raises(FileExistsError):
        asyncio.run(export_stream(client, "k", plain))


def test_a_record_message_of_another_recording_is_not_taken() -> None:
    class Msg:
        def __init__(self, headers: dict[str, str]) -> None:
            self.headers = headers
            self.data = b""

    end = Msg(
        {
            "Nats-Msg-Id": "xce-rec:a-1:4",
            "Xce-Record-Seq": "17",
            "Xce-Record-Type": "END",
            "Xce-Record-Last": "1",
        }
    )
    line = decode_record_message("a-1", end)  # type: ignore[arg-type]
    assert line is not None and (line.number, line.seq, line.type, line.last) == (
        4,
        17,
        "END",
        True,
    )
    assert decode_record_message("a-2", end) is None  # type: ignore[arg-type]
    assert decode_record_message("a-1", Msg({})) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"snapshot_interval": -1}, "snapshot_interval must be 0 or more, not -1"),
        ({"fetch_batch": 0}, "fetch_batch must be 1 or more, not 0"),
        ({"poll_s": 0}, "poll_s must be positive and finite, not 0"),
        ({"start_timeout_s": math.inf}, "start_timeout_s must be positive and finite, not inf"),
        ({"stop_wait_s": -1}, "stop_wait_s must be 0 or more and finite, not -1"),
        ({"stop_wait_s": math.nan}, "stop_wait_s must be 0 or more and finite, not nan"),
        ({"connect_timeout_s": 0}, "connect_timeout_s must be positive and finite, not 0"),
    ],
    ids=[
        "negative interval",
        "empty batch",
        "no poll",
        "endless start",
        "negative stop wait",
        "nan stop wait",
        "no connect time",
    ],
)
def test_bad_options(kwargs: dict[str, float], message: str) -> None:
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


def test_a_session_stores_whole_events_only_and_counts_them_once_stored() -> None:
    def line(number: int, seq: int, type_: str, last: bool, data: bytes = b"x") -> RecordLine:
        return RecordLine(number=number, seq=seq, type=type_, last=last, data=data)

    session = Session("r.jsonl", "k", "r-1", 4, "2024-01-01T00:00:00Z", None, seq=4)  # type: ignore[arg-type]
    session.take([line(0, 4, "HEADER", False), line(1, 4, "SNAPSHOT", True)])
    session.take([line(2, 5, "JOB_SUBMIT", False), line(3, 5, "DECISION", False)])
    assert [x.number for x in session.ready] == [0, 1]  # event 5 not whole yet
    tally = session.tally()
    assert (tally.seq, tally.lines, tally.snapshots) == (4, 2, 1)
    assert (session.seq, session.lines) == (4, 0)  # nothing counted before the write
    metrics = RecorderMetrics()
    metrics.stored(session.stored(tally))
    assert (session.seq, session.lines, session.snapshots, session.ready) == (4, 2, 1, [])
    session.take([line(4, 5, "DECISION", True), line(5, 6, "BEGIN_ROUND", False)])
    session.take([line(6, 6, "END", True, b'{"type":"END"}')])
    # The END drops the unfinished event 6 and is stored last.
    assert [x.number for x in session.ready] == [2, 3, 4, 6] and session.ended
    metrics.stored(session.stored(session.tally()))
    assert (session.seq, session.lines, session.snapshots) == (6, 6, 1)
    counted = {
        name: metrics.registry.get_sample_value(name)
        for name in (
            "xce_recorder_lines_written_total",
            "xce_recorder_snapshots_total",
            "xce_recorder_events_total",
            "xce_recorder_decisions_total",
            "xce_recorder_event_seq",
        )
    }
    assert list(counted.values()) == [6, 1, 1, 2, 6]
