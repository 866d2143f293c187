"""``xce-sched``: the scheduler developer's command line.

``xce-sched replay`` replays a recording through a fresh core: from any snapshot,
paced or paused, verifying every decision, or with alternative events (what-if).

``xce-sched simulate`` schedules a whole workload in virtual time and prints what
happened: a real trace in the Standard Workload Format (``--workload``), or, by
default, a workload generated from the Lublin-Feitelson model, so it runs anywhere.

Every user mistake (missing file, malformed trace, unknown policy, nonsensical
option) ends with one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import orjson
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table
from xce_core.errors import ConfigError

from xce_driver.plugins import load_registry
from xce_driver.recording import RecordingWriter
from xce_driver.replay import (
    ReplayError,
    ReplayOptions,
    as_dict,
    format_ts,
    interactive_pause,
    moved_jobs,
    replay,
)
from xce_driver.report import Report, write_jobs_csv
from xce_driver.simulate import run_simulation
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.mapping import MappingError, QueueMap, map_trace
from xce_driver.workloads.swf import SwfError, SwfTrace, read_swf

PROG = "xce-sched"

#: Size of the embedded default workload (jobs) and of its cluster (hosts).
DEFAULT_JOBS = 2000
DEFAULT_HOSTS = 128


class UserError(Exception):
    """A mistake of the user's, reported as one line and exit status 2."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number, 0 or more")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``xce-sched`` and its subcommands."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sim = commands.add_parser(
        "simulate",
        help="schedule a workload in virtual time and summarize it",
        description="Schedule a workload in virtual time with the real scheduling core.",
    )
    sim.add_argument(
        "--workload",
        metavar="PATH",
        help="SWF trace (.swf or .swf.gz); default: a generated Lublin-Feitelson workload",
    )
    sim.add_argument(
        "--hosts", type=_positive_int, metavar="N", help="hosts (default: trace's MaxProcs)"
    )
    sim.add_argument(
        "--slots-per-host",
        type=_positive_int,
        default=1,
        metavar="K",
        help="slots per host (default 1)",
    )
    sim.add_argument(
        "--policy", default="builtin_fcfs", metavar="NAME", help="job picker (default builtin_fcfs)"
    )
    sim.add_argument(
        "--round-interval",
        type=_positive_int,
        metavar="S",
        help="a scheduling round every S seconds (default: at every change)",
    )
    sim.add_argument("--seed", type=_int, default=1, metavar="S", help="PRNG seed (default 1)")
    sim.add_argument(
        "--jobs",
        type=_positive_int,
        default=DEFAULT_JOBS,
        metavar="N",
        help=f"jobs of the generated workload (default {DEFAULT_JOBS})",
    )
    sim.add_argument(
        "--max-jobs",
        type=_positive_int,
        metavar="N",
        help="simulate only the first N trace records",
    )
    sim.add_argument(
        "--swf-memory",
        action="store_true",
        help="reserve each job's requested memory (SWF field 10) with rusage[mem]",
    )
    sim.add_argument(
        "--host-mem",
        type=_positive_int,
        default=0,
        metavar="MB",
        help="memory of each host, MB (needed with --swf-memory)",
    )
    sim.add_argument(
        "--swf-queues",
        metavar="MAP",
        help="trace queue numbers to queues: NUM=NAME[:PRIORITY],...,*=NAME[:PRIORITY]",
    )
    sim.add_argument(
        "--record", metavar="OUT.jsonl", help="write the recording (JSONL; .gz compresses)"
    )
    sim.add_argument("--report", metavar="OUT.json", help="write the report as JSON")
    sim.add_argument("--jobs-out", metavar="OUT.csv", help="write per-job results as CSV")
    sim.add_argument(
        "--record-snapshot-interval",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="with --record, a SNAPSHOT every N events (default 0: only the first)",
    )
    sim.add_argument("--quiet", action="store_true", help="print no summary table")

    rep = commands.add_parser(
        "replay",
        help="replay a recording through the core; verify, pause, what-if",
        description="Replay a recording (HEADER, SNAPSHOT, events, decisions) in virtual time.",
    )
    rep.add_argument("file", metavar="FILE", help="recording (.jsonl or .jsonl.gz)")
    rep.add_argument(
        "--sim-start-ts",
        type=_non_negative_int,
        metavar="TS",
        help="start from the latest snapshot at or before TS (ns)",
    )
    rep.add_argument(
        "--sim-speed",
        type=_non_negative_float,
        default=0.0,
        metavar="N",
        help="0 as fast as possible (default), 1 real time, N times real time",
    )
    rep.add_argument(
        "--sim-pause-at",
        type=_non_negative_int,
        metavar="TS",
        help="pause at TS (ns) with a state summary; Enter goes on (on a terminal)",
    )
    rep.add_argument(
        "--sim-verify",
        action="store_true",
        help="compare every decision with the recorded one; exit 1 on any mismatch",
    )
    rep.add_argument(
        "--sim-alt-events",
        metavar="FILE",
        help="what-if: snapshot from FILE above, events from this file",
    )
    rep.add_argument(
        "--force",
        action="store_true",
        help="replay despite a format-version or configuration-hash mismatch",
    )
    rep.add_argument("--report", metavar="OUT.json", help="write the replay summary as JSON")
    return parser


def _check_output(path: str | None, option: str) -> None:
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise UserError(f"{option} {path}: is a directory")
    if not target.parent.is_dir():
        raise UserError(f"{option} {path}: folder {target.parent} does not exist")


def _load_trace(args: argparse.Namespace) -> SwfTrace:
    if args.workload is None:
        hosts = args.hosts or DEFAULT_HOSTS
        return generate_lublin(
            n_jobs=args.jobs, nodes=hosts * args.slots_per_host, seed=max(args.seed, 0)
        )
    return read_swf(args.workload)


def _print_summary(console: Console, report: Report) -> None:
    table = Table(title=f"xce-sched simulate: {report.workload}", show_header=False)
    table.add_column("figure", style="bold")
    table.add_column("value", justify="right")
    rows = [
        ("policy", report.policy),
        ("cluster", f"{report.hosts} hosts, {report.slots} slots"),
        ("jobs", f"{report.jobs_total} total, {report.jobs_finished} finished"),
        (
            "skipped / rejected / never started",
            f"{report.jobs_skipped} / {report.jobs_rejected} / {report.jobs_never_started}",
        ),
        (
            "wait mean / median / max",
            f"{report.mean_wait_s:,.0f} / {report.median_wait_s:,.0f} / {report.max_wait_s:,} s",
        ),
        ("mean bounded slowdown (τ=10 s)", f"{report.mean_bounded_slowdown:,.2f}"),
        ("utilization", f"{report.utilization:.1%}"),
        ("makespan", f"{report.makespan_s:,} s ({report.makespan_s / 86400:,.1f} days)"),
        ("rounds / events", f"{report.rounds:,} / {report.events:,}"),
        ("decisions", ", ".join(f"{op} {n:,}" for op, n in report.decisions.items())),
        ("simulation wall time", f"{report.sim_wall_s:.2f} s"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)


def simulate(args: argparse.Namespace) -> int:
    """Run ``xce-sched simulate``; returns the exit status."""
    for path, option in (
        (args.record, "--record"),
        (args.report, "--report"),
        (args.jobs_out, "--jobs-out"),
    ):
        _check_output(path, option)
    registry = load_registry()
    registry.pickers.get(args.policy)
    queue_map = QueueMap.parse(args.swf_queues) if args.swf_queues else None
    trace = _load_trace(args)
    workload = map_trace(
        trace,
        hosts=args.hosts,
        slots_per_host=args.slots_per_host,
        queue_map=queue_map,
        max_jobs=args.max_jobs,
        swf_memory=args.swf_memory,
        host_mem_mb=float(args.host_mem),
    )
    stderr = Console(stderr=True)
    recording = RecordingWriter(args.record) if args.record else None
    try:
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=stderr,
            transient=True,
            disable=args.quiet or not stderr.is_terminal,
        ) as bar:
            task = bar.add_task("simulating", total=len(workload.jobs))
            result = run_simulation(
                workload,
                source=trace.source,
                policy=args.policy,
                seed=args.seed,
                round_interval_s=args.round_interval,
                registry=registry,
                recording=recording,
                snapshot_interval=args.record_snapshot_interval,
                progress=lambda done: bar.update(task, completed=done),
            )
    finally:
        if recording is not None:
            recording.close()
    report = result.report
    if args.report:
        Path(args.report).write_bytes(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2))
    if args.jobs_out:
        write_jobs_csv(result.records.values(), args.jobs_out)
    if not args.quiet:
        _print_summary(Console(), report)
    return 0


def replay_command(args: argparse.Namespace) -> int:
    """Run ``xce-sched replay``; returns the exit status (1 when verification failed)."""
    _check_output(args.report, "--report")
    options = ReplayOptions(
        start_ts=args.sim_start_ts,
        speed=args.sim_speed,
        pause_at=args.sim_pause_at,
        verify=args.sim_verify,
        alt_events=Path(args.sim_alt_events) if args.sim_alt_events else None,
        force=args.force,
    )
    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    result = replay(
        args.file,
        options,
        registry=load_registry(),
        pause=interactive_pause if interactive else None,
    )
    console = Console()
    stats = result.stats
    if result.paused_at is not None:
        console.print(f"paused at {result.pause_summary}", markup=False)
    table = Table(title=f"xce-sched replay: {args.file}", show_header=False)
    table.add_column("figure", style="bold")
    table.add_column("value", justify="right")
    rate = stats.events / result.wall_s if result.wall_s else 0.0
    rows = [
        (
            "started from",
            f"SNAPSHOT at line {result.snapshot_line}, {format_ts(result.snapshot_ts)}",
        ),
        ("events replayed", f"{stats.events:,} ({rate:,.0f} events/s)"),
        (
            "decisions",
            ", ".join(f"{op} {n:,}" for op, n in sorted(stats.decisions.items())) or "none",
        ),
        ("mean wait of jobs started", f"{stats.mean_wait_s():,.1f} s"),
        ("wall time", f"{result.wall_s:.2f} s"),
    ]
    if args.sim_verify:
        rows.append(("verification", f"{result.mismatch_count:,} mismatches"))
    if result.base is not None:
        moved = moved_jobs(result.base, stats)
        rows.append(("what-if: jobs whose start moved", f"{len(moved):,}"))
        rows.append(
            (
                "what-if: mean wait base / alternative",
                f"{result.base.mean_wait_s():,.1f} s / {stats.mean_wait_s():,.1f} s",
            )
        )
        rows.append(("what-if: events that no longer apply", f"{stats.rejected_count:,}"))
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    if result.base is not None:
        for jobid, before, after in moved_jobs(result.base, stats)[:20]:

            def show(ts: int | None) -> str:
                return "never" if ts is None else format_ts(ts)

            console.print(f"job {jobid}: start {show(before)} -> {show(after)}", markup=False)
        for text in stats.rejected[:10]:
            console.print(f"not applied: {text}", markup=False)
    for text in result.mismatches:
        console.print(f"MISMATCH {text}", markup=False)
    if result.mismatch_count > len(result.mismatches):
        console.print(f"... and {result.mismatch_count - len(result.mismatches):,} more mismatches")
    if args.report:
        Path(args.report).write_bytes(orjson.dumps(as_dict(result), option=orjson.OPT_INDENT_2))
    return 1 if result.mismatch_count else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``xce-sched``; returns (and exits with) the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return simulate(args) if args.command == "simulate" else replay_command(args)
    except ValidationError as exc:  # a value the wire contract refuses
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or exc.title
        print(f"{PROG}: error: {where}: {first['msg']} (got {first['input']!r})", file=sys.stderr)
        return 2
    except (UserError, SwfError, MappingError, ConfigError, ReplayError, ValueError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{PROG}: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
