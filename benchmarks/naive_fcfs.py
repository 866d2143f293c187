"""A deliberately naive FCFS first-fit simulator, for one-slot hosts only.

It is the baseline of the simulation benchmark and an independent oracle for the
tests: no index, no picker, no events, no pydantic, just lists scanned every round.
Its semantics are those the core and the emulator document, on a cluster of
one-slot hosts: rounds at every instant where a job ends or arrives (ends first),
pending jobs tried in (submit time, jobid) order, a job of N tasks starting on the
first N free hosts in host order when there are N, a job that ends the instant it
starts giving a further round at that instant. Start times must agree with the core
job for job.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable


def simulate(jobs: Iterable[tuple[int, int, int, int]], hosts: int) -> dict[int, int]:
    """Start time of each job: ``jobs`` are ``(jobid, submit_s, run_s, tasks)``.

    Jobs larger than the cluster never start (absent from the result).
    """
    arrivals = sorted(jobs, key=lambda j: (j[1], j[0]))
    free = [True] * hosts
    ends: list[tuple[int, int, list[int]]] = []  # (end time, jobid, hosts)
    pending: list[tuple[int, int, int, int]] = []
    starts: dict[int, int] = {}
    i = 0
    while i < len(arrivals) or ends:
        now = min(arrivals[i][1] if i < len(arrivals) else 1 << 62, ends[0][0] if ends else 1 << 62)
        changed = True
        while changed:
            changed = False
            while ends and ends[0][0] == now:
                _, _, held = heapq.heappop(ends)
                for h in held:
                    free[h] = True
                changed = True
            while i < len(arrivals) and arrivals[i][1] == now:
                pending.append(arrivals[i])
                i += 1
                changed = True
            if not changed:
                break
            pending.sort(key=lambda j: (j[1], j[0]))
            still = []
            for job in pending:
                jobid, _, run, tasks = job
                idle = [h for h in range(hosts) if free[h]]
                if tasks <= len(idle):
                    held = idle[:tasks]
                    for h in held:
                        free[h] = False
                    starts[jobid] = now
                    heapq.heappush(ends, (now + run, jobid, held))
                elif tasks <= hosts:
                    still.append(job)
            pending = still
            # Jobs that end the instant they start give a further round now.
            changed = bool(ends) and ends[0][0] == now
    return starts
