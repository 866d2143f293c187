"""Tests of the emulator's answers to preemption, resumption, run limits and closed
queues, and of the queue definitions of ``xce-sched simulate --queues``.

Most scenarios drive the emulator with a scripted core: a stand-in for ``SchedCore``
that, at each ``BEGIN_ROUND``, emits the decisions the test wrote for that round.
The emulator's contract is with decisions (``PREEMPT``, ``RESUME``, ``DISPATCH``),
so this tests it whatever the real core's preemption does. The scenarios named
``real_core`` (and the CLI ones) run the whole simulation with ``SchedCore``.

Hosts have one slot. A job's label gives its shape: ``J<jobid>.S<submit s>.R<run s>``
plus its queue; the trailing comment gives its role (``# victim``, ``# preemptor``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from xce_driver import emulator as emulator_module
from xce_driver.cli import main
from xce_driver.cluster.jobs import NS, JobRecord
from xce_driver.emulator import ClusterEmulator, SimulationLoopError
from xce_driver.report import CSV_COLUMNS, summarize, write_jobs_csv
from xce_driver.simulate import (
    QueueFileError,
    host_specs,
    read_queue_file,
    run_simulation,
    scheduler_config,
)
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.mapping import MappedWorkload, MappingError, SimJob, map_trace
from xce_schemas import (
    Alloc,
    BeginRound,
    CoreEvent,
    Decision,
    Dispatch,
    HostAlloc,
    JobAlloc,
    JobsPush,
    JobStateChange,
    NewSession,
    Preempt,
    QueueSpec,
    QueueStatus,
    Resume,
    SchedulerConfig,
)

URGENT = QueueSpec(name="urgent", priority=100, preemptible_queues=("normal",))
NORMAL = QueueSpec(name="normal", priority=30, preemptible=True)


def J(jobid: int, submit_s: int, run_s: int, queue: str = "normal") -> SimJob:
    """``J<jobid>.S<submit_s>.R<run_s>``, one task, in ``queue``."""
    return SimJob(jobid=jobid, submit_s=submit_s, run_s=run_s, tasks=1, queue=queue, user="u1")


# --- a scripted core --------------------------------------------------------------------

#: What a scripted round decides: ("DISPATCH", jobid, host), ("PREEMPT", preemptor,
#: victims), ("RESUME", jobid).
Step = tuple[object, ...]
#: The decisions of each round, by (time in s, number of the round at that time).
Script = dict[tuple[int, int], list[Step]]


class ScriptedCore:
    """Stands in for ``SchedCore``: records every event and, at each ``BEGIN_ROUND``,
    emits ``NEW_SESSION`` and then the decisions ``script`` gives for that round,
    keyed by (the round's time in s, its number among the rounds at that time)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.events: list[CoreEvent] = []
        self.on_decision: Callable[[Decision], None] = lambda decision: None
        self._rounds_at: dict[int, int] = {}
        self._instid = 0

    def push(self, event: CoreEvent) -> None:
        self.events.append(event)
        if not isinstance(event, BeginRound):
            return
        ts, second = event.ts, event.ts // NS
        nth = self._rounds_at.get(second, 0)
        self._rounds_at[second] = nth + 1
        self.on_decision(NewSession(ts=ts, session=sum(self._rounds_at.values())))
        for step in self.script.get((second, nth), []):
            self.on_decision(self._decision(ts, step))

    def _decision(self, ts: int, step: Step) -> Decision:
        op = step[0]
        if op == "DISPATCH":
            jobid, host = step[1], step[2]
            assert isinstance(jobid, int) and isinstance(host, str)
            self._instid += 1
            slots = Alloc(name="slots", value=1.0, from_=ts // NS, instid=self._instid)
            alloc = JobAlloc(jobid=jobid, hosts=(HostAlloc(host=host, allocs=(slots,)),))
            return Dispatch(ts=ts, jobid=jobid, alloc=alloc)
        if op == "PREEMPT":
            preemptor, victims = step[1], step[2]
            assert isinstance(preemptor, int) and isinstance(victims, tuple)
            return Preempt(ts=ts, preempting_jobid=preemptor, victim_jobids=victims)
        assert op == "RESUME" and isinstance(step[1], int)
        return Resume(ts=ts, jobid=step[1])


def scripted(
    jobs: list[SimJob],
    script: Script,
    *,
    queues: tuple[QueueSpec, ...] = (URGENT, NORMAL),
    hosts: int = 1,
    interval: int | None = None,
) -> tuple[ClusterEmulator, ScriptedCore]:
    core = ScriptedCore(script)
    emulator = ClusterEmulator(
        jobs,
        host_specs(hosts, 1),
        SchedulerConfig(queues=queues),
        core.push,
        round_interval_s=interval,
    )
    core.on_decision = emulator.on_decision
    return emulator, core


def state_changes(events: list[CoreEvent]) -> list[tuple[int, int, str]]:
    """``(s, jobid, state)`` of every ``JOB_STATE_CHANGE``, in order."""
    return [
        (event.ts // NS, event.payload.jobid, event.payload.state.value)
        for event in events
        if isinstance(event, JobStateChange)
    ]


def rounds_at(events: list[CoreEvent]) -> list[int]:
    return [event.ts // NS for event in events if isinstance(event, BeginRound)]


# --- suspend and resume -----------------------------------------------------------------

#: J1.S0.R100 normal (victim) on the only host; J2.S30.R50 urgent (preemptor).
VICTIM_AND_PREEMPTOR = [J(1, 0, 100), J(2, 30, 50, "urgent")]
PREEMPT_AT_30: Script = {
    (0, 0): [("DISPATCH", 1, "h001")],
    (30, 0): [("PREEMPT", 2, (1,))],  # the preemptor pends this round
    (30, 1): [("DISPATCH", 2, "h001")],  # the further round at the same instant
}


def test_preempt_suspends_the_victim_and_rounds_again_at_that_instant() -> None:
    emulator, core = scripted(VICTIM_AND_PREEMPTOR, {**PREEMPT_AT_30, (80, 0): [("RESUME", 1)]})
    records = emulator.run()
    changes = state_changes(core.events)
    assert changes[0] == (30, 1, "SUSP")
    # The SUSP comes after the round that decided it, and a further round follows it.
    kinds = [(event.type, event.ts // NS) for event in core.events if event.ts // NS == 30]
    assert kinds == [
        ("JOBS_PUSH", 30),
        ("BEGIN_ROUND", 30),
        ("JOB_STATE_CHANGE", 30),
        ("BEGIN_ROUND", 30),
    ]
    assert (records[2].start_s, records[2].end_s) == (30, 80)
    assert emulator.stats.suspensions == 1


def test_resume_runs_the_remaining_time_and_the_stale_finish_is_ignored() -> None:
    # A job of 100 s suspended after 30 s for 50 s ends at 150 s, not at 100 s.
    emulator, core = scripted(VICTIM_AND_PREEMPTOR, {**PREEMPT_AT_30, (80, 0): [("RESUME", 1)]})
    records = emulator.run()
    assert state_changes(core.events) == [
        (30, 1, "SUSP"),
        (80, 2, "DONE"),
        (150, 1, "DONE"),  # nothing at 100 s: the finish planned at dispatch is stale
    ]
    victim = records[1]
    assert (victim.start_s, victim.end_s) == (0, 150)
    assert (victim.times_suspended, victim.suspended_s, victim.ran_s) == (1, 50, 100)
    assert not victim.killed_by_runlimit
    assert 100 not in rounds_at(core.events)  # the stale finish changes nothing
    assert (emulator.stats.resumes, emulator.stats.done) == (1, 2)


def test_suspended_and_resumed_at_one_instant_finishes_once_at_its_old_time() -> None:
    script: Script = {
        (0, 0): [("DISPATCH", 1, "h001")],
        (30, 0): [("PREEMPT", 2, (1,))],
        (30, 1): [("RESUME", 1)],  # e.g. the preemption was given up at once
    }
    emulator, core = scripted([J(1, 0, 100), J(2, 30, 50, "urgent")], script)
    records = emulator.run()
    assert state_changes(core.events) == [(30, 1, "SUSP"), (100, 1, "DONE")]
    assert (records[1].end_s, records[1].times_suspended, records[1].suspended_s) == (100, 1, 0)


def test_victims_are_suspended_in_the_decision_order_and_only_while_running() -> None:
    jobs = [J(1, 0, 100), J(2, 0, 100), J(3, 0, 5), J(4, 10, 50, "urgent")]
    script: Script = {
        (0, 0): [("DISPATCH", 1, "h001"), ("DISPATCH", 2, "h002"), ("DISPATCH", 3, "h003")],
        # Job 3 ended at 5 s, job 2 is named twice: a worker stops what still runs.
        (10, 0): [("PREEMPT", 4, (2, 3, 1, 2))],
        (10, 1): [("DISPATCH", 4, "h001")],
        (60, 0): [("RESUME", 2), ("RESUME", 1)],
    }
    emulator, core = scripted(jobs, script, hosts=3)
    records = emulator.run()
    assert state_changes(core.events) == [
        (5, 3, "DONE"),
        (10, 2, "SUSP"),
        (10, 1, "SUSP"),
        (60, 4, "DONE"),
        (150, 2, "DONE"),  # resumed first, so its finish is first in the agenda
        (150, 1, "DONE"),
    ]
    assert [records[j].times_suspended for j in (1, 2, 3)] == [1, 1, 0]
    assert emulator.stats.suspensions == 2


def test_a_preemption_with_no_victim_left_running_needs_no_further_round() -> None:
    script: Script = {
        (0, 0): [("DISPATCH", 1, "h001")],
        (10, 0): [("PREEMPT", 2, (1,))],  # job 1 ended at 10 s, before the round
        (10, 1): [],
    }
    emulator, core = scripted([J(1, 0, 10), J(2, 10, 5, "urgent")], script)
    emulator.run()
    assert rounds_at(core.events) == [0, 10]
    assert state_changes(core.events) == [(10, 1, "DONE")]


@pytest.mark.parametrize("interval", [None, 10], ids=["rounds at changes", "a 10 s grid"])
def test_a_suspended_job_keeps_the_run_going_until_it_is_resumed(interval: int | None) -> None:
    emulator, _ = scripted(
        VICTIM_AND_PREEMPTOR, {**PREEMPT_AT_30, (80, 0): [("RESUME", 1)]}, interval=interval
    )
    done: list[int] = []
    records = emulator.run(done.append)
    assert (records[1].end_s, records[2].end_s) == (150, 80)
    assert done[-1] == 2


def test_a_job_never_resumed_is_left_suspended_and_the_run_ends() -> None:
    emulator, core = scripted(VICTIM_AND_PREEMPTOR, PREEMPT_AT_30, interval=10)
    records = emulator.run()
    assert (records[1].start_s, records[1].end_s, records[1].times_suspended) == (0, None, 1)
    assert rounds_at(core.events)[-1] == 80  # no grid round after the last change
    report = summarize(
        records.values(),
        workload="w",
        policy="p",
        hosts=1,
        slots=1,
        skipped={},
        rounds=0,
        events=0,
        decisions={},
        sim_wall_s=0.0,
    )
    assert (report.jobs_preempted, report.suspensions, report.resumes) == (1, 1, 0)
    assert (report.jobs_left_suspended, report.jobs_finished) == (1, 1)


def test_a_core_that_keeps_preempting_at_one_instant_is_a_named_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(emulator_module, "_MAX_ROUNDS_PER_INSTANT", 20)
    thrash: Script = {(0, 0): [("DISPATCH", 1, "h001")]}
    for nth in range(21):  # each round resumes job 1 and preempts it again
        thrash[(10, nth)] = [("RESUME", 1), ("PREEMPT", 2, (1,))]
    emulator, _ = scripted([J(1, 0, 100), J(2, 10, 5, "urgent")], thrash)
    with pytest.raises(SimulationLoopError, match="more than 20 rounds at 10 s"):
        emulator.run()


# --- run limits -------------------------------------------------------------------------


def limited(seconds: int) -> tuple[QueueSpec, ...]:
    return (URGENT, NORMAL.model_copy(update={"run_limit_s": seconds}))


@pytest.mark.parametrize(
    "run_s, limit, expected",
    [
        (100, 60, ((60, 1, "EXIT"), True)),
        (60, 60, ((60, 1, "DONE"), False)),
        (30, 60, ((30, 1, "DONE"), False)),
    ],
    ids=[
        "run time longer than the limit: killed at the limit",
        "run time equal to the limit: finishes",
        "run time shorter than the limit: finishes",
    ],
)
def test_run_limit_kills_a_job_that_runs_too_long(
    run_s: int, limit: int, expected: tuple[tuple[int, int, str], bool]
) -> None:
    emulator, core = scripted(
        [J(1, 0, run_s)], {(0, 0): [("DISPATCH", 1, "h001")]}, queues=limited(limit)
    )
    records = emulator.run()
    assert (state_changes(core.events), records[1].killed_by_runlimit) == (
        [expected[0]],
        expected[1],
    )
    assert records[1].end_s == expected[0][0]


def test_time_suspended_does_not_count_towards_the_run_limit() -> None:
    # J1.S0.R100, limit 60: runs 0..30, suspended 30..80, runs 80..110 and is killed.
    script: Script = {**PREEMPT_AT_30, (80, 0): [("RESUME", 1)]}
    emulator, core = scripted(VICTIM_AND_PREEMPTOR, script, queues=limited(60))
    records = emulator.run()
    assert state_changes(core.events) == [
        (30, 1, "SUSP"),
        (80, 2, "DONE"),  # the preemptor's queue has no run limit
        (110, 1, "EXIT"),  # not at 60 s: 30 s ran before the suspension, 30 s after
    ]
    assert records[1].killed_by_runlimit
    assert (records[1].end_s, records[1].ran_s, records[1].suspended_s) == (110, 60, 50)
    assert not records[2].killed_by_runlimit


def test_run_limit_with_the_real_core() -> None:
    queues = (QueueSpec(name="normal", priority=30, run_limit_s=50),)
    jobs = (J(1, 0, 100), J(2, 0, 40), J(3, 10, 80))
    mapped = MappedWorkload(
        jobs=jobs, skipped={}, hosts=2, slots_per_host=1, origin_s=0, queues={"normal": 30}
    )
    result = run_simulation(mapped, source="hand-made", queues=queues)
    got = {j: (r.start_s, r.end_s, r.killed_by_runlimit) for j, r in result.records.items()}
    # Job 1 is killed at 50 s; job 3 starts when job 2 ends (40 s) and is killed at 90 s.
    assert got == {1: (0, 50, True), 2: (0, 40, False), 3: (40, 90, True)}
    report = result.report
    assert (report.jobs_killed_by_runlimit, report.jobs_finished) == (2, 3)
    # Killed jobs count the time they ran: 50 + 40 + 50 slot-seconds on 2 slots over 90 s.
    assert report.utilization == round(140 / (2 * 90), 6)


# --- closed queues ----------------------------------------------------------------------


def test_a_job_submitted_to_a_closed_queue_is_refused_at_submission() -> None:
    queues = (
        QueueSpec(name="normal", priority=30),
        QueueSpec(name="shut", priority=50, status=QueueStatus.CLOSED),
    )
    jobs = (J(1, 0, 10), J(2, 0, 10, "shut"), J(3, 5, 10, "shut"), J(4, 5, 10))
    mapped = MappedWorkload(
        jobs=jobs, skipped={}, hosts=2, slots_per_host=1, origin_s=0, queues={"normal": 30}
    )
    result = run_simulation(mapped, source="hand-made", queues=queues)
    got = {j: (r.start_s, r.end_s, r.rejected_reason) for j, r in result.records.items()}
    assert got == {
        1: (0, 10, ""),
        2: (None, None, "queue_closed"),
        3: (None, None, "queue_closed"),
        4: (5, 15, ""),
    }
    report = result.report
    assert (report.jobs_rejected, report.jobs_rejected_queue_closed) == (2, 2)
    assert report.jobs_never_started == 0


def test_closed_queue_jobs_never_reach_the_core() -> None:
    queues = (NORMAL, QueueSpec(name="shut", status=QueueStatus.CLOSED))
    emulator, core = scripted(
        [J(1, 0, 10, "shut"), J(2, 5, 10, "shut"), J(3, 5, 10)],
        {(5, 0): [("DISPATCH", 3, "h001")]},
        queues=queues,
    )
    records = emulator.run()
    pushes = [
        tuple(job.jobid for job in event.payload.jobs)
        for event in core.events
        if isinstance(event, JobsPush)
    ]
    assert pushes == [(3,)]  # nothing at 0 s: a JOBS_PUSH is never empty
    assert rounds_at(core.events) == [5, 15]
    assert [records[j].rejected for j in (1, 2, 3)] == [True, True, False]
    assert emulator.stats.done == 3


# --- job priority from the queue --------------------------------------------------------


def test_a_simulated_job_gets_its_queues_priority() -> None:
    queues = (URGENT, NORMAL.model_copy(update={"priority": 40}))  # --queues overrides 30
    jobs = [J(1, 0, 10), J(2, 0, 10, "urgent"), J(3, 0, 10, "other")]
    jobs.append(SimJob(4, 0, 10, 1, "normal", "u1", priority=7))  # an explicit priority
    config = scheduler_config(
        MappedWorkload(tuple(jobs), {}, 1, 1, 0, {"urgent": 1, "normal": 30, "other": 5}),
        "builtin_fcfs",
        queues,
    )
    emulator, core = scripted(jobs, {}, queues=config.queues)
    emulator.run()
    push = next(event for event in core.events if isinstance(event, JobsPush))
    assert {job.jobid: job.priority for job in push.payload.jobs} == {1: 40, 2: 100, 3: 5, 4: 7}


# --- the core's preemption, end to end ----------------------------------------------------


def test_real_core_urgent_job_preempts_a_normal_one_which_resumes_after() -> None:
    jobs = (J(1, 0, 100), J(2, 30, 50, "urgent"))  # victim; preemptor
    mapped = MappedWorkload(jobs, {}, 1, 1, 0, {"urgent": 100, "normal": 30})
    result = run_simulation(mapped, source="hand-made", queues=(URGENT, NORMAL))
    got = {
        j: (r.start_s, r.end_s, r.times_suspended, r.suspended_s) for j, r in result.records.items()
    }
    assert got == {1: (0, 150, 1, 50), 2: (30, 80, 0, 0)}
    report = result.report
    assert (report.jobs_preempted, report.suspensions, report.resumes) == (1, 1, 1)
    assert report.decisions["PREEMPT"] == report.decisions["RESUME"] == 1


def test_real_core_never_preempts_a_job_of_a_queue_that_is_not_preemptible() -> None:
    jobs = (J(1, 0, 100), J(2, 30, 50, "urgent"))
    mapped = MappedWorkload(jobs, {}, 1, 1, 0, {"urgent": 100, "normal": 30})
    fixed = NORMAL.model_copy(update={"preemptible": False})
    result = run_simulation(mapped, source="hand-made", queues=(URGENT, fixed))
    got = {j: (r.start_s, r.end_s) for j, r in result.records.items()}
    assert got == {1: (0, 100), 2: (100, 150)}
    assert result.report.suspensions == 0


SWF_TWO_QUEUES = """\
; MaxProcs: 2
1 0 -1 100 2 -1 -1 2 -1 -1 1 1 1 -1 2 -1 -1 -1
2 10 -1 40 1 -1 -1 1 -1 -1 1 2 1 -1 1 -1 -1 -1
"""


def test_cli_queue_map_and_queue_file_make_preemption_happen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "two.swf"
    trace.write_text(SWF_TWO_QUEUES)
    queues = tmp_path / "queues.json"
    queues.write_bytes(
        orjson.dumps(
            [
                {"name": "urgent", "priority": 100, "preemptible_queues": ["normal"]},
                {"name": "normal", "priority": 30, "preemptible": True},
            ]
        )
    )
    report_path, jobs_path = tmp_path / "r.json", tmp_path / "j.csv"
    argv = ["simulate", "--workload", str(trace), "--swf-queues", "1=urgent:100,*=normal:30"]
    argv += ["--queues", str(queues), "--quiet", "--report", str(report_path)]
    argv += ["--jobs-out", str(jobs_path)]
    assert main(argv) == 0
    report = orjson.loads(report_path.read_bytes())
    assert (report["jobs_preempted"], report["suspensions"], report["resumes"]) == (1, 1, 1)
    rows = jobs_path.read_text().splitlines()
    assert rows[0].split(",") == list(CSV_COLUMNS)
    # Job 1 (normal, 2 tasks, 100 s) is suspended at 10 s for job 2's 40 s: ends at 140 s.
    assert rows[1].split(",")[:4] == ["1", "0", "0", "140"]
    assert rows[1].split(",")[6:8] == ["1", "40"]


# --- --queues files ----------------------------------------------------------------------


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "queues.json"
    path.write_text(text)
    return path


def test_queue_file_is_read_as_queue_specs(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[{"name": "urgent", "priority": 100, "preemptible_queues": ["normal"]},'
        ' {"name": "normal", "preemptible": true, "run_limit_s": 3600, "status": "closed"}]',
    )
    assert read_queue_file(path) == (
        URGENT,
        QueueSpec(name="normal", preemptible=True, run_limit_s=3600, status=QueueStatus.CLOSED),
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("[{", "not JSON: "),
        ('{"name": "normal"}', "expected a JSON list of queue definitions, not an object"),
        ('[{"name": "a"}, 3]', "[1]: expected a queue definition (a JSON object), not a number"),
        ('[{"priority": 3}]', "[0].name: Field required"),
        ('[{"name": "a", "run_limit_s": 0}]', "[0].run_limit_s: Input should be greater than"),
        ('[{"name": "a", "prio": 3}]', "[0].prio: Extra inputs are not permitted"),
        ('[{"name": "a", "priority": "high"}]', "[0].priority: Input should be a valid integer"),
        ('[{"name": "a", "status": "shut"}]', "[0].status: Input should be 'open' or 'closed'"),
        ('[{"name": "a", "run_windows": ["25:00-26:00"]}]', "[0].run_windows: "),
        (
            '[{"name": "a"}, {"name": "b"}, {"name": "a"}]',
            "[2].name: queue 'a' is defined twice (first at [0])",
        ),
    ],
    ids=[
        "not JSON",
        "an object, not a list",
        "an entry that is not an object",
        "a queue without a name",
        "a run limit of 0 s",
        "a misspelt field",
        "a word as priority",
        "an unknown status",
        "a run window that does not parse",
        "one queue defined twice",
    ],
)
def test_queue_file_errors_name_the_file_index_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(QueueFileError) as error:
        read_queue_file(path)
    assert str(error.value).startswith(f"{path}: {message}")
    assert "\n" not in str(error.value)


def test_a_queue_file_that_is_not_utf8_says_where_it_stops_being_text(tmp_path: Path) -> None:
    path = tmp_path / "queues.json"
    path.write_bytes(b'[{"name": "a\xff"}]')
    with pytest.raises(QueueFileError) as error:
        read_queue_file(path)
    assert str(error.value) == f"{path}: not UTF-8 text (byte 0xff at offset 12)"


@pytest.mark.parametrize(
    "text, message",
    [
        (None, "--queues {path}: No such file or directory"),
        ('[{"name": "a", "run_limit_s": -5}]', "--queues {path}: [0].run_limit_s: Input should"),
        ("[1", "--queues {path}: not JSON"),
        (
            '[{"name": "normal", "preemptible_queues": ["ghost"]}]',
            "--queues {path}: [0].preemptible_queues[0]: queue 'ghost' is defined nowhere "
            "(queues: normal)",
        ),
        (
            '[{"name": "normal", "preempt_policy": "nope"}]',
            "--queues {path}: [0].preempt_policy: unknown preempt policy 'nope'; known: "
            "lowest_priority_first",
        ),
    ],
    ids=["a missing file", "a bad field", "not JSON", "an unknown target queue", "a bad policy"],
)
def test_cli_queue_file_error_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, message: str
) -> None:
    path = tmp_path / "queues.json" if text is None else write(tmp_path, text)
    code = main(["simulate", "--jobs", "5", "--quiet", "--queues", str(path)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith("xce-sched: error: " + message.format(path=path))
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_queue_file_merges_over_the_queue_map(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, '[{"name": "normal", "priority": 40}, {"name": "idle", "priority": 1}]')
    record = tmp_path / "run.jsonl"
    argv = ["simulate", "--jobs", "20", "--quiet", "--queues", str(path), "--record", str(record)]
    assert main([*argv, "--swf-queues", "*=normal:30"]) == 0
    snapshot = orjson.loads(record.read_bytes().splitlines()[1])
    queues = [(q["name"], q["priority"]) for q in snapshot["data"]["config"]["queues"]]
    assert queues == [("normal", 40), ("idle", 1)]
    first_push = orjson.loads(record.read_bytes().splitlines()[2])
    assert {job["priority"] for job in first_push["payload"]["jobs"]} == {40}


def test_a_job_in_a_queue_nobody_defines_is_a_named_error() -> None:
    mapped = MappedWorkload((J(1, 0, 10), J(7, 1, 10, "nosuch")), {}, 1, 1, 0, {"normal": 30})
    with pytest.raises(
        MappingError,
        match=r"job 7 is mapped to queue 'nosuch', which no queue definition gives "
        r"\(defined: normal\)",
    ):
        run_simulation(mapped, source="hand-made")


def test_jobs_csv_columns(tmp_path: Path) -> None:
    records = [
        JobRecord(1, 0, 100, 1, 0, 150, ("h001",), times_suspended=1, suspended_s=50),
        JobRecord(
            2,
            0,
            100,
            1,
            0,
            60,
            ("h002",),
            killed_by_runlimit=True,
            run_limit_s=120,
            first_predicted_start_s=30,
        ),
        JobRecord(3, 5, 10, 1, rejected=True, rejected_reason="queue_closed", run_limit_s=1),
    ]
    path = tmp_path / "jobs.csv"
    write_jobs_csv(records, path)
    # run_limit_s, empty for a job that gave none; first_predicted_start_s last,
    # empty for a job no round predicted a start for.
    assert path.read_text().splitlines() == [
        ",".join(CSV_COLUMNS),
        # then queue, user, wait_s, bounded_slowdown (150 / max(100, 10)), status, skipped
        "1,0,0,150,1,h001,1,50,0,,,,,,0,1.5,finished,",
        "2,0,0,60,1,h002,0,0,1,,120,30,,,0,1.0,finished,",
        "3,5,,,1,,0,0,0,queue_closed,1,,,,,,rejected,",
    ]


def test_real_core_generated_workload_with_an_urgent_queue_runs_to_the_end() -> None:
    base = map_trace(generate_lublin(n_jobs=300, nodes=32, seed=3))
    jobs = tuple(
        replace(job, queue="urgent") if index % 5 == 0 else job
        for index, job in enumerate(base.jobs)
    )
    mapped = replace(base, jobs=jobs, queues={"urgent": 100, "normal": 30})
    result = run_simulation(mapped, source="lublin", queues=(URGENT, NORMAL))
    records = result.records.values()
    report = result.report
    assert report.jobs_finished == 300
    assert report.suspensions > 0
    assert report.resumes == report.suspensions
    assert report.jobs_left_suspended == 0
    # Every job runs exactly its run time, whatever the suspensions cut it into.
    assert all(r.ran_s == r.run_s for r in records)
    assert all(
        r.end_s == r.start_s + r.run_s + r.suspended_s for r in records if r.start_s is not None
    )
    # Only normal jobs are victims.
    urgent = {job.jobid for job in jobs if job.queue == "urgent"}
    assert all(r.times_suspended == 0 for r in records if r.jobid in urgent)
    again = run_simulation(mapped, source="lublin", queues=(URGENT, NORMAL))
    assert again.records == result.records
