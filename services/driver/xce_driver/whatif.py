"""What-if (Req 10 AC 14): a recording's state, other events, the same closed loop.

``what_if(BASE, ALT)`` starts a core from a SNAPSHOT of the base recording and runs
it forward under the alternative events of ALT, with the cluster emulator of
``xce-sched simulate`` (``ClusterEmulator``) answering the core as a cluster would:
a dispatched job runs its run time and ends, a preemption's victims are suspended
at once and a further round lets the preemptor start, a resumed job runs its time
left, a job larger than the cluster is rejected. So a what-if is a simulation that
starts from a recorded state: it equals a direct ``simulate`` of the alternative
workload where the two can be compared (from a recording's first snapshot, with
the same configuration), and a what-if whose ALT is the base recording itself gives
the base run back.

**ALT, the event file.** A file in the recording format whose first line is a
HEADER (its configuration hash must be the base's, unless ``force``) and whose last
is END (a file cut short is refused, unless ``force``). ``xce-sched events`` writes
one from a workload: JOBS_PUSH lines at each submission instant and a ``RUN_TIME``
line per job; a recording serves too (its other lines are read as below), and so
does a hand-edited copy of either. Its lines are taken as follows:

* events at or after the snapshot's time are *inputs*, pushed as they are at their
  ``ts`` (submissions, host, queue, resource and configuration changes, job
  updates); a round follows at that instant, as after a submission in ``simulate``;
* events before the snapshot's time are left out: the snapshot holds their effect;
  a submission at its time of a job the base run had submitted by then is left out
  too (it came before the snapshot, in the same instant);
* ``BEGIN_ROUND`` lines are left out: the what-if makes its rounds as the base
  recording made them (``simulate``'s rules: at every change, or on the grid of the
  HEADER's ``round_interval_s``; ``round_interval_s`` overrides); but a live
  recording's rounds were the controller's (its HEADER says ``rounds:
  controller``): then they are pushed as they are, the what-if makes none of its own
  until the last, and goes on after it on the grid of their median interval;
* ``JOB_STATE_CHANGE`` lines are left out: every job state change of the what-if is
  the emulator's answer to its own decisions (ends from run times, suspensions of
  its preemptions, rejections);
* ``RUN_TIME`` lines give jobs' run times; SNAPSHOT and DECISION lines are ignored.

An input the core refuses (a job update of a job that has ended earlier here, a
host change of a host that no longer exists) *no longer applies*: it is counted and
shown with the core's reason, and changes nothing.

**Run times.** A job keeps the run time it had in the base run (its running time
from the snapshot, or from its start, to its end, suspended time left out; a job
the base run ended with EXIT ends with EXIT after as long, a run-limit kill stays
one). A ``RUN_TIME`` line gives the run time of a job that had not started at the
snapshot (its queue's run limit applies, as in ``simulate``); for one already
running there it counts from the job's start, when the job was never suspended.
Every job the base run started, and every job it never had, must have a run time:
the what-if refuses to start without, naming them, unless ``force``; a job
dispatched with none then never ends: the result lists it (``endless``) and its
figures cannot be right (the command exits 1).

**Times.** Per-job times are seconds from the base recording's first SNAPSHOT (a
simulation's trace origin), so the what-if's per-job CSV and a ``simulate
--jobs-out`` of the alternative workload compare job by job.

**Predicted starts.** The what-if's rounds record each job's first predicted start
as ``simulate``'s do (``ClusterEmulator(reservations=...)``); the base run is read
from its recording, which keeps no predictions (its report says 0 jobs, None).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import ValidationError
from xce_core.plugins import PluginRegistry
from xce_core.snapshot import SnapshotError, load_snapshot
from xce_schemas import (
    CoreEvent,
    Decision,
    Dispatch,
    Header,
    JobsPush,
    JobState,
    JobStateChange,
    Pend,
    QueueSpec,
    Resume,
    RunTime,
    parse_decision,
)
from xce_schemas.errors import describe
from xce_schemas.events import EVENT_ADAPTER, ConfigPush, JobsPushPayload, QueueUpdate
from xce_schemas.snapshot import CoreSnapshot

from xce_driver.cluster.controller import REJECT_LARGER_THAN_CLUSTER, rejected_by_controller
from xce_driver.cluster.jobs import NS, EmulatorStats, JobRecord, RunPlan, Submitted, record_of
from xce_driver.emulator import ClusterEmulator
from xce_driver.recording import IncompleteRecording, Line, RecordingError, read_lines
from xce_driver.replay import (
    MAX_SHOWN,
    ReplayError,
    StartPoint,
    find_snapshot,
    format_ts,
    lines_after,
    load_start,
)
from xce_driver.report import Report, backfill_label, summarize
from xce_driver.workloads.swf import printable

#: ``progress(phase, done, total)``: phase ``base`` and ``alt`` count bytes read of
#: the two files, ``what-if`` the jobs done of the jobs known.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class WhatIfOptions:
    """The options of a what-if (``xce-sched replay BASE --sim-alt-events ALT``).

    Attributes:
        start_ts: start from the latest snapshot at or before this ns (None: the first).
        round_interval_s: rounds on this grid (s); None: as the base HEADER says
            (its ``round_interval_s``, else at every change).
        force: go on despite a format-version or configuration-hash mismatch, or a
            file cut short (no END line).
    """

    start_ts: int | None = None
    round_interval_s: int | None = None
    force: bool = False


@dataclass(slots=True)
class WhatIfResult:
    """The outcome of ``what_if``: the base run and the what-if, as ``simulate``
    reports them, and what of ALT was not used.

    Attributes:
        snapshot_line, snapshot_ts: the base snapshot it started from.
        base, alternative: the figures of each run (``Report``; jobs from the
            snapshot on: those the snapshot holds and those submitted later).
        base_records, records: every job's record in each run, by jobid.
        left_out: ALT lines not pushed, counted by why (see the module docstring).
        refused: the inputs the core refused (they no longer apply), the first
            ``MAX_SHOWN`` as ``line N: reason``; ``refused_count``: all of them.
        endless: jobs dispatched in the what-if with no run time known, at
            another time than in the base run (or new in ALT), in jobid order: when
            they end is not known, so the what-if's figures cannot be right.
        horizon_ts: where the what-if stopped, ns: the base recording's end, when
            the base run left jobs running (``left_running``: their run time is
            not known, so nothing after it can be told); None: it ran to its end.
        round_interval_s: the grid its rounds were on (None: at every change).
        controller_rounds: its rounds were ALT's BEGIN_ROUND lines (a live
            recording's ticks), then the grid of ``round_interval_s`` after them.
        incomplete: why the base or ALT is incomplete (replayed with ``force``).
        wall_s: seconds it took.
    """

    snapshot_line: int
    snapshot_ts: int
    base: Report
    alternative: Report
    base_records: dict[int, JobRecord]
    records: dict[int, JobRecord]
    left_out: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    refused_count: int = 0
    endless: list[int] = field(default_factory=list)
    round_interval_s: int | None = None
    controller_rounds: bool = False
    horizon_ts: int | None = None
    left_running: list[int] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def moved(self) -> list[tuple[int, int | None, int | None]]:
        """Jobs of both runs whose start differs: ``(jobid, base start, what-if
        start)``, s from the origin (None: never started), in jobid order."""
        out = []
        for jobid in sorted(self.base_records.keys() & self.records.keys()):
            before, after = self.base_records[jobid].start_s, self.records[jobid].start_s
            if before != after:
                out.append((jobid, before, after))
        return out

    def only_in_base(self) -> list[int]:
        """Jobs of the base run that the what-if never had (ALT does not submit them)."""
        return sorted(self.base_records.keys() - self.records.keys())

    def only_in_what_if(self) -> list[int]:
        """Jobs of the what-if that the base run never had (new in ALT)."""
        return sorted(self.records.keys() - self.base_records.keys())


# --- the base run, from its recording --------------------------------------------------


class _BaseRun:
    """What the base recording says happened to each job: its ``JobRecord`` (as the
    emulator would have kept it) and its running time, from the recording's first
    SNAPSHOT on, so the jobs the chosen snapshot holds come with their whole
    history (``history``), and their running time after it becomes their run plan
    in the what-if. The figures (``records``, ``stats``) are of the jobs from the
    chosen snapshot on: those it holds and those submitted later.

    It reads the recorded lines, not a new replay: the recording is the base run.
    """

    def __init__(self, first: CoreSnapshot, origin_ts: int) -> None:
        self.origin_ts = origin_ts
        self._all: dict[int, JobRecord] = {}
        self.stats = EmulatorStats()
        self.history: dict[int, JobRecord] = {}  # at the chosen snapshot
        self.submitted: set[int] = set()  # jobs submitted by the chosen snapshot
        self._scope: set[int] | None = None  # jobs of the figures (None: not started)
        self._queues: dict[str, QueueSpec] = {q.name: q for q in first.queues}
        self._queue_of: dict[int, str] = {}
        self._since: dict[int, int] = {}  # running (or suspended) since, ns
        self._ran: dict[int, int] = {}  # running time from the first snapshot, ns
        self._ran_at_start: dict[int, int] = {}  # of it, up to the chosen snapshot
        self._ran_before: dict[int, int | None] = {}  # before the first (None: not known)
        self._too_big: set[int] = set()  # pended JOB_LARGER_THAN_CLUSTER
        self._ended: dict[int, JobState] = {}
        self.end_ts: int | None = None  # the END line's ts
        for job in first.jobs:
            record = self._record(job)
            if job.state is JobState.PEND:
                continue
            record.start_s = self._s(job.start_ts)
            record.hosts = () if job.alloc is None else tuple(h.host for h in job.alloc.hosts)
            # Running time before the first snapshot: known for a job never suspended.
            known = job.suspend_ts == 0 and job.state is JobState.RUN
            self._ran_before[job.jobid] = first.ts - job.start_ts if known else None
            self._ran[job.jobid] = 0
            if job.state is JobState.RUN:
                self._since[job.jobid] = first.ts
            else:
                record.suspend(self._s(job.suspend_ts))
                self._since[job.jobid] = job.suspend_ts  # suspended since

    @property
    def records(self) -> dict[int, JobRecord]:
        """The records of the jobs from the chosen snapshot on."""
        scope = self._scope or set()
        return {jobid: record for jobid, record in self._all.items() if jobid in scope}

    def mark_start(self, snapshot: CoreSnapshot) -> None:
        """The chosen snapshot is reached: note its jobs' history and running time."""
        self._scope = {job.jobid for job in snapshot.jobs}
        self.submitted = set(self._all)  # by the snapshot, ended ones included
        for jobid in self._scope:
            record = self._all[jobid]
            ran = self._ran.get(jobid, 0)
            if self._running(jobid, record):
                ran += snapshot.ts - self._since[jobid]
            self._ran_at_start[jobid] = ran
            self.history[jobid] = replace(record)

    def _running(self, jobid: int, record: JobRecord) -> bool:
        return jobid in self._since and record.times_suspended == record.times_resumed

    def _s(self, ts: int) -> int:
        return (ts - self.origin_ts) // NS

    def _record(self, job: Submitted) -> JobRecord:
        record = self._all[job.jobid] = record_of(job, self._s(job.submit_ts), 0)
        self._queue_of[job.jobid] = job.queue
        if self._scope is not None:
            self._scope.add(job.jobid)
        return record

    def take(self, event: CoreEvent | None, decision: Decision | None) -> None:
        """Account for one recorded event or decision line (counted in ``stats``
        from the chosen snapshot on)."""
        counting = self._scope is not None
        if decision is not None:
            if counting:
                self.stats.decided(decision.op)
            self._decision(decision.ts, decision)
            return
        if event is None:
            return
        self.stats.events += counting
        if isinstance(event, JobsPush):
            for spec in event.payload.jobs:
                self._record(spec)
        elif isinstance(event, JobStateChange):
            self._state_change(event.ts, event.payload.jobid, event.payload.state)
        elif isinstance(event, ConfigPush):
            self._queues = {q.name: q for q in event.payload.config.queues}
        elif isinstance(event, QueueUpdate):
            self._queues[event.payload.queue.name] = event.payload.queue
        elif event.type == "BEGIN_ROUND":
            self.stats.rounds += counting

    def _decision(self, ts: int, decision: Decision) -> None:
        jobid = getattr(decision, "jobid", None)
        if jobid is None or jobid not in self._all:
            return
        if isinstance(decision, Dispatch):
            record = self._all[jobid]
            if record.start_s is None:
                record.start_s = self._s(ts)
                record.hosts = tuple(host.host for host in decision.alloc.hosts)
                self._ran[jobid] = 0
                self._ran_before[jobid] = 0
            self._since[jobid] = ts
        elif isinstance(decision, Resume) and jobid in self._since:
            self._resumed(ts, jobid)
        elif isinstance(decision, Pend) and rejected_by_controller(decision):
            self._too_big.add(jobid)

    def _resumed(self, ts: int, jobid: int) -> None:
        record = self._all[jobid]
        record.resume(self._s(ts))
        self._since[jobid] = ts

    def _state_change(self, ts: int, jobid: int, state: JobState) -> None:
        record = self._all.get(jobid)
        if record is None:
            return
        running = self._running(jobid, record)
        if state is JobState.SUSP and running:
            self._ran[jobid] += ts - self._since[jobid]
            self._since[jobid] = ts
            record.suspend(self._s(ts))
        elif state is JobState.RUN and jobid in self._since and not running:
            self._resumed(ts, jobid)  # the controller resumed it
        elif state in (JobState.DONE, JobState.EXIT):
            if running:
                self._ran[jobid] += ts - self._since[jobid]
            self._since.pop(jobid, None)
            self._ended[jobid] = state
            if record.start_s is None:
                record.rejected = True
                record.rejected_reason = (
                    REJECT_LARGER_THAN_CLUSTER if jobid in self._too_big else ""
                )
                return
            record.end_s = self._s(ts)
            record.killed_by_runlimit = state is JobState.EXIT and self._at_limit(jobid)

    def _at_limit(self, jobid: int) -> bool:
        """Whether the job's running time reached its queue's run limit."""
        queue = self._queues.get(self._queue_of[jobid])
        before = self._ran_before.get(jobid)
        if queue is None or queue.run_limit_s is None or before is None:
            return False
        return before + self._ran[jobid] >= queue.run_limit_s * NS

    def left_running(self) -> list[int]:
        """Jobs from the chosen snapshot on that started and never ended in the base
        run (running or suspended when the recording ended): their run time is not
        known."""
        return sorted(
            jobid
            for jobid, record in self.records.items()
            if record.start_s is not None and jobid not in self._ended
        )

    def plans(self) -> dict[int, RunPlan]:
        """The run plan of every job that started and ended in the base run from the
        chosen snapshot on: its running time from the snapshot (or its start) to
        its end."""
        plans = {}
        scope = self._scope or set()
        for jobid, state in self._ended.items():
            record = self._all[jobid]
            if record.start_s is None or jobid not in scope:
                continue
            killed = record.killed_by_runlimit
            plans[jobid] = RunPlan(
                self._ran[jobid] - self._ran_at_start.get(jobid, 0),
                exit=state is JobState.EXIT and not killed,
                killed_by_runlimit=killed,
                limited=False,  # its recorded run already ends where its limit cut it
            )
        return plans


# --- the alternative events --------------------------------------------------------------


@dataclass(slots=True)
class _Alternative:
    """What ALT holds for the what-if: inputs, run times, and what was left out."""

    inputs: list[CoreEvent] = field(default_factory=list)
    where: list[int] = field(default_factory=list)  # line number of each input
    run_times: dict[int, RunTime] = field(default_factory=dict)
    run_time_lines: dict[int, int] = field(default_factory=dict)
    left_out: dict[str, int] = field(default_factory=dict)
    events: int = 0

    def leave_out(self, why: str, count: int = 1) -> None:
        if count:
            self.left_out[why] = self.left_out.get(why, 0) + count


#: Why an ALT line is not pushed (the keys of ``WhatIfResult.left_out``).
BEFORE_SNAPSHOT = "events before the snapshot (its state holds them)"
ALREADY_SUBMITTED = "submissions of jobs the base run had submitted by the snapshot"
ROUNDS = "BEGIN_ROUND lines (the what-if makes its own rounds)"
STATE_CHANGES = "JOB_STATE_CHANGE lines (the what-if's emulator makes its own)"


def _read_alternative(
    path: Path,
    base: Header,
    snapshot: CoreSnapshot,
    submitted: set[int],
    controller_rounds: bool,
    force: bool,
    progress: Progress | None,
    incomplete: list[str],
) -> _Alternative:
    """Read ALT (see the module docstring). ``submitted``: the jobs the base run had
    submitted by the snapshot (a submission of one of them at the snapshot's time
    came before it: left out); ``controller_rounds``: its BEGIN_ROUND lines are
    inputs, the rounds.

    Raises:
        ReplayError: an empty file, no HEADER first, a configuration hash other than
            the base's (unless ``force``), a line that is not valid, times going
            back, no END line (unless ``force``), or no event nor run time at all.
    """
    alt = _Alternative()
    last_ts = 0
    report = None if progress is None else _bytes_progress(progress, "alt")
    lines: Iterator[Line] = read_lines(path, require_end=True, progress=report)
    try:
        first = next(lines, None)
        if first is None:
            raise ReplayError(f"{path}: empty file: an event file starts with a HEADER line")
        if first.type != "HEADER":
            raise ReplayError(
                f"{path}:1: the first line is {first.type}, not HEADER: not an event file "
                "(xce-sched events writes one from a workload)"
            )
        if first.data.get("config_hash") != base.config_hash and not force:
            raise ReplayError(
                f"{path}: its configuration hash differs from the base recording's: it "
                "was made for another configuration (--force to use it anyway)"
            )
        for line in lines:
            kind = line.type
            if kind in ("SNAPSHOT", "DECISION", "END"):
                continue
            if kind == "HEADER":
                raise ReplayError(f"{path}:{line.number}: a second HEADER")
            if line.ts < last_ts:
                raise ReplayError(
                    f"{path}:{line.number}: {kind} at {format_ts(line.ts)} goes back in time "
                    f"from {format_ts(last_ts)}"
                )
            last_ts = line.ts
            if kind == "RUN_TIME":
                try:
                    run_time = RunTime.model_validate(line.data)
                except ValidationError as exc:
                    raise ReplayError(f"{path}:{line.number}: RUN_TIME {describe(exc)}") from None
                jobid = run_time.payload.jobid
                if jobid in alt.run_times:
                    raise ReplayError(
                        f"{path}:{line.number}: a second RUN_TIME line for job {jobid} "
                        f"(the first is line {alt.run_time_lines[jobid]})"
                    )
                alt.run_times[jobid] = run_time
                alt.run_time_lines[jobid] = line.number
                continue
            alt.events += 1
            if kind == "BEGIN_ROUND" and not controller_rounds:
                alt.leave_out(ROUNDS)
                continue
            if kind == "JOB_STATE_CHANGE":
                alt.leave_out(STATE_CHANGES)
                continue
            if line.ts < snapshot.ts:
                alt.leave_out(BEFORE_SNAPSHOT)
                continue
            try:
                event: CoreEvent = EVENT_ADAPTER.validate_python(line.data)
            except ValidationError as exc:
                raise ReplayError(f"{path}:{line.number}: {kind} {describe(exc, skip=1)}") from None
            if isinstance(event, JobsPush):
                fresh = tuple(job for job in event.payload.jobs if job.jobid not in submitted)
                alt.leave_out(ALREADY_SUBMITTED, len(event.payload.jobs) - len(fresh))
                if not fresh:
                    continue
                if len(fresh) < len(event.payload.jobs):
                    event = JobsPush(ts=event.ts, payload=JobsPushPayload(jobs=fresh))
            alt.inputs.append(event)
            alt.where.append(line.number)
    except IncompleteRecording as exc:
        if not force:
            raise ReplayError(f"{exc} (--force uses what it holds)") from None
        incomplete.append(str(exc))
    if not alt.events and not alt.run_times:
        raise ReplayError(
            f"{path}: holds no event: a what-if needs the alternative events "
            "(xce-sched events writes them from a workload)"
        )
    return alt


def _bytes_progress(progress: Progress, phase: str) -> Callable[[int, int], None]:
    return lambda done, total: progress(phase, done, total)


# --- the what-if ---------------------------------------------------------------------------


def _plans(
    base: dict[int, RunPlan], alt: _Alternative, snapshot: CoreSnapshot
) -> dict[int, RunPlan]:
    """Every job's run plan: the base run's, a RUN_TIME line's for a job not started
    at the snapshot (or started there, never suspended, and not ended in the base)."""
    plans = dict(base)
    started = {job.jobid: job for job in snapshot.jobs if job.state is not JobState.PEND}
    for jobid, line in alt.run_times.items():
        job = started.get(jobid)
        given = line.payload
        if job is None:
            plans[jobid] = RunPlan(given.run_ns, exit=given.exit)
        elif jobid not in plans and job.state is JobState.RUN and job.suspend_ts == 0:
            left = max(0, given.run_ns - (snapshot.ts - job.start_ts))
            plans[jobid] = RunPlan(left, exit=given.exit)
    return plans


#: The ticks of a live recording's bridge, s, when ALT has too few to tell.
DEFAULT_TICK_S = 1


def _tick_s(inputs: list[CoreEvent]) -> int:
    """The controller's round interval, whole s (at least 1): the median gap between
    ALT's BEGIN_ROUND lines, for the rounds after the last of them."""
    ticks = [event.ts for event in inputs if event.type == "BEGIN_ROUND"]
    gaps = sorted(b - a for a, b in itertools.pairwise(ticks) if b > a)
    if not gaps:
        return DEFAULT_TICK_S
    return max(1, round(gaps[len(gaps) // 2] / NS))


#: Why a RUN_TIME line is not used (a key of ``WhatIfResult.left_out``).
NO_SUCH_JOB = "RUN_TIME lines of jobs neither the snapshot nor ALT has"


def _check_run_times(
    jobs: list[int],
    plans: dict[int, RunPlan],
    base: dict[int, JobRecord],
    alt: _Alternative,
    force: bool,
) -> None:
    """Every job of the what-if that the base run never had needs a run time,
    unless ``force`` (it then never ends, and the result says so). A job the base
    run had needs none: it either ended there (its run time is known), was running
    when the recording ended (the what-if then stops there too), or never started
    (likely not to start here either; if it does, the result says so). A RUN_TIME
    line of a job the what-if does not have is counted.

    Raises:
        ReplayError: naming the jobs without one (the first ten) and what to do.
    """
    known = set(jobs)
    alt.leave_out(NO_SUCH_JOB, sum(jobid not in known for jobid in alt.run_times))
    missing = [jobid for jobid in jobs if jobid not in plans and jobid not in base]
    if missing and not force:
        shown = ", ".join(str(jobid) for jobid in missing[:10]) + (
            ", ..." if len(missing) > 10 else ""
        )
        raise ReplayError(
            f"{len(missing):,} jobs new in ALT have no RUN_TIME line ({shown}): add "
            "the lines (xce-sched events writes them), or --force to run them as jobs that "
            "never end (the what-if then exits 1)"
        )


def what_if(
    base_path: str | Path,
    alt_path: str | Path,
    options: WhatIfOptions = WhatIfOptions(),
    *,
    registry: PluginRegistry | None = None,
    progress: Progress | None = None,
) -> WhatIfResult:
    """Run the what-if of ``alt_path`` from a snapshot of ``base_path`` (Req 10 AC 14;
    the module docstring says what it does).

    Args:
        base_path: the base recording (``.jsonl`` or ``.jsonl.gz``).
        alt_path: the event file (ALT).
        options: start point, round grid, force.
        registry: plugins; default: the built-ins.
        progress: see ``Progress``.

    Raises:
        ReplayError: a bad base recording or ALT (named by file and line), no usable
            snapshot, a version or configuration mismatch or a file cut short
            (unless ``force``).
    """
    base_path, alt_path = Path(base_path), Path(alt_path)
    started = time.perf_counter()
    incomplete: list[str] = []
    try:
        start = find_snapshot(base_path, options.start_ts, options.force)
        snapshot = load_start(base_path, start.line)
        base = _read_base(base_path, start, snapshot, options.force, progress, incomplete)
        controller = start.header.rounds == "controller" and not options.round_interval_s
        alt = _read_alternative(
            alt_path,
            start.header,
            snapshot,
            base.submitted,
            controller,
            options.force,
            progress,
            incomplete,
        )
        interval = options.round_interval_s or start.header.round_interval_s
        if controller:
            interval = _tick_s(alt.inputs)
        emulator: ClusterEmulator
        core = load_snapshot(
            snapshot, on_decision=lambda decision: emulator.on_decision(decision), registry=registry
        )
        emulator = ClusterEmulator(
            (),
            (),
            snapshot.config,
            core.push_event,
            origin_s=start.origin_ts // NS,
            round_interval_s=interval,
            inputs=alt.inputs,
            run_plans=(plans := _plans(base.plans(), alt, snapshot)),
            controller_rounds=controller,
            reservations=lambda: core.state.reservations.values(),
        )
        submitted = [
            job.jobid for e in alt.inputs if isinstance(e, JobsPush) for job in e.payload.jobs
        ]
        jobs = sorted({job.jobid for job in snapshot.jobs} | set(submitted))
        _check_run_times(jobs, plans, base.records, alt, options.force)
        emulator.adopt(core, history=base.history, round_owed=start.round_owed)
        # Jobs still running when the base recording ended have no known run time:
        # the what-if then covers what the recording covers, to its end.
        horizon = base.end_ts if base.left_running() else None
        emulator.run(
            None if progress is None else lambda done: progress("what-if", done, len(jobs)),
            until_ns=horizon,
        )
    except SnapshotError as exc:
        raise ReplayError(f"{base_path}: {exc}") from None
    except RecordingError as exc:
        raise ReplayError(str(exc)) from None
    wall = time.perf_counter() - started
    where = {id(event): number for event, number in zip(alt.inputs, alt.where, strict=True)}
    refused = [f"line {where[id(event)]}: {why}" for event, why in emulator.refused]
    return WhatIfResult(
        snapshot_line=start.line.number,
        snapshot_ts=start.line.ts,
        base=_report(base.records, base.stats, base_path, snapshot, 0.0),
        alternative=_report(emulator.records, emulator.stats, alt_path, snapshot, wall),
        base_records=base.records,
        records=emulator.records,
        left_out=alt.left_out,
        refused=refused[:MAX_SHOWN],
        refused_count=len(refused),
        endless=[
            jobid
            for jobid in sorted(emulator.endless)
            if jobid not in base.records
            or emulator.records[jobid].start_s != base.records[jobid].start_s
        ],
        horizon_ts=horizon,
        left_running=base.left_running(),
        round_interval_s=interval,
        controller_rounds=controller,
        incomplete=incomplete,
        wall_s=wall,
    )


def _read_base(
    path: Path,
    start: StartPoint,
    snapshot: CoreSnapshot,
    force: bool,
    progress: Progress | None,
    incomplete: list[str],
) -> _BaseRun:
    """The base run from its recorded lines after its first snapshot (the chosen
    one, ``snapshot``, marks where the figures start).

    Raises:
        ReplayError: a line that is not valid, or no END line (unless ``force``).
    """
    first = snapshot if start.first.number == start.line.number else None
    base = _BaseRun(first or load_start(path, start.first), start.origin_ts)
    if first is not None:
        base.mark_start(snapshot)
    report = None if progress is None else _bytes_progress(progress, "base")
    lines = lines_after(path, start.first.number, require_end=True, progress=report)
    try:
        for line in lines:
            kind = line.type
            if line.number == start.line.number:
                base.mark_start(snapshot)
            if kind == "END":
                base.end_ts = line.ts
            if kind in ("SNAPSHOT", "END", "HEADER", "RUN_TIME"):
                continue
            try:
                if kind == "DECISION":
                    decision = parse_decision(line.data.get("payload"))  # type: ignore[arg-type]
                    base.take(None, decision)
                else:
                    base.take(EVENT_ADAPTER.validate_python(line.data), None)
            except ValidationError as exc:
                raise ReplayError(f"{path}:{line.number}: {kind} {describe(exc, skip=1)}") from None
    except IncompleteRecording as exc:
        if not force:
            raise ReplayError(f"{exc} (--force uses what it holds)") from None
        incomplete.append(str(exc))
    return base


def _report(
    records: dict[int, JobRecord],
    stats: EmulatorStats,
    source: Path,
    snapshot: CoreSnapshot,
    wall_s: float,
) -> Report:
    """``simulate``'s figures of one run (on the cluster of the snapshot)."""
    return summarize(
        records.values(),
        workload=printable(str(source)),
        policy=snapshot.config.job_pick_plugin,
        hosts=len(snapshot.hosts),
        slots=sum(host.slots for host in snapshot.hosts),
        skipped={},  # an event file has no trace records to skip
        rounds=stats.rounds,
        events=stats.events,
        decisions=stats.decisions,
        sim_wall_s=wall_s,
        backfill=backfill_label(snapshot.config),
    )
