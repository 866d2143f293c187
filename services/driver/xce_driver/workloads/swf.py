"""Reader for the Standard Workload Format (SWF) of the Parallel Workloads Archive.

An SWF file holds one job per line, 18 whitespace-separated integer fields, after a
header of ``;``-prefixed ``Key: value`` comment lines. All times are seconds; -1 means
unknown. The fields and header keys are those of the archive's definition (Chapin et
al., "Benchmarks and Standards for the Evaluation of Parallel Job Schedulers", JSSPP
1999; https://www.cs.huji.ac.il/labs/parallel/workload/swf.html).

``.swf`` and ``.swf.gz`` files are read transparently.

Numbers are read strictly, as the format writes them: an integer field is ASCII
digits with an optional leading minus (``-?[0-9]+``; an exact integer written as a
decimal, ``12.0``, is accepted too, as some archive logs write them); a fractional
field is ``-?[0-9]+(.[0-9]+)?([eE][-+]?[0-9]+)?`` and finite. Python's more lenient
spellings (``1_000``, non-ASCII digits, ``nan``, ``inf``) are errors.
"""

from __future__ import annotations

import gzip
import math
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

#: The 18 SWF fields in file order; SwfRecord's first 18 attributes carry the same names
#: (its 19th, ``line``, is where the record was read, not a field of the format).
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
    ``line`` is the record's line number in its file (from 1; 0 when it was not read
    from a file), used to name it in error messages; it is not compared.
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
    line: int = field(default=0, compare=False)


#: Fields that some archive logs write with a fractional part.
_FLOAT_FIELDS = frozenset({"avg_cpu_time", "used_memory_kb", "requested_memory_kb"})

#: An integer as the format writes it: ASCII digits, an optional leading minus.
_INTEGER = re.compile(r"-?[0-9]+")
#: A fractional number as the format writes it (ASCII; no nan, inf or underscores).
_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
#: Integers with more digits than this are refused (every ceiling is far below).
MAX_DIGITS = 30

#: A whole record whose every field is in its plainest form (an integer of at most
#: ``MAX_DIGITS`` digits; a fractional field without exponent), matched in one call:
#: almost every line of the archive's logs. Any other line takes the field-by-field
#: path, which accepts the rarer forms and names what is wrong.
_PLAIN_RECORD = re.compile(
    r"\s+".join(
        rf"(-?[0-9]{{1,{MAX_DIGITS}}}(?:\.[0-9]+)?)"
        if name in _FLOAT_FIELDS
        else rf"(-?[0-9]{{1,{MAX_DIGITS}}})"
        for name in SWF_FIELDS
    )
)
#: Whether each field (in ``SWF_FIELDS`` order) is fractional.
_FRACTIONAL = tuple(name in _FLOAT_FIELDS for name in SWF_FIELDS)


def show_text(text: str, limit: int = 40) -> str:
    """``repr(text)``, cut to ``limit`` characters (and an ellipsis) so that an error
    message about a huge value stays one short line."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def printable(text: str) -> str:
    """``text`` as valid UTF-8 for a terminal, a message or a JSON document.

    A file name that is not valid UTF-8 is a valid path on Linux; Python holds its
    undecodable bytes as lone surrogates (``surrogateescape``), which no UTF-8 output
    can carry. They are shown as U+FFFD (``tr\\xffce.swf`` → ``tr�ce.swf``); any other
    text is returned as it is.
    """
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that no file name decodes to
        data = text.encode("utf-8", "surrogatepass")
    return data.decode("utf-8", "replace")


def parse_integer(text: str) -> int | None:
    """``text`` as an integer if it is one as the format writes it (``-?[0-9]+``, at most
    ``MAX_DIGITS`` digits), else None."""
    if not _INTEGER.fullmatch(text) or len(text.lstrip("-").lstrip("0")) > MAX_DIGITS:
        return None
    return int(text)


@dataclass(frozen=True, slots=True)
class SwfHeader:
    """The ``; Key: value`` header of an SWF file.

    ``values`` maps each key to its value text (the first occurrence); repeated keys
    such as ``Queue`` and ``Note`` keep every occurrence in ``repeated``. ``lines``
    maps each key to the line of its first occurrence and ``source`` names the file,
    so that an error about a header value names the file and line (both are empty for
    a header that was not read from a file).

    As in the records, ``-1`` is the format's "unknown": a machine size or
    ``UnixStartTime`` of -1 reads as if the key were absent.
    """

    values: dict[str, str] = field(default_factory=dict)
    repeated: dict[str, list[str]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    source: str = ""

    def where(self, key: str) -> str:
        """``file:line: header Key``, naming where ``key`` is written, for messages
        (``header Key`` alone when the header was not read from a file)."""
        line = self.lines.get(key)
        if not self.source:
            return f"header {key}"
        return f"{self.source}:{line}: header {key}" if line else f"{self.source}: header {key}"

    def int_value(self, key: str) -> int | None:
        """The first word of the header value of ``key`` as an integer (``-?[0-9]+``), or
        None when absent or not written that way."""
        text = self.values.get(key, "").split()
        return parse_integer(text[0]) if text else None

    def _checked(self, key: str, minimum: int, what: str) -> int | None:
        """The first word of ``key``'s value as a whole number of ``minimum`` or more;
        None when the key is absent or its value is -1 (unknown).

        Raises:
            SwfError: the value is something else, or the key is given again with
                another value (naming the file, the line and the key).
        """
        text = self.values.get(key)
        if text is None:
            return None
        # A key repeated with another value (8 and 8.0 are one): which one the archive
        # meant is unknown.
        firsts: dict[int | str, str] = {}
        for words in map(str.split, self.repeated.get(key, [])):
            word = (words or [""])[0]
            value = _header_whole(word)
            firsts.setdefault(word if value is None else value, word)
        if len(firsts) > 1:
            shown = ", then ".join(show_text(word) for word in firsts.values())
            raise SwfError(f"{self.where(key)}: given again with another value ({shown})")
        words = text.split()
        value = _header_whole(words[0]) if words else None
        if value == -1:
            return None
        if value is None and words and words[0].isascii() and words[0].isdigit():
            raise SwfError(
                f"{self.where(key)}: {show_text(words[0])} is too large "
                f"(more than {MAX_DIGITS} digits)"
            )
        if value is None or value < minimum:
            raise SwfError(f"{self.where(key)}: {show_text(text)} is not {what}")
        return value

    @property
    def max_procs(self) -> int | None:
        """``MaxProcs`` (processors in the machine); None when absent or -1.

        Raises:
            SwfError: the key is there with another value that is not a whole number
                above 0 (``t.swf:3: header MaxProcs: '-4' is not ...``).
        """
        return self._checked("MaxProcs", 1, "a whole number of processors above 0")

    @property
    def max_nodes(self) -> int | None:
        """``MaxNodes`` (nodes in the machine); None when absent or -1.

        Raises:
            SwfError: as ``max_procs``.
        """
        return self._checked("MaxNodes", 1, "a whole number of nodes above 0")

    @property
    def unix_start_time(self) -> int:
        """``UnixStartTime``: the epoch second of the trace's time 0 (0 when absent or -1).

        Raises:
            SwfError: the key is there but its value is not a whole number of seconds,
                0 or more (``t.swf:12: header UnixStartTime: 'abc' is not ...``).
        """
        value = self._checked("UnixStartTime", 0, "a whole number of seconds (0 or more)")
        return 0 if value is None else value

    def queue_names(self) -> dict[int, str]:
        """Queue number → name from the ``; Queue: N name`` lines (empty when none)."""
        names: dict[int, str] = {}
        for text in self.repeated.get("Queue", []):
            parts = text.split()
            number = parse_integer(parts[0]) if len(parts) >= 2 else None
            if number is not None:
                names[number] = parts[1]
        return names


@dataclass(frozen=True, slots=True)
class SwfTrace:
    """A whole SWF workload: its header and its records in file order.

    ``source`` names where it came from (a path, or a generator description).
    """

    header: SwfHeader
    records: tuple[SwfRecord, ...]
    source: str


def parse_record(text: str, *, where: str, line: int | None = None) -> SwfRecord:
    """Parse one SWF data line into a record.

    Args:
        text: the line, without its newline.
        where: ``file:line`` used in error messages.
        line: the record's line number; default: the number after the last ``:`` of
            ``where``, else 0.

    Raises:
        SwfError: wrong number of fields, or a field that is not a number as the format
            writes it (see the module docstring), named by ``where``, number and name:
            ``trace.swf:12: field 4 (run_time): 'abc' is not a number``.
    """
    if line is None:
        tail = where.rpartition(":")[2]
        line = int(tail) if tail.isascii() and tail.isdigit() else 0
    plain = _PLAIN_RECORD.fullmatch(text)
    if plain is not None and plain[1][0] != "-":
        fields = [
            float(raw) if fractional else int(raw)
            for raw, fractional in zip(plain.groups(), _FRACTIONAL, strict=True)
        ]
        return SwfRecord(*fields, line=line)  # type: ignore[arg-type, misc]
    parts = text.split()
    if len(parts) != len(SWF_FIELDS):
        raise SwfError(f"{where}: expected 18 fields, found {len(parts)}")
    values: list[int | float] = []
    for index, (name, raw) in enumerate(zip(SWF_FIELDS, parts, strict=True), start=1):
        # The common case first, without a regex: a short run of ASCII digits.
        if (
            len(raw) <= MAX_DIGITS
            and raw.isascii()
            and (raw.isdigit() or (raw[0] == "-" and raw[1:].isdigit()))
            and name not in _FLOAT_FIELDS
        ):
            values.append(int(raw))
        else:
            values.append(_number(raw, name, f"{where}: field {index} ({name})"))
    if values[0] < 0:
        raise SwfError(f"{where}: field 1 (job_number): {parts[0]!r} is negative")
    return SwfRecord(*values, line=line)  # type: ignore[arg-type, misc]


def _number(raw: str, name: str, where: str) -> int | float:
    """One field's value: an int, or a float for the fractional fields."""
    if name not in _FLOAT_FIELDS and _INTEGER.fullmatch(raw):
        value = parse_integer(raw)
        if value is None:
            raise SwfError(
                f"{where}: {show_text(raw)} is too large (more than {MAX_DIGITS} digits)"
            )
        return value
    if not _DECIMAL.fullmatch(raw):
        raise SwfError(f"{where}: {show_text(raw)} is not a number")
    if name in _FLOAT_FIELDS:
        number = float(raw)
        if not math.isfinite(number):
            raise SwfError(f"{where}: {show_text(raw)} is not a finite number")
        return number
    whole = _whole(raw)
    if isinstance(whole, str):
        raise SwfError(f"{where}: {show_text(raw)} {whole}")
    return whole


def _header_whole(word: str) -> int | None:
    """The whole number a header value's first word writes: ``-?[0-9]+``, or a
    decimal as the records may write one ("8.0", "1e2"); None when it writes none,
    or one of more than ``MAX_DIGITS`` digits."""
    value = parse_integer(word)
    if value is None and _DECIMAL.fullmatch(word):
        whole = _whole(word)
        value = whole if isinstance(whole, int) else None
    return value


def _whole(raw: str) -> int | str:
    """The whole number a decimal (``_DECIMAL``) writes, exactly: some archive logs
    write integral fields and header values as "12.0" or "1e3". Else why not, as a
    phrase ("is not a whole number", "is too large (...)")."""
    exact = _exact(raw)
    if exact is None or exact != exact.to_integral_value():
        return "is not a whole number"
    if exact and exact.adjusted() >= MAX_DIGITS:
        return f"is too large (more than {MAX_DIGITS} digits)"
    return int(exact)


def _exact(raw: str) -> Decimal | None:
    """A decimal as written (``_DECIMAL``), exactly: not as a float would round it
    ("50.0000000000000001" is not whole, "1e30" has 31 digits). An exponent beyond
    what ``Decimal`` holds is decided here: a huge one is returned as 10**MAX_DIGITS
    (too large), a huge negative one as None (not whole) unless the digits are 0."""
    mantissa, _, exponent = raw.lower().partition("e")
    digits = Decimal(mantissa)
    if not exponent or not digits:
        return digits
    if len(exponent.lstrip("+-").lstrip("0")) > 9:  # |exponent| >= 10**9
        return None if exponent.startswith("-") else Decimal(10) ** MAX_DIGITS
    sign, numerals, shift = digits.as_tuple()
    return Decimal((sign, numerals, int(shift) + int(exponent)))


@contextmanager
def reading_errors(source: str, error: type[Exception]) -> Iterator[None]:
    """Turn an error reading the workload file ``source`` into ``error``, one line
    naming it: missing, a folder, not allowed, or unreadable (a ``.gz`` that is not
    gzip, a truncated one).

    Raises:
        error: instead of the ``OSError``, ``EOFError`` or ``zlib.error``.
    """
    try:
        yield
    except FileNotFoundError:
        raise error(f"{source}: no such file") from None
    except IsADirectoryError:
        raise error(f"{source}: is a directory, not a workload file") from None
    except PermissionError:
        raise error(f"{source}: permission denied") from None
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise error(f"{source}: cannot be read ({exc})") from None


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
        The header and every job record, in file order; its ``source`` (and every
        message) names the file as ``printable`` shows it.

    Raises:
        SwfError: the file is missing, unreadable, not gzip where named ``.gz``, or
            holds a malformed record (named by file, line and field).
    """
    path = Path(path)
    source = printable(str(path))
    values: dict[str, str] = {}
    repeated: dict[str, list[str]] = {}
    lines: dict[str, int] = {}
    records: list[SwfRecord] = []
    with reading_errors(source, SwfError):
        for number, line in enumerate(_lines(path), start=1):
            stripped = line.strip()
            if not stripped:
                continue
            if stripped.startswith(";"):
                key, sep, value = stripped[1:].partition(":")
                key = key.strip()
                if sep and key and " " not in key:
                    values.setdefault(key, value.strip())
                    lines.setdefault(key, number)
                    repeated.setdefault(key, []).append(value.strip())
                continue
            records.append(parse_record(stripped, where=f"{source}:{number}", line=number))
    return SwfTrace(SwfHeader(values, repeated, lines, source), tuple(records), source)
