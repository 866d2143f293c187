"""JSON-lines workloads (``--workload W.jsonl``): jobs with resource requirements.

``read_jsonl`` reads one job a line (``xce_schemas.WorkloadJob``), checks every line
(schema, duplicate jobids, the resreq by the core's parser) and maps the jobs onto
``--hosts`` hosts; the CLI refuses what makes no sense for it.
"""

from __future__ import annotations

import gzip
from fractions import Fraction
from pathlib import Path

import orjson
import pytest
from xce_driver.cli import main
from xce_driver.simulate import run_simulation
from xce_driver.workloads.jsonl import JsonlError, is_jsonl, read_jsonl
from xce_driver.workloads.mapping import DEFAULT_QUEUE_PRIORITY, MappingError, SimJob

from tests.driver.test_cli import read_csv, run_cli

Job = dict[str, object]


def job(jobid: int, submit_s: int, run_s: int, tasks: int = 1, **more: object) -> Job:
    """One line's job."""
    return {"jobid": jobid, "submit_s": submit_s, "run_s": run_s, "tasks": tasks, **more}


def write_jsonl(path: Path, jobs: list[Job]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(j) + b"\n" for j in jobs))
    return path


# --- reading ---------------------------------------------------------------------------


def test_jobs_are_read_with_their_fields_in_submit_order(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "w.jsonl",
        [
            job(7, 50, 10, 2, queue="short", user="ann", project="p1", priority=5),
            job(3, 0, 20, resreq="span[hosts=1]", run_limit_s=60),
            job(2, 50, 30, 4, queue="long"),
        ],
    )
    workload = read_jsonl(path, hosts=3, slots_per_host=4)
    assert workload.jobs == (
        SimJob(3, 0, 20, 1, "normal", "nobody", "span[hosts=1]", None, 60, None),
        SimJob(2, 50, 30, 4, "long", "nobody"),
        SimJob(7, 50, 10, 2, "short", "ann", "", 5, None, "p1"),
    )
    # Each queue a job names, in file order, at the SWF mapping's default priority.
    assert workload.queues == {"short": 30, "normal": 30, "long": 30}
    assert DEFAULT_QUEUE_PRIORITY == 30
    assert (workload.hosts, workload.slots_per_host, workload.origin_s) == (3, 4, 0)
    assert sum(workload.skipped.values()) == 0 and workload.load_factor == 1.0


def test_blank_lines_are_skipped_and_gzip_is_read(tmp_path: Path) -> None:
    text = orjson.dumps(job(1, 0, 5)) + b"\n\n   \n" + orjson.dumps(job(2, 3, 5)) + b"\n"
    (tmp_path / "w.jsonl").write_bytes(text)
    (tmp_path / "w.jsonl.gz").write_bytes(gzip.compress(text))
    plain = read_jsonl(tmp_path / "w.jsonl", hosts=1)
    assert [j.jobid for j in plain.jobs] == [1, 2]
    assert read_jsonl(tmp_path / "w.jsonl.gz", hosts=1).jobs == plain.jobs
    assert is_jsonl("a/W.JSONL.GZ") and is_jsonl("w.jsonl") and not is_jsonl("w.swf.gz")


def test_max_jobs_keeps_the_first_lines_jobs_not_the_first_submitted(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "w.jsonl", [job(1, 30, 5), job(2, 20, 5), job(3, 10, 5)])
    workload = read_jsonl(path, hosts=1, max_jobs=2)
    assert [(j.jobid, j.submit_s) for j in workload.jobs] == [(2, 20), (1, 30)]


def test_the_load_factor_applies(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "w.jsonl", [job(1, 100, 5), job(2, 110, 5), job(3, 131, 5)])
    workload = read_jsonl(path, hosts=1, load_factor=Fraction(2))
    assert [j.submit_s for j in workload.jobs] == [100, 105, 115]
    assert workload.load_factor == 2.0


# --- resource requirements change the decisions ----------------------------------------

MEM_HOG = "rusage[mem=6000]"


@pytest.mark.parametrize(
    ("second", "hosts_when_two", "start_when_one"),
    [
        (MEM_HOG, ("h001", "h002"), 100),
        ("select[mem>4000]", ("h001", "h002"), 100),
        ("select[maxmem>4000] rusage[mem=2000]", ("h001", "h001"), 0),
    ],
    ids=[
        "rusage[mem]: the second needs what the first reserved",
        "select[mem]: the first's reservation leaves too little",
        "both fit in one host's memory: they share it",
    ],
)
def test_a_memory_requirement_keeps_two_jobs_off_one_host(
    tmp_path: Path, second: str, hosts_when_two: tuple[str, str], start_when_one: int
) -> None:
    """C1.T100 (rusage[mem=6000]) at 0 s and C1.T100 (``second``) at 0 s, on hosts of
    2 slots and 8,192 MB: without requirements both share h001 (first fit) and start
    at 0 on one host."""
    with_resreq = [job(1, 0, 100, resreq=MEM_HOG), job(2, 0, 100, resreq=second)]
    without = [job(1, 0, 100), job(2, 0, 100)]
    path = write_jsonl(tmp_path / "mem.jsonl", with_resreq)
    bare = write_jsonl(tmp_path / "bare.jsonl", without)

    def run(file: Path, hosts: int, mem: float) -> dict[int, tuple[int | None, tuple[str, ...]]]:
        workload = read_jsonl(file, hosts=hosts, slots_per_host=2, host_mem_mb=mem)
        records = run_simulation(workload, source=file.name).records
        return {jobid: (r.start_s, r.hosts) for jobid, r in records.items()}

    two = run(path, 2, 8192)
    assert (two[1][1][0], two[2][1][0]) == hosts_when_two
    assert two[1][0] == two[2][0] == 0
    one = run(path, 1, 8192)
    assert (one[1][0], one[2][0]) == (0, start_when_one)  # start_when_one: job 1 ended
    assert run(bare, 1, 0) == {1: (0, ("h001",)), 2: (0, ("h001",))}
    assert run(bare, 2, 0) == {1: (0, ("h001",)), 2: (0, ("h001",))}


def test_simulate_end_to_end_with_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(
        tmp_path / "w.jsonl",
        [
            job(1, 0, 100, 2, resreq="rusage[mem=3000]"),  # 2 × 3,000 MB on h001
            job(2, 10, 50, 1, resreq="rusage[mem=4000]", queue="short"),  # not beside it
            job(3, 20, 10, 1),  # no requirement: fits anywhere
        ],
    )
    jobs_out, report = tmp_path / "j.csv", tmp_path / "r.json"
    argv = ["simulate", "--workload", str(path), "--hosts", "1", "--slots-per-host", "4"]
    argv += ["--host-mem", "8192", "--quiet", "--jobs-out", str(jobs_out)]
    code, out, err = run_cli([*argv, "--report", str(report)], capsys)
    assert (code, out, err) == (0, "", "")
    _, rows = read_csv(jobs_out)
    starts = {row["jobid"]: (row["submit_s"], row["start_s"], row["queue"]) for row in rows}
    assert starts == {
        "1": ("0", "0", "normal"),
        "2": ("10", "100", "short"),
        "3": ("20", "20", "normal"),
    }
    figures = orjson.loads(report.read_bytes())
    assert figures["workload"] == str(path)
    assert (figures["jobs_total"], figures["jobs_finished"], figures["hosts"]) == (3, 3, 1)
    assert figures["max_wait_s"] == 90


def test_events_and_the_queue_file_take_a_jsonl_workload(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "w.jsonl", [job(1, 0, 10, queue="short"), job(2, 5, 10)])
    queues = tmp_path / "q.json"
    queues.write_text('[{"name": "short", "priority": 80}]')
    out = tmp_path / "e.jsonl"
    argv = ["events", "--workload", str(path), "--hosts", "2", "--queues", str(queues)]
    assert main([*argv, "--out", str(out)]) == 0
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    pushed = [j for line in lines if line["type"] == "JOBS_PUSH" for j in line["payload"]["jobs"]]
    assert [(j["jobid"], j["queue"], j["priority"]) for j in pushed] == [
        (1, "short", 80),
        (2, "normal", 30),
    ]


# --- errors: one line naming file, line and field ----------------------------------------


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            [job(1, 0, 1), job(2, 0, 1, 0)],
            "w.jsonl:2: tasks: Input should be greater than or equal to 1",
        ),
        ([job(1, 0, 1), job(1, 5, 1)], "w.jsonl:2: jobid: 1 appears twice (first on line 1)"),
        (
            [job(1, 0, 1, resreq="select[[")],
            "w.jsonl:1: resreq: bad resource requirement at position 7: select[...]: "
            "'[' is never closed",
        ),
        (
            [job(1, 0, 1, resreq="rusage[mem=-2]")],
            "w.jsonl:1: resreq: bad resource requirement at position 11: rusage[mem=...]: "
            "negative value (an amount reserved is 0 or more)",
        ),
        (
            [job(1, 0, 1, 4, resreq="2*{select[type==any]} + 1*{-}")],
            "w.jsonl:1: resreq: the compound requirement '2*{select[type == any]} + 1*{-}' "
            "asks for 3 tasks, the job (tasks) for 4",
        ),
        ([job(1, 0, 1, colour="red")], "w.jsonl:1: colour: Extra inputs are not permitted"),
        ([{"jobid": 1, "submit_s": 0, "run_s": 1}], "w.jsonl:1: tasks: Field required"),
        ([job(1, "0", 1)], "w.jsonl:1: submit_s: Input should be a valid integer"),  # type: ignore[arg-type]
        ([job(1, 0, 1, 2.0)], "w.jsonl:1: tasks: Input should be a valid integer"),  # type: ignore[arg-type]
        ([job(-1, 0, 1)], "w.jsonl:1: jobid: Input should be greater than or equal to 0"),
        (
            [job(1, 1, 9_999_999_999)],
            "w.jsonl:1: run_s: submit_s + run_s must stay below 10,000,000,000 s (the year 2286)",
        ),
        ([job(1, 0, 1, queue="a b")], "w.jsonl:1: queue: String should match pattern"),
        ([job(1, 0, 1, run_limit_s=0)], "w.jsonl:1: run_limit_s: Input should be greater than"),
    ],
    ids=[
        "no tasks",
        "a jobid twice",
        "a resreq that does not parse",
        "a resreq with a bad value",
        "a compound whose parts do not add up to the tasks",
        "an unknown field",
        "a missing field",
        "a number written as a string",
        "a count written as a float",
        "a negative jobid",
        "a job that ends past the year 2286",
        "a queue name with a space",
        "a run limit of 0",
    ],
)
def test_a_bad_line_is_one_line_naming_file_line_and_field(
    tmp_path: Path, lines: list[Job], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "w.jsonl", lines)
    code, out, err = run_cli(["simulate", "--workload", str(path), "--hosts", "2"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"xce-sched: error: {tmp_path}/{message}")
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            b'{"jobid": 1, "submit_s": 0\n',
            "w.jsonl:1: not JSON: unexpected end of data (column 27)",
        ),
        (b"[1, 2]\n", "w.jsonl:1: expected a job, a JSON object, not a list"),
        (b"\n\n", "w.jsonl: no jobs, nothing to simulate"),
        (b"", "w.jsonl: no jobs, nothing to simulate"),
    ],
    ids=["not JSON", "not an object", "only blank lines", "empty"],
)
def test_a_file_that_is_not_a_workload_is_one_line(
    tmp_path: Path, text: bytes, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "w.jsonl").write_bytes(text)
    code, out, err = run_cli(
        ["simulate", "--workload", str(tmp_path / "w.jsonl"), "--hosts", "1"], capsys
    )
    assert (code, out) == (2, "")
    assert err.startswith(f"xce-sched: error: {tmp_path}/{message}")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ([], "--hosts N is required with a JSON-lines workload"),
        (
            ["--hosts", "1", "--swf-memory", "--host-mem", "100"],
            "--swf-memory is not for a JSON-lines workload",
        ),
        (["--hosts", "1", "--swf-queues", "1=a"], "--swf-queues is not for a JSON-lines workload"),
        (
            ["--hosts", "1", "--swf-estimate", "exact"],
            "--swf-estimate exact is not for a JSON-lines workload",
        ),
        (["--hosts", "1", "--jobs", "5"], "--jobs is not for a JSON-lines workload"),
        (
            ["--hosts", "1", "--host-mem", "100"],
            "--host-mem: no job simulated asks for memory",
        ),
    ],
    ids=[
        "no host count",
        "SWF memory",
        "SWF queue map",
        "SWF exact estimates",
        "the generated workload's size",
        "host memory no job asks for",
    ],
)
def test_options_that_make_no_sense_for_jsonl_are_refused(
    tmp_path: Path, options: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "w.jsonl", [job(1, 0, 1, resreq="select[type==any]")])
    code, out, err = run_cli(["simulate", "--workload", str(path), *options], capsys)
    assert (code, out) == (2, "")
    assert message in err and err.startswith("xce-sched: error: ") and err.count("\n") == 1


def test_a_job_asking_for_memory_needs_host_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "w.jsonl", [job(1, 0, 1), job(2, 0, 1, resreq=MEM_HOG)])
    code, out, err = run_cli(["simulate", "--workload", str(path), "--hosts", "1"], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"xce-sched: error: {path}:2: resreq: 'rusage[mem=6000]' asks for memory, and the "
        "hosts have none: give --host-mem MB, the memory of each host\n"
    )
    # Only the kept jobs count: the first line's job asks for none.
    with pytest.raises(MappingError, match="--host-mem: no job simulated asks for memory"):
        read_jsonl(path, hosts=1, host_mem_mb=100, max_jobs=1)


def test_a_missing_file_is_a_workload_error(tmp_path: Path) -> None:
    with pytest.raises(JsonlError, match=r"nope\.jsonl: no such file"):
        read_jsonl(tmp_path / "nope.jsonl", hosts=1)
