"""Benchmark: RLScheduler's published heuristic figures (Zhang et al., SC20) on our simulator.

    python -m benchmarks.published_rlscheduler [--windows 10] [--window-size 1024]
        [--seed 1] [--traces SDSC-SP2 Lublin-1 Lublin-2] [--orders builtin_fcfs sjf ...]

The paper's Tables V and VI (also in the README of DIR-LAB/deep-batch-scheduler)
give, for FCFS, WFP3, UNICEP, SJF and F1 with and without backfilling, the average
bounded slowdown and the utilisation of 10 windows of 1,024 consecutive jobs. This
script runs the same windows through ``run_simulation`` (one-slot hosts, our
``strict`` for "without backfilling", our ``easy`` for "with") and prints the
published figures beside ours. In each trace's section the issue's cell, FCFS
without backfilling, comes first; the other orders follow, then all with.

The protocol, as their code runs it (file:line at commit cd433e3 of
DIR-LAB/deep-batch-scheduler, read only to learn it; nothing here is copied):

* Jobs (``job.py``): processors = max(field 5, field 8) (43-44); requested time =
  field 9, or the run time when field 9 is -1 (50-52; read before the next rule, so
  a record with both -1 keeps -1); a run time of -1 becomes 10 s and a run time of 0
  drops the record (147-151); the records left are sorted by job number (164) and
  indexed from 0. The machine: ``MaxNodes`` nodes of ``MaxProcs / MaxNodes``
  processors (``HPCSimPickJobs.py`` 114; ``MaxProcs`` defaults to ``MaxNodes``,
  ``job.py`` 157-158); a job takes ceil(processors / per node) nodes
  (``cluster.py`` 134, 143). All three traces here have one processor per node.
* Windows: ``reset_for_test`` draws each window's first index as
  ``np_random.randint(n, limit - n - 1)`` (``HPCSimPickJobs.py`` 352-356; the
  ``start`` argument is ignored, 356), ten draws in a row from gym's
  ``seeding.np_random(1)`` (``compare-make-table.py`` 74-76, 180): a numpy
  ``RandomState`` seeded with the first 8 bytes of sha512("1"). ``limit`` is the
  job count, except 10,000 for SDSC-SP2 (``make_table_script.py`` 3, 14, 33:
  ``--batch_job_slice``), so every trace's windows start at jobs 1981, 2756, 4299,
  8850, 3316, 2714, 5228, 7762, 4022 and 7085. Submit times are the trace's, not
  shifted (F1 reads them).
* Empty machine: the clock starts at the window's first submit with only that job
  queued and nothing running (360-362; ``enable_preworkloads`` is False, 96).
* Metrics: bounded slowdown max(1, (start - submit + run) / max(run, 10)) per job
  (795-797), summed and divided by the window's job count (436); utilisation
  sum(run × processors) / ((clock at the end - first submit) × MaxProcs) (806,
  446), where the clock at the end is the last job's *start*, not the last end;
  each cell is the mean of the ten windows (``compare-make-table.py`` 77-84, 145-148).

Ours: ``SimJob`` with those tasks, run times and submit times, ``run_limit_s`` =
the requested time (at least 1 s, our wire's minimum), on ``MaxProcs`` one-slot
hosts; the metrics are computed from each job's ``JobRecord`` as above. FCFS
without backfilling matches on all six published figures, which pins the windows,
the parsing and the metrics. The other cells differ for these reasons (each found
by changing one rule at a time in a scratch model of both simulators, not kept:
with our rules it gave our 30 cells to the digit, with theirs every published cell
but one, SJF with backfilling on SDSC-SP2, utilisation 0.660 against 0.661):

1. The decision loop (every order but FCFS). Theirs (``HPCSimPickJobs.py``
   455-486, 364-382) sorts the jobs it has queued, takes the first, and if it does
   not fit *commits* to it: it adds arrivals and releases ending jobs, starting
   nothing else, until that job fits. A job arriving meanwhile is ranked only at
   the next pick, however it scores. With an empty queue it adds one arrival at a
   time (760-787), so the first of several jobs submitted in the same second is
   picked before the others are seen. Ours ranks every pending job afresh at each
   round (each instant a job ends or arrives) and blocks on the current first.
   FCFS cannot tell the two apart (no arrival ranks before the waiting job). SJF's
   formulas agree, so its whole gap is this rule (strict: SDSC-SP2 2680.55 → ours
   1563.51, Lublin-1 277.35 → 47.16, Lublin-2 787.89 → 205.88).
2. WFP3 and UNICEP read a job's wait as ``scheduled_time - submit_time`` (219,
   226), and every queued job's ``scheduled_time`` is -1, so the wait is
   -1 - submit, with submit counted from the trace's time 0. WFP3 is thus
   ((1 + submit) / req)³ × procs, smallest first: earliest, longest, narrowest
   first, and it never ages. UNICEP is (1 + submit) / (log2(procs + 1e-15) × req):
   earliest, widest, longest first, with a one-processor job's log2(1 + 1e-15) ≈
   1.6e-15 putting it *last* (not first, as the intended formula would). Ours: the
   real wait at the round, aging, log2(procs) at least 1. With their loop, the real
   wait alone moves WFP3 strict from 3000.88 / 19753.53 / 9523.18 to 1205.96 /
   337.34 / 807.25 and UNICEP from 1848.45 / 22274.74 / 11265.31 to 1699.00 /
   381.71 / 830.49 (SDSC-SP2 / Lublin-1 / Lublin-2); rule 1 does the rest.
3. F1's 870 × log10(submit) counts submit from the trace's time 0 (176): millions
   of seconds into SDSC-SP2, so the term barely changes inside a window. Ours counts
   from the first submission the picker saw, the window's first job (a scheduler
   knows no trace origin). With their loop, our origin alone moves F1 strict from
   1232.06 / 258.37 / 698.34 to 1524.86 / 285.72 / 1241.46; rule 1 does the rest.
4. Backfilling (all "with" cells; 385-430). When the committed job does not fit,
   their shadow time is computed once, from the running jobs' start + requested
   time (not brought forward to now for a job past its estimate), and kept while
   the job waits; a queued job may start only if it fits and now + its requested
   time is strictly before that shadow. There is no backfilling on the processors
   the blocked job leaves spare (EASY's "extra" nodes), candidates are tried in
   submit order whatever the policy, and the pass runs after each single arrival
   or release, so at an instant with several it sees only part of them. Ours is
   textbook EASY (``docs/backfill.md``): the reservation is planned again each
   round from expected ends (past-due ones count as now), a job may also start on
   the extra slots, "by the shadow" includes the shadow time, and candidates come
   in the picker's order. For FCFS on SDSC-SP2 (ours 929.69, theirs 1595.12):
   without extra-slot backfills 1648.30, with the strict "before" 1756.02, with the
   shadow kept from the first block 1597.62; the rest is the interleaving. On the
   Lublin traces, whose requested times are the run times, the extra slots make
   nearly all the gap (Lublin-1 271.40 → 235.55, published 235.82; Lublin-2
   222.18 → 247.87, published 247.61).
5. A requested time of -1 (SDSC-SP2 job 5057, in the window from 4299: run time
   -1, so 10 s, and no request) sorts first under their SJF, WFP3 and UNICEP and is
   always backfillable; ours gets a 1 s limit. It changes no printed digit.

Figures only: no assertion on time or on matching (people read the table).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table
from xce_driver.simulate import run_simulation
from xce_driver.workloads.mapping import (
    DEFAULT_QUEUE,
    DEFAULT_QUEUE_PRIORITY,
    SKIP_REASONS,
    MappedWorkload,
    SimJob,
)
from xce_driver.workloads.swf import read_swf
from xce_schemas import BackfillPolicy

from benchmarks.bench_simulate import WORKLOADS, positive

#: Trace name (the paper's) → (file in ../shared/workloads, the index limit of the
#: window draws: None for the job count; 10,000 for SDSC-SP2, their
#: ``--batch_job_slice``).
TRACES: dict[str, tuple[str, int | None]] = {
    "SDSC-SP2": ("SDSC-SP2-1998-4.2-cln.swf.gz", 10_000),
    "Lublin-1": ("lublin_256.swf", None),
    "Lublin-2": ("lublin_256_new2.swf", None),
}

#: Our picker → the paper's name for the order.
ORDERS: dict[str, str] = {
    "builtin_fcfs": "FCFS",
    "sjf": "SJF",
    "f1": "F1",
    "wfp3": "WFP3",
    "unicep": "UNICEP",
}

#: Their "without backfilling" and "with backfilling", as our policies.
BACKFILLS = (BackfillPolicy.STRICT, BackfillPolicy.EASY)

#: The protocol's defaults: windows, jobs per window, seed.
PROTOCOL = (10, 1024, 1)

_ORDER_COLUMNS = ("builtin_fcfs", "wfp3", "unicep", "sjf", "f1")  # the README's column order
_BSLD = {  # README "Results of Scheduling Towards average bounded slowdown" (Table V)
    ("Lublin-1", BackfillPolicy.STRICT): (7273.77, 19753.53, 22274.74, 277.35, 258.37),
    ("SDSC-SP2", BackfillPolicy.STRICT): (1727.54, 3000.88, 1848.45, 2680.55, 1232.06),
    ("Lublin-2", BackfillPolicy.STRICT): (7842.47, 9523.18, 11265.31, 787.89, 698.34),
    ("Lublin-1", BackfillPolicy.EASY): (235.82, 133.87, 307.23, 73.31, 75.07),
    ("SDSC-SP2", BackfillPolicy.EASY): (1595.12, 1083.12, 548.01, 2167.84, 1098.22),
    ("Lublin-2", BackfillPolicy.EASY): (247.61, 318.35, 379.59, 91.99, 148.25),
}
_UTIL = {  # README "Results of Scheduling Towards resource utilization" (Table VI)
    ("Lublin-1", BackfillPolicy.STRICT): (0.657, 0.747, 0.691, 0.762, 0.816),
    ("SDSC-SP2", BackfillPolicy.STRICT): (0.670, 0.658, 0.688, 0.645, 0.674),
    ("Lublin-2", BackfillPolicy.STRICT): (0.404, 0.543, 0.510, 0.562, 0.478),
    ("Lublin-1", BackfillPolicy.EASY): (0.868, 0.864, 0.883, 0.778, 0.840),
    ("SDSC-SP2", BackfillPolicy.EASY): (0.682, 0.681, 0.706, 0.661, 0.677),
    ("Lublin-2", BackfillPolicy.EASY): (0.587, 0.583, 0.587, 0.593, 0.552),
}


#: (bsld printed alike, util printed alike) → the "same digits" column.
_SAME = {(True, True): "both", (True, False): "bsld", (False, True): "util"}


def published(trace: str, order: str, backfill: BackfillPolicy) -> tuple[float, float]:
    """The paper's (bounded slowdown, utilisation) for a cell."""
    column = _ORDER_COLUMNS.index(order)
    return _BSLD[trace, backfill][column], _UTIL[trace, backfill][column]


@dataclass(frozen=True, slots=True)
class RlJob:
    """A job as RLScheduler's parsing makes it (times in s from the trace's time 0).

    ``procs``: max(allocated, requested processors); ``req_s``: the requested time,
    the run time when none is given, -1 when neither is known.
    """

    jobid: int
    submit_s: int
    run_s: int
    procs: int
    req_s: int


@dataclass(frozen=True, slots=True)
class RlTrace:
    """A trace as RLScheduler reads it.

    ``jobs``: the records kept, by job number; ``nodes``: the machine's nodes
    (``MaxNodes``); ``max_procs``: its processors (``MaxProcs``, else ``MaxNodes``),
    the utilisation's denominator; ``limit``: the index limit of the window draws;
    ``origin_s``: the header's ``UnixStartTime``.
    """

    name: str
    jobs: tuple[RlJob, ...]
    nodes: int
    max_procs: int
    limit: int
    origin_s: int

    def tasks(self, job: RlJob) -> int:
        """The nodes (our one-slot hosts) a job takes: ceil(procs / per node)."""
        return math.ceil(job.procs / (self.max_procs / self.nodes))


def read_rl_trace(name: str, path: Path, limit: int | None) -> RlTrace:
    """Read an SWF file as RLScheduler does (see the module docstring): a run time
    of -1 becomes 10 s, a run time of 0 drops the record, processors are the larger
    of fields 5 and 8, a missing requested time is the record's run time."""
    trace = read_swf(path)
    jobs = []
    for record in trace.records:
        req = record.run_time if record.requested_time == -1 else record.requested_time
        run = 10 if record.run_time < 0 else record.run_time
        if run > 0:
            procs = max(record.allocated_procs, record.requested_procs)
            jobs.append(RlJob(record.job_number, record.submit_time, run, procs, req))
    jobs.sort(key=lambda job: job.jobid)
    header = trace.header
    nodes = header.max_nodes or header.max_procs
    if nodes is None:
        raise ValueError(f"{path}: the header gives no MaxNodes or MaxProcs")
    return RlTrace(
        name=name,
        jobs=tuple(jobs),
        nodes=nodes,
        max_procs=header.max_procs or nodes,
        limit=len(jobs) if limit is None else limit,
        origin_s=header.unix_start_time,
    )


def window_starts(count: int, size: int, limit: int, seed: int) -> list[int]:
    """The first index of each of ``count`` windows, as their ``reset_for_test``
    draws them: ``randint(size, limit - size - 1)`` from gym's (2019)
    ``seeding.np_random(seed)``.

    That generator is numpy's legacy ``RandomState`` (MT19937) seeded by
    ``init_by_array`` with the 32-bit words, low first, of the first 8 bytes
    (little-endian) of sha512(str(seed)); Python's ``random.Random`` seeded with that
    integer runs the same MT19937 state. ``randint`` below 2**32 draws 32-bit words,
    masks them to the range's bit length and rejects those above it.

    Raises:
        ValueError: the range is empty or wider than 32 bits.
    """
    low, high = size, limit - size - 1
    span = high - 1 - low
    if span < 0 or span >= 2**32:
        raise ValueError(f"no window of {size} jobs fits the draw range [{low}, {high})")
    digest = hashlib.sha512(str(seed).encode("utf-8")).digest()
    generator = random.Random(int.from_bytes(digest[:8], "little"))
    mask = (1 << span.bit_length()) - 1
    starts = []
    for _ in range(count):
        value = 0
        if span:
            value = generator.getrandbits(32) & mask
            while value > span:
                value = generator.getrandbits(32) & mask
        starts.append(low + value)
    return starts


def window_workload(trace: RlTrace, window: tuple[RlJob, ...]) -> MappedWorkload:
    """One window as our simulator takes it: the jobs from an empty machine of
    one-slot hosts, run limits = requested times (at least 1 s)."""
    jobs = tuple(
        SimJob(
            jobid=job.jobid,
            submit_s=job.submit_s,
            run_s=job.run_s,
            tasks=trace.tasks(job),
            queue=DEFAULT_QUEUE,
            user="u1",
            run_limit_s=max(job.req_s, 1),
        )
        for job in window
    )
    return MappedWorkload(
        jobs=jobs,
        skipped=dict.fromkeys(SKIP_REASONS, 0),
        hosts=trace.nodes,
        slots_per_host=1,
        origin_s=trace.origin_s,
        queues={DEFAULT_QUEUE: DEFAULT_QUEUE_PRIORITY},
    )


def window_metrics(
    trace: RlTrace, window: tuple[RlJob, ...], starts: dict[int, int]
) -> tuple[float, float]:
    """Their (average bounded slowdown, utilisation) of a window, from each job's
    start time: bounded slowdown with a 10 s threshold averaged over the window's
    jobs; utilisation over the span from the first submit to the last start."""
    bsld = sum(
        max(1.0, (starts[job.jobid] - job.submit_s + job.run_s) / max(job.run_s, 10))
        for job in window
    ) / len(window)
    work = sum(job.run_s * job.procs for job in window)
    span = max(starts.values()) - window[0].submit_s
    return bsld, work / (span * trace.max_procs)


def run_cell(
    trace: RlTrace, firsts: list[int], size: int, order: str, backfill: BackfillPolicy
) -> tuple[float, float]:
    """Our (bounded slowdown, utilisation) of a cell: the mean over the windows.

    Raises:
        RuntimeError: a job of a window never started.
    """
    bslds, utils = [], []
    for first in firsts:
        window = trace.jobs[first : first + size]
        result = run_simulation(
            window_workload(trace, window), source=trace.name, policy=order, backfill=backfill
        )
        starts: dict[int, int] = {}
        for jobid, record in result.records.items():
            if record.start_s is None:
                raise RuntimeError(f"{trace.name}: job {jobid} of window {first} never started")
            starts[jobid] = record.start_s
        bsld, util = window_metrics(trace, window, starts)
        bslds.append(bsld)
        utils.append(util)
    return statistics.fmean(bslds), statistics.fmean(utils)


def cells(orders: list[str]) -> list[tuple[str, BackfillPolicy]]:
    """The cells of one trace in print order: FCFS without backfilling first (the
    issue's), then the other orders without, then every order with."""
    rest = [order for order in orders if order != "builtin_fcfs"]
    first = [("builtin_fcfs", BackfillPolicy.STRICT)] if "builtin_fcfs" in orders else []
    return [
        *first,
        *((order, BackfillPolicy.STRICT) for order in rest),
        *((order, BackfillPolicy.EASY) for order in orders),
    ]


def main() -> int:
    """Parse the options, run every cell of every trace found, print the table."""
    windows, size, seed = PROTOCOL
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=positive, default=windows, help="default 10")
    parser.add_argument("--window-size", type=positive, default=size, help="default 1024")
    parser.add_argument("--seed", type=int, default=seed, help="gym seed (default 1)")
    parser.add_argument("--traces", nargs="+", choices=list(TRACES), default=list(TRACES))
    parser.add_argument("--orders", nargs="+", choices=list(ORDERS), default=list(ORDERS))
    args = parser.parse_args()
    if args.seed < 0:
        parser.error("--seed must be 0 or more (gym refuses a negative seed)")
    protocol = (args.windows, args.window_size, args.seed) == PROTOCOL
    title = (
        f"RLScheduler (SC20) protocol: {args.windows} windows of {args.window_size} jobs, "
        f"seed {args.seed}, from an empty machine; bsld τ = 10 s"
    )
    table = Table(title=title)
    for column in ("trace", "order", "backfill", "bsld paper", "bsld ours", "util paper"):
        table.add_column(column, justify="right")
    for column in ("util ours", "same digits", "ours s"):
        table.add_column(column, justify="right")
    console = Console(width=160)
    orders = [order for order in ORDERS if order in args.orders]
    for name in args.traces:
        file, limit = TRACES[name]
        path = WORKLOADS / file
        if not path.exists():
            print(f"skipped {name}: {path} is absent", file=sys.stderr)
            continue
        trace = read_rl_trace(name, path, limit)
        try:
            firsts = window_starts(args.windows, args.window_size, trace.limit, args.seed)
        except ValueError as exc:
            print(f"skipped {name}: {exc}", file=sys.stderr)
            continue
        table.add_section()
        for order, backfill in cells(orders):
            started = time.perf_counter()
            bsld, util = run_cell(trace, firsts, args.window_size, order, backfill)
            wall = time.perf_counter() - started
            ours = (f"{bsld:.2f}", f"{util:.3f}")
            paper = ("-", "-")
            same = "-"
            if protocol:
                paper_bsld, paper_util = published(name, order, backfill)
                paper = (f"{paper_bsld:.2f}", f"{paper_util:.3f}")
                same = _SAME.get((paper[0] == ours[0], paper[1] == ours[1]), "no")
            label = "none (strict)" if backfill is BackfillPolicy.STRICT else "easy"
            table.add_row(
                name,
                ORDERS[order],
                label,
                paper[0],
                ours[0],
                paper[1],
                ours[1],
                same,
                f"{wall:.1f}",
            )
    console.print(table)
    if not protocol:
        console.print("published figures are for 10 windows of 1024 jobs, seed 1 only")
    console.print(
        "paper: Zhang et al., SC20, Tables V and VI (DIR-LAB/deep-batch-scheduler README); "
        "why the cells differ: this module's docstring"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
