"""Run limits and expected ends: what backfilling and start-time prediction trust.

A job's run limit is the longest it may run, in seconds of running (LSF ``bsub -W``
and queue ``RUNLIMIT``, Slurm ``--time``): time suspended does not count, as LSF's
run limit leaves it out and as the emulator's kill rule does. The limit in force
is the job's own (``JobSpec.run_limit_s``) and its queue's ``run_limit_s``, the
smaller of the two when both are given: the queue's limit kills the job anyway,
so a job never runs past it, whatever it asked for (LSF refuses a ``-W`` above the
queue's limit; here the queue's simply wins). None: no limit is known, the job is
unbounded.

A running job's *expected end* is its start plus its limit, later by the time it
spent suspended; once it has run its whole limit (a user's estimate can be too
short: SDSC-SP2 has 4,134 such jobs), it is expected to end now. One rule covers
every state: expected end = now + max(0, limit − time run so far), where a pending
job has run nothing (the end if it started now) and a suspended one has run up to
its suspension (the end if it resumed now).

These are pure functions of the read-only views (``JobInfo``, ``QueueInfo``), for
the core, pickers and policies alike; they change no scheduling decision by
themselves.
"""

from __future__ import annotations

from xce_schemas import JobState

from xce_core.plugins import JobInfo, QueueInfo

NS = 1_000_000_000


def effective_run_limit_s(job: JobInfo, queue: QueueInfo | None) -> int | None:
    """The run limit in force for ``job``, s of running.

    Args:
        job: the job (its own ``run_limit_s``, None when not given).
        queue: its queue (its ``run_limit_s``, None for none), or None when unknown.

    Returns:
        The job's own limit, else its queue's, the smaller when both are given (the
        queue's kills it at its own); None when neither gives one (unbounded).
    """
    own = job.run_limit_s
    queue_limit = None if queue is None else queue.run_limit_s
    if own is None:
        return queue_limit
    return own if queue_limit is None else min(own, queue_limit)


def ran_ns(job: JobInfo, now_ns: int) -> int:
    """How long ``job`` has run since its start, ns, time suspended left out.

    Args:
        job: the job.
        now_ns: the time now, ns (the core's clock).

    Returns:
        0 for a pending job; for a running one ``now − start − suspended``; for a
        suspended one what it had run when it was suspended (``suspend_ts − start −
        suspended``). Never negative.
    """
    if job.state is JobState.PEND:
        return 0
    until = job.suspend_ts if job.state is JobState.SUSP else now_ns
    return max(0, until - job.start_ts - job.suspended_ns)


def expected_end_ns(job: JobInfo, queue: QueueInfo | None, now_ns: int) -> int | None:
    """When ``job`` is expected to end, ns, by its run limit in force.

    Args:
        job: the job.
        queue: its queue (for its ``run_limit_s``), or None when unknown.
        now_ns: the time now, ns (the core's clock).

    Returns:
        ``now + max(0, limit − ran_ns(job, now))``: for a running job its start plus
        its limit plus the time it spent suspended, or ``now`` once it has run its
        whole limit; for a suspended job the end if it resumed now; for a pending job
        the end if it started now. None when no limit is in force (unbounded).
    """
    limit_s = effective_run_limit_s(job, queue)
    if limit_s is None:
        return None
    return now_ns + max(0, limit_s * NS - ran_ns(job, now_ns))
