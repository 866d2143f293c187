"""The figures of a simulation: waits, slowdowns, utilization, makespan.

Definitions (the usual ones of the job-scheduling literature, e.g. Feitelson et al.,
"Parallel job scheduling — a status report", JSSPP 2004):

* wait time = start − submit (s), over jobs that started (the first dispatch: a
  job preempted later does not wait again);
* bounded slowdown = max(1, response / max(run, τ)), τ = 10 s, over finished jobs,
  where response = end − submit (wait + run + time suspended) and run is the time
  it actually ran (up to its run limit when killed);
* makespan = last end − first submit (s);
* utilization = Σ run × tasks / (cluster slots × makespan), over finished jobs
  (time suspended holds no slots and is left out).

Preemption and limits: ``suspensions`` counts every suspension of a running job by
preemption, ``jobs_preempted`` the jobs suspended at least once, ``resumes`` the
suspended jobs resumed, ``jobs_left_suspended`` those still suspended when the run
ended (suspended and neither resumed nor ended since), ``jobs_left_running`` those
that started and were still running when the run ended (a live emulation that gave
up at its timeout; 0 otherwise), ``jobs_killed_by_runlimit`` the jobs killed at
their queue's run limit (counted as finished). ``jobs_rejected`` counts every job the controller
turned away, ``jobs_rejected_queue_closed`` those submitted to a closed queue.

Start-time prediction: a job's *first predicted start* is the start the core
predicted for it in the first round that made it a reservation (a backfill policy
other than ``greedy``; ``JobRecord.first_predicted_start_s``). ``predicted_jobs``
counts the jobs that got one and started; over them, ``prediction_mae_s`` is the
mean absolute error |actual start − first predicted start| (s) and
``prediction_mean_error_s`` the mean signed error, actual − predicted (s; positive:
later than predicted, e.g. running jobs outlasting their run limits; negative:
earlier, e.g. jobs ending before their run limits). Both are None when no job got
a prediction and started.

Skipped records: ``jobs_skipped`` counts the workload's records that could not
become jobs, and ``jobs_skipped_by_reason`` splits that count by reason (every reason
of ``mapping.SKIP_REASONS``, zeros included: ``{"unknown_submit_time": 0,
"unknown_run_time": 5671, "no_processors": 0}``).

Distributions and breakdowns (``xce_driver.metrics``): ``wait_percentiles_s`` and
``bounded_slowdown_percentiles`` give p50, p90 and p99; ``queues``, ``users`` and
``sizes`` (job-size classes in powers of two: ``1``, ``2``, ``3-4``, ...) give each
group's ``jobs``, ``jobs_started``, ``jobs_finished``, ``mean_wait_s``,
``p90_wait_s``, ``mean_bounded_slowdown`` and ``usage_slot_s`` (the slots × s its
ended jobs ran, suspended time left out: what a fair share charges undecayed).

A mean, median, percentile or maximum over no jobs at all (no job started, or none finished) is
None (``null`` in JSON, "n/a" in the summary), never a made-up 0.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xce_schemas import SchedulerConfig

from xce_driver.cluster.controller import REJECT_QUEUE_CLOSED
from xce_driver.cluster.jobs import JobRecord
from xce_driver.metrics import (
    TimeSeries,
    bounded_slowdown,
    breakdown,
    percentiles,
    size_class,
    wait_s,
)
from xce_driver.workloads.mapping import SkippedRecord


@dataclass(frozen=True, slots=True)
class Report:
    """A simulation's summary; ``to_json`` gives the ``--report`` document.

    Times are seconds. The wait figures are None when no job started, the mean
    bounded slowdown is None when no job finished, the prediction errors are None
    when no job that started had a predicted start (nothing to average).

    ``queues``, ``users`` and ``sizes`` give each group's figures, in name order
    (sizes in size order): see the module docstring. ``load_factor`` is the load
    factor the workload's submit times were scaled by (``--load-factor``; 1: as
    written).
    """

    workload: str
    policy: str
    hosts: int
    slots: int
    jobs_total: int
    jobs_started: int
    jobs_finished: int
    jobs_skipped: int
    jobs_skipped_by_reason: dict[str, int]
    jobs_rejected: int
    jobs_never_started: int
    jobs_rejected_queue_closed: int
    jobs_killed_by_runlimit: int
    jobs_preempted: int
    suspensions: int
    resumes: int
    jobs_left_suspended: int
    jobs_left_running: int
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
    predicted_jobs: int = 0
    prediction_mae_s: float | None = None
    prediction_mean_error_s: float | None = None
    backfill: str = "greedy"
    users: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    wait_percentiles_s: dict[str, float | None] = field(default_factory=dict)
    bounded_slowdown_percentiles: dict[str, float | None] = field(default_factory=dict)
    queues: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    sizes: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    load_factor: float = 1.0

    def to_json(self) -> dict[str, object]:
        """The report as a JSON-ready dict (field order as declared)."""
        return asdict(self)


def backfill_label(config: SchedulerConfig) -> str:
    """The backfill policy of a run, in words: the scheduler's (with its depth and
    parameters), then each queue's that overrides it (``easy; queue big:
    conservative``)."""

    def one(policy: str, depth: int | None, params: dict[str, bool | int]) -> str:
        text = str(policy) + ("" if depth is None else f", depth {depth}")
        return text + "".join(
            f", {key}" if value is True else f", {key} {value}"
            for key, value in sorted(params.items())
            if value is not False
        )

    parts = [one(config.backfill, config.reservation_depth, config.backfill_params)]
    parts += [
        f"queue {queue.name}: {one(queue.backfill, queue.reservation_depth, queue.backfill_params)}"
        for queue in config.queues
        if queue.backfill is not None
    ]
    return "; ".join(parts)


def summarize(
    records: Iterable[JobRecord],
    *,
    workload: str,
    policy: str,
    hosts: int,
    slots: int,
    skipped: Mapping[str, int],
    rounds: int,
    events: int,
    decisions: Mapping[str, int],
    sim_wall_s: float,
    backfill: str = "greedy",
    load_factor: float = 1.0,
) -> Report:
    """Compute the report from every job's record.

    ``backfill`` is the backfill policy the run used, in words (``backfill_label``);
    ``load_factor`` the load factor of its workload (``MappedWorkload.load_factor``).

    ``skipped`` is the workload's records skipped, by reason (``MappedWorkload.skipped``);
    ``jobs_total`` counts the workload's records, skipped ones included.
    """
    records = list(records)
    started = [r for r in records if r.start_s is not None]
    ran = [(r, r.ran_s, r.end_s) for r in started if r.ran_s is not None and r.end_s is not None]
    waits = [w for w in map(wait_s, started) if w is not None]
    # Actual − first predicted start, s, of the jobs that got a prediction and started.
    errors = [
        r.start_s - r.first_predicted_start_s
        for r in started
        if r.start_s is not None and r.first_predicted_start_s is not None
    ]
    slowdowns = [s for s in (bounded_slowdown(r) for r, _, _ in ran) if s is not None]
    makespan = 0
    work = 0
    if ran:
        first_submit = min(r.submit_s for r in records)
        makespan = max(end for _, _, end in ran) - first_submit
        work = sum(run * r.tasks for r, run, _ in ran)
    rejected = sum(r.rejected for r in records)
    suspensions = sum(r.times_suspended for r in records)
    # Started and never ended: either suspended last (and never resumed), or still
    # running when the run stopped (a live emulation that timed out).
    left_suspended = sum(r.left_suspended for r in started)
    left_running = len(started) - len(ran) - left_suspended
    return Report(
        workload=workload,
        policy=policy,
        hosts=hosts,
        slots=slots,
        jobs_total=len(records) + sum(skipped.values()),
        jobs_started=len(started),
        jobs_finished=len(ran),
        jobs_skipped=sum(skipped.values()),
        jobs_skipped_by_reason=dict(skipped),
        jobs_rejected=rejected,
        jobs_never_started=len(records) - len(started) - rejected,
        jobs_rejected_queue_closed=sum(r.rejected_reason == REJECT_QUEUE_CLOSED for r in records),
        jobs_killed_by_runlimit=sum(r.killed_by_runlimit for r in records),
        jobs_preempted=sum(r.times_suspended > 0 for r in records),
        suspensions=suspensions,
        resumes=sum(r.times_resumed for r in records),
        jobs_left_suspended=left_suspended,
        jobs_left_running=left_running,
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
        predicted_jobs=len(errors),
        prediction_mae_s=round(statistics.fmean(map(abs, errors)), 3) if errors else None,
        prediction_mean_error_s=round(statistics.fmean(errors), 3) if errors else None,
        backfill=backfill,
        users=breakdown(records, lambda r: r.user),
        wait_percentiles_s=percentiles(waits),
        bounded_slowdown_percentiles=percentiles(slowdowns, 4),
        queues=breakdown(records, lambda r: r.queue),
        sizes=breakdown(records, lambda r: size_class(r.tasks), by_size=True),
        load_factor=load_factor,
    )


#: Columns of the per-job CSV (``--jobs-out``).
CSV_COLUMNS = (
    "jobid",
    "submit_s",
    "start_s",
    "end_s",
    "tasks",
    "hosts",
    "times_suspended",
    "suspended_s",
    "killed_by_runlimit",
    "rejected",
    "run_limit_s",
    "first_predicted_start_s",
    "queue",
    "user",
    "wait_s",
    "bounded_slowdown",
    "status",
    "skipped",
)

#: ``status`` of a job in the per-job CSV, by what became of it.
STATUSES = ("finished", "running", "suspended", "never_started", "rejected", "skipped")


def status(record: JobRecord) -> str:
    """What became of a job (``STATUSES``, ``skipped`` aside): rejected by the
    controller, finished (or killed), left suspended, left running, or never
    started."""
    if record.rejected:
        return "rejected"
    if record.end_s is not None:
        return "finished"
    if record.left_suspended:
        return "suspended"
    return "never_started" if record.start_s is None else "running"


def write_jobs_csv(
    records: Iterable[JobRecord], path: str | Path, skipped: Iterable[SkippedRecord] = ()
) -> None:
    """Per-job CSV: ``CSV_COLUMNS``, one line per job and per skipped record, in
    jobid order.

    Times are s from the trace origin, empty where the job never started or ended;
    ``hosts`` is the space-separated host names of its allocation;
    ``times_suspended`` and ``suspended_s`` (s) its preemptions; ``killed_by_runlimit``
    1 when its queue's run limit killed it, else 0; ``rejected`` empty, or why the
    controller turned it away (``larger_than_cluster``, ``queue_closed``);
    ``run_limit_s`` the job's own run limit, s (from a trace: its requested time, or
    its run time, by ``--swf-estimate``), empty when it gave none;
    ``first_predicted_start_s`` the start the core first predicted for it (s from
    the trace origin), empty when no round predicted one; ``queue`` and ``user``
    as submitted; ``wait_s`` (s) and ``bounded_slowdown`` as the report defines
    them, empty when it never started or never ended; ``status`` one of
    ``STATUSES``; ``skipped`` why a workload record could not become a job (a
    ``SKIP_REASONS`` of the mapping; its row gives only its jobid and, when known,
    its submit time), else empty.
    """
    rows: list[tuple[int, list[object]]] = []
    for r in records:
        slowdown = bounded_slowdown(r)
        rows.append(
            (
                r.jobid,
                [
                    r.jobid,
                    r.submit_s,
                    "" if r.start_s is None else r.start_s,
                    "" if r.end_s is None else r.end_s,
                    r.tasks,
                    " ".join(r.hosts),
                    r.times_suspended,
                    r.suspended_s,
                    int(r.killed_by_runlimit),
                    r.rejected_reason,
                    "" if r.run_limit_s is None else r.run_limit_s,
                    "" if r.first_predicted_start_s is None else r.first_predicted_start_s,
                    r.queue,
                    r.user,
                    _blank(wait_s(r)),
                    "" if slowdown is None else round(slowdown, 4),
                    status(r),
                    "",
                ],
            )
        )
    for record in skipped:
        row: list[object] = [""] * len(CSV_COLUMNS)
        row[0], row[1] = record.jobid, _blank(record.submit_s)
        row[-2:] = ["skipped", record.reason]
        rows.append((record.jobid, row))
    rows.sort(key=lambda row: row[0])
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(row for _, row in rows)


def write_series_csv(series: TimeSeries, path: str | Path) -> None:
    """The time series as CSV (``--series-out``): ``TimeSeries.COLUMNS``, one line per
    sample: its time (s from the trace origin), pending and running jobs, busy
    slots, utilization (0 to 1)."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(TimeSeries.COLUMNS)
        writer.writerows(series.rows())


def _blank(value: int | None) -> object:
    return "" if value is None else value
