"""Tests of the figures (``experiments.plots``) and of ``xce-sched plot`` /
``simulate --plot``: files written and readable, byte for byte the same on a second
run (in another process, in two threads at once), the values drawn equal to
``metrics``', the per-job CSV drawn as the run itself, and every bad input one line,
exit 2.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import matplotlib.image
import pytest
from xce_driver.cli import build_parser, main, simulation_of
from xce_driver.cluster.jobs import JobRecord
from xce_driver.experiments import plots, result_files
from xce_driver.metrics import breakdown, size_class, time_series

from tests.driver.test_cli import run_cli

#: A small generated workload: quick, and busy enough to queue.
SMALL = ["--jobs", "300", "--hosts", "32"]
FIGURES = ["utilization", "wait_cdf", "slowdown_by_size", "gantt"]
#: Pixels of a figure's PNG (rows, columns) but the Gantt chart's.
SIZE = (int(plots.FIGSIZE[1] * plots.DPI), int(plots.FIGSIZE[0] * plots.DPI))


def gantt_rows(panels: int) -> int:
    return int((plots.GANTT_EXTRA_IN + plots.GANTT_PANEL_IN * panels) * plots.DPI)


@pytest.fixture(scope="module")
def run() -> tuple[list[JobRecord], int]:
    """The job records of the small workload under FCFS, and the cluster's slots."""
    args = build_parser().parse_args(["simulate", *SMALL, "--quiet"])
    result, _ = simulation_of(args)
    return list(result.records.values()), result.report.slots


@pytest.fixture(scope="module")
def sjf_run() -> list[JobRecord]:
    args = build_parser().parse_args(["simulate", *SMALL, "--policy", "sjf", "--quiet"])
    return list(simulation_of(args)[0].records.values())


def read_all(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_run_figures_writes_png_and_svg_of_each_figure(run, sjf_run, tmp_path):
    records, slots = run
    out = tmp_path / "made" / "here"
    paths = plots.run_figures({"fcfs": records, "sjf": sjf_run}, slots, out)
    assert [p.name for p in paths] == [f"{n}.{ext}" for n in FIGURES for ext in ("png", "svg")]
    for path in paths:
        assert path.parent == out and path.stat().st_size > 5000
    for path in paths[::2]:
        image = matplotlib.image.imread(path)
        rows = gantt_rows(2) if path.stem == "gantt" else SIZE[0]
        assert image.shape == (rows, SIZE[1], 4), path.name
        assert image[..., :3].std() > 0.01, f"{path.name} is blank"
    for path in paths[1::2]:
        text = path.read_text(encoding="utf-8")
        assert text.startswith("<?xml") and "<svg" in text and text.rstrip().endswith("</svg>")


def test_figures_are_byte_identical_on_a_second_run(run, tmp_path):
    records, slots = run
    plots.run_figures({"fcfs": records}, slots, tmp_path / "a")
    plots.run_figures({"fcfs": records}, slots, tmp_path / "b")
    assert read_all(tmp_path / "a") == read_all(tmp_path / "b")
    png = (tmp_path / "a" / "wait_cdf.png").read_bytes()
    svg = (tmp_path / "a" / "wait_cdf.svg").read_text(encoding="utf-8")
    assert b"Software" not in png and b"atplotlib" not in png  # no version inside
    assert "<dc:date>" not in svg


def test_figures_are_the_same_in_another_process(tmp_path):
    """The SVG ids come from a fixed salt, not a random one per process."""
    csv_path = tmp_path / "fcfs.csv"
    assert main(["simulate", *SMALL, "--quiet", "--jobs-out", str(csv_path)]) == 0
    draw = (
        "import sys; from pathlib import Path; from xce_driver.experiments import plots, result_files; "
        "plots.run_figures({'fcfs': result_files.read_jobs_csv(Path(sys.argv[1]))}, 32, Path(sys.argv[2]))"
    )
    for name in ("a", "b"):
        subprocess.run([sys.executable, "-c", draw, csv_path, tmp_path / name], check=True)
    assert read_all(tmp_path / "a") == read_all(tmp_path / "b")


def test_two_threads_draw_what_one_draws(run, sjf_run, tmp_path):
    records, slots = run
    serial = tmp_path / "serial"
    plots.run_figures({"fcfs": records}, slots, serial)
    folders = [tmp_path / "t0", tmp_path / "t1"]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda out: plots.run_figures({"fcfs": records}, slots, out), folders))
    for folder in folders:
        assert read_all(folder) == read_all(serial)


def test_utilization_figure_draws_the_time_series(run, sjf_run):
    records, slots = run
    figure = plots.utilization_figure({"fcfs": records, "sjf": sjf_run}, slots, interval_s=600)
    top, bottom = figure.axes
    for line, label, recs in zip(top.lines, ("fcfs", "sjf"), (records, sjf_run), strict=True):
        series = time_series(recs, slots, 600)
        divisor, _ = plots._time_unit(max(series.t_s) - min(series.t_s))
        assert line.get_label() == label
        assert list(line.get_ydata()) == series.utilization
        assert list(line.get_xdata()) == [t / divisor for t in series.t_s]
    assert list(bottom.lines[0].get_ydata()) == time_series(records, slots, 600).pending


def test_several_runs_share_one_sample_step_by_default(run, sjf_run):
    records, slots = run
    figure = plots.utilization_figure({"fcfs": records, "sjf": sjf_run}, slots)
    step = max(time_series(r, slots).interval_s for r in (records, sjf_run))
    assert f"sampled every {step:,} s" in figure.get_suptitle()
    assert (
        list(figure.axes[0].lines[1].get_ydata()) == time_series(sjf_run, slots, step).utilization
    )


def test_wait_cdf_starts_with_the_jobs_that_did_not_wait(run):
    records, _ = run
    line = plots.wait_cdf_figure({"fcfs": records}).axes[0].lines[0]
    waits = [r.start_s - r.submit_s for r in records if r.start_s is not None]
    xs, ys = list(line.get_xdata()), list(line.get_ydata())
    assert xs[0] == 1.0 and ys[0] == 0.0 and ys[-1] == 1.0
    assert ys[1] == pytest.approx(sum(w == 0 for w in waits) / len(waits))
    assert xs[-1] == max(waits)
    assert f"{sum(w == 0 for w in waits) / len(waits):.0%} did not wait" in line.get_label()


def test_cdf_is_thinned_to_a_bounded_number_of_points():
    xs, ys = plots._cdf_points(list(range(50_000)))
    assert len(xs) == plots.MAX_CDF_POINTS
    assert xs[0] == 1.0 and xs[-1] == 49_999 and ys[-1] == 1.0
    assert xs == sorted(xs) and ys == sorted(ys)


def test_slowdown_bars_are_the_size_classes_means(run):
    records, _ = run
    ax = plots.slowdown_by_size_figure({"fcfs": records}).axes[0]
    means = breakdown(records, lambda r: size_class(r.tasks), by_size=True)
    heights = [patch.get_height() for patch in ax.patches]
    assert heights == [g["mean_bounded_slowdown"] for g in means.values()]
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == list(means)


def job(jobid: int, start: int, end: int | None, *hosts: str, **more: object) -> JobRecord:
    """A job submitted when it starts, at ``start`` (s), on one slot per host named."""
    return JobRecord(jobid, start, 0, len(hosts), start, end, hosts, **more)  # type: ignore[arg-type]


def rectangles(figure, panel: int = 0) -> list[tuple[float, float, float, float]]:
    """(x0, x1, y0, y1) of each rectangle of a Gantt panel."""
    (collection,) = figure.axes[panel].collections
    out = []
    for path in collection.get_paths():
        (x0, y0), (x1, _), (_, y1) = path.vertices[:3]
        out.append((x0, x1, y0, y1))
    return out


def test_gantt_lanes_split_a_host_and_leave_suspended_time_blank():
    records = [
        job(1, 0, 3600, "h1", "h1"),  # C02.T3600 on h1: two lanes
        job(2, 0, 7200, "h2"),
        job(3, 3600, 7200, "h1"),  # h1's first lane again
        job(4, 0, 7200, "h10", suspensions=[(1800, 5400)]),  # C01: suspended mid-run
    ]
    figure = plots.gantt_figure({"a": records}, 4, window=(0, 7200))
    drawn = rectangles(figure)
    minute = 60.0  # a 2-hour window is drawn in minutes
    h1 = [r for r in drawn if r[2] < 1]
    assert sorted((x0, x1, y0) for x0, x1, y0, _ in h1) == [
        (0, 3600 / minute, 0.0),
        (0, 3600 / minute, 0.5),
        (3600 / minute, 7200 / minute, 0.0),
    ]
    h10 = [(x0, x1) for x0, x1, y0, _ in drawn if y0 >= 2]  # natural order: h1, h2, h10
    assert h10 == [(0, 1800 / minute), (5400 / minute, 7200 / minute)]
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["h1", "h2", "h10"]


def test_gantt_caps_hosts_and_jobs_and_says_so(monkeypatch):
    monkeypatch.setattr(plots, "MAX_GANTT_HOSTS", 2)
    monkeypatch.setattr(plots, "MAX_GANTT_JOBS", 3)
    records = [job(i, i, 100, f"h{i % 4}") for i in range(8)]
    figure = plots.gantt_figure({"a": records}, 4, window=(0, 100))
    title = figure.axes[0].get_title(loc="left")
    assert "the first 2 of 4 hosts" in title and "the first 3 of 4 jobs" in title
    assert len(rectangles(figure)) == 3


def test_busiest_window_finds_the_busy_days():
    quiet = [job(i, i * 86400, i * 86400 + 60, "h1") for i in range(10)]
    busy = [job(100 + i, 6 * 86400, 8 * 86400, f"h{i}") for i in range(4)]
    start, end = plots.busiest_window(quiet + busy, 4)
    assert end - start == plots.GANTT_WINDOW_S
    assert 6 * 86400 - 1000 <= start <= 6 * 86400 + 1000
    assert plots.busiest_window(busy, 4) == (6 * 86400, 8 * 86400)


def test_run_figures_refuses_nonsense(run, tmp_path):
    records, slots = run
    with pytest.raises(ValueError, match="no run"):
        plots.run_figures({}, slots, tmp_path)
    with pytest.raises(ValueError, match="empty"):
        plots.run_figures({"a": records}, slots, tmp_path / "x", gantt_window=(5, 5))
    assert not (tmp_path / "x").exists()


def sweep_rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for policy in ("fcfs", "sjf"):
        for load in (0.8, 1.0, 1.2):
            for seed in (1, 2):
                wait = 1000 * load * (2 if policy == "fcfs" else 1) + 10 * seed
                rows.append(
                    {
                        "key": f"{policy}{load}{seed}",
                        "trace": "generated",
                        "seed": seed,
                        "policy": policy,
                        "load_factor": load,
                        "options": "...",
                        "error": "",
                        "mean_wait_s": wait,
                        "mean_bounded_slowdown": load * 3,
                        "utilization": load / 2,
                    }
                )
    rows.append({**rows[0], "error": "boom", "mean_wait_s": None, "utilization": None})
    return rows


def test_sweep_figure_draws_the_mean_over_seeds_with_min_max_bars():
    figure = plots.sweep_figure(sweep_rows(), "mean_wait_s", "load_factor", "policy")
    ax = figure.axes[0]
    fcfs, sjf = ax.containers
    assert list(fcfs.lines[0].get_xdata()) == [0.8, 1.0, 1.2]
    assert list(fcfs.lines[0].get_ydata()) == pytest.approx([1615, 2015, 2415])
    assert list(sjf.lines[0].get_ydata()) == pytest.approx([815, 1015, 1215])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["policy=fcfs", "policy=sjf"]


def test_sweep_figures_names_and_errors(tmp_path):
    paths = plots.sweep_figures(sweep_rows(), "load_factor", tmp_path)
    assert [p.name for p in paths[::2]] == [
        f"sweep_{metric}_vs_load_factor.png" for metric in plots.SWEEP_METRICS
    ]
    with pytest.raises(ValueError, match="'nope' is not a column"):
        plots.sweep_figures(sweep_rows(), "load_factor", tmp_path / "x", metrics=["nope"])
    assert not (tmp_path / "x").exists() or not list((tmp_path / "x").iterdir())


# The command line: simulate --plot / --html, and plot.


def test_plot_of_a_jobs_csv_draws_what_simulate_plot_draws(tmp_path, capsys):
    """The CSV round trip loses nothing the figures show (no suspension here)."""
    jobs = tmp_path / "builtin_fcfs.csv"
    argv = ["simulate", *SMALL, "--quiet", "--jobs-out", str(jobs), "--plot", str(tmp_path / "s")]
    assert run_cli(argv, capsys)[0] == 0
    code, out, err = run_cli(
        ["plot", str(jobs), "--out", str(tmp_path / "p"), "--slots", "32"], capsys
    )
    assert (code, err) == (0, "")
    assert "4 figures" in out
    assert read_all(tmp_path / "p") == read_all(tmp_path / "s")


def test_plot_draws_several_csvs_together_and_an_html_page(tmp_path, capsys):
    for policy in ("builtin_fcfs", "sjf"):
        out = tmp_path / f"{policy}.csv"
        argv = ["simulate", *SMALL, "--policy", policy, "--quiet", "--jobs-out", str(out)]
        assert run_cli(argv, capsys)[0] == 0
    page = tmp_path / "out" / "index.html"  # inside --out, which does not exist yet
    argv = ["plot", str(tmp_path / "builtin_fcfs.csv"), str(tmp_path / "sjf.csv")]
    code, _, err = run_cli(
        [*argv, "--out", str(tmp_path / "out"), "--slots", "32", "--html", str(page)], capsys
    )
    assert (code, err) == (0, "")
    assert len(result_files.read_jobs_csv(tmp_path / "sjf.csv")) == 300
    text = page.read_text(encoding="utf-8")
    assert text.count("<img ") == 4 and "builtin_fcfs" in text and "sjf" in text
    assert "figures count a suspended job as running" in text


def test_read_jobs_csv_leaves_out_skipped_rows_and_keeps_suspensions_counts(tmp_path):
    path = tmp_path / "j.csv"
    path.write_text(
        "jobid,submit_s,start_s,end_s,tasks,hosts,times_suspended,suspended_s,"
        "killed_by_runlimit,rejected,status,skipped\n"
        "1,0,10,100,2,h1 h2,1,30,0,,finished,\n"
        "2,5,20,,1,h3,1,0,0,,suspended,\n"
        "3,7,,,,,,,,,skipped,unknown_run_time\n"
        "4,8,,,4,,0,0,0,larger_than_cluster,rejected,\n",
        encoding="utf-8",
    )
    first, second, rejected = result_files.read_jobs_csv(path)
    assert (first.hosts, first.ran_s, first.left_suspended) == (("h1", "h2"), 60, False)
    assert second.left_suspended and second.end_s is None
    assert rejected.rejected and rejected.rejected_reason == "larger_than_cluster"


def test_plot_of_a_sweep_table_picks_its_axis(tmp_path, capsys):
    table = tmp_path / "results.csv"
    rows = sweep_rows()
    with open(table, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)
    code, _, err = run_cli(["plot", str(table), "--out", str(tmp_path / "f")], capsys)
    assert (code, err) == (0, "")
    # policy is the first configuration column that varies (seed and trace aside)
    names = sorted(p.name for p in (tmp_path / "f").iterdir())
    assert names == sorted(
        f"sweep_{m}_vs_policy.{ext}" for m in plots.SWEEP_METRICS for ext in ("png", "svg")
    )
    from_dicts = tmp_path / "d"
    plots.sweep_figures(rows, "policy", from_dicts, line="load_factor")
    assert read_all(from_dicts) == read_all(tmp_path / "f")


def _csv(tmp: Path, text: str, name: str = "j.csv") -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


HEADER = "jobid,submit_s,start_s,end_s,tasks,hosts,rejected\n"

#: (situation, argv from tmp_path, expected error line from tmp_path)
ERRORS: list[tuple[str, Callable[[Path], list[str]], Callable[[Path], str]]] = [
    (
        "a result that does not exist",
        lambda tmp: ["plot", str(tmp / "nope.csv"), "--out", str(tmp / "o"), "--slots", "4"],
        lambda tmp: f"{tmp / 'nope.csv'}: no such file",
    ),
    (
        "a CSV missing columns names them",
        lambda tmp: [
            "plot",
            str(_csv(tmp, "jobid,submit_s\n1,2\n")),
            "--out",
            str(tmp / "o"),
            "--slots",
            "4",
        ],
        lambda tmp: (
            f"{tmp / 'j.csv'}: not a per-job CSV of simulate --jobs-out: no column "
            "start_s, end_s, tasks, hosts, rejected"
        ),
    ),
    (
        "a non-number names file, line and column",
        lambda tmp: [
            "plot",
            str(_csv(tmp, HEADER + "1,0,5,9,1,h1,\n2,0,x5,9,1,h1,\n")),
            "--out",
            str(tmp / "o"),
            "--slots",
            "4",
        ],
        lambda tmp: f"{tmp / 'j.csv'} line 3, column start_s: 'x5' is not a whole number",
    ),
    (
        "a row of the wrong length",
        lambda tmp: [
            "plot",
            str(_csv(tmp, HEADER + "1,0,5\n")),
            "--out",
            str(tmp / "o"),
            "--slots",
            "4",
        ],
        lambda tmp: f"{tmp / 'j.csv'} line 2: 3 fields where the header has 7",
    ),
    (
        "per-job CSVs without --slots",
        lambda tmp: ["plot", str(_csv(tmp, HEADER)), "--out", str(tmp / "o")],
        lambda tmp: (
            "--slots N is needed with per-job CSVs: utilization needs the cluster's "
            "slots (simulate's summary gives them: cluster ... slots)"
        ),
    ),
    (
        "--axis with per-job CSVs",
        lambda tmp: [
            "plot",
            str(_csv(tmp, HEADER)),
            "--out",
            str(tmp / "o"),
            "--slots",
            "4",
            "--axis",
            "policy",
        ],
        lambda tmp: "--axis chooses the x axis of a sweep table; per-job CSVs are drawn over time",
    ),
    (
        "a CSV and a sweep table mixed",
        lambda tmp: [
            "plot",
            str(_csv(tmp, HEADER)),
            str(_csv(tmp, "policy,mean_wait_s\na,1\n", "results.csv")),
            "--out",
            str(tmp / "o"),
        ],
        lambda tmp: (
            "give per-job CSVs (simulate --jobs-out) or one sweep table "
            "(results.parquet, results.csv), not both"
        ),
    ),
    (
        "--slots with a sweep table",
        lambda tmp: [
            "plot",
            str(_csv(tmp, "policy,mean_wait_s\na,1\n", "r.csv")),
            "--out",
            str(tmp / "o"),
            "--slots",
            "4",
        ],
        lambda tmp: "--slots sizes the cluster of per-job CSVs; a sweep table has its own",
    ),
    (
        "a sweep where nothing varies",
        lambda tmp: [
            "plot",
            str(_csv(tmp, "seed,policy,mean_wait_s\n1,a,1\n2,a,2\n", "r.csv")),
            "--out",
            str(tmp / "o"),
        ],
        lambda tmp: (
            f"{tmp / 'r.csv'}: no configuration column takes more than one value "
            "(configuration columns: policy); give --axis NAME"
        ),
    ),
    (
        "a sweep's metric that is not a number",
        lambda tmp: [
            "plot",
            str(_csv(tmp, "policy,mean_wait_s,error\na,1,\nb,slow,\nc,x,failed\n", "r.csv")),
            "--out",
            str(tmp / "o"),
        ],
        lambda tmp: f"{tmp / 'r.csv'} line 3, column mean_wait_s: 'slow' is not a number",
    ),
    (
        "a Parquet file that is not one",
        lambda tmp: ["plot", str(_csv(tmp, "hello\n", "results.parquet")), "--out", str(tmp / "o")],
        lambda tmp: f"{tmp / 'results.parquet'}: not a Parquet table",
    ),
    (
        "--out that is a file",
        lambda tmp: ["plot", str(_csv(tmp, HEADER)), "--out", str(tmp / "j.csv"), "--slots", "4"],
        lambda tmp: f"--out {tmp / 'j.csv'}: is not a folder",
    ),
    (
        "--html onto its own input",
        lambda tmp: [
            "plot",
            str(_csv(tmp, HEADER)),
            "--out",
            str(tmp / "o"),
            "--slots",
            "4",
            "--html",
            str(tmp / "j.csv"),
        ],
        lambda tmp: f"RESULT and --html name the same file {tmp / 'j.csv'}",
    ),
    (
        "simulate --plot under a missing folder",
        lambda tmp: ["simulate", *SMALL, "--quiet", "--plot", str(tmp / "no" / "figs")],
        lambda tmp: f"--plot {tmp / 'no' / 'figs'}: folder {tmp / 'no'} does not exist",
    ),
    (
        "simulate --plot onto a file",
        lambda tmp: ["simulate", *SMALL, "--quiet", "--plot", str(_csv(tmp, ""))],
        lambda tmp: f"--plot {tmp / 'j.csv'}: is not a folder",
    ),
    (
        "simulate --html onto a folder",
        lambda tmp: ["simulate", *SMALL, "--quiet", "--html", str(tmp)],
        lambda tmp: f"--html {tmp}: is a directory",
    ),
    (
        "simulate --html onto --report",
        lambda tmp: [
            "simulate",
            *SMALL,
            "--quiet",
            "--html",
            str(tmp / "r"),
            "--report",
            str(tmp / "r"),
        ],
        lambda tmp: f"--report and --html name the same file {tmp / 'r'}",
    ),
]


@pytest.mark.parametrize(("argv", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_bad_input_is_one_line_and_exit_2(argv, message, tmp_path, capsys):
    code, _, err = run_cli(argv(tmp_path), capsys)
    assert code == 2
    assert err.startswith(f"xce-sched: error: {message(tmp_path)}")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_simulate_html_alone_leaves_no_figure_behind(tmp_path, capsys):
    page = tmp_path / "run.html"
    assert run_cli(["simulate", *SMALL, "--quiet", "--html", str(page)], capsys)[0] == 0
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]
    assert page.read_text(encoding="utf-8").count('<img src="data:image/png;base64,') == 4


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (
            ["--report", "{f}/gantt.png"],
            "--report {f}/gantt.png: --plot {f} holds the figures' files",
        ),
        (
            ["--html", "{f}/wait_cdf.svg"],
            "--html {f}/wait_cdf.svg: --plot {f} holds the figures' files",
        ),
        (["--jobs-out", "{f}"], "--jobs-out {f}: is the --plot folder"),
    ],
)
def test_no_other_output_is_the_figures_folder_or_one_of_its_figures(
    tmp_path: Path, outputs: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "figures"
    argv = ["simulate", *SMALL, "--quiet", "--plot", str(folder)]
    code, _, stderr = run_cli([*argv, *(o.format(f=folder) for o in outputs)], capsys)
    assert (code, stderr) == (2, f"xce-sched: error: {message.format(f=folder)}\n")
    assert not folder.exists()


def test_the_gantt_window_is_the_one_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "figures"
    argv = ["simulate", *SMALL, "--quiet", "--plot", str(folder)]
    assert run_cli([*argv, "--gantt-window", "3600:7200"], capsys)[0] == 0
    records = result_files.read_jobs_csv(jobs_csv(tmp_path, capsys))
    figure = plots.gantt_figure({"fcfs": records}, 32, (3600, 7200))
    assert figure.axes[0].get_xlim() == pytest.approx((60.0, 120.0))  # in minutes
    assert "from 3,600 to 7,200 s" in figure.get_suptitle()
    for bad, message in [
        ("7200:3600", "argument --gantt-window: '7200:3600': FROM must be 0 or more and below TO"),
        ("1h:2h", "argument --gantt-window: '1h:2h' is not FROM:TO"),
    ]:
        code, _, stderr = run_cli([*argv, "--gantt-window", bad], capsys)
        assert code == 2 and stderr.startswith(f"xce-sched: error: {message}")
    code, _, stderr = run_cli(["simulate", *SMALL, "--gantt-window", "0:60"], capsys)
    assert (code, stderr) == (
        2,
        "xce-sched: error: --gantt-window sets the Gantt chart of --plot and --html; give one\n",
    )


def jobs_csv(folder: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = folder / "jobs.csv"
    assert run_cli(["simulate", *SMALL, "--quiet", "--jobs-out", str(path)], capsys)[0] == 0
    return path


def test_a_sweep_figure_of_runs_that_agree_to_the_last_digit(tmp_path: Path) -> None:
    # Three seeds of a trace give the same figures: the mean of three equal floats
    # can fall an ulp below them, which made a negative error bar (matplotlib refuses).
    rows = [
        {"trace": "t", "policy": policy, "seed": seed, "mean_wait_s": 2933.058, "error": ""}
        for policy in ("sjf", "wfp3")
        for seed in (1, 2, 3)
    ]
    paths = plots.sweep_figures(rows, "policy", tmp_path, metrics=("mean_wait_s",), line="trace")
    assert [path.name for path in paths] == [
        "sweep_mean_wait_s_vs_policy.png",
        "sweep_mean_wait_s_vs_policy.svg",
    ]


def test_too_many_samples_is_one_line_naming_the_option(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["simulate", *SMALL, "--quiet", "--series-out", str(tmp_path / "s.csv")]
    code, _, stderr = run_cli([*argv, "--sample-interval", "1"], capsys)
    assert code == 2
    assert stderr.startswith("xce-sched: error: --sample-interval 1 s gives ")
    assert "more than 200,000: give a longer interval" in stderr
