"""Tests of the Lublin-Feitelson (2003) batch workload generator.

Expected values come from the model's batch parameters (m_lublin99.c); where a test
needs a derived quantity (a gamma probability, a bucket weight) it computes it here by
numerical integration of the gamma density, independently of the module's own code.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import statistics
import subprocess
import sys
from functools import cache

import pytest
from xce_driver.workloads import lublin
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.swf import SWF_FIELDS, SwfRecord, SwfTrace, parse_record

N_STATS = 20_000


@cache
def _trace(n_jobs: int, nodes: int, seed: int) -> SwfTrace:
    return generate_lublin(n_jobs=n_jobs, nodes=nodes, seed=seed)


def _gamma_pdf(x: float, shape: float, scale: float) -> float:
    if x <= 0.0:
        return 0.0
    return math.exp(
        (shape - 1.0) * math.log(x) - x / scale - math.lgamma(shape) - shape * math.log(scale)
    )


def _gamma_mass(lo: float, hi: float, shape: float, scale: float, steps: int = 2000) -> float:
    """P(lo <= X <= hi) for X ~ gamma(shape, scale), by composite Simpson's rule."""
    h = (hi - lo) / steps
    total = _gamma_pdf(lo, shape, scale) + _gamma_pdf(hi, shape, scale)
    for i in range(1, steps):
        total += (4 if i % 2 else 2) * _gamma_pdf(lo + i * h, shape, scale)
    return total * h / 3.0


def _is_pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


# --- determinism -----------------------------------------------------------------------


def test_same_seed_gives_identical_records() -> None:
    first = generate_lublin(n_jobs=3000, nodes=128, seed=42)
    second = generate_lublin(n_jobs=3000, nodes=128, seed=42)
    assert first.records == second.records
    assert first.header == second.header
    assert first.source == second.source


def test_different_seeds_give_different_records() -> None:
    a = generate_lublin(n_jobs=500, nodes=128, seed=1).records
    b = generate_lublin(n_jobs=500, nodes=128, seed=2).records
    assert a != b
    # Not just one field: the three drawn quantities all differ somewhere.
    assert [r.submit_time for r in a] != [r.submit_time for r in b]
    assert [r.run_time for r in a] != [r.run_time for r in b]
    assert [r.allocated_procs for r in a] != [r.allocated_procs for r in b]


def test_prefix_is_stable_when_more_jobs_are_asked_for() -> None:
    short = generate_lublin(n_jobs=200, nodes=64, seed=9).records
    long = generate_lublin(n_jobs=1000, nodes=64, seed=9).records
    assert long[:200] == short


_DIGEST_SCRIPT = """
import hashlib
import itertools
from xce_driver.workloads.lublin import generate_lublin
trace = generate_lublin(n_jobs=2000, nodes=128, seed=5)
print(hashlib.sha256(repr(trace.records).encode()).hexdigest())
"""


def test_output_is_byte_identical_under_any_hash_seed() -> None:
    digests = set()
    for hash_seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", _DIGEST_SCRIPT],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(done.stdout.strip())
    here = hashlib.sha256(repr(_trace(2000, 128, 5).records).encode()).hexdigest()
    assert digests == {here}


# --- record shape ----------------------------------------------------------------------


def test_records_fields_and_header() -> None:
    trace = generate_lublin(n_jobs=300, nodes=64, seed=3)
    assert trace.source == "lublin-feitelson-2003(n_jobs=300, nodes=64, seed=3)"
    assert len(trace.records) == 300
    assert [r.job_number for r in trace.records] == list(range(1, 301))
    for r in trace.records:
        assert r.allocated_procs == r.requested_procs
        assert r.run_time >= 1
        assert r.submit_time >= 0
        assert (r.wait_time, r.requested_time, r.status, r.queue_number) == (-1, -1, 1, 1)
        assert (r.avg_cpu_time, r.used_memory_kb, r.requested_memory_kb) == (-1, -1, -1)
        assert (r.user_id, r.group_id, r.executable) == (-1, -1, -1)
        assert (r.partition_number, r.preceding_job, r.think_time) == (-1, -1, -1)
    header = trace.header
    assert header.max_nodes == 64
    assert header.max_procs == 64
    assert header.unix_start_time == 0
    assert header.values["UnixStartTime"] == "0"
    assert header.int_value("MaxJobs") == 300
    assert header.queue_names() == {1: "batch"}
    notes = " ".join(header.repeated["Note"])
    assert "Lublin" in notes and "seed=3" in notes
    assert "Lublin-Feitelson" in header.values["Information"]
    assert "seed 3" in header.values["Information"]


def test_records_survive_an_swf_text_round_trip() -> None:
    for record in _trace(2000, 128, 5).records[:500]:
        fields = []
        for name in SWF_FIELDS:
            value = getattr(record, name)
            fields.append(str(int(value)) if isinstance(value, float) else str(value))
        assert parse_record(" ".join(fields), where="generated") == record


def test_run_times_are_bounded_by_the_model_cap() -> None:
    cap = int(math.exp(12))  # TOO_MUCH_TIME = 12 in m_lublin99.c
    run_times = [r.run_time for r in _trace(N_STATS, 128, 11).records]
    assert min(run_times) >= 1
    assert max(run_times) <= cap
    assert _trace(N_STATS, 128, 11).header.int_value("MaxRuntime") == cap


# --- sizes -----------------------------------------------------------------------------


@pytest.mark.parametrize("nodes", [1, 2, 3, 5, 16, 100, 128, 1000, 4096])
def test_sizes_stay_within_the_machine(nodes: int) -> None:
    sizes = [r.allocated_procs for r in generate_lublin(n_jobs=3000, nodes=nodes, seed=4).records]
    assert min(sizes) == 1
    assert max(sizes) <= nodes
    if nodes == 1:
        assert set(sizes) == {1}
    if nodes >= 16:
        # The upper stage of the two-stage uniform reaches log2(nodes): the biggest
        # sizes get close to the machine.
        assert max(sizes) >= nodes // 2


def test_power_of_two_sizes_fit_a_machine_that_is_not_a_power_of_two() -> None:
    sizes = [r.allocated_procs for r in generate_lublin(n_jobs=N_STATS, nodes=100).records]
    assert max(sizes) <= 100
    pow2 = {s for s in sizes if _is_pow2(s)}
    assert max(pow2) == 64
    assert any(64 < s <= 100 for s in sizes)  # non-power-of-two jobs still reach the top


def test_serial_fraction_matches_the_model() -> None:
    sizes = [r.allocated_procs for r in _trace(N_STATS, 128, 7).records]
    serial = sum(s == 1 for s in sizes) / len(sizes)
    # SERIAL_PROB_BATCH = 0.2927; binomial sd over 20,000 jobs is 0.0032.
    assert abs(serial - 0.2927) < 0.012


def test_power_of_two_fraction_matches_the_model() -> None:
    sizes = [r.allocated_procs for r in _trace(N_STATS, 128, 7).records]
    parallel_pow2 = sum(s > 1 and _is_pow2(s) for s in sizes) / len(sizes)
    other = sum(not _is_pow2(s) for s in sizes) / len(sizes)
    # POW2_PROB_BATCH = 0.6686 of all jobs are drawn as powers of two; the remaining
    # 1 - 0.2927 - 0.6686 = 0.0387 are "other" sizes, about 18% of which round to a
    # power of two anyway (e.g. 2**1.25 -> 2), so the observed fraction is ~0.676.
    assert 0.6686 - 0.01 < parallel_pow2 < 0.6686 + 0.0387
    assert abs(parallel_pow2 - 0.676) < 0.012
    # Genuinely non-power-of-two sizes: 0.0387 * ~0.82 = ~0.032.
    assert 0.022 < other < 0.0387


def test_size_distribution_follows_the_two_stage_uniform() -> None:
    sizes = [r.allocated_procs for r in _trace(N_STATS, 128, 7).records]
    parallel = [s for s in sizes if s > 1]
    # log2(size) of a parallel job: U[1.2, 5] w.p. 0.875, else U[5, 7]. A job is at
    # most 32 when its draw is in the lower stage, or in [5, 5.5) for a power-of-two
    # job (rounds to 2**5), or in [5, log2(32.5)] for another job.
    pow2_given_parallel = 0.6686 / (1 - 0.2927)
    upper_stage_le_32 = (
        pow2_given_parallel * 0.5 / 2 + (1 - pow2_given_parallel) * (math.log2(32.5) - 5) / 2
    )
    expected_le_32 = 0.875 + 0.125 * upper_stage_le_32  # ~0.905
    at_most_32 = sum(s <= 32 for s in parallel) / len(parallel)
    assert abs(at_most_32 - expected_le_32) < 0.012
    # A power-of-two job is 128 only when its draw lands in [6.5, 7]: 0.125 * 0.25.
    full_machine = sum(s == 128 for s in sizes) / len(sizes)
    assert abs(full_machine - 0.6686 * 0.125 * 0.25) < 0.005
    # The smallest parallel job is 2 (ULOW = 1.2 -> 2**1.2 = 2.3 rounds to 2).
    assert min(parallel) == 2


# --- run times -------------------------------------------------------------------------


def test_run_time_median_and_mean_are_in_the_model_range() -> None:
    run_times = [r.run_time for r in _trace(N_STATS, 128, 7).records]
    # log(run time) mixes gamma(6.57, 0.823) (median ~ e^5.14 ~ 170 s) and
    # gamma(639.1, 0.0156) (median ~ e^9.97 ~ 6 h) with p ~ 0.66 on average: the
    # overall median is ~ 800 s and the mean ~ 9,500 s (measured over 400,000 jobs).
    assert 600 <= statistics.median(run_times) <= 1100
    assert 8000 <= statistics.mean(run_times) <= 11000


def test_long_runs_become_likelier_with_size() -> None:
    records = _trace(N_STATS, 128, 7).records
    threshold = math.exp(8.0)  # between the two gammas of log run time
    # Probability that the short gamma alone exceeds the threshold.
    q = 1.0 - _gamma_mass(0.0, 8.0, 6.57, 0.823)
    for size, tolerance in ((1, 0.03), (128, 0.09)):
        p = -0.003 * size + 0.6986  # PA_BATCH * size + PB_BATCH
        expected = (1.0 - p) + p * q
        runs = [r.run_time for r in records if r.allocated_procs == size]
        assert len(runs) > 200
        observed = sum(t > threshold for t in runs) / len(runs)
        assert abs(observed - expected) < tolerance, (size, observed, expected)
    serial = [r.run_time for r in records if r.allocated_procs == 1]
    biggest = [r.run_time for r in records if r.allocated_procs == 128]
    assert statistics.median(biggest) > 10 * statistics.median(serial)


# --- arrivals --------------------------------------------------------------------------


def test_submit_times_are_non_decreasing_and_start_near_zero() -> None:
    submits = [r.submit_time for r in _trace(N_STATS, 128, 7).records]
    assert all(a <= b for a, b in itertools.pairwise(submits))
    assert 0 <= submits[0] < 86_400
    gaps = [b - a for a, b in itertools.pairwise(submits)]
    # log(gap) at rush hours ~ gamma(6.0415 * 1.0519, 0.8531): median e^5.14 ~ 171 s,
    # shortened where the daily-cycle weight is above 1; measured median ~ 150 s (it
    # is ~ 115 s if ARAR is left out). The heavy tail (up to e^13 s) makes the mean
    # ~ 3,500 s (3,370-3,870 over seeds 1-10).
    assert 130 <= statistics.median(gaps) <= 175
    assert 3000 < submits[-1] / len(submits) < 4300


def test_daily_cycle_weights_are_the_model_gamma() -> None:
    weights = lublin.DAILY_CYCLE_WEIGHTS
    assert len(weights) == 48
    assert abs(sum(weights) / 48 - 1.0) < 1e-12
    # Bucket k holds the gamma(6.1271, 5.2740) mass on [i - 0.5, i + 0.5] for the point
    # i in 11..58 with (i - 1) mod 48 == k, normalised to mean 1.
    raw = [0.0] * 48
    for i in range(11, 59):
        raw[(i - 1) % 48] = _gamma_mass(i - 0.5, i + 0.5, 6.1271, 5.2740, steps=200)
    mean = sum(raw) / 48
    for k in range(48):
        assert weights[k] == pytest.approx(raw[k] / mean, rel=1e-6), k
    assert weights.index(max(weights)) == 26  # 13:00-13:30
    assert weights.index(min(weights)) == 9  # 04:30-05:00
    assert max(weights) / min(weights) > 6


def test_daily_cycle_is_visible_in_arrivals() -> None:
    submits = [r.submit_time for r in _trace(N_STATS, 128, 7).records]
    per_hour = [0] * 24
    per_bucket = [0] * 48
    for t in submits:
        per_hour[(t % 86_400) // 3600] += 1
        per_bucket[(t % 86_400) // 1800] += 1
    weights = lublin.DAILY_CYCLE_WEIGHTS
    # Peak hours 10:00-16:00 against night 02:00-06:00, per hour: the model's weights
    # give a ratio of ~4.9.
    peak_rate = sum(per_hour[10:16]) / 6
    night_rate = sum(per_hour[2:6]) / 4
    assert peak_rate > 3.5 * night_rate
    # Shares of all arrivals, against the model's expected share sum(w) / 48.
    peak_share = sum(per_bucket[20:32]) / len(submits)
    night_share = sum(per_bucket[4:12]) / len(submits)
    assert abs(peak_share - sum(weights[20:32]) / 48) < 0.04  # expected 0.398
    assert abs(night_share - sum(weights[4:12]) / 48) < 0.015  # expected 0.055
    # The busiest hour is around midday, the quietest in the small hours.
    assert per_hour.index(max(per_hour)) in range(10, 16)
    assert per_hour.index(min(per_hour)) in range(2, 7)


# --- arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_jobs": 0}, "n_jobs"),
        ({"n_jobs": -5}, "n_jobs"),
        ({"n_jobs": 10.0}, "n_jobs"),
        ({"n_jobs": "10"}, "n_jobs"),
        ({"n_jobs": True}, "n_jobs"),
        ({"nodes": 0}, "nodes"),
        ({"nodes": -128}, "nodes"),
        ({"nodes": 128.0}, "nodes"),
        ({"nodes": None}, "nodes"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"seed": "1"}, "seed"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_argument(
    kwargs: dict[str, object], name: str
) -> None:
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        generate_lublin(**kwargs)  # type: ignore[arg-type]


def test_smallest_valid_call() -> None:
    trace = generate_lublin(n_jobs=1, nodes=1, seed=0)
    assert len(trace.records) == 1
    record = trace.records[0]
    assert isinstance(record, SwfRecord)
    assert record.job_number == 1
    assert record.allocated_procs == 1
    assert record.run_time >= 1
