"""From an SWF trace to the jobs and cluster of a simulation.

Defaults (each one overridable from the command line):

* the cluster: one host per processor of the header's ``MaxProcs`` (else
  ``MaxNodes``), one slot each;
* a job's tasks: the requested processors (field 8), else the allocated ones
  (field 5);
* its run time: the trace's run time (field 4), in whole seconds;
* its run limit (``SimJob.run_limit_s``, LSF ``-W``: what backfilling trusts as
  its estimate), by the estimate mode (``ESTIMATES``): ``requested`` (the default)
  takes the user's requested time (field 9) when above 0, else the run time;
  ``exact`` takes the run time (a perfect estimate). A run limit is at least 1 s,
  so a job of run time 0 gets 1. In a simulation the job still runs its run time,
  past its limit too (SDSC-SP2 holds 4,134 jobs that ran longer than requested):
  only its queue's ``run_limit_s`` kills it. A trace without requests (the
  generated workload, NASA-iPSC, the Lublin files: field 9 is -1 throughout) gets
  exact limits in both modes;
* its user and project: ``u<user id>`` (field 12; ``nobody`` when unknown) and
  ``g<group id>`` (field 13, the project charged, as fair share reads it; none
  when unknown);
* its queue: ``normal``, unless a queue map sends the trace's queue numbers
  (field 15) elsewhere;
* its job priority: its queue's priority. SWF has no job priority field, and the
  core's preemption compares job priorities (Req 6 AC 9: a preemptor's priority must
  be higher than its victims'), so a job inherits its queue's: with the map
  ``1=urgent:100,*=normal:30``, an ``urgent`` job (priority 100) may preempt a
  ``normal`` one (30) when the queue definitions allow it (``urgent`` lists
  ``normal`` in ``preemptible_queues``, ``normal`` is ``preemptible``). Inside one
  queue every job has the same priority, so the order there stays first come,
  first served. The priority is resolved when the job is submitted, from the queue
  definitions pushed to the core, so a queue redefined by ``--queues`` gives its
  jobs its own priority (``SimJob.priority`` None);
* records that cannot run are skipped and counted under the first reason that
  applies, in this order (``SKIP_REASONS``): ``unknown_submit_time`` (field 2 is -1),
  ``unknown_run_time`` (field 4 is -1), ``no_processors`` (neither field 8 nor
  field 5 is above 0).

As everywhere in the format, -1 means unknown. Any other negative value in a field
the mapping reads (2, 4, 5, 8, 12, 13, 15, and 10 with ``swf_memory``) is not SWF and is
an error naming the file, line and field, not a skip: none of the archive logs in
``../shared/workloads`` holds one (every negative value in them is -1).

The machine size comes from the header only when no host count is given: then a
``MaxProcs`` or ``MaxNodes`` that is there but not a whole number above 0 (``-4``,
``0``, ``abc``), or given twice with different values, is an error naming the file,
line and key (a header that gets its machine size wrong is not trusted for the
other one either); -1 reads as absent. With a host count the header's machine size
is not read at all, so a host count runs such a trace.

Options that would change nothing are errors rather than silently ignored: a queue
map none of whose numbers is the queue of a simulated record, ``swf_memory``
when no simulated record gives a requested memory (field 10), and the ``exact``
estimate when no simulated record gives a requested time (field 9).

A simulated job keeps the trace's job number as its jobid, so results can be compared
job by job with other simulators.

Load scaling (``load_factor``, ``--load-factor F``): the offered load is made F times
the trace's by bringing the arrivals F times closer together, as the job-scheduling
literature usually does: a job submitted ``d`` s after the first known submit time of
the records simulated is submitted ``floor(d / F)`` s after it, computed exactly (F as
a fraction, from its decimal text), so the submit order is kept and F = 1 changes
nothing; the first submit stays where it is. Run times,
sizes, run limits and everything else stay as they are: F = 1.2 makes the gaps
1/1.2 as long, F = 0.5 twice as long. F is above 0 and at most ``MAX_LOAD_FACTOR``
(1,000); the times it stretches (F below 1) are checked against ``MAX_TIME_S`` again.
The skipped records' known submit times (``SkippedRecord.submit_s``) are scaled alike.

Ceilings, checked before anything is built (a value beyond one is an error naming it):

* hosts: ``MAX_HOSTS`` (1,000,000), whether given or read from the header;
* slots per host, and hosts × slots per host: ``MAX_SLOTS`` (2**31 - 1, the wire's
  32-bit counts), as are a job's processors (fields 5 and 8);
* times: ``UnixStartTime`` + submit time + run time below ``MAX_TIME_S`` (10**10 s,
  the year 2286), so every event time in ns fits 64 bits with room to spare; a
  requested time used as a run limit below ``MAX_TIME_S`` too;
* job numbers, user and group ids: ``MAX_ID`` (2**64 - 1);
* a job's requested memory with ``swf_memory``: ``MAX_MEM_MB`` (2**40 MB) per task.

A job asking for more processors than the cluster has (but not more than
``MAX_SLOTS``) is mapped as it is: the core pends it as larger than the cluster.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction

from xce_driver.workloads.swf import SWF_FIELDS, SwfError, SwfRecord, SwfTrace, parse_integer

#: The queue every job goes to unless a queue map says otherwise (LSF's default).
DEFAULT_QUEUE = "normal"
#: Its priority (LSF's ``normal`` queue has PRIORITY = 30).
DEFAULT_QUEUE_PRIORITY = 30

_QUEUE_NAME = re.compile(r"[A-Za-z0-9_.\-]+")

#: Most hosts a cluster may have (``--hosts``, or the header's ``MaxProcs``/``MaxNodes``).
MAX_HOSTS = 1_000_000
#: Most slots a host, a cluster or a job may have: the wire's 32-bit counts.
MAX_SLOTS = 2**31 - 1
#: ``UnixStartTime`` + submit time + run time stays below this many seconds (10**10 s,
#: the year 2286), so that event times in ns (below 10**19) fit 64 bits with room.
MAX_TIME_S = 10**10
#: Largest job number and user id (the wire's 64-bit ids).
MAX_ID = 2**64 - 1
#: Most memory a host offers or a task reserves, MB (2**40 MB, one exabyte).
MAX_MEM_MB = 2**40
#: Largest load factor (``load_factor``): arrivals at most 1,000 times closer together.
MAX_LOAD_FACTOR = 1000

#: Estimate modes: where a job's run limit comes from (see the module docstring).
ESTIMATE_REQUESTED = "requested"
ESTIMATE_EXACT = "exact"
ESTIMATES = (ESTIMATE_REQUESTED, ESTIMATE_EXACT)

#: Why a record is skipped, in the order they are tested: a record is counted under
#: the first that applies. These are the keys of ``MappedWorkload.skipped``.
SKIP_REASONS = ("unknown_submit_time", "unknown_run_time", "no_processors")
#: Fields the mapping reads whose only negative value in the format is -1 (unknown).
_UNKNOWN_OR_NATURAL = (
    "submit_time",
    "run_time",
    "allocated_procs",
    "requested_procs",
    "user_id",
    "group_id",
    "queue_number",
)


class MappingError(ValueError):
    """A queue map or cluster shape that cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class SimJob:
    """A job to simulate.

    Attributes:
        jobid: the trace's job number.
        submit_s: submit time, s from the trace's time origin.
        run_s: how long it runs once started, s.
        tasks: slots it asks for.
        queue: queue name.
        user: user name (``u<user id>``, or ``nobody``).
        project: the project charged: the trace's group (``g<group id>``, SWF field
            13); None when the trace does not say.
        resreq: resource requirement string (``rusage[mem=...]`` with --swf-memory).
        priority: job priority (LSF ``-sp``); None: its queue's priority, resolved
            at submission from the queue definitions (SWF has no job priority;
            see the module docstring).
        run_limit_s: its run limit, s (LSF ``-W``; see the module docstring for
            where a trace's comes from); None: none given (its queue's applies).
    """

    jobid: int
    submit_s: int
    run_s: int
    tasks: int
    queue: str
    user: str
    resreq: str = ""
    priority: int | None = None
    run_limit_s: int | None = None
    project: str | None = None


@dataclass(frozen=True, slots=True)
class QueueMap:
    """Trace queue number → (queue name, priority); unmapped numbers go to ``default``."""

    by_number: dict[int, tuple[str, int]] = field(default_factory=dict)
    default: tuple[str, int] = (DEFAULT_QUEUE, DEFAULT_QUEUE_PRIORITY)

    @classmethod
    def parse(cls, text: str) -> QueueMap:
        """Parse ``NUM=NAME[:PRIORITY],...``; ``*=NAME[:PRIORITY]`` sets the default.

        Example: ``1=express:50,2=high:40,*=normal:30``. Priority defaults to 30.
        Numbers are ASCII digits with an optional leading minus.

        Raises:
            MappingError: an empty map (``empty queue map``), or naming the entry
                that does not parse.
        """
        by_number: dict[int, tuple[str, int]] = {}
        default = (DEFAULT_QUEUE, DEFAULT_QUEUE_PRIORITY)
        default_given = False
        if not text.strip():
            raise MappingError("empty queue map")
        for entry in (part.strip() for part in text.split(",")):
            number, sep, target = entry.partition("=")
            name, _, priority_text = target.partition(":")
            name = name.strip()
            if not sep or not _QUEUE_NAME.fullmatch(name):
                raise MappingError(f"queue map entry {entry!r} is not NUM=NAME[:PRIORITY]")
            priority_text = priority_text.strip()
            priority = parse_integer(priority_text) if priority_text else DEFAULT_QUEUE_PRIORITY
            if priority is None:
                raise MappingError(
                    f"queue map entry {entry!r}: priority {priority_text!r} is not a whole number"
                )
            if not -(2**31) <= priority < 2**31:
                raise MappingError(
                    f"queue map entry {entry!r}: priority {priority} is outside 32 bits"
                )
            if number.strip() == "*":
                if default_given:
                    raise MappingError("queue map gives the default queue (*) twice")
                default, default_given = (name, priority), True
                continue
            key = parse_integer(number.strip())
            if key is None:
                raise MappingError(
                    f"queue map entry {entry!r}: {number.strip()!r} is not a queue number"
                )
            if key in by_number:
                raise MappingError(f"queue map maps queue number {key} twice")
            by_number[key] = (name, priority)
        if not default_given:
            # Unmapped numbers go to ``normal``; if the map defines ``normal`` itself,
            # its priority is the one the user gave.
            for name, priority in by_number.values():
                if name == DEFAULT_QUEUE:
                    default = (name, priority)
                    break
        return cls(by_number, default)

    def queues(self) -> dict[str, int]:
        """Every queue the map can produce → priority, in first-mention order.

        Raises:
            MappingError: one queue name is given two different priorities.
        """
        queues: dict[str, int] = {}
        for name, priority in [*self.by_number.values(), self.default]:
            if queues.setdefault(name, priority) != priority:
                raise MappingError(f"queue {name!r} is given two priorities")
        return queues

    def __call__(self, number: int) -> str:
        return self.by_number.get(number, self.default)[0]


@dataclass(frozen=True, slots=True)
class SkippedRecord:
    """A workload record that could not become a job: its job number, its submit
    time (s; None when unknown) and why (one of ``SKIP_REASONS``)."""

    jobid: int
    submit_s: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class MappedWorkload:
    """The jobs of a trace and the cluster to run them on.

    Attributes:
        jobs: jobs in submit order.
        skipped: records skipped, by reason: every key of ``SKIP_REASONS``, in that
            order, → how many records were skipped for it.
        hosts: number of hosts.
        slots_per_host: job slots per host.
        origin_s: epoch second of the trace's time 0 (its ``UnixStartTime``).
        queues: queue name → priority.
        host_mem_mb: memory of each host, MB (0: not modelled).
        skipped_records: each record skipped, in the workload's order.
        load_factor: the load factor the submit times were scaled by (1: as in the
            workload; see the module docstring), for the report.
    """

    jobs: tuple[SimJob, ...]
    skipped: dict[str, int]
    hosts: int
    slots_per_host: int
    origin_s: int
    queues: dict[str, int]
    host_mem_mb: float = 0.0
    skipped_records: tuple[SkippedRecord, ...] = ()
    load_factor: float = 1.0


def load_factor_of(value: Fraction | int | float) -> Fraction:
    """``value`` as the exact load factor: a ``Fraction`` or an int as it is, a float
    as the decimal it prints as (``1.1`` is 11/10, not its binary approximation).

    Raises:
        MappingError: ``value`` is not above 0 and at most ``MAX_LOAD_FACTOR`` (nan and
            the infinities included).
    """
    if isinstance(value, float):
        # repr: the shortest decimal that reads back as the float, the one written.
        exact = Fraction(repr(value)) if math.isfinite(value) else None
    else:
        exact = Fraction(value)
    if exact is None or not 0 < exact <= MAX_LOAD_FACTOR:
        raise MappingError(
            f"load factor {value} is not a number above 0 and at most {MAX_LOAD_FACTOR:,}"
        )
    return exact


def scale_arrivals(
    jobs: list[SimJob],
    skipped_records: list[SkippedRecord],
    load_factor: Fraction,
    *,
    source: str,
    origin: int = 0,
) -> tuple[list[SimJob], list[SkippedRecord]]:
    """Bring the arrivals ``load_factor`` times closer together (the module docstring's
    load scaling): a submit ``d`` s after the first known submit time (of the jobs and
    skipped records) becomes ``floor(d / load_factor)`` s after it. The order of
    ``jobs`` is kept (submit order stays submit order; jobs brought to one second keep
    the order they had).

    Args:
        jobs: the jobs, in submit order.
        skipped_records: the skipped records (their known submit times are scaled).
        load_factor: above 0 (``load_factor_of``).
        source: the workload, for messages.
        origin: epoch second of the workload's time 0 (``UnixStartTime``).

    Returns:
        The jobs and skipped records, scaled (the same lists when ``load_factor`` is 1).

    Raises:
        MappingError: a load factor below 1 stretches a job past ``MAX_TIME_S``.
    """
    if load_factor == 1:
        return jobs, skipped_records
    known = [job.submit_s for job in jobs]
    known += [r.submit_s for r in skipped_records if r.submit_s is not None]
    if not known:
        return jobs, skipped_records
    first = min(known)
    num, den = load_factor.numerator, load_factor.denominator

    def scaled(submit: int) -> int:
        # floor((submit - first) / (num / den)), in integers: exact, for any size.
        return first + (submit - first) * den // num

    result: list[SimJob] = []
    for job in jobs:
        submit = scaled(job.submit_s)
        if origin + submit + job.run_s >= MAX_TIME_S:
            raise MappingError(
                f"{source} (job {job.jobid}): load factor {float(load_factor):g} moves its "
                f"submit time from {job.submit_s} to {submit} s, and the workload's time 0 "
                f"({origin}) + submit time + run time ({job.run_s}) must stay below "
                f"{MAX_TIME_S:,} s (the year 2286)"
            )
        result.append(replace(job, submit_s=submit))
    skipped = [
        r if r.submit_s is None else replace(r, submit_s=scaled(r.submit_s))
        for r in skipped_records
    ]
    return result, skipped


def map_trace(
    trace: SwfTrace,
    *,
    hosts: int | None = None,
    slots_per_host: int = 1,
    queue_map: QueueMap | None = None,
    max_jobs: int | None = None,
    swf_memory: bool = False,
    host_mem_mb: float = 0.0,
    estimate: str = ESTIMATE_REQUESTED,
    load_factor: Fraction | int | float = 1,
) -> MappedWorkload:
    """Map an SWF trace onto jobs and a cluster (the defaults of this module).

    Every value the mapping uses is checked against the module's ceilings before any
    job is built, so a run never fails half-way on a value found late.

    Args:
        trace: the workload.
        hosts: host count (1 to ``MAX_HOSTS``); default ``MaxProcs`` (else
            ``MaxNodes``) of the header.
        slots_per_host: slots of each host (1 to ``MAX_SLOTS``, and hosts × slots at
            most ``MAX_SLOTS``).
        queue_map: trace queue numbers → queues; default everything to ``normal``.
        max_jobs: keep only the first this many records (a trace prefix).
        swf_memory: give each job with a requested memory (field 10, KB per
            processor) the request ``rusage[mem=<MB>]``, reserved per task.
        host_mem_mb: memory of each host, MB (needed with ``swf_memory``; at most
            ``MAX_MEM_MB``).
        estimate: where run limits come from, one of ``ESTIMATES``: ``requested``
            (field 9 when above 0, else the run time) or ``exact`` (the run time).
        load_factor: the offered load's multiple (``load_factor_of``): submit gaps
            are divided by it (see the module docstring); 1 changes nothing.

    Raises:
        MappingError: no host count given and none valid in the header; a cluster
            shape beyond the ceilings (a header value is named by file, line and
            key); a malformed or too large ``UnixStartTime``; a job number that
            appears twice; a negative value other than -1 in a field the mapping
            reads; a value of a kept record beyond its ceiling, named by file, line
            and field: ``t.swf:12: field 4 (run_time): 9999999999 is too long;
            ...``; an unknown ``estimate``; or a ``queue_map``, ``swf_memory`` or
            ``exact`` estimate that changes no job; a negative ``max_jobs``; a load
            factor not above 0 and at most ``MAX_LOAD_FACTOR``, or one below 1 that
            stretches a job past ``MAX_TIME_S``.
    """
    factor = load_factor_of(load_factor)
    size_key = None
    if hosts is None:
        hosts, size_key = _header_hosts(trace)
    check_cluster(hosts, slots_per_host, max_jobs, size_key)
    if estimate not in ESTIMATES:
        raise MappingError(
            f"unknown run-limit estimate {estimate!r}; known: {', '.join(ESTIMATES)}"
        )
    requested = estimate == ESTIMATE_REQUESTED
    if swf_memory and host_mem_mb <= 0:
        raise MappingError("--swf-memory needs --host-mem MB, the memory of each host")
    if not 0 <= host_mem_mb <= MAX_MEM_MB:
        raise MappingError(f"host memory {host_mem_mb:g} MB is outside 0 to {MAX_MEM_MB:,} MB")
    try:
        origin = trace.header.unix_start_time
    except SwfError as exc:
        raise MappingError(str(exc)) from None
    if origin >= MAX_TIME_S:
        raise MappingError(
            f"{trace.header.where('UnixStartTime')}: {origin} is not before {MAX_TIME_S:,} s "
            "(the year 2286)"
        )
    queue_map = queue_map or QueueMap()
    queues = queue_map.queues()
    records = trace.records if max_jobs is None else trace.records[:max_jobs]
    jobs: list[SimJob] = []
    seen: set[int] = set()
    skipped = dict.fromkeys(SKIP_REASONS, 0)
    skipped_records: list[SkippedRecord] = []
    queue_numbers: set[int] = set()
    requests = 0  # kept records with a requested time (field 9 above 0)
    for record in records:
        if record.job_number in seen:
            raise MappingError(f"{trace.source}: job number {record.job_number} appears twice")
        seen.add(record.job_number)
        _check_negatives(record, trace.source, swf_memory, requested)
        tasks_field = 8 if record.requested_procs > 0 else 5
        tasks = record.requested_procs if tasks_field == 8 else record.allocated_procs
        reason = _skip_reason(record, tasks)
        if reason is not None:
            skipped[reason] += 1
            submit = record.submit_time if record.submit_time >= 0 else None
            skipped_records.append(SkippedRecord(record.job_number, submit, reason))
            continue
        _check_record(record, trace.source, origin, tasks_field, swf_memory, requested)
        queue_numbers.add(record.queue_number)
        requests += record.requested_time > 0
        # A run limit is at least 1 s: a job of run time 0 gets 1.
        run_limit = max(record.run_time, 1)
        if requested and record.requested_time > 0:
            run_limit = record.requested_time
        user = f"u{record.user_id}" if record.user_id >= 0 else "nobody"
        project = f"g{record.group_id}" if record.group_id >= 0 else None
        resreq = ""
        if swf_memory and record.requested_memory_kb > 0:
            resreq = f"rusage[mem={record.requested_memory_kb / 1024:g}]"
        jobs.append(
            SimJob(
                jobid=record.job_number,
                submit_s=record.submit_time,
                run_s=record.run_time,
                tasks=tasks,
                queue=queue_map(record.queue_number),
                user=user,
                resreq=resreq,
                run_limit_s=run_limit,
                project=project,
            )
        )
    jobs.sort(key=lambda job: (job.submit_s, job.jobid))
    if jobs:
        _check_effect(
            trace.source, jobs, queue_numbers, queue_map, swf_memory, not requested and not requests
        )
    jobs, skipped_records = scale_arrivals(
        jobs, skipped_records, factor, source=trace.source, origin=origin
    )
    return MappedWorkload(
        jobs=tuple(jobs),
        skipped=skipped,
        hosts=hosts,
        slots_per_host=slots_per_host,
        origin_s=origin,
        queues=queues,
        host_mem_mb=host_mem_mb,
        skipped_records=tuple(skipped_records),
        load_factor=float(factor),
    )


def check_cluster(
    hosts: int, slots_per_host: int, max_jobs: int | None = None, size_key: str | None = None
) -> None:
    """Check a cluster shape and a job count against the module's ceilings.

    Args:
        hosts, slots_per_host: the cluster.
        max_jobs: the ``max_jobs`` of a mapping, or None.
        size_key: the header key the host count was read from, named in the message.

    Raises:
        MappingError: fewer than 1 host or slot per host, a negative ``max_jobs``, or
            a value beyond ``MAX_HOSTS`` or ``MAX_SLOTS``.
    """
    if hosts < 1 or slots_per_host < 1:
        raise MappingError("hosts and slots per host must be at least 1")
    if max_jobs is not None and max_jobs < 0:  # a slice would drop the last records
        raise MappingError(f"max jobs {max_jobs} is negative")
    if hosts > MAX_HOSTS:
        raise MappingError(f"{hosts:,} hosts is more than the ceiling of {MAX_HOSTS:,}")
    if slots_per_host > MAX_SLOTS:
        raise MappingError(
            f"{slots_per_host:,} slots per host is more than the ceiling of {MAX_SLOTS:,}"
        )
    if hosts * slots_per_host > MAX_SLOTS:
        given = f" (header {size_key})" if size_key else ""
        raise MappingError(
            f"{hosts:,} hosts{given} × {slots_per_host:,} slots per host = "
            f"{hosts * slots_per_host:,} slots, more than the ceiling of {MAX_SLOTS:,}"
        )


def _header_hosts(trace: SwfTrace) -> tuple[int, str]:
    """The host count the header gives (``MaxProcs``, else ``MaxNodes``) and its key.

    Raises:
        MappingError: neither key is there (or both are -1, unknown), ``MaxProcs`` or
            ``MaxNodes`` is there but not a whole number above 0, or the one used is
            above ``MAX_HOSTS`` (naming the file, line and key, and suggesting
            ``--hosts``).
    """
    header = trace.header
    try:
        sizes = (("MaxProcs", header.max_procs), ("MaxNodes", header.max_nodes))
    except SwfError as exc:
        raise MappingError(f"{exc}; pass --hosts") from None
    for key, value in sizes:
        if value is None:
            continue
        if value > MAX_HOSTS:
            raise MappingError(
                f"{header.where(key)}: {value} hosts is more than the ceiling of "
                f"{MAX_HOSTS:,}; pass --hosts"
            )
        return value, key
    raise MappingError(f"{trace.source}: the header gives no MaxProcs or MaxNodes; pass --hosts")


def _where(record: SwfRecord, source: str) -> str:
    """``file:line`` of ``record`` for messages (its job number when it has no line)."""
    return f"{source}:{record.line}" if record.line else f"{source} (job {record.job_number})"


def _check_negatives(record: SwfRecord, source: str, swf_memory: bool, requested: bool) -> None:
    """A negative value in a field the mapping reads is -1 (unknown), nothing else
    (field 10 is read with ``swf_memory``, field 9 with the ``requested`` estimate).

    Raises:
        MappingError: ``file:line: field N (name): -4 is negative ...``.
    """
    names: tuple[str, ...] = _UNKNOWN_OR_NATURAL
    if swf_memory:
        names = (*names, "requested_memory_kb")
    if requested:
        names = (*names, "requested_time")
    for name in names:
        value = getattr(record, name)
        if value < 0 and value != -1:
            raise MappingError(
                f"{_where(record, source)}: field {SWF_FIELDS.index(name) + 1} ({name}): "
                f"{value:g} is negative, and the format's only negative value is -1 (unknown)"
            )


def _skip_reason(record: SwfRecord, tasks: int) -> str | None:
    """Why ``record`` (asking for ``tasks`` processors) cannot run: a key of
    ``SKIP_REASONS``, the first that applies; None when it can."""
    if record.submit_time < 0:
        return "unknown_submit_time"
    if record.run_time < 0:
        return "unknown_run_time"
    if tasks <= 0:
        return "no_processors"
    return None


def _check_effect(
    source: str,
    jobs: list[SimJob],
    queue_numbers: set[int],
    queue_map: QueueMap | None,
    swf_memory: bool,
    exact_without_requests: bool,
) -> None:
    """A queue map, ``swf_memory`` or ``exact`` estimate that would change no job is
    refused, not ignored.

    Args:
        source: the trace, for messages.
        jobs: the jobs built (at least one).
        queue_numbers: the queue numbers (field 15) of their records.
        queue_map: the map given, or None.
        swf_memory: whether requested memory is reserved.
        exact_without_requests: the ``exact`` estimate was asked for and no job's
            record gives a requested time (field 9), so its limits are the run times
            under either estimate.

    Raises:
        MappingError: no job's queue number is one the map names, no job got a
            memory request, or ``exact_without_requests``.
    """
    if (
        queue_map is not None
        and queue_map.by_number
        and not queue_numbers & queue_map.by_number.keys()
    ):
        named = ", ".join(str(number) for number in sorted(queue_map.by_number))
        found = sorted(queue_numbers)
        shown = ", ".join(map(str, found[:10])) + (", ..." if len(found) > 10 else "")
        raise MappingError(
            f"{source}: --swf-queues: no record simulated is in queue {named} (field 15); "
            f"their queue numbers: {shown}"
        )
    if swf_memory and not any(job.resreq for job in jobs):
        raise MappingError(
            f"{source}: --swf-memory: no record simulated gives a requested memory "
            "(field 10 is -1 or 0 in every one)"
        )
    if exact_without_requests:
        raise MappingError(
            f"{source}: --swf-estimate exact: no record simulated gives a requested time "
            "(field 9 is -1 or 0 in every one), so its run limits are the run times already"
        )


def _check_record(
    record: SwfRecord,
    source: str,
    origin: int,
    tasks_field: int,
    swf_memory: bool,
    requested: bool,
) -> None:
    """Check the values of a record that becomes a job against the module's ceilings.

    Raises:
        MappingError: ``file:line: field N (name): value ...``.
    """
    where = _where(record, source)
    if not 0 <= record.job_number <= MAX_ID:
        raise MappingError(
            f"{where}: field 1 (job_number): {record.job_number} is outside 0 to {MAX_ID:,}"
        )
    if origin + record.submit_time >= MAX_TIME_S:
        raise MappingError(
            f"{where}: field 2 (submit_time): {record.submit_time} is too late; "
            f"UnixStartTime ({origin}) + submit time must stay below {MAX_TIME_S:,} s "
            "(the year 2286)"
        )
    if origin + record.submit_time + record.run_time >= MAX_TIME_S:
        raise MappingError(
            f"{where}: field 4 (run_time): {record.run_time} is too long; "
            f"UnixStartTime ({origin}) + submit time ({record.submit_time}) + run time "
            f"must stay below {MAX_TIME_S:,} s (the year 2286)"
        )
    if tasks_field == 8 and record.requested_procs > MAX_SLOTS:
        raise MappingError(
            f"{where}: field 8 (requested_procs): {record.requested_procs} is more than "
            f"{MAX_SLOTS:,} processors"
        )
    if tasks_field == 5 and record.allocated_procs > MAX_SLOTS:
        raise MappingError(
            f"{where}: field 5 (allocated_procs): {record.allocated_procs} is more than "
            f"{MAX_SLOTS:,} processors"
        )
    if requested and record.requested_time >= MAX_TIME_S:
        raise MappingError(
            f"{where}: field 9 (requested_time): {record.requested_time} is too long; a run "
            f"limit must stay below {MAX_TIME_S:,} s"
        )
    if record.user_id > MAX_ID:
        raise MappingError(f"{where}: field 12 (user_id): {record.user_id} is more than {MAX_ID:,}")
    if record.group_id > MAX_ID:
        raise MappingError(
            f"{where}: field 13 (group_id): {record.group_id} is more than {MAX_ID:,}"
        )
    if swf_memory and record.requested_memory_kb > MAX_MEM_MB * 1024:
        raise MappingError(
            f"{where}: field 10 (requested_memory_kb): {record.requested_memory_kb:g} KB is "
            f"more than {MAX_MEM_MB:,} MB"
        )
