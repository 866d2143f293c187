"""The cluster model: a workload's jobs on the hosts a scheduling core runs them on.

It plays what a cluster's hosts do with the core's decisions, and holds what
happened to every job. Both emulators drive it: the simulation's
(``xce_driver.emulator``), which jumps its agenda from one entry to the next, and
the live one (``xce_driver.live.emulate``), which lets the wall clock move it
(``xce_driver.cluster.realtime``). What it reports goes to its ``Controller``: the
emulator, which passes it on to the core (in-process, or over the bus).

What the hosts do (Req 6 for preemption):

* ``DISPATCH``: the job runs its run time (its ``SimJob``'s, or its ``RunPlan``'s)
  and then finishes: ``JOB_STATE_CHANGE`` DONE (EXIT when its plan says it
  fails). A job of a queue with ``run_limit_s`` whose run time is longer is killed
  when its running time (time suspended does not count) reaches the limit:
  EXIT, recorded as killed. A job with no run time known never ends (``endless``).
* ``PREEMPT``: each victim still running is suspended (SIGTSTP):
  ``JOB_STATE_CHANGE`` SUSP, in the decision's victim order; its finish is called
  off (``Agenda.cancel``) and it keeps the run time it has left.
* ``RESUME``: the core has taken the hosts back and marked the job running; the
  job runs its remaining time from now on. Nothing is reported.
* ``PEND`` as larger than the cluster: the controller turns the job away (EXIT),
  recorded as rejected. A job of a closed queue is refused at submission
  (``bsub`` fails): never sent, recorded as rejected.

A suspended job is alive: it counts until it has been resumed and finished.

The model's time is its timeline's (``xce_driver.cluster.timeline``): everything
due at one time (finishes, submissions) reaches the controller as one ``Instant``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from xce_schemas import Decision, Dispatch, JobState, Pend, Preempt, QueueSpec, Resume

from xce_driver.cluster.agenda import Agenda
from xce_driver.cluster.controller import (
    REJECT_LARGER_THAN_CLUSTER,
    REJECT_QUEUE_CLOSED,
    refused_at_submission,
    rejected_by_controller,
)
from xce_driver.cluster.jobs import (
    NS,
    EmulatorStats,
    JobRecord,
    JobRun,
    RunPlan,
    Submitted,
    record_of,
)
from xce_driver.cluster.timeline import EventPriority, Instant, Timeline
from xce_driver.workloads.mapping import SimJob


class Controller(Protocol):
    """The emulator that drives a model, as the cluster's controller: what the hosts
    report goes through it to the core, and it acts on each instant."""

    def job_state(self, now: int, jobid: int, state: JobState) -> None:
        """Tell the core a job changed state at ``now`` (ns): DONE, EXIT or SUSP."""
        ...

    def submit_jobs(self, now: int, jobs: Sequence[tuple[SimJob, QueueSpec | None]]) -> None:
        """Submit ``jobs`` (each with its queue, None: not defined) at ``now`` (ns), in
        one message; never empty."""
        ...

    def settle(self, instant: Instant) -> None:
        """Act on an instant, at its time (``ClusterModel.finish``, ``submit``, ...,
        in the order of the timeline's table)."""
        ...


class ClusterModel:
    """The jobs of a workload on their cluster, and their timeline.

    Args:
        jobs: the workload, in submit order (``SimJob``: times in s from the origin).
        queues: the queue definitions (what run limits and closed queues follow).
        controller: where reports go, and who settles each instant.
        origin_ns: the workload's time 0 on the agenda's clock, ns; the agenda
            starts there.
        run_plans: how long jobs run, by jobid, for jobs that are not in ``jobs``
            or whose run time it overrides.

    Attributes:
        timeline: what is due when, settled an instant at a time; emulators put
            their own entries in (inputs, rounds).
        agenda: the timeline's agenda; its ``now`` is the model's time, ns.
        jobs: the workload's jobs, by jobid.
        queues: the queue definitions by name (the controller replaces them when
            the configuration changes).
        records: every job's ``JobRecord``, by jobid.
        stats: counts of what crossed the core's boundary.
        runs: the run state of every job started and not ended, by jobid.
        queue_of: each job's queue as submitted, by jobid.
        endless: jobs dispatched (or taken over running) with no run time known:
            they never end.
        pending, running, suspended: jobs submitted and not started (nor turned
            away), running, suspended; ``endless_running`` of ``running``, the
            endless ones.
    """

    def __init__(
        self,
        jobs: Sequence[SimJob],
        queues: Iterable[QueueSpec],
        controller: Controller,
        *,
        origin_ns: int = 0,
        run_plans: Mapping[int, RunPlan] | None = None,
    ) -> None:
        self.timeline = Timeline(Agenda(origin_ns), controller.settle, origin_ns)
        self.agenda = self.timeline.agenda
        self.origin_ns = origin_ns
        self.jobs = {job.jobid: job for job in jobs}
        self.queues: dict[str, QueueSpec] = {queue.name: queue for queue in queues}
        self.records = {job.jobid: record_of(job, job.submit_s, job.run_s) for job in jobs}
        self.stats = EmulatorStats()
        self.runs: dict[int, JobRun] = {}
        self.queue_of = {job.jobid: job.queue for job in jobs}
        self.endless: set[int] = set()
        self.pending = 0
        self.running = 0
        self.suspended = 0
        self.endless_running = 0
        self._controller = controller
        self._run_plans = dict(run_plans or {})

    # --- time --------------------------------------------------------------------------

    def s(self, ts: int) -> int:
        """Seconds from the origin of the model's time ``ts`` (ns), rounded down."""
        return (ts - self.origin_ns) // NS

    def schedule_arrivals(self) -> None:
        """Put the workload's submissions in the timeline (``Timeline.arrivals``).

        Raises:
            SimulationTimeError: a job is submitted past the end of virtual time.
        """
        self.timeline.arrivals(self.jobs.values())

    # --- jobs ------------------------------------------------------------------------

    def plan(self, jobid: int) -> RunPlan | None:
        """How long the job runs: its run plan, else its ``SimJob``'s run time (None:
        not known)."""
        plan = self._run_plans.get(jobid)
        if plan is None and (job := self.jobs.get(jobid)) is not None:
            plan = RunPlan(job.run_s * NS)
        return plan

    def record(self, job: Submitted) -> JobRecord:
        """A new record for a job the core got from elsewhere than ``jobs`` (an input,
        or a restored core); its ``run_s`` is its run plan's (0: not known)."""
        plan = self.plan(job.jobid)
        run_s = 0 if plan is None else plan.run_ns // NS
        record = self.records[job.jobid] = record_of(job, self.s(job.submit_ts), run_s)
        self.queue_of[job.jobid] = job.queue
        return record

    def accept(self, jobs: Iterable[Submitted]) -> None:
        """Jobs the core was given by someone else than this model (a what-if's
        input): recorded (``record``), and pending."""
        for job in jobs:
            self.record(job)
            self.pending += 1

    def submit(self, jobids: Sequence[int]) -> list[int]:
        """Submit the jobs due now in one message; a job whose queue is closed is
        refused here, as ``bsub`` refuses it, and never reaches the core (which
        would reject the whole message). Returns the jobids submitted."""
        jobs = []
        for jobid in jobids:
            job = self.jobs[jobid]
            queue = self.queues.get(job.queue)
            if refused_at_submission(queue):
                self.reject(jobid, REJECT_QUEUE_CLOSED)
                continue
            jobs.append((job, queue))
        if jobs:
            self._controller.submit_jobs(self.agenda.now, jobs)
        self.pending += len(jobs)
        return [job.jobid for job, _ in jobs]

    def apply(self, decision: Decision) -> bool:
        """Do what the hosts do on one of the core's decisions (see the module
        docstring); others change nothing. True when a ``PREEMPT`` suspended a
        victim (the core can then start the preemptor on what it gave back).

        Raises:
            KeyError: a ``DISPATCH`` of a job the model does not have.
            SimulationTimeError: a finish past the end of virtual time.
        """
        if isinstance(decision, Dispatch):
            self.dispatch(decision)
        elif isinstance(decision, Pend):
            if rejected_by_controller(decision):
                self.turn_away(decision.jobid)
        elif isinstance(decision, Preempt):
            suspended = False
            for victim in decision.victim_jobids:
                suspended |= self.suspend(victim)
            return suspended
        elif isinstance(decision, Resume):
            self.resume(decision.jobid)
        return False

    def dispatch(self, decision: Dispatch, start_ns: int | None = None) -> None:
        """Start a job on the hosts of its allocation, now; ``start_ns``: the start its
        record gives, ns (None: now).

        Raises:
            KeyError: a job the model does not have (not in ``jobs``, not recorded).
            SimulationTimeError: its finish is past the end of virtual time.
        """
        jobid = decision.jobid
        now = self.agenda.now
        record = self.records[jobid]
        record.start_s = self.s(now if start_ns is None else start_ns)
        record.hosts = tuple(host.host for host in decision.alloc.hosts)
        queue = self.queues.get(self.queue_of[jobid])
        run = self.runs[jobid] = JobRun.planned(self.plan(jobid), queue, now)
        self.running += 1
        self.pending -= 1
        self.run_job(jobid, run)

    def take_over(self, jobid: int, state: JobState, suspended_since: int = 0) -> None:
        """Take up a job a restored core already has (its record made): PEND, it
        waits; RUN, it runs from now the time its plan gives (for such a job, the
        time it has left); SUSP, suspended since ``suspended_since`` (ns), it waits
        for its RESUME.

        Raises:
            SimulationTimeError: its finish is past the end of virtual time.
        """
        if state is JobState.PEND:
            self.pending += 1
            return
        now = self.agenda.now
        run = self.runs[jobid] = JobRun.planned(
            self.plan(jobid), self.queues.get(self.queue_of[jobid]), now
        )
        if state is JobState.RUN:
            self.run_job(jobid, run)
            self.running += 1
        else:
            run.suspend(now)
            run.since_ns = suspended_since
            self.suspended += 1

    def run_job(self, jobid: int, run: JobRun) -> None:
        """Let a job run from now until its finish (``JobRun.run_from``), its FINISH
        entry in the agenda; a job with no run time known gets none.

        Raises:
            SimulationTimeError: its finish is past the end of virtual time.
        """
        now = self.agenda.now
        span = run.run_from(now)
        if span is None:
            self.endless.add(jobid)
            self.endless_running += 1
            return
        run.finish_seq = self.timeline.schedule(now + span, EventPriority.FINISH, jobid)

    def finish(self, jobid: int) -> None:
        """The job's finish is due now: it ends (DONE), or fails or its run limit
        kills it (EXIT).

        Raises:
            KeyError: a job that does not run (only its FINISH entry calls this).
        """
        now = self.agenda.now
        run = self.runs.pop(jobid)
        self._controller.job_state(now, jobid, run.end_state)
        record = self.records[jobid]
        record.end_s = self.s(now)
        record.killed_by_runlimit = run.killed_at_finish
        self.running -= 1
        self.stats.done += 1

    def suspend(self, jobid: int) -> bool:
        """Suspend a victim still running (SIGTSTP): SUSP reported, its finish called
        off, its remaining run time kept. False when it does not run here (finished,
        already suspended, or not a job of this model): a host has nothing to stop."""
        run = self.runs.get(jobid)
        if run is None or run.suspended:
            return False
        now = self.agenda.now
        if run.left_ns is None:
            self.endless_running -= 1
        else:
            self.agenda.cancel(run.finish_seq)
        run.suspend(now)
        self._controller.job_state(now, jobid, JobState.SUSP)
        self.records[jobid].suspend(self.s(now))
        self.stats.suspensions += 1
        self.running -= 1
        self.suspended += 1
        return True

    def resume(self, jobid: int) -> None:
        """Resume a suspended job (SIGCONT): the core already holds its hosts again
        and marks it running, so nothing is reported; it runs its remaining time.
        A resume of a job not suspended here changes nothing.

        Raises:
            SimulationTimeError: its finish is past the end of virtual time.
        """
        run = self.runs.get(jobid)
        if run is None or not run.suspended:
            return
        self.records[jobid].resume(self.s(self.agenda.now))
        self.run_job(jobid, run)
        self.stats.resumes += 1
        self.suspended -= 1
        self.running += 1

    def turn_away(self, jobid: int) -> None:
        """Turn away a pending job the core says can never run here: EXIT reported,
        rejected as ``REJECT_LARGER_THAN_CLUSTER``."""
        self._controller.job_state(self.agenda.now, jobid, JobState.EXIT)
        self.reject(jobid, REJECT_LARGER_THAN_CLUSTER)
        self.pending -= 1

    def reject(self, jobid: int, reason: str) -> None:
        """Record a job as turned away by the controller (a ``REJECT_*`` reason),
        never run; it counts as done."""
        record = self.records[jobid]
        record.rejected = True
        record.rejected_reason = reason
        self.stats.done += 1
