"""Job orders of the field, as pickers (issue 17): shortest first, largest and
smallest first, and the research heuristics F1, WFP3 and UNICEP.

Each is a ``SortedPicker`` that writes only its order: queues by priority, job
priority first, job id last, per-queue overrides and incremental rounds are
``SortedPicker``'s. Every order sorts smallest first; the formulas are written as
the field writes them, with a minus where the field picks the highest score.

The quantities, as the literature names them (Tang et al., "Fault-aware,
utility-based job scheduling on Blue Gene/P systems", IEEE Cluster 2009, for WFP3
and UNICEP; Carastan-Santos and de Camargo, "Obtaining dynamic scheduling policies
with simulation and machine learning", SC17, for F1; both as used by Zhang et al.,
"RLScheduler", SC20):

* ``req``: the job's run limit in force, s (``runtime.effective_run_limit_s``: its
  own, else its queue's, the smaller when both are given): the user's requested
  time, the estimate backfilling trusts. A job without one (unbounded) comes after
  every job with one, by queue time;
* ``procs``: its tasks (slots);
* ``wait``: the time since it was submitted, s, on the core's clock at the start of
  the session (virtual time in a simulation, never the wall clock);
* ``submit``: its submission time, s after the first submission this picker saw
  (F1 needs a time origin: in a simulation, the first job's).

Orders that change as jobs wait (WFP3, UNICEP) are computed again once per session
(``SortedPicker.ages``); within a session they stand still. Ties (equal scores)
go by queue time, then job id.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from mypy_extensions import mypyc_attr
from xce_schemas import SchedulerConfig

from xce_core.pickers.sorted import SortedPicker
from xce_core.plugins import CoreView, JobInfo, PickerConfig, QueueInfo

NS = 1_000_000_000

#: An order by run limit ranks ``(0, score, queue time)``, or ``(1, 0.0, queue
#: time)`` for a job with no run limit: after all others.
_BOUNDED = 0
_UNBOUNDED = 1


@mypyc_attr(allow_interpreted_subclasses=True)
class _ByRunLimit(SortedPicker):
    """An order that reads the run limit in force, which the job's queue may give."""

    reads_queue: ClassVar[bool] = True

    def __init__(self, config: PickerConfig, view: CoreView) -> None:
        super().__init__(config, view)
        # queue name → its run limit, s (an order that ages reads it for every job
        # every session); forgotten whenever a queue changes.
        self._limits: dict[str, int | None] = {}

    def on_config(self, config: SchedulerConfig) -> None:
        """Forget the queues' run limits, then as ``SortedPicker``."""
        self._limits.clear()
        super().on_config(config)

    def on_queue_update(self, queue: QueueInfo) -> None:
        """Forget the queues' run limits, then as ``SortedPicker`` (which computes
        the queue's jobs' keys again)."""
        self._limits.clear()
        super().on_queue_update(queue)

    def _req(self, job: JobInfo) -> int | None:
        """The job's run limit in force, s (None: none is known;
        ``runtime.effective_run_limit_s``)."""
        limits = self._limits
        if job.queue in limits:
            limit = limits[job.queue]
        else:
            queue = self._view.queue(job.queue)
            limit = limits[job.queue] = None if queue is None else queue.run_limit_s
        own = job.run_limit_s
        if own is None:
            return limit
        return own if limit is None or own < limit else limit


class ShortestFirst(_ByRunLimit):
    """``sjf``: shortest run limit first (SJF by requested time): ``req``, then
    queue time. Jobs with no run limit come last."""

    name: ClassVar[str] = "sjf"

    def order(self, job: JobInfo, now: int) -> Any:
        """``(0, req, queue time)``, or ``(1, 0.0, queue time)`` with no run limit."""
        req = self._req(job)
        if req is None:
            return (_UNBOUNDED, 0.0, job.queue_ts)
        return (_BOUNDED, float(req), job.queue_ts)


class LargestFirst(SortedPicker):
    """``largest_first``: most tasks first, then queue time."""

    name: ClassVar[str] = "largest_first"

    def order(self, job: JobInfo, now: int) -> Any:
        """``(-procs, queue time)``."""
        return (-job.tasks, job.queue_ts)


class SmallestFirst(SortedPicker):
    """``smallest_first``: fewest tasks first, then queue time."""

    name: ClassVar[str] = "smallest_first"

    def order(self, job: JobInfo, now: int) -> Any:
        """``(procs, queue time)``."""
        return (job.tasks, job.queue_ts)


class F1(_ByRunLimit):
    """``f1``: the nonlinear function Carastan-Santos and de Camargo (SC17) fitted by
    simulation, smallest first::

        F1 = log10(req) × procs + 870 × log10(submit)

    ``submit`` is s after the first submission the picker saw (its origin, kept in
    the snapshot), at least 0.1 s (as RLScheduler floors it, so the first job's
    log10 is defined). Jobs with no run limit come last. It does not age: a job's
    score is fixed at its submission.
    """

    name: ClassVar[str] = "f1"

    def __init__(self, config: PickerConfig, view: CoreView) -> None:
        super().__init__(config, view)
        self._origin: int | None = None  # the first submission seen, ns

    def on_job_push(self, job: JobInfo) -> None:
        """Note the time origin at the first job, then as ``SortedPicker``."""
        if self._origin is None:
            self._origin = job.submit_ts
        super().on_job_push(job)

    def order(self, job: JobInfo, now: int) -> Any:
        """``(0, F1, queue time)``, or ``(1, 0.0, queue time)`` with no run limit."""
        req = self._req(job)
        if req is None:
            return (_UNBOUNDED, 0.0, job.queue_ts)
        origin = job.submit_ts if self._origin is None else self._origin
        submit = max((job.submit_ts - origin) / NS, 0.1)
        score = math.log10(max(req, 1)) * job.tasks + 870 * math.log10(submit)
        return (_BOUNDED, score, job.queue_ts)

    def save_state(self) -> dict[str, Any]:
        """The time origin (ns), with the override pickers' states."""
        state = super().save_state()
        if self._origin is not None:
            state["origin_ts"] = self._origin
        return state

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Take the time origin back (the jobs were fed before: keys are made again)."""
        super().load_state(state)
        origin = state.get("origin_ts")
        if origin is not None and origin != self._origin:
            self._origin = int(origin)
            self._resort()


class Wfp3(_ByRunLimit):
    """``wfp3``: Tang et al.'s WFP3, favouring jobs that have waited long relative
    to their length, large ones more, highest first::

        WFP3 = −(wait / req)³ × procs

    It ages: computed again each session. Jobs with no run limit come last.
    """

    name: ClassVar[str] = "wfp3"
    ages: ClassVar[bool] = True

    def order(self, job: JobInfo, now: int) -> Any:
        """``(0, WFP3, queue time)``, or ``(1, 0.0, queue time)`` with no run limit."""
        req = self._req(job)
        if req is None:
            return (_UNBOUNDED, 0.0, job.queue_ts)
        ratio = max(now - job.submit_ts, 0) / NS / (req if req > 1 else 1)
        return (_BOUNDED, -ratio * ratio * ratio * job.tasks, job.queue_ts)


class Unicep(_ByRunLimit):
    """``unicep``: Tang et al.'s UNICEP, favouring short, narrow jobs that have
    waited, highest first::

        UNICEP = −wait / (log2(procs) × req)

    with ``log2(procs)`` taken as at least 1 (``procs`` = 1 and 2 weigh alike: the
    formula divides by 0 for one task). It ages: computed again each session. Jobs
    with no run limit come last.
    """

    name: ClassVar[str] = "unicep"
    ages: ClassVar[bool] = True

    def order(self, job: JobInfo, now: int) -> Any:
        """``(0, UNICEP, queue time)``, or ``(1, 0.0, queue time)`` with no run
        limit."""
        req = self._req(job)
        if req is None:
            return (_UNBOUNDED, 0.0, job.queue_ts)
        wait = max(now - job.submit_ts, 0) / NS
        tasks = job.tasks
        width = math.log2(tasks) if tasks > 2 else 1.0
        return (_BOUNDED, -wait / (width * (req if req > 1 else 1)), job.queue_ts)


#: Every order of this module, by picker name.
ORDERS: dict[str, type[SortedPicker]] = {
    picker.name: picker for picker in (ShortestFirst, LargestFirst, SmallestFirst, F1, Wfp3, Unicep)
}
