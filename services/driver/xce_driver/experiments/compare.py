"""One workload under several configurations: the configurations, the table of
their figures side by side, and the jobs whose start moved most between them.

A configuration is a list of ``xce-sched simulate`` options laid over the options
common to every run (``--config "--policy sjf --backfill easy"``), or one point of
the cross product of varied options (``--vary policy=builtin_fcfs,sjf --vary
backfill=greedy,easy``: four configurations, the last option varying fastest).
The first configuration is the baseline every ratio and every per-job diff is
taken against.

Jobs are matched by jobid, which a simulation keeps from its trace, so the diff is
exact: the same workload under two configurations gives the same jobs.
"""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from xce_driver.cluster.jobs import JobRecord

#: Options a configuration may not set: the outputs of a single run, which a
#: comparison writes for all of them its own way.
PER_RUN_OUTPUTS = (
    "--record",
    "--record-snapshot-interval",
    "--report",
    "--jobs-out",
    "--series-out",
    "--plot",
    "--html",
    "--quiet",
)


class CompareError(ValueError):
    """A configuration that cannot be built; the message names the option."""


@dataclass(frozen=True, slots=True)
class Configuration:
    """One run of a comparison: its label and its ``simulate`` options."""

    label: str
    options: tuple[str, ...]


def option_name(name: str) -> str:
    """``policy`` or ``--policy`` → ``--policy``."""
    return name if name.startswith("--") else f"--{name}"


def refuse_run_outputs(words: Sequence[str]) -> None:
    """Refuse ``simulate`` options among ``words`` that are a single run's outputs.

    Raises:
        CompareError: naming the first such option.
    """
    for option in PER_RUN_OUTPUTS:
        if any(word == option or word.startswith(f"{option}=") for word in words):
            raise CompareError(
                f"{option} is an output of a single run; a comparison writes --report, "
                "--plot and --html for all of its runs"
            )


def configurations(configs: Sequence[str], vary: Sequence[str]) -> list[Configuration]:
    """The configurations of a comparison: each ``--config`` string (none: one empty
    configuration) crossed with every combination of the ``--vary`` options.

    Args:
        configs: option strings, split as a shell would (``"--policy sjf"``).
        vary: ``NAME=V1,V2,...``: an option (with or without its ``--``) and the
            values it takes, in order.

    Raises:
        CompareError: a ``--vary`` without ``=`` or values, an option varied twice,
            a configuration that sets a per-run output (``PER_RUN_OUTPUTS``), or
            fewer than two configurations in all.
    """
    axes: list[tuple[str, list[str]]] = []
    for text in vary:
        name, sep, values = text.partition("=")
        option = option_name(name.strip())
        choices = [value.strip() for value in values.split(",")]
        if not sep or not name.strip() or any(not value for value in choices):
            raise CompareError(f"--vary {text!r}: expected NAME=VALUE,VALUE,...")
        if option in (axis for axis, _ in axes):
            raise CompareError(f"--vary {option} is given twice")
        axes.append((option, choices))
    bases: list[tuple[str, tuple[str, ...]]] = []
    for text in configs or [""]:
        try:
            words = tuple(shlex.split(text))
        except ValueError as exc:
            raise CompareError(f"--config {text!r}: {exc}") from None
        bases.append((text.strip(), words))
    out: list[Configuration] = []
    for (text, words), point in itertools.product(bases, itertools.product(*(v for _, v in axes))):
        varied = [(option, value) for (option, _), value in zip(axes, point, strict=True)]
        options = words + tuple(part for pair in varied for part in pair)
        refuse_run_outputs(options)
        label = ", ".join([text] * bool(text) + [f"{o[2:]}={v}" for o, v in varied])
        out.append(Configuration(label or "as given", options))
    if len(out) < 2:
        raise CompareError(
            "a comparison needs two configurations or more: give --config twice, or --vary "
            "an option with two values or more"
        )
    return out


#: Report fields that are not figures of the run (they say what ran).
_NOT_FIGURES = ("workload", "policy", "backfill", "load_factor")
#: Report fields that hold groups (per user, queue, size), left to the JSON report.
_GROUPS = ("users", "queues", "sizes")


def scalar_figures(report: Mapping[str, object]) -> dict[str, object]:
    """The figures of a report (``Report.to_json``) as one flat mapping: scalars as
    they are, the small tables flattened with dots (``wait_percentiles_s.p90``,
    ``decisions.DISPATCH``, ``jobs_skipped_by_reason.no_processors``); the groups
    (users, queues, sizes) and what says what ran (workload, policy, backfill,
    load factor) left out."""
    out: dict[str, object] = {}
    for name, value in report.items():
        if name in _NOT_FIGURES or name in _GROUPS:
            continue
        if isinstance(value, Mapping):
            for key, inner in value.items():
                out[f"{name}.{key}"] = inner
        else:
            out[name] = value
    return out


def ratio(value: object, base: object) -> float | None:
    """``value / base`` for two numbers (booleans aside), None when either is not a
    number or ``base`` is 0."""
    numbers = (int, float)
    if (
        not isinstance(value, numbers)
        or not isinstance(base, numbers)
        or isinstance(value, bool)
        or isinstance(base, bool)
        or base == 0
    ):
        return None
    return value / base


@dataclass(frozen=True, slots=True)
class MovedJob:
    """A job whose first start differs between two runs (s from the trace origin)."""

    jobid: int
    tasks: int
    submit_s: int
    base_start_s: int
    other_start_s: int

    @property
    def moved_s(self) -> int:
        """other − base start, s: positive when it started later in the other run."""
        return self.other_start_s - self.base_start_s


@dataclass(frozen=True, slots=True)
class JobDiff:
    """The per-job diff of two runs of one workload.

    Attributes:
        moved: the ``top`` jobs whose start moved most (largest |moved_s| first,
            then by jobid), of those that started in both runs.
        jobs_moved: how many jobs started at another time.
        mean_moved_s: mean of moved_s over the jobs that moved (s; None: none did).
        only_base, only_other: jobids that started in one run only (in order).
    """

    moved: tuple[MovedJob, ...]
    jobs_moved: int
    mean_moved_s: float | None
    only_base: tuple[int, ...]
    only_other: tuple[int, ...]


def job_diff(
    base: Mapping[int, JobRecord], other: Mapping[int, JobRecord], top: int = 10
) -> JobDiff:
    """Match the two runs' jobs by jobid and find those whose start moved most."""
    both: list[MovedJob] = []
    only_base: list[int] = []
    only_other: list[int] = []
    for jobid in sorted(base.keys() | other.keys()):
        a, b = base.get(jobid), other.get(jobid)
        a_start = None if a is None else a.start_s
        b_start = None if b is None else b.start_s
        if a is None or b is None or a_start is None or b_start is None:
            if a_start is not None:
                only_base.append(jobid)
            elif b_start is not None:
                only_other.append(jobid)
            continue
        both.append(MovedJob(jobid, a.tasks, a.submit_s, a_start, b_start))
    moved = sorted((job for job in both if job.moved_s), key=lambda j: (-abs(j.moved_s), j.jobid))
    mean = round(sum(job.moved_s for job in moved) / len(moved), 3) if moved else None
    return JobDiff(tuple(moved[:top]), len(moved), mean, tuple(only_base), tuple(only_other))


def figure_rows(
    reports: Sequence[Mapping[str, object]],
) -> list[tuple[str, list[object], list[float | None]]]:
    """The comparison table: for each figure (in the first report's order, then any
    the others add), its value in each report and its ratio to the first."""
    flat = [scalar_figures(report) for report in reports]
    names: dict[str, None] = {}
    for figures in flat:
        names.update(dict.fromkeys(figures))
    rows = []
    for name in names:
        values = [figures.get(name) for figures in flat]
        rows.append((name, values, [ratio(value, values[0]) for value in values]))
    return rows


def diff_json(diff: JobDiff) -> dict[str, object]:
    """A ``JobDiff`` as JSON-ready data."""
    return {
        "jobs_moved": diff.jobs_moved,
        "mean_moved_s": diff.mean_moved_s,
        "moved": [
            {
                "jobid": job.jobid,
                "tasks": job.tasks,
                "submit_s": job.submit_s,
                "base_start_s": job.base_start_s,
                "other_start_s": job.other_start_s,
                "moved_s": job.moved_s,
            }
            for job in diff.moved
        ],
        "started_only_in_base": list(diff.only_base),
        "started_only_in_other": list(diff.only_other),
    }


def labels_of(configurations: Iterable[Configuration]) -> list[str]:
    """The labels, each made unique by a ``#n`` suffix where two are the same."""
    seen: dict[str, int] = {}
    out = []
    for configuration in configurations:
        count = seen[configuration.label] = seen.get(configuration.label, 0) + 1
        out.append(configuration.label if count == 1 else f"{configuration.label} #{count}")
    return out
