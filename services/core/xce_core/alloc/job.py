"""Allocation of a whole job: PRIMARY, COMPOUND and ALTER (spec "Composition Algorithm").

* PRIMARY: ``allocate_primary`` with all the job's tasks.
* COMPOUND (AND of primaries): each part allocates in turn and is held at once, so
  the next part sees what the earlier ones took; when a part fails, every part held
  so far is given back and the compound fails: no residue, slots or reservations.
* ALTER (OR of compounds): the alternatives are tried in order; the first that
  allocates wins. When none does, the job pends with the first alternative's reason
  (the preferred shape's) among those that could fit once running jobs free room, so
  an alternative that can never fit neither names the reason nor stops preemption.

The allocation returned is already held in the cluster state; every record in it
carries the session's ``from`` (alloc-equality Req 4 AC 4). A cancelled session
gives back whatever the job held mid-way before the cancellation goes on.
"""

from __future__ import annotations

from collections.abc import Callable

from xce_schemas import JobAlloc, PendingCode

from xce_core.alloc.outcome import Placement, Unsatisfied
from xce_core.alloc.primary import NeverMemo, allocate_primary, never_fits
from xce_core.resreq.model import Alter, Compound, Primary, Resreq, ResreqError
from xce_core.state import ClusterState, Job

#: Turns a placement into allocation records (numbering instances, stamping ``from``).
Build = Callable[[Placement], JobAlloc]


def allocate_job(
    job: Job,
    request: Resreq | ResreqError,
    state: ClusterState,
    check_cancel: Callable[[], None],
    build: Build,
    memo: NeverMemo | None = None,
) -> JobAlloc | Unsatisfied:
    """Allocate ``job`` by its request and hold the allocation.

    Args:
        job: the job (``tasks`` slots).
        request: its parsed resource requirement, or the parser's refusal.
        state: the cluster state; the allocation is held in it on success.
        check_cancel: the session's cancellation point.
        build: makes the allocation records of a placement.
        memo: the session's memo of what no load changes (``NeverMemo``), if any.

    Returns:
        The held allocation, or ``Unsatisfied`` (nothing held).

    Raises:
        SessionCancelled: the session was cancelled; nothing is held.
    """
    if isinstance(request, ResreqError):
        return _bad(request)
    if isinstance(request, Alter):
        failed: list[Unsatisfied] = []
        for alternative in request.alternatives:
            outcome = _allocate(job, alternative, state, check_cancel, build, memo)
            if isinstance(outcome, JobAlloc):
                return outcome
            failed.append(outcome)
        return _first_reason(failed)
    return _allocate(job, request, state, check_cancel, build, memo)


def job_never_fits(
    job: Job, request: Resreq | ResreqError, state: ClusterState, memo: NeverMemo | None = None
) -> Unsatisfied | None:
    """Why ``job`` could never be placed by ``request``, whatever runs (a bad request,
    no host selected, more than the hosts it can use hold: ``never_fits`` of each
    primary), or None when it could be placed on an idle cluster.

    A compound never fits when one of its parts never does (each part alone, so a
    bound); an alternative request when none of its alternatives fits, with the
    reason ``allocate_job`` would give.
    """
    if isinstance(request, ResreqError):
        return _bad(request)
    if isinstance(request, Alter):
        failed: list[Unsatisfied] = []
        for alternative in request.alternatives:
            outcome = _never_fits(job, alternative, state, memo)
            if outcome is None:
                return None
            failed.append(outcome)
        return _first_reason(failed)
    return _never_fits(job, request, state, memo)


def _never_fits(
    job: Job, request: Primary | Compound, state: ClusterState, memo: NeverMemo | None
) -> Unsatisfied | None:
    if isinstance(request, Primary):
        return never_fits(request, job.tasks, state, memo)
    mismatch = _tasks_mismatch(job, request)
    if mismatch is not None:
        return mismatch
    for part in request.parts:
        outcome = never_fits(part.primary, part.tasks, state, memo)
        if outcome is not None:
            return outcome
    return None


def _bad(request: ResreqError) -> Unsatisfied:
    """The outcome of a request that did not parse: BAD_RESREQ with the parser's words."""
    detail = request.message
    if request.token and repr(request.token) not in detail:
        detail = f"{detail} ({request.token!r})"
    return Unsatisfied(PendingCode.BAD_RESREQ, resolvable=False, detail=detail)


def _first_reason(failed: list[Unsatisfied]) -> Unsatisfied:
    """An alternative request's reason: the first alternative's that could fit once
    running jobs free room (resolvable: preemption is tried for it); when none could,
    the first that is not a bad request; a job whose alternatives are all bad pends
    with the first one's BAD_RESREQ."""
    assert failed, "an alternative request has alternatives"
    for outcome in failed:
        if outcome.resolvable:
            return outcome
    for outcome in failed:
        if outcome.code is not PendingCode.BAD_RESREQ:
            return outcome
    return failed[0]


def _tasks_mismatch(job: Job, request: Compound) -> Unsatisfied | None:
    """BAD_RESREQ when the compound's parts do not add up to the job's tasks."""
    if request.tasks == job.tasks:
        return None
    return Unsatisfied(
        PendingCode.BAD_RESREQ,
        resolvable=False,
        detail=f"the compound requirement asks for {request.tasks} tasks, the job for {job.tasks}",
    )


def _allocate(
    job: Job,
    request: Primary | Compound,
    state: ClusterState,
    check_cancel: Callable[[], None],
    build: Build,
    memo: NeverMemo | None,
) -> JobAlloc | Unsatisfied:
    if isinstance(request, Primary):
        outcome = _primary(job, request, job.tasks, state, check_cancel, memo)
        if isinstance(outcome, Unsatisfied):
            return outcome
        alloc = build(outcome)
        state.hold(alloc)
        return alloc
    mismatch = _tasks_mismatch(job, request)
    if mismatch is not None:
        return mismatch
    held: list[JobAlloc] = []
    try:
        for part in request.parts:
            outcome = _primary(job, part.primary, part.tasks, state, check_cancel, memo)
            if isinstance(outcome, Unsatisfied):
                _give_back(state, held)
                return outcome
            piece = build(outcome)
            state.hold(piece)
            held.append(piece)
    except BaseException:
        _give_back(state, held)
        raise
    return JobAlloc(
        jobid=job.jobid,
        hosts=tuple(h for piece in held for h in piece.hosts),
        shared=tuple(s for piece in held for s in piece.shared),
    )


def _primary(
    job: Job,
    primary: Primary,
    tasks: int,
    state: ClusterState,
    check_cancel: Callable[[], None],
    memo: NeverMemo | None,
) -> Placement | Unsatisfied:
    return allocate_primary(
        job,
        state.host_order,
        state.free_index,
        state.capacity,
        check_cancel,
        primary=primary,
        tasks=tasks,
        state=state,
        memo=memo,
    )


def _give_back(state: ClusterState, held: list[JobAlloc]) -> None:
    """Roll back a compound: give back every part held so far, last first."""
    for piece in reversed(held):
        state.release(piece)
    held.clear()
