"""xce-sched explain: why a job pends at a time of a recording, in plain words."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from xce_core.pending import make_pending_reason, render
from xce_driver.cli import main
from xce_driver.recording import RecordingWriter
from xce_driver.replay import explain_job
from xce_driver.simulate import run_simulation
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.mapping import MappedWorkload, SimJob, map_trace
from xce_schemas import HostReason, PendingCode, QueueSpec, ResourceReason


def test_render_counts_hosts_per_code_in_plain_words() -> None:
    reason = make_pending_reason(
        PendingCode.NOT_ENOUGH_SLOTS,
        [
            HostReason(host="h1", code=PendingCode.HOST_NOT_ENOUGH_SLOTS),
            HostReason(host="h2", code=PendingCode.HOST_CLOSED),
            HostReason(host="h3", code=PendingCode.HOST_NOT_ENOUGH_SLOTS),
        ],
        [ResourceReason(resource="lic", code=PendingCode.RESOURCE_SHORT)],
    )
    assert render(reason) == (
        "Not enough job slots in the cluster; Not enough job slots: 2 hosts; "
        "Closed by the administrator: 1 host; Not enough of this resource is free: lic"
    )
    bad = make_pending_reason(
        PendingCode.BAD_RESREQ, detail="bad resource requirement at position 3"
    )
    assert render(bad) == "Bad resource requirement (bad resource requirement at position 3)"


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    with RecordingWriter(path) as writer:
        run_simulation(
            map_trace(generate_lublin(n_jobs=300, nodes=16, seed=2)), source="t", recording=writer
        )
    return path


def first(path: Path, op: str) -> tuple[int, int, dict]:
    for raw in path.read_bytes().splitlines():
        line = orjson.loads(raw)
        if line["type"] == "DECISION" and line["payload"]["op"] == op:
            return line["payload"]["jobid"], line["ts"], line["payload"]
    raise AssertionError(f"no {op} in the recording")


def test_a_pending_job_is_explained_with_host_counts(recording: Path) -> None:
    jobid, ts, payload = first(recording, "PEND")
    text = explain_job(recording, jobid, ts)
    assert text.startswith(f"job {jobid} at ts={ts} ")
    assert ": pending: Not enough job slots in the cluster; Not enough job slots: " in text
    assert payload["reason"]["main"] == "NOT_ENOUGH_SLOTS"


def test_a_running_job_and_a_job_not_yet_submitted(recording: Path) -> None:
    jobid, ts, payload = first(recording, "DISPATCH")
    hosts = " ".join(h["host"] for h in payload["alloc"]["hosts"])
    assert explain_job(recording, jobid, ts).endswith(f": running on {hosts}")
    if ts > 0:
        assert ": not submitted yet (it is submitted at " in explain_job(recording, jobid, ts - 1)


def test_an_ended_job_a_time_in_seconds_and_a_job_never_seen(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobid, ts, _ = first(recording, "DISPATCH")
    assert explain_job(recording, jobid).split(": ", 1)[1].startswith("finished at ts=")
    snapshot_ts = next(
        orjson.loads(raw)["ts"]
        for raw in recording.read_bytes().splitlines()
        if orjson.loads(raw)["type"] == "SNAPSHOT"
    )
    offset_s = (ts - snapshot_ts) // 10**9
    assert explain_job(recording, jobid, at_offset_s=offset_s) == explain_job(
        recording, jobid, snapshot_ts + offset_s * 10**9
    )
    argv = ["explain", str(jobid), "--recording", str(recording), "--at-s", str(offset_s)]
    assert main(argv) == 0
    assert f"job {jobid} at " in capsys.readouterr().out
    assert main(["explain", "999999", "--recording", str(recording)]) == 2
    err = capsys.readouterr().err
    assert err == f"xce-sched: error: {recording}: job 999999 never appears in the recording\n"


def test_cli_explain(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobid, ts, _ = first(recording, "PEND")
    assert main(["explain", str(jobid), "--recording", str(recording), "--at", str(ts)]) == 0
    assert "pending: Not enough job slots" in capsys.readouterr().out
    assert main(["explain", "7", "--recording", str(recording.parent / "nosuch.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("nosuch.jsonl") == 1 and err.startswith("xce-sched: error: ")
    with pytest.raises(SystemExit) as exit_status:
        main(["explain", "x", "--recording", str(recording)])
    assert exit_status.value.code == 2
    assert (
        capsys.readouterr().err == "xce-sched: error: argument JOBID: 'x' is not a whole number\n"
    )


def test_a_preemptor_and_its_victim_are_explained(tmp_path: Path) -> None:
    urgent = QueueSpec(name="urgent", priority=100, preemptible_queues=("normal",))
    normal = QueueSpec(name="normal", priority=30, preemptible=True)
    jobs = (SimJob(1, 0, 100, 1, "normal", "u1"), SimJob(2, 30, 50, 1, "urgent", "u1"))
    mapped = MappedWorkload(jobs, {}, 1, 1, 0, {"urgent": 100, "normal": 30})
    path = tmp_path / "preempt.jsonl"
    with RecordingWriter(path) as writer:
        run_simulation(mapped, source="t", recording=writer, queues=(urgent, normal))
    preempts = [
        line
        for line in map(orjson.loads, path.read_bytes().splitlines())
        if line["type"] == "DECISION" and line["payload"]["op"] == "PREEMPT"
    ]
    assert [p["payload"]["victim_jobids"] for p in preempts] == [[1]]
    ts = preempts[0]["ts"]
    # At that instant the emulator suspends job 1 and a further round starts job 2.
    assert explain_job(path, 1, ts).endswith(
        ": suspended by a preemption; it resumes on h001 once they have room and no "
        "higher-priority job waits for it (now: the hosts it held have no room for it yet)"
    )
    assert explain_job(path, 2, ts).endswith(": running on h001")
    assert explain_job(path, 1, ts + 50 * 10**9).endswith(": running on h001")  # resumed
