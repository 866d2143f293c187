"""A deliberately naive textbook conservative (and hybrid) backfilling simulator, for
one-slot hosts only.

It is an independent oracle for reservation-depth backfilling, the sibling of
``naive_easy.py``: no index, no picker, no events, no import from the core, just
plain lists rebuilt and scanned every round.

Rounds are those of ``naive_easy``: at every instant where a job ends or arrives
(ends first, then arrivals), pending jobs in (submit time, jobid) order; a job that
ends the instant it starts gives a further round at that instant. A job larger than
the cluster never starts and blocks nobody (it is dropped).

Each round plans afresh (Mu'alem and Feitelson, IEEE TPDS 12(6), 2001, conservative
backfilling; flux-sched's qmanager queue policies ``conservative`` and ``hybrid``,
whose ``reservation-depth`` is ``depth`` here) on a *profile*: the free slots as a
step function of time from now on.

1. The profile starts with the slots free now; each running job gives its tasks
   back at its *expected end*, max(start + run limit, now): a job past its run limit
   is expected to end now.
2. Pending jobs are walked in order. For each, its *earliest fit* is the earliest
   instant t ≥ now, among now and the profile's change points, such that the
   profile has at least its tasks free at every instant of [t, t + run limit).
3. If the earliest fit is now and its tasks are really free now, the job starts: it
   holds [now, now + run limit) on the profile and the free slots drop. (The profile
   counts the slots of a job past its limit from now on, but they are not free
   until it really ends: a job fitting now only with them does not start.)
4. Else, if fewer than ``depth`` jobs have reserved this round (``depth`` None: no
   bound, conservative backfilling), the job *reserves*: [t, t + run limit) is taken
   off the profile, so no later job may take those slots, and t is recorded as its
   *first prediction* if no earlier round gave it one.
5. Else it neither starts nor reserves. A job that fits now without delaying any
   reservation made before it still starts (step 3 comes before the depth check):
   that is the backfilling.

A job's run limit (``run_limit_s``: the user's requested time, or its run time with
exact estimates) is what the plan trusts; the job runs its run time (``run_s``), its
actual end is start + run time, whatever its limit: nothing kills it here.

With ``depth=1`` this is textbook EASY, job for job ``naive_easy.simulate``: before
any reservation the profile is free now plus the slots given back by the expected
ends up to t, which never decreases in t (a job started now holds its slots until
its own expected end, where it gives them back). So:

* a job fits now on the profile ⇔ its tasks fit in the free slots: the jobs that
  start before the first reservation are EASY's jobs from the head while the head
  fits;
* the first job that does not fit is EASY's blocked job, and its earliest fit is the
  first expected end at which the free slots cover its tasks: EASY's *shadow time*
  (or now, when only slots of jobs past their limit cover it). It reserves
  [shadow, shadow + limit);
* a later job fits now ⇔ its tasks are free now and the profile holds them over
  [now, now + limit). Before the shadow the profile is at least the free slots, so a
  job that *ends by the shadow* (now + limit ≤ shadow) needs nothing more. A job
  that ends after it also needs the profile from the shadow on, whose least value
  is at the shadow itself (from there on the profile never decreases: the
  reservation gives its tasks back where it ends): the slots free at the shadow
  time, every expected end up to it counted, ties included, less the blocked job's
  tasks and those of every job started since that ends after the shadow: EASY's
  *extra* slots, taken off as EASY takes them (a job ending by the shadow gives its
  slots back by then and takes nothing off);
* the depth is used up by the blocked job: no later job reserves, as in EASY.

With ``depth=0`` no job reserves: a job starts whenever it fits now (greedy first
fit). Input jobs are ``(jobid, submit_s, run_s, tasks, run_limit_s)``, times in whole
seconds, ``run_limit_s`` ≥ 1.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterable

#: A job: (jobid, submit_s, run_s, tasks, run_limit_s).
Job = tuple[int, int, int, int, int]


def earliest_fit(times: list[int], free: list[int], tasks: int, limit: int) -> int:
    """Index of the earliest change point of a profile from which ``tasks`` slots
    stay free for ``limit`` seconds.

    Args:
        times: the profile's change points, s, increasing; ``times[0]`` is now.
        free: slots free from ``times[i]`` until ``times[i + 1]`` (the last value
            holds forever and must be at least ``tasks``).
        tasks: slots needed, at most the last value of ``free``.
        limit: how long they are needed, s (≥ 1).

    Returns:
        The least ``i`` such that ``free`` is at least ``tasks`` on every piece of
        the profile meeting [``times[i]``, ``times[i] + limit``).

    Raises:
        IndexError: ``tasks`` above the last value of ``free`` (it never fits).
    """
    n = len(times)
    i = 0
    while True:
        while free[i] < tasks:  # the first piece with room enough
            i += 1
        end = times[i] + limit
        j = i + 1
        while j < n and times[j] < end and free[j] >= tasks:
            j += 1
        if j == n or times[j] >= end:
            return i
        i = j + 1  # piece j is short of slots: try after it


def hold(times: list[int], free: list[int], i: int, end: int, tasks: int) -> None:
    """Take ``tasks`` slots off a profile from ``times[i]`` until ``end``, in place.

    Args:
        times: the profile's change points, s, increasing.
        free: slots free from ``times[i]`` until ``times[i + 1]``.
        i: index of the change point where the hold begins.
        end: when it ends, s, after ``times[i]``; a change point is added there if
            the profile has none.
        tasks: slots held.
    """
    k = bisect_left(times, end, i)
    if k == len(times) or times[k] != end:
        times.insert(k, end)
        free.insert(k, free[k - 1])
    for m in range(i, k):
        free[m] -= tasks


def simulate(
    jobs: Iterable[Job], hosts: int, *, depth: int | None = None
) -> tuple[dict[int, int], dict[int, int]]:
    """Start times (s) and first predicted starts (s) of each job under conservative
    (``depth`` None) or hybrid (``depth`` N) backfilling.

    Args:
        jobs: ``(jobid, submit_s, run_s, tasks, run_limit_s)``; times in s, tasks in
            slots, ``run_limit_s`` ≥ 1.
        hosts: one-slot hosts in the cluster (its slot count).
        depth: the most jobs that reserve in one round (the first ones, in queue
            order, that cannot start now); None: every such job (conservative);
            1: EASY; 0: none (greedy first fit).

    Returns:
        ``(starts, first_predictions)``: jobid → start time, s, for every job that
        started (jobs larger than the cluster never do: absent); jobid → start of
        the first reservation any round gave it, s (absent for a job that never
        reserved).

    Raises:
        ValueError: a run limit below 1 s, or a negative depth.
    """
    arrivals = sorted(jobs, key=lambda j: (j[1], j[0]))
    for job in arrivals:
        if job[4] < 1:
            raise ValueError(f"job {job[0]}: run limit {job[4]} s is below 1 s")
    if depth is not None and depth < 0:
        raise ValueError(f"reservation depth {depth} is below 0")
    free = hosts
    ends: list[tuple[int, int, int]] = []  # (actual end time, jobid, tasks): the heap
    running: dict[int, tuple[int, int]] = {}  # jobid → (expected end, tasks)
    pending: list[Job] = []
    starts: dict[int, int] = {}
    predictions: dict[int, int] = {}
    now = 0

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
            # 1. The profile: free now, each running job's tasks back at its expected end.
            times = [now]
            slots = [free]
            for end, tasks in sorted((max(end, now), tasks) for end, tasks in running.values()):
                if end == times[-1]:
                    slots[-1] += tasks
                else:
                    times.append(end)
                    slots.append(slots[-1] + tasks)
            # 2-5. Each pending job in order: start now, reserve, or neither.
            reserved = 0
            left: list[Job] = []
            for job in pending:
                jobid, _, run, tasks, limit = job
                k = earliest_fit(times, slots, tasks, limit)
                if k == 0 and tasks <= free:
                    hold(times, slots, 0, now + limit, tasks)
                    free -= tasks
                    starts[jobid] = now
                    running[jobid] = (now + limit, tasks)
                    heapq.heappush(ends, (now + run, jobid, tasks))
                    continue
                if depth is None or reserved < depth:
                    hold(times, slots, k, times[k] + limit, tasks)
                    reserved += 1
                    predictions.setdefault(jobid, times[k])
                left.append(job)
            pending = left
            # Jobs that end the instant they start give a further round now.
            changed = bool(ends) and ends[0][0] == now
    return starts, predictions
