"""The core's ``conservative`` and ``hybrid`` against the textbook count model
(``benchmarks/naive_conservative.py``, itself checked by hand in
``test_oracle_conservative.py``), job by job.

Plain requests plan on free slots over time, their hosts chosen when they start,
so the core must start every job when the model does, and predict the start the
model first predicts; on hosts of several slots too (a plain job takes free
slots wherever they are), where the model counts the cluster's slots. Trace
prefixes run in the default tier; whole traces are ``slow`` (``.ci/run`` runs
them).
"""

from __future__ import annotations

import pytest
from xce_driver.simulate import run_simulation
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.mapping import MappedWorkload, map_trace
from xce_driver.workloads.swf import read_swf
from xce_schemas import BackfillPolicy

from benchmarks.naive_conservative import simulate as count_model
from benchmarks.naive_easy import simulate as naive_easy
from tests.driver.conftest import shared_trace

SDSC = "SDSC-SP2-1998-4.2-cln.swf.gz"
KTH = "KTH-SP2-1996-2.1-cln.swf.gz"


def _jobs(workload: MappedWorkload) -> list[tuple[int, int, int, int, int]]:
    return [(j.jobid, j.submit_s, j.run_s, j.tasks, j.run_limit_s or 0) for j in workload.jobs]


def core_run(
    workload: MappedWorkload, policy: str, depth: int | None
) -> tuple[dict[int, int], dict[int, int]]:
    """The core's starts and first predictions (s) under ``policy`` (``depth``: a
    hybrid's reservation depth)."""
    result = run_simulation(
        workload, source="oracle", backfill=BackfillPolicy(policy), reservation_depth=depth
    )
    records = result.records.values()
    starts = {r.jobid: r.start_s for r in records if r.start_s is not None}
    predictions = {
        r.jobid: r.first_predicted_start_s for r in records if r.first_predicted_start_s is not None
    }
    return starts, predictions


def agree(workload: MappedWorkload, policy: str, depth: int | None) -> None:
    """Starts and first predictions equal the model's, job by job."""
    slots = workload.hosts * workload.slots_per_host
    theirs = count_model(_jobs(workload), slots, depth=None if policy == "conservative" else depth)
    ours = core_run(workload, policy, depth)
    assert len(ours[0]) == len(theirs[0]) > 0
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]


POLICIES = [("conservative", None), ("hybrid", 2), ("hybrid", 4), ("hybrid", 16)]
POLICY_IDS = ["conservative", "hybrid 2", "hybrid 4", "hybrid 16"]


@pytest.mark.parametrize(("policy", "depth"), POLICIES, ids=POLICY_IDS)
@pytest.mark.parametrize("estimate", ["requested", "exact"])
@pytest.mark.parametrize("trace", [SDSC, KTH], ids=["SDSC-SP2", "KTH-SP2"])
def test_on_trace_prefixes_the_core_is_the_count_model(
    trace: str, estimate: str, policy: str, depth: int | None
) -> None:
    workload = map_trace(read_swf(shared_trace(trace)), max_jobs=1200, estimate=estimate)
    agree(workload, policy, depth)


@pytest.mark.parametrize("slots", [2, 4, 8])
def test_on_hosts_of_several_slots_the_core_is_the_count_model(slots: int) -> None:
    """SDSC-SP2's 128 processors as 128/K hosts of K slots: the same jobs, the same
    starts as the model's 128 slots."""
    trace = read_swf(shared_trace(SDSC))
    workload = map_trace(trace, hosts=128 // slots, slots_per_host=slots, max_jobs=1200)
    agree(workload, "conservative", None)


def test_hybrid_depth_one_starts_what_easy_starts() -> None:
    workload = map_trace(read_swf(shared_trace(SDSC)), max_jobs=1500)
    starts, _ = core_run(workload, "hybrid", 1)
    assert starts == naive_easy(_jobs(workload), workload.hosts)


@pytest.mark.parametrize("slots", [2, 4, 8])
@pytest.mark.parametrize("seed", [1, 3])
def test_with_exact_limits_no_job_starts_after_its_first_prediction(seed: int, slots: int) -> None:
    """Conservative's promise (Mu'alem and Feitelson): with exact run limits, no job
    starts later than the first start predicted for it; on generated workloads over
    hosts of several slots (16 hosts of 8 slots, seed 3, once started jobs up to
    7,837 s late when reservations named hosts)."""
    trace = generate_lublin(1000, nodes=128, seed=seed)  # (its limits are its run times)
    workload = map_trace(trace, hosts=128 // slots, slots_per_host=slots)
    starts, predictions = core_run(workload, "conservative", None)
    assert len(starts) == len(workload.jobs)
    late = {j: (starts[j], p) for j, p in predictions.items() if starts[j] > p}
    assert not late
    assert predictions  # (jobs waited: the promise was put to the test)


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "depth"), POLICIES, ids=POLICY_IDS)
@pytest.mark.parametrize("estimate", ["requested", "exact"])
@pytest.mark.parametrize("trace", [SDSC, KTH], ids=["SDSC-SP2", "KTH-SP2"])
def test_on_whole_traces_the_core_is_the_count_model(
    trace: str, estimate: str, policy: str, depth: int | None
) -> None:
    workload = map_trace(read_swf(shared_trace(trace)), estimate=estimate)
    agree(workload, policy, depth)


@pytest.mark.slow
@pytest.mark.parametrize("trace", [SDSC, KTH], ids=["SDSC-SP2", "KTH-SP2"])
def test_on_whole_traces_with_exact_limits_no_job_starts_late(trace: str) -> None:
    """The machine as hosts of 8 slots (2 and 4 are covered on prefixes above)."""
    slots = 8
    swf = read_swf(shared_trace(trace))
    processors = map_trace(swf, max_jobs=1).hosts
    workload = map_trace(swf, hosts=processors // slots, slots_per_host=slots, estimate="exact")
    starts, predictions = core_run(workload, "conservative", None)
    assert not {j: (starts[j], p) for j, p in predictions.items() if starts[j] > p}
