"""``xce-sched``: the scheduler developer's command line.

``xce-sched replay`` replays a recording through a fresh core: from any snapshot,
paced or paused, verifying every decision, or with alternative events (what-if,
``xce_driver.whatif``), whose figures are ``simulate``'s. ``xce-sched events`` writes
the event file of a workload, for a what-if.

``xce-sched simulate`` schedules a whole workload in virtual time and prints what
happened: a real trace in the Standard Workload Format (``--workload``), a JSON-lines
workload whose jobs carry resource requirements (``--workload W.jsonl``,
``workloads.jsonl``), or, by default, a workload generated from the Lublin-Feitelson
model, so it runs anywhere; ``--load-factor`` scales its offered load.
``xce-sched emulate`` plays the same workload against the live services, and
``xce-sched explain`` says why a job of a recording was pending. ``simulate --plot``
and ``--html`` draw the run (``experiments.plots``, ``experiments.html_report``), and
``xce-sched plot`` draws result files again: per-job CSVs, or a sweep's table.

An option that would change nothing in the combination given is refused, not
ignored (``_refuse_ignored``), and a file name that is not valid UTF-8 (a valid
name on Linux) is shown with U+FFFD wherever it is printed or written.

Every user mistake (missing file, malformed trace, unknown policy, nonsensical
option, an output that cannot be written) ends with exactly one line on stderr,
``xce-sched: error: ...`` naming the option or the file, line and field, and exit
status 2; never a traceback, never a hang. Output is one record a line whatever
the terminal: piped, nothing is wrapped.

Ceilings (checked before anything is built): ``--hosts`` 1,000,000 (``MAX_HOSTS``);
``--slots-per-host`` and hosts × slots per host 2**31 - 1 (``MAX_SLOTS``);
``--round-interval`` 10**9 s; ``--jobs`` 10,000,000; ``--host-mem`` 2**40 MB;
``--seed`` 2**64 - 1; ``emulate --speed`` 10**9 (``MAX_SPEED``); ``--load-factor``
1,000 (``MAX_LOAD_FACTOR``).

``xce-sched emulate`` exits 1 when its run fails: NATS cannot be reached,
``--timeout`` passed with jobs left, or the core refused jobs of the run (one line
naming the job and the core's reason).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

import orjson
from nats.errors import Error as NatsError
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table
from xce_core.errors import ConfigError, PluginError
from xce_core.pickers.fairshare import FairShare
from xce_core.plugins import PluginRegistry
from xce_schemas import BackfillPolicy, QueueSpec
from xce_schemas.errors import describe

from xce_driver.config_files import PolicyConfigError, read_policy_config
from xce_driver.event_file import write_event_file
from xce_driver.experiments.compare import (
    CompareError,
    JobDiff,
    configurations,
    diff_json,
    figure_rows,
    job_diff,
    labels_of,
    refuse_run_outputs,
)
from xce_driver.experiments.html_report import cell_text, numeric_columns
from xce_driver.experiments.sweep import (
    SweepError,
    column_name,
    plan_runs,
    read_spec,
    rows,
    run_sweep,
    stored,
    write_tables,
)
from xce_driver.live.emulate import MAX_SPEED, RESET_STEPS, LiveEmulator, SubmissionRefused
from xce_driver.metrics import time_series
from xce_driver.plugins import load_registry
from xce_driver.recording import RecordingWriter
from xce_driver.replay import (
    ReplayError,
    ReplayOptions,
    as_dict,
    explain_job,
    format_ts,
    interactive_pause,
    replay,
)
from xce_driver.report import Report, backfill_label, write_jobs_csv, write_series_csv
from xce_driver.simulate import (
    QueueFileError,
    SimulationResult,
    check_queue_spec,
    checked_config,
    emulation_report,
    host_specs,
    read_queue_file,
    run_simulation,
)
from xce_driver.whatif import WhatIfOptions, WhatIfResult, what_if
from xce_driver.workloads.jsonl import is_jsonl, read_jsonl
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.mapping import (
    ESTIMATE_EXACT,
    ESTIMATE_REQUESTED,
    ESTIMATES,
    MAX_HOSTS,
    MAX_LOAD_FACTOR,
    MAX_MEM_MB,
    MAX_SLOTS,
    MappedWorkload,
    MappingError,
    QueueMap,
    map_trace,
)
from xce_driver.workloads.swf import SwfError, printable, read_swf, show_text

PROG = "xce-sched"
#: What ``xce-sched --help`` says it is (plain text: argparse shows it as it is); the
#: subcommands' names are added from the parser, so that none is left out.
DESCRIPTION = "xce-sched: the scheduler developer's command line"

#: Width of output that goes to a file or a pipe: wide enough that no table or line
#: is ever wrapped (one record a line, for grep), where a terminal's width rules.
PIPE_WIDTH = 100_000

#: Size of the embedded default workload (jobs) and of its cluster (hosts).
DEFAULT_JOBS = 2000
DEFAULT_HOSTS = 128
#: Ceilings of the options that are not cluster shapes (those are in the mapping).
MAX_JOBS = 10_000_000
MAX_ROUND_INTERVAL_S = 10**9
MAX_SEED = 2**64 - 1

_WHOLE = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_INFINITY = re.compile(r"[-+]?inf(?:inity)?", re.IGNORECASE)


class UserError(Exception):
    """A mistake of the user's, reported as one line and exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, ``xce-sched: error: ...``,
    and which takes options by their whole names only: an abbreviation (``--jobs-o``
    for ``--jobs-out``) is refused, never guessed (a run of a comparison or a sweep
    must be the options it names)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {printable(message)}\n")


def _whole(minimum: int, maximum: int, unit: str = "") -> Callable[[str], int]:
    """An argparse type: ASCII digits with an optional leading minus, from ``minimum``
    to ``maximum`` (``unit`` names what is counted in the ceiling's message)."""

    def parse(text: str) -> int:
        if not _WHOLE.fullmatch(text):
            raise argparse.ArgumentTypeError(f"{show_text(text)} is not a whole number")
        digits = text.lstrip("-").lstrip("0")
        too_long = len(digits) > len(str(max(abs(minimum), maximum))) + 1
        value = (-1 if text.startswith("-") else 1) * (10**30 if too_long else int(digits or 0))
        shown = text if len(text) <= 40 else text[:40] + "..."
        if value < minimum:
            if minimum == 0:
                raise argparse.ArgumentTypeError(f"{shown} must not be negative")
            raise argparse.ArgumentTypeError(f"{shown} must be at least {minimum:,}")
        if value > maximum:
            raise argparse.ArgumentTypeError(
                f"{shown} is more than the ceiling of {maximum:,}{unit}"
            )
        return value

    return parse


def _non_negative_float(text: str) -> float:
    if not _DECIMAL.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{show_text(text)} is not a number")
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{show_text(text)} must be a finite number, 0 or more")
    return value


#: What ``--load-factor`` takes, as its errors say it.
_LOAD_FACTOR_RANGE = (
    f"a number more than 0 and at most {MAX_LOAD_FACTOR:,} (the offered load's multiple: "
    "2 submits the jobs twice as close together; 1: as the workload has them)"
)


def _load_factor(text: str) -> Fraction:
    """The argparse type of ``--load-factor``: a decimal number above 0, at most
    ``MAX_LOAD_FACTOR``, as the exact fraction it writes (``1.1`` is 11/10), so the
    scaled submit times are exact (``mapping.scale_arrivals``).

    Raises:
        argparse.ArgumentTypeError: anything else (``0``, ``-1``, ``nan``, ``inf``,
            ``abc``), in one line saying what is allowed.
    """
    shown = show_text(text)
    if not _DECIMAL.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{shown} is not a number: it must be {_LOAD_FACTOR_RANGE}"
        )
    # The float first: an exponent far out of range is refused without building it.
    if not 0 < float(text) <= MAX_LOAD_FACTOR or not 0 < Fraction(text) <= MAX_LOAD_FACTOR:
        raise argparse.ArgumentTypeError(f"{shown} must be {_LOAD_FACTOR_RANGE}")
    return Fraction(text)


#: What ``emulate --speed`` takes, as its errors say it.
_SPEED_RANGE = (
    f"more than 0 and at most {MAX_SPEED:,.0f} (workload seconds per wall second; 1: real time)"
)
#: What ``emulate --timeout`` takes, as its errors say it.
_TIMEOUT_RANGE = "more than 0 wall seconds, or inf for no limit (the default)"


def _emulate_speed(text: str) -> float:
    """The argparse type of ``emulate --speed``: a decimal number above 0, at most
    ``MAX_SPEED`` (workload seconds per wall second).

    Raises:
        argparse.ArgumentTypeError: anything else, in one line saying what is allowed;
            ``inf`` too: the emulator runs jobs on wall-clock timers, so it has no
            "as fast as possible".
    """
    shown = show_text(text)
    if _INFINITY.fullmatch(text) and not text.startswith("-"):
        raise argparse.ArgumentTypeError(
            f"{shown} is not allowed: the emulator runs jobs on wall-clock timers, so "
            f"the speed must be finite, {_SPEED_RANGE}"
        )
    if not (_DECIMAL.fullmatch(text) or _INFINITY.fullmatch(text)):
        raise argparse.ArgumentTypeError(f"{shown} is not a number: it must be {_SPEED_RANGE}")
    value = float(text)
    if not 0 < value <= MAX_SPEED:
        raise argparse.ArgumentTypeError(f"{shown} must be {_SPEED_RANGE}")
    return value


def _emulate_timeout(text: str) -> float | None:
    """The argparse type of ``emulate --timeout``: wall seconds above 0; ``inf`` (or a
    number too large for a float) is no limit, None, as without the option.

    Raises:
        argparse.ArgumentTypeError: anything else, in one line saying what is allowed.
    """
    shown = show_text(text)
    if not (_DECIMAL.fullmatch(text) or _INFINITY.fullmatch(text)):
        raise argparse.ArgumentTypeError(f"{shown} is not a number: it must be {_TIMEOUT_RANGE}")
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{shown} must be {_TIMEOUT_RANGE}")
    return None if math.isinf(value) else value


#: Nanosecond timestamps (``--sim-start-ts``, ``--sim-pause-at``): the wire's 64 bits.
_timestamp_ns = _whole(0, 2**64 - 1, " ns")


def _backfill_policy(text: str) -> str:
    """The argparse type of ``--backfill``: a policy's name, built in or registered
    under the entry-point group ``xce.backfill_policies``.

    Raises:
        argparse.ArgumentTypeError: an unknown name, listing the known ones.
    """
    if text in BackfillPolicy.__members__.values():
        return BackfillPolicy(text)
    known = [policy.value for policy in BackfillPolicy]
    try:
        plugins = load_registry().backfill_policies.names()
    except ConfigError as exc:  # a broken plugin: say which, not that the name is unknown
        raise argparse.ArgumentTypeError(str(exc)) from None
    if text in plugins:
        return text
    known += [name for name in plugins if name not in known]
    raise argparse.ArgumentTypeError(
        f"{show_text(text)} is not a backfill policy; known: {', '.join(known)}"
    )


def _policy_options(args: argparse.Namespace, queues: Sequence[QueueSpec] = ()) -> dict[str, Any]:
    """``--backfill`` and ``--reservation-depth``, checked together, and the fair-share
    configuration of ``--policy-config`` (``queues``: the ``--queues`` definitions,
    one of which may name the picker that reads it).

    Raises:
        UserError: a depth without ``hybrid``, or ``hybrid`` without a depth; a
            policy-configuration file that cannot be read or used (naming it and
            the field), or that would change nothing (no picker reads it).
    """
    builtin = args.backfill in BackfillPolicy.__members__.values()
    if args.reservation_depth is not None and builtin and args.backfill != BackfillPolicy.HYBRID:
        raise UserError("--reservation-depth is for --backfill hybrid")
    if args.backfill == BackfillPolicy.HYBRID and args.reservation_depth is None:
        raise UserError("--backfill hybrid needs --reservation-depth N (1 or more)")
    compressing = (BackfillPolicy.HYBRID, BackfillPolicy.CONSERVATIVE)
    if args.compress and builtin and args.backfill not in compressing:
        raise UserError(
            "--compress is for --backfill conservative or hybrid (it would change nothing)"
        )
    fairshare = None
    if args.policy_config is not None:
        if not args.policy_config:
            raise UserError("--policy-config needs a file name")
        try:
            fairshare = read_policy_config(args.policy_config).fairshare
        except PolicyConfigError as exc:
            raise UserError(f"--policy-config {exc}") from None
        except OSError as exc:
            raise UserError(
                f"--policy-config {args.policy_config}: {exc.strerror or exc}"
            ) from None
        readers = [args.policy, *(queue.job_pick_plugin for queue in queues)]
        if fairshare is None or FairShare.name not in readers:
            raise UserError(
                f"--policy-config {args.policy_config}: it would change nothing: only "
                f"the {FairShare.name} picker (--policy, or a --queues definition's "
                "job_pick_plugin) reads it, from its 'fairshare' table"
            )
    return {
        "backfill": args.backfill,
        "reservation_depth": args.reservation_depth,
        "backfill_params": {"compress": True} if args.compress else {},
        "fairshare": fairshare,
    }


def _add_workload_options(sub: argparse.ArgumentParser) -> None:
    """The options of ``simulate`` and ``emulate`` that choose the workload, its
    cluster, its queues and the picker."""
    sub.add_argument(
        "--workload",
        metavar="PATH",
        help="SWF trace (.swf or .swf.gz), or JSON-lines workload, one job a line with "
        "its resreq (.jsonl or .jsonl.gz; docs/workloads.md); default: a generated "
        "Lublin-Feitelson workload",
    )
    sub.add_argument(
        "--hosts",
        type=_whole(1, MAX_HOSTS, " hosts"),
        metavar="N",
        help=f"hosts (default: the trace's MaxProcs, else MaxNodes; {DEFAULT_HOSTS} for the "
        f"generated workload; required for a JSON-lines workload; at most {MAX_HOSTS:,})",
    )
    sub.add_argument(
        "--slots-per-host",
        type=_whole(1, MAX_SLOTS, " slots"),
        default=1,
        metavar="K",
        help="slots per host (default 1; hosts × K at most 2**31 - 1)",
    )
    sub.add_argument(
        "--policy",
        default="builtin_fcfs",
        metavar="NAME",
        help="job order (picker): builtin_fcfs (default), sjf, largest_first, smallest_first, "
        "f1, wfp3, unicep, fairshare, or a plugin's",
    )
    sub.add_argument(
        "--backfill",
        type=_backfill_policy,
        default=BackfillPolicy.GREEDY,
        metavar="POLICY",
        help="backfill policy: " + ", ".join(p.value for p in BackfillPolicy) + ", or a "
        "plugin's (default greedy: every job that fits starts; a --queues definition's "
        "backfill overrides it)",
    )
    sub.add_argument(
        "--reservation-depth",
        type=_whole(1, 1_000_000),
        metavar="N",
        help="with --backfill hybrid: how many blocked jobs get reservations",
    )
    sub.add_argument(
        "--compress",
        action="store_true",
        help="with --backfill conservative or hybrid: Mu'alem-Feitelson compression, every "
        "reservation stands while the others are planned, so none moves later",
    )
    sub.add_argument(
        "--policy-config",
        metavar="FILE",
        help="job-priority configuration, JSON or TOML (.toml): the 'fairshare' table of "
        "the fairshare picker (shares by project and user, decay, weights; see README)",
    )
    sub.add_argument(
        "--seed",
        type=_whole(0, MAX_SEED),
        metavar="S",
        help="seed of the generated workload and of the core's PRNG, 0 or more (default 1)",
    )
    sub.add_argument(
        "--jobs",
        type=_whole(1, MAX_JOBS, " jobs"),
        metavar="N",
        help=f"jobs of the generated workload (default {DEFAULT_JOBS:,}; at most {MAX_JOBS:,})",
    )
    sub.add_argument(
        "--max-jobs",
        type=_whole(1, 2**63 - 1),
        metavar="N",
        help="simulate only the first N trace records (or generated jobs, or JSON lines' jobs)",
    )
    sub.add_argument(
        "--load-factor",
        type=_load_factor,
        metavar="F",
        help="scale the offered load F times: the submit gaps are divided by F (floor, "
        "exactly), run times and sizes unchanged; 1.2: arrivals 1/1.2 as far apart; "
        f"more than 0, at most {MAX_LOAD_FACTOR:,} (default 1: as the workload has them)",
    )
    sub.add_argument(
        "--swf-memory",
        action="store_true",
        help="reserve each job's requested memory (SWF field 10) with rusage[mem]",
    )
    sub.add_argument(
        "--host-mem",
        type=_whole(1, MAX_MEM_MB, " MB"),
        default=0,
        metavar="MB",
        help="memory of each host, MB (needed with --swf-memory, or with a JSON-lines "
        "workload whose resreqs ask for memory; at most 2**40)",
    )
    sub.add_argument(
        "--swf-estimate",
        choices=ESTIMATES,
        default=ESTIMATE_REQUESTED,
        help="each job's run limit (what backfilling trusts): requested, the trace's "
        "requested time (SWF field 9) when above 0, else its run time (default); exact, "
        "its run time",
    )
    sub.add_argument(
        "--swf-queues",
        metavar="MAP",
        help="trace queue numbers to queues: NUM=NAME[:PRIORITY],...,*=NAME[:PRIORITY] "
        "(a map starting with a minus: --swf-queues=-1=NAME)",
    )
    sub.add_argument(
        "--queues",
        metavar="FILE.json",
        help="queue definitions: a JSON list of QueueSpec objects (priority, preemption, "
        "status, run windows, limits), overriding the queue map's queues by name",
    )


class _RunOptionsParser(_Parser):
    """A parser of one run's options inside a comparison or a sweep: a usage error
    is a ``UserError`` that the caller names the run in, not an exit."""

    def error(self, message: str) -> NoReturn:
        raise UserError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        # Only --help exits a parse that has no error: a run has no help to print.
        raise UserError(message or "--help is not an option of a run")

    def print_help(self, file: Any = None) -> None:
        """Print nothing: ``exit`` says --help is not a run's option."""


def build_parser(parser_class: type[_Parser] = _Parser) -> argparse.ArgumentParser:
    """The argument parser of ``xce-sched`` and its subcommands (``parser_class``:
    how a usage error is reported)."""
    parser = parser_class(prog=PROG, description=DESCRIPTION)
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", title="commands"
    )
    sim = commands.add_parser(
        "simulate",
        help="schedule a workload in virtual time and summarize it",
        description="Schedule a workload in virtual time with the real scheduling core.",
    )
    _add_workload_options(sim)
    sim.add_argument(
        "--round-interval",
        type=_whole(1, MAX_ROUND_INTERVAL_S, " s"),
        metavar="S",
        help="a scheduling round every S seconds (default: at every change; at most 10**9)",
    )
    sim.add_argument(
        "--record", metavar="OUT.jsonl", help="write the recording (JSONL; .gz compresses)"
    )
    sim.add_argument("--report", metavar="OUT.json", help="write the report as JSON")
    sim.add_argument("--jobs-out", metavar="OUT.csv", help="write per-job results as CSV")
    sim.add_argument(
        "--series-out",
        metavar="OUT.csv",
        help="write the time series as CSV: pending and running jobs, busy slots and "
        "utilization, sampled on the virtual clock",
    )
    sim.add_argument(
        "--sample-interval",
        type=_whole(1, MAX_ROUND_INTERVAL_S, " s"),
        metavar="S",
        help="seconds between the samples of --series-out, --plot and --html (default: "
        "the run's span / 1,000)",
    )
    sim.add_argument(
        "--record-snapshot-interval",
        type=_whole(0, 2**63 - 1),
        metavar="N",
        help="with --record, a SNAPSHOT every N events (default 0: only the first)",
    )
    sim.add_argument(
        "--plot",
        metavar="DIR",
        help="draw the run's figures into DIR, made if missing (PNG and SVG: utilization, "
        "wait_cdf, slowdown_by_size, gantt)",
    )
    sim.add_argument(
        "--html",
        metavar="OUT.html",
        help="write one self-contained HTML page: the summary and the figures",
    )
    _add_gantt_window(sim)
    sim.add_argument("--quiet", action="store_true", help="print no summary table")

    emu = commands.add_parser(
        "emulate",
        help="play a workload's controller and hosts against the live services (NATS)",
        description="Play a workload's controller and hosts against the live scheduler "
        "(xce-bridge and xce-core-service on NATS), in real time scaled by --speed.",
    )
    _add_workload_options(emu)
    emu.add_argument(
        "--speed",
        type=_emulate_speed,
        default=1.0,
        metavar="N",
        help="workload seconds per wall second, more than 0 (default 1: real time; 100: a "
        f"100 s job runs 1 s; at most {MAX_SPEED:,.0f})",
    )
    emu.add_argument("--nats", default="nats://127.0.0.1:4222", metavar="URL", help="NATS URL")
    emu.add_argument(
        "--timeout",
        type=_emulate_timeout,
        metavar="S",
        help="give up (exit 1) after S wall seconds with jobs left, S more than 0 "
        "(default, or inf: never)",
    )
    emu.add_argument("--quiet", action="store_true", help="print no summary table")

    rep = commands.add_parser(
        "replay",
        help="replay a recording through the core; verify, pause, what-if",
        description="Replay a recording (HEADER, SNAPSHOT, events, decisions) in virtual time.",
    )
    rep.add_argument("file", metavar="FILE", help="recording (.jsonl or .jsonl.gz)")
    rep.add_argument(
        "--sim-start-ts",
        type=_timestamp_ns,
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
        type=_timestamp_ns,
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
        metavar="ALT",
        help="what-if: the snapshot from FILE, the events from ALT (an event file: "
        "xce-sched events writes one), run as simulate runs a workload",
    )
    rep.add_argument(
        "--sim-round-interval",
        type=_whole(1, MAX_ROUND_INTERVAL_S, " s"),
        metavar="S",
        help="with --sim-alt-events, rounds every S seconds (default: as FILE's were made)",
    )
    rep.add_argument(
        "--force",
        action="store_true",
        help="replay despite a format-version or configuration-hash mismatch, or a "
        "recording cut short (no END line)",
    )
    rep.add_argument(
        "--report",
        metavar="OUT.json",
        help="write the replay summary as JSON (a what-if: simulate's report of it, with "
        "the base run's figures under what_if)",
    )
    rep.add_argument(
        "--jobs-out",
        metavar="OUT.csv",
        help="with --sim-alt-events, the what-if's per-job CSV, as simulate writes it",
    )
    ev = commands.add_parser(
        "events",
        help="write a workload's submissions and run times as an event file (what-if ALT)",
        description="Write the event file of a workload: what a controller submits, and "
        "how long each job runs, for replay --sim-alt-events. Give the same workload "
        "options as the simulate that made the base recording.",
    )
    _add_workload_options(ev)
    ev.add_argument(
        "--out", required=True, metavar="OUT.jsonl", help="the event file (.gz compresses)"
    )
    why = commands.add_parser(
        "explain",
        help="say why a job was pending (or where it ran) at a time of a recording",
        description="Say why a job was pending, or where it ran, at a time of a recording.",
    )
    why.add_argument("jobid", type=_whole(0, 2**64 - 1), metavar="JOBID", help="the job")
    why.add_argument(
        "--recording", required=True, metavar="FILE", help="recording (.jsonl or .jsonl.gz)"
    )
    when = why.add_mutually_exclusive_group()
    when.add_argument(
        "--at", type=_timestamp_ns, metavar="TS", help="logical time, ns (default: the end)"
    )
    when.add_argument(
        "--at-s",
        type=_whole(0, 2**34),
        metavar="S",
        help="seconds after the recording's start (a simulation's trace origin, as in "
        "its per-job CSV)",
    )
    _add_experiment_commands(commands)
    _add_plot_command(commands)
    parser.description = f"{DESCRIPTION} ({', '.join(commands.choices)})."
    return parser


def _refuse_ignored(args: argparse.Namespace) -> None:
    """Refuse options that would change nothing in the combination given, rather than
    ignore them (one line naming the options).

    Raises:
        UserError: ``--host-mem`` without ``--swf-memory`` (host memory is reserved
            only by the trace's memory requests; a JSON-lines workload's resreqs are
            checked when it is read, ``read_jsonl``); ``--record-snapshot-interval``
            without ``--record``; ``--jobs`` with ``--max-jobs`` (both size the
            generated workload, and the larger would be ignored); ``emulate --seed``
            with ``--workload`` (it seeds only the generated workload: the live
            core's PRNG is the service's ``--prng-seed``).
    """
    if args.host_mem and not args.swf_memory and not _is_jsonl(args):
        raise UserError(
            "--host-mem is the memory --swf-memory reserves from; without --swf-memory no "
            "job reserves memory"
        )
    if getattr(args, "gantt_window", None) is not None and not (args.plot or args.html):
        raise UserError("--gantt-window sets the Gantt chart of --plot and --html; give one")
    drawn = ("series_out", "plot", "html")
    if getattr(args, "sample_interval", None) is not None and not any(
        getattr(args, name) for name in drawn
    ):
        raise UserError(
            "--sample-interval sets the samples of --series-out, --plot and --html; give one"
        )
    if getattr(args, "record_snapshot_interval", None) is not None and not args.record:
        raise UserError("--record-snapshot-interval sets the snapshots of --record; give --record")
    if args.jobs is not None and args.max_jobs is not None:
        raise UserError("--jobs and --max-jobs both set the generated workload's size; give one")
    if args.command == "emulate" and args.seed is not None and args.workload is not None:
        raise UserError(
            "emulate --seed seeds only the generated workload; with --workload it changes "
            "nothing (the live core's seed is xce-core-service --prng-seed)"
        )


def _check_outputs(
    outputs: Sequence[tuple[str, str | None]], inputs: Sequence[tuple[str, str | None]] = ()
) -> None:
    """Refuse, before any work, output paths that cannot be written: a directory, a
    path under a missing folder or under a file, one file named by two options (or
    by an output and an input, which it would overwrite).

    Args:
        outputs: (option, path or None) of each output.
        inputs: (option, path or None) of each input file.

    Raises:
        UserError: naming the option(s) and the path.
    """
    seen: dict[object, str] = {}
    for option, path in inputs:
        if path is not None:
            seen.setdefault(_file_key(Path(path)), option)
    for option, path in outputs:
        if path is None:
            continue
        target = Path(path)
        if target.is_dir():
            raise UserError(f"{option} {path}: is a directory")
        parent = target.parent
        if not parent.is_dir():
            ancestor = parent
            while not ancestor.exists() and ancestor != ancestor.parent:
                ancestor = ancestor.parent
            if ancestor.exists() and not ancestor.is_dir():
                raise UserError(f"{option} {path}: {ancestor} is not a folder")
            raise UserError(f"{option} {path}: folder {parent} does not exist")
        key = _file_key(target)
        if key is None:
            continue
        if key in seen:
            raise UserError(f"{seen[key]} and {option} name the same file {path}")
        seen[key] = option


def _file_key(path: Path) -> object:
    """What identifies the file ``path`` names (its device and inode when it exists,
    else its resolved path); None for an existing file that is not a regular file
    (``/dev/null``, ``/dev/stdout``), which several outputs may share."""
    try:
        info = path.stat()
    except OSError:
        return os.path.realpath(path)
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_dev, info.st_ino)


@contextmanager
def _writing(option: str, path: str) -> Iterator[None]:
    """Turn an error writing ``path`` into a ``UserError`` naming ``option`` and ``path``."""
    try:
        yield
    except OSError as exc:
        raise UserError(f"{option} {path}: {exc.strerror or exc}") from None


#: An output to write: its option, its path, and what writes it to a given path.
Output = tuple[str, str, Callable[[str], object]]


def _write_outputs(outputs: Sequence[Output]) -> None:
    """Write every output whole, or leave every file as it was: each goes to a
    temporary file beside its path, and all of them replace their paths only once
    every one is written (a full disk or a bad path loses no earlier result). An
    output that is not a regular file (``/dev/stdout``, a pipe), or one in a folder
    where no file can be made beside it, is written in place.

    Raises:
        UserError: an output could not be written, naming its option and path.
    """
    umask = os.umask(0)
    os.umask(umask)
    done: list[tuple[str, str, str]] = []  # (option, temporary path, path)
    try:
        for option, path, write in outputs:
            with _writing(option, path):
                temporary = _beside(Path(path))
                if temporary is None:
                    write(path)
                    continue
                done.append((option, temporary, path))
                write(temporary)
                os.chmod(temporary, 0o666 & ~umask)
        for option, temporary, path in done:
            with _writing(option, path):
                os.replace(temporary, path)
    finally:
        for _, temporary, _ in done:
            with suppress(OSError):
                os.unlink(temporary)


def _beside(target: Path) -> str | None:
    """A new empty file in ``target``'s folder to write it to first; None for a
    target that is not a regular file (a device, a pipe), or when no file can be
    made there (writing the path itself then says why)."""
    if target.exists() and not target.is_file():
        return None
    try:
        fd, temporary = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".part"
        )
    except OSError:
        return None
    os.close(fd)
    return temporary


def _load_workload(args: argparse.Namespace) -> tuple[MappedWorkload, str]:
    """The workload to simulate and where it came from, from the options.

    The generated workload's cluster is ``--hosts`` (default 128) hosts of
    ``--slots-per-host`` slots, and its model is generated for that many processors
    (hosts × slots); a trace's cluster is ``--hosts`` or its header's machine size;
    a JSON-lines workload's (``.jsonl``, ``.jsonl.gz``) is ``--hosts`` (``_load_jsonl``).
    ``--load-factor`` scales the submit gaps of each (``mapping.scale_arrivals``).
    """
    if _is_jsonl(args):
        return _load_jsonl(args)
    queue_map = None
    if args.swf_queues is not None:
        try:
            queue_map = QueueMap.parse(args.swf_queues)
            queue_map.queues()
        except MappingError as exc:
            raise UserError(f"--swf-queues: {exc}") from None
    hosts = args.hosts
    if args.workload is None:
        hosts = hosts or DEFAULT_HOSTS
    if hosts is not None and hosts * args.slots_per_host > MAX_SLOTS:
        raise UserError(
            f"--hosts × --slots-per-host: {hosts:,} × {args.slots_per_host:,} = "
            f"{hosts * args.slots_per_host:,} slots, more than the ceiling of {MAX_SLOTS:,}"
        )
    if args.workload is None:
        jobs = args.jobs or DEFAULT_JOBS
        if args.max_jobs is not None:
            jobs = min(jobs, args.max_jobs)
        trace = generate_lublin(n_jobs=jobs, nodes=hosts * args.slots_per_host, seed=_seed(args))
    else:
        if args.jobs is not None:
            raise UserError(
                "--jobs sets the size of the generated workload; with --workload use --max-jobs"
            )
        trace = read_swf(args.workload)
        if not trace.records:  # a simulation of nothing would report a success
            raise UserError(
                f"{trace.source}: no job records, nothing to simulate "
                "(an SWF trace lists one job per line)"
            )
    workload = map_trace(
        trace,
        hosts=hosts,
        slots_per_host=args.slots_per_host,
        queue_map=queue_map,
        max_jobs=args.max_jobs,
        swf_memory=args.swf_memory,
        host_mem_mb=float(args.host_mem),
        estimate=args.swf_estimate,
        load_factor=_load_factor_given(args),
    )
    if not workload.jobs:  # every record skipped: a simulation of nothing again
        skipped = _plural(sum(workload.skipped.values()), "record")
        raise UserError(
            f"{trace.source}: no record can be simulated "
            f"({skipped} skipped: {_by_reason(workload.skipped)})"
        )
    return workload, trace.source


def _is_jsonl(args: argparse.Namespace) -> bool:
    """Whether ``--workload`` names a JSON-lines workload (``.jsonl``, ``.jsonl.gz``)."""
    return args.workload is not None and is_jsonl(args.workload)


def _load_factor_given(args: argparse.Namespace) -> Fraction:
    """``--load-factor``, 1 when not given."""
    return Fraction(1) if args.load_factor is None else Fraction(args.load_factor)


#: The SWF options a JSON-lines workload refuses, with what it has instead.
_NOT_FOR_JSONL = (
    ("--swf-memory", "swf_memory", "its jobs reserve memory in their resreq (rusage[mem=...])"),
    ("--swf-queues", "swf_queues", "each job names its queue (field queue)"),
    ("--jobs", "jobs", "it sizes the generated workload; use --max-jobs"),
)


def _load_jsonl(args: argparse.Namespace) -> tuple[MappedWorkload, str]:
    """The JSON-lines workload of ``--workload`` (``workloads.jsonl.read_jsonl``) on
    ``--hosts`` hosts of ``--slots-per-host`` slots and ``--host-mem`` MB.

    Raises:
        UserError: no ``--hosts`` (the file has no header giving a machine size), or
            an SWF option that would change nothing (``--swf-memory``, ``--swf-queues``,
            ``--swf-estimate exact``) or ``--jobs``.
        JsonlError, MappingError: as ``read_jsonl`` (one line naming file, line and field).
    """
    where = printable(args.workload)
    for option, name, why in _NOT_FOR_JSONL:
        if getattr(args, name) not in (None, False):
            raise UserError(f"{option} is not for a JSON-lines workload ({where}): {why}")
    if args.swf_estimate == ESTIMATE_EXACT:
        raise UserError(
            f"--swf-estimate exact is not for a JSON-lines workload ({where}): each job "
            "gives its own run limit (field run_limit_s)"
        )
    if args.hosts is None:
        raise UserError(
            f"--hosts N is required with a JSON-lines workload ({where}): it gives no machine size"
        )
    if args.hosts * args.slots_per_host > MAX_SLOTS:
        raise UserError(
            f"--hosts × --slots-per-host: {args.hosts:,} × {args.slots_per_host:,} = "
            f"{args.hosts * args.slots_per_host:,} slots, more than the ceiling of {MAX_SLOTS:,}"
        )
    workload = read_jsonl(
        args.workload,
        hosts=args.hosts,
        slots_per_host=args.slots_per_host,
        host_mem_mb=float(args.host_mem),
        max_jobs=args.max_jobs,
        load_factor=_load_factor_given(args),
    )
    return workload, where


def _seed(args: argparse.Namespace) -> int:
    """``--seed``, 1 when not given."""
    return 1 if args.seed is None else int(args.seed)


def _load_queues(path: str | None) -> tuple[QueueSpec, ...]:
    """The ``--queues`` definitions (none without the option).

    Raises:
        UserError: the file cannot be read or is not a valid list of queues; the
            message names the option, the file, the list index and the field.
    """
    if path is None:
        return ()
    try:
        return read_queue_file(path)
    except QueueFileError as exc:
        raise UserError(f"--queues {exc}") from None
    except OSError as exc:
        raise UserError(f"--queues {path}: {exc.strerror or exc}") from None


def _check_queue_file(
    path: str | None,
    queues: Sequence[QueueSpec],
    workload: MappedWorkload,
    registry: PluginRegistry,
) -> None:
    """Refuse a ``--queues`` file one of whose definitions names a picker, a
    preemption policy or a queue to preempt that does not exist, naming the file,
    entry and field (``simulate.check_queue_spec``, which ``checked_config`` runs
    on the merged queues without knowing which came from the file); or that would change
    nothing: none of its definitions is the queue of a simulated job (a queue no
    job is in neither runs nor is preempted; one such definition beside others is
    kept, the README's "the others are added").

    Raises:
        UserError: naming the file, and the entry and field or the jobs' queues.
    """
    if path is None:
        return
    where = f"--queues {printable(path)}"
    names = [*workload.queues, *(spec.name for spec in queues if spec.name not in workload.queues)]
    for index, spec in enumerate(queues):
        try:
            check_queue_spec(spec, names, registry)
        except (ConfigError, MappingError) as exc:
            raise UserError(f"{where}: [{index}].{exc}") from None
    used = {job.queue for job in workload.jobs}
    if not any(spec.name in used for spec in queues):
        defined = ", ".join(repr(spec.name) for spec in queues) or "none"
        raise UserError(
            f"{where}: no definition is of a queue the simulated jobs are in "
            f"({', '.join(map(repr, sorted(used)))}; defined: {defined}): "
            "it would change nothing"
        )


def _by_reason(skipped: dict[str, int]) -> str:
    """Records skipped, by reason, in words: ``unknown run time 3, no processors 1``
    (reasons with none left out; empty when none was skipped)."""
    return ", ".join(
        f"{reason.replace('_', ' ')} {count:,}" for reason, count in skipped.items() if count
    )


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _figure(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _summary_rows(
    report: Report, wall_label: str, predictions: bool | None = None
) -> list[tuple[str, str]]:
    """The summary table's rows of one report: (figure, value). The start-time
    prediction row is there when ``predictions`` says so, by default when some
    job that started had a predicted start."""
    waits = (report.mean_wait_s, report.median_wait_s, report.max_wait_s)
    if predictions is None:
        predictions = report.predicted_jobs > 0
    rows = [
        ("policy", report.policy),
        ("backfill", report.backfill),
        ("cluster", f"{_plural(report.hosts, 'host')}, {_plural(report.slots, 'slot')}"),
        (
            "jobs",
            f"{report.jobs_total:,} total, {report.jobs_finished:,} finished"
            + (f", {report.jobs_left_running:,} still running" if report.jobs_left_running else ""),
        ),
        (
            "skipped / rejected / never started",
            f"{report.jobs_skipped:,} / {report.jobs_rejected:,} / {report.jobs_never_started:,}",
        ),
        (
            "skipped by reason",
            _by_reason(report.jobs_skipped_by_reason) or "none",
        ),
        (
            "wait mean / median / max",
            "n/a"
            if report.max_wait_s is None
            else " / ".join(_figure(value, ",.0f") for value in waits) + " s",
        ),
        ("mean bounded slowdown (τ=10 s)", _figure(report.mean_bounded_slowdown, ",.2f")),
        ("utilization", f"{report.utilization:.1%}"),
        ("makespan", f"{report.makespan_s:,} s ({report.makespan_s / 86400:,.1f} days)"),
        ("rounds / events", f"{report.rounds:,} / {report.events:,}"),
        (
            "preempted jobs / suspensions / resumes",
            f"{report.jobs_preempted:,} / {report.suspensions:,} / {report.resumes:,}"
            + (
                f" ({report.jobs_left_suspended:,} left suspended)"
                if report.jobs_left_suspended
                else ""
            ),
        ),
        (
            "killed by run limit / rejected by a closed queue",
            f"{report.jobs_killed_by_runlimit:,} / {report.jobs_rejected_queue_closed:,}",
        ),
        ("decisions", ", ".join(f"{op} {n:,}" for op, n in report.decisions.items())),
        (wall_label, f"{report.sim_wall_s:.2f} s"),
    ]
    if report.load_factor != 1:  # after the cluster: what load it was offered
        factor = f"{report.load_factor:g}"
        rows.insert(3, ("load factor", f"{factor} (arrivals 1/{factor} as far apart)"))
    if predictions:
        rows.insert(
            -2, ("predicted starts: jobs / mean abs error / mean error", _predictions(report))
        )
    return rows


def _predictions(report: Report) -> str:
    """The prediction row's value: how many jobs, and their errors (s)."""
    if report.prediction_mae_s is None or report.prediction_mean_error_s is None:
        return "0 / n/a / n/a"
    return (
        f"{report.predicted_jobs:,} / {report.prediction_mae_s:,.0f} s / "
        f"{report.prediction_mean_error_s:+,.0f} s"
    )


class _Results(Console):
    """The console of the results, which leaves a closed pipe (``| head``) to
    ``main``, as ``print`` does (rich would exit 1 on its own)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def _stdout() -> Console:
    """The console of the results: a terminal's width, or no wrapping at all when
    piped (``PIPE_WIDTH``)."""
    console = _Results()
    return console if console.is_terminal else _Results(width=PIPE_WIDTH)


def _print_summary(
    console: Console,
    report: Report,
    command: str = "simulate",
    wall_label: str = "simulation wall time",
) -> None:
    # The title is a line of its own: a table wraps its title to the table's width.
    print(f"xce-sched {command}: {report.workload}")
    table = Table(show_header=False)
    table.add_column("figure", style="bold")
    table.add_column("value", justify="right")
    for name, value in _summary_rows(report, wall_label):
        table.add_row(name, value)
    console.print(table)


def _run(
    args: argparse.Namespace,
    workload: MappedWorkload,
    source: str,
    registry: PluginRegistry,
    queues: tuple[QueueSpec, ...],
    options: dict[str, Any],
) -> SimulationResult:
    """Simulate ``workload`` under ``options`` (``_policy_options``, checked before
    the recording is opened), with a progress bar on a terminal and the recording.

    Raises:
        OSError: the recording cannot be written (``filename`` is its path).
    """
    recording = RecordingWriter(args.record) if args.record else None
    try:
        with _progress_bar(args.quiet) as bar:
            task = bar.add_task("simulating", total=len(workload.jobs))
            result = run_simulation(
                workload,
                source=source,
                policy=args.policy,
                seed=_seed(args),
                round_interval_s=args.round_interval,
                registry=registry,
                recording=recording,
                snapshot_interval=args.record_snapshot_interval or 0,
                progress=lambda done: bar.update(task, completed=done),
                queues=queues,
                **options,
            )
    except BaseException:
        if recording is not None:
            with suppress(OSError):  # the first error is the one to report
                recording.close()
        raise
    if recording is not None:
        recording.close()
    return result


def _file_outputs(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """``simulate``'s file outputs but the figures: (option, path or None) each."""
    return [
        ("--record", args.record),
        ("--report", args.report),
        ("--jobs-out", args.jobs_out),
        ("--series-out", args.series_out),
    ]


def simulation_of(args: argparse.Namespace) -> tuple[SimulationResult, MappedWorkload]:
    """Check ``simulate``'s options and files, then run the simulation they describe
    (writing ``--record``, not the other outputs); the result and the workload run.
    What ``simulate``, ``compare`` and every run of a ``sweep`` do.

    Raises:
        UserError: a user mistake in the options or the files (one line).
        ConfigError, MappingError, SwfError, PluginError: as ``main`` reports them.
    """
    _check_outputs(_file_outputs(args), [("--workload", args.workload), ("--queues", args.queues)])
    _refuse_ignored(args)
    registry = load_registry()
    registry.pickers.get(args.policy)
    queues = _load_queues(args.queues)
    options = _policy_options(args, queues)  # before --record truncates an existing file
    workload, source = _load_workload(args)
    _check_queue_file(args.queues, queues, workload, registry)
    try:
        result = _run(args, workload, source, registry, queues, options)
    except OSError as exc:
        if args.record and exc.filename == str(Path(args.record)):
            raise UserError(f"--record {args.record}: {exc.strerror or exc}") from None
        raise
    return result, workload


def simulate(args: argparse.Namespace) -> int:
    """Run ``xce-sched simulate``; returns the exit status."""
    _check_figure_outputs("--plot", args.plot, args.html, _file_outputs(args))
    result, workload = simulation_of(args)
    report = result.report
    outputs: list[Output] = []
    if args.report:
        document = orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2)
        outputs.append(("--report", args.report, lambda path: Path(path).write_bytes(document)))
    if args.jobs_out:
        records = result.records.values()
        write = partial(write_jobs_csv, records, skipped=workload.skipped_records)
        outputs.append(("--jobs-out", args.jobs_out, write))
    if args.series_out:
        series = time_series(result.records.values(), report.slots, args.sample_interval)
        outputs.append(("--series-out", args.series_out, partial(write_series_csv, series)))
    # The figures are drawn in a scratch folder, then copied with the other outputs,
    # all or none (--html alone draws them only to embed them).
    with tempfile.TemporaryDirectory(prefix="xce-sched-plot-") as scratch:
        if args.plot or args.html:
            outputs += _simulation_figures(args, result, Path(scratch))
        _write_outputs(outputs)
    if not args.quiet:
        _print_summary(_stdout(), report)
    return 0


def _check_figure_outputs(
    option: str, folder: str | None, html: str | None, others: Sequence[tuple[str, str | None]]
) -> None:
    """Refuse, before any work, a figures folder (``option``) that is a file or
    under a missing folder (a missing folder itself is made), and an ``--html`` that
    cannot be written (``_check_outputs``), or that names one of ``others``' files.
    An ``--html`` inside the figures folder is fine while that folder is missing.

    Raises:
        UserError: naming the option and the path.
    """
    if folder is not None:
        target = Path(folder)
        if target.exists() and not target.is_dir():
            raise UserError(f"{option} {folder}: is not a folder")
        if not target.exists() and not target.parent.is_dir():
            raise UserError(f"{option} {folder}: folder {target.parent} does not exist")
        # The figures' folder is theirs: no other output may be it, or one of the
        # .png and .svg files drawn into it.
        for other, path in [*others, ("--html", html)]:
            if path is None:
                continue
            where = Path(os.path.realpath(path))
            if where == Path(os.path.realpath(folder)):
                raise UserError(f"{other} {path}: is the {option} folder")
            if where.parent == Path(os.path.realpath(folder)) and where.suffix in (".png", ".svg"):
                raise UserError(f"{other} {path}: {option} {folder} holds the figures' files")
    if html is None:
        return
    inside = folder is not None and os.path.abspath(Path(html).parent) == os.path.abspath(folder)
    if inside and not Path(html).parent.exists():
        return
    _check_outputs([("--html", html)], others)


def _figure_outputs(
    option: str,
    folder: str | None,
    html: str | None,
    figures: Sequence[Path],
    page: tuple[str, Sequence[Any], Sequence[str]],
) -> list[Output]:
    """The outputs that copy the ``figures`` drawn into ``folder`` (made now when
    missing; ``option`` names it) and write ``html``, the page (title, tables,
    notes) with every PNG of ``figures``."""
    from xce_driver.experiments.html_report import write_html

    outputs: list[Output] = []
    if folder is not None:
        with _writing(option, folder):
            Path(folder).mkdir(exist_ok=True)
        for figure in figures:
            outputs.append(
                (option, str(Path(folder) / figure.name), partial(shutil.copyfile, figure))
            )
    if html is not None:
        title, tables, notes = page
        pngs = [figure for figure in figures if figure.suffix == ".png"]
        outputs.append(
            ("--html", html, lambda path: write_html(Path(path), title, tables, pngs, notes))
        )
    return outputs


def _simulation_figures(
    args: argparse.Namespace, result: SimulationResult, scratch: Path
) -> list[Output]:
    """Draw a simulation's figures in ``scratch``: the outputs of ``--plot`` and
    ``--html`` (the summary table, the figures by job size, the figures)."""
    # matplotlib takes a third of a second to import: only a command that draws loads it.
    from xce_driver.experiments.plots import run_figures

    report = result.report
    label = report.policy + ("" if report.backfill == "greedy" else f", {report.backfill}")
    records = {label: list(result.records.values())}
    figures = run_figures(
        records,
        report.slots,
        scratch,
        interval_s=args.sample_interval,
        gantt_window=args.gantt_window,
    )
    sizes = [
        [
            name,
            *(group[key] for key in ("jobs", "mean_wait_s", "p90_wait_s", "mean_bounded_slowdown")),
        ]
        for name, group in report.sizes.items()
    ]
    tables = [
        ("summary", ["figure", "value"], _summary_rows(report, "simulation wall time")),
        (
            "by job size (slots)",
            ["size", "jobs", "mean wait (s)", "p90 wait (s)", "mean bounded slowdown"],
            sizes,
        ),
    ]
    page: tuple[str, Sequence[Any], Sequence[str]] = (
        f"xce-sched simulate: {report.workload}",
        tables,
        [],
    )
    return _figure_outputs("--plot", args.plot, args.html, figures, page)


def _say_error(message: str) -> None:
    """Print ``xce-sched: error: <message>`` on stderr, a file name that is not valid
    UTF-8 shown with U+FFFD (``printable``) rather than failing to print."""
    print(f"{PROG}: error: {printable(message)}", file=sys.stderr)


def emulate_command(args: argparse.Namespace) -> int:
    """Run ``xce-sched emulate``; returns the exit status: 1 when NATS cannot be
    reached, ``--timeout`` passed with jobs left, or the core (or the bridge) refused
    jobs of the run (``SubmissionRefused``: one line naming the job and the reason,
    no summary)."""
    _check_outputs([], [("--workload", args.workload), ("--queues", args.queues)])
    _refuse_ignored(args)
    registry = load_registry()
    registry.pickers.get(args.policy)
    queues = _load_queues(args.queues)
    workload, source = _load_workload(args)
    _check_queue_file(args.queues, queues, workload, registry)
    options = _policy_options(args, queues)
    config = checked_config(workload, args.policy, queues, registry, **options)
    hosts = host_specs(workload.hosts, workload.slots_per_host, workload.host_mem_mb)
    emulator = LiveEmulator(workload.jobs, hosts, config, nats_url=args.nats, speed=args.speed)
    started = time.perf_counter()
    try:
        finished = asyncio.run(emulator.run(args.timeout))
    except SubmissionRefused as exc:
        _say_error(str(exc))
        return 1
    except (NatsError, OSError) as exc:
        _say_error(f"--nats {args.nats}: {exc}")
        return 1
    wall = time.perf_counter() - started
    report = emulation_report(emulator, workload, source, args.policy, wall, backfill_label(config))
    if not args.quiet:
        _print_summary(_stdout(), report, "emulate", "wall time")
    if not finished:
        # Decisions came: the services run, and the jobs not done stay in the core,
        # where a next run of the same job ids would be refused.
        hint = (
            f"the services answered, and this run's jobs stay in the core: to run them "
            f"again, {RESET_STEPS}"
            if emulator.stats.decisions
            else "no decision came: are xce-bridge and xce-core-service running?"
        )
        print(
            f"{PROG}: error: --timeout {args.timeout:g} s passed with "
            f"{len(workload.jobs) - emulator.stats.done:,} of {len(workload.jobs):,} jobs neither "
            f"finished nor rejected ({hint})",
            file=sys.stderr,
        )
        return 1
    return 0


def _progress_bar(quiet: bool = False) -> Progress:
    """A progress bar on stderr, shown only on a terminal (and not with ``quiet``)."""
    stderr = Console(stderr=True)
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
        disable=quiet or not stderr.is_terminal,
    )


def replay_command(args: argparse.Namespace) -> int:
    """Run ``xce-sched replay``; returns the exit status (1 when verification failed,
    or a what-if's figures cannot be right)."""
    if args.sim_alt_events is not None:
        return what_if_command(args)
    for option, given in (
        ("--jobs-out", args.jobs_out),
        ("--sim-round-interval", args.sim_round_interval),
    ):
        if given is not None:
            raise UserError(f"{option} is a what-if's: it needs --sim-alt-events")
    _check_outputs([("--report", args.report)], [("FILE", args.file)])
    options = ReplayOptions(
        start_ts=args.sim_start_ts,
        speed=args.sim_speed,
        pause_at=args.sim_pause_at,
        verify=args.sim_verify,
        force=args.force,
    )
    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    with _progress_bar(interactive and args.sim_pause_at is not None) as bar:
        task = bar.add_task("replaying (MB read)", total=None)
        result = replay(
            args.file,
            options,
            registry=load_registry(),
            pause=interactive_pause if interactive else None,
            progress=lambda done, size: bar.update(
                task, completed=done // 2**20, total=size // 2**20 or None
            ),
        )
    if args.report:  # the file first: printing may stop at a closed pipe (| head)
        document = orjson.dumps(as_dict(result), option=orjson.OPT_INDENT_2)
        _write_outputs([("--report", args.report, lambda path: Path(path).write_bytes(document))])
    console = _stdout()
    stats = result.stats
    if result.paused_at is not None:
        print(f"paused at {result.pause_summary}")
    print(f"xce-sched replay: {printable(args.file)}")
    table = Table(show_header=False)
    table.add_column("figure", style="bold")
    table.add_column("value", justify="right")
    rate = stats.events / result.wall_s if result.wall_s else 0.0
    mean = stats.mean_wait_s()
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
        ("mean wait of jobs started", "n/a" if mean is None else f"{mean:,.1f} s"),
        ("wall time", f"{result.wall_s:.2f} s"),
    ]
    if args.sim_verify:
        count = result.mismatch_count
        rows.append(("verification", f"{count:,} mismatch" + ("" if count == 1 else "es")))
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    for text in result.mismatches:
        print(f"MISMATCH {text}")
    if result.mismatch_count > len(result.mismatches):
        print(f"... and {result.mismatch_count - len(result.mismatches):,} more mismatches")
    if result.incomplete is not None:
        print(f"{PROG}: warning: {result.incomplete}; replayed what it holds", file=sys.stderr)
    return 1 if result.mismatch_count else 0


#: What a what-if refuses, with why: replay options that only a replay has.
_NOT_IN_WHAT_IF = (
    ("--sim-verify", "sim_verify", "a what-if makes other decisions than FILE by design"),
    ("--sim-speed", "sim_speed", "a what-if runs in virtual time, as simulate does"),
    ("--sim-pause-at", "sim_pause_at", "a what-if runs in virtual time, as simulate does"),
)


def what_if_command(args: argparse.Namespace) -> int:
    """Run ``xce-sched replay FILE --sim-alt-events ALT``: the base run and the
    what-if side by side, the jobs whose start moved, what of ALT was left out or no
    longer applies; ``--report`` and ``--jobs-out`` as ``simulate`` writes them.
    Returns 1 when jobs without a known run time were dispatched (the figures
    cannot be right), else 0."""
    for option, name, why in _NOT_IN_WHAT_IF:
        if getattr(args, name):
            raise UserError(f"{option} cannot be used with --sim-alt-events: {why}")
    _check_outputs(
        [("--report", args.report), ("--jobs-out", args.jobs_out)],
        [("FILE", args.file), ("--sim-alt-events", args.sim_alt_events)],
    )
    options = WhatIfOptions(
        start_ts=args.sim_start_ts, round_interval_s=args.sim_round_interval, force=args.force
    )
    with _progress_bar() as bar:
        tasks = {
            "base": bar.add_task("reading the base run (MB)", total=None),
            "alt": bar.add_task("reading the alternative events (MB)", total=None),
            "what-if": bar.add_task("what-if (jobs done)", total=None),
        }

        def progress(phase: str, done: int, total: int) -> None:
            if phase != "what-if":
                done, total = done // 2**20, total // 2**20
            bar.update(tasks[phase], completed=done, total=total or None)

        result = what_if(
            args.file, args.sim_alt_events, options, registry=load_registry(), progress=progress
        )
    # The files first: printing may stop at a closed pipe (| head).
    outputs: list[Output] = []
    if args.report:
        document = orjson.dumps(_what_if_json(result), option=orjson.OPT_INDENT_2)
        outputs.append(("--report", args.report, lambda path: Path(path).write_bytes(document)))
    if args.jobs_out:
        records = result.records.values()
        outputs.append(("--jobs-out", args.jobs_out, partial(write_jobs_csv, records)))
    _write_outputs(outputs)
    _print_what_if(_stdout(), args, result)
    for text in result.incomplete:
        print(f"{PROG}: warning: {text}; used what it holds", file=sys.stderr)
    if result.endless:
        shown = ", ".join(str(jobid) for jobid in result.endless[:10])
        more = ", ..." if len(result.endless) > 10 else ""
        print(
            f"{PROG}: error: the what-if dispatched {_plural(len(result.endless), 'job')} "
            f"whose run time is not known ({shown}{more}: new in ALT without a RUN_TIME "
            "line, or started at another time than in the base run, which did not see them "
            "end), so when they end is not known and its figures are not right",
            file=sys.stderr,
        )
        return 1
    return 0


def _print_what_if(console: Console, args: argparse.Namespace, result: WhatIfResult) -> None:
    print(
        f"xce-sched replay (what-if): {printable(args.file)} with {printable(args.sim_alt_events)}"
    )
    table = Table()
    table.add_column("figure", style="bold")
    table.add_column("base run", justify="right")
    table.add_column("what-if", justify="right")
    # The base run is read from its recording, which keeps no predictions.
    predictions = bool(result.base.predicted_jobs or result.alternative.predicted_jobs)
    rows = zip(
        _summary_rows(result.base, "wall time", predictions),
        _summary_rows(result.alternative, "wall time", predictions),
        strict=True,
    )
    for (name, base_value), (_, value) in list(rows)[1:-1]:  # not the policy nor wall time
        table.add_row(name, base_value, value)
    console.print(table)
    moved = result.moved()
    print(f"started from: SNAPSHOT at line {result.snapshot_line}, {format_ts(result.snapshot_ts)}")
    print(f"rounds: {_rounds_text(result)}")
    if result.horizon_ts is not None:
        print(
            f"stopped at the base recording's end, {format_ts(result.horizon_ts)}: "
            f"{_plural(len(result.left_running), 'job')} of the base run still ran then "
            "(their run time is not known, so nothing later can be told)"
        )
    print(f"jobs whose start moved: {len(moved):,}")
    print(f"jobs only in the base run (ALT does not submit them): {len(result.only_in_base()):,}")
    print(f"jobs only in the what-if (new in ALT): {len(result.only_in_what_if()):,}")
    for why, count in sorted(result.left_out.items()):
        print(f"not pushed: {count:,} {why}")
    print(f"events that no longer apply: {result.refused_count:,}")
    print(f"wall time: {result.wall_s:.2f} s")

    def show(start: int | None) -> str:
        return "never" if start is None else f"{start:,} s"

    for jobid, before, after in moved[:20]:
        print(f"job {jobid}: start {show(before)} -> {show(after)}")
    if len(moved) > 20:
        print(f"... and {len(moved) - 20:,} more jobs moved (--jobs-out lists every job)")
    for text in result.refused[:10]:
        print(f"no longer applies: {text}")


def _rounds_text(result: WhatIfResult) -> str:
    """How the what-if's rounds came, in words."""
    every = result.round_interval_s
    grid = "at every change" if every is None else f"every {every:,} s"
    if result.controller_rounds:
        return f"the controller's, as recorded (a live recording), then {grid} after the last"
    return grid


def _what_if_json(result: WhatIfResult) -> dict[str, object]:
    """``--report`` of a what-if: ``simulate``'s report of the what-if, and under
    ``what_if`` the base run's report and what of ALT was not used."""
    return result.alternative.to_json() | {
        "what_if": {
            "snapshot_line": result.snapshot_line,
            "snapshot_ts": result.snapshot_ts,
            "round_interval_s": result.round_interval_s,
            "controller_rounds": result.controller_rounds,
            "horizon_ts": result.horizon_ts,
            "jobs_left_running_in_base": len(result.left_running),
            "jobs_moved": len(result.moved()),
            "jobs_only_in_base": len(result.only_in_base()),
            "jobs_only_in_what_if": len(result.only_in_what_if()),
            "not_pushed": dict(sorted(result.left_out.items())),
            "events_no_longer_applying": result.refused_count,
            "jobs_without_run_time": result.endless,
            "incomplete_input": result.incomplete,
            "base": result.base.to_json(),
        }
    }


def events_command(args: argparse.Namespace) -> int:
    """Run ``xce-sched events``: write the workload's event file; returns 0."""
    _check_outputs(
        [("--out", args.out)], [("--workload", args.workload), ("--queues", args.queues)]
    )
    registry = load_registry()
    registry.pickers.get(args.policy)
    queues = _load_queues(args.queues)
    workload, source = _load_workload(args)
    _check_queue_file(args.queues, queues, workload, registry)
    options = _policy_options(args, queues)
    config = checked_config(workload, args.policy, queues, registry, **options)
    with _writing("--out", args.out):
        summary = write_event_file(workload, config, args.out)
    refused = (
        f" ({summary.refused_queue_closed:,} left out: their queue is closed)"
        if summary.refused_queue_closed
        else ""
    )
    print(
        f"{printable(args.out)}: {summary.jobs:,} jobs of {source}{refused}, "
        f"{summary.lines:,} lines"
    )
    return 0


def _add_experiment_commands(commands: Any) -> None:
    """The ``compare`` and ``sweep`` subcommands (``xce_driver.experiments``)."""
    cmp = commands.add_parser(
        "compare",
        help="one workload under several configurations, side by side and job by job",
        description="Simulate one workload under several configurations: every figure side "
        "by side with its ratio to the first configuration, and the jobs whose start moved "
        "most. Every other option is a simulate option common to all the runs "
        "(--workload, --max-jobs, --hosts, ...).",
    )
    cmp.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="a simulate option and the values it takes (repeatable: the runs are every "
        "combination), e.g. --vary policy=builtin_fcfs,sjf --vary backfill=greedy,easy",
    )
    cmp.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="OPTIONS",
        help="one configuration's simulate options, quoted (repeatable), e.g. "
        "--config '--policy sjf --backfill easy'",
    )
    cmp.add_argument(
        "--top",
        type=_whole(0, 1_000_000),
        default=10,
        metavar="N",
        help="jobs listed whose start moved most, per configuration (default 10)",
    )
    cmp.add_argument("--report", metavar="OUT.json", help="write every report and diff as JSON")
    _add_figure_options(cmp, "the configurations' figures together")
    _add_gantt_window(cmp)
    cmp.add_argument("--quiet", action="store_true", help="print no tables")
    swp = commands.add_parser(
        "sweep",
        help="run a grid of simulations (traces × options × seeds) on Dask into one table",
        description="Run a grid of simulations, traces × option axes × seeds, on a Dask "
        "cluster (a local one by default), into one tidy table (Parquet and CSV). Runs "
        "already done are kept and not run again.",
    )
    swp.add_argument("spec", metavar="SPEC", help="the sweep: TOML, or YAML (.yaml, .yml)")
    swp.add_argument(
        "--out",
        metavar="DIR",
        help="results folder: runs/, results.parquet, results.csv (default: SPEC's name "
        "without its suffix, plus .results, beside it)",
    )
    swp.add_argument(
        "--workers",
        type=_whole(1, 1024, " workers"),
        default=os.cpu_count() or 1,
        metavar="N",
        help="worker processes of the local Dask cluster (default: the CPUs)",
    )
    swp.add_argument(
        "--scheduler-address",
        metavar="ADDR",
        help="run on this existing Dask cluster (tcp://host:8786) instead of a local one",
    )
    _add_figure_options(swp, "each figure against the first axis that varies")
    swp.add_argument("--quiet", action="store_true", help="print no progress or table")


def _add_figure_options(sub: argparse.ArgumentParser, what: str) -> None:
    """``--plot DIR`` and ``--html FILE`` of ``compare`` and ``sweep``."""
    sub.add_argument("--plot", metavar="DIR", help=f"draw {what} (PNG and SVG) into DIR")
    sub.add_argument(
        "--html",
        metavar="OUT.html",
        help="write one self-contained page: the tables and the figures",
    )


def _add_gantt_window(sub: argparse.ArgumentParser) -> None:
    """``--gantt-window FROM:TO`` of the commands that draw runs."""
    sub.add_argument(
        "--gantt-window",
        type=_time_window,
        metavar="FROM:TO",
        help="the Gantt chart's window, s from the trace origin (default: the busiest 2 days)",
    )


def _time_window(text: str) -> tuple[int, int]:
    """The argparse type of ``--gantt-window``: ``FROM:TO``, whole seconds from the
    trace origin, 0 <= FROM < TO <= 10**10."""
    start, sep, end = text.partition(":")
    if not sep or not _WHOLE.fullmatch(start) or not _WHOLE.fullmatch(end):
        raise argparse.ArgumentTypeError(
            f"{show_text(text)} is not FROM:TO (whole seconds from the trace origin)"
        )
    window = (int(start), int(end))
    if not 0 <= window[0] < window[1] <= 10**10:
        raise argparse.ArgumentTypeError(
            f"{show_text(text)}: FROM must be 0 or more and below TO, TO at most 10**10 s"
        )
    return window


def simulate_options(options: Sequence[str]) -> argparse.Namespace:
    """``simulate``'s options parsed as the command line would be (a later option
    overrides an earlier one).

    Raises:
        UserError: an option ``simulate`` does not have, or a bad value.
    """
    return build_parser(_RunOptionsParser).parse_args(["simulate", *options])


#: The errors of one run that are the user's (or a plugin's), reported in one line.
_RUN_ERRORS = (
    ValidationError,
    UserError,
    SwfError,
    MappingError,
    ConfigError,
    ReplayError,
    ValueError,
    PluginError,
    OSError,
)


def _error_text(exc: BaseException) -> str:
    """The one line ``main`` says for an error of ``_RUN_ERRORS``."""
    if isinstance(exc, ValidationError):  # a value the wire contract refuses
        got = exc.errors()[0]["input"]
        return printable(f"{describe(exc, default=exc.title)} (got {got!r})")
    if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
        where = f"{exc.filename}: " if exc.filename else ""
        return printable(f"{where}{exc.strerror or exc}")
    return printable(str(exc))


def sweep_run(options: tuple[str, ...]) -> dict[str, Any]:
    """One run of a sweep, on a Dask worker: ``simulate`` with ``options``; its report
    (``Report.to_json``, as JSON data) or its one-line error."""
    try:
        result, _ = simulation_of(simulate_options([*options, "--quiet"]))
    except _RUN_ERRORS as exc:
        return {"report": None, "error": _error_text(exc)}
    return {"report": orjson.loads(orjson.dumps(result.report.to_json())), "error": None}


def compare_command(args: argparse.Namespace, common: Sequence[str]) -> int:
    """Run ``xce-sched compare``: ``common`` are the simulate options of every run."""
    _check_figure_outputs("--plot", args.plot, args.html, [("--report", args.report)])
    _check_outputs([("--report", args.report)])
    if args.gantt_window is not None and not (args.plot or args.html):
        raise UserError("--gantt-window sets the Gantt chart of --plot and --html; give one")
    try:
        configs = configurations(args.config, args.vary)
    except CompareError as exc:
        raise UserError(str(exc)) from None
    try:
        refuse_run_outputs(common)
    except CompareError as exc:
        raise UserError(str(exc)) from None
    labels = labels_of(configs)
    runs: list[argparse.Namespace] = []
    for label, config in zip(labels, configs, strict=True):
        try:  # every configuration's options before any run
            runs.append(simulate_options([*common, *config.options, "--quiet"]))
        except UserError as exc:
            raise UserError(f"configuration {label!r}: {exc}") from None
    results: list[SimulationResult] = []
    with _progress_bar(args.quiet) as bar:
        task = bar.add_task("configurations", total=len(runs))
        for label, run in zip(labels, runs, strict=True):
            try:
                results.append(simulation_of(run)[0])
            except _RUN_ERRORS as exc:
                raise UserError(f"configuration {label!r}: {_error_text(exc)}") from None
            bar.advance(task)
    reports = [result.report.to_json() for result in results]
    diffs = [job_diff(results[0].records, r.records, args.top) for r in results[1:]]
    tables = _comparison_tables(labels, reports, diffs)
    outputs: list[Output] = []
    if args.report:
        document = {
            "configurations": [
                {"label": label, "options": list(config.options), "report": report}
                for label, config, report in zip(labels, configs, reports, strict=True)
            ],
            "common_options": list(common),
            "diffs": [
                {"base": labels[0], "other": label, **diff_json(diff)}
                for label, diff in zip(labels[1:], diffs, strict=True)
            ],
        }
        data = orjson.dumps(document, option=orjson.OPT_INDENT_2)
        outputs.append(("--report", args.report, lambda path: Path(path).write_bytes(data)))
    with tempfile.TemporaryDirectory(prefix="xce-sched-plot-") as scratch:
        if args.plot or args.html:
            outputs += _comparison_figures(args, labels, results, tables, Path(scratch))
        _write_outputs(outputs)
    if not args.quiet:
        print(f"xce-sched compare: {reports[0]['workload']}")
        for caption, header, rows in tables:
            _print_table(_stdout(), caption, header, rows)
    return 0


def _comparison_figures(
    args: argparse.Namespace,
    labels: Sequence[str],
    results: Sequence[SimulationResult],
    tables: Sequence[TableData],
    scratch: Path,
) -> list[Output]:
    """Draw a comparison's figures in ``scratch``: the outputs of ``--plot`` and
    ``--html`` (the tables, then the figures).

    Raises:
        UserError: the configurations ran on clusters of different sizes.
    """
    from xce_driver.experiments.plots import run_figures  # matplotlib: only to draw

    slots = {result.report.slots for result in results}
    if len(slots) > 1:
        raise UserError(
            "--plot and --html need one cluster: the configurations ran on "
            f"{', '.join(f'{n:,}' for n in sorted(slots))} slots"
        )
    records = {
        label: list(result.records.values()) for label, result in zip(labels, results, strict=True)
    }
    figures = run_figures(records, slots.pop(), scratch, gantt_window=args.gantt_window)
    page: tuple[str, Sequence[Any], Sequence[str]] = (
        f"xce-sched compare: {results[0].report.workload}",
        tables,
        [],
    )
    return _figure_outputs("--plot", args.plot, args.html, figures, page)


#: A table to print or to put in the HTML page: caption, header, rows.
TableData = tuple[str, list[str], list[list[object]]]


def _comparison_tables(
    labels: Sequence[str], reports: Sequence[Any], diffs: Sequence[JobDiff]
) -> list[TableData]:
    """The figures side by side (ratios to the first), then each per-job diff."""
    header = ["figure", *(f"{label} (× first)" if i else label for i, label in enumerate(labels))]
    figures: list[list[object]] = []
    for name, values, ratios in figure_rows(reports):
        cells: list[object] = [name, cell_text(values[0])]
        for value, factor in zip(values[1:], ratios[1:], strict=True):
            cells.append(cell_text(value) + ("" if factor is None else f" ({factor:.3g})"))
        figures.append(cells)
    tables: list[TableData] = [("figures", header, figures)]
    for label, diff in zip(labels[1:], diffs, strict=True):
        mean = "n/a" if diff.mean_moved_s is None else f"{diff.mean_moved_s:+,.0f} s"
        caption = (
            f"{labels[0]} → {label}: {diff.jobs_moved:,} jobs started at another time "
            f"(mean {mean}); started in one run only: {len(diff.only_base):,} / "
            f"{len(diff.only_other):,}"
        )
        moved: list[list[object]] = [
            [
                str(job.jobid),
                f"{job.tasks:,}",
                f"{job.submit_s:,}",
                f"{job.base_start_s:,}",
                f"{job.other_start_s:,}",
                f"{job.moved_s:+,}",
            ]
            for job in diff.moved
        ]
        columns = ["jobid", "tasks", "submit s", f"start s ({labels[0]})", "start s", "moved s"]
        tables.append((caption, columns, moved))
    return tables


def _print_table(
    console: Console, caption: str, header: Sequence[str], rows: Sequence[Sequence[object]]
) -> None:
    """A table on the console: its caption on a line of its own (a table wraps its
    title to its width), then the table when it has rows; a column of figures
    (numbers, n/a, ratios) right-aligned."""
    print(caption)
    if not rows:
        return
    table = Table()
    numeric = numeric_columns(len(header), rows)
    for index, column in enumerate(header):
        table.add_column(column, justify="right" if numeric[index] else "left")
    for row in rows:
        table.add_row(*(cell_text(cell) for cell in row))
    console.print(table)


def sweep_command(args: argparse.Namespace) -> int:
    """Run ``xce-sched sweep``; exit status 1 when a run failed (its row says why)."""
    spec_path = Path(args.spec)
    out = Path(args.out) if args.out else spec_path.with_name(f"{spec_path.stem}.results")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: is not a folder")
    _check_figure_outputs("--plot", args.plot, args.html, [("SPEC", args.spec)])
    results = {out / name for name in ("results.parquet", "results.csv", "runs")}
    if args.html is not None and os.path.realpath(args.html) in map(os.path.realpath, results):
        raise UserError(f"--html {args.html}: is the sweep's own result")
    try:
        spec = read_spec(spec_path)
        plan = plan_runs(spec, spec_path.parent, run_meaning)
    except SweepError as exc:
        raise UserError(
            str(exc) if str(exc).startswith(args.spec) else f"{args.spec}: {exc}"
        ) from None
    except OSError as exc:
        raise UserError(f"{args.spec}: {exc.strerror or exc}") from None
    try:
        with _progress_bar(args.quiet) as bar:
            task = bar.add_task("runs", total=len(plan))
            already = sum(stored(out, run) is not None for run in plan)
            bar.update(task, completed=already)
            outcome = run_sweep(
                plan,
                sweep_run,
                out,
                scheduler_address=args.scheduler_address,
                workers=args.workers,
                on_done=lambda run, result: bar.advance(task),
            )
        table = rows(plan, out)
        write_tables(table, out)
    except SweepError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"--out {out}: {exc.strerror or exc}") from None
    failed = [row for row in table if row["error"]]
    summary = printable(
        f"xce-sched sweep: {args.spec}: {_plural(outcome.runs, 'run')}: "
        f"{outcome.already_done:,} already done, {outcome.ran:,} run now; "
        f"table {out / 'results.parquet'} and {out / 'results.csv'}"
    )
    runs = _sweep_table(table, list(spec.axes))
    undrawn = None
    with tempfile.TemporaryDirectory(prefix="xce-sched-plot-") as scratch:
        if args.plot or args.html:
            from xce_driver.experiments.result_files import ResultError, plot_results

            try:  # what xce-sched plot draws of the table
                drawn = plot_results([out / "results.parquet"], Path(scratch))
            except ResultError as exc:
                if not failed:
                    raise UserError(f"--plot/--html: {exc}") from None
                undrawn = f"--plot/--html: nothing drawn: {exc}"
            else:
                page = (summary, [runs, *drawn.tables[1:]], drawn.notes)
                figures = drawn.figures
                _write_outputs(_figure_outputs("--plot", args.plot, args.html, figures, page))
    if not args.quiet:
        print(summary)
        _print_table(_stdout(), *runs)
    for row in failed:
        _say_error(f"run {row['options']}: {row['error']}")
    if undrawn is not None:  # a table of failed runs may have nothing left to draw
        _say_error(undrawn)
    return 1 if failed else 0


#: What a run's key leaves out of its parsed options: outputs, and paths whose
#: files' SHA-256 stand for them (sweep.FILE_OPTIONS, the trace).
_NOT_MEANING = ("workload", "queues", "policy_config", "quiet", "command")


def run_meaning(options: tuple[str, ...]) -> dict[str, object]:
    """What a sweep's run options mean: ``simulate``'s parsed options, paths and
    outputs aside (``sweep.plan_runs`` keys a run by it).

    Raises:
        SweepError: options ``simulate`` refuses, naming them.
    """
    try:
        parsed = simulate_options(options)
        # What simulate checks before it reads the workload: the picker, options
        # that would change nothing, the queue and policy files.
        _refuse_ignored(parsed)
        load_registry().pickers.get(parsed.policy)
        _policy_options(parsed, _load_queues(parsed.queues))
    except (UserError, ConfigError) as exc:
        raise SweepError(f"run {shlex.join(options)}: {exc}") from None
    return {name: value for name, value in vars(parsed).items() if name not in _NOT_MEANING}


def _sweep_table(table: Sequence[dict[str, Any]], axes: Sequence[str]) -> TableData:
    """One line per run: its trace, axes and seed, and its main figures."""
    columns = ["trace", *(column_name(axis) for axis in axes), "seed"]
    figures = ("mean_wait_s", "mean_bounded_slowdown", "utilization", "makespan_s")
    shown: list[list[object]] = []
    for row in table:
        cells = [cell_text(row.get(figure)) for figure in figures]
        if row["error"]:
            cells = ["failed", "", "", ""]
        shown.append([*(row[column] for column in columns), *cells])
    return ("runs", [*columns, *figures], shown)


def _add_plot_command(commands: Any) -> None:
    """The ``plot`` subcommand (``xce_driver.experiments.plots``)."""
    plot = commands.add_parser(
        "plot",
        help="draw result files as figures: simulate's per-job CSVs, or a sweep's table",
        description="Draw results as PNG and SVG figures (and one HTML page): per-job "
        "CSVs written by simulate --jobs-out, drawn together, each labelled by its file "
        "name, or one sweep table (results.parquet or results.csv of xce-sched sweep), "
        "each metric against one configuration column. A per-job CSV says for how long a "
        "job was suspended, not when: its utilization and queue figures count a "
        "suspended job as running (waits and slowdowns are exact); skipped records' rows "
        "are left out.",
    )
    plot.add_argument(
        "results",
        nargs="+",
        metavar="RESULT",
        help="per-job CSVs (simulate --jobs-out), or one sweep table (.parquet or .csv)",
    )
    plot.add_argument(
        "--out", required=True, metavar="DIR", help="the figures' folder, made if missing"
    )
    plot.add_argument(
        "--slots",
        type=_whole(1, MAX_SLOTS, " slots"),
        metavar="N",
        help="the cluster's slots, needed with per-job CSVs (simulate's summary gives them)",
    )
    plot.add_argument("--html", metavar="OUT.html", help="also write one self-contained HTML page")
    plot.add_argument(
        "--axis",
        metavar="NAME",
        help="sweep table: the column on the x axis (default: the first configuration "
        "column that takes more than one value, seed and trace aside)",
    )
    _add_gantt_window(plot)


def plot_command(args: argparse.Namespace) -> int:
    """Run ``xce-sched plot``: draw the result files into ``--out``; returns 0."""
    from xce_driver.experiments.result_files import plot_results

    for result in args.results:
        path = Path(result)
        if not path.is_file():
            raise UserError(f"{result}: {'is a directory' if path.is_dir() else 'no such file'}")
    _check_figure_outputs(
        "--out", args.out, args.html, [("RESULT", result) for result in args.results]
    )
    with tempfile.TemporaryDirectory(prefix="xce-sched-plot-") as scratch:
        drawn = plot_results(
            [Path(result) for result in args.results],
            Path(scratch),
            slots=args.slots,
            axis=args.axis,
            gantt_window=args.gantt_window,
        )
        page = (drawn.title, drawn.tables, drawn.notes)
        _write_outputs(_figure_outputs("--out", args.out, args.html, drawn.figures, page))
    print(
        f"xce-sched plot: {len(drawn.figures) // 2} figures (PNG and SVG) in "
        f"{printable(args.out)}" + (f", page {printable(args.html)}" if args.html else "")
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``xce-sched``; returns (and exits with) the exit status."""
    parser = build_parser()
    # compare takes every simulate option as common to its runs: they are checked
    # with each run's own (simulate_options), so here they are only kept.
    args, common = parser.parse_known_args(argv)
    if common and args.command != "compare":
        parser.error(f"unrecognized arguments: {' '.join(common)}")
    try:
        if args.command == "compare":
            return compare_command(args, common)
        if args.command == "explain":
            print(
                explain_job(
                    args.recording,
                    args.jobid,
                    args.at,
                    at_offset_s=args.at_s,
                    registry=load_registry(),
                )
            )
            return 0
        command = {
            "emulate": emulate_command,
            "events": events_command,
            "simulate": simulate,
            "replay": replay_command,
            "sweep": sweep_command,
            "plot": plot_command,
        }[args.command]
        return command(args)
    except BrokenPipeError:
        # The reader of stdout went away (| head): say nothing more, as a shell tool
        # killed by SIGPIPE; the files the command writes were written first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
    except _RUN_ERRORS as exc:
        _say_error(_error_text(exc))
        # A plugin that broke its contract: no result can stand (1); else the
        # user's mistake (2).
        return 1 if isinstance(exc, PluginError) else 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
