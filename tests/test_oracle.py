"""The core's FCFS starts agree job by job with an independent naive simulator.

``benchmarks/naive_fcfs.py`` scans lists every round; the core uses its picker,
plan and host iterators and free-slot index. On real traces (one slot per host) both
must start every job at the same second. So must the bare-loop floor of the speed
figures (``benchmarks/bare_fcfs.py``), which keeps only counts.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xce_driver.simulate import run_simulation
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.mapping import map_trace
from xce_driver.workloads.swf import read_swf

from benchmarks.bare_fcfs import simulate as bare_simulate
from benchmarks.naive_fcfs import simulate as naive_simulate
from tests.driver.conftest import shared_trace


def agree(trace_jobs: int, workload) -> None:  # type: ignore[no-untyped-def]
    result = run_simulation(workload, source="oracle")
    ours = {r.jobid: r.start_s for r in result.records.values() if r.start_s is not None}
    naive = naive_simulate(
        [(j.jobid, j.submit_s, j.run_s, j.tasks) for j in workload.jobs], workload.hosts
    )
    assert len(ours) == len(naive) > trace_jobs // 2
    assert ours == naive
    assert (
        bare_simulate(
            [(j.jobid, j.submit_s, j.run_s, j.tasks) for j in workload.jobs], workload.hosts
        )
        == naive
    )


@pytest.mark.parametrize(
    "trace",
    ["SDSC-SP2-1998-4.2-cln.swf.gz", "KTH-SP2-1996-2.1-cln.swf.gz", "lublin_256.swf"],
    ids=["SDSC-SP2 prefix", "KTH-SP2 prefix (EASY log)", "overloaded Lublin model"],
)
def test_real_trace_prefix_starts_match_the_naive_oracle(trace: str) -> None:
    agree(1500, map_trace(read_swf(shared_trace(trace)), max_jobs=1500))


def test_generated_workload_starts_match_the_naive_oracle() -> None:
    agree(800, map_trace(generate_lublin(n_jobs=800, nodes=64, seed=3)))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 20), st.integers(1, 7)),
        max_size=40,
    ),
    st.integers(1, 6),
)
def test_the_bare_loop_floor_starts_jobs_as_the_naive_oracle(
    jobs: list[tuple[int, int, int]], hosts: int
) -> None:
    # Arrivals and ends at the same instants, jobs of no length, jobs larger than
    # the cluster: every corner of the round rules.
    numbered = [(jobid, submit, run, tasks) for jobid, (submit, run, tasks) in enumerate(jobs)]
    assert bare_simulate(numbered, hosts) == naive_simulate(numbered, hosts)
