"""Tests of the SWF reader: every shared trace, and malformed input.

Expected figures of the real traces are those of ``../shared/workloads/SOURCES.md``
(counted from the files) and of the traces' own ``;`` headers.
"""

from __future__ import annotations

import gzip
import itertools
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xce_driver.workloads.swf import (
    SWF_FIELDS,
    SwfError,
    SwfHeader,
    SwfRecord,
    SwfTrace,
    parse_record,
    printable,
    read_swf,
)

from tests.driver.conftest import shared_trace

# --- the shared traces ---------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """What SOURCES.md and the header say of one trace."""

    file: str
    records: int
    max_procs: int | None
    max_nodes: int
    unix_start_time: int
    max_jobs: int
    max_records: int
    queues: dict[int, str]
    run_unknown: int  # run time == -1
    run_zero: int  # run time == 0
    no_procs: tuple[int, ...]  # job numbers with fields 5 and 8 both <= 0
    requested_time_unknown: int
    run_over_requested: int  # run time > requested time (a known requested time)
    wait_unknown: int
    status: dict[int, int]
    submit_span_days: float
    offered_load: float


SDSC = Expected(
    file="SDSC-SP2-1998-4.2-cln.swf.gz",
    records=59_715,
    max_procs=128,
    max_nodes=128,
    unix_start_time=893_466_664,
    max_jobs=73_496,
    max_records=59_715,
    queues={
        0: "interactive",
        1: "express",
        2: "high",
        3: "normal",
        4: "low",
        5: "standby",
        6: "No_Class",
    },
    run_unknown=5_671,
    run_zero=10,
    no_procs=(),
    requested_time_unknown=66,
    run_over_requested=4_134,
    wait_unknown=0,
    status={1: 43_117, 5: 16_598},
    submit_span_days=729.4,
    offered_load=0.834,
)
KTH = Expected(
    file="KTH-SP2-1996-2.1-cln.swf.gz",
    records=28_476,
    max_procs=100,
    max_nodes=100,
    unix_start_time=843_480_031,
    max_jobs=28_490,
    max_records=28_476,
    queues={},
    run_unknown=0,
    run_zero=8,
    no_procs=(27313,),
    requested_time_unknown=0,
    run_over_requested=475,
    wait_unknown=0,
    status={1: 20_530, 0: 7_946},
    submit_span_days=332.9,
    offered_load=0.701,
)
NASA = Expected(
    file="NASA-iPSC-1993-3.1-cln.swf.gz",
    records=18_239,
    max_procs=128,
    max_nodes=128,
    unix_start_time=749_458_803,
    max_jobs=42_264,
    max_records=42_264,
    queues={0: "interactive", 1: "batch"},
    run_unknown=0,
    run_zero=173,
    no_procs=(),
    requested_time_unknown=18_239,
    run_over_requested=0,
    wait_unknown=18_239,
    status={-1: 18_239},
    submit_span_days=92.0,
    offered_load=0.466,
)
LUBLIN_1 = Expected(
    file="lublin_256.swf",
    records=10_000,
    max_procs=None,
    max_nodes=256,
    unix_start_time=0,  # absent from the header
    max_jobs=10_000,
    max_records=10_000,
    queues={},
    run_unknown=0,
    run_zero=0,
    no_procs=(),
    requested_time_unknown=10_000,
    run_over_requested=0,
    wait_unknown=10_000,
    status={1: 10_000},
    submit_span_days=89.2,
    offered_load=1.061,
)
LUBLIN_2 = Expected(
    file="lublin_256_new2.swf",
    records=10_000,
    max_procs=None,
    max_nodes=256,
    unix_start_time=0,
    max_jobs=10_000,
    max_records=10_000,
    queues={},
    run_unknown=0,
    run_zero=0,
    no_procs=(),
    requested_time_unknown=10_000,
    run_over_requested=0,
    wait_unknown=10_000,
    status={1: 10_000},
    submit_span_days=53.3,
    offered_load=0.616,
)

TRACES = [SDSC, KTH, NASA, LUBLIN_1, LUBLIN_2]
TRACE_IDS = [
    "SDSC-SP2: gzip, 7 named queues, cancelled jobs without run time",
    "KTH-SP2: gzip, EASY log, one job with no processors",
    "NASA-iPSC: gzip, no requested times, waits or statuses",
    "Lublin-1: plain text model output, MaxNodes only, overloaded",
    "Lublin-2: plain text model output, MaxNodes only",
]

TraceLoader = Callable[[str], SwfTrace]


def test_every_trace_in_the_folder_has_expectations(workloads_dir: Path) -> None:
    on_disk = sorted(
        path.name for path in workloads_dir.iterdir() if path.name.endswith((".swf", ".swf.gz"))
    )
    assert on_disk == sorted(expected.file for expected in TRACES)


@pytest.mark.parametrize("expected", TRACES, ids=TRACE_IDS)
def test_trace_header(load_trace: TraceLoader, expected: Expected) -> None:
    header = load_trace(expected.file).header
    assert header.max_procs == expected.max_procs
    assert header.max_nodes == expected.max_nodes
    assert header.unix_start_time == expected.unix_start_time
    assert header.int_value("MaxJobs") == expected.max_jobs
    assert header.int_value("MaxRecords") == expected.max_records
    assert header.queue_names() == expected.queues


@pytest.mark.parametrize("expected", TRACES, ids=TRACE_IDS)
def test_trace_records(load_trace: TraceLoader, expected: Expected) -> None:
    trace = load_trace(expected.file)
    records = trace.records
    assert len(records) == expected.records
    assert trace.source.endswith(expected.file)
    assert all(isinstance(record, SwfRecord) for record in records[:10])
    submits = [record.submit_time for record in records]
    assert all(a <= b for a, b in itertools.pairwise(submits))
    numbers = [record.job_number for record in records]
    assert len(set(numbers)) == len(numbers)
    span_days = (submits[-1] - submits[0]) / 86_400
    assert round(span_days, 1) == expected.submit_span_days


@pytest.mark.parametrize("expected", TRACES, ids=TRACE_IDS)
def test_trace_quirk_counts(load_trace: TraceLoader, expected: Expected) -> None:
    records = load_trace(expected.file).records
    assert sum(r.run_time == -1 for r in records) == expected.run_unknown
    assert sum(r.run_time == 0 for r in records) == expected.run_zero
    no_procs = tuple(
        r.job_number for r in records if r.allocated_procs <= 0 and r.requested_procs <= 0
    )
    assert no_procs == expected.no_procs
    assert sum(r.requested_time == -1 for r in records) == expected.requested_time_unknown
    over = sum(r.requested_time >= 0 and r.run_time > r.requested_time for r in records)
    assert over == expected.run_over_requested
    assert sum(r.wait_time == -1 for r in records) == expected.wait_unknown
    assert dict(Counter(r.status for r in records)) == expected.status


@pytest.mark.parametrize("expected", TRACES, ids=TRACE_IDS)
def test_trace_offered_load(load_trace: TraceLoader, expected: Expected) -> None:
    # SOURCES.md: Σ(run × max(field 5, field 8)) / (MaxProcs × submit span), MaxNodes
    # where MaxProcs is absent; unknown run times (-1) count as 0.
    trace = load_trace(expected.file)
    records = trace.records
    size = trace.header.max_procs or trace.header.max_nodes
    assert size is not None
    span = records[-1].submit_time - records[0].submit_time
    work = sum(max(r.run_time, 0) * max(r.allocated_procs, r.requested_procs) for r in records)
    assert work / (size * span) == pytest.approx(expected.offered_load, abs=5e-4)


def test_kth_job_without_processors_is_read_as_is(load_trace: TraceLoader) -> None:
    (record,) = [r for r in load_trace(KTH.file).records if r.job_number == 27313]
    assert record.allocated_procs <= 0
    assert record.requested_procs <= 0


def test_sdsc_first_record_fields(load_trace: TraceLoader) -> None:
    first = load_trace(SDSC.file).records[0]
    assert first.job_number == 11
    assert first.submit_time == 566_129


# --- small files -----------------------------------------------------------------------

GOOD = "1 0 5 100 4 90.5 1024 4 200 2048 1 3 2 7 1 1 -1 -1"
HEADER = "; Version: 2.2\n; MaxProcs: 8\n; Queue: 1 batch\n; Queue: 2 express\n; Note: first\n"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["small.swf", "small.swf.gz"], ids=["plain text", "gzip"])
def test_small_file_header_and_records(tmp_path: Path, name: str) -> None:
    text = HEADER + "\n" + GOOD + "\n   \n" + "2 10 -1 -1 -1 -1 -1 2 -1 -1 -1 -1 -1 -1 2 -1 -1 -1\n"
    trace = read_swf(_write(tmp_path, name, text))
    assert trace.header.max_procs == 8
    assert trace.header.max_nodes is None
    assert trace.header.unix_start_time == 0
    assert trace.header.queue_names() == {1: "batch", 2: "express"}
    assert trace.header.repeated["Note"] == ["first"]
    assert trace.records == (
        SwfRecord(1, 0, 5, 100, 4, 90.5, 1024.0, 4, 200, 2048.0, 1, 3, 2, 7, 1, 1, -1, -1),
        SwfRecord(2, 10, -1, -1, -1, -1.0, -1.0, 2, -1, -1.0, -1, -1, -1, -1, 2, -1, -1, -1),
    )
    assert trace.source == str(tmp_path / name)


def test_integral_value_written_as_decimal_is_accepted(tmp_path: Path) -> None:
    fields = GOOD.split()
    fields[3] = "100.0"  # run_time
    fields[4] = "4e0"  # allocated_procs
    (record,) = read_swf(_write(tmp_path, "t.swf", " ".join(fields) + "\n")).records
    assert record.run_time == 100
    assert isinstance(record.run_time, int)
    assert record.allocated_procs == 4


@pytest.mark.parametrize(
    "name, text",
    [
        ("empty.swf", ""),
        ("header_only.swf", HEADER),
        ("blank.swf", "\n\n   \n"),
        ("empty.swf.gz", ""),
    ],
    ids=[
        "empty file",
        "header and no records",
        "blank lines only",
        "empty gzip file",
    ],
)
def test_file_without_records_reads_as_zero_records(tmp_path: Path, name: str, text: str) -> None:
    trace = read_swf(_write(tmp_path, name, text))
    assert trace.records == ()


def _fields(index: int, value: str) -> str:
    """GOOD with field ``index`` (1-based) replaced by ``value``."""
    fields = GOOD.split()
    fields[index - 1] = value
    return " ".join(fields)


@pytest.mark.parametrize(
    "name, line, message",
    [
        ("t.swf", " ".join(GOOD.split()[:17]), "expected 18 fields, found 17"),
        ("t.swf", GOOD + " 0", "expected 18 fields, found 19"),
        ("t.swf", _fields(4, "abc"), "field 4 (run_time): 'abc' is not a number"),
        ("t.swf", _fields(1, "#12"), "field 1 (job_number): '#12' is not a number"),
        ("t.swf", _fields(6, "n/a"), "field 6 (avg_cpu_time): 'n/a' is not a number"),
        ("t.swf", _fields(5, "1.5"), "field 5 (allocated_procs): '1.5' is not a whole number"),
        ("t.swf", _fields(18, "0.25"), "field 18 (think_time): '0.25' is not a whole number"),
        ("t.swf.gz", _fields(2, "x"), "field 2 (submit_time): 'x' is not a number"),
    ],
    ids=[
        "a record with 17 fields",
        "a record with 19 fields",
        "a word in the run time",
        "a stray character in the job number",
        "a word in a fractional field",
        "half a processor",
        "a fractional think time",
        "a word in the submit time of a gzip trace",
    ],
)
def test_malformed_record_names_file_line_and_field(
    tmp_path: Path, name: str, line: str, message: str
) -> None:
    # Line 8: five header lines, a blank line, a good record, then the bad one.
    path = _write(tmp_path, name, HEADER + "\n" + GOOD + "\n" + line + "\n" + GOOD + "\n")
    with pytest.raises(SwfError) as error:
        read_swf(path)
    assert str(error.value) == f"{path}:8: {message}"


def test_every_field_is_named_in_errors(tmp_path: Path) -> None:
    for index, field in enumerate(SWF_FIELDS, start=1):
        path = _write(tmp_path, f"f{index}.swf", _fields(index, "?") + "\n")
        with pytest.raises(SwfError, match="^" + re.escape(f"{path}:1: field {index} ({field}): ")):
            read_swf(path)


def _not_gzip(tmp_path: Path) -> Path:
    path = tmp_path / "plain.swf.gz"
    path.write_text(HEADER + GOOD + "\n")  # named .gz, written as text
    return path


def _truncated_gzip(tmp_path: Path) -> Path:
    path = tmp_path / "cut.swf.gz"
    path.write_bytes(gzip.compress(((HEADER + GOOD + "\n") * 50).encode())[:60])
    return path


def _bad_crc(tmp_path: Path) -> Path:
    data = bytearray(gzip.compress((GOOD + "\n").encode()))
    data[-8] ^= 0xFF  # the CRC32 of the trailer
    path = tmp_path / "crc.swf.gz"
    path.write_bytes(bytes(data))
    return path


def _corrupt_deflate(tmp_path: Path) -> Path:
    # Sound gzip framing around deflate data that opens with a block of the reserved
    # type 3: zlib raises zlib.error, which is neither an OSError nor an EOFError.
    path = tmp_path / "corrupt.swf.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\x07" + bytes(8))
    return path


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp / "nosuch.swf", "no such file"),
        (lambda tmp: tmp / "nosuch.swf.gz", "no such file"),
        (lambda tmp: tmp, "is a directory, not a workload file"),
        (_not_gzip, "cannot be read (Not a gzipped file"),
        (_truncated_gzip, "cannot be read (Compressed file ended"),
        (_bad_crc, "cannot be read (CRC check failed"),
        (
            _corrupt_deflate,
            "cannot be read (Error -3 while decompressing data: invalid block type)",
        ),
    ],
    ids=[
        "missing file",
        "missing gzip file",
        "a directory",
        "a .gz name on a plain text file",
        "a gzip file cut short",
        "a gzip file with a wrong checksum",
        "a gzip file with corrupt compressed data",
    ],
)
def test_unreadable_file_is_named(
    tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    path = make(tmp_path)
    with pytest.raises(SwfError) as error:
        read_swf(path)
    assert str(error.value).startswith(f"{path}: {message}")


# --- strict numbers --------------------------------------------------------------------


@pytest.mark.parametrize(
    "index, value, message",
    [
        (4, "1_000", "field 4 (run_time): '1_000' is not a number"),
        (4, "１２", "field 4 (run_time): '１２' is not a number"),
        (5, "٤", "field 5 (allocated_procs): '٤' is not a number"),
        (2, "+5", "field 2 (submit_time): '+5' is not a number"),
        (6, "nan", "field 6 (avg_cpu_time): 'nan' is not a number"),
        (7, "inf", "field 7 (used_memory_kb): 'inf' is not a number"),
        (10, "1e999", "field 10 (requested_memory_kb): '1e999' is not a finite number"),
        (4, "1e999", "field 4 (run_time): '1e999' is too large (more than 30 digits)"),
        (4, "1e30", "field 4 (run_time): '1e30' is too large (more than 30 digits)"),
        (
            4,
            "50.0000000000000001",
            "field 4 (run_time): '50.0000000000000001' is not a whole number",
        ),
        (4, "1e-400", "field 4 (run_time): '1e-400' is not a whole number"),
        (
            4,
            "1e" + "9" * 20,
            f"field 4 (run_time): '1e{'9' * 20}' is too large (more than 30 digits)",
        ),
        (4, "1e-" + "9" * 20, f"field 4 (run_time): '1e-{'9' * 20}' is not a whole number"),
        (6, "1_0.5", "field 6 (avg_cpu_time): '1_0.5' is not a number"),
        (6, ".5", "field 6 (avg_cpu_time): '.5' is not a number"),
        (4, "9" * 31, f"field 4 (run_time): '{'9' * 31}' is too large (more than 30 digits)"),
        (4, "9" * 100, f"field 4 (run_time): '{'9' * 40}...' is too large (more than 30 digits)"),
    ],
    ids=[
        "an underscore in a whole number",
        "full-width digits",
        "an Arabic-Indic digit",
        "a leading plus",
        "nan in a fractional field",
        "inf in a fractional field",
        "an exponent that overflows a fractional field",
        "an exponent that overflows a whole-number field",
        "a whole number of 31 digits in an exponent",
        "a fraction a float would round away",
        "a fraction a float would round to zero",
        "an exponent beyond what a decimal holds",
        "a negative exponent beyond what a decimal holds",
        "an underscore in a fractional field",
        "a fraction without its integer part",
        "a whole number of 31 digits",
        "a whole number of 100 digits, cut short in the message",
    ],
)
def test_numbers_are_read_as_the_format_writes_them(
    tmp_path: Path, index: int, value: str, message: str
) -> None:
    path = _write(tmp_path, "t.swf", HEADER + _fields(index, value) + "\n")
    with pytest.raises(SwfError) as error:
        read_swf(path)
    assert str(error.value) == f"{path}:6: {message}"


@pytest.mark.parametrize(
    ("value", "run_time"),
    [
        ("12.0", 12),
        ("1e3", 1000),
        ("5.0E1", 50),
        ("-0.0", 0),
        ("0e999999", 0),
        ("0e-" + "9" * 20, 0),
        ("1e+0000000000000000000001", 10),
        ("9" * 30, 10**30 - 1),
    ],
)
def test_a_whole_number_written_as_a_decimal_is_read_exactly(
    tmp_path: Path, value: str, run_time: int
) -> None:
    path = _write(tmp_path, "t.swf", HEADER + _fields(4, value) + "\n")
    (record,) = read_swf(path).records
    assert record.run_time == run_time and type(record.run_time) is int


def test_fractional_fields_take_exponents(tmp_path: Path) -> None:
    line = _fields(6, "1.5e3").replace(" 1024 ", " -2E-1 ")
    (record,) = read_swf(_write(tmp_path, "t.swf", line + "\n")).records
    assert (record.avg_cpu_time, record.used_memory_kb) == (1500.0, -0.2)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("128", 128),
        ("-1", -1),
        ("128 processors", 128),
        ("１２８", None),
        ("1_28", None),
        ("", None),
    ],
    ids=[
        "digits",
        "a minus",
        "a trailing word",
        "full-width digits",
        "an underscore",
        "nothing",
    ],
)
def test_header_numbers_are_ascii(text: str, expected: int | None) -> None:
    assert SwfHeader({"MaxProcs": text}, {}).int_value("MaxProcs") == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("abc", "header UnixStartTime: 'abc' is not a whole number of seconds (0 or more)"),
        ("-5", "header UnixStartTime: '-5' is not a whole number of seconds (0 or more)"),
        ("", "header UnixStartTime: '' is not a whole number of seconds (0 or more)"),
        ("１", "header UnixStartTime: '１' is not a whole number of seconds (0 or more)"),
    ],
    ids=["a word", "a negative time", "no value", "a full-width digit"],
)
def test_malformed_unix_start_time_is_an_error_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(SwfError) as error:
        _ = SwfHeader({"UnixStartTime": text}, {}).unix_start_time
    assert str(error.value) == message


@pytest.mark.parametrize(
    "header, key, message",
    [
        (
            "; MaxProcs: -4\n",
            "max_procs",
            "t.swf:2: header MaxProcs: '-4' is not a whole number of processors above 0",
        ),
        (
            "; MaxProcs: abc\n",
            "max_procs",
            "t.swf:2: header MaxProcs: 'abc' is not a whole number of processors above 0",
        ),
        (
            "; MaxProcs: 0\n",
            "max_procs",
            "t.swf:2: header MaxProcs: '0' is not a whole number of processors above 0",
        ),
        (
            "; MaxNodes: 1.5\n",
            "max_nodes",
            "t.swf:2: header MaxNodes: '1.5' is not a whole number of nodes above 0",
        ),
        (
            "; MaxProcs: 8\n; Note: x\n; MaxProcs: 16\n",
            "max_procs",
            "t.swf:2: header MaxProcs: given again with another value ('8', then '16')",
        ),
        (
            "; UnixStartTime: 1.5e-3\n",
            "unix_start_time",
            "t.swf:2: header UnixStartTime: '1.5e-3' is not a whole number of seconds (0 or more)",
        ),
    ],
    ids=[
        "a negative MaxProcs",
        "a MaxProcs that is a word",
        "a machine of no processors",
        "a fractional MaxNodes",
        "MaxProcs given twice with different values",
        "a UnixStartTime in exponent form that is not whole",
    ],
)
def test_a_header_value_that_is_there_but_invalid_names_file_line_and_key(
    tmp_path: Path, header: str, key: str, message: str
) -> None:
    trace = read_swf(_write(tmp_path, "t.swf", "; Version: 2.2\n" + header + GOOD + "\n"))
    with pytest.raises(SwfError) as error:
        getattr(trace.header, key)
    assert str(error.value) == f"{tmp_path}/{message}"


@pytest.mark.parametrize(
    "header, expected",
    [
        ("; MaxProcs: -1\n; MaxNodes: -1\n; UnixStartTime: -1\n", (None, None, 0)),
        ("; MaxProcs: 128\n; MaxProcs: 128 processors\n", (128, None, 0)),
        ("; MaxProcs:  64  \n; MaxNodes: 16\n", (64, 16, 0)),
        ("; MaxProcs: 64.0\n; MaxNodes: -1.0\n; UnixStartTime: 1.5e9\n", (64, None, 1500000000)),
        ("; MaxProcs: 8\n; MaxProcs: 8.0\n", (8, None, 0)),
    ],
    ids=[
        "-1 is unknown, as if absent",
        "a key given twice with the same value",
        "blanks around a value",
        "whole numbers written as decimals, as records may write them",
        "a key given again with the same number written another way",
    ],
)
def test_header_values_that_are_read(
    tmp_path: Path, header: str, expected: tuple[int | None, int | None, int]
) -> None:
    trace = read_swf(_write(tmp_path, "t.swf", header + GOOD + "\n"))
    got = (trace.header.max_procs, trace.header.max_nodes, trace.header.unix_start_time)
    assert got == expected


def test_a_file_name_that_is_not_utf8_is_read_and_shown_with_a_replacement(
    tmp_path: Path,
) -> None:
    path = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"tr\xffce.swf"))
    Path(path).write_text("; MaxProcs: -4\n" + GOOD + "\n")
    trace = read_swf(path)
    assert trace.source == f"{tmp_path}/tr\ufffdce.swf"
    assert len(trace.records) == 1
    with pytest.raises(SwfError) as error:
        _ = trace.header.max_procs
    assert str(error.value).startswith(f"{tmp_path}/tr\ufffdce.swf:1: header MaxProcs: ")
    str(error.value).encode("utf-8")  # printable: no lone surrogate left


@pytest.mark.parametrize(
    "text, expected",
    [
        ("plain.swf", "plain.swf"),
        ("café.swf", "café.swf"),
        (os.fsdecode(b"tr\xffce\xfe.swf"), "tr\ufffdce\ufffd.swf"),
        ("odd\ud800", "odd\ufffd\ufffd\ufffd"),
    ],
    ids=["ASCII", "valid UTF-8", "undecodable bytes", "a lone surrogate no file name has"],
)
def test_printable(text: str, expected: str) -> None:
    assert printable(text) == expected


# --- line numbers ------------------------------------------------------------------------


def test_records_know_their_line_numbers(tmp_path: Path) -> None:
    text = HEADER + "\n" + GOOD + "\n\n" + GOOD.replace("1 ", "2 ", 1) + "\n"
    trace = read_swf(_write(tmp_path, "t.swf", text))
    assert [(r.job_number, r.line) for r in trace.records] == [(1, 7), (2, 9)]
    assert len(SWF_FIELDS) == 18
    # The line is where a record was read, not a field: it takes no part in equality.
    assert trace.records[0] == parse_record(GOOD, where="elsewhere")


@pytest.mark.parametrize(
    "where, line, expected",
    [
        ("t.swf:12", None, 12),
        ("/tmp/a:b/t.swf:3", None, 3),
        ("generated", None, 0),
        ("t.swf:12", 40, 40),
    ],
    ids=[
        "from the number after the colon",
        "from the last colon of a path holding one",
        "0 when where holds no line",
        "the keyword wins",
    ],
)
def test_parse_record_line(where: str, line: int | None, expected: int) -> None:
    assert parse_record(GOOD, where=where, line=line).line == expected


# --- tests that need one shared trace ----------------------------------------------------


@pytest.mark.parametrize(
    "others",
    [[], ["SDSC-SP2-1998-4.2-cln.swf.gz"]],
    ids=["an empty folder", "a folder holding other traces"],
)
def test_a_trace_absent_from_the_folder_skips_the_test_naming_it(
    tmp_path: Path, others: list[str]
) -> None:
    for name in others:
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(pytest.skip.Exception) as skipped:
        shared_trace("KTH-SP2-1996-2.1-cln.swf.gz", tmp_path)
    assert skipped.value.msg == (
        "KTH-SP2-1996-2.1-cln.swf.gz is absent from ../shared/workloads "
        "(traces are not shipped with the repo)"
    )


def test_the_trace_fixtures_skip_per_file(
    trace_path: Callable[[str], Path], load_trace: TraceLoader
) -> None:
    for get in (trace_path, load_trace):
        with pytest.raises(pytest.skip.Exception) as skipped:
            get("nosuch.swf")
        assert skipped.value.msg == (
            "nosuch.swf is absent from ../shared/workloads (traces are not shipped with the repo)"
        )


# --- the one-call path for plain records ----------------------------------------------

#: A field as the archive's logs mostly write it, and the rarer forms the field-by-field
#: path takes or refuses (leading zeros, long digit runs, "12.0" in an integral field,
#: exponents, a leading "+", words).
_PLAIN_FIELD = st.one_of(
    st.sampled_from(["-1", "0", "1"]),
    st.integers(-1, 10**9).map(str),
    st.builds(lambda a, b: f"{a}.{b}", st.integers(-5, 10**6), st.integers(0, 99)),
)
_RARE_FIELD = st.one_of(
    st.integers(10**29, 10**31).map(str),
    st.sampled_from(["007", "-0", "12.0", "1e3", "+4", "abc", "1.5e400", "-", "-12"]),
)


@st.composite
def _record_text(draw: st.DrawFn) -> str:
    """18 fields (sometimes 17 or 19), each plain, a few of them rare."""
    count = draw(st.sampled_from([18] * 8 + [17, 19]))
    fields = [draw(_PLAIN_FIELD) for _ in range(count)]
    for _ in range(draw(st.integers(0, 2))):
        fields[draw(st.integers(0, count - 1))] = draw(_RARE_FIELD)
    return draw(st.sampled_from([" ", "  ", "\t"])).join(fields)


@settings(max_examples=500, deadline=None)
@given(_record_text())
def test_plain_records_parse_as_field_by_field(text: str) -> None:
    """A line read in one call gives what the field-by-field path gives it (a leading
    space sends a line down that path): the same values of the same types, and the
    same errors."""

    def outcome(line: str) -> str:
        try:
            return repr(parse_record(line, where="t.swf:3"))
        except SwfError as exc:
            return str(exc)

    assert outcome(text) == outcome(" " + text)
