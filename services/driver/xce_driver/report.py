"""The figures of a simulation: waits, slowdowns, utilization, makespan.

Definitions (the usual ones of the job-scheduling literature, e.g. Feitelson et al.,
"Parallel job scheduling — a status report", JSSPP 2004):

* wait time = start − submit (s), over jobs that started;
* bounded slowdown = max(1, (wait + run) / max(run, τ)), τ = 10 s, over finished jobs;
* makespan = last end − first submit (s);
* utilization = Σ run × tasks / (cluster slots × makespan), over finished jobs.

A mean, median or maximum over no jobs at all (no job started, or none finished) is
None (``null`` in JSON, "n/a" in the summary), never a made-up 0.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xce_driver.emulator import JobRecord

#: τ of the bounded slowdown, s.
SLOWDOWN_BOUND_S = 10


@dataclass(frozen=True, slots=True)
class Report:
    """A simulation's summary; ``to_json`` gives the ``--report`` document.

    Times are seconds. The wait figures are None when no job started, the mean
    bounded slowdown is None when no job finished (nothing to average).
    """

    workload: str
    policy: str
    hosts: int
    slots: int
    jobs_total: int
    jobs_started: int
    jobs_finished: int
    jobs_skipped: int
    jobs_rejected: int
    jobs_never_started: int
    mean_wait_s: float | None
    median_wait_s: float | None
    max_wait_s: int | None
    mean_bounded_slowdown: float | None
    utilization: float
    makespan_s: int
    rounds: int
    events: int
    decisions: dict[str, int] = field(default_factory=dict)
    sim_wall_s: float = 0.0

    def to_json(self) -> dict[str, object]:
        """The report as a JSON-ready dict (field order as declared)."""
        return asdict(self)


def summarize(
    records: Iterable[JobRecord],
    *,
    workload: str,
    policy: str,
    hosts: int,
    slots: int,
    skipped: int,
    rounds: int,
    events: int,
    decisions: Mapping[str, int],
    sim_wall_s: float,
) -> Report:
    """Compute the report from every job's record.

    ``jobs_total`` counts the workload's records, skipped ones included.
    """
    records = list(records)
    started = [r for r in records if r.start_s is not None]
    finished = [r for r in started if r.end_s is not None]
    waits = [r.start_s - r.submit_s for r in started if r.start_s is not None]
    slowdowns = [
        max(1.0, (r.start_s - r.submit_s + r.run_s) / max(r.run_s, SLOWDOWN_BOUND_S))
        for r in finished
        if r.start_s is not None
    ]
    makespan = 0
    work = 0
    if finished:
        first_submit = min(r.submit_s for r in records)
        makespan = max(r.end_s for r in finished if r.end_s is not None) - first_submit
        work = sum(r.run_s * r.tasks for r in finished)
    rejected = sum(r.rejected for r in records)
    return Report(
        workload=workload,
        policy=policy,
        hosts=hosts,
        slots=slots,
        jobs_total=len(records) + skipped,
        jobs_started=len(started),
        jobs_finished=len(finished),
        jobs_skipped=skipped,
        jobs_rejected=rejected,
        jobs_never_started=len(records) - len(started) - rejected,
        mean_wait_s=round(statistics.fmean(waits), 3) if waits else None,
        median_wait_s=float(statistics.median(waits)) if waits else None,
        max_wait_s=max(waits) if waits else None,
        mean_bounded_slowdown=round(statistics.fmean(slowdowns), 4) if slowdowns else None,
        utilization=round(work / (slots * makespan), 6) if makespan and slots else 0.0,
        makespan_s=makespan,
        rounds=rounds,
        events=events,
        decisions=dict(sorted(decisions.items())),
        sim_wall_s=round(sim_wall_s, 3),
    )


def write_jobs_csv(records: Iterable[JobRecord], path: str | Path) -> None:
    """Per-job CSV: ``jobid,submit_s,start_s,end_s,tasks,hosts``.

    Times are s from the trace origin, empty where the job never started or ended;
    ``hosts`` is the space-separated host names of its allocation.
    """
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["jobid", "submit_s", "start_s", "end_s", "tasks", "hosts"])
        for r in sorted(records, key=lambda record: record.jobid):
            writer.writerow(
                [
                    r.jobid,
                    r.submit_s,
                    "" if r.start_s is None else r.start_s,
                    "" if r.end_s is None else r.end_s,
                    r.tasks,
                    " ".join(r.hosts),
                ]
            )
