"""The simulation-mode driver: replay a recording through a fresh core (Req 10 AC 11-13).

``replay`` loads the latest SNAPSHOT at or before the start time, then pushes every
later event in file order through a core built from it, in a discrete event-driven
virtual clock: time jumps to each event's ts and never goes back; events of one ts
keep their file order (AC 12). The driver, not the core, paces the replay
(``speed``) and pauses it (``pause_at``). A recording must be complete: one of
format 1.1 or later that lacks its ``END`` line was cut short, and is replayed only
with ``force`` (the result then says so).

With ``verify`` (AC 13; spec/alloc-equality.md Req 5) each decision the core makes
is compared with the one recorded after the same event: DISPATCH by allocation
equality (``from`` compared, ``instid`` not), PEND by job and main reason only
(bug-1845: a recorded reason may have been built from another path than the replayed
one), others field by field; missing and extra decisions are mismatches too, and
so is a periodic SNAPSHOT the replayed state does not reproduce. Each mismatch says
which side is the recording and which the replay.

The what-if (AC 14, ``--sim-alt-events``) is ``xce_driver.whatif``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from xce_core.core import SchedCore
from xce_core.errors import EventError
from xce_core.pending import render
from xce_core.plugins import JobInfo, PluginRegistry
from xce_core.prediction import NoEstimateCode
from xce_core.snapshot import SnapshotError, load_snapshot, save_snapshot
from xce_schemas import (
    RECORDING_VERSION,
    CoreEvent,
    Decision,
    Dispatch,
    Header,
    JobsPush,
    JobState,
    JobStateChange,
    Pend,
    config_hash,
    decision_fields,
    dump_decision,
    job_alloc_diff,
    parse_decision,
)
from xce_schemas.errors import describe
from xce_schemas.events import EVENT_ADAPTER
from xce_schemas.snapshot import CoreSnapshot

from xce_driver.batch_gc import batch_gc
from xce_driver.recording import IncompleteRecording, Line, RecordingError, read_lines

NS = 1_000_000_000

#: Mismatch lines kept in full; the rest are only counted.
MAX_SHOWN = 50

_ENDED = (JobState.DONE, JobState.EXIT)


def format_ts(ts: int) -> str:
    """``ts=<ns> (<UTC time>)`` for messages."""
    wall = datetime.fromtimestamp(ts // NS, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"ts={ts} ({wall})"


def _describe(decision: Decision) -> str:
    if isinstance(decision, Dispatch | Pend):
        return f"{decision.op} job {decision.jobid}"
    return decision.op


def decision_diff(recorded: Decision, made: Decision) -> str | None:
    """The first difference between a recorded and a replayed decision, or None; the
    text says which side is the recording and which the replay.

    DISPATCH: job allocation equality; PEND: jobid and main reason only (bug-1845);
    others: every field.
    """
    if recorded.op != made.op:
        return f"recorded {_describe(recorded)}, replayed {_describe(made)}"
    if isinstance(recorded, Dispatch) and isinstance(made, Dispatch):
        if recorded.jobid != made.jobid:
            return f"recorded DISPATCH job {recorded.jobid}, replayed DISPATCH job {made.jobid}"
        why = job_alloc_diff(recorded.alloc, made.alloc, sides=SIDES)
        return None if why is None else f"DISPATCH job {made.jobid}: alloc.{why}"
    if isinstance(recorded, Pend) and isinstance(made, Pend):
        if recorded.jobid != made.jobid:
            return f"recorded PEND job {recorded.jobid}, replayed PEND job {made.jobid}"
        if recorded.reason.main != made.reason.main:
            return (
                f"PEND job {made.jobid}: main reason: recorded {recorded.reason.main.value}, "
                f"replayed {made.reason.main.value}"
            )
        return None
    if recorded != made:
        left, right = decision_fields(recorded), decision_fields(made)
        for key in left:
            if left[key] != right.get(key):
                return (
                    f"{_describe(made)}: {key}: recorded {left[key]!r}, replayed {right.get(key)!r}"
                )
    return None


#: How a verification mismatch names its two sides.
SIDES = ("recorded", "replayed")


class ReplayError(ValueError):
    """A replay that cannot be done (bad file, no snapshot, version or config
    mismatch, a recording cut short); the message is one line for the user."""


@dataclass(slots=True)
class RunStats:
    """What one replay run did: counts, job times (ns), rejected events."""

    events: int = 0
    decisions: dict[str, int] = field(default_factory=dict)
    submits: dict[int, int] = field(default_factory=dict)
    starts: dict[int, int] = field(default_factory=dict)
    ends: dict[int, int] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)
    rejected_count: int = 0

    def mean_wait_s(self) -> float | None:
        """Mean wait (s) of the jobs that started in this run (None: none started)."""
        waits = [
            (start - self.submits[jobid]) / NS
            for jobid, start in self.starts.items()
            if jobid in self.submits
        ]
        return statistics.fmean(waits) if waits else None


@dataclass(slots=True)
class ReplayResult:
    """The outcome of ``replay``.

    Attributes:
        snapshot_line, snapshot_ts: the snapshot the replay started from.
        stats: the replayed run.
        mismatches: the first ``MAX_SHOWN`` verification mismatches, one line each.
        mismatch_count: all of them.
        paused_at: ts where a non-interactive run stopped at ``pause_at``, else None.
        pause_summary: the state summary printed there.
        incomplete: why the recording is incomplete (no END line; replayed with
            ``force``), else None.
        wall_s: seconds the replay took.
    """

    snapshot_line: int
    snapshot_ts: int
    stats: RunStats
    mismatches: list[str] = field(default_factory=list)
    mismatch_count: int = 0
    paused_at: int | None = None
    pause_summary: str = ""
    incomplete: str | None = None
    wall_s: float = 0.0


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """The simulation driver's options (``xce-sched replay``).

    Attributes:
        start_ts: start from the latest snapshot at or before this ns (None: the first).
        speed: 0 as fast as possible; N > 0 replays N× real time (1: real time).
        pause_at: stop at this ns with a state summary (None: never).
        verify: compare every decision with the recorded one.
        force: go on despite a format-version or configuration-hash mismatch, or a
            recording cut short (no END line).
    """

    start_ts: int | None = None
    speed: float = 0.0
    pause_at: int | None = None
    verify: bool = False
    force: bool = False


def _header(path: Path, lines: Iterator[Line], force: bool) -> Header:
    first = next(lines, None)
    if first is None:
        raise ReplayError(f"{path}: empty file, no HEADER")
    if first.type != "HEADER":
        raise ReplayError(f"{path}:{first.number}: the first line is {first.type}, not HEADER")
    try:
        header = Header.model_validate(first.data)
    except ValidationError as exc:
        raise ReplayError(f"{path}:1: HEADER {describe(exc)}") from None
    major = header.version.split(".")[0]
    if major != RECORDING_VERSION.split(".")[0] and not force:
        raise ReplayError(
            f"{path}: recording format {header.version} is not {RECORDING_VERSION}, "
            "the one this scheduler replays (--force to try anyway)"
        )
    return header


@dataclass(frozen=True, slots=True)
class StartPoint:
    """Where a replay starts: the recording's HEADER, the SNAPSHOT line chosen, its
    first SNAPSHOT line (whose ts is the recording's time origin, ns), and whether
    a round was owed at the chosen one: an event other than BEGIN_ROUND came last
    before it, so it fell inside an instant, before that instant's round."""

    header: Header
    line: Line
    first: Line
    round_owed: bool = False

    @property
    def origin_ts(self) -> int:
        """The recording's time origin: its first SNAPSHOT's ts, ns."""
        return self.first.ts


def find_snapshot(path: Path, start_ts: int | None, force: bool) -> StartPoint:
    """The HEADER, the snapshot line to start from (the latest at or before
    ``start_ts``, default the first) and the recording's origin. Reads the file up
    to the first snapshot after ``start_ts``.

    Raises:
        ReplayError: no HEADER, a bad HEADER, another format version or a HEADER
            whose configuration hash is not its first snapshot's (unless
            ``force``), no snapshot (at or before ``start_ts``).
        RecordingError: an unreadable file or line.
    """
    # A file cut short may still hold the snapshot: whoever reads on says so.
    lines = read_lines(path, require_end=True)
    header = _header(path, lines, force)
    chosen: Line | None = None
    first: Line | None = None
    last_event = owed = ""  # the type of the last event line, and before ``chosen``
    with suppress(IncompleteRecording):
        for line in lines:
            if line.type == "HEADER":
                raise ReplayError(f"{path}:{line.number}: a second HEADER")
            if line.type != "SNAPSHOT":
                if line.type != "DECISION":
                    last_event = line.type
                continue
            if first is None:
                first = line
            if start_ts is not None and line.ts > start_ts:
                break
            chosen, owed = line, last_event
            if start_ts is None:
                break
    if first is None:
        raise ReplayError(
            f"{path}: no SNAPSHOT line to start from (an event file of xce-sched events "
            "is replayed as --sim-alt-events of the recording it was made for)"
        )
    if chosen is None:
        raise ReplayError(
            f"{path}: no snapshot at or before {format_ts(start_ts or 0)}; "
            f"the first is at {format_ts(first.ts)} (line {first.number})"
        )
    try:
        config = CoreSnapshot.model_validate(first.data["data"]).config
    except (ValidationError, KeyError, TypeError):
        raise ReplayError(
            f"{path}:{first.number}: the SNAPSHOT holds no valid core state"
        ) from None
    if config_hash(config) != header.config_hash and not force:
        raise ReplayError(
            f"{path}: the HEADER's configuration hash does not match the configuration of "
            f"its first snapshot (line {first.number}): the file was edited or mixed "
            "(--force to replay anyway)"
        )
    return StartPoint(header, chosen, first, owed not in ("", "BEGIN_ROUND"))


def load_start(path: Path, line: Line) -> CoreSnapshot:
    """The core state of a SNAPSHOT line: the one a replay starts from
    (``StartPoint.line`` or ``.first``), or a later one it checks (``_Run.check_snapshot``).

    Raises:
        ReplayError: the SNAPSHOT's data is not a valid core state (named by line).
    """
    try:
        return CoreSnapshot.model_validate(line.data.get("data"))
    except ValidationError as exc:
        raise ReplayError(f"{path}:{line.number}: SNAPSHOT data.{describe(exc)}") from None


def lines_after(
    path: Path,
    after_line: int,
    *,
    require_end: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[Line]:
    """The lines of ``path`` after line ``after_line`` (see ``read_lines`` for
    ``require_end`` and ``progress``)."""
    for line in read_lines(path, require_end=require_end, progress=progress):
        if line.number > after_line:
            yield line


def _state_summary(core: SchedCore, stats: RunStats) -> str:
    jobs = core.state.jobs.values()
    count = {state: 0 for state in (JobState.PEND, JobState.RUN, JobState.SUSP)}
    for job in jobs:
        count[job.state] += 1
    hosts = core.state.host_order
    used = sum(h.used for h in hosts)
    decisions = ", ".join(f"{op} {n}" for op, n in sorted(stats.decisions.items())) or "none"
    return (
        f"{format_ts(core.last_ts)}: {stats.events} events replayed; jobs pending "
        f"{count[JobState.PEND]}, running {count[JobState.RUN]}, suspended "
        f"{count[JobState.SUSP]}; {len(hosts)} hosts, {used}/{core.state.capacity} slots "
        f"used; decisions {decisions}"
    )


class _Run:
    """One pass of events through one core, with optional verification."""

    def __init__(
        self,
        snapshot: CoreSnapshot,
        path: Path,
        registry: PluginRegistry | None,
        verify: bool,
        tolerate_rejects: bool,
    ) -> None:
        self.made: list[Decision] = []
        self.core = load_snapshot(snapshot, on_decision=self.made.append, registry=registry)
        self.path = path
        self.verify = verify
        self.tolerate_rejects = tolerate_rejects
        self.stats = RunStats()
        self.stats.submits = {job.jobid: job.submit_ts for job in snapshot.jobs}
        self.mismatches: list[str] = []
        self.mismatch_count = 0
        self._event: Line | None = None
        self._recorded: list[Line] = []

    def _mismatch(self, text: str) -> None:
        self.mismatch_count += 1
        if len(self.mismatches) < MAX_SHOWN:
            self.mismatches.append(text)

    def push(self, line: Line) -> None:
        """Push one event line (after settling the previous event's decisions).

        Raises:
            ReplayError: the line is not a valid event, or goes back in time.
        """
        self.settle()
        try:
            event: CoreEvent = EVENT_ADAPTER.validate_python(line.data)
        except ValidationError as exc:
            raise ReplayError(
                f"{self.path}:{line.number}: {line.type} {describe(exc, skip=1)}"
            ) from None
        if event.ts < self.core.last_ts:
            raise ReplayError(
                f"{self.path}:{line.number}: {line.type} at {format_ts(event.ts)} goes back "
                f"in time from {format_ts(self.core.last_ts)}"
            )
        if self._push_event(event, f"line {line.number}"):
            self._event = line

    def _push_event(self, event: CoreEvent, where: str) -> bool:
        try:
            self.core.push_event(event)
        except EventError as exc:
            self.stats.rejected_count += 1
            text = f"{where}: {exc}"
            if len(self.stats.rejected) < MAX_SHOWN:
                self.stats.rejected.append(text)
            if not self.tolerate_rejects:
                self._mismatch(f"{format_ts(event.ts)} {text}")
            self.made.clear()
            return False
        self.stats.events += 1
        if isinstance(event, JobsPush):
            for job in event.payload.jobs:
                self.stats.submits[job.jobid] = job.submit_ts
        elif isinstance(event, JobStateChange) and event.payload.state in _ENDED:
            self.stats.ends[event.payload.jobid] = event.ts
        return True

    def cut_short(self) -> None:
        """The recording stops here, so the last event's decisions may be recorded
        only in part: they are not verified."""
        self._event = None
        self._recorded = []

    def record(self, line: Line) -> None:
        """Take a recorded DECISION line that follows the current event."""
        if self.verify:
            self._recorded.append(line)

    def check_snapshot(self, line: Line) -> None:
        """Check a recorded periodic SNAPSHOT is a valid core state (a damaged one is
        a damaged recording, replayed from or not), and compare it with the replayed
        state when verifying.

        Raises:
            ReplayError: the SNAPSHOT's data is not a valid core state (named by line
                and field).
        """
        load_start(self.path, line)
        if not self.verify:
            return
        self.settle()
        mine = save_snapshot(self.core).model_dump(mode="json")
        theirs = line.data.get("data", {})
        for key in mine:
            # A field added since the recording was made is absent there: the same
            # state when it is empty here.
            recorded = theirs.get(key, mine[key] if mine[key] in ([], {}, None) else None)
            if key != "clock" and mine[key] != recorded:
                self._mismatch(
                    f"{format_ts(line.ts)} line {line.number} SNAPSHOT: {key} differs "
                    "from the replayed state"
                )
                return

    def settle(self) -> None:
        """Account for (and verify) the decisions of the last event pushed."""
        made = self.made.copy()  # the core appends to this very list
        self.made.clear()
        for decision in made:
            ops = self.stats.decisions
            ops[decision.op] = ops.get(decision.op, 0) + 1
            if isinstance(decision, Dispatch):
                self.stats.starts.setdefault(decision.jobid, decision.ts)
        if self.verify and self._event is not None:
            self._compare(self._event, made, self._recorded)
        self._recorded = []
        self._event = None

    def _compare(self, event: Line, made: list[Decision], recorded: list[Line]) -> None:
        for index in range(max(len(made), len(recorded))):
            mine = made[index] if index < len(made) else None
            line = recorded[index] if index < len(recorded) else None
            # Fast path: the line this writer would have written for our decision.
            if mine is not None and line is not None:
                tail = b"%s}" % dump_decision(mine)
                if line.raw.rstrip(b"\r\n").endswith(tail):
                    continue
            self._compare_one(event, index, mine, line)

    def _compare_one(
        self, event: Line, index: int, mine: Decision | None, line: Line | None
    ) -> None:
        context = f"{format_ts(event.ts)} line {event.number} {event.type} decision #{index + 1}"
        if line is None:
            assert mine is not None
            self._mismatch(f"{context}: extra: replayed {_describe(mine)}, not recorded")
            return
        try:
            theirs = parse_decision(line.data.get("payload"))  # type: ignore[arg-type]
        except ValidationError as exc:
            raise ReplayError(f"{self.path}:{line.number}: DECISION {describe(exc)}") from None
        if mine is None:
            self._mismatch(
                f"{context}: missing: recorded {_describe(theirs)} (line {line.number}), "
                "not replayed"
            )
            return
        why = decision_diff(theirs, mine)
        if why is not None:
            self._mismatch(f"{context} (line {line.number}): {why}")


#: Longest single wait of a paced replay, s: a long wait is slept in pieces, so it
#: never overflows ``time.sleep`` and Ctrl-C is felt at once.
_PACE_STEP_S = 0.25


def _pace(speed: float, first_ts: int | None, ts: int, wall_start: float) -> None:
    """Wait until wall time catches up with ``ts`` at ``speed`` (the driver waits)."""
    if speed <= 0 or first_ts is None:
        return
    due = wall_start + (ts - first_ts) / NS / speed
    while (delay := due - time.monotonic()) > 0:
        time.sleep(min(delay, _PACE_STEP_S))


def _replay_events(
    run: _Run,
    lines: Iterator[Line],
    options: ReplayOptions,
    pause: Callable[[str], bool] | None,
    result: ReplayResult,
    source: Path,
) -> None:
    wall_start = time.monotonic()
    first_ts: int | None = None
    paused = False
    try:
        for line in lines:
            kind = line.type
            if kind == "DECISION":
                run.record(line)
                continue
            if kind == "SNAPSHOT":
                run.check_snapshot(line)
                continue
            if kind == "END":
                continue  # read_lines checks that nothing follows it
            if kind in ("HEADER", "RUN_TIME"):
                what = "a second HEADER" if kind == "HEADER" else "a RUN_TIME line"
                raise ReplayError(
                    f"{source}:{line.number}: {what} (a recording holds none; RUN_TIME "
                    "lines are an event file's, for --sim-alt-events)"
                )
            if line.ts < result.snapshot_ts:
                raise ReplayError(
                    f"{source}:{line.number}: {kind} at {format_ts(line.ts)} is before the "
                    f"snapshot at {format_ts(result.snapshot_ts)}"
                )
            if options.pause_at is not None and not paused and line.ts > options.pause_at:
                paused = True
                if _pause(run, options.pause_at, pause, result):
                    return
            first_ts = line.ts if first_ts is None else first_ts
            _pace(options.speed, first_ts, line.ts, wall_start)
            run.push(line)
    except IncompleteRecording as exc:
        if not options.force:
            raise ReplayError(f"{exc} (--force replays what it holds)") from None
        result.incomplete = str(exc)
        run.cut_short()
    run.settle()
    if options.pause_at is not None and not paused:
        # A pause after the last event: the state then is the state at the end.
        _pause(run, options.pause_at, pause, result)


def _pause(
    run: _Run, pause_at: int, pause: Callable[[str], bool] | None, result: ReplayResult
) -> bool:
    """Pause at ``pause_at`` with the state summary; True when the replay stops there."""
    run.settle()
    summary = _state_summary(run.core, run.stats)
    if pause is not None and pause(summary):
        return False
    result.paused_at = pause_at
    result.pause_summary = summary
    return True


def replay(
    path: str | Path,
    options: ReplayOptions = ReplayOptions(),
    *,
    registry: PluginRegistry | None = None,
    pause: Callable[[str], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayResult:
    """Replay a recording (Req 10 AC 11-13).

    Args:
        path: the recording (``.jsonl`` or ``.jsonl.gz``).
        options: start point, pacing, pause, verification.
        registry: plugins; default: the built-ins.
        pause: called with the state summary at ``options.pause_at``; returns True
            to go on. None (non-interactive): the replay stops there.
        progress: called as ``progress(bytes read, file size)`` while reading.

    Raises:
        ReplayError: bad file (with its line number), no usable snapshot, version or
            configuration mismatch (unless ``force``), time going backwards, a
            recording cut short (no END line, unless ``force``).
    """
    path = Path(path)
    started = time.perf_counter()
    try:
        start = find_snapshot(path, options.start_ts, options.force)
        snapshot = load_start(path, start.line)
        result = ReplayResult(start.line.number, start.line.ts, RunStats())
        run = _Run(snapshot, path, registry, options.verify, tolerate_rejects=False)
        lines = lines_after(path, start.line.number, require_end=True, progress=progress)
        with batch_gc():
            _replay_events(run, lines, options, pause, result, path)
    except SnapshotError as exc:
        raise ReplayError(f"{path}: {exc}") from None
    except RecordingError as exc:
        raise ReplayError(str(exc)) from None
    result.stats = run.stats
    result.mismatches = run.mismatches
    result.mismatch_count = run.mismatch_count
    result.wall_s = time.perf_counter() - started
    return result


def interactive_pause(summary: str) -> bool:
    """Print the summary and wait for Enter on a terminal (True: go on)."""
    print(f"paused at {summary}", file=sys.stderr)
    try:
        input("press Enter to continue, Ctrl-D to stop: ")
    except EOFError:
        return False
    return True


def as_dict(result: ReplayResult) -> dict[str, Any]:
    """A JSON-ready summary of a replay."""
    stats = result.stats
    mean = stats.mean_wait_s()
    return {
        "snapshot_line": result.snapshot_line,
        "snapshot_ts": result.snapshot_ts,
        "events": stats.events,
        "decisions": dict(sorted(stats.decisions.items())),
        "rejected_events": stats.rejected_count,
        "mismatches": result.mismatch_count,
        "mean_wait_s": None if mean is None else round(mean, 3),
        "complete": result.incomplete is None and result.paused_at is None,
        "wall_s": round(result.wall_s, 3),
    }


def explain_job(
    path: str | Path,
    jobid: int,
    at_ts: int | None = None,
    *,
    at_offset_s: int | None = None,
    registry: PluginRegistry | None = None,
) -> str:
    """Why job ``jobid`` was where it was at logical time ``at_ts`` (ns) of a recording
    (default: the end), in plain words: pending with its reason and host counts and
    when and where it is expected to start, or why no start is predicted
    (``start_estimate``), running or suspended on its hosts, not yet submitted, or
    ended.

    ``at_offset_s`` gives the time instead as seconds after the recording's first
    SNAPSHOT (a simulation's trace origin, the times of its per-job CSV).

    The state is rebuilt by replaying the recording from the latest snapshot at or
    before that time through every event up to it.

    Raises:
        ReplayError: as ``replay`` does for a bad file or start point; the job never
            appears in the recording; the recording was cut short before that time
            (no END line after it).
    """
    path = Path(path)
    try:
        if at_offset_s is not None:
            at_ts = find_snapshot(path, None, force=True).origin_ts + at_offset_s * NS
        start = find_snapshot(path, at_ts, force=True)
        run = _Run(
            load_start(path, start.line), path, registry, verify=False, tolerate_rejects=True
        )
        for line in lines_after(path, start.line.number, require_end=True):
            if line.type in ("DECISION", "SNAPSHOT", "END", "RUN_TIME"):
                continue
            if at_ts is not None and line.ts > at_ts:
                break
            run.push(line)
        run.settle()
    except IncompleteRecording as exc:
        raise ReplayError(f"{exc}: the state at that time is not known") from None
    except RecordingError as exc:
        raise ReplayError(str(exc)) from None
    except SnapshotError as exc:
        raise ReplayError(f"{path}: {exc}") from None
    core = run.core
    now = core.last_ts if at_ts is None else at_ts
    when = format_ts(now)
    job = core.state.jobs.get(jobid)
    if job is None:
        return f"job {jobid} at {when}: {_absent(path, jobid, now)}"
    if job.state is not JobState.PEND:
        hosts = " ".join(h.host for h in job.alloc.hosts) if job.alloc else ""
        if job.state is JobState.RUN:
            return f"job {jobid} at {when}: running on {hosts}"
        if job.preempted:
            hold = core.preemptor.resume_hold(job) or "it resumes at the next round"
            return (
                f"job {jobid} at {when}: suspended by a preemption; it resumes on {hosts} "
                f"once they have room and no higher-priority job waits for it (now: {hold})"
            )
        return f"job {jobid} at {when}: suspended by the controller on {hosts}"
    reason = core.explain(jobid)
    if reason is None:
        return f"job {jobid} at {when}: pending, not yet considered by a scheduling round"
    estimate = start_estimate(core, jobid)
    factors = priority_factors(core, job, now)
    return (
        f"job {jobid} at {when}: pending: {render(reason)}"
        + (estimate and f"; {estimate}")
        + (factors and f"; {factors}")
    )


def priority_factors(core: SchedCore, job: JobInfo, now: int) -> str:
    """The figures a pending job's place in its picker's order rests on at ``now``
    (ns), in words (as Slurm's ``sprio`` and LSF's ``bhpart`` show them): what the
    global picker's ``factors(job, now)`` gives (the ``fairshare`` picker's usage,
    shares and priorities); "" for a picker that gives none."""
    factors = getattr(core.picker, "factors", None)
    if factors is None:
        return ""
    figures = factors(job, now)
    if not figures:
        return ""
    shown = ", ".join(
        f"{name.replace('_slot_s', ' (slot-s)').replace('_', ' ')} {value:,.6g}"
        for name, value in figures.items()
    )
    return f"priority factors ({core.picker.name}): {shown}"


def start_estimate(core: SchedCore, jobid: int) -> str:
    """When and where a pending job is expected to start, by the core's last round, in
    words (``SchedCore.expected_start``), or why no start is predicted
    (``SchedCore.no_expected_start``); "" for a job neither applies to (not pending,
    or not yet considered by a round)."""
    reservation = core.expected_start(jobid)
    if reservation is not None:
        hosts = len({host for host, _ in reservation.hosts})
        where = _count(hosts, "host")
        if reservation.count:  # a reservation on counts: hosts are chosen at its start
            where = _count(reservation.slots, "slot") + " (hosts chosen when it starts)"
        text = f"expected to start at {format_ts(reservation.start_ts)} on {where}"
        text += " (reserved)"
        if reservation.running:
            text += (
                f"; estimate from the run limits of {_count(reservation.running, 'running job')}"
            )
        return text
    why = core.no_expected_start(jobid)
    if why is None:
        return ""
    policy = why.policy
    name = f"the {policy.name} backfill policy"
    if policy.domain is not None:
        name += f" of queue {policy.domain!r}"
    if why.code is NoEstimateCode.GREEDY:
        return f"no start time is predicted under {name}"
    if why.code is NoEstimateCode.NO_INSTANT:
        return (
            "no start time can be predicted: jobs it waits for have no run limit, or one "
            "that ends past the clock's end (2554-07-21)"
        )
    if why.code is NoEstimateCode.BEYOND_DEPTH:
        among = "the one job" if policy.depth == 1 else f"among the {policy.depth:,} jobs"
        return f"no start time is predicted: it is not {among} {name} reserves for" + _reserved_for(
            core, why.ahead
        )
    return (
        "no start time is predicted: the last round made no reservation for it (a job "
        "its queue holds, one waiting for a preemption, or one that can never run gets none)"
    )


#: How many of the jobs a policy reserved for ``explain`` names.
_NAMED = 5


def _reserved_for(core: SchedCore, ahead: tuple[int, ...]) -> str:
    """`` (job 12, expected to start at ...)``: the jobs a policy reserved for ahead of
    another, the first few by number, and when the one job is expected to start
    (under ``easy`` and ``strict``, the job that holds the others back)."""
    if not ahead:
        return ""
    if len(ahead) == 1:
        reservation = core.expected_start(ahead[0])
        when = (
            ""
            if reservation is None
            else f", expected to start at {format_ts(reservation.start_ts)}"
        )
        return f" (job {ahead[0]}{when})"
    named = ", ".join(str(jobid) for jobid in ahead[:_NAMED])
    more = len(ahead) - _NAMED
    return f" (jobs {named}" + (f" and {more:,} more)" if more > 0 else ")")


def _count(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _absent(path: Path, jobid: int, at_ts: int) -> str:
    """Why ``jobid`` is not in the cluster at ``at_ts``: not submitted yet, or ended
    (how and when), from the recording's events.

    Raises:
        ReplayError: the job never appears in the recording (or in what a recording
            cut short holds).
    """
    submitted: int | None = None
    ended: tuple[int, str] | None = None
    cut = ""
    try:
        for line in read_lines(path, require_end=True):
            if line.type == "JOBS_PUSH":
                jobs = line.data.get("payload", {}).get("jobs", ())
                if any(isinstance(job, dict) and job.get("jobid") == jobid for job in jobs):
                    submitted = line.ts
            elif line.type == "JOB_STATE_CHANGE" and line.ts <= at_ts:
                payload = line.data.get("payload", {})
                if payload.get("jobid") == jobid and payload.get("state") in ("DONE", "EXIT"):
                    ended = (line.ts, str(payload["state"]))
    except IncompleteRecording as exc:
        cut = f" ({exc})"
    if submitted is None:
        holds = "what the recording holds" if cut else "the recording"
        raise ReplayError(f"{path}: job {jobid} never appears in {holds}{cut}")
    if submitted > at_ts:
        return f"not submitted yet (it is submitted at {format_ts(submitted)})"
    if ended is not None:
        how = "finished" if ended[1] == "DONE" else "ended with EXIT (failed, killed or rejected)"
        return f"{how} at {format_ts(ended[0])}"
    return "not in the cluster"
