"""``--policy-config``: the fair-share configuration from a JSON or TOML file, used by
``--policy fairshare``; a bad file is one line naming it and the field, exit 2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from xce_driver.cli import main
from xce_driver.config_files import read_policy_config
from xce_schemas import FairShareFormula

TOML = """
[fairshare]
formula = "lsf"
hist_hours = 2.5
[fairshare.projects]
g1 = 3
[fairshare.users]
u7 = 2
"""


def test_a_toml_file_and_its_json_twin_read_the_same(tmp_path: Path) -> None:
    toml = tmp_path / "p.toml"
    toml.write_text(TOML)
    config = read_policy_config(toml).fairshare
    assert config is not None
    assert (config.formula, config.hist_hours, config.projects, config.users) == (
        FairShareFormula.LSF,
        2.5,
        {"g1": 3},
        {"u7": 2},
    )
    twin = tmp_path / "p.json"
    twin.write_bytes(orjson.dumps({"fairshare": config.model_dump(mode="json")}))
    assert read_policy_config(twin).fairshare == config


def test_simulate_runs_the_fair_share_it_is_given(tmp_path: Path) -> None:
    config = tmp_path / "p.toml"
    config.write_text(TOML)
    report = tmp_path / "r.json"
    argv = ["simulate", "--jobs", "300", "--policy", "fairshare", "--quiet"]
    assert main([*argv, "--policy-config", str(config), "--report", str(report)]) == 0
    assert orjson.loads(report.read_bytes())["policy"] == "fairshare"


@pytest.mark.parametrize(
    ("write", "policy", "message"),
    [
        (
            lambda p: p.write_text('{"fairshare": {"users": {"u1": 0}}}'),
            "fairshare",
            "p.json: fairshare.users.u1: Input should be greater than or equal to 1",
        ),
        (
            lambda p: p.write_text('{"fairshare": {"formula": "pbs"}}'),
            "fairshare",
            "p.json: fairshare.formula: Input should be 'slurm' or 'lsf'",
        ),
        (
            lambda p: p.write_text('{"fairshare": {"half_life": 60}}'),
            "fairshare",
            "p.json: fairshare.half_life: Extra inputs are not permitted",
        ),
        (lambda p: p.write_text("[1, 2]"), "fairshare", "p.json: not an object"),
        (
            lambda p: p.write_text('{"fairshare": {"users": {"a": 1, "a": 2}}}'),
            "fairshare",
            "p.json: key 'a' is given twice",
        ),
        (lambda p: p.write_text("{"), "fairshare", "p.json: not JSON"),
        (lambda p: p.write_bytes(b"\xff"), "fairshare", "p.json: not UTF-8 text"),
        (
            lambda p: p.write_text('{"fairshare": {}}'),
            "builtin_fcfs",
            "it would change nothing: only the fairshare picker (--policy, or a --queues "
            "definition's job_pick_plugin) reads it",
        ),
        (lambda p: p.write_text("{}"), "fairshare", "it would change nothing"),
        (lambda p: None, "fairshare", "p.json: No such file or directory"),
    ],
    ids=[
        "zero shares",
        "an unknown formula",
        "a misspelt field",
        "not an object",
        "a key given twice",
        "not JSON",
        "not UTF-8",
        "another picker",
        "no fairshare table",
        "no such file",
    ],
)
def test_a_bad_policy_config_is_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    write: Callable[[Path], object],
    policy: str,
    message: str,
) -> None:
    path = tmp_path / "p.json"
    write(path)
    report = tmp_path / "r.json"
    argv = ["simulate", "--jobs", "10", "--policy", policy, "--policy-config", str(path)]
    assert main([*argv, "--quiet", "--report", str(report)]) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 1 and message in lines[0], lines
    assert lines[0].startswith(f"xce-sched: error: --policy-config {path}")
    assert not report.exists()


def test_a_queues_own_fair_share_reads_the_policy_config(tmp_path: Path) -> None:
    config = tmp_path / "p.toml"
    config.write_text(TOML)
    queues = tmp_path / "q.json"
    queues.write_text('[{"name": "normal", "priority": 30, "job_pick_plugin": "fairshare"}]')
    argv = ["simulate", "--jobs", "200", "--policy", "sjf", "--quiet", "--queues", str(queues)]
    assert main([*argv, "--policy-config", str(config)]) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--policy", "nosuch", "--policy-config", "p.toml"],
            "unknown picker 'nosuch'; known: ",
        ),
        (["--policy", "fairshare", "--policy-config", ""], "--policy-config needs a file name"),
    ],
    ids=["an unknown picker is said first", "an empty file name"],
)
def test_policy_config_mistakes_said_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    (tmp_path / "p.toml").write_text(TOML)
    argv = [a if a != "p.toml" else str(tmp_path / a) for a in argv]
    assert main(["simulate", "--jobs", "10", "--quiet", *argv]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and message in lines[0], lines
