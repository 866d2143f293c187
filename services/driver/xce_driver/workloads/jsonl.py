"""Reader of JSON-lines workloads: one job a line, with LSF resource requirements.

A JSON-lines workload (``.jsonl``, or ``.jsonl.gz`` compressed) holds one JSON object
a line, each a ``xce_schemas.WorkloadJob`` (JSON Schema:
``schemas/json/workload_job.schema.json``; the format is in ``docs/workloads.md``)::

    {"jobid": 1, "submit_s": 0, "run_s": 3600, "tasks": 4, "resreq": "rusage[mem=2000]"}
    {"jobid": 2, "submit_s": 60, "run_s": 600, "tasks": 1, "queue": "short", "user": "ann"}

Blank lines are skipped. Unlike an SWF trace, a job carries its own resource
requirement string (``resreq``, LSF ``bsub -R``), queue, user, project, run limit
and priority. What the file does not give:

* the cluster: ``hosts`` hosts (required: the file has no header) of
  ``slots_per_host`` slots and ``host_mem_mb`` MB each;
* the queues: each queue a job names, with the priority of the SWF mapping's
  default queue (``mapping.DEFAULT_QUEUE_PRIORITY``, 30), in the order jobs first
  name them (``--queues`` redefines them by name);
* the time origin: 0 (times are s from the workload's time 0).

Every line is read and checked when the file is loaded, whatever ``max_jobs`` keeps:
JSON, the schema (strict numbers, no unknown field), a ``jobid`` unique in the file,
and the ``resreq`` parsed with the core's own parser (``xce_core.resreq``), so a bad
string is refused here, naming the line, rather than pending as ``BAD_RESREQ``; a
compound requirement whose parts do not add up to the job's ``tasks`` is refused
too. Each error is one line naming the file, the line and the field:
``w.jsonl:3: tasks: Input should be greater than or equal to 1``.

Memory is modelled only with ``host_mem_mb``: a kept job whose requirement asks for
memory (``rusage[mem=...]``, or ``mem``/``maxmem`` in ``select[]``) on hosts without
any could never start, and is refused; ``host_mem_mb`` when no kept job asks for
memory would change nothing, and is refused too.

The kept jobs (the first ``max_jobs`` lines' jobs) are simulated in submit order,
``(submit_s, jobid)``, after ``mapping.scale_arrivals`` (``load_factor``).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import orjson
from pydantic import ValidationError
from xce_core.resreq.model import (
    Alter,
    Binary,
    Compound,
    Defined,
    Name,
    Node,
    Primary,
    Resreq,
    ResreqError,
    Unary,
)
from xce_core.resreq.parser import parse_resreq
from xce_schemas import WorkloadJob
from xce_schemas.errors import describe

from xce_driver.workloads.mapping import (
    DEFAULT_QUEUE_PRIORITY,
    MAX_MEM_MB,
    SKIP_REASONS,
    MappedWorkload,
    MappingError,
    SimJob,
    check_cluster,
    load_factor_of,
    scale_arrivals,
)
from xce_driver.workloads.swf import SwfError, printable, reading_errors

#: File name endings read as a JSON-lines workload (any other: SWF).
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")

#: Resources whose value is host memory (MB), which hosts have only with ``host_mem_mb``.
MEMORY_RESOURCES = frozenset({"mem", "maxmem"})


class JsonlError(SwfError):
    """A JSON-lines workload that cannot be read or used; the message is one line
    naming the file, and the line and field where there is one:
    ``w.jsonl:3: tasks: Input should be greater than or equal to 1``.

    A workload file error like an SWF trace's (``SwfError``), so whoever handles one
    handles the other."""


def is_jsonl(path: str | Path) -> bool:
    """Whether ``path`` names a JSON-lines workload (``JSONL_SUFFIXES``, any case)."""
    return str(path).lower().endswith(JSONL_SUFFIXES)


def read_jsonl(
    path: str | Path,
    *,
    hosts: int,
    slots_per_host: int = 1,
    host_mem_mb: float = 0.0,
    max_jobs: int | None = None,
    load_factor: Fraction | int | float = 1,
) -> MappedWorkload:
    """Read a JSON-lines workload and map it onto its cluster (see the module docstring).

    Args:
        path: the ``.jsonl`` or ``.jsonl.gz`` file.
        hosts: host count (1 to ``mapping.MAX_HOSTS``).
        slots_per_host: slots of each host (hosts × slots at most ``mapping.MAX_SLOTS``).
        host_mem_mb: memory of each host, MB (0: none; at most ``mapping.MAX_MEM_MB``).
        max_jobs: keep only the jobs of the first this many jobs' lines.
        load_factor: the offered load's multiple (``mapping.load_factor_of``).

    Returns:
        The kept jobs in submit order, on ``hosts`` hosts; no record is skipped.

    Raises:
        JsonlError: the file is missing, unreadable, not gzip where named ``.gz``,
            empty, or holds a line that is not a valid job (named by file, line and
            field); a job asks for memory and ``host_mem_mb`` is 0 (naming the line).
        MappingError: a cluster shape beyond the ceilings, a negative ``max_jobs``, a
            bad load factor, or ``host_mem_mb`` when no kept job asks for memory.
    """
    factor = load_factor_of(load_factor)
    check_cluster(hosts, slots_per_host, max_jobs)
    if not 0 <= host_mem_mb <= MAX_MEM_MB:
        raise MappingError(f"host memory {host_mem_mb:g} MB is outside 0 to {MAX_MEM_MB:,} MB")
    path = Path(path)
    source = printable(str(path))
    lines = _read(path, source)
    if not lines:  # a simulation of nothing would report a success
        raise JsonlError(
            f"{source}: no jobs, nothing to simulate (a JSON-lines workload lists one job, "
            "a JSON object, per line)"
        )
    kept = lines if max_jobs is None else lines[:max_jobs]
    asks_memory = False
    for number, job, request in kept:
        if _asks_for_memory(request):
            if host_mem_mb <= 0:
                raise JsonlError(
                    f"{source}:{number}: resreq: {job.resreq!r} asks for memory, and the "
                    "hosts have none: give --host-mem MB, the memory of each host"
                )
            asks_memory = True
    if host_mem_mb > 0 and not asks_memory:
        raise MappingError(
            f"{source}: --host-mem: no job simulated asks for memory (rusage[mem=...], or "
            "mem or maxmem in select[]), so it would change nothing"
        )
    jobs = sorted((_sim_job(job) for _, job, _ in kept), key=lambda j: (j.submit_s, j.jobid))
    queues = dict.fromkeys((job.queue for _, job, _ in kept), DEFAULT_QUEUE_PRIORITY)
    jobs, _ = scale_arrivals(jobs, [], factor, source=source)
    return MappedWorkload(
        jobs=tuple(jobs),
        skipped=dict.fromkeys(SKIP_REASONS, 0),
        hosts=hosts,
        slots_per_host=slots_per_host,
        origin_s=0,
        queues=queues,
        host_mem_mb=host_mem_mb,
        load_factor=float(factor),
    )


def _read(path: Path, source: str) -> list[tuple[int, WorkloadJob, Resreq]]:
    """Every job of the file, in file order: (line number, job, parsed ``resreq``).

    Raises:
        JsonlError: as ``read_jsonl``.
    """
    jobs: list[tuple[int, WorkloadJob, Resreq]] = []
    first_line: dict[int, int] = {}
    with reading_errors(source, JsonlError):
        for number, raw in enumerate(_lines(path), start=1):
            text = raw.strip()
            if not text:
                continue
            where = f"{source}:{number}"
            job = _job(text, where)
            if job.jobid in first_line:
                raise JsonlError(
                    f"{where}: jobid: {job.jobid} appears twice (first on line "
                    f"{first_line[job.jobid]})"
                )
            first_line[job.jobid] = number
            jobs.append((number, job, _resreq(job, where)))
    return jobs


def _lines(path: Path) -> Iterator[bytes]:
    """The file's lines as bytes (orjson checks that they are UTF-8)."""
    if path.name.lower().endswith(".gz"):
        with gzip.open(path, "rb") as handle:
            yield from handle
    else:
        with open(path, "rb") as handle:
            yield from handle


def _job(text: bytes, where: str) -> WorkloadJob:
    """One line's job.

    Raises:
        JsonlError: not JSON, not an object, or refused by the schema (naming the
            field: ``w.jsonl:3: tasks: Input should be ...``).
    """
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise JsonlError(f"{where}: not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(document, dict):
        raise JsonlError(f"{where}: expected a job, a JSON object, not {_json_type(document)}")
    try:
        return WorkloadJob.model_validate(document)
    except ValidationError as exc:
        raise JsonlError(f"{where}: {describe(exc)}") from None


def _resreq(job: WorkloadJob, where: str) -> Resreq:
    """``job``'s resource requirement, parsed by the core's parser.

    Raises:
        JsonlError: the string does not parse or has a bad value (the parser's
            words, naming the position), or a compound requirement's parts do not
            add up to the job's tasks.
    """
    request = parse_resreq(job.resreq)
    if isinstance(request, ResreqError):
        raise JsonlError(f"{where}: resreq: {request.message}")
    compounds = request.alternatives if isinstance(request, Alter) else (request,)
    for compound in compounds:
        if isinstance(compound, Compound) and compound.tasks != job.tasks:
            raise JsonlError(
                f"{where}: resreq: the compound requirement {compound.text!r} asks for "
                f"{compound.tasks} tasks, the job (tasks) for {job.tasks}"
            )
    return request


def _asks_for_memory(request: Resreq) -> bool:
    """Whether ``request`` reserves memory or selects hosts by it (``MEMORY_RESOURCES``
    in ``rusage[]`` or ``select[]``; ``order[]`` alone never keeps a job from a host)."""
    if isinstance(request, Alter):
        return any(_asks_for_memory(alternative) for alternative in request.alternatives)
    if isinstance(request, Compound):
        return any(_asks_for_memory(part.primary) for part in request.parts)
    return _primary_asks_for_memory(request)


def _primary_asks_for_memory(request: Primary) -> bool:
    if any(usage.resource in MEMORY_RESOURCES for usage in request.rusage):
        return True
    return request.select is not None and _names_memory(request.select.expr)


def _names_memory(node: Node) -> bool:
    """Whether a select expression refers to a memory resource."""
    if isinstance(node, Name | Defined):
        return node.name in MEMORY_RESOURCES
    if isinstance(node, Unary):
        return _names_memory(node.operand)
    if isinstance(node, Binary):
        return _names_memory(node.left) or _names_memory(node.right)
    return False


def _sim_job(job: WorkloadJob) -> SimJob:
    """The job to simulate of one line (a ``priority`` None is its queue's)."""
    return SimJob(
        jobid=job.jobid,
        submit_s=job.submit_s,
        run_s=job.run_s,
        tasks=job.tasks,
        queue=job.queue,
        user=job.user,
        resreq=job.resreq,
        priority=job.priority,
        run_limit_s=job.run_limit_s,
        project=job.project,
    )


def _json_type(value: object) -> str:
    """What a JSON value is, with its article: ``a list``, ``a string``, ..."""
    names = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")
