"""From an SWF trace to the jobs and cluster of a simulation.

Defaults (each one overridable from the command line):

* the cluster: one host per processor of the header's ``MaxProcs`` (else
  ``MaxNodes``), one slot each;
* a job's tasks: the requested processors (field 8), else the allocated ones
  (field 5);
* its run time: the trace's run time (field 4), in whole seconds;
* its queue: ``normal``, unless a queue map sends the trace's queue numbers
  (field 15) elsewhere;
* records with an unknown run time (-1) or no processors are skipped and counted.

A simulated job keeps the trace's job number as its jobid, so results can be compared
job by job with other simulators.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xce_driver.workloads.swf import SwfTrace

#: The queue every job goes to unless a queue map says otherwise (LSF's default).
DEFAULT_QUEUE = "normal"
#: Its priority (LSF's ``normal`` queue has PRIORITY = 30).
DEFAULT_QUEUE_PRIORITY = 30

_QUEUE_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


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
        resreq: resource requirement string (``rusage[mem=...]`` with --swf-memory).
    """

    jobid: int
    submit_s: int
    run_s: int
    tasks: int
    queue: str
    user: str
    resreq: str = ""


@dataclass(frozen=True, slots=True)
class QueueMap:
    """Trace queue number → (queue name, priority); unmapped numbers go to ``default``."""

    by_number: dict[int, tuple[str, int]] = field(default_factory=dict)
    default: tuple[str, int] = (DEFAULT_QUEUE, DEFAULT_QUEUE_PRIORITY)

    @classmethod
    def parse(cls, text: str) -> QueueMap:
        """Parse ``NUM=NAME[:PRIORITY],...``; ``*=NAME[:PRIORITY]`` sets the default.

        Example: ``1=express:50,2=high:40,*=normal:30``. Priority defaults to 30.

        Raises:
            MappingError: naming the entry that does not parse.
        """
        by_number: dict[int, tuple[str, int]] = {}
        default = (DEFAULT_QUEUE, DEFAULT_QUEUE_PRIORITY)
        default_given = False
        for entry in (part.strip() for part in text.split(",")):
            number, sep, target = entry.partition("=")
            name, _, priority_text = target.partition(":")
            name = name.strip()
            if not sep or not _QUEUE_NAME.fullmatch(name):
                raise MappingError(f"queue map entry {entry!r} is not NUM=NAME[:PRIORITY]")
            try:
                priority = int(priority_text) if priority_text else DEFAULT_QUEUE_PRIORITY
            except ValueError:
                raise MappingError(
                    f"queue map entry {entry!r}: priority {priority_text!r} is not a whole number"
                ) from None
            if not -(2**31) <= priority < 2**31:
                raise MappingError(
                    f"queue map entry {entry!r}: priority {priority} is outside 32 bits"
                )
            if number.strip() == "*":
                if default_given:
                    raise MappingError("queue map gives the default queue (*) twice")
                default, default_given = (name, priority), True
                continue
            try:
                key = int(number)
            except ValueError:
                raise MappingError(
                    f"queue map entry {entry!r}: {number.strip()!r} is not a queue number"
                ) from None
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
class MappedWorkload:
    """The jobs of a trace and the cluster to run them on.

    Attributes:
        jobs: jobs in submit order.
        skipped: records skipped (unknown run time, or no processors).
        hosts: number of hosts.
        slots_per_host: job slots per host.
        origin_s: epoch second of the trace's time 0 (its ``UnixStartTime``).
        queues: queue name → priority.
        host_mem_mb: memory of each host, MB (0: not modelled).
    """

    jobs: tuple[SimJob, ...]
    skipped: int
    hosts: int
    slots_per_host: int
    origin_s: int
    queues: dict[str, int]
    host_mem_mb: float = 0.0


def map_trace(
    trace: SwfTrace,
    *,
    hosts: int | None = None,
    slots_per_host: int = 1,
    queue_map: QueueMap | None = None,
    max_jobs: int | None = None,
    swf_memory: bool = False,
    host_mem_mb: float = 0.0,
) -> MappedWorkload:
    """Map an SWF trace onto jobs and a cluster (the defaults of this module).

    Args:
        trace: the workload.
        hosts: host count; default ``MaxProcs`` (else ``MaxNodes``) of the header.
        slots_per_host: slots of each host (≥ 1).
        queue_map: trace queue numbers → queues; default everything to ``normal``.
        max_jobs: keep only the first this many records (a trace prefix).
        swf_memory: give each job with a requested memory (field 10, KB per
            processor) the request ``rusage[mem=<MB>]``, reserved per task.
        host_mem_mb: memory of each host, MB (needed with ``swf_memory``).

    Raises:
        MappingError: no host count in the header and none given, a count < 1, or a
            job number that appears twice.
    """
    if hosts is None:
        max_procs = trace.header.max_procs
        hosts = max_procs if max_procs and max_procs > 0 else trace.header.max_nodes
        if not hosts or hosts < 1:
            raise MappingError(
                f"{trace.source}: the header gives no MaxProcs or MaxNodes; pass --hosts"
            )
    if hosts < 1 or slots_per_host < 1:
        raise MappingError("hosts and slots per host must be at least 1")
    if swf_memory and host_mem_mb <= 0:
        raise MappingError("--swf-memory needs --host-mem MB, the memory of each host")
    queue_map = queue_map or QueueMap()
    records = trace.records if max_jobs is None else trace.records[:max_jobs]
    jobs: list[SimJob] = []
    seen: set[int] = set()
    skipped = 0
    for record in records:
        if record.job_number in seen:
            raise MappingError(f"{trace.source}: job number {record.job_number} appears twice")
        seen.add(record.job_number)
        tasks = record.requested_procs if record.requested_procs > 0 else record.allocated_procs
        if record.run_time < 0 or tasks <= 0 or record.submit_time < 0:
            skipped += 1
            continue
        user = f"u{record.user_id}" if record.user_id >= 0 else "nobody"
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
            )
        )
    jobs.sort(key=lambda job: (job.submit_s, job.jobid))
    return MappedWorkload(
        jobs=tuple(jobs),
        skipped=skipped,
        hosts=hosts,
        slots_per_host=slots_per_host,
        origin_s=trace.header.unix_start_time,
        queues=queue_map.queues(),
        host_mem_mb=host_mem_mb,
    )
