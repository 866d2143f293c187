"""Reader for the Standard Workload Format (SWF) of the Parallel Workloads Archive.

An SWF file holds one job per line, 18 whitespace-separated integer fields, after a
header of ``;``-prefixed ``Key: value`` comment lines. All times are seconds; -1 means
unknown. The fields and header keys are those of the archive's definition (Chapin et
al., "Benchmarks and Standards for the Evaluation of Parallel Job Schedulers", JSSPP
1999; https://www.cs.huji.ac.il/labs/parallel/workload/swf.html).

``.swf`` and ``.swf.gz`` files are read transparently.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: The 18 SWF fields in file order; SwfRecord's attributes carry the same names.
SWF_FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_procs",
    "avg_cpu_time",
    "used_memory_kb",
    "requested_procs",
    "requested_time",
    "requested_memory_kb",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue_number",
    "partition_number",
    "preceding_job",
    "think_time",
)


class SwfError(ValueError):
    """A workload file that cannot be read, named by file, line and field.

    The message is one line meant for the user, e.g.
    ``trace.swf:12: field 4 (run_time): 'abc' is not a number``.
    """


@dataclass(frozen=True, slots=True)
class SwfRecord:
    """One SWF job record: the 18 fields of the format, -1 where unknown.

    Times are seconds (submit time from the trace's time origin); memory is KB per
    processor; ``avg_cpu_time`` may be fractional in some logs and is kept as a float.
    """

    job_number: int
    submit_time: int
    wait_time: int
    run_time: int
    allocated_procs: int
    avg_cpu_time: float
    used_memory_kb: float
    requested_procs: int
    requested_time: int
    requested_memory_kb: float
    status: int
    user_id: int
    group_id: int
    executable: int
    queue_number: int
    partition_number: int
    preceding_job: int
    think_time: int


#: Fields that some archive logs write with a fractional part.
_FLOAT_FIELDS = frozenset({"avg_cpu_time", "used_memory_kb", "requested_memory_kb"})


@dataclass(frozen=True, slots=True)
class SwfHeader:
    """The ``; Key: value`` header of an SWF file.

    ``values`` maps each key to its value text (the first occurrence); repeated keys
    such as ``Queue`` and ``Note`` keep every occurrence in ``repeated``.
    """

    values: dict[str, str] = field(default_factory=dict)
    repeated: dict[str, list[str]] = field(default_factory=dict)

    def int_value(self, key: str) -> int | None:
        """The header value of ``key`` as an integer, or None when absent or not a number."""
        text = self.values.get(key, "").split()
        try:
            return int(text[0]) if text else None
        except ValueError:
            return None

    @property
    def max_procs(self) -> int | None:
        """``MaxProcs`` (processors in the machine), or None when absent."""
        return self.int_value("MaxProcs")

    @property
    def max_nodes(self) -> int | None:
        """``MaxNodes`` (nodes in the machine), or None when absent."""
        return self.int_value("MaxNodes")

    @property
    def unix_start_time(self) -> int:
        """``UnixStartTime``: the epoch second of the trace's time 0 (0 when absent)."""
        return self.int_value("UnixStartTime") or 0

    def queue_names(self) -> dict[int, str]:
        """Queue number → name from the ``; Queue: N name`` lines (empty when none)."""
        names: dict[int, str] = {}
        for text in self.repeated.get("Queue", []):
            parts = text.split()
            if len(parts) >= 2 and parts[0].lstrip("-").isdigit():
                names[int(parts[0])] = parts[1]
        return names


@dataclass(frozen=True, slots=True)
class SwfTrace:
    """A whole SWF workload: its header and its records in file order.

    ``source`` names where it came from (a path, or a generator description).
    """

    header: SwfHeader
    records: tuple[SwfRecord, ...]
    source: str


def parse_record(text: str, *, where: str) -> SwfRecord:
    """Parse one SWF data line into a record.

    Args:
        text: the line, without its newline.
        where: ``file:line`` used in error messages.

    Raises:
        SwfError: wrong number of fields, or a field that is not a number.
    """
    parts = text.split()
    if len(parts) != len(SWF_FIELDS):
        raise SwfError(f"{where}: expected 18 fields, found {len(parts)}")
    values: list[int | float] = []
    for index, (name, raw) in enumerate(zip(SWF_FIELDS, parts, strict=True), start=1):
        try:
            if name in _FLOAT_FIELDS:
                values.append(float(raw))
            else:
                values.append(int(raw))
        except ValueError:
            # Some archive logs write integral fields as "12.0"; accept exact integers.
            try:
                number = float(raw)
            except ValueError:
                raise SwfError(
                    f"{where}: field {index} ({name}): {raw!r} is not a number"
                ) from None
            if not number.is_integer():
                raise SwfError(
                    f"{where}: field {index} ({name}): {raw!r} is not a whole number"
                ) from None
            values.append(int(number))
    if values[0] < 0:
        raise SwfError(f"{where}: field 1 (job_number): {parts[0]!r} is negative")
    return SwfRecord(*values)  # type: ignore[arg-type]


def _lines(path: Path) -> Iterator[str]:
    if path.name.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as handle:
            yield from handle
    else:
        with open(path, encoding="utf-8", errors="replace") as handle:
            yield from handle


def read_swf(path: str | Path) -> SwfTrace:
    """Read a whole ``.swf`` or ``.swf.gz`` file.

    Args:
        path: the file.

    Returns:
        The header and every job record, in file order.

    Raises:
        SwfError: the file is missing, unreadable, not gzip where named ``.gz``, or
            holds a malformed record (named by file, line and field).
    """
    path = Path(path)
    values: dict[str, str] = {}
    repeated: dict[str, list[str]] = {}
    records: list[SwfRecord] = []
    try:
        for number, line in enumerate(_lines(path), start=1):
            stripped = line.strip()
            if not stripped:
                continue
            if stripped.startswith(";"):
                key, sep, value = stripped[1:].partition(":")
                key = key.strip()
                if sep and key and " " not in key:
                    values.setdefault(key, value.strip())
                    repeated.setdefault(key, []).append(value.strip())
                continue
            records.append(parse_record(stripped, where=f"{path}:{number}"))
    except FileNotFoundError:
        raise SwfError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SwfError(f"{path}: is a directory, not a workload file") from None
    except PermissionError:
        raise SwfError(f"{path}: permission denied") from None
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise SwfError(f"{path}: cannot be read ({exc})") from None
    return SwfTrace(SwfHeader(values, repeated), tuple(records), str(path))
