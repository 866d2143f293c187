"""A grid of simulations (traces × option axes × seeds) run on a Dask cluster into
one tidy table.

The spec (TOML, or YAML by its ``.yaml``/``.yml`` suffix)::

    traces = ["generated", "../workloads/KTH-SP2-1996-2.1-cln.swf.gz"]
    seeds = [1, 2]

    [options]           # every run: simulate options without their "--"
    max-jobs = 2000

    [axes]              # each run takes one value of each axis
    policy = ["builtin_fcfs", "sjf", "wfp3"]
    backfill = ["greedy", "easy"]

``generated`` is the embedded Lublin-Feitelson workload (``simulate`` without
``--workload``); any other trace is a path, relative to the spec's folder. A
``true`` option is a flag (``swf-memory = true``); ``false`` leaves it out.

Every run is ``xce-sched simulate`` with its options, so a row's figures are those
``simulate --report`` gives for the same options, byte for byte. Each run is keyed
by a hash of its options (workload path aside), its seed and its trace's SHA-256
(``RunSpec.key``): its result is kept in ``OUT/runs/<key>.json`` as soon as it
arrives, so a sweep killed half-way keeps what it finished, and running a sweep
again runs only what has no result yet (failed runs are run again: they may have
failed for a reason since fixed). A run that fails is a row with its error, never
a lost sweep; a worker that dies mid-run has its run started again elsewhere
(Dask's own retries).

The table (``OUT/results.parquet`` through pyarrow, and ``OUT/results.csv``) has one
row per run, in the spec's order: ``key``, ``trace``, ``trace_sha256``, ``seed``,
one column per axis (its option name with ``_`` for ``-``), ``options`` (the whole
command line), ``error`` (empty when it ran), ``wall_s``, then every figure of
the report (``compare.scalar_figures``: ``mean_wait_s``,
``wait_percentiles_s.p90``, ...).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import os
import re
import shlex
import signal
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from xce_schemas.errors import describe

from xce_driver.experiments.compare import PER_RUN_OUTPUTS, option_name, scalar_figures
from xce_driver.workloads.swf import printable

#: The trace name of the embedded generated workload.
GENERATED = "generated"
#: How long to wait for an existing Dask scheduler to answer, s.
CONNECT_TIMEOUT_S = 10
#: Bumped when a stored result would no longer be what a run gives.
RESULT_VERSION = 2
#: At most this many runs in a sweep.
MAX_RUNS = 100_000
#: Options whose value is a file that the run reads: its SHA-256 is part of the
#: run's key, and a relative path is the spec folder's, as a trace's.
FILE_OPTIONS = ("--queues", "--policy-config")
#: An option's name in a spec: a simulate option without (or with) its ``--``.
_OPTION_NAME = re.compile(r"(--)?[a-z][a-z0-9]*(-[a-z0-9]+)*")
#: A Dask scheduler's address: tcp:// or tls://, a host (an IPv6 one in brackets)
#: and a port.
_ADDRESS = re.compile(r"(tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):([0-9]{1,5})")

#: The value of an option in a spec: a word, a number or a flag.
OptionValue = str | int | float | bool


class SweepError(ValueError):
    """A sweep spec or output folder that cannot be used; one line naming the file
    and the field."""


class SweepSpec(BaseModel):
    """A sweep spec file, as checked at the boundary (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    traces: Annotated[list[str], Field(min_length=1)]
    seeds: Annotated[list[Annotated[int, Field(ge=0, le=2**64 - 1)]], Field(min_length=1)] = [1]
    options: dict[str, OptionValue] = {}
    axes: dict[str, Annotated[list[OptionValue], Field(min_length=1)]] = {}


def read_spec(path: str | Path) -> SweepSpec:
    """Read and check a sweep spec.

    Raises:
        SweepError: not TOML/YAML, a field the spec does not have or of the wrong
            type (naming it), an option that is a per-run output, or an option both
            fixed and varied.
        OSError: the file cannot be read.
    """
    path = Path(path)
    text = path.read_bytes()
    try:
        if path.suffix in (".yaml", ".yml"):
            document = yaml.safe_load(text)
        else:
            document = tomllib.loads(text.decode("utf-8"))
    except (tomllib.TOMLDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        kind = "YAML" if path.suffix in (".yaml", ".yml") else "TOML"
        raise SweepError(f"{path}: not {kind}: {str(exc).splitlines()[0]}") from None
    if not isinstance(document, dict):
        raise SweepError(f"{path}: expected a table of traces, seeds, options and axes")
    try:
        spec = SweepSpec.model_validate(document)
    except ValidationError as exc:
        raise SweepError(f"{path}: {describe(exc)}") from None
    for name in [*spec.options, *spec.axes]:
        if not _OPTION_NAME.fullmatch(name):
            raise SweepError(
                f"{path}: {name!r}: not an option name (a simulate option without its "
                "--: max-jobs, policy, ...)"
            )
        option = option_name(name)
        if option in PER_RUN_OUTPUTS or option in ("--workload", "--seed"):
            where = "traces and seeds" if option in ("--workload", "--seed") else "OUT/runs"
            raise SweepError(f"{path}: {name}: a sweep sets it itself ({where})")
    both = sorted(set(map(option_name, spec.options)) & set(map(option_name, spec.axes)))
    if both:
        raise SweepError(f"{path}: {both[0][2:]} is both an option and an axis")
    lists: list[tuple[str, Sequence[object]]] = [("traces", spec.traces), ("seeds", spec.seeds)]
    lists += [(f"axes.{name}", axis) for name, axis in spec.axes.items()]
    for field, values in lists:
        seen: set[str] = set()
        for index, value in enumerate(values):
            if repr(value) in seen:
                raise SweepError(f"{path}: {field}[{index}]: {value!r} is given twice")
            seen.add(repr(value))
    runs = len(spec.traces) * len(spec.seeds) * math.prod(map(len, spec.axes.values()))
    if runs > MAX_RUNS:
        raise SweepError(f"{path}: {runs:,} runs, more than the ceiling of {MAX_RUNS:,}")
    return spec


def option_words(name: str, value: OptionValue) -> list[str]:
    """The command-line words of one option: ``--name value``, ``--flag`` for True,
    nothing for False."""
    if value is True:
        return [option_name(name)]
    if value is False:
        return []
    return [option_name(name), str(value)]


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One run of a sweep.

    Attributes:
        key: its result's key (hex SHA-256; see ``plan_runs``).
        trace: the trace as the spec names it; ``trace_sha256`` the file's
            checksum (``generated`` for the embedded workload).
        seed: its ``--seed``.
        axes: each axis's column name → the value this run takes.
        options: the whole ``simulate`` command line of the run.
        files: each file the run reads (its trace, its ``FILE_OPTIONS``) → its
            SHA-256 when the sweep was planned; a run whose file changed since
            fails rather than keep figures under a key they are not of.
    """

    key: str
    trace: str
    trace_sha256: str
    seed: int
    axes: dict[str, OptionValue]
    options: tuple[str, ...]
    files: dict[str, str]


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def column_name(name: str) -> str:
    """An axis's column: its option name without ``--``, ``_`` for ``-``."""
    return option_name(name)[2:].replace("-", "_")


def plan_runs(
    spec: SweepSpec, base: Path, canonical: Callable[[tuple[str, ...]], object]
) -> list[RunSpec]:
    """Every run of ``spec`` (traces, then axes in order, the last varying fastest,
    then seeds), paths (traces, ``FILE_OPTIONS``) resolved against ``base`` (the
    spec's folder).

    A run's key is the SHA-256 of ``RESULT_VERSION``, its trace's SHA-256 (or
    ``generated``), the SHA-256 of each file option's file, and
    ``canonical(options)``: what the options mean (the parsed options, paths
    aside), so that the same run spelled in another order has the same key.

    Args:
        canonical: the meaning of a run's options; raises ``SweepError`` for
            options that are not a run (naming them).

    Raises:
        SweepError: a trace or file that is not a readable file, or options that
            are not a run.
    """
    checksums: dict[Path, str] = {}

    def checksum(what: str, name: str) -> tuple[str, str]:
        path = (base / name).resolve()
        if path not in checksums:
            try:
                checksums[path] = file_sha256(path)
            except OSError as exc:
                raise SweepError(f"{what} {name}: {exc.strerror or exc}") from None
        return str(path), checksums[path]

    fixed: list[str] = []
    files: dict[str, str] = {}
    file_keys: dict[str, str] = {}
    for name, value in spec.options.items():
        words = option_words(name, value)
        if option_name(name) in FILE_OPTIONS and len(words) == 2:
            path, digest = checksum(f"options.{name}:", words[1])
            words[1], files[path], file_keys[option_name(name)] = path, digest, digest
        fixed += words
    runs = []
    for trace in spec.traces:
        workload: list[str] = []
        trace_files = dict(files)
        trace_sum = GENERATED
        if trace != GENERATED:
            path, trace_sum = checksum("traces:", trace)
            workload = ["--workload", path]
            trace_files[path] = trace_sum
        for point in itertools.product(*spec.axes.values()):
            varied = dict(zip(spec.axes, point, strict=True))
            words = []
            run_files, run_keys = dict(trace_files), dict(file_keys)
            for name, value in varied.items():
                pair = option_words(name, value)
                if option_name(name) in FILE_OPTIONS and len(pair) == 2:
                    path, digest = checksum(f"axes.{name}:", pair[1])
                    pair[1], run_files[path], run_keys[option_name(name)] = path, digest, digest
                words += pair
            for seed in spec.seeds:
                options = (*fixed, *words, "--seed", str(seed))
                meaning = {
                    "version": RESULT_VERSION,
                    "trace": trace_sum,
                    "files": run_keys,
                    "options": canonical(options),
                }
                key = hashlib.sha256(
                    orjson.dumps(meaning, option=orjson.OPT_SORT_KEYS, default=str)
                ).hexdigest()
                axes = {column_name(name): value for name, value in varied.items()}
                runs.append(
                    RunSpec(key, trace, trace_sum, seed, axes, (*workload, *options), run_files)
                )
    return runs


#: What runs one simulation: its options → {"report": Report JSON, or None;
#: "error": None, or the one-line error}.
Runner = Callable[[tuple[str, ...]], dict[str, Any]]


def result_path(out: Path, key: str) -> Path:
    """Where the result of the run ``key`` is kept."""
    return out / "runs" / f"{key}.json"


def stored(out: Path, run: RunSpec) -> dict[str, Any] | None:
    """The stored result of ``run``: None when there is none, or none that can be
    its (unreadable, cut short, of another key, with neither a report nor an
    error)."""
    try:
        result = json.loads(result_path(out, run.key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(result, dict) or result.get("key") != run.key:
        return None
    if not isinstance(result.get("report"), dict) and not result.get("error"):
        return None
    return result


def _changed(files: Mapping[str, str]) -> str | None:
    """The first of ``files`` whose SHA-256 is no longer the planned one."""
    for path, digest in files.items():
        try:
            now = file_sha256(Path(path))
        except OSError:
            now = ""
        if now != digest:
            return path
    return None


def _timed_run(
    runner: Runner, options: tuple[str, ...], files: Mapping[str, str]
) -> dict[str, Any]:
    """Run on a worker: the runner's result and its wall time (s); an error when a
    file it reads is not (or no longer) the one the sweep was planned with."""
    started = time.perf_counter()
    changed = _changed(files)
    result = runner(options) if changed is None else {}
    changed = changed or _changed(files)
    if changed is not None:
        result = {
            "report": None,
            "error": f"{changed} changed while the sweep ran (its SHA-256 is not the "
            "planned one); run the sweep again",
        }
    return {**result, "wall_s": round(time.perf_counter() - started, 3)}


def _keep(out: Path, run: RunSpec, result: Mapping[str, Any]) -> None:
    """Write a run's result, whole or not at all (JSON; a path that is not valid
    UTF-8 kept by its escapes)."""
    document = {
        "key": run.key,
        "trace": run.trace,
        "trace_sha256": run.trace_sha256,
        "seed": run.seed,
        "axes": run.axes,
        "options": list(run.options),
        "error": result.get("error"),
        "wall_s": result.get("wall_s"),
        "report": result.get("report"),
    }
    target = result_path(out, run.key)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            json.dump(document, handle, indent=2)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
    finally:
        with suppress(OSError):
            os.unlink(temporary)


@dataclass(frozen=True, slots=True)
class SweepOutcome:
    """What a sweep did: runs in all, already done before, run now, failed now."""

    runs: int
    already_done: int
    ran: int
    failed: int


@contextmanager
def dask_client(scheduler_address: str | None, workers: int) -> Iterator[Any]:
    """A Dask client: of the cluster at ``scheduler_address``, or of a new local
    cluster of ``workers`` one-thread worker processes (closed on exit).

    The local cluster's processes are started with SIGINT ignored: Ctrl-C in a
    terminal reaches the whole process group, and the sweep, not each worker,
    answers it (the workers end with the cluster).

    Raises:
        SweepError: not a scheduler address, or no Dask scheduler answered there
            within ``CONNECT_TIMEOUT_S``; a local cluster that did not start.
    """
    from distributed import Client, LocalCluster  # a second to import: only when run

    if scheduler_address is not None:
        with _connect(Client, scheduler_address) as client:
            yield client
        return
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
    except Exception as exc:  # any failure to start is one line
        raise SweepError(f"the local Dask cluster did not start: {exc}") from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    with cluster, Client(cluster) as client:
        yield client


@contextmanager
def _connect(client_class: Any, address: str) -> Iterator[Any]:
    """A client of the scheduler at ``address``, connected in a thread of its own so
    that a peer that is not a Dask scheduler (an HTTP server, a dashboard port)
    cannot hold the sweep past ``CONNECT_TIMEOUT_S``.

    Raises:
        SweepError: naming ``--scheduler-address`` and why.
    """
    where = f"--scheduler-address {address}"
    match = _ADDRESS.fullmatch(address)
    if match is None or not 0 < int(match.group(3)) < 65536:
        raise SweepError(f"{where}: not a Dask scheduler address (tcp://HOST:PORT)")
    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            box["client"] = client_class(address, timeout=f"{CONNECT_TIMEOUT_S}s")
        except BaseException as exc:  # any failure to connect is said in one line
            box["error"] = exc

    thread = threading.Thread(target=connect, name="xce-sweep-connect", daemon=True)
    thread.start()
    thread.join(CONNECT_TIMEOUT_S + 5)
    if "client" not in box:
        error = box.get("error")
        why = (
            f"no Dask scheduler answered within {CONNECT_TIMEOUT_S} s"
            if error is None
            else f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        )
        raise SweepError(f"{where}: {why}")
    with box["client"] as client:
        yield client


def run_sweep(
    runs: Sequence[RunSpec],
    runner: Runner,
    out: Path,
    *,
    scheduler_address: str | None = None,
    workers: int = 2,
    on_done: Callable[[RunSpec, dict[str, Any]], None] | None = None,
) -> SweepOutcome:
    """Run every run of ``runs`` that has no stored result (or a failed one) on Dask,
    keeping each result in ``out/runs`` as it arrives.

    Args:
        runs: the plan (``plan_runs``).
        runner: runs one simulation (a module-level function, so that it pickles).
        out: the output folder (made when missing).
        scheduler_address: an existing Dask scheduler; None: a local cluster.
        workers: worker processes of the local cluster.
        on_done: called with each run and its result as it is kept (progress).

    Raises:
        SweepError: the Dask scheduler cannot be reached (``dask_client``).
        OSError: the output folder cannot be written.
    """
    (out / "runs").mkdir(parents=True, exist_ok=True)
    todo = []
    for run in runs:
        previous = stored(out, run)
        if previous is None or previous.get("error"):
            todo.append(run)
    done_before = len(runs) - len(todo)
    failed = 0
    if todo:
        from distributed import as_completed

        with dask_client(scheduler_address, workers) as client:
            futures = {
                client.submit(
                    _timed_run, runner, run.options, run.files, key=f"xce-run-{run.key}"
                ): run
                for run in {run.key: run for run in todo}.values()
            }
            for future in as_completed(futures):
                run = futures[future]
                try:
                    result = future.result()
                except Exception as exc:  # a run that broke its worker: a row, not a loss
                    result = {"report": None, "error": f"{type(exc).__name__}: {exc}"}
                failed += bool(result.get("error"))
                _keep(out, run, result)
                if on_done is not None:
                    on_done(run, result)
    return SweepOutcome(len(runs), done_before, len(todo), failed)


def rows(runs: Sequence[RunSpec], out: Path) -> list[dict[str, object]]:
    """The table's rows: one per run with a stored result, in plan order."""
    table = []
    for run in runs:
        result = stored(out, run)
        if result is None:
            continue
        report = result.get("report")
        row: dict[str, object] = {
            "key": run.key,
            "trace": run.trace,
            "trace_sha256": run.trace_sha256,
            "seed": run.seed,
            **run.axes,
            "options": shlex.join(run.options),
            "error": result.get("error") or "",
            "wall_s": result.get("wall_s"),
        }
        if isinstance(report, dict):
            row.update(scalar_figures(report))
        table.append(row)
    return table


def write_tables(table: Sequence[Mapping[str, object]], out: Path) -> tuple[Path, Path]:
    """Write the rows as ``results.parquet`` and ``results.csv`` (columns in first
    appearance order; a figure a row lacks is null / empty). Each file is written
    beside its path, then renamed into place."""
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, None] = {}
    for row in table:
        columns.update(dict.fromkeys(row))
    full = [{name: row.get(name) for name in columns} for row in table]
    arrays = {name: _column([row[name] for row in full]) for name in columns}
    parquet, csv_path = out / "results.parquet", out / "results.csv"
    temporary = out / ".results.parquet.part"
    # Through a file object: pyarrow takes a path as UTF-8, which a name need not be.
    with temporary.open("wb") as handle:
        pq.write_table(pa.table(arrays) if arrays else pa.table({}), handle)
    os.replace(temporary, parquet)
    temporary = out / ".results.csv.part"
    with temporary.open("w", newline="", encoding="utf-8", errors="surrogateescape") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in full:
            writer.writerow(["" if row[name] is None else row[name] for name in columns])
    os.replace(temporary, csv_path)
    return parquet, csv_path


def _column(values: list[object]) -> Any:
    """A pyarrow array of one column: its own type when the values agree (numbers
    mixing int and float become float), else text."""
    import pyarrow as pa

    # A path that is not valid UTF-8 (its undecodable bytes kept as surrogates) is
    # shown with U+FFFD, as everywhere a name is shown.
    values = [printable(value) if isinstance(value, str) else value for value in values]
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([None if value is None else str(value) for value in values])
