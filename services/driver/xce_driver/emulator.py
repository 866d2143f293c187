"""A closed-loop cluster emulator: controller and hosts, in virtual time.

It plays what a real cluster would do around the scheduling core: it pushes the
configuration and the hosts, submits each job at its submit time (``JOBS_PUSH``),
starts a scheduling round (``BEGIN_ROUND``), runs each dispatched job for its run
time and then reports it finished (``JOB_STATE_CHANGE`` DONE), and turns away a job
the core reports as larger than the cluster (``JOB_STATE_CHANGE`` EXIT), as a
controller rejects it.

The agenda is SimPy's heap: ``(ts_ns, EventPriority, seq, payload)``; ``seq`` comes
from a counter, so ties never compare payloads and the order is the same in every
process. At one instant the order is fixed:

| priority | what | why |
|---|---|---|
| FINISH (0) | jobs that end now give their slots back | a round at this instant sees them free |
| SUBMIT (1) | jobs submitted now, in one ``JOBS_PUSH`` | a round at this instant sees them |
| ROUND (2) | ``BEGIN_ROUND`` | last, so it sees everything of this instant |

Rounds come at every instant where something changed (a finish or a submission),
or, with a round interval, on a fixed grid of that interval; a job that finishes at
the instant it started gets a further round at that instant either way. On the grid,
rounds stop once nothing runs, no submission is left to come and a round has seen
the last change: further rounds could decide nothing new, and jobs still pending
then (no plan will ever fit them) never start, as without a round interval.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

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
    Pend,
    PendingCode,
    SchedulerConfig,
    WorkersPush,
)
from xce_schemas.events import (
    ConfigPushPayload,
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


class EventPriority(IntEnum):
    """Order of agenda items at one instant (see the module's table)."""

    FINISH = 0
    SUBMIT = 1
    ROUND = 2


@dataclass(slots=True)
class JobRecord:
    """What happened to one job in the simulation (times in s from the trace origin).

    ``start_s``/``end_s`` stay None for a job that never started/finished;
    ``rejected`` marks a job turned away as larger than the cluster.
    """

    jobid: int
    submit_s: int
    run_s: int
    tasks: int
    start_s: int | None = None
    end_s: int | None = None
    hosts: tuple[str, ...] = ()
    rejected: bool = False


@dataclass(slots=True)
class EmulatorStats:
    """Counts of what crossed the core's boundary; ``done``: jobs finished or rejected."""

    events: int = 0
    rounds: int = 0
    done: int = 0
    decisions: dict[str, int] = field(default_factory=dict)


class ClusterEmulator:
    """Drives a scheduling core through a workload in virtual time.

    Args:
        jobs: the workload, in submit order.
        hosts: the cluster's hosts, pushed once at the start.
        config: the scheduler configuration pushed first.
        push: delivers one event to the core (and to whatever records it); the
            core's decisions must reach ``on_decision`` while it runs.
        origin_s: epoch second of the workload's time 0; event ts are
            ``(origin_s + t) * 10**9`` ns.
        round_interval_s: rounds on this grid (s) instead of at every change.

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
    ) -> None:
        if round_interval_s is not None and round_interval_s <= 0:
            raise ValueError(f"round interval must be positive, not {round_interval_s}")
        self._jobs = {job.jobid: job for job in jobs}
        self._hosts = tuple(hosts)
        self._config = config
        self._push_to_core = push
        self._origin_ns = origin_s * NS
        self._interval_ns = None if round_interval_s is None else round_interval_s * NS
        self.records = {
            job.jobid: JobRecord(job.jobid, job.submit_s, job.run_s, job.tasks) for job in jobs
        }
        self.stats = EmulatorStats()
        self._agenda: list[tuple[int, EventPriority, int, int]] = []
        self._seq = itertools.count()
        self._decided: list[Decision] = []
        self._running = 0
        self._pending = 0
        self._next_round_ns: int | None = None
        self._last_round_ns: int | None = None
        self._started = False

    # --- the core's side -----------------------------------------------------------

    def on_decision(self, decision: Decision) -> None:
        """Take one decision from the core (called during its session)."""
        counts = self.stats.decisions
        counts[decision.op] = counts.get(decision.op, 0) + 1
        if decision.op in ("DISPATCH", "PEND"):
            self._decided.append(decision)

    # --- the loop ------------------------------------------------------------------

    def start(self) -> None:
        """Bring the cluster up: push the configuration and the hosts at the origin,
        and put every submission in the agenda. ``run`` does it when not done yet."""
        if self._started:
            return
        self._started = True
        start_ns = self._origin_ns
        self._push(ConfigPush(ts=start_ns, payload=ConfigPushPayload(config=self._config)))
        self._push(WorkersPush(ts=start_ns, payload=WorkersPushPayload(hosts=self._hosts)))
        for job in self._jobs.values():
            self._schedule(self._ns(job.submit_s), EventPriority.SUBMIT, job.jobid)

    def run(self, progress: Callable[[int], None] | None = None) -> dict[int, JobRecord]:
        """Run the workload to its end and return every job's record.

        Args:
            progress: called with the number of jobs done (finished or rejected)
                whenever that number changes.

        The run ends when nothing is left to happen; jobs that could never start
        (no plan ever fits) are left with ``start_s`` None.
        """
        self.start()
        reported = 0
        while self._agenda:
            now = self._agenda[0][0]
            finished: list[int] = []
            submitted: list[int] = []
            round_due = False
            while self._agenda and self._agenda[0][0] == now:
                _, priority, _, jobid = heapq.heappop(self._agenda)
                if priority is EventPriority.FINISH:
                    finished.append(jobid)
                elif priority is EventPriority.SUBMIT:
                    submitted.append(jobid)
                else:
                    round_due = True
                    self._next_round_ns = None
            for jobid in finished:
                self._finish(now, jobid)
            if submitted:
                self._submit(now, submitted)
            if self._interval_ns is None:
                round_due = bool(finished or submitted)
            elif finished and self._last_round_ns == now:
                round_due = True  # a job ended the instant it started: round again
            elif submitted and self._next_round_ns is None and self._on_grid(now):
                round_due = True  # an idle cluster's next grid round is this instant
            if round_due:
                self._round(now)
            if progress is not None and self.stats.done != reported:
                reported = self.stats.done
                progress(reported)
            if self._interval_ns is not None:
                self._plan_grid_round(now)
        return self.records

    # --- internals -----------------------------------------------------------------

    def _ns(self, seconds: int) -> int:
        return self._origin_ns + seconds * NS

    def _schedule(self, ts: int, priority: EventPriority, jobid: int) -> None:
        if ts >= END_OF_TIME_NS:
            what = "submitted" if priority is EventPriority.SUBMIT else "ends"
            raise SimulationTimeError(
                f"job {jobid} {what} at {(ts - self._origin_ns) // NS:,} s, past the end of "
                f"virtual time ({END_OF_TIME_NS:,} ns after the epoch)"
            )
        heapq.heappush(self._agenda, (ts, priority, next(self._seq), jobid))

    def _push(self, event: CoreEvent) -> None:
        self.stats.events += 1
        self._push_to_core(event)

    def _finish(self, now: int, jobid: int) -> None:
        payload = JobStateChangePayload(jobid=jobid, state=JobState.DONE)
        self._push(JobStateChange(ts=now, payload=payload))
        self.records[jobid].end_s = (now - self._origin_ns) // NS
        self._running -= 1
        self.stats.done += 1

    def _submit(self, now: int, jobids: list[int]) -> None:
        specs = []
        for jobid in jobids:
            job = self._jobs[jobid]
            specs.append(
                JobSpec(
                    jobid=jobid,
                    queue=job.queue,
                    user=job.user,
                    tasks=job.tasks,
                    resreq=job.resreq,
                    submit_ts=now,
                )
            )
        self._push(JobsPush(ts=now, payload=JobsPushPayload(jobs=tuple(specs))))
        self._pending += len(jobids)

    def _round(self, now: int) -> None:
        """Run one round at ``now``; act on its decisions."""
        self._last_round_ns = now
        self.stats.rounds += 1
        self._push(BeginRound(ts=now))
        decided, self._decided = self._decided, []
        for decision in decided:
            if isinstance(decision, Dispatch):
                record = self.records[decision.jobid]
                record.start_s = (now - self._origin_ns) // NS
                record.hosts = tuple(host.host for host in decision.alloc.hosts)
                self._schedule(now + record.run_s * NS, EventPriority.FINISH, decision.jobid)
                self._running += 1
                self._pending -= 1
            elif isinstance(decision, Pend) and decision.reason.main in _REJECT:
                payload = JobStateChangePayload(jobid=decision.jobid, state=JobState.EXIT)
                self._push(JobStateChange(ts=now, payload=payload))
                self.records[decision.jobid].rejected = True
                self._pending -= 1
                self.stats.done += 1

    def _on_grid(self, ts: int) -> bool:
        assert self._interval_ns is not None
        return (ts - self._origin_ns) % self._interval_ns == 0

    def _plan_grid_round(self, now: int) -> None:
        """Keep one grid round in the agenda while jobs pend or run, and while a round
        could still decide something new (see the module docstring)."""
        if self._next_round_ns is not None or not (self._pending or self._running):
            return
        if not self._running and not self._agenda and self._last_round_ns == now:
            return  # nothing runs, nothing comes: the jobs left pending never start
        assert self._interval_ns is not None
        base = self._origin_ns
        steps = (now - base) // self._interval_ns + 1
        next_round_ns = base + steps * self._interval_ns
        if next_round_ns >= END_OF_TIME_NS:
            raise SimulationTimeError(
                f"the round at {(next_round_ns - base) // NS:,} s is past the end of virtual "
                f"time ({END_OF_TIME_NS:,} ns after the epoch)"
            )
        self._next_round_ns = next_round_ns
        heapq.heappush(self._agenda, (next_round_ns, EventPriority.ROUND, next(self._seq), 0))


#: Pending reasons a controller answers by rejecting the job: it can never run here.
_REJECT = frozenset({PendingCode.JOB_LARGER_THAN_CLUSTER})
