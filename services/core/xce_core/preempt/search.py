"""The victim search of Req 6: who may be preempted, and the checks on a policy's
answer. The safety rules live here, in the core, outside any policy (Req 6 AC 9)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from xce_core.plugins import PreemptPolicy
from xce_core.preempt.trial import Trial, shared_wanted
from xce_core.state import ClusterState, Job, Queue

log = logging.getLogger("xce_core")


def safe_candidates(state: ClusterState, job: Job, queue: Queue) -> list[Job]:
    """The running jobs ``job`` may preempt, by the safety rules (Req 6 AC 3, 9):
    in one of its queue's ``preemptible_queues``, in a ``preemptible`` queue, of job
    priority strictly lower than ``job``'s, not a victim of a preemption in flight,
    and not a job that ignored an earlier preemption. By jobid, so the order does not
    depend on the order jobs started in (which a snapshot load does not keep)."""
    targets = {
        name
        for name in queue.preemptible_queues
        if name in state.queues and state.queues[name].preemptible
    }
    if not targets:
        return []
    chosen = {victim for record in state.preemptions.values() for victim in record.victims}
    priority = job.priority
    return [
        other
        for _, other in sorted(state.running.items())
        if other.queue in targets
        and other.priority < priority
        and other.jobid not in chosen
        and not other.ignored_preemption
    ]


def find_victims(
    state: ClusterState,
    job: Job,
    candidates: Sequence[Job],
    policy: PreemptPolicy,
    check_cancel: Callable[[], None],
) -> tuple[int, ...]:
    """The victims ``policy`` chooses for ``job`` among ``candidates``, checked.

    Only candidates that hold something ``job`` could use are offered (a place on a
    host that takes jobs and passes its select once the candidates are gone, or a
    share of a pool it reserves). The answer is refused, with an error logged,
    unless it is a non-empty set of offered jobs with which ``job`` fits in a trial.

    Returns:
        The victims in the policy's order, or () (no preemption).

    Raises:
        SessionCancelled: the session was cancelled; nothing changed.
    """
    trial = Trial(state, job, candidates, check_cancel)
    trial.release_all()
    shared = shared_wanted(trial.request, state)
    offered = [victim for victim in candidates if trial.useful(victim, shared)]
    if not offered:
        return ()
    victims = tuple(policy.select_victims(job, offered, trial))
    if not victims:
        return ()
    allowed = {victim.jobid for victim in offered}
    problem = None
    if len(set(victims)) != len(victims):
        problem = "names a victim twice"
    elif not allowed.issuperset(victims):
        outside = sorted(set(victims) - allowed)
        problem = f"chose jobs {outside} outside the safe candidates"
    elif not trial.fits(victims):
        problem = "chose victims that do not make room for the job"
    if problem is not None:
        log.error(
            "preempt policy %r %s for job %d; preemption refused",
            policy.name,
            problem,
            job.jobid,
        )
        return ()
    return victims
