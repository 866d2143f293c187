"""Start-time prediction: when and where a pending job is expected to start, or why
no start is predicted for it (issue 15 item 5).

A job's expected start is its reservation from the last session
(``ClusterState.reservations``): the instant the planner found, from running jobs'
expected ends (start + run limit) and earlier reservations, and the hosts it
would take then. A pending job without one falls in exactly one of these cases,
told apart from what the last session left (its reservations, the jobs it reserved
for in vain, ``ClusterState.unplanned``) and the job's backfill policy:

* ``GREEDY``: its policy makes no reservations;
* ``NO_INSTANT``: the session tried to reserve for it, and the planner found no
  instant in view at which it could start: room it needs is held by jobs with no
  run limit (running, or reserved ahead of it), so when it frees is not known;
* ``BEYOND_DEPTH``: the session made as many reservations (or tries) as its
  policy's reservation depth, in its policy's domain, for other jobs;
* ``NOT_PLANNED``: none of these: the session did not try to reserve for it,
  though its policy's depth was not used up. The session reserves only for a job
  that could run once room frees; a job its queue holds (inactive, run windows,
  slot limits), one waiting for a preemption, one that can never run, and one
  that could not run were every running job gone (more tasks than the hosts that
  take jobs have slots: it needs hosts that are down or closed) get none (its
  pending reason says which).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from xce_schemas import JobState

from xce_core.alloc.outcome import Reservation
from xce_core.backfill import Policy, policy_of
from xce_core.state import ClusterState


class NoEstimateCode(StrEnum):
    """Why a pending job has no expected start (see the module docstring)."""

    GREEDY = "GREEDY"
    NO_INSTANT = "NO_INSTANT"
    BEYOND_DEPTH = "BEYOND_DEPTH"
    NOT_PLANNED = "NOT_PLANNED"


@dataclass(frozen=True, slots=True)
class NoEstimate:
    """Why no start is predicted for a pending job.

    Attributes:
        code: which case.
        policy: the job's backfill policy (its name, reservation depth and the
            domain the depth counts in: a queue that overrides, or None).
        ahead: with ``BEYOND_DEPTH``, the jobs the session tried to reserve for in
            the policy's domain: those it reserved for, in the order it did, then
            those it found no instant for (under ``strict``, the one job that holds
            this one back); empty otherwise.
    """

    code: NoEstimateCode
    policy: Policy
    ahead: tuple[int, ...] = ()


def expected_start(state: ClusterState, jobid: int) -> Reservation | None:
    """A pending job's reservation from the last session (when, ns, and where it is
    expected to start); None when it has none or is not pending."""
    job = state.jobs.get(jobid)
    if job is None or job.state is not JobState.PEND:
        return None
    return state.reservations.get(jobid)


def no_estimate(state: ClusterState, jobid: int) -> NoEstimate | None:
    """Why the last session predicted no start for a pending job; None when it did
    (``expected_start``), when the job is not pending, or when no session has
    considered it yet (it has no pending reason)."""
    job = state.jobs.get(jobid)
    if job is None or job.state is not JobState.PEND or job.pend_reason is None:
        return None
    if jobid in state.reservations:
        return None
    policy = policy_of(state, state.queues[job.queue])
    if not policy.depth:
        return NoEstimate(NoEstimateCode.GREEDY, policy)
    if jobid in state.unplanned:
        return NoEstimate(NoEstimateCode.NO_INSTANT, policy)
    # Every try the session made counts in its domain, whether it found an instant
    # or not (``ReservationBook.wants``). Room owed (a preemptor's victims' room, a
    # suspended job's own hosts) is reserved outside the policy's depth: it is not
    # counted. A job that left the cluster since has no domain to count in: it is
    # not counted either (the case then reads as NOT_PLANNED).
    tried = [
        *(other for other in state.reservations if _tried(state, other)),
        *state.unplanned,
    ]
    ahead = tuple(other for other in tried if _domain(state, other) == (policy.domain,))
    if len(ahead) >= policy.depth:
        return NoEstimate(NoEstimateCode.BEYOND_DEPTH, policy, ahead)
    return NoEstimate(NoEstimateCode.NOT_PLANNED, policy)


def _tried(state: ClusterState, jobid: int) -> bool:
    """Whether a reservation of the last session counts in its policy's depth: its
    job is pending and no preemption is in flight for it (else the room is owed)."""
    job = state.jobs.get(jobid)
    return job is not None and job.state is JobState.PEND and jobid not in state.preemptions


def _domain(state: ClusterState, jobid: int) -> tuple[str | None] | None:
    """The domain a job's reservation counts in, as a 1-tuple; None: the job is gone."""
    job = state.jobs.get(jobid)
    if job is None:
        return None
    return (policy_of(state, state.queues[job.queue]).domain,)
