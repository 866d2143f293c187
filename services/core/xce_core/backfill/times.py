"""When jobs are expected to end, as backfilling counts it: run limits, expected
ends, and the end of the clock (``xce_core.runtime`` has the rules)."""

from __future__ import annotations

from dataclasses import replace

from xce_core.alloc.outcome import FOREVER, Reservation
from xce_core.runtime import NS, effective_run_limit_s, expected_end_ns
from xce_core.state import ClusterState, Job


def run_limit_ns(state: ClusterState, job: Job) -> int | None:
    """The job's run limit in force, ns (``runtime.effective_run_limit_s``); None:
    not known."""
    limit = effective_run_limit_s(job, state.queues.get(job.queue))
    return None if limit is None else limit * NS


def expected_end(state: ClusterState, job: Job, now: int) -> int:
    """When a running job is expected to end, ns (``runtime.expected_end_ns``: start
    + run limit + time suspended; a job past it is expected to end now); one with no
    run limit never (``FOREVER``)."""
    end = expected_end_ns(job, state.queues.get(job.queue), now)
    return FOREVER if end is None else end


#: The end of the clock: timestamps are unsigned 64-bit ns (``TimestampNs``).
_CLOCK_END = 1 << 64


def on_the_clock(reservation: Reservation | None) -> Reservation | None:
    """A reservation as the clock can tell it: none when it would start past the
    clock's end (run limits of centuries add up), without an end when it would end
    past it (it holds its room from its start on, as a job with no run limit)."""
    if reservation is None or reservation.start_ts >= _CLOCK_END:
        return None
    if reservation.end_ts is not None and reservation.end_ts >= _CLOCK_END:
        return replace(reservation, end_ts=None)
    return reservation
