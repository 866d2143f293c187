"""Tests of the mapping from an SWF trace to simulated jobs and a cluster."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from xce_driver.workloads.mapping import (
    DEFAULT_QUEUE,
    DEFAULT_QUEUE_PRIORITY,
    SKIP_REASONS,
    MappingError,
    QueueMap,
    SimJob,
    map_trace,
)
from xce_driver.workloads.swf import SwfHeader, SwfRecord, SwfTrace


def rec(
    job: int,
    submit: int,
    run: int,
    *,
    alloc: int = -1,
    req: int = -1,
    queue: int = -1,
    user: int = 1,
) -> SwfRecord:
    """An SWF record with the fields the mapping reads; -1 elsewhere."""
    return SwfRecord(
        job, submit, -1, run, alloc, -1.0, -1.0, req, -1, -1.0, 1, user, -1, -1, queue, -1, -1, -1
    )


def trace(*records: SwfRecord, **header: str) -> SwfTrace:
    """A trace read from ``t.swf`` with ``header`` as its ``; Key: value`` lines, in
    order from line 1."""
    values = dict(header)
    repeated = {key: [value] for key, value in values.items()}
    lines = {key: number for number, key in enumerate(values, start=1)}
    return SwfTrace(SwfHeader(values, repeated, lines, "t.swf"), records, "t.swf")


def skips(**counts: int) -> dict[str, int]:
    """``MappedWorkload.skipped`` with ``counts`` and zeros elsewhere."""
    return {reason: counts.get(reason, 0) for reason in SKIP_REASONS}


def shape(jobs: tuple[SimJob, ...]) -> list[tuple[int, int, int, int, str, str]]:
    return [(j.jobid, j.submit_s, j.run_s, j.tasks, j.queue, j.user) for j in jobs]


# --- cluster shape ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "header, hosts, expected",
    [
        ({"MaxProcs": "128", "MaxNodes": "64"}, None, 128),
        ({"MaxNodes": "256"}, None, 256),
        ({"MaxProcs": "-1", "MaxNodes": "32"}, None, 32),
        ({"MaxProcs": "128"}, 16, 16),
        ({"MaxProcs": "-4", "MaxNodes": "abc"}, 16, 16),
        ({}, 4, 4),
        ({"MaxProcs": "128.0"}, None, 128),
        ({"MaxProcs": "-1.0", "MaxNodes": "1e2"}, None, 100),
    ],
    ids=[
        "MaxProcs wins over MaxNodes",
        "MaxNodes when MaxProcs is absent",
        "MaxNodes when MaxProcs is -1 (unknown)",
        "an explicit host count wins over the header",
        "with an explicit host count an invalid machine size is not read",
        "no header, an explicit host count",
        "a MaxProcs written as a decimal, as records may write whole numbers",
        "-1.0 is unknown as -1 is, and MaxNodes in exponent form",
    ],
)
def test_host_count(header: dict[str, str], hosts: int | None, expected: int) -> None:
    workload = map_trace(trace(rec(1, 0, 10, alloc=1), **header), hosts=hosts)
    assert workload.hosts == expected
    assert workload.slots_per_host == 1


@pytest.mark.parametrize(
    "header, kwargs, message",
    [
        ({}, {}, "t.swf: the header gives no MaxProcs or MaxNodes; pass --hosts"),
        (
            {"MaxProcs": "-1", "MaxNodes": "-1"},
            {},
            "t.swf: the header gives no MaxProcs or MaxNodes; pass --hosts",
        ),
        (
            {"MaxProcs": "0"},
            {},
            "t.swf:1: header MaxProcs: '0' is not a whole number of processors above 0; "
            "pass --hosts",
        ),
        (
            {"MaxProcs": "-4", "MaxNodes": "128"},
            {},
            "t.swf:1: header MaxProcs: '-4' is not a whole number of processors above 0; "
            "pass --hosts",
        ),
        (
            {"Version": "2.2", "MaxProcs": "abc"},
            {},
            "t.swf:2: header MaxProcs: 'abc' is not a whole number of processors above 0; "
            "pass --hosts",
        ),
        (
            {"MaxProcs": "8.5"},
            {},
            "t.swf:1: header MaxProcs: '8.5' is not a whole number of processors above 0; "
            "pass --hosts",
        ),
        (
            {"MaxProcs": ""},
            {},
            "t.swf:1: header MaxProcs: '' is not a whole number of processors above 0; "
            "pass --hosts",
        ),
        (
            {"MaxProcs": "128", "MaxNodes": "-4"},
            {},
            "t.swf:2: header MaxNodes: '-4' is not a whole number of nodes above 0; pass --hosts",
        ),
        ({"MaxProcs": "8"}, {"hosts": 0}, "hosts and slots per host must be at least 1"),
        ({"MaxProcs": "8"}, {"slots_per_host": 0}, "hosts and slots per host must be at least 1"),
    ],
    ids=[
        "no size in the header and none given",
        "both sizes -1 (unknown)",
        "a machine of zero processors",
        "a negative MaxProcs is not read as no MaxProcs",
        "a MaxProcs that is a word",
        "a MaxProcs that is not whole",
        "a MaxProcs with no value",
        "a negative MaxNodes beside a valid MaxProcs",
        "zero hosts asked for",
        "zero slots per host asked for",
    ],
)
def test_unusable_cluster_shape(
    header: dict[str, str], kwargs: dict[str, int], message: str
) -> None:
    with pytest.raises(MappingError) as error:
        map_trace(trace(rec(1, 0, 10, alloc=1), **header), **kwargs)  # type: ignore[arg-type]
    assert str(error.value) == message


def test_slots_per_host_is_kept() -> None:
    workload = map_trace(trace(rec(1, 0, 10, alloc=1), MaxProcs="8"), slots_per_host=4)
    assert (workload.hosts, workload.slots_per_host) == (8, 4)


# --- jobs ------------------------------------------------------------------------------


def test_defaults_map_each_record_to_a_job() -> None:
    workload = map_trace(
        trace(
            rec(7, 100, 3600, alloc=2, req=4, queue=1, user=12),  # requested procs win
            rec(9, 150, 60, alloc=3, req=-1, user=-1),  # allocated procs, no user
            rec(11, 200, 0, alloc=5, req=0, queue=0),  # zero run time is kept
            MaxProcs="8",
            UnixStartTime="893466664",
        )
    )
    assert shape(workload.jobs) == [
        (7, 100, 3600, 4, DEFAULT_QUEUE, "u12"),
        (9, 150, 60, 3, DEFAULT_QUEUE, "nobody"),
        (11, 200, 0, 5, DEFAULT_QUEUE, "u1"),
    ]
    assert workload.skipped == skips()
    assert workload.origin_s == 893_466_664
    assert workload.queues == {DEFAULT_QUEUE: DEFAULT_QUEUE_PRIORITY}


@pytest.mark.parametrize(
    "record, reason",
    [
        (rec(5, 10, -1, alloc=4, req=4), "unknown_run_time"),
        (rec(5, 10, 60, alloc=-1, req=-1), "no_processors"),
        (rec(5, 10, 60, alloc=0, req=0), "no_processors"),
        (rec(5, -1, 60, alloc=4, req=4), "unknown_submit_time"),
        (rec(5, -1, -1, alloc=-1, req=-1), "unknown_submit_time"),
        (rec(5, 10, -1, alloc=0, req=-1), "unknown_run_time"),
    ],
    ids=[
        "unknown run time",
        "unknown processor counts",
        "zero processors in both fields",
        "unknown submit time",
        "every reason at once: counted once, under the first",
        "no run time and no processors: counted under the run time",
    ],
)
def test_record_that_cannot_run_is_skipped_and_counted_by_reason(
    record: SwfRecord, reason: str
) -> None:
    workload = map_trace(
        trace(rec(1, 0, 10, alloc=1), record, rec(9, 20, 5, alloc=1), MaxProcs="8")
    )
    assert [job.jobid for job in workload.jobs] == [1, 9]
    assert workload.skipped == skips(**{reason: 1})
    assert list(workload.skipped) == list(SKIP_REASONS)


def test_a_records_group_is_its_jobs_project() -> None:
    records = [rec(1, 0, 10, alloc=1), rec(2, 5, 10, alloc=1)]
    records[0] = dataclasses.replace(records[0], group_id=3)  # field 13; -1: unknown
    workload = map_trace(trace(*records, MaxProcs="8"))
    assert [(job.jobid, job.project) for job in workload.jobs] == [(1, "g3"), (2, None)]


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"submit_time": -7}, "field 2 (submit_time): -7"),
        ({"run_time": -2}, "field 4 (run_time): -2"),
        ({"allocated_procs": -4}, "field 5 (allocated_procs): -4"),
        ({"requested_procs": -16}, "field 8 (requested_procs): -16"),
        ({"user_id": -3}, "field 12 (user_id): -3"),
        ({"group_id": -4}, "field 13 (group_id): -4"),
        ({"queue_number": -2}, "field 15 (queue_number): -2"),
        ({"run_time": -1, "submit_time": -5}, "field 2 (submit_time): -5"),
    ],
    ids=[
        "a submit time of -7",
        "a run time of -2",
        "-4 allocated processors",
        "-16 requested processors",
        "a user id of -3",
        "a group id of -4",
        "a queue number of -2",
        "a record that would be skipped is checked first",
    ],
)
def test_a_negative_value_other_than_unknown_is_an_error_not_a_skip(
    changes: dict[str, int], field: str
) -> None:
    record = dataclasses.replace(at_line(rec(5, 10, 60, alloc=4, req=4), 7), **changes)
    with pytest.raises(MappingError) as error:
        map_trace(trace(rec(1, 0, 10, alloc=1), record, MaxProcs="8"))
    assert str(error.value) == (
        f"t.swf:7: {field} is negative, and the format's only negative value is -1 (unknown)"
    )


def test_a_negative_requested_memory_is_an_error_only_where_it_is_read() -> None:
    record = at_line(dataclasses.replace(rec(5, 10, 60, alloc=4), requested_memory_kb=-0.5), 3)
    with_memory = dataclasses.replace(rec(6, 10, 60, alloc=4), requested_memory_kb=2048.0)
    swf = trace(record, with_memory, MaxProcs="8")
    assert [job.resreq for job in map_trace(swf).jobs] == ["", ""]
    with pytest.raises(MappingError) as error:
        map_trace(swf, swf_memory=True, host_mem_mb=1024.0)
    assert str(error.value) == (
        "t.swf:3: field 10 (requested_memory_kb): -0.5 is negative, and the format's only "
        "negative value is -1 (unknown)"
    )


@pytest.mark.parametrize(
    "queue_map, swf_memory, message",
    [
        (
            "3=urgent:100,4=low:10",
            False,
            "t.swf: --swf-queues: no record simulated is in queue 3, 4 (field 15); their "
            "queue numbers: -1, 1",
        ),
        (
            None,
            True,
            "t.swf: --swf-memory: no record simulated gives a requested memory (field 10 is "
            "-1 or 0 in every one)",
        ),
    ],
    ids=["a queue map none of whose numbers a record has", "swf memory with no memory asked"],
)
def test_an_option_that_would_change_no_job_is_refused(
    queue_map: str | None, swf_memory: bool, message: str
) -> None:
    records = (rec(1, 0, 10, alloc=1, queue=1), rec(2, 0, 10, alloc=1))
    kwargs: dict[str, object] = {"swf_memory": swf_memory, "host_mem_mb": 1024.0}
    if queue_map is not None:
        kwargs["queue_map"] = QueueMap.parse(queue_map)
    with pytest.raises(MappingError) as error:
        map_trace(trace(*records, MaxProcs="8"), **kwargs)  # type: ignore[arg-type]
    assert str(error.value) == message
    # One record the option applies to is enough.
    changed = (*records, rec(3, 0, 10, alloc=1, queue=4))
    if swf_memory:
        changed = (
            *records,
            dataclasses.replace(records[0], job_number=3, requested_memory_kb=1024.0),
        )
    assert len(map_trace(trace(*changed, MaxProcs="8"), **kwargs).jobs) == 3  # type: ignore[arg-type]


def test_jobs_are_sorted_by_submit_time_then_job_number() -> None:
    workload = map_trace(
        trace(
            rec(5, 10, 1, alloc=1),
            rec(3, 10, 1, alloc=1),
            rec(9, 5, 1, alloc=1),
            rec(1, 10, 1, alloc=1),
            MaxProcs="8",
        )
    )
    assert [(job.submit_s, job.jobid) for job in workload.jobs] == [
        (5, 9),
        (10, 1),
        (10, 3),
        (10, 5),
    ]


@pytest.mark.parametrize(
    "max_jobs, jobids, skipped",
    [
        (1, [1], skips()),
        (3, [1, 4], skips(unknown_run_time=1)),
        (5, [1, 4, 5], skips(unknown_run_time=1, no_processors=1)),
        (99, [1, 4, 5], skips(unknown_run_time=1, no_processors=1)),
    ],
    ids=[
        "a one-record prefix",
        "a prefix holding one record that is skipped",
        "the whole trace",
        "a prefix longer than the trace",
    ],
)
def test_max_jobs_keeps_a_prefix_of_records(
    max_jobs: int, jobids: list[int], skipped: dict[str, int]
) -> None:
    records = (
        rec(1, 0, 10, alloc=1),
        rec(2, 1, -1, alloc=1),  # skipped: unknown run time
        rec(4, 2, 10, alloc=1),
        rec(3, 3, 10, alloc=0),  # skipped: no processors
        rec(5, 4, 10, alloc=1),
    )
    workload = map_trace(trace(*records, MaxProcs="8"), max_jobs=max_jobs)
    assert [job.jobid for job in workload.jobs] == jobids
    assert workload.skipped == skipped


def test_a_negative_max_jobs_is_refused_rather_than_dropping_the_last_records() -> None:
    with pytest.raises(MappingError, match="max jobs -5 is negative"):
        map_trace(trace(rec(1, 0, 10, alloc=1), MaxProcs="8"), max_jobs=-5)


@pytest.mark.parametrize(
    "records",
    [
        (rec(7, 0, 10, alloc=1), rec(7, 5, 10, alloc=1)),
        (rec(7, 0, 10, alloc=1), rec(7, 5, -1, alloc=1)),
    ],
    ids=["two runnable records share a number", "a skipped record reuses a number"],
)
def test_duplicate_job_number_is_rejected(records: tuple[SwfRecord, ...]) -> None:
    with pytest.raises(MappingError) as error:
        map_trace(trace(*records, MaxProcs="8"))
    assert str(error.value) == "t.swf: job number 7 appears twice"


def test_duplicate_job_number_past_the_prefix_is_ignored() -> None:
    records = (rec(7, 0, 10, alloc=1), rec(8, 1, 10, alloc=1), rec(7, 5, 10, alloc=1))
    workload = map_trace(trace(*records, MaxProcs="8"), max_jobs=2)
    assert [job.jobid for job in workload.jobs] == [7, 8]


def test_queue_map_sends_trace_queues_to_named_queues() -> None:
    queue_map = QueueMap.parse("0=interactive:60,1=express:50,*=batch:20")
    workload = map_trace(
        trace(
            rec(1, 0, 10, alloc=1, queue=1),
            rec(2, 1, 10, alloc=1, queue=0),
            rec(3, 2, 10, alloc=1, queue=5),
            rec(4, 3, 10, alloc=1, queue=-1),
            MaxProcs="8",
        ),
        queue_map=queue_map,
    )
    assert [(job.jobid, job.queue) for job in workload.jobs] == [
        (1, "express"),
        (2, "interactive"),
        (3, "batch"),
        (4, "batch"),
    ]
    assert workload.queues == {"interactive": 60, "express": 50, "batch": 20}


# --- QueueMap.parse ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, by_number, default",
    [
        ("1=express:50", {1: ("express", 50)}, ("normal", 30)),
        ("1=express", {1: ("express", 30)}, ("normal", 30)),
        ("1=express:", {1: ("express", 30)}, ("normal", 30)),
        ("*=batch:5", {}, ("batch", 5)),
        (
            " 0 = interactive : 60 , 1=express:50 ",
            {0: ("interactive", 60), 1: ("express", 50)},
            ("normal", 30),
        ),
        (
            "6=No_Class:-10,7=dev-queue:0",
            {6: ("No_Class", -10), 7: ("dev-queue", 0)},
            ("normal", 30),
        ),
        ("-1=unknown:1,*=normal:30", {-1: ("unknown", 1)}, ("normal", 30)),
    ],
    ids=[
        "one queue with a priority",
        "priority left out",
        "priority left empty",
        "only the default queue",
        "spaces around every part",
        "underscores, hyphens and a negative priority",
        "the trace's unknown queue number -1",
    ],
)
def test_queue_map_parses(
    text: str, by_number: dict[int, tuple[str, int]], default: tuple[str, int]
) -> None:
    queue_map = QueueMap.parse(text)
    assert queue_map.by_number == by_number
    assert queue_map.default == default


def test_queue_map_lookup_and_queues() -> None:
    queue_map = QueueMap.parse("2=high:40,1=express:50,*=low:10")
    assert [queue_map(n) for n in (1, 2, 3, -1)] == ["express", "high", "low", "low"]
    assert queue_map.queues() == {"high": 40, "express": 50, "low": 10}  # first mention order


@pytest.mark.parametrize(
    "text, message",
    [
        ("garbage", "queue map entry 'garbage' is not NUM=NAME[:PRIORITY]"),
        ("", "empty queue map"),
        ("  ", "empty queue map"),
        ("1=express,", "queue map entry '' is not NUM=NAME[:PRIORITY]"),
        ("1=", "queue map entry '1=' is not NUM=NAME[:PRIORITY]"),
        ("1=:50", "queue map entry '1=:50' is not NUM=NAME[:PRIORITY]"),
        ("1=exp ress", "queue map entry '1=exp ress' is not NUM=NAME[:PRIORITY]"),
        ("1=a/b", "queue map entry '1=a/b' is not NUM=NAME[:PRIORITY]"),
        (
            "1=express:high",
            "queue map entry '1=express:high': priority 'high' is not a whole number",
        ),
        ("1=express:1.5", "queue map entry '1=express:1.5': priority '1.5' is not a whole number"),
        ("1=express:5:6", "queue map entry '1=express:5:6': priority '5:6' is not a whole number"),
        ("one=express", "queue map entry 'one=express': 'one' is not a queue number"),
        ("=express", "queue map entry '=express': '' is not a queue number"),
        ("1=a,2=b,1=c", "queue map maps queue number 1 twice"),
        ("*=normal:30,1=a,*=low:10", "queue map gives the default queue (*) twice"),
    ],
    ids=[
        "no equals sign",
        "nothing at all",
        "only blanks",
        "a trailing comma",
        "no queue name",
        "a priority but no queue name",
        "a space inside the queue name",
        "a slash in the queue name",
        "a word as priority",
        "a fractional priority",
        "two priorities",
        "a word as queue number",
        "no queue number",
        "one queue number mapped twice",
        "the default queue given twice",
    ],
)
def test_queue_map_rejects(text: str, message: str) -> None:
    with pytest.raises(MappingError) as error:
        QueueMap.parse(text)
    assert str(error.value) == message


@pytest.mark.parametrize(
    "text",
    ["1=a:50,2=a:40", "1=normal:50,*=normal:30"],
    ids=[
        "two entries give one queue two priorities",
        "an entry and the explicit default give normal two priorities",
    ],
)
def test_one_queue_with_two_priorities_is_rejected(text: str) -> None:
    queue_map = QueueMap.parse(text)
    with pytest.raises(MappingError, match="is given two priorities"):
        queue_map.queues()
    with pytest.raises(MappingError, match="is given two priorities"):
        map_trace(trace(rec(1, 0, 10, alloc=1), MaxProcs="8"), queue_map=queue_map)


def test_a_negative_max_procs_falls_back_to_max_nodes() -> None:
    mapped = map_trace(trace(rec(1, 0, 10, alloc=1), MaxProcs="-1", MaxNodes="16"))
    assert mapped.hosts == 16


def test_mapping_normal_sets_the_priority_of_the_implicit_default() -> None:
    queue_map = QueueMap.parse("1=normal:50,2=express:70")
    assert queue_map.queues() == {"normal": 50, "express": 70}
    assert queue_map(9) == "normal"


# --- the shared traces -------------------------------------------------------------------


@pytest.mark.parametrize(
    "file, hosts, jobs, skipped, origin",
    [
        (
            "SDSC-SP2-1998-4.2-cln.swf.gz",
            128,
            59_715 - 5_671,
            skips(unknown_run_time=5_671),
            893_466_664,
        ),
        ("KTH-SP2-1996-2.1-cln.swf.gz", 100, 28_476 - 1, skips(no_processors=1), 843_480_031),
        ("NASA-iPSC-1993-3.1-cln.swf.gz", 128, 18_239, skips(), 749_458_803),
        ("lublin_256.swf", 256, 10_000, skips(), 0),
        ("lublin_256_new2.swf", 256, 10_000, skips(), 0),
    ],
    ids=[
        "SDSC-SP2: jobs with run time -1 are skipped",
        "KTH-SP2: job 27313 without processors is skipped",
        "NASA-iPSC: every record runs",
        "Lublin-1: hosts from MaxNodes",
        "Lublin-2: hosts from MaxNodes",
    ],
)
def test_map_real_trace(
    load_trace: Callable[[str], SwfTrace],
    file: str,
    hosts: int,
    jobs: int,
    skipped: dict[str, int],
    origin: int,
) -> None:
    swf = load_trace(file)
    workload = map_trace(swf)
    assert (workload.hosts, len(workload.jobs), workload.skipped) == (hosts, jobs, skipped)
    assert workload.origin_s == origin
    by_number = {record.job_number: record for record in swf.records}
    for job in workload.jobs[:: max(1, len(workload.jobs) // 500)]:
        record = by_number[job.jobid]
        assert job.submit_s == record.submit_time
        assert job.run_s == record.run_time
        expected_tasks = (
            record.requested_procs if record.requested_procs > 0 else record.allocated_procs
        )
        assert job.tasks == expected_tasks
    keys = [(job.submit_s, job.jobid) for job in workload.jobs]
    assert keys == sorted(keys)


# --- ceilings and values beyond them ---------------------------------------------------------


def at_line(record: SwfRecord, line: int) -> SwfRecord:
    """``record`` as if read from line ``line`` of its file."""
    return dataclasses.replace(record, line=line)


@pytest.mark.parametrize(
    "header, kwargs, message",
    [
        (
            {"MaxProcs": "999999999999"},
            {},
            "t.swf:1: header MaxProcs: 999999999999 hosts is more than the ceiling of "
            "1,000,000; pass --hosts",
        ),
        (
            {"MaxNodes": "1" + "0" * 40},
            {},
            "t.swf:1: header MaxNodes: '1000000000000000000000000000000000000000...' is too "
            "large (more than 30 digits); pass --hosts",
        ),
        (
            {"MaxProcs": "8"},
            {"hosts": 1_000_001},
            "1,000,001 hosts is more than the ceiling of 1,000,000",
        ),
        (
            {"MaxProcs": "8"},
            {"slots_per_host": 2**31},
            "2,147,483,648 slots per host is more than the ceiling of 2,147,483,647",
        ),
        (
            {"MaxProcs": "1000000"},
            {"slots_per_host": 4096},
            "1,000,000 hosts (header MaxProcs) × 4,096 slots per host = 4,096,000,000 slots, more "
            "than the ceiling of 2,147,483,647",
        ),
        (
            {"MaxProcs": "8"},
            {"hosts": 65536, "slots_per_host": 65536},
            "65,536 hosts × 65,536 slots per host = 4,294,967,296 slots, more than the ceiling of "
            "2,147,483,647",
        ),
        (
            {"MaxProcs": "8"},
            {"swf_memory": True, "host_mem_mb": 2.0**41},
            "host memory 2.19902e+12 MB is outside 0 to 1,099,511,627,776 MB",
        ),
        (
            {"MaxProcs": "8", "UnixStartTime": "abc"},
            {},
            "t.swf:2: header UnixStartTime: 'abc' is not a whole number of seconds (0 or more)",
        ),
        (
            {"MaxProcs": "8", "UnixStartTime": "-893466664"},
            {},
            "t.swf:2: header UnixStartTime: '-893466664' is not a whole number of seconds "
            "(0 or more)",
        ),
        (
            {"MaxProcs": "8", "UnixStartTime": "10000000000"},
            {},
            "t.swf:2: header UnixStartTime: 10000000000 is not before 10,000,000,000 s "
            "(the year 2286)",
        ),
    ],
    ids=[
        "a header MaxProcs beyond the host ceiling",
        "a header MaxNodes of 41 digits",
        "hosts given beyond the ceiling",
        "slots per host beyond 32 bits",
        "the header's hosts × slots per host beyond 32 bits",
        "hosts × slots per host given beyond 32 bits",
        "host memory beyond 2**40 MB",
        "a UnixStartTime that is not a number",
        "a negative UnixStartTime",
        "a UnixStartTime at 10**10 s",
    ],
)
def test_cluster_and_header_beyond_the_ceilings(
    header: dict[str, str], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(MappingError) as error:
        map_trace(trace(rec(1, 0, 10, alloc=1), **header), **kwargs)  # type: ignore[arg-type]
    assert str(error.value) == message


def _big(**changes: object) -> SwfRecord:
    """Job 5 of line 12, changed."""
    return dataclasses.replace(at_line(rec(5, 100, 60, alloc=4, req=4), 12), **changes)


@pytest.mark.parametrize(
    "record, header, kwargs, message",
    [
        (
            _big(submit_time=10**10),
            {},
            {},
            "t.swf:12: field 2 (submit_time): 10000000000 is too late; UnixStartTime (0) + "
            "submit time must stay below 10,000,000,000 s (the year 2286)",
        ),
        (
            _big(submit_time=2**64),
            {},
            {},
            "t.swf:12: field 2 (submit_time): 18446744073709551616 is too late; UnixStartTime "
            "(0) + submit time must stay below 10,000,000,000 s (the year 2286)",
        ),
        (
            _big(run_time=9_200_000_000),
            {"UnixStartTime": "893466664"},
            {},
            "t.swf:12: field 4 (run_time): 9200000000 is too long; UnixStartTime (893466664) + "
            "submit time (100) + run time must stay below 10,000,000,000 s (the year 2286)",
        ),
        (
            _big(requested_procs=2**31),
            {},
            {},
            "t.swf:12: field 8 (requested_procs): 2147483648 is more than 2,147,483,647 processors",
        ),
        (
            _big(requested_procs=-1, allocated_procs=2**40),
            {},
            {},
            "t.swf:12: field 5 (allocated_procs): 1099511627776 is more than 2,147,483,647 "
            "processors",
        ),
        (
            _big(job_number=2**64),
            {},
            {},
            "t.swf:12: field 1 (job_number): 18446744073709551616 is outside 0 to "
            "18,446,744,073,709,551,615",
        ),
        (
            _big(user_id=2**64),
            {},
            {},
            "t.swf:12: field 12 (user_id): 18446744073709551616 is more than "
            "18,446,744,073,709,551,615",
        ),
        (
            _big(group_id=2**64),
            {},
            {},
            "t.swf:12: field 13 (group_id): 18446744073709551616 is more than "
            "18,446,744,073,709,551,615",
        ),
        (
            _big(requested_memory_kb=2.0**60),
            {},
            {"swf_memory": True, "host_mem_mb": 1024.0},
            "t.swf:12: field 10 (requested_memory_kb): 1.15292e+18 KB is more than "
            "1,099,511,627,776 MB",
        ),
        (
            _big(run_time=10**10, line=0),
            {},
            {},
            "t.swf (job 5): field 4 (run_time): 10000000000 is too long; UnixStartTime (0) + "
            "submit time (100) + run time must stay below 10,000,000,000 s (the year 2286)",
        ),
    ],
    ids=[
        "a submit time at 10**10 s",
        "a submit time beyond 64 bits",
        "a run time ending past 10**10 s after the trace's epoch origin",
        "more requested processors than 32 bits hold",
        "more allocated processors than 32 bits hold",
        "a job number beyond 64 bits",
        "a user id beyond 64 bits",
        "a group id beyond 64 bits",
        "a requested memory beyond 2**40 MB per task",
        "a record not read from a file is named by its job number",
    ],
)
def test_record_value_beyond_its_ceiling_names_file_line_and_field(
    record: SwfRecord, header: dict[str, str], kwargs: dict[str, object], message: str
) -> None:
    records = (at_line(rec(1, 0, 10, alloc=1), 11), record)
    with pytest.raises(MappingError) as error:
        map_trace(trace(*records, MaxProcs="8", **header), **kwargs)  # type: ignore[arg-type]
    assert str(error.value) == message


@pytest.mark.parametrize(
    "record, reason",
    [
        (_big(run_time=-1, submit_time=2**64), "unknown_run_time"),
        (_big(requested_procs=-1, allocated_procs=-1, run_time=2**64), "no_processors"),
    ],
    ids=[
        "a record skipped for its unknown run time",
        "a record skipped for its missing processors",
    ],
)
def test_values_of_skipped_records_are_not_used(record: SwfRecord, reason: str) -> None:
    mapped = map_trace(trace(rec(1, 0, 10, alloc=1), record, MaxProcs="8"))
    assert ([job.jobid for job in mapped.jobs], mapped.skipped) == ([1], skips(**{reason: 1}))


def test_the_largest_values_under_the_ceilings_are_mapped() -> None:
    largest = rec(2**64 - 1, 10**10 - 2, 1, req=2**31 - 1, user=2**64 - 1)
    mapped = map_trace(trace(largest, MaxProcs="1000000"))
    (job,) = mapped.jobs
    assert (job.jobid, job.submit_s, job.run_s, job.tasks) == (2**64 - 1, 10**10 - 2, 1, 2**31 - 1)
    assert job.user == f"u{2**64 - 1}"
    assert mapped.hosts == 1_000_000


def test_queue_map_numbers_are_ascii() -> None:
    with pytest.raises(MappingError) as error:
        QueueMap.parse("1=express:５０")
    assert (
        str(error.value)
        == "queue map entry '1=express:５０': priority '５０' is not a whole number"
    )


# --- run limits (--swf-estimate) -------------------------------------------------------------


def with_request(record: SwfRecord, requested_time: int) -> SwfRecord:
    return dataclasses.replace(record, requested_time=requested_time)


ESTIMATE_RECORDS = (
    with_request(rec(1, 0, 60, alloc=1), 100),  # asked 100 s, ran 60
    with_request(rec(2, 0, 30, alloc=1), -1),  # no request: its run time
    with_request(rec(3, 0, 0, alloc=1), 0),  # no request, ran 0 s: at least 1 s
    with_request(rec(4, 0, 80, alloc=1), 50),  # ran past its request
)


@pytest.mark.parametrize(
    ("estimate", "limits"),
    [("requested", [100, 30, 1, 50]), ("exact", [60, 30, 1, 80])],
    ids=["the requested time, else the run time", "the run time"],
)
def test_run_limit_by_estimate(estimate: str, limits: list[int]) -> None:
    mapped = map_trace(trace(*ESTIMATE_RECORDS, MaxProcs="8"), estimate=estimate)
    assert [job.run_limit_s for job in mapped.jobs] == limits
    # A job runs its run time whatever its limit says.
    assert [job.run_s for job in mapped.jobs] == [60, 30, 0, 80]


def test_requested_is_the_default_estimate() -> None:
    mapped = map_trace(trace(*ESTIMATE_RECORDS, MaxProcs="8"))
    assert [job.run_limit_s for job in mapped.jobs] == [100, 30, 1, 50]


def test_an_unknown_estimate_is_refused() -> None:
    with pytest.raises(MappingError) as error:
        map_trace(trace(*ESTIMATE_RECORDS, MaxProcs="8"), estimate="guess")
    assert str(error.value) == "unknown run-limit estimate 'guess'; known: requested, exact"


def test_a_negative_requested_time_is_an_error_only_where_it_is_read() -> None:
    bad = at_line(with_request(rec(5, 10, 60, alloc=4), -3), 3)
    swf = trace(ESTIMATE_RECORDS[0], bad, MaxProcs="8")
    assert [job.run_limit_s for job in map_trace(swf, estimate="exact").jobs] == [60, 60]
    with pytest.raises(MappingError) as error:
        map_trace(swf)
    assert str(error.value) == (
        "t.swf:3: field 9 (requested_time): -3 is negative, and the format's only "
        "negative value is -1 (unknown)"
    )


def test_a_requested_time_past_the_ceiling_names_file_line_and_field() -> None:
    swf = trace(at_line(with_request(rec(1, 0, 10, alloc=1), 10**10), 4), MaxProcs="8")
    assert [job.run_limit_s for job in map_trace(swf, estimate="exact").jobs] == [10]
    with pytest.raises(MappingError) as error:
        map_trace(swf)
    assert str(error.value) == (
        "t.swf:4: field 9 (requested_time): 10000000000 is too long; a run limit must stay "
        "below 10,000,000,000 s"
    )


def test_exact_estimates_of_a_trace_without_requests_are_refused() -> None:
    swf = trace(rec(1, 0, 10, alloc=1), with_request(rec(2, 0, 10, alloc=1), 0), MaxProcs="8")
    assert [job.run_limit_s for job in map_trace(swf).jobs] == [10, 10]
    with pytest.raises(MappingError) as error:
        map_trace(swf, estimate="exact")
    assert str(error.value) == (
        "t.swf: --swf-estimate exact: no record simulated gives a requested time (field 9 "
        "is -1 or 0 in every one), so its run limits are the run times already"
    )


@pytest.mark.parametrize(
    ("max_jobs", "jobs", "past"),
    [(2000, 1873, 121), (None, 54044, 4134)],
    ids=["the first 2,000 records", "the whole trace"],
)
def test_sdsc_jobs_that_ran_past_their_request(
    load_trace: Callable[[str], SwfTrace], max_jobs: int | None, jobs: int, past: int
) -> None:
    swf = load_trace("SDSC-SP2-1998-4.2-cln.swf.gz")
    by_number = {record.job_number: record for record in swf.records}
    requested = map_trace(swf, max_jobs=max_jobs)
    exact = map_trace(swf, max_jobs=max_jobs, estimate="exact")
    assert len(requested.jobs) == len(exact.jobs) == jobs
    # SOURCES.md counts 4,134 records of SDSC-SP2 with run time > requested time.
    assert sum(job.run_s > job.run_limit_s for job in requested.jobs) == past  # type: ignore[operator]
    for job in requested.jobs:
        asked = by_number[job.jobid].requested_time
        assert job.run_limit_s == (asked if asked > 0 else max(job.run_s, 1))
    assert all(job.run_limit_s == max(job.run_s, 1) for job in exact.jobs)
