"""A closed-loop cluster emulator: controller and hosts, in virtual time.

It plays what a real cluster would do around the scheduling core: it pushes the
configuration and the hosts, submits each job at its submit time (``JOBS_PUSH``),
starts a scheduling round (``BEGIN_ROUND``), runs each dispatched job for its run
time and then reports it finished (``JOB_STATE_CHANGE`` DONE), and turns away a job
the core reports as larger than the cluster (``JOB_STATE_CHANGE`` EXIT), as a
controller rejects it. A job submitted to a queue the configuration says is closed
is refused at submission (LSF's ``bsub`` fails), never pushed, and recorded as
rejected.

Preemption, as the hosts' workers answer it (Req 6):

* ``PREEMPT``: after the round, at the same instant, each victim still running is
  suspended (SIGTSTP): ``JOB_STATE_CHANGE`` SUSP, in the decision's victim order. Its
  finish is called off (a stale ``FINISH`` still in the agenda is ignored: each
  job's valid finish is the agenda entry whose ``seq`` it remembers) and it keeps
  the run time it has left. Then a further round runs at the same instant, where
  the core, having taken back what the victims held, can start the preemptor.
* ``RESUME``: the core has taken the hosts back and marked the job running; the
  job runs its remaining time from now on. Nothing is pushed (the core needs no
  confirmation).
* ``RUNLIMIT``: a job of a queue with ``run_limit_s`` whose run time is longer is
  killed when its running time (time suspended does not count) reaches the
  limit: ``JOB_STATE_CHANGE`` EXIT at that instant, recorded as killed.

A suspended job is alive: the run goes on until it has been resumed and finished.

**What-if** (``xce_driver.whatif``): the same loop can start from a core restored from
a snapshot (``adopt``: its jobs pending, running and suspended, each running one with
the run time it has left) and push *input* events at their times: a file's
submissions, host and queue changes, pushed as they are (``inputs``); each counts as
a change, as a submission does. A job's run time is then given per job
(``run_plans``); a job dispatched with none runs until the end (``endless``), so
the figures say it never finished.

The agenda is SimPy's heap: ``(ts_ns, EventPriority, seq, payload)``; ``seq`` comes
from a counter, so ties never compare payloads and the order is the same in every
process. At one instant the order is fixed:

| priority | what | why |
|---|---|---|
| FINISH (0) | jobs ending (or killed) now give slots back | a round now sees those slots free |
| INPUT (1) | input events due now, in their order (a what-if's file) | a round now sees them |
| SUBMIT (2) | jobs submitted now, in one ``JOBS_PUSH`` | a round at this instant sees them |
| ROUND (3) | ``BEGIN_ROUND`` | last, so it sees everything of this instant |

Rounds come at every instant where something changed (a finish, a submission or
an input),
or, with a round interval, on a fixed grid of that interval; a job that finishes at
the instant it started, and a preemption whose victims were suspended, get a further
round at that instant either way. On the grid,
rounds stop once nothing runs, no submission is left to come and a round has seen
the last change: further rounds could decide nothing new, and jobs still pending
then (no plan will ever fit them) never start, as without a round interval.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Protocol

from xce_core.alloc.outcome import Reservation
from xce_core.core import SchedCore
from xce_core.errors import EventError
from xce_schemas import (
    BeginRound,
    ConfigPush,
    CoreEvent,
    Decision,
    Dispatch,
    HostSpec,
    JobSpec,
    JobsPush,
    JobState,
    JobStateChange,
    JobUpdate,
    Pend,
    PendingCode,
    Preempt,
    QueueSpec,
    QueueStatus,
    QueueUpdate,
    Resume,
    SchedulerConfig,
    WorkersPush,
    next_opening,
    parse_window,
)
from xce_schemas.events import (
    ConfigPushPayload,
    JobRequest,
    JobsPushPayload,
    JobStateChangePayload,
    WorkersPushPayload,
)

from xce_driver.workloads.mapping import SimJob

NS = 1_000_000_000
#: Event times are ns below 2**64 (the wire's limit, in the year 2554).
END_OF_TIME_NS = 2**64


class SimulationTimeError(ValueError):
    """Virtual time would pass ``END_OF_TIME_NS``; the message names the job or round."""


class SimulationLoopError(RuntimeError):
    """The core kept preempting at one instant without end (a core bug, never a
    workload's fault); the message names the instant."""


#: Why the emulator (as the controller) turned a job away: ``JobRecord.rejected_reason``.
REJECT_LARGER_THAN_CLUSTER = "larger_than_cluster"
REJECT_QUEUE_CLOSED = "queue_closed"


class EventPriority(IntEnum):
    """Order of agenda items at one instant (see the module's table)."""

    FINISH = 0
    INPUT = 1
    SUBMIT = 2
    ROUND = 3


@dataclass(slots=True)
class JobRecord:
    """What happened to one job in the simulation (times in s from the trace origin).

    Attributes:
        jobid, submit_s, run_s, tasks: the job as submitted (``run_s``: the run time
            it needs, s).
        start_s: first dispatch, None for a job that never started.
        end_s: when it finished or was killed, None for one that never ended (never
            started, or still suspended when the run ended).
        hosts: host names of its allocation, one per slot record.
        rejected: turned away by the controller, never run; ``rejected_reason``
            says why: ``larger_than_cluster`` (the core pended it as
            ``JOB_LARGER_THAN_CLUSTER``) or ``queue_closed`` (submitted to a closed
            queue, refused at submission).
        times_suspended: how many times it was suspended by preemption.
        times_resumed: how many times it was resumed after a suspension: as many
            as ``times_suspended``, one less when it was left suspended.
        suspended_s: seconds it spent suspended in all.
        killed_by_runlimit: killed (EXIT) when its running time reached its
            queue's ``run_limit_s``; its ``end_s`` is then the kill time.
        run_limit_s: the job's own run limit, s, as submitted (or last changed by a
            ``JOB_UPDATE``); None: it gave none. An estimate for backfilling, not
            a kill: only its queue's ``run_limit_s`` kills a job.
        first_predicted_start_s: the start the core first predicted for it (the
            first reservation a round made it, ``SchedCore.expected_start``), s from
            the trace origin; None: no round predicted one (it never waited under a
            backfill policy that reserves, or no emulator asked).
        user, queue: its user and queue as submitted.
        suspensions: each suspension as (from, to), s from the origin, in order;
            ``to`` None while it lasts (left suspended). What the time series
            leave out of a job's running time (``metrics.time_series``).
    """

    jobid: int
    submit_s: int
    run_s: int
    tasks: int
    start_s: int | None = None
    end_s: int | None = None
    hosts: tuple[str, ...] = ()
    rejected: bool = False
    rejected_reason: str = ""
    times_suspended: int = 0
    times_resumed: int = 0
    suspended_s: int = 0
    killed_by_runlimit: bool = False
    run_limit_s: int | None = None
    first_predicted_start_s: int | None = None
    user: str = ""
    queue: str = ""
    suspensions: list[tuple[int, int | None]] = field(default_factory=list)

    def suspend(self, at_s: int) -> None:
        """Count a suspension starting at ``at_s`` (s from the origin)."""
        self.times_suspended += 1
        self.suspensions.append((at_s, None))

    def resume(self, at_s: int) -> None:
        """Count the resume, at ``at_s``, of the suspension that lasts: its time
        is added to ``suspended_s``."""
        since, _ = self.suspensions[-1]
        self.suspensions[-1] = (since, at_s)
        self.suspended_s += at_s - since
        self.times_resumed += 1

    @property
    def left_suspended(self) -> bool:
        """Suspended by a preemption and not resumed (nor ended) since."""
        return self.end_s is None and self.times_suspended > self.times_resumed

    @property
    def ran_s(self) -> int | None:
        """Seconds it ran (suspended time left out), None when it never ended."""
        if self.start_s is None or self.end_s is None:
            return None
        return self.end_s - self.start_s - self.suspended_s


class Submitted(Protocol):
    """A job as submitted, whatever carried it (a ``JobSpec``, the core's job, a
    snapshot's): what its record starts from."""

    @property
    def jobid(self) -> int: ...
    @property
    def submit_ts(self) -> int: ...
    @property
    def tasks(self) -> int: ...
    @property
    def queue(self) -> str: ...
    @property
    def user(self) -> str: ...
    @property
    def run_limit_s(self) -> int | None: ...


def record_of(job: Submitted, submit_s: int, run_s: int) -> JobRecord:
    """A new record of ``job``, submitted ``submit_s`` after the origin, running
    ``run_s`` (0: not known)."""
    return JobRecord(
        job.jobid,
        submit_s,
        run_s,
        job.tasks,
        run_limit_s=job.run_limit_s,
        user=job.user,
        queue=job.queue,
    )


@dataclass(frozen=True, slots=True)
class RunPlan:
    """How long a job runs once started, when the emulator is told per job (a
    what-if) rather than by a ``SimJob``.

    Attributes:
        run_ns: running time until it ends, ns (time suspended left out); for a job
            running when the emulator adopts it, the time it has left.
        exit: it ends with EXIT (it failed) instead of DONE.
        killed_by_runlimit: its end is a run-limit kill (known from the run it comes
            from); its queue's limit is then not applied again.
        limited: its queue's run limit applies (a run time of its own, not one the
            limit already cut short).
    """

    run_ns: int
    exit: bool = False
    killed_by_runlimit: bool = False
    limited: bool = True


@dataclass(slots=True)
class JobRun:
    """The emulator's state of one started job, in ns of the emulator's time (shared
    by this virtual-time emulator and the live one, ``xce_driver.live.emulate``).

    ``left_ns``: run time still to go (None: not known, it never ends);
    ``limit_left_ns``: running time before its queue's run limit kills it (None: no
    limit); ``since_ns``: start of the current stretch of running (or of
    suspension); ``finish_seq``: ``seq`` of the agenda entry that is its valid
    finish (-1 while suspended or endless; the live emulator does not use it);
    ``exits``: it ends with EXIT; ``killed``: its end is a run-limit kill.
    """

    left_ns: int | None
    limit_left_ns: int | None
    since_ns: int
    finish_seq: int = -1
    suspended: bool = False
    exits: bool = False
    killed: bool = False

    @classmethod
    def start(cls, job: SimJob, queue: QueueSpec | None, now: int) -> JobRun:
        """A job dispatched at ``now`` (ns): its run time and its queue's run limit."""
        return cls(job.run_s * NS, _limit_ns(queue), now)

    @classmethod
    def planned(cls, plan: RunPlan | None, queue: QueueSpec | None, now: int) -> JobRun:
        """A job dispatched (or adopted running) at ``now`` (ns) that runs as ``plan``
        says (None: no run time known: it never ends)."""
        if plan is None:
            return cls(None, None, now)
        limit = _limit_ns(queue) if plan.limited else None
        return cls(plan.run_ns, limit, now, exits=plan.exit, killed=plan.killed_by_runlimit)

    def run_from(self, now: int) -> int | None:
        """Let the job run from ``now`` (ns); returns how long until its finish, ns:
        when its run time or its run limit is used up, whichever comes first (None:
        it never ends)."""
        self.since_ns = now
        self.suspended = False
        if self.left_ns is None:
            return None
        span = self.left_ns
        if self.limit_left_ns is not None:
            span = min(span, self.limit_left_ns)
        return span

    @property
    def killed_at_finish(self) -> bool:
        """Whether the finish of the current stretch is a run-limit kill (EXIT): the
        limit comes before the run time is used up, or the run it comes from says so."""
        if self.killed:
            return True
        left = self.left_ns
        return left is not None and self.limit_left_ns is not None and self.limit_left_ns < left

    @property
    def end_state(self) -> JobState:
        """How it ends at its finish: EXIT when killed or failing, else DONE."""
        return JobState.EXIT if self.exits or self.killed_at_finish else JobState.DONE

    def suspend(self, now: int) -> None:
        """Suspend the running job at ``now`` (ns): what it ran is taken off its run
        time and its limit."""
        ran = now - self.since_ns
        if self.left_ns is not None:
            self.left_ns -= ran
        if self.limit_left_ns is not None:
            self.limit_left_ns -= ran
        self.since_ns = now
        self.suspended = True
        self.finish_seq = -1


def _limit_ns(queue: QueueSpec | None) -> int | None:
    """The queue's run limit, ns (None: none)."""
    return None if queue is None or queue.run_limit_s is None else queue.run_limit_s * NS


def job_priority(job: SimJob, queue: QueueSpec | None) -> int:
    """The priority a job is submitted with: its own, else its queue's (0 for a queue
    the configuration does not define)."""
    if job.priority is not None:
        return job.priority
    return 0 if queue is None else queue.priority


def job_request(job: SimJob, queue: QueueSpec | None) -> JobRequest:
    """The request a controller sends for ``job`` (priority resolved from ``queue``)."""
    return JobRequest.model_validate(_request_fields(job, queue))


def job_spec(job: SimJob, queue: QueueSpec | None, submit_ts: int) -> JobSpec:
    """``job`` as the core takes it, submitted at ``submit_ts`` (ns): the fields of
    ``job_request`` and the submission time."""
    return JobSpec.model_validate({**_request_fields(job, queue), "submit_ts": submit_ts})


def _request_fields(job: SimJob, queue: QueueSpec | None) -> dict[str, object]:
    return {
        "jobid": job.jobid,
        "queue": job.queue,
        "user": job.user,
        "project": job.project,
        "priority": job_priority(job, queue),
        "tasks": job.tasks,
        "resreq": job.resreq,
        "run_limit_s": job.run_limit_s,
    }


def refused_at_submission(queue: QueueSpec | None) -> bool:
    """Whether a controller refuses a job of this queue at submission (``bsub`` on a
    closed queue fails); the job is then recorded as ``REJECT_QUEUE_CLOSED``."""
    return queue is not None and queue.status is QueueStatus.CLOSED


def rejected_by_controller(decision: Pend) -> bool:
    """Whether a controller answers this ``PEND`` by rejecting the job (EXIT): it can
    never run on this cluster (``REJECT_LARGER_THAN_CLUSTER``)."""
    return decision.reason.main in _REJECT


@dataclass(slots=True)
class EmulatorStats:
    """Counts of what crossed the core's boundary.

    ``done``: jobs finished (or killed) or rejected; ``suspensions``: victims
    suspended on ``PREEMPT``; ``resumes``: jobs resumed on ``RESUME``.
    """

    events: int = 0
    rounds: int = 0
    done: int = 0
    suspensions: int = 0
    resumes: int = 0
    decisions: dict[str, int] = field(default_factory=dict)


class Workload:
    """The jobs of a workload on its cluster, their queues and what happened to them:
    the state both emulators keep (this one and ``xce_driver.live.emulate``).

    Attributes:
        records: every job's ``JobRecord``, by jobid.
        stats: counts of what crossed the core's boundary.
    """

    def __init__(
        self, jobs: Sequence[SimJob], hosts: Sequence[HostSpec], config: SchedulerConfig
    ) -> None:
        self._jobs = {job.jobid: job for job in jobs}
        self._hosts = tuple(hosts)
        self._config = config
        self._queues: dict[str, QueueSpec] = {queue.name: queue for queue in config.queues}
        self.records = {
            job.jobid: JobRecord(
                job.jobid,
                job.submit_s,
                job.run_s,
                job.tasks,
                run_limit_s=job.run_limit_s,
                user=job.user,
                queue=job.queue,
            )
            for job in jobs
        }
        self.stats = EmulatorStats()

    def _reject(self, jobid: int, reason: str) -> None:
        """Turn a job away as the controller (``REJECT_*`` reason); it counts as done."""
        record = self.records[jobid]
        record.rejected = True
        record.rejected_reason = reason
        self.stats.done += 1


class ClusterEmulator(Workload):
    """Drives a scheduling core through a workload in virtual time.

    Args:
        jobs: the workload, in submit order.
        hosts: the cluster's hosts, pushed once at the start.
        config: the scheduler configuration pushed first.
        push: delivers one event to the core (and to whatever records it); the
            core's decisions must reach ``on_decision`` while it runs. It raises
            ``EventError`` when the core refuses the event (only inputs may be
            refused: see ``refused``).
        origin_s: epoch second of the workload's time 0; event ts are
            ``(origin_s + t) * 10**9`` ns.
        round_interval_s: rounds on this grid (s) instead of at every change.
        inputs: events pushed as they are at their ``ts`` (a what-if's file), in
            order; their times must not go back.
        controller_rounds: the inputs' ``BEGIN_ROUND`` events are the rounds (a
            controller's ticks, as a live recording's): while inputs remain the
            emulator makes no round of its own (a finish, a submission or a
            suspension waits for the next tick); after the last one it goes on with
            rounds on the grid of ``round_interval_s`` from the last tick.
        run_plans: how long jobs run, by jobid, for jobs that are not in ``jobs``
            (submitted by ``inputs`` or adopted) or whose run time it overrides.
        reservations: gives the reservations of the core's last session (e.g.
            ``lambda: core.state.reservations.values()``); after each round the
            emulator keeps each job's first as its record's
            ``first_predicted_start_s``. None: no predictions are recorded (a core
            behind a bus).

    Attributes:
        refused: inputs the core refused, with its reason (a what-if's events
            that no longer apply); they changed nothing.
        endless: jobs dispatched (or adopted running) with no run time known:
            they never end.

    Raises:
        ValueError: a round interval that is not positive.
    """

    def __init__(
        self,
        jobs: Sequence[SimJob],
        hosts: Sequence[HostSpec],
        config: SchedulerConfig,
        push: Callable[[CoreEvent], None],
        *,
        origin_s: int = 0,
        round_interval_s: int | None = None,
        inputs: Sequence[CoreEvent] = (),
        run_plans: Mapping[int, RunPlan] | None = None,
        controller_rounds: bool = False,
        reservations: Callable[[], Iterable[Reservation]] | None = None,
    ) -> None:
        if round_interval_s is not None and round_interval_s <= 0:
            raise ValueError(f"round interval must be positive, not {round_interval_s}")
        super().__init__(jobs, hosts, config)
        self._push_to_core = push
        self._origin_ns = origin_s * NS
        self._interval_ns = None if round_interval_s is None else round_interval_s * NS
        self._inputs = tuple(inputs)
        self._inputs_left = len(self._inputs)
        self._controller_rounds = controller_rounds
        self._reservations = reservations
        self._anchor_ns = self._origin_ns  # where the round grid starts
        self._run_plans = dict(run_plans or {})
        self._queue_of = {job.jobid: job.queue for job in jobs}
        self.refused: list[tuple[CoreEvent, str]] = []
        self.endless: set[int] = set()
        self._agenda: list[tuple[int, EventPriority, int, int]] = []
        self._seq = itertools.count()
        self._decided: list[Decision] = []
        self._runs: dict[int, JobRun] = {}
        self._running = 0
        self._endless_running = 0  # of ``_running``: jobs with no finish to come
        self._pending = 0
        self._suspended = 0
        self._stale = 0  # agenda FINISH entries called off by a suspension
        self._next_round_ns: int | None = None
        self._window_held: dict[int, str] = {}  # jobid → queue, pending on QUEUE_WINDOW
        self._window_round_ns: int | None = None
        self._last_round_ns: int | None = None
        self._started = False

    # --- the core's side -----------------------------------------------------------

    def on_decision(self, decision: Decision) -> None:
        """Take one decision from the core (called during its session)."""
        counts = self.stats.decisions
        counts[decision.op] = counts.get(decision.op, 0) + 1
        if decision.op != "NEW_SESSION":
            self._decided.append(decision)

    # --- the loop ------------------------------------------------------------------

    def start(self) -> None:
        """Bring the cluster up: push the configuration and the hosts at the origin,
        and put every submission and input in the agenda. ``run`` does it when not
        done yet."""
        if self._started:
            return
        self._started = True
        start_ns = self._origin_ns
        self._push(ConfigPush(ts=start_ns, payload=ConfigPushPayload(config=self._config)))
        self._push(WorkersPush(ts=start_ns, payload=WorkersPushPayload(hosts=self._hosts)))
        self._schedule_arrivals()

    def adopt(
        self,
        core: SchedCore,
        *,
        history: Mapping[int, JobRecord] | None = None,
        round_owed: bool = False,
    ) -> None:
        """Take up, instead of ``start``, a core restored from a snapshot: its
        configuration, hosts and jobs are there already. Each job pending there
        waits; each running one runs the time its run plan gives from the core's
        time on (its plan's ``run_ns`` is the time it has left); each suspended one
        waits for its RESUME. Then every submission and input goes in the agenda.

        A snapshot may fall inside an instant, between what happened then and the
        emulator's answers to it; the rest of that instant is done here, as the
        emulator would have done it: the victims of a preemption in flight are
        suspended, a job pended as larger than the cluster is rejected, and the
        round owed at that instant (``round_owed``: a change came after the last
        round, or victims were just suspended) is put in the agenda (on a grid, at
        the grid's next round unless the snapshot's time is on it).

        Args:
            core: the restored core (its time is the snapshot's).
            history: what happened to its jobs before the snapshot (their records
                so far, as the emulator keeps them), by jobid; a job without one
                starts its record at the snapshot.
            round_owed: a round is owed at the snapshot's time.

        Raises:
            SimulationTimeError: a finish past the end of virtual time.
        """
        if self._started:
            return
        self._started = True
        now = core.last_ts
        self._queues = {name: queue.spec() for name, queue in core.state.queues.items()}
        history = history or {}
        for job in sorted(core.state.jobs.values(), key=lambda job: job.jobid):
            record = self._record(job)
            known = history.get(job.jobid)
            if known is not None:
                # The core's job is what it is now (a JOB_UPDATE may have changed
                # its run limit since it was submitted).
                record = self.records[job.jobid] = replace(
                    known, run_s=record.run_s, run_limit_s=job.run_limit_s
                )
            if job.state is JobState.PEND:
                self._pending += 1
                reason = job.pend_reason
                if reason is not None and reason.main is PendingCode.QUEUE_WINDOW:
                    self._window_held[job.jobid] = job.queue
                continue
            if known is None:
                record.start_s = self._s(job.start_ts)
                record.hosts = () if job.alloc is None else tuple(h.host for h in job.alloc.hosts)
            plan = self._plan(job.jobid)
            run = self._runs[job.jobid] = JobRun.planned(plan, self._queues.get(job.queue), now)
            if job.state is JobState.RUN:
                self._run_for(now, job.jobid, run)
                self._running += 1
            else:  # suspended before the snapshot, since its suspend_ts
                run.suspend(now)
                run.since_ns = job.suspend_ts
                if known is None:
                    record.suspend(self._s(job.suspend_ts))
                self._suspended += 1
        suspended = False
        for preemption in sorted(core.state.preemptions.values(), key=lambda p: p.preemptor):
            for victim in preemption.victims:
                suspended |= self._suspend(now, victim)
        for job in sorted(core.state.jobs.values(), key=lambda job: job.jobid):
            reason = job.pend_reason
            if job.state is JobState.PEND and reason is not None and reason.main in _REJECT:
                self._push(
                    JobStateChange(
                        ts=now, payload=JobStateChangePayload(jobid=job.jobid, state=JobState.EXIT)
                    )
                )
                self._reject(job.jobid, REJECT_LARGER_THAN_CLUSTER)
                self._pending -= 1
        self._schedule_arrivals()
        if not self._making_rounds():
            return  # the controller's next tick is the next round
        if suspended or (round_owed and (self._interval_ns is None or self._on_grid(now))):
            self._schedule(now, EventPriority.ROUND, _GRID_ROUND)
            if self._interval_ns is not None:
                self._next_round_ns = now
        elif self._interval_ns is not None:
            self._plan_grid_round(now)

    def _schedule_arrivals(self) -> None:
        for job in self._jobs.values():
            self._schedule(self._ns(job.submit_s), EventPriority.SUBMIT, job.jobid)
        for index, event in enumerate(self._inputs):
            self._schedule(event.ts, EventPriority.INPUT, index)

    def run(
        self, progress: Callable[[int], None] | None = None, *, until_ns: int | None = None
    ) -> dict[int, JobRecord]:
        """Run the workload to its end and return every job's record.

        Args:
            progress: called with the number of jobs done (finished, killed or
                rejected) whenever that number changes.
            until_ns: stop after this time, ns (a what-if's horizon): what comes
                later does not happen; None: run to the end.

        The run ends when nothing is left to happen; jobs that could never start
        (no plan ever fits) are left with ``start_s`` None, and a job suspended that
        the core never resumed, or one that never ends (``endless``), with
        ``end_s`` None.

        Raises:
            SimulationTimeError: virtual time would pass ``END_OF_TIME_NS``.
            SimulationLoopError: the core kept preempting at one instant.
        """
        self.start()
        reported = 0
        while self._agenda and (until_ns is None or self._agenda[0][0] <= until_ns):
            now = self._agenda[0][0]
            finished: list[int] = []
            inputs: list[int] = []
            submitted: list[int] = []
            round_due = False
            while self._agenda and self._agenda[0][0] == now:
                _, priority, seq, item = heapq.heappop(self._agenda)
                if priority is EventPriority.FINISH:
                    run = self._runs.get(item)
                    if run is None or run.finish_seq != seq:
                        self._stale -= 1  # called off by a suspension
                        continue
                    finished.append(item)
                elif priority is EventPriority.INPUT:
                    inputs.append(item)
                elif priority is EventPriority.SUBMIT:
                    submitted.append(item)
                else:
                    round_due = True
                    if item == _GRID_ROUND:
                        self._next_round_ns = None
            if not (finished or inputs or submitted or round_due):
                continue  # only finishes called off by a suspension: nothing happens
            # A round ran at this instant already: these finishes come after it.
            again = bool(finished) and self._last_round_ns == now
            for jobid in finished:
                self._finish(now, jobid)
            applied = [index for index in inputs if self._input(self._inputs[index], now)]
            if submitted:
                submitted = self._submit(now, submitted)
            if self._making_rounds():
                arrived = bool(applied or submitted)
                self._rounds_at(now, round_due, bool(finished), again, arrived)
            if progress is not None and self.stats.done != reported:
                reported = self.stats.done
                progress(reported)
        return self.records

    def _rounds_at(
        self, now: int, round_due: bool, finished: bool, again: bool, arrived: bool
    ) -> None:
        """The rounds of instant ``now`` once its finishes and arrivals are in (a
        ROUND of the agenda due, a job finished, finished after a round of this
        instant, a job or an input arrived), and the next round on the grid."""
        if self._interval_ns is None:
            round_due = round_due or finished or arrived
        elif again:
            round_due = True  # a job ended the instant it started: round again
        elif (
            arrived
            and self._next_round_ns is None
            and self._on_grid(now)
            and self._last_round_ns != now  # a controller's last tick, this instant
        ):
            round_due = True  # an idle cluster's next grid round is this instant
        if round_due:
            self._round(now)
            self._plan_window_round(now)
        if self._interval_ns is not None:
            self._plan_grid_round(now)

    # --- internals -----------------------------------------------------------------

    def _ns(self, seconds: int) -> int:
        return self._origin_ns + seconds * NS

    def _schedule(self, ts: int, priority: EventPriority, item: int) -> int:
        """Put an item in the agenda (``item``: the jobid; for an INPUT its index,
        for a ROUND which kind of round); returns its ``seq``.

        Raises:
            SimulationTimeError: ``ts`` is past the end of virtual time.
        """
        if ts >= END_OF_TIME_NS:
            if priority is EventPriority.ROUND:
                what = "the round"
            elif priority is EventPriority.INPUT:
                what = f"input event {item + 1}"
            else:
                verb = "is submitted" if priority is EventPriority.SUBMIT else "ends"
                what = f"job {item} {verb}"
            raise SimulationTimeError(
                f"{what} at {(ts - self._origin_ns) // NS:,} s is past the end of "
                f"virtual time ({END_OF_TIME_NS:,} ns after the epoch)"
            )
        seq = next(self._seq)
        heapq.heappush(self._agenda, (ts, priority, seq, item))
        return seq

    def _s(self, ts: int) -> int:
        """Seconds from the trace origin of the agenda time ``ts`` (ns)."""
        return (ts - self._origin_ns) // NS

    def _plan(self, jobid: int) -> RunPlan | None:
        """How long the job runs: its run plan, else its ``SimJob``'s run time (None:
        not known)."""
        plan = self._run_plans.get(jobid)
        if plan is None and (job := self._jobs.get(jobid)) is not None:
            plan = RunPlan(job.run_s * NS)
        return plan

    def _record(self, job: Submitted) -> JobRecord:
        """A new record for a job the core got from elsewhere than ``jobs`` (an input,
        or the adopted core); its ``run_s`` is its run plan's (0: not known)."""
        plan = self._plan(job.jobid)
        run_s = 0 if plan is None else plan.run_ns // NS
        record = self.records[job.jobid] = record_of(job, self._s(job.submit_ts), run_s)
        self._queue_of[job.jobid] = job.queue
        return record

    def _run_for(self, now: int, jobid: int, run: JobRun) -> None:
        """Let a job run from ``now`` until its finish (``JobRun.run_from``); a job
        with no run time known gets no finish."""
        span = run.run_from(now)
        if span is None:
            self.endless.add(jobid)
            self._endless_running += 1
            return
        run.finish_seq = self._schedule(now + span, EventPriority.FINISH, jobid)

    def _push(self, event: CoreEvent) -> None:
        self._push_to_core(event)
        self.stats.events += 1

    def _making_rounds(self) -> bool:
        """Whether the emulator makes rounds itself: not while a controller's ticks
        (``controller_rounds``) are still to come."""
        return not (self._controller_rounds and self._inputs_left)

    def _input(self, event: CoreEvent, now: int) -> bool:
        """Push an input event as it is; True when the core took it. A refused one
        goes to ``refused`` and changes nothing. Submitted jobs are recorded; a
        changed configuration or queue is what later submissions and run limits
        follow. With ``controller_rounds`` a ``BEGIN_ROUND`` is a round (and the
        last input starts the emulator's own grid from it)."""
        self._inputs_left -= 1
        if self._controller_rounds and isinstance(event, BeginRound):
            self._one_round(now, event)
            self._anchor_ns = now
            return False  # a round, not a change that calls for one
        try:
            self._push(event)
        except EventError as exc:
            self.refused.append((event, str(exc)))
            return False
        if isinstance(event, JobsPush):
            for spec in event.payload.jobs:
                self._record(spec)
            self._pending += len(event.payload.jobs)
        elif isinstance(event, JobUpdate) and event.payload.run_limit_s is not None:
            self.records[event.payload.jobid].run_limit_s = event.payload.run_limit_s
        elif isinstance(event, ConfigPush):
            self._queues = {queue.name: queue for queue in event.payload.config.queues}
        elif isinstance(event, QueueUpdate):
            self._queues[event.payload.queue.name] = event.payload.queue
        return True

    def _finish(self, now: int, jobid: int) -> None:
        """The job's finish is due: it ends (DONE), or fails or its run limit kills it
        (EXIT)."""
        run = self._runs.pop(jobid)
        state = run.end_state
        self._push(JobStateChange(ts=now, payload=JobStateChangePayload(jobid=jobid, state=state)))
        record = self.records[jobid]
        record.end_s = self._s(now)
        record.killed_by_runlimit = run.killed_at_finish
        self._running -= 1
        self.stats.done += 1

    def _submit(self, now: int, jobids: list[int]) -> list[int]:
        """Submit the jobs due now in one ``JOBS_PUSH``; a job whose queue is closed
        is refused here, as ``bsub`` refuses it, and never reaches the core (which
        would reject the whole push). Returns the jobids submitted."""
        specs = []
        for jobid in jobids:
            job = self._jobs[jobid]
            queue = self._queues.get(job.queue)
            if refused_at_submission(queue):
                self._reject(jobid, REJECT_QUEUE_CLOSED)
                continue
            specs.append(job_spec(job, queue, now))
        if specs:
            self._push(JobsPush(ts=now, payload=JobsPushPayload(jobs=tuple(specs))))
        self._pending += len(specs)
        return [spec.jobid for spec in specs]

    def _round(self, now: int) -> None:
        """Run a round at ``now`` and act on its decisions; while a round's
        preemption suspends victims, run a further one at the same instant, so the
        preemptor can start on what they gave back."""
        for _ in range(_MAX_ROUNDS_PER_INSTANT):
            if not self._one_round(now):
                return
        raise SimulationLoopError(
            f"more than {_MAX_ROUNDS_PER_INSTANT:,} rounds at {self._s(now):,} s each "
            "suspended jobs: the core keeps preempting at one instant"
        )

    def _one_round(self, now: int, event: BeginRound | None = None) -> bool:
        """One round at ``now`` (``event``: a controller's BEGIN_ROUND to push, else
        the emulator's own) and what it decided; True when victims were suspended."""
        self._last_round_ns = now
        self.stats.rounds += 1
        self._push(event or BeginRound(ts=now))
        self._note_predictions()
        decided, self._decided = self._decided, []
        suspended = False
        for decision in decided:
            if isinstance(decision, Dispatch | Pend):
                self._window_held.pop(decision.jobid, None)
            if isinstance(decision, Dispatch):
                self._dispatch(now, decision)
            elif isinstance(decision, Pend):
                if decision.reason.main is PendingCode.QUEUE_WINDOW:
                    self._window_held[decision.jobid] = self._queue_of[decision.jobid]
                if rejected_by_controller(decision):
                    payload = JobStateChangePayload(jobid=decision.jobid, state=JobState.EXIT)
                    self._push(JobStateChange(ts=now, payload=payload))
                    self._reject(decision.jobid, REJECT_LARGER_THAN_CLUSTER)
                    self._pending -= 1
            elif isinstance(decision, Preempt):
                for victim in decision.victim_jobids:
                    suspended |= self._suspend(now, victim)
            elif isinstance(decision, Resume):
                self._resume(now, decision.jobid)
        return suspended

    def _note_predictions(self) -> None:
        """Keep the first predicted start of each job not started yet that the round
        just made a reservation (``first_predicted_start_s``, s from the origin); a
        reservation of a job that has started (room owed to a suspended job for its
        resume) predicts no start."""
        if self._reservations is None:
            return
        records = self.records
        for reservation in self._reservations():
            record = records.get(reservation.jobid)
            if (
                record is not None
                and record.start_s is None
                and record.first_predicted_start_s is None
            ):
                record.first_predicted_start_s = self._s(reservation.start_ts)

    def _dispatch(self, now: int, decision: Dispatch) -> None:
        jobid = decision.jobid
        record = self.records[jobid]
        record.start_s = self._s(now)
        record.hosts = tuple(host.host for host in decision.alloc.hosts)
        queue = self._queues.get(self._queue_of[jobid])
        run = self._runs[jobid] = JobRun.planned(self._plan(jobid), queue, now)
        self._running += 1
        self._pending -= 1
        self._run_for(now, jobid, run)

    def _suspend(self, now: int, jobid: int) -> bool:
        """Suspend a victim still running (SIGTSTP): ``JOB_STATE_CHANGE`` SUSP, its
        finish called off, its remaining run time kept. False when it no longer runs
        (finished, or already suspended): a worker has nothing to stop."""
        run = self._runs.get(jobid)
        if run is None or run.suspended:
            return False
        if run.left_ns is None:
            self._endless_running -= 1
        else:
            self._stale += 1
        run.suspend(now)
        payload = JobStateChangePayload(jobid=jobid, state=JobState.SUSP)
        self._push(JobStateChange(ts=now, payload=payload))
        self.records[jobid].suspend(self._s(now))
        self.stats.suspensions += 1
        self._running -= 1
        self._suspended += 1
        return True

    def _resume(self, now: int, jobid: int) -> None:
        """Resume a suspended job (SIGCONT): the core already holds its hosts again
        and marks it running, so nothing is pushed; it runs its remaining time.
        A resume of a job not suspended here changes nothing."""
        run = self._runs.get(jobid)
        if run is None or not run.suspended:
            return
        self.records[jobid].resume(self._s(now))
        self._run_for(now, jobid, run)
        self.stats.resumes += 1
        self._suspended -= 1
        self._running += 1

    def _on_grid(self, ts: int) -> bool:
        assert self._interval_ns is not None
        return (ts - self._anchor_ns) % self._interval_ns == 0

    def _plan_grid_round(self, now: int) -> None:
        """Keep one grid round in the agenda while jobs pend or run, and while a round
        could still decide something new (see the module docstring)."""
        alive = self._pending or self._running or self._suspended
        if self._next_round_ns is not None or not alive:
            return
        nothing_comes = len(self._agenda) == self._stale  # only called-off finishes left
        finishing = self._running - self._endless_running
        if not finishing and nothing_comes and self._last_round_ns == now:
            # Nothing runs to an end, nothing comes: the jobs left pending never
            # start (and the suspended ones are never resumed: nothing will free
            # their hosts).
            return
        assert self._interval_ns is not None
        base = self._anchor_ns
        steps = (now - base) // self._interval_ns + 1
        next_round_ns = base + steps * self._interval_ns
        self._schedule(next_round_ns, EventPriority.ROUND, _GRID_ROUND)
        self._next_round_ns = next_round_ns

    def _plan_window_round(self, now: int) -> None:
        """While jobs are held by their queue's run windows, keep a round in the
        agenda at the next instant one of those windows opens (a controller's
        scheduler wakes up then; nothing else may happen at that time)."""
        if not self._window_held:
            return
        windows = {
            parse_window(text)
            for queue in set(self._window_held.values())
            for text in self._queues[queue].run_windows
        }
        opening_ns = next_opening(sorted(windows), now // NS) * NS
        if opening_ns <= now or opening_ns == self._window_round_ns:
            return
        self._schedule(opening_ns, EventPriority.ROUND, _WINDOW_ROUND)
        self._window_round_ns = opening_ns


#: The payload of a ROUND agenda item: a round of the grid, or one at a run window's
#: opening.
_GRID_ROUND, _WINDOW_ROUND = 0, -1

#: Pending reasons a controller answers by rejecting the job: it can never run here.
_REJECT = frozenset({PendingCode.JOB_LARGER_THAN_CLUSTER})

#: Rounds at one instant that each suspend victims before the emulator gives up on a
#: core that keeps preempting (every such round suspends at least one running job,
#: so a sane core stops far below this).
_MAX_ROUNDS_PER_INSTANT = 100_000
