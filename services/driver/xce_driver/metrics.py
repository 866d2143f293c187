"""Figures of a run beyond the means: percentiles, breakdowns and time series.

All are computed from the jobs' records after the run (``JobRecord``), so they add
nothing to the simulation loop, and are the same for a simulation, a live
emulation and a what-if.

* Percentiles (p50, p90, p99) are linear between the closest ranks (the default of
  NumPy's ``percentile`` and of R's type 7), over the jobs that started (waits) or
  finished (bounded slowdowns); None over no job.
* Breakdowns group the records by queue, by user, or by job-size class: the number
  of slots asked for, in powers of two (``1``, ``2``, ``3-4``, ``5-8``, ...: the
  classes of Feitelson's workload studies).
* Time series are sampled on the virtual clock every ``interval_s`` from the first
  submission to the last end: pending jobs (submitted, not yet started; a job never
  started stays pending to the end, a rejected one never counts), running jobs and
  busy slots (started and not ended, time suspended left out) and utilization
  (busy slots / cluster slots). A sample at time t counts every change at or
  before t.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xce_driver.cluster.jobs import JobRecord

#: τ of the bounded slowdown, s.
SLOWDOWN_BOUND_S = 10
#: The percentiles the report gives, by name.
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0}
#: Samples of a time series when no interval is given.
DEFAULT_SAMPLES = 1000
#: At most this many samples in a time series (a run of a year at 5-min samples).
MAX_SAMPLES = 200_000


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0 to 100) of ``values``, linear between closest
    ranks; None for no values.

    Raises:
        ValueError: ``q`` outside 0 to 100.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0 to 100")
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def percentiles(values: Sequence[float], digits: int = 3) -> dict[str, float | None]:
    """``PERCENTILES`` of ``values``, rounded to ``digits``: ``{"p50": ..., ...}``."""
    out: dict[str, float | None] = {}
    for name, q in PERCENTILES.items():
        value = percentile(values, q)
        out[name] = None if value is None else round(value, digits)
    return out


def wait_s(record: JobRecord) -> int | None:
    """Its wait, s (first start − submit); None when it never started."""
    return None if record.start_s is None else record.start_s - record.submit_s


def bounded_slowdown(record: JobRecord) -> float | None:
    """Its bounded slowdown, max(1, response / max(run, τ)), τ = 10 s; None when it
    never ended."""
    ran = record.ran_s
    if ran is None or record.end_s is None:
        return None
    return max(1.0, (record.end_s - record.submit_s) / max(ran, SLOWDOWN_BOUND_S))


def size_class(tasks: int) -> str:
    """The job-size class of ``tasks`` slots: ``1``, ``2``, ``3-4``, ``5-8``, ..."""
    if tasks <= 2:
        return str(max(tasks, 1))
    high = 1 << (tasks - 1).bit_length()
    return f"{high // 2 + 1}-{high}"


def _size_order(label: str) -> int:
    return int(label.split("-")[-1])


def breakdown(
    records: Iterable[JobRecord], key: Callable[[JobRecord], str], *, by_size: bool = False
) -> dict[str, dict[str, float | int | None]]:
    """Figures of each group of ``records`` (groups named by ``key``, in name order,
    or in size order when ``by_size``): ``jobs``, ``jobs_started``,
    ``jobs_finished``, ``mean_wait_s``, ``p90_wait_s``, ``mean_bounded_slowdown``
    (None over no job) and ``usage_slot_s`` (slots × s its ended jobs ran)."""
    groups: dict[str, list[JobRecord]] = {}
    for record in records:
        groups.setdefault(key(record), []).append(record)
    order = sorted(groups, key=_size_order) if by_size else sorted(groups)
    out: dict[str, dict[str, float | int | None]] = {}
    for name in order:
        mine = groups[name]
        waits = [w for w in map(wait_s, mine) if w is not None]
        slowdowns = [s for s in map(bounded_slowdown, mine) if s is not None]
        out[name] = {
            "jobs": len(mine),
            "jobs_started": len(waits),
            "jobs_finished": len(slowdowns),
            "mean_wait_s": round(statistics.fmean(waits), 3) if waits else None,
            "p90_wait_s": percentiles(waits)["p90"],
            "mean_bounded_slowdown": (round(statistics.fmean(slowdowns), 4) if slowdowns else None),
            "usage_slot_s": sum(r.ran_s * r.tasks for r in mine if r.ran_s is not None),
        }
    return out


@dataclass(frozen=True, slots=True)
class TimeSeries:
    """A run sampled on the virtual clock (``time_series``); each list has one value
    per sample.

    Attributes:
        interval_s: time between samples, s.
        t_s: sample times, s from the trace origin.
        pending: jobs submitted and not yet started.
        running: jobs running (not suspended).
        busy_slots: slots of the running jobs.
        utilization: busy slots / cluster slots, 0 to 1.
    """

    interval_s: int
    t_s: list[int]
    pending: list[int]
    running: list[int]
    busy_slots: list[int]
    utilization: list[float]

    COLUMNS = ("t_s", "pending", "running", "busy_slots", "utilization")

    def rows(self) -> Iterable[tuple[int, int, int, int, float]]:
        """One (t_s, pending, running, busy_slots, utilization) per sample."""
        return zip(
            self.t_s, self.pending, self.running, self.busy_slots, self.utilization, strict=True
        )


def time_series(
    records: Iterable[JobRecord], slots: int, interval_s: int | None = None
) -> TimeSeries:
    """Sample queue length, running jobs and utilization every ``interval_s`` (default:
    the span / ``DEFAULT_SAMPLES``, at least 1 s) from the first submission to the
    last change (see the module docstring for what counts).

    Raises:
        ValueError: ``slots`` or ``interval_s`` below 1, or more than
            ``MAX_SAMPLES`` samples (the message names ``--sample-interval``).
    """
    if slots < 1:
        raise ValueError(f"a cluster of {slots} slots")
    if interval_s is not None and interval_s < 1:
        raise ValueError(f"sample interval {interval_s} s is below 1 s")
    # (time, Δpending, Δrunning, Δbusy slots)
    changes: list[tuple[int, int, int, int]] = []
    for r in records:
        if r.rejected:
            continue
        changes.append((r.submit_s, 1, 0, 0))
        if r.start_s is None:
            continue
        changes.append((r.start_s, -1, 1, r.tasks))
        for since, until in r.suspensions:
            changes.append((since, 0, -1, -r.tasks))
            if until is not None:
                changes.append((until, 0, 1, r.tasks))
        if r.end_s is not None and not r.left_suspended:
            changes.append((r.end_s, 0, -1, -r.tasks))
    if not changes:
        return TimeSeries(interval_s or 1, [], [], [], [], [])
    changes.sort()
    first, last = changes[0][0], changes[-1][0]
    step = interval_s or max(1, math.ceil((last - first) / DEFAULT_SAMPLES))
    samples = (last - first) // step + 1
    if samples > MAX_SAMPLES:
        raise ValueError(
            f"--sample-interval {step} s gives {samples:,} samples over the run's "
            f"{last - first:,} s, more than {MAX_SAMPLES:,}: give a longer interval"
        )
    series = TimeSeries(step, [], [], [], [], [])
    pending = running = busy = 0
    index = 0
    t = first
    while True:
        while index < len(changes) and changes[index][0] <= t:
            _, dp, dr, ds = changes[index]
            pending, running, busy = pending + dp, running + dr, busy + ds
            index += 1
        series.t_s.append(t)
        series.pending.append(pending)
        series.running.append(running)
        series.busy_slots.append(busy)
        series.utilization.append(round(busy / slots, 6))
        if t >= last:
            return series
        t += step
