"""One job in the cluster: what happened to it (``JobRecord``), how long it runs once
started (``RunPlan``) and its state while it runs or is suspended (``JobRun``).

Records are in seconds from the workload's time origin; run state is in ns of the
model's time (``xce_driver.cluster.model``). Both emulators keep these: the
simulation's (``xce_driver.emulator``) and the live one (``xce_driver.live.emulate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from xce_schemas import JobState, QueueSpec

#: Nanoseconds in a second: agenda and event times are ns, records are s.
NS = 1_000_000_000


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


class JobShape(Protocol):
    """A job as its record starts from, whatever carries it (a ``SimJob``, a
    ``JobSpec``, the core's job, a snapshot's)."""

    @property
    def jobid(self) -> int: ...
    @property
    def tasks(self) -> int: ...
    @property
    def queue(self) -> str: ...
    @property
    def user(self) -> str: ...
    @property
    def run_limit_s(self) -> int | None: ...


class Submitted(JobShape, Protocol):
    """A job the core has been given, with its submission time (``submit_ts``, ns)."""

    @property
    def submit_ts(self) -> int: ...


def record_of(job: JobShape, submit_s: int, run_s: int) -> JobRecord:
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
    """How long a job runs once started: its ``SimJob``'s run time, or what the
    emulator is told per job (a what-if).

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
    """The state of one started job, in ns of the model's time.

    ``left_ns``: run time still to go (None: not known, it never ends);
    ``limit_left_ns``: running time before its queue's run limit kills it (None: no
    limit); ``since_ns``: start of the current stretch of running (or of
    suspension); ``finish_seq``: the id of the agenda entry that is its finish
    (``Agenda.schedule``), -1 while suspended or endless; ``exits``: it ends with
    EXIT; ``killed``: its end is a run-limit kill.
    """

    left_ns: int | None
    limit_left_ns: int | None
    since_ns: int
    finish_seq: int = -1
    suspended: bool = False
    exits: bool = False
    killed: bool = False

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


@dataclass(slots=True)
class EmulatorStats:
    """Counts of what crossed the core's boundary (of both emulators).

    ``done``: jobs finished (or killed) or rejected; ``suspensions``: victims
    suspended on ``PREEMPT``; ``resumes``: jobs resumed on ``RESUME``.
    """

    events: int = 0
    rounds: int = 0
    done: int = 0
    suspensions: int = 0
    resumes: int = 0
    decisions: dict[str, int] = field(default_factory=dict)

    def decided(self, op: str) -> None:
        """Count one decision of ``op`` (``DISPATCH``, ...) in ``decisions``."""
        self.decisions[op] = self.decisions.get(op, 0) + 1
