"""Third-party pickers loaded through real ``importlib.metadata`` entry points.

Each test installs a tiny distribution into ``tmp_path`` (a module plus a
``*.dist-info`` folder with ``METADATA`` and ``entry_points.txt``) and puts that folder
on ``sys.path``, as ``pip install`` would put it in site-packages.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from xce_core.errors import ConfigError
from xce_driver.cli import main
from xce_driver.plugins import PICKER_GROUP, PREEMPT_POLICY_GROUP, load_registry
from xce_driver.simulate import run_simulation
from xce_driver.workloads.mapping import MappedWorkload, SimJob

from tests.builders import cluster, job_spec

LIFO_SOURCE = '''
"""A last-in, first-out picker: the newest pending job first."""

from xce_core.plugins import PickerBase
from xce_schemas import JobState


class Lifo(PickerBase):
    name = "lifo"

    def __init__(self, config, view):
        self._view = view
        self._pending = {}
        self._order = []
        self._next = 0

    def on_job_push(self, job):
        if job.state is JobState.PEND:
            self._pending[job.jobid] = job

    def on_job_state_change(self, job, new_state):
        if new_state is JobState.PEND:
            self._pending[job.jobid] = job
        else:
            self._pending.pop(job.jobid, None)

    def on_dispatch(self, jobid):
        self._pending.pop(jobid, None)

    def begin_session(self):
        jobs = self._pending.values()
        self._order = sorted(jobs, key=lambda job: (job.submit_ts, job.jobid), reverse=True)
        self._next = 0

    def next_job(self):
        self._view.check_cancel()
        if self._next == len(self._order):
            return None
        job = self._order[self._next]
        self._next += 1
        return job
'''

InstallPlugin = Callable[[str, str, dict[str, str]], None]


@pytest.fixture
def install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InstallPlugin]:
    """Installs a distribution into ``tmp_path``: ``(dist name, entry_points.txt, modules)``.

    The modules it adds are dropped from ``sys.modules`` afterwards.
    """
    modules: list[str] = []

    def install(dist: str, entry_points: str, files: dict[str, str]) -> None:
        for module, source in files.items():
            (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
            modules.append(module)
        info = tmp_path / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
        monkeypatch.syspath_prepend(str(tmp_path))
        importlib.invalidate_caches()

    yield install
    for module in modules:
        sys.modules.pop(module, None)
    importlib.invalidate_caches()


def _workload() -> MappedWorkload:
    # One host. Job 1 holds it for 10 s while jobs 2, 3 and 4 arrive.
    jobs = (
        SimJob(1, 0, 10, 1, "normal", "u1"),
        SimJob(2, 1, 1, 1, "normal", "u1"),
        SimJob(3, 2, 1, 1, "normal", "u1"),
        SimJob(4, 3, 1, 1, "normal", "u1"),
    )
    return MappedWorkload(
        jobs=jobs, skipped={}, hosts=1, slots_per_host=1, origin_s=0, queues={"normal": 30}
    )


def _dispatch_order(policy: str) -> list[tuple[int, int | None]]:
    records = run_simulation(_workload(), source="hand-made", policy=policy).records
    return sorted(((jobid, r.start_s) for jobid, r in records.items()), key=lambda x: x[1] or 0)


def test_entry_point_picker_is_registered_next_to_builtin_fcfs(
    install_plugin: InstallPlugin,
) -> None:
    install_plugin(
        "xce-test-lifo",
        f"[{PICKER_GROUP}]\nlifo = xce_test_lifo:Lifo\n",
        {"xce_test_lifo": LIFO_SOURCE},
    )
    registry = load_registry()
    assert {"builtin_fcfs", "lifo"} <= set(registry.pickers.names())
    assert registry.pickers.get("lifo").__module__ == "xce_test_lifo"


@pytest.mark.parametrize(
    "policy, order",
    [
        ("lifo", [(1, 0), (4, 10), (3, 11), (2, 12)]),
        ("builtin_fcfs", [(1, 0), (2, 10), (3, 11), (4, 12)]),
    ],
    ids=["the plugin starts the newest job first", "builtin_fcfs starts the oldest first"],
)
def test_simulation_dispatches_in_the_plugins_order(
    install_plugin: InstallPlugin, policy: str, order: list[tuple[int, int]]
) -> None:
    install_plugin(
        "xce-test-lifo",
        f"[{PICKER_GROUP}]\nlifo = xce_test_lifo:Lifo\n",
        {"xce_test_lifo": LIFO_SOURCE},
    )
    assert _dispatch_order(policy) == order


def test_cli_runs_the_plugin_policy(
    install_plugin: InstallPlugin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_plugin(
        "xce-test-lifo",
        f"[{PICKER_GROUP}]\nlifo = xce_test_lifo:Lifo\n",
        {"xce_test_lifo": LIFO_SOURCE},
    )
    trace = tmp_path / "t.swf"
    trace.write_text(
        "; MaxProcs: 1\n"
        + "".join(
            f"{job} {submit} -1 {run} 1 -1 -1 1 -1 -1 1 1 -1 -1 1 -1 -1 -1\n"
            for job, submit, run in [(1, 0, 10), (2, 1, 1), (3, 2, 1), (4, 3, 1)]
        )
    )
    jobs_out = tmp_path / "jobs.csv"
    argv = ["simulate", "--workload", str(trace), "--policy", "lifo", "--quiet"]
    assert main([*argv, "--jobs-out", str(jobs_out)]) == 0
    rows = [line.split(",")[:3] for line in jobs_out.read_text().splitlines()[1:]]
    assert rows == [["1", "0", "0"], ["2", "1", "12"], ["3", "2", "11"], ["4", "3", "10"]]
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(
    "entry_points, files, names",
    [
        (
            f"[{PICKER_GROUP}]\nbroken = xce_test_missing_module:Picker\n",
            {},
            ["broken", "xce_test_missing_module:Picker", "xce_test_missing_module"],
        ),
        (
            f"[{PICKER_GROUP}]\nbroken = xce_test_no_class:Picker\n",
            {"xce_test_no_class": "X = 1\n"},
            ["broken", "xce_test_no_class:Picker", "Picker"],
        ),
        (
            f"[{PICKER_GROUP}]\nbroken = xce_test_raises:Picker\n",
            {"xce_test_raises": "raise RuntimeError('half installed')\n"},
            ["broken", "xce_test_raises:Picker", "half installed"],
        ),
    ],
    ids=[
        "entry point naming a missing module",
        "entry point naming a missing class",
        "entry point module failing on import",
    ],
)
def test_broken_entry_point_is_a_config_error(
    install_plugin: InstallPlugin, entry_points: str, files: dict[str, str], names: list[str]
) -> None:
    install_plugin("xce-test-broken", entry_points, files)
    with pytest.raises(ConfigError) as error:
        load_registry()
    message = str(error.value)
    assert message.startswith("picker plugin 'broken' (")
    for name in names:
        assert name in message


def test_entry_point_reusing_builtin_fcfs_is_a_config_error(install_plugin: InstallPlugin) -> None:
    install_plugin(
        "xce-test-lifo",
        f"[{PICKER_GROUP}]\nbuiltin_fcfs = xce_test_lifo:Lifo\n",
        {"xce_test_lifo": LIFO_SOURCE},
    )
    with pytest.raises(ConfigError) as error:
        load_registry()
    assert str(error.value) == "picker 'builtin_fcfs' is registered twice"


def test_broken_plugin_is_one_cli_error_line(
    install_plugin: InstallPlugin, capsys: pytest.CaptureFixture[str]
) -> None:
    install_plugin(
        "xce-test-broken", f"[{PICKER_GROUP}]\nbroken = xce_test_missing_module:Picker\n", {}
    )
    assert main(["simulate", "--jobs", "10", "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("xce-sched: error: picker plugin 'broken' (")


BROKEN_PICKERS = '''
from xce_core.plugins import PickerBase


class Refuses(PickerBase):
    name = "refuses"

    def __init__(self, config, view):
        raise RuntimeError("no licence for this site")


class Repeats(PickerBase):
    """Offers the first job it heard of, every time: a breach once that job runs."""

    name = "repeats"

    def __init__(self, config, view):
        self._first = None

    def on_job_push(self, job):
        if self._first is None:
            self._first = job

    def next_job(self):
        return self._first
'''


@pytest.mark.parametrize(
    ("policy", "status", "message"),
    [
        (
            "refuses",
            2,
            "xce-sched: error: picker 'refuses' could not be made: "
            "RuntimeError: no licence for this site",
        ),
        (
            "repeats",
            1,
            "xce-sched: error: picker 'repeats' returned job 1, which is not pending",
        ),
    ],
    ids=["a picker whose constructor raises", "a picker offering a job that runs"],
)
def test_a_failing_picker_is_one_cli_error_line_and_no_result(
    install_plugin: InstallPlugin,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    policy: str,
    status: int,
    message: str,
) -> None:
    install_plugin(
        "xce-test-failing",
        f"[{PICKER_GROUP}]\nrefuses = xce_test_failing:Refuses\nrepeats = xce_test_failing:Repeats\n",
        {"xce_test_failing": BROKEN_PICKERS},
    )
    report = tmp_path / "report.json"
    argv = ["simulate", "--jobs", "10", "--policy", policy, "--quiet", "--report", str(report)]
    assert main(argv) == status
    out, err = capsys.readouterr()
    assert (out, err.splitlines()) == ("", [message])
    assert not report.exists()


def test_registry_follows_what_is_installed(
    install_plugin: InstallPlugin, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "lifo" not in load_registry().pickers.names()
    install_plugin(
        "xce-test-lifo",
        f"[{PICKER_GROUP}]\nlifo = xce_test_lifo:Lifo\n",
        {"xce_test_lifo": LIFO_SOURCE},
    )
    assert "lifo" in load_registry().pickers.names()
    monkeypatch.undo()  # uninstalled: its folder leaves sys.path
    importlib.invalidate_caches()
    assert "lifo" not in load_registry().pickers.names()
    assert "builtin_fcfs" in load_registry().pickers.names()


NEWEST_FIRST_SOURCE = '''
"""A preemption policy that takes the most recently started candidate alone."""


class NewestFirst:
    name = "newest_first"

    def __init__(self, view):
        self.view = view

    def select_victims(self, preemptor, candidates, trial):
        for job in sorted(candidates, key=lambda job: (-job.start_ts, job.jobid)):
            if trial.fits([job.jobid]):
                return [job.jobid]
        return []
'''


def test_entry_point_preempt_policy_is_registered_and_used(install_plugin: InstallPlugin) -> None:
    install_plugin(
        "xce-test-newest",
        f"[{PREEMPT_POLICY_GROUP}]\nnewest_first = xce_test_newest:NewestFirst\n",
        {"xce_test_newest": NEWEST_FIRST_SOURCE},
    )
    registry = load_registry()
    assert registry.preempt_policies.names() == ["lowest_priority_first", "newest_first"]
    sc = (
        cluster()
        .queue("urgent", 100, preemptible_queues=("normal",), preempt_policy="newest_first")
        .queue("normal", preemptible=True)
        .hosts_n(2)
        .job(1, priority=0)
        .build(registry=registry)
    )
    sc.round(1)
    sc.submit(job_spec(2, priority=5), at_s=2)
    sc.round(2)
    sc.submit(job_spec(3, queue="urgent", priority=9), at_s=3)
    # lowest_priority_first would take job 1 (priority 0); this policy takes job 2.
    assert sc.round(3)[0] == ("PREEMPT", 3, (2,))
