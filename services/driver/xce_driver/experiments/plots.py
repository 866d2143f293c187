"""Figures of runs and of sweeps, as PNG and SVG files.

``run_figures`` draws one or several runs of one workload (one label each: a single
simulation, or the configurations of a comparison) on one cluster:

* ``utilization``: utilization (busy slots / cluster slots) and queue length
  (pending jobs) over time, sampled as ``metrics.time_series`` samples them, one
  line per configuration, on two stacked axes;
* ``wait_cdf``: the empirical CDF of the wait time of the jobs that started, per
  configuration, on a log x axis: a log axis has no 0, so a wait under 1 s (waits are
  whole seconds: a wait of 0) is drawn at 1 s, and the legend gives the share of
  jobs that did not wait at all;
* ``slowdown_by_size``: the mean bounded slowdown of each job-size class
  (``metrics.size_class``), grouped bars per configuration;
* ``gantt``: hosts × time over a window, each job a rectangle per slot it holds on a
  host (jobs sharing a host side by side in lanes of its row), coloured by jobid; one
  panel per configuration (the first ``MAX_GANTT_PANELS``), all over the same
  window: by default the ``GANTT_WINDOW_S`` (2 days) with the most busy slots on
  average in the first configuration (``busiest_window``), or its whole span when
  shorter. To stay fast on a 100,000-job trace at most ``MAX_GANTT_HOSTS`` hosts (the
  first in natural order) and ``MAX_GANTT_JOBS`` jobs per panel (the first to start)
  are drawn, and the panel's title says so when it leaves some out.

``sweep_figures`` draws a sweep's tidy table: each metric against one configuration
column, one line per value of another (the mean over the rest, e.g. seeds, with
min-max error bars), one panel per trace.

Every figure is written as ``<name>.png`` and ``<name>.svg``, byte for byte the same
for the same input: the PNG without the ``Software`` tag (it holds matplotlib's
version), the SVG without its date and with a fixed ``svg.hashsalt`` (else its ids
are random), both drawn from matplotlib's default style whatever the user's
``matplotlibrc``.

Why matplotlib and not Batsim's ``evalys``: evalys reads Batsim's own output files
(its ``jobs.csv`` with allocations as interval sets, or SWF, which has no placement:
no Gantt chart), pulls in pandas, and draws through pyplot's global state the
figures drawn here (Gantt chart, utilization and queue, free slots). Matplotlib is
already the dependency it would bring, and gives both formats deterministically from
our own ``JobRecord``s. Figures are built on ``matplotlib.figure.Figure`` directly,
never pyplot: nothing is left open, no GUI backend is touched.

Thread safety: matplotlib reads its ``rcParams``, which are global, while it builds
and saves a figure; the figures are therefore drawn under one lock, in a style
context (``_drawing``), so two threads drawing at once cannot mix their settings.
"""

from __future__ import annotations

import math
import re
import statistics
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePath

import matplotlib
import matplotlib.style
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from xce_driver.cluster.jobs import JobRecord
from xce_driver.metrics import SLOWDOWN_BOUND_S, breakdown, size_class, time_series, wait_s

#: Resolution of the PNG files, dots per inch.
DPI = 100
#: Size of a figure, inches (× ``DPI``: pixels of its PNG).
FIGSIZE = (10.0, 6.0)
#: Length of the Gantt chart's default window, s.
GANTT_WINDOW_S = 2 * 86400
#: At most this many hosts (the first in natural order) in a Gantt chart.
MAX_GANTT_HOSTS = 256
#: At most this many jobs (the first to start in the window) per Gantt panel.
MAX_GANTT_JOBS = 3000
#: At most this many configurations get a Gantt panel (the first ones).
MAX_GANTT_PANELS = 4
#: Height of a Gantt panel, inches (the figure has ``GANTT_EXTRA_IN`` more).
GANTT_PANEL_IN = 4.5
GANTT_EXTRA_IN = 1.0
#: At most this many points per CDF line (more are thinned, evenly by rank).
MAX_CDF_POINTS = 2000
#: Above this many rectangles a Gantt panel is drawn as an image in the SVG (a
#: vector rectangle each would make a file of megabytes).
RASTER_ABOVE = 1000
#: The metrics ``sweep_figures`` draws by default.
SWEEP_METRICS = ("mean_wait_s", "mean_bounded_slowdown", "utilization")

#: Settings over matplotlib's default style, for every figure.
_STYLE: dict[str, object] = {
    "svg.hashsalt": "xce-sched",
    "svg.fonttype": "path",
    "font.size": 9.0,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8.0,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
}
_LOCK = threading.Lock()
_DIGITS = re.compile(r"(\d+)")


@contextmanager
def _drawing() -> Iterator[None]:
    """Build and save figures here: matplotlib's default style with ``_STYLE``,
    one thread at a time (see the module docstring)."""
    with _LOCK, matplotlib.style.context(["default", _STYLE]):
        yield


def _new_figure(height_in: float = FIGSIZE[1]) -> Figure:
    return Figure(figsize=(FIGSIZE[0], height_in), dpi=DPI, layout="constrained")


def save(figure: Figure, out_dir: Path, name: str) -> list[Path]:
    """Write ``figure`` as ``out_dir/<name>.png`` and ``.svg``; their paths.

    Deterministic: no date, no software version, fixed SVG ids (see the module
    docstring). Call it inside ``_drawing`` (the public functions do).
    """
    png, svg = out_dir / f"{name}.png", out_dir / f"{name}.svg"
    figure.savefig(png, format="png", dpi=DPI, metadata={"Software": None})
    figure.savefig(svg, format="svg", metadata={"Date": None, "Creator": "xce-sched"})
    return [png, svg]


def _time_unit(span_s: float) -> tuple[float, str]:
    """How to show a time span on an axis: (seconds per unit, unit name)."""
    if span_s <= 2 * 3600:
        return 60.0, "min"
    if span_s <= 3 * 86400:
        return 3600.0, "h"
    return 86400.0, "days"


def _natural(name: str) -> tuple[object, ...]:
    """Sort key of host names: ``h2`` before ``h10``."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(name))


def _size_order(label: str) -> int:
    return int(label.split("-")[-1])


def _runs_checked(runs: Mapping[str, Sequence[JobRecord]]) -> None:
    if not runs:
        raise ValueError("no run to draw")


def utilization_figure(
    runs: Mapping[str, Sequence[JobRecord]], slots: int, interval_s: int | None = None
) -> Figure:
    """The ``utilization`` figure: utilization (top, 0 to 1 shown as %) and pending
    jobs (bottom) over time, one step line per configuration, values exactly those
    of ``metrics.time_series(records, slots, interval_s)``. Without ``interval_s``,
    several runs are sampled on one step: the largest of ``metrics``' defaults.

    Raises:
        ValueError: no runs, ``slots`` or ``interval_s`` below 1.
    """
    _runs_checked(runs)
    if interval_s is None and len(runs) > 1:
        # One sample grid for all: metrics' default step of the longest run.
        spans = [time_series(records, slots) for records in runs.values()]
        interval_s = max(ts.interval_s for ts in spans)
    series = {label: time_series(records, slots, interval_s) for label, records in runs.items()}
    times = [t for ts in series.values() for t in ts.t_s]
    divisor, unit = _time_unit(max(times) - min(times) if times else 0)
    figure = _new_figure()
    top, bottom = figure.subplots(2, 1, sharex=True)
    steps = sorted({ts.interval_s for ts in series.values()})
    figure.suptitle(
        f"Utilization and queue length ({slots:,} slots; sampled every "
        f"{', '.join(f'{step:,}' for step in steps)} s)"
    )
    for label, ts in series.items():
        x = [t / divisor for t in ts.t_s]
        top.plot(x, ts.utilization, drawstyle="steps-post", linewidth=0.8, label=label)
        bottom.plot(x, ts.pending, drawstyle="steps-post", linewidth=0.8, label=label)
    top.set_ylabel("utilization (busy slots)")
    top.set_ylim(0, 1.05)
    top.yaxis.set_major_formatter(PercentFormatter(xmax=1.0))
    top.legend(loc="upper right")
    bottom.set_ylabel("queue length (pending jobs)")
    bottom.set_ylim(bottom=0)
    bottom.set_xlabel(f"time since the trace origin ({unit})")
    return figure


def _cdf_points(waits: Sequence[int]) -> tuple[list[float], list[float]]:
    """The empirical CDF of ``waits`` as step points (x: wait, at least 1 s; y:
    share of jobs waiting at most x), thinned evenly to ``MAX_CDF_POINTS``."""
    ordered = sorted(waits)
    n = len(ordered)
    xs: list[float] = []
    ys: list[float] = []
    for i, value in enumerate(ordered):
        if i + 1 < n and ordered[i + 1] == value:
            continue  # the last job of each value gives its cumulative share
        xs.append(float(max(value, 1)))
        ys.append((i + 1) / n)
    if len(xs) > MAX_CDF_POINTS:
        keep = sorted(
            {round(k * (len(xs) - 1) / (MAX_CDF_POINTS - 1)) for k in range(MAX_CDF_POINTS)}
        )
        xs, ys = [xs[k] for k in keep], [ys[k] for k in keep]
    return xs, ys


def wait_cdf_figure(runs: Mapping[str, Sequence[JobRecord]]) -> Figure:
    """The ``wait_cdf`` figure: the share of started jobs that waited at most x,
    x on a log axis (a wait of 0 drawn at 1 s; the legend gives how many did not
    wait), one step line per configuration.

    Raises:
        ValueError: no runs.
    """
    _runs_checked(runs)
    figure = _new_figure()
    ax = figure.subplots()
    figure.suptitle("Wait time: empirical CDF of the jobs that started")
    drawn = False
    for label, records in runs.items():
        waits = [w for w in map(wait_s, records) if w is not None]
        if not waits:
            ax.plot([], [], label=f"{label}: no job started")
            continue
        xs, ys = _cdf_points(waits)
        # Start the line at 1 s, 0 %, so the first step shows the jobs that did not wait.
        ax.plot(
            [1.0, *xs],
            [0.0, *ys],
            drawstyle="steps-post",
            linewidth=1.0,
            label=f"{label}: {len(waits):,} jobs, {sum(w == 0 for w in waits) / len(waits):.0%} "
            "did not wait",
        )
        drawn = True
    ax.set_xscale("log")
    if not drawn:
        ax.set_xlim(1, 10)
    ax.set_ylim(0, 1.02)
    ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0))
    ax.set_xlabel("wait (s, log scale; a wait of 0 is drawn at 1 s)")
    ax.set_ylabel("jobs that waited at most this long")
    ax.legend(loc="lower right")
    return figure


def slowdown_by_size_figure(runs: Mapping[str, Sequence[JobRecord]]) -> Figure:
    """The ``slowdown_by_size`` figure: the mean bounded slowdown of each job-size
    class, one bar per configuration in each class (a log y axis when the bars
    span more than a factor 50); each class's label gives its job count in the
    first configuration.

    Raises:
        ValueError: no runs.
    """
    _runs_checked(runs)
    groups = {
        label: breakdown(records, lambda r: size_class(r.tasks), by_size=True)
        for label, records in runs.items()
    }
    classes = sorted({name for group in groups.values() for name in group}, key=_size_order)
    figure = _new_figure()
    ax = figure.subplots()
    figure.suptitle(f"Mean bounded slowdown (τ = {SLOWDOWN_BOUND_S} s) by job size (slots)")
    width = 0.8 / len(groups)
    values: list[float] = []
    for index, (label, group) in enumerate(groups.items()):
        xs, heights = [], []
        for position, name in enumerate(classes):
            mean = group.get(name, {}).get("mean_bounded_slowdown")
            if mean is not None:
                xs.append(position - 0.4 + width * (index + 0.5))
                heights.append(float(mean))
        values += heights
        ax.bar(xs, heights, width=width, label=label)
    first = groups[next(iter(groups))]
    ax.set_xticks(
        range(len(classes)),
        [f"{name}\n{first.get(name, {}).get('jobs', 0):,} jobs" for name in classes],
    )
    if values and min(values) > 0 and max(values) / min(values) > 50:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlabel("job size class (slots asked for)")
    ax.set_ylabel("mean bounded slowdown")
    ax.legend(loc="upper left")
    ax.grid(axis="x", visible=False)
    return figure


def busiest_window(
    records: Sequence[JobRecord], slots: int, length_s: int = GANTT_WINDOW_S
) -> tuple[int, int]:
    """The ``length_s`` window (start, end; s from the trace origin) with the most
    busy slots on average over ``metrics.time_series``'s samples, the earliest of
    equals; the run's whole span when it is shorter.

    Raises:
        ValueError: ``slots`` or ``length_s`` below 1.
    """
    if length_s < 1:
        raise ValueError(f"a window of {length_s} s")
    ts = time_series(records, slots)
    if not ts.t_s:
        return 0, length_s
    first, last = ts.t_s[0], ts.t_s[-1]
    if last - first <= length_s:
        return first, max(last, first + 1)
    count = max(1, length_s // ts.interval_s)
    total = sum(ts.busy_slots[:count])
    best, best_at = total, 0
    for i in range(1, len(ts.busy_slots) - count + 1):
        total += ts.busy_slots[i + count - 1] - ts.busy_slots[i - 1]
        if total > best:
            best, best_at = total, i
    return ts.t_s[best_at], ts.t_s[best_at] + length_s


def _running(record: JobRecord, until: int) -> list[tuple[int, int]]:
    """The times ``record`` ran, (from, to), suspensions left out; a job that never
    ended runs (or stays suspended) until ``until``."""
    assert record.start_s is not None
    out = []
    since = record.start_s
    for paused, resumed in record.suspensions:
        out.append((since, paused))
        if resumed is None:
            return out
        since = resumed
    out.append((since, until if record.end_s is None else record.end_s))
    return out


def _gantt_panel(
    ax: Axes, label: str, records: Sequence[JobRecord], window: tuple[int, int], divisor: float
) -> None:
    """Draw one configuration's Gantt chart over ``window`` on ``ax``."""
    w0, w1 = window
    hosts = sorted({host for r in records for host in r.hosts}, key=_natural)
    shown = hosts[:MAX_GANTT_HOSTS]
    row = {host: index for index, host in enumerate(shown)}
    inside = sorted(
        (
            r
            for r in records
            if r.start_s is not None
            and r.start_s < w1
            and (r.end_s is None or r.end_s > w0)
            and any(host in row for host in r.hosts)
        ),
        key=lambda r: (r.start_s, r.jobid),
    )
    jobs = inside[:MAX_GANTT_JOBS]
    # Lanes: slots of a host held at once; each slot record of a job takes the
    # lowest lane of its host free at the job's start.
    free_at: dict[str, list[float]] = {host: [] for host in shown}
    placed: list[tuple[JobRecord, str, int]] = []
    for r in jobs:
        assert r.start_s is not None
        ends = math.inf if r.end_s is None else r.end_s
        for host in r.hosts:
            if host not in row:
                continue
            lanes = free_at[host]
            lane = next((i for i, free in enumerate(lanes) if free <= r.start_s), len(lanes))
            if lane == len(lanes):
                lanes.append(ends)
            else:
                lanes[lane] = ends
            placed.append((r, host, lane))
    cmap = matplotlib.colormaps["tab20"]
    verts: list[list[tuple[float, float]]] = []
    colors = []
    for r, host, lane in placed:
        height = 1.0 / len(free_at[host])
        y0 = row[host] + lane * height
        y1 = y0 + height * 0.9
        for since, until in _running(r, w1):
            a, b = max(since, w0) / divisor, min(until, w1) / divisor
            if b > a:
                verts.append([(a, y0), (b, y0), (b, y1), (a, y1)])
                colors.append(cmap(r.jobid % 20))
    collection = PolyCollection(verts, facecolors=colors, edgecolors="none")
    collection.set_rasterized(len(verts) > RASTER_ABOVE)
    ax.add_collection(collection)
    ax.set_xlim(w0 / divisor, w1 / divisor)
    ax.set_ylim(max(len(shown), 1), 0)
    step = max(1, math.ceil(len(shown) / 32))
    ax.set_yticks([i + 0.5 for i in range(0, len(shown), step)], shown[::step])
    ax.grid(axis="y", visible=False)
    ax.set_ylabel("host")
    cut = []
    if len(shown) < len(hosts):
        cut.append(f"the first {len(shown):,} of {len(hosts):,} hosts")
    if len(jobs) < len(inside):
        cut.append(f"the first {len(jobs):,} of {len(inside):,} jobs")
    ax.set_title(
        f"{label}: {len(jobs):,} jobs on {len(shown):,} hosts"
        + (f" (drawn: {' and '.join(cut)})" if cut else ""),
        loc="left",
    )


def gantt_figure(
    runs: Mapping[str, Sequence[JobRecord]], slots: int, window: tuple[int, int] | None = None
) -> Figure:
    """The ``gantt`` figure: hosts × time over ``window`` (s from the trace origin;
    default ``busiest_window`` of the first configuration), one panel per
    configuration (the first ``MAX_GANTT_PANELS``), each job a rectangle per slot it
    holds, coloured by jobid (tab20, jobid mod 20), suspended time left blank.

    Raises:
        ValueError: no runs, ``slots`` below 1, or an empty window.
    """
    _runs_checked(runs)
    labels = list(runs)[:MAX_GANTT_PANELS]
    if window is None:
        window = busiest_window(runs[labels[0]], slots)
        how = f"the busiest {GANTT_WINDOW_S / 86400:g} days of {labels[0]}"
    else:
        how = "the window asked for"
    if window[1] <= window[0]:
        raise ValueError(f"Gantt window {window[0]} to {window[1]} s is empty")
    divisor, unit = _time_unit(window[1] - window[0])
    figure = _new_figure(GANTT_EXTRA_IN + GANTT_PANEL_IN * len(labels))
    axes = figure.subplots(len(labels), 1, sharex=True, squeeze=False)[:, 0]
    left_out = len(runs) - len(labels)
    # Two lines: one would run past the figure's edges with a long label.
    figure.suptitle(
        f"Jobs on hosts from {window[0]:,} to {window[1]:,} s, day {window[0] / 86400:,.1f} to "
        f"{window[1] / 86400:,.1f}\n({how})"
        + (f"; {left_out} more configuration(s) not drawn" if left_out else "")
    )
    for ax, label in zip(axes, labels, strict=True):
        _gantt_panel(ax, label, runs[label], window, divisor)
    axes[-1].set_xlabel(f"time since the trace origin ({unit})")
    return figure


def run_figures(
    runs: Mapping[str, Sequence[JobRecord]],
    slots: int,
    out_dir: Path,
    *,
    interval_s: int | None = None,
    gantt_window: tuple[int, int] | None = None,
) -> list[Path]:
    """Draw the figures of runs of one workload on one cluster (see the module
    docstring): ``utilization``, ``wait_cdf``, ``slowdown_by_size`` and ``gantt``,
    each as PNG and SVG in ``out_dir`` (made if missing).

    Args:
        runs: each configuration's label and job records, in legend order.
        slots: the cluster's slots (the same for every run).
        out_dir: where to write.
        interval_s: time series sample interval, s (default: ``metrics``'s).
        gantt_window: (start, end), s from the trace origin, of the Gantt chart
            (default: ``busiest_window``).

    Returns:
        The paths written, PNG then SVG of each figure, in the order above.

    Raises:
        ValueError: no runs, ``slots`` or ``interval_s`` below 1, an empty window.
    """
    _runs_checked(runs)
    if gantt_window is not None and gantt_window[1] <= gantt_window[0]:
        raise ValueError(f"Gantt window {gantt_window[0]} to {gantt_window[1]} s is empty")
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with _drawing():
        written += save(utilization_figure(runs, slots, interval_s), out_dir, "utilization")
        written += save(wait_cdf_figure(runs), out_dir, "wait_cdf")
        written += save(slowdown_by_size_figure(runs), out_dir, "slowdown_by_size")
        written += save(gantt_figure(runs, slots, gantt_window), out_dir, "gantt")
    return written


def as_number(value: object) -> float | None:
    """``value`` as a float: a number (not a bool) or a numeric string; else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def valid_rows(rows: Sequence[Mapping[str, object]]) -> list[Mapping[str, object]]:
    """The rows of runs that did not fail (no non-empty ``error``)."""
    return [row for row in rows if not row.get("error")]


def _file_part(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def sweep_figure(
    rows: Sequence[Mapping[str, object]], metric: str, axis: str, line: str = "policy"
) -> Figure:
    """``metric`` against ``axis`` over a sweep's rows (failed ones left out): one line
    per value of ``line`` (one line when ``line`` is ``axis`` or no column), each
    point the mean over the rows that share its axis value, line value and trace
    (seeds, other columns), with min-max error bars; one panel per trace when the
    rows have several. A numeric axis is drawn to scale, any other in order of
    first appearance.

    Raises:
        ValueError: ``metric`` or ``axis`` in no row, or no row with a number in
            ``metric``.
    """
    valid = valid_rows(rows)
    columns = {name for row in valid for name in row}
    for option, name in (("metric", metric), ("axis", axis)):
        if name not in columns:
            known = ", ".join(sorted(columns)) or "none"
            raise ValueError(f"{option} {name!r} is not a column of the sweep; columns: {known}")
    grouped: dict[object, dict[object, dict[object, list[float]]]] = {}
    for row in valid:
        value, x = as_number(row.get(metric)), row.get(axis)
        if value is None or x is None or x == "":
            continue
        trace = row.get("trace", "")
        by_line = "" if line == axis or line not in columns else row.get(line, "")
        grouped.setdefault(trace, {}).setdefault(by_line, {}).setdefault(x, []).append(value)
    if not grouped:
        raise ValueError(f"no run of the sweep has a number in {metric!r}")
    xs_all = list(
        dict.fromkeys(x for lines in grouped.values() for pts in lines.values() for x in pts)
    )
    numeric = all(isinstance(x, int | float) and not isinstance(x, bool) for x in xs_all)
    position = (
        {x: float(x) for x in xs_all}  # type: ignore[arg-type]
        if numeric
        else {x: float(i) for i, x in enumerate(xs_all)}
    )
    traces = list(grouped)
    ncols = min(len(traces), 3)
    nrows = math.ceil(len(traces) / ncols)
    figure = _new_figure(FIGSIZE[1] if nrows == 1 else 1.0 + 4.0 * nrows)
    axes = figure.subplots(nrows, ncols, squeeze=False).ravel()
    figure.suptitle(f"{metric} against {axis} (mean over the other columns; bars: min to max)")
    for ax, trace in zip(axes, traces, strict=False):
        lines = grouped[trace]
        for index, (by_line, points) in enumerate(lines.items()):
            order = sorted(points, key=lambda x: position[x])
            means = [statistics.fmean(points[x]) for x in order]
            # At least 0: the mean of equal values can fall an ulp outside them.
            low = [max(0.0, m - min(points[x])) for m, x in zip(means, order, strict=True)]
            high = [max(0.0, max(points[x]) - m) for m, x in zip(means, order, strict=True)]
            # Lines side by side on a categorical axis, so error bars do not hide each other.
            dodge = 0.0 if numeric else 0.03 * (index - (len(lines) - 1) / 2)
            ax.errorbar(
                [position[x] + dodge for x in order],
                means,
                yerr=[low, high],
                marker="o",
                markersize=4,
                capsize=3,
                linewidth=1.0,
                label=f"{line}={by_line}" if by_line != "" else metric,
            )
        if not numeric:
            ax.set_xticks(list(position.values()), [str(x) for x in position])
        if len(traces) > 1 or trace not in ("", None):
            ax.set_title(f"trace={PurePath(str(trace)).name}", loc="left")
        ax.set_xlabel(axis)
        ax.set_ylabel(metric)
        ax.legend()
    for ax in axes[len(traces) :]:
        ax.set_visible(False)
    return figure


def sweep_figures(
    rows: Sequence[Mapping[str, object]],
    axis: str,
    out_dir: Path,
    *,
    metrics: Sequence[str] = SWEEP_METRICS,
    line: str = "policy",
) -> list[Path]:
    """Draw each of ``metrics`` against ``axis`` over a sweep's tidy table
    (``sweep_figure``), as ``sweep_<metric>_vs_<axis>.png`` and ``.svg`` in
    ``out_dir`` (made if missing).

    Args:
        rows: the table, one mapping per run: configuration columns (``policy``,
            ``backfill``, ``load_factor``, ``seed``, ``trace``, ...) and metric
            columns; a row with a non-empty ``error`` is left out.
        axis: the column on the x axis.
        out_dir: where to write.
        metrics: the metric columns, one figure each.
        line: the column whose values get one line each.

    Returns:
        The paths written, PNG then SVG of each metric, in order.

    Raises:
        ValueError: as ``sweep_figure``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with _drawing():
        # Every figure is built before any is written: a bad metric writes nothing.
        figures = [(metric, sweep_figure(rows, metric, axis, line)) for metric in metrics]
        for metric, figure in figures:
            written += save(figure, out_dir, f"sweep_{_file_part(metric)}_vs_{_file_part(axis)}")
    return written
