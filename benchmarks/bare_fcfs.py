"""The bare-loop floor: the tightest greedy FCFS simulator we can write, for
one-slot hosts (so a job of N tasks starts whenever N slots are free).

Speed figures are printed as a ratio to this loop run in the same process: a heap
of finishes, a free-slot counter and a list of pending jobs, nothing else (no
events, no hosts, no records). Its semantics are ``naive_fcfs.py``'s, and it must
give the same start times (``tests/test_oracle.py`` checks it): rounds at every
instant where a job ends or arrives (ends first), pending jobs tried in
(submit time, jobid) order, a job that ends the instant it starts giving a further
round at that instant; jobs larger than the cluster never start.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable


def simulate(jobs: Iterable[tuple[int, int, int, int]], slots: int) -> dict[int, int]:
    """Start time of each job (s): ``jobs`` are ``(jobid, submit_s, run_s, tasks)``
    on ``slots`` one-slot hosts.

    Jobs larger than the cluster never start (absent from the result).
    """
    arrivals = sorted((job for job in jobs if job[3] <= slots), key=lambda j: (j[1], j[0]))
    ends: list[tuple[int, int]] = []  # (end s, tasks)
    pending: list[tuple[int, int, int, int]] = []  # in (submit, jobid) order
    starts: dict[int, int] = {}
    free, i, count = slots, 0, len(arrivals)
    push, pop = heapq.heappush, heapq.heappop
    while i < count or ends:
        # The next round: the next end or arrival (a job that ends the instant it
        # starts brings the round back to the same instant).
        now = arrivals[i][1] if i < count else ends[0][0]
        if ends and ends[0][0] < now:
            now = ends[0][0]
        while ends and ends[0][0] == now:
            free += pop(ends)[1]
        while i < count and arrivals[i][1] == now:
            pending.append(arrivals[i])
            i += 1
        if free and pending:
            still = []
            for at, job in enumerate(pending):
                if job[3] <= free:
                    free -= job[3]
                    starts[job[0]] = now
                    push(ends, (now + job[2], job[3]))
                    if not free:
                        still.extend(pending[at + 1 :])
                        break
                else:
                    still.append(job)
            pending = still
    return starts
