"""The core's preemption step and resume pass (Req 6; DESIGN "No preemption thrash",
"Suspended jobs come back").

``SchedCore`` calls ``Preemptor.decide`` when a job did not fit and its queue preempts
(or its preemption is in flight), ``Preemptor.on_hold`` when its queue holds a job
whose preemption is in flight, then ``carry_out`` once the job's decision can no
longer be cancelled; ``resume`` at the start of every session. Deciding never changes
the state: a cancelled session leaves nothing half-done.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xce_schemas import JobState, PendingCode, Preempt

from xce_core.alloc.outcome import Unsatisfied
from xce_core.in_tree import DEFAULT_PREEMPT_POLICY
from xce_core.plugins import CoreView, PluginRegistry, PreemptPolicy
from xce_core.preempt.resume import Waiting, has_room, suspended_by_preemption
from xce_core.preempt.search import find_victims, safe_candidates
from xce_core.readiness import exceeds_limits
from xce_core.state import ClusterState, Job, Preemption, Queue

if TYPE_CHECKING:  # the session module runs the preemptor: no import loop
    from xce_core.session import SessionState

log = logging.getLogger("xce_core")


@dataclass(frozen=True, slots=True)
class Plan:
    """What a failed allocation leads to.

    Attributes:
        cache: the failure is final this session: it fills the unsatisfiable cache.
        drop: forget the job's preemption record (done, given up or replaced).
        victims: start a preemption of these jobs (PREEMPT).
        ignored: give up the preemption: these victims did not suspend.
    """

    cache: bool
    drop: bool = False
    victims: tuple[int, ...] = ()
    ignored: tuple[int, ...] = ()

    @property
    def final(self) -> bool:
        """Whether the failure stands this session and nothing is in flight for the
        job: no preemption started, waited for or given up (a record dropped with
        it is all there is to carry out). The job then takes its reservation, as
        any blocked job of its policy, and may be parked."""
        return self.cache


#: The failure stands and is cached; nothing else to do.
FINAL = Plan(cache=True)
#: Waiting for victims to suspend (or for the queue that holds the job): nothing to
#: do, nothing cached.
WAIT = Plan(cache=False)
#: The job can never run (held by a slot limit below its tasks, or a request no
#: host could hold): its preemption in flight is moot.
DROP = Plan(cache=False, drop=True)

#: The queue holds that pass (the queue is activated, a run window opens, a job of
#: the queue ends): a preemptor they hold keeps its preemption in flight.
_PASSING = frozenset(
    {
        PendingCode.QUEUE_INACTIVE,
        PendingCode.QUEUE_WINDOW,
        PendingCode.QUEUE_SLOT_LIMIT,
        PendingCode.QUEUE_USER_SLOT_LIMIT,
    }
)


def waiting_reason(victims: Sequence[int]) -> Unsatisfied:
    """The reason of a job waiting for ``victims`` to suspend (``PREEMPT_WAIT``)."""
    detail = f"jobs {', '.join(map(str, victims))}"
    return Unsatisfied(PendingCode.PREEMPT_WAIT, resolvable=False, detail=detail)


class Preemptor:
    """Preemption for one core.

    Args:
        state: the core's cluster state (the preemptions in flight live there).
        registry: the preemption policies a queue may name.
        view: the read-only view policies get, and the session's cancellation point.

    Attributes:
        made: PREEMPT decisions made (a metric, not state).
        given_up: preemptions given up because victims did not suspend (a metric).
    """

    def __init__(self, state: ClusterState, registry: PluginRegistry, view: CoreView) -> None:
        self.state = state
        self.registry = registry
        self.view = view
        self.made = 0
        self.given_up = 0
        self._policies: dict[str, PreemptPolicy] = {}

    def decide(
        self, job: Job, queue: Queue, failed: Unsatisfied, session: SessionState
    ) -> tuple[Unsatisfied, Plan]:
        """What to do about ``job``, which did not fit (``failed``): wait for its
        preemption in flight, give that up, start a new one, or nothing (the failure
        is final for this session and goes into the cache). Returns the job's
        pending reason and the plan ``carry_out`` applies; changes nothing.

        Raises:
            SessionCancelled: the session was cancelled during the victim search.
        """
        state = self.state
        record = state.preemptions.get(job.jobid)
        drop = record is not None
        if record is not None:
            in_flight = self._in_flight(record, session)
            if in_flight is not None:
                return in_flight
        final = Plan(cache=True, drop=drop)
        if not failed.resolvable or not queue.preemptible_queues:
            return failed, final
        key = (queue.name, job.priority)
        candidates = session.candidates.get(key)
        if candidates is None:
            candidates = session.candidates[key] = safe_candidates(state, job, queue)
        if not candidates:
            return failed, final
        policy = self._policy(queue.preempt_policy or DEFAULT_PREEMPT_POLICY)
        victims = find_victims(state, job, candidates, policy, self.view.check_cancel)
        if not victims:
            return failed, final
        return waiting_reason(victims), Plan(cache=False, drop=drop, victims=victims)

    def on_hold(self, job: Job, queue: Queue, hold: Unsatisfied, session: SessionState) -> Plan:
        """The plan for ``job``, which its queue's readiness holds this session
        (``hold``: inactive, outside its run windows, at a slot limit; or why it
        can never run). Changes nothing.

        Returns:
            ``FINAL`` when no preemption is in flight for it; ``WAIT`` while one is
            and the hold passes (its victims' room stays owed to it, and no second
            preemption is made for the same need); a plan that gives it up when its
            victims are still running after ``preempt_timeout_rounds`` rounds, as
            ``decide`` does; ``DROP`` when the job can never run in its queue (the
            room would be held for nothing, its victims kept suspended).
        """
        record = self.state.preemptions.get(job.jobid)
        if record is None:
            return FINAL
        if hold.code not in _PASSING or exceeds_limits(job, queue):
            return DROP
        in_flight = self._in_flight(record, session)
        return WAIT if in_flight is None else in_flight[1]

    def _in_flight(
        self, record: Preemption, session: SessionState
    ) -> tuple[Unsatisfied, Plan] | None:
        """What a preemption in flight leads to while one of its victims still runs:
        wait (no thrash: no second preemption), or, after ``preempt_timeout_rounds``
        rounds, give it up (the victims still running ignored it); None once every
        victim has let go."""
        state = self.state
        running = [
            victim
            for victim in record.victims
            if (other := state.jobs.get(victim)) is not None and other.state is JobState.RUN
        ]
        if not running:
            return None
        rounds = session.number - record.session
        if rounds < state.config.preempt_timeout_rounds:
            return waiting_reason(running), WAIT
        listed = ", ".join(map(str, running))
        detail = f"jobs {listed} still running after {rounds} rounds"
        given_up = Unsatisfied(PendingCode.PREEMPT_GIVEN_UP, False, detail=detail)
        return given_up, Plan(cache=False, drop=True, ignored=tuple(running))

    def carry_out(self, job: Job, plan: Plan, session: SessionState) -> Preempt | None:
        """Apply ``plan`` for ``job``; the PREEMPT decision to emit, if it starts one."""
        state = self.state
        if plan.drop:
            del state.preemptions[job.jobid]
        if plan.ignored:
            for victim in plan.ignored:
                state.jobs[victim].ignored_preemption = True
            self.given_up += 1
            log.warning(
                "session %d: preemption for job %d given up: jobs %s did not suspend",
                session.number,
                job.jobid,
                ", ".join(map(str, plan.ignored)),
            )
        if not plan.victims:
            return None
        state.preemptions[job.jobid] = Preemption(job.jobid, plan.victims, session.number)
        session.candidates.clear()  # the victims are taken now
        self.made += 1
        return Preempt(ts=session.start_ts, preempting_jobid=job.jobid, victim_jobids=plan.victims)

    def resume(self, now: int) -> list[Job]:
        """Resume, at ``now`` (ns), every preempted job whose hosts have room again,
        unless a pending job of higher priority waits for that room: each takes back
        what it held and runs. Returns them in resume order (the core emits a RESUME
        for each)."""
        state = self.state
        waiting: Waiting | None = None
        resumed = []
        for job in suspended_by_preemption(state):
            if not has_room(state, job):
                continue
            if waiting is None:
                waiting = Waiting(state)
            if waiting.blocker(job) is not None:
                continue
            state.resume(job, now)
            job.state = JobState.RUN
            resumed.append(job)
        return resumed

    def resume_hold(self, job: Job) -> str:
        """Why the preempted, suspended ``job`` is not resumed yet, in words (for
        ``explain``); empty when it would resume at the next round."""
        state = self.state
        for record in state.preemptions.values():
            if job.jobid in record.victims:
                return f"the preemption for job {record.preemptor} is still in flight"
        if not has_room(state, job):
            return "the hosts it held have no room for it yet"
        blocker = Waiting(state).blocker(job)
        if blocker is not None:
            return f"job {blocker}, of higher priority, waits for that room"
        return ""

    def _policy(self, name: str) -> PreemptPolicy:
        policy = self._policies.get(name)
        if policy is None:
            policy = self._policies[name] = self.registry.preempt_policies.get(name)(self.view)
        return policy
