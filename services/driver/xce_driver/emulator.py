"""A closed-loop cluster emulator: controller and hosts, in virtual time.

It plays what a real cluster would do around the scheduling core: it pushes the
configuration and the hosts, submits each job at its submit time (``JOBS_PUSH``),
starts a scheduling round (``BEGIN_ROUND``), and answers the round's decisions as
the hosts would. What the hosts do (a job runs its run time and finishes, a victim
is suspended and later resumed, a run limit kills, a job larger than the cluster
or of a closed queue is turned away) is the cluster model's,
``xce_driver.cluster.model``, which the live emulator (``xce_driver.live.emulate``)
shares; this emulator adds the rounds, and lets virtual time jump from one agenda
entry to the next (``Agenda.run``).

After a round whose ``PREEMPT`` suspended victims, a further round runs at the same
instant, where the core, having taken back what the victims held, can start the
preemptor.

**What-if** (``xce_driver.whatif``): the same loop can start from a core restored from
a snapshot (``adopt``: its jobs pending, running and suspended, each running one with
the run time it has left) and push *input* events at their times: a file's
submissions, host and queue changes, pushed as they are (``inputs``); each counts as
a change, as a submission does. A job's run time is then given per job
(``run_plans``); a job dispatched with none runs until the end (``endless``), so
the figures say it never finished.

The agenda's order at one instant is the timeline's table (``EventPriority``): jobs
finishing, then inputs, then submissions, then the round, which sees everything of
its instant. Rounds come at every instant where something changed (a finish, a
submission or an input),
or, with a round interval, on a fixed grid of that interval; a job that finishes at
the instant it started, and a preemption whose victims were suspended, get a further
round at that instant either way. On the grid,
rounds stop once nothing runs, no submission is left to come and a round has seen
the last change: further rounds could decide nothing new, and jobs still pending
then (no plan will ever fit them) never start, as without a round interval.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

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
    JobsPush,
    JobState,
    JobStateChange,
    JobUpdate,
    Pend,
    PendingCode,
    QueueSpec,
    QueueUpdate,
    SchedulerConfig,
    WorkersPush,
    next_opening,
    parse_window,
)
from xce_schemas.events import (
    ConfigPushPayload,
    JobsPushPayload,
    JobStateChangePayload,
    WorkersPushPayload,
)

from xce_driver.cluster.controller import TURNED_AWAY, job_spec
from xce_driver.cluster.jobs import NS, JobRecord, RunPlan
from xce_driver.cluster.model import ClusterModel
from xce_driver.cluster.timeline import EventPriority, Instant
from xce_driver.workloads.mapping import SimJob


class SimulationLoopError(RuntimeError):
    """The core kept preempting at one instant without end (a core bug, never a
    workload's fault); the message names the instant."""


class ClusterEmulator:
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
        model: the cluster model it drives (its agenda in ns of the events' time).
        records, stats, endless: the model's: every job's ``JobRecord``, the
            counts of what crossed the core's boundary, and the jobs dispatched (or
            adopted running) with no run time known, which never end.
        refused: inputs the core refused, with its reason (a what-if's events
            that no longer apply); they changed nothing.

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
        self._origin_ns = origin_s * NS
        self.model = ClusterModel(
            jobs, config.queues, self, origin_ns=self._origin_ns, run_plans=run_plans
        )
        self.records = self.model.records
        self.stats = self.model.stats
        self.endless = self.model.endless
        self._hosts = tuple(hosts)
        self._config = config
        self._push_to_core = push
        self._interval_ns = None if round_interval_s is None else round_interval_s * NS
        self._inputs = tuple(inputs)
        self._inputs_left = len(self._inputs)
        self._controller_rounds = controller_rounds
        self._reservations = reservations
        self._anchor_ns = self._origin_ns  # where the round grid starts
        self.refused: list[tuple[CoreEvent, str]] = []
        self._decided: list[Decision] = []
        self._next_round_ns: int | None = None
        self._window_held: dict[int, str] = {}  # jobid → queue, pending on QUEUE_WINDOW
        self._window_round_ns: int | None = None
        self._last_round_ns: int | None = None
        self._started = False
        self._progress: Callable[[int], None] | None = None
        self._reported = 0  # jobs done when ``progress`` was last called

    # --- the core's side -----------------------------------------------------------

    def on_decision(self, decision: Decision) -> None:
        """Take one decision from the core (called during its session)."""
        self.stats.decided(decision.op)
        if decision.op != "NEW_SESSION":
            self._decided.append(decision)

    def job_state(self, now: int, jobid: int, state: JobState) -> None:
        """Push the ``JOB_STATE_CHANGE`` the model reports (``Controller``)."""
        self._push(JobStateChange(ts=now, payload=JobStateChangePayload(jobid=jobid, state=state)))

    def submit_jobs(self, now: int, jobs: Sequence[tuple[SimJob, QueueSpec | None]]) -> None:
        """Push the ``JOBS_PUSH`` of the jobs the model submits now (``Controller``)."""
        specs = tuple(job_spec(job, queue, now) for job, queue in jobs)
        self._push(JobsPush(ts=now, payload=JobsPushPayload(jobs=specs)))

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
        model = self.model
        model.agenda.run(until=now)  # nothing is in it yet: its time becomes the core's
        model.queues = {name: queue.spec() for name, queue in core.state.queues.items()}
        history = history or {}
        for job in sorted(core.state.jobs.values(), key=lambda job: job.jobid):
            record = model.record(job)
            known = history.get(job.jobid)
            if known is not None:
                # The core's job is what it is now (a JOB_UPDATE may have changed
                # its run limit since it was submitted).
                record = self.records[job.jobid] = replace(
                    known, run_s=record.run_s, run_limit_s=job.run_limit_s
                )
            if job.state is JobState.PEND:
                reason = job.pend_reason
                if reason is not None and reason.main is PendingCode.QUEUE_WINDOW:
                    self._window_held[job.jobid] = job.queue
            elif known is None:
                record.start_s = model.s(job.start_ts)
                record.hosts = () if job.alloc is None else tuple(h.host for h in job.alloc.hosts)
                if job.state is not JobState.RUN:  # suspended before the snapshot
                    record.suspend(model.s(job.suspend_ts))
            model.take_over(job.jobid, job.state, job.suspend_ts)
        suspended = False
        for preemption in sorted(core.state.preemptions.values(), key=lambda p: p.preemptor):
            for victim in preemption.victims:
                suspended |= model.suspend(victim)
        for job in sorted(core.state.jobs.values(), key=lambda job: job.jobid):
            reason = job.pend_reason
            if job.state is JobState.PEND and reason is not None and reason.main in TURNED_AWAY:
                model.turn_away(job.jobid)
        self._schedule_arrivals()
        if not self._making_rounds():
            return  # the controller's next tick is the next round
        if suspended or (round_owed and (self._interval_ns is None or self._on_grid(now))):
            self._schedule_round(now, _GRID_ROUND)
            if self._interval_ns is not None:
                self._next_round_ns = now
        elif self._interval_ns is not None:
            self._plan_grid_round(now)

    def _schedule_arrivals(self) -> None:
        """Put the submissions and the inputs in the agenda.

        Raises:
            SimulationTimeError: one is past the end of virtual time.
        """
        self.model.schedule_arrivals()
        for index, event in enumerate(self._inputs):
            self.model.timeline.schedule(event.ts, EventPriority.INPUT, index)

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
        self._progress, self._reported = progress, 0
        agenda = self.model.agenda
        if until_ns is None:
            agenda.run()
        elif until_ns >= agenda.now:
            agenda.run(until=until_ns + 1)  # what is due at ``until_ns`` happens too
        return self.records

    def settle(self, instant: Instant) -> None:
        """Act on one instant (``Controller``): its finishes, its inputs, its
        submission, then the rounds it calls for, and the progress."""
        now = instant.at
        model = self.model
        if _GRID_ROUND in instant.rounds:
            self._next_round_ns = None  # the grid's round is this one
        # A round ran at this instant already: these finishes come after it.
        again = bool(instant.finished) and self._last_round_ns == now
        for jobid in instant.finished:
            model.finish(jobid)
        applied = [index for index in instant.inputs if self._input(self._inputs[index], now)]
        submitted = model.submit(instant.submitted) if instant.submitted else []
        if self._making_rounds():
            arrived = bool(applied or submitted)
            round_due = bool(instant.rounds)
            self._rounds_at(now, round_due, bool(instant.finished), again, arrived)
        if self._progress is not None and self.stats.done != self._reported:
            self._reported = self.stats.done
            self._progress(self._reported)

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

    def _schedule_round(self, ts: int, kind: int) -> None:
        """Put a round of ``kind`` (``_GRID_ROUND``, ``_WINDOW_ROUND``) in the agenda."""
        self.model.timeline.schedule(ts, EventPriority.ROUND, kind)

    def _push(self, event: CoreEvent) -> None:
        """Deliver one event to the core, counted."""
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
        model = self.model
        if isinstance(event, JobsPush):
            model.accept(event.payload.jobs)
        elif isinstance(event, JobUpdate) and event.payload.run_limit_s is not None:
            self.records[event.payload.jobid].run_limit_s = event.payload.run_limit_s
        elif isinstance(event, ConfigPush):
            model.queues = {queue.name: queue for queue in event.payload.config.queues}
        elif isinstance(event, QueueUpdate):
            model.queues[event.payload.queue.name] = event.payload.queue
        return True

    def _round(self, now: int) -> None:
        """Run a round at ``now`` and act on its decisions; while a round's
        preemption suspends victims, run a further one at the same instant, so the
        preemptor can start on what they gave back."""
        for _ in range(_MAX_ROUNDS_PER_INSTANT):
            if not self._one_round(now):
                return
        raise SimulationLoopError(
            f"more than {_MAX_ROUNDS_PER_INSTANT:,} rounds at {self.model.s(now):,} s each "
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
            if isinstance(decision, Pend) and decision.reason.main is PendingCode.QUEUE_WINDOW:
                self._window_held[decision.jobid] = self.model.queue_of[decision.jobid]
            suspended |= self.model.apply(decision)
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
                record.first_predicted_start_s = self.model.s(reservation.start_ts)

    def _on_grid(self, ts: int) -> bool:
        assert self._interval_ns is not None
        return (ts - self._anchor_ns) % self._interval_ns == 0

    def _plan_grid_round(self, now: int) -> None:
        """Keep one grid round in the agenda while jobs pend or run, and while a round
        could still decide something new (see the module docstring)."""
        model = self.model
        alive = model.pending or model.running or model.suspended
        if self._next_round_ns is not None or not alive:
            return
        nothing_comes = not model.agenda  # called-off finishes do not count
        finishing = model.running - model.endless_running
        if not finishing and nothing_comes and self._last_round_ns == now:
            # Nothing runs to an end, nothing comes: the jobs left pending never
            # start (and the suspended ones are never resumed: nothing will free
            # their hosts).
            return
        assert self._interval_ns is not None
        base = self._anchor_ns
        steps = (now - base) // self._interval_ns + 1
        next_round_ns = base + steps * self._interval_ns
        self._schedule_round(next_round_ns, _GRID_ROUND)
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
            for text in self.model.queues[queue].run_windows
        }
        opening_ns = next_opening(sorted(windows), now // NS) * NS
        if opening_ns <= now or opening_ns == self._window_round_ns:
            return
        self._schedule_round(opening_ns, _WINDOW_ROUND)
        self._window_round_ns = opening_ns


#: The kind of a ROUND agenda entry: a round of the grid, or one at a run window's
#: opening.
_GRID_ROUND, _WINDOW_ROUND = 0, -1

#: Rounds at one instant that each suspend victims before the emulator gives up on a
#: core that keeps preempting (every such round suspends at least one running job,
#: so a sane core stops far below this).
_MAX_ROUNDS_PER_INSTANT = 100_000
