"""A deliberately naive textbook EASY backfilling simulator, for one-slot hosts only.

It is an independent oracle for the core's ``easy`` backfill policy (issue 15), as
``naive_fcfs.py`` is for greedy first fit: no index, no picker, no events, no import
from the core, just lists scanned every round. On a cluster of one-slot hosts and
plain requests, start times must agree with the core job for job.

Rounds are those of ``naive_fcfs``: at every instant where a job ends or arrives
(ends first), pending jobs in (submit time, jobid) order; a job that ends the
instant it starts gives a further round at that instant. Each round is textbook
EASY (Lifka 1995; Mu'alem and Feitelson, IEEE TPDS 12(6), 2001):

1. jobs start from the head of the queue while the head fits in the free slots;
2. for the first job that does not fit (the *blocked* job), the *shadow time* is
   the earliest expected end of a running job at which it would fit: running jobs
   are walked by expected end, adding their slots to the free ones, until the
   blocked job's tasks are covered. The *extra* slots are those free at the shadow
   time (every running job expected to end by then counted, ties included) beyond
   the blocked job's need;
3. each later job, in order, starts if it fits now and either ends by the shadow
   time (now + its run limit ≤ shadow: "by" includes the shadow time itself) or uses
   no more than the extra slots; a job that starts and ends after the shadow takes
   its slots off the extra.

A job's *expected end* is its start + its run limit (``run_limit_s``: the user's
requested time, or its run time with exact estimates); a running job past its
expected end (it ran longer than it asked) is expected to end now. A job runs its
run time (``run_s``), whatever its limit: nothing kills it here. A job larger than
the cluster never starts and blocks nobody (it is dropped, as ``naive_fcfs`` drops
it). With ``strict``, step 3 is left out: the blocked job blocks every job behind it
(head-of-line blocking, flux-sched's ``fcfs`` queue policy).

Input jobs are ``(jobid, submit_s, run_s, tasks, run_limit_s)``, times in whole
seconds, ``run_limit_s`` ≥ 1; the output is each started job's start time.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

#: A job: (jobid, submit_s, run_s, tasks, run_limit_s).
Job = tuple[int, int, int, int, int]


def simulate(jobs: Iterable[Job], hosts: int, *, strict: bool = False) -> dict[int, int]:
    """Start time (s) of each job under textbook EASY (or strict FCFS) backfilling.

    Args:
        jobs: ``(jobid, submit_s, run_s, tasks, run_limit_s)``; ``run_limit_s`` ≥ 1.
        hosts: one-slot hosts in the cluster.
        strict: head-of-line blocking instead of EASY: no job starts past the first
            one that does not fit.

    Returns:
        jobid → start time, s; jobs larger than the cluster never start (absent).

    Raises:
        ValueError: a run limit below 1 s.
    """
    arrivals = sorted(jobs, key=lambda j: (j[1], j[0]))
    for job in arrivals:
        if job[4] < 1:
            raise ValueError(f"job {job[0]}: run limit {job[4]} s is below 1 s")
    free = hosts
    ends: list[tuple[int, int, int]] = []  # (actual end time, jobid, tasks): the heap
    running: dict[int, tuple[int, int]] = {}  # jobid → (expected end, tasks)
    pending: list[Job] = []
    starts: dict[int, int] = {}
    now = 0

    def start(job: Job) -> None:
        nonlocal free
        jobid, _, run, tasks, limit = job
        free -= tasks
        starts[jobid] = now
        running[jobid] = (now + limit, tasks)
        heapq.heappush(ends, (now + run, jobid, tasks))

    i = 0
    while i < len(arrivals) or ends:
        now = min(arrivals[i][1] if i < len(arrivals) else 1 << 62, ends[0][0] if ends else 1 << 62)
        changed = True
        while changed:
            changed = False
            while ends and ends[0][0] == now:
                _, jobid, tasks = heapq.heappop(ends)
                del running[jobid]
                free += tasks
                changed = True
            while i < len(arrivals) and arrivals[i][1] == now:
                if arrivals[i][3] <= hosts:  # larger than the cluster: never, blocks nobody
                    pending.append(arrivals[i])
                i += 1
                changed = True
            if not changed:
                break
            pending.sort(key=lambda j: (j[1], j[0]))
            # 1. From the head while the head fits.
            k = 0
            while k < len(pending) and pending[k][3] <= free:
                start(pending[k])
                k += 1
            still = pending[k:]
            if still and not strict:
                # 2. The blocked job's shadow time and the extra slots.
                need = still[0][3]
                expected = sorted((max(end, now), tasks) for end, tasks in running.values())
                avail = free
                shadow = now
                for end, tasks in expected:
                    avail += tasks
                    if avail >= need:
                        shadow = end
                        break
                extra = free + sum(tasks for end, tasks in expected if end <= shadow) - need
                # 3. Later jobs: fit now, and end by the shadow or fit in the extra.
                left = [still[0]]
                for job in still[1:]:
                    tasks, limit = job[3], job[4]
                    ends_by_shadow = now + limit <= shadow
                    if tasks <= free and (ends_by_shadow or tasks <= extra):
                        start(job)
                        if not ends_by_shadow:
                            extra -= tasks
                    else:
                        left.append(job)
                still = left
            pending = still
            # Jobs that end the instant they start give a further round now.
            changed = bool(ends) and ends[0][0] == now
    return starts
