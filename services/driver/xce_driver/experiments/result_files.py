"""Result files drawn again: the inputs of ``xce-sched plot``.

``plot_results`` reads per-job CSVs written by ``simulate --jobs-out`` (drawn
together with ``plots.run_figures``; a CSV says for how long a job was suspended,
not when, so its utilization and queue figures count a suspended job as running) or
one sweep table, ``results.parquet`` or ``results.csv`` of ``xce-sched sweep`` (drawn
with ``plots.sweep_figures`` against one configuration column). A file that cannot
be drawn is a ``ResultError``: one line naming the file, and its line and column.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from xce_driver.cluster.jobs import JobRecord
from xce_driver.experiments.plots import (
    SWEEP_METRICS,
    as_number,
    run_figures,
    sweep_figures,
    valid_rows,
)
from xce_driver.metrics import breakdown
from xce_driver.report import Report
from xce_driver.workloads.swf import printable


class ResultError(ValueError):
    """A result file that cannot be drawn, or options that do not fit it; one line
    naming the file (and its line and column) or the option."""


#: Columns a per-job CSV (``simulate --jobs-out``) must have to be drawn; the other
#: ``report.CSV_COLUMNS`` are read when present (older files lack some).
JOBS_CSV_NEEDS = ("jobid", "submit_s", "start_s", "end_s", "tasks", "hosts", "rejected")
#: Columns of a sweep table that are neither a configuration nor a figure.
_SWEEP_BOOKKEEPING = ("key", "trace", "trace_sha256", "seed", "options", "error", "wall_s")
_WHOLE = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _whole(path: Path, line: int, column: str, text: str, *, empty: int | None = None) -> int:
    if not text and empty is not None:
        return empty
    if not _WHOLE.fullmatch(text):
        raise ResultError(f"{path} line {line}, column {column}: {text!r} is not a whole number")
    return int(text)


def _maybe_whole(path: Path, line: int, column: str, text: str) -> int | None:
    return None if not text else _whole(path, line, column, text)


def read_jobs_csv(path: Path) -> list[JobRecord]:
    """The job records of a per-job CSV written by ``simulate --jobs-out``.

    Skipped records' rows are left out. The CSV does not hold when a job was
    suspended, only for how long (``suspended_s``): a rebuilt record has no
    ``suspensions``, so its time series count a suspended job as running (a job
    left suspended, as running to the end), while its wait and bounded slowdown
    are exact.

    Raises:
        ResultError: no header, a needed column missing (``JOBS_CSV_NEEDS``, named),
            a row of another length or a non-number in a number column (file, line
            and column named).
        OSError: the file cannot be read.
    """
    with open(path, newline="", encoding="utf-8", errors="replace") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise ResultError(f"{path}: empty, not a per-job CSV of simulate --jobs-out")
        missing = [name for name in JOBS_CSV_NEEDS if name not in header]
        if missing:
            raise ResultError(
                f"{path}: not a per-job CSV of simulate --jobs-out: no column {', '.join(missing)}"
            )
        index = {name: i for i, name in enumerate(header)}
        records = []
        for row in reader:
            line = reader.line_num
            if len(row) != len(header):
                raise ResultError(
                    f"{path} line {line}: {len(row)} fields where the header has {len(header)}"
                )

            def cell(name: str, row: list[str] = row) -> str:
                return row[index[name]].strip() if name in index else ""

            if cell("skipped"):
                continue
            status = cell("status")
            times_suspended = _whole(
                path, line, "times_suspended", cell("times_suspended"), empty=0
            )
            suspended_s = _whole(path, line, "suspended_s", cell("suspended_s"), empty=0)
            if status == "suspended":
                times_suspended = max(times_suspended, 1)
            killed = _whole(path, line, "killed_by_runlimit", cell("killed_by_runlimit"), empty=0)
            records.append(
                JobRecord(
                    jobid=_whole(path, line, "jobid", cell("jobid")),
                    submit_s=_whole(path, line, "submit_s", cell("submit_s")),
                    run_s=0,
                    tasks=_whole(path, line, "tasks", cell("tasks")),
                    start_s=_maybe_whole(path, line, "start_s", cell("start_s")),
                    end_s=_maybe_whole(path, line, "end_s", cell("end_s")),
                    hosts=tuple(cell("hosts").split()),
                    rejected=bool(cell("rejected")),
                    rejected_reason=cell("rejected"),
                    times_suspended=times_suspended,
                    times_resumed=times_suspended - (status == "suspended"),
                    suspended_s=suspended_s,
                    killed_by_runlimit=bool(killed),
                    run_limit_s=_maybe_whole(path, line, "run_limit_s", cell("run_limit_s")),
                    first_predicted_start_s=_maybe_whole(
                        path, line, "first_predicted_start_s", cell("first_predicted_start_s")
                    ),
                    user=cell("user"),
                    queue=cell("queue"),
                )
            )
    return records


def _sweep_cell(text: str) -> object:
    """A sweep CSV's cell as the parquet file holds it: empty None, numbers as int or
    float, anything else as text."""
    if not text:
        return None
    if _WHOLE.fullmatch(text):
        return int(text)
    if _DECIMAL.fullmatch(text) or text.lower() in ("inf", "-inf", "nan"):
        return float(text)
    return text


def read_sweep_table(path: Path, numbers: Sequence[str] = SWEEP_METRICS) -> list[dict[str, object]]:
    """The rows of a sweep's tidy table, ``results.parquet`` (by its suffix; read with
    pyarrow) or ``results.csv`` (cells as ``_sweep_cell`` reads them).

    Raises:
        ResultError: not a Parquet file, an empty CSV, a row of another length, or a
            non-number in a column of ``numbers`` of a run without error (file, line
            or row, and column named).
        OSError: the file cannot be read.
    """
    rows: list[dict[str, object]] = []
    where: list[str] = []
    if path.suffix.lower() == ".parquet":
        import pyarrow
        import pyarrow.parquet

        try:  # through a file object: pyarrow takes a path as UTF-8, a name need not be
            with open(path, "rb") as handle:
                table = pyarrow.parquet.read_table(handle)
        except pyarrow.ArrowException as exc:
            raise ResultError(f"{path}: not a Parquet table ({exc})") from None
        rows = table.to_pylist()
        where = [f"{path} row {i + 1}" for i in range(len(rows))]
    else:
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise ResultError(f"{path}: empty, not a sweep table")
            for row in reader:
                if len(row) != len(header):
                    raise ResultError(
                        f"{path} line {reader.line_num}: {len(row)} fields where the header "
                        f"has {len(header)}"
                    )
                rows.append(
                    {name: _sweep_cell(text) for name, text in zip(header, row, strict=True)}
                )
                where.append(f"{path} line {reader.line_num}")
    for values, place in zip(rows, where, strict=True):
        if values.get("error"):
            continue
        for name in numbers:
            value = values.get(name)
            if value is not None and as_number(value) is None and not _is_nan(value):
                raise ResultError(f"{place}, column {name}: {value!r} is not a number")
    return rows


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _figure_column(name: str) -> bool:
    """A column of a sweep table that holds a figure of the report (``mean_wait_s``,
    ``wait_percentiles_s.p90``)."""
    return name.split(".")[0] in _REPORT_FIGURES


#: Report fields that are figures of a run, not what ran (``configuration_columns``).
_REPORT_FIGURES = {field.name for field in fields(Report)} - {
    "workload",
    "policy",
    "backfill",
    "hosts",
    "slots",
    "load_factor",
}


def configuration_columns(rows: Sequence[Mapping[str, object]]) -> list[str]:
    """The columns of a sweep table that say what ran (its axes: ``policy``,
    ``backfill``, ``load_factor``, ...), in table order. In ``xce-sched sweep``'s
    table they are the columns before ``options`` (``sweep``'s module docstring),
    ``key``, ``trace``, ``trace_sha256`` and ``seed`` aside; in a table without an
    ``options`` column, every column but those, ``error``, ``wall_s`` and the
    report's figures (``mean_wait_s``, ``wait_percentiles_s.p90``, ...)."""
    columns = list(dict.fromkeys(name for row in rows for name in row))
    if "options" in columns:
        return [
            name for name in columns[: columns.index("options")] if name not in _SWEEP_BOOKKEEPING
        ]
    return [name for name in columns if name not in _SWEEP_BOOKKEEPING and not _figure_column(name)]


def _varying(rows: Sequence[Mapping[str, object]], name: str) -> bool:
    return len({repr(row.get(name)) for row in rows}) > 1


@dataclass(frozen=True, slots=True)
class PlotResults:
    """What the plot command drew (``plot_results``): the figures written (PNG and
    SVG), and the title, tables and notes of its HTML page."""

    figures: list[Path]
    title: str
    tables: list[tuple[str, list[str], list[list[object]]]]
    notes: list[str]


def _sweep_file(path: Path) -> bool:
    """A sweep table rather than a per-job CSV: a ``.parquet`` file, or a CSV
    without a ``jobid`` column."""
    if path.suffix.lower() == ".parquet":
        return True
    with open(path, newline="", encoding="utf-8", errors="replace") as handle:
        header = next(csv.reader(handle), None) or []
    return "jobid" not in header and any(name in header for name in (*SWEEP_METRICS, "error"))


def plot_results(
    paths: Sequence[Path],
    out_dir: Path,
    *,
    slots: int | None = None,
    axis: str | None = None,
    gantt_window: tuple[int, int] | None = None,
) -> PlotResults:
    """Draw result files (``xce-sched plot``): per-job CSVs of ``simulate --jobs-out``,
    together with ``run_figures`` (each labelled by its file stem, or by its path
    when two stems are the same; ``slots`` needed), or one sweep table with
    ``sweep_figures`` against ``axis`` (default: the first configuration column that
    takes more than one value; one line per value of ``policy``, or of the next
    such column when the axis is ``policy``). ``gantt_window``: the Gantt chart's
    window (s from the trace origin; per-job CSVs only).

    Raises:
        ResultError: per-job CSVs and a sweep table mixed, several sweep tables,
            ``slots`` missing for CSVs or given for a sweep, ``axis`` given for CSVs,
            no axis to draw against, or a file that cannot be read (as
            ``read_jobs_csv`` and ``read_sweep_table`` say).
        OSError: a file cannot be read.
    """
    kinds = [_sweep_file(path) for path in paths]
    if any(kinds) and not all(kinds):
        raise ResultError(
            "give per-job CSVs (simulate --jobs-out) or one sweep table (results.parquet, "
            "results.csv), not both"
        )
    if all(kinds):
        if len(paths) > 1:
            raise ResultError(f"give one sweep table, not {len(paths)}")
        if slots is not None:
            raise ResultError(
                "--slots sizes the cluster of per-job CSVs; a sweep table has its own"
            )
        if gantt_window is not None:
            raise ResultError("--gantt-window sets the Gantt chart of per-job CSVs")
        return _plot_sweep(paths[0], out_dir, axis)
    if axis is not None:
        raise ResultError(
            "--axis chooses the x axis of a sweep table; per-job CSVs are drawn over time"
        )
    if slots is None:
        raise ResultError(
            "--slots N is needed with per-job CSVs: utilization needs the cluster's slots "
            "(simulate's summary gives them: cluster ... slots)"
        )
    # A name that is not valid UTF-8 is drawn with U+FFFD, as it is shown everywhere.
    stems = [printable(path.stem) for path in paths]
    labels = stems if len(set(stems)) == len(stems) else [printable(str(p)) for p in paths]
    if len(set(labels)) < len(labels):
        raise ResultError("a per-job CSV is given twice")
    runs = {label: read_jobs_csv(path) for label, path in zip(labels, paths, strict=True)}
    figures = run_figures(runs, slots, out_dir, gantt_window=gantt_window)
    header = [
        "configuration",
        "jobs",
        "started",
        "finished",
        "mean wait (s)",
        "p90 wait (s)",
        "mean bounded slowdown",
        "utilization",
    ]
    rows: list[list[object]] = []
    for label, records in runs.items():
        figures_of = breakdown(records, lambda r: "all").get("all", {})
        ended = [r for r in records if r.ran_s is not None and r.end_s is not None]
        makespan = (
            max((r.end_s or 0) for r in ended) - min(r.submit_s for r in records) if ended else 0
        )
        work = sum((r.ran_s or 0) * r.tasks for r in ended)
        rows.append(
            [
                label,
                figures_of.get("jobs", 0),
                figures_of.get("jobs_started", 0),
                figures_of.get("jobs_finished", 0),
                figures_of.get("mean_wait_s"),
                figures_of.get("p90_wait_s"),
                figures_of.get("mean_bounded_slowdown"),
                round(work / (slots * makespan), 6) if makespan else None,
            ]
        )
    notes = [
        f"Per-job CSVs of simulate --jobs-out on a cluster of {slots:,} slots. The CSV does "
        "not say when a job was suspended, only for how long: the utilization and queue "
        "figures count a suspended job as running (waits and slowdowns are exact)."
    ]
    title = f"xce-sched plot: {', '.join(labels)}"
    return PlotResults(figures, title, [("configurations", header, rows)], notes)


def _plot_sweep(path: Path, out_dir: Path, axis: str | None) -> PlotResults:
    rows = read_sweep_table(path)
    valid = valid_rows(rows)
    configuration = configuration_columns(rows)
    varying = [name for name in configuration if _varying(valid, name)]
    if axis is None:
        if not varying:
            raise ResultError(
                f"{path}: no configuration column takes more than one value (configuration "
                f"columns: {', '.join(configuration) or 'none'}); give --axis NAME"
            )
        axis = varying[0]
    others = [name for name in varying if name != axis]
    line = "policy" if "policy" in others else (others[0] if others else axis)
    try:
        figures = sweep_figures(rows, axis, out_dir, line=line)
    except ValueError as exc:
        raise ResultError(f"{path}: {exc}") from None
    shown = [
        name
        for name in dict.fromkeys(["trace", "seed", *configuration, *SWEEP_METRICS, "error"])
        if any(name in row for row in rows)
    ]
    table = [[row.get(name) for name in shown] for row in rows]
    notes = [
        f"{len(rows):,} runs ({len(rows) - len(valid):,} failed, left out of the figures); "
        f"each point is the mean over the runs that share its {axis}, {line} and trace, "
        "its bars the minimum and maximum."
    ]
    return PlotResults(figures, f"xce-sched plot: {path.name}", [("runs", shown, table)], notes)
