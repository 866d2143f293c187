"""Synthetic rigid-job workload from the Lublin-Feitelson model (batch jobs).

The model is that of

    Uri Lublin and Dror G. Feitelson, "The workload on parallel supercomputers:
    modeling the characteristics of rigid jobs", Journal of Parallel and Distributed
    Computing 63(11), pp. 1105-1122, November 2003.

Its reference implementation is ``m_lublin99.c`` from the Parallel Workloads Archive
(https://www.cs.huji.ac.il/labs/parallel/workload/m_lublin99/m_lublin99.c). Every
constant below is the one that program defines for *batch* jobs; they were read from
the public copy in the GitHub repository ``renatolfc/lublinworkload``, file
``lublinworkload/m_lublin99.c`` (commit 12ab200c), and cross-checked against the
Java port ``gridsim.parallel.util.WorkloadLublin99`` of GridSim. The code here is an
independent Python rendering of the same model, not a translation of that program.

The model has three parts, each drawn per job:

* **Size** (processors). With probability ``SERIAL_PROB`` the job is serial (1
  processor). Otherwise ``x = log2(size)`` is drawn from a *two-stage uniform*: with
  probability ``UPROB`` uniform on ``[ULOW, UMED]``, else uniform on ``[UMED, UHI]``.
  With probability ``POW2_PROB`` (of all jobs) ``x`` is rounded to an integer, giving a
  power-of-two size; the size is ``round(2**x)``.
* **Run time** (seconds). ``log(run_time)`` follows a *hyper-gamma*: with probability
  ``p`` a gamma(``A1``, ``B1``), else a gamma(``A2``, ``B2``) (shape, scale). ``p``
  falls linearly with the job's size, ``p = PA * size + PB`` clipped to [0, 1], so that
  larger jobs tend to run longer. Draws above ``LOG_RUNTIME_MAX`` are redrawn.
* **Arrivals**. The day is cut into 48 half-hour buckets, each weighted by the mass
  a gamma(``ANUM``, ``BNUM``) distribution (in bucket units, over a day starting at
  bucket ``CYCLIC_DAY_START``) gives it, normalised to mean 1: the daily cycle, low
  near 04:30 and peaking near 13:00. Each job brings ``exp(g) / 1800`` "points", with
  ``g ~ gamma(AARR * ARAR, BARR)`` (log inter-arrival time at rush hours, redrawn above
  ``LOG_INTERARRIVAL_MAX``); the clock passes through a bucket by paying that bucket's
  weight in points, so quiet buckets are crossed quickly and busy ones slowly, and the
  number of arrivals in a bucket is proportional to its weight. Time 0 is midnight.

Only the batch-job parameter set is used (the model also defines an interactive set
and a merged "typeless" one, and the reference program interleaves a batch and an
interactive stream); every generated job is a batch job, queue 1.

Scaling to a machine of ``nodes`` processors: as the reference program instructs
("remember to set the number-of-nodes' parameters to fit your system"), ``UHI`` is
``log2(nodes)``, and ``UMED`` keeps the batch set's distance below it (``UHI - 2``;
the reference has ``UMED = 5`` for ``UHI = 7``, i.e. 128 nodes). With 128 nodes the
parameters are exactly the reference ones. The run-time ``p`` uses the absolute size,
as the reference does, so on machines much larger than 128 nodes jobs of more than
about 233 processors always take the long-running gamma.

Deliberate differences from ``m_lublin99.c``, none of which changes a distribution:

* randomness is Python's ``random.Random(seed)`` (gamma variates by
  ``Random.gammavariate``) instead of ``drand48`` and Jain's sum-of-exponentials gamma
  generator, so the streams differ from the C program's while the distributions are
  the same;
* the arrival clock is kept as a float and truncated to whole seconds only when
  written, where the C program truncates its running total after every job;
* power-of-two sizes that would round above a machine size that is not itself a power
  of two are capped at the largest power of two that fits (the reference only ever
  runs with a power-of-two machine, where this cannot happen).
"""

from __future__ import annotations

import math
import random

from xce_driver.workloads.swf import SwfHeader, SwfRecord, SwfTrace

# --------------------------------------------------------------------------------------
# Model constants (batch jobs), as defined in m_lublin99.c.
# --------------------------------------------------------------------------------------

# Job size (number of processors).
#: Fraction of jobs that are serial (size 1). m_lublin99.c: SERIAL_PROB_BATCH.
SERIAL_PROB = 0.2927
#: Fraction of all jobs whose size is a power of two (beyond the serial ones, which are
#: drawn first). m_lublin99.c: POW2_PROB_BATCH.
POW2_PROB = 0.6686
#: log2 of the smallest parallel job; 2**1.2 rounds to 2. m_lublin99.c: ULOW_BATCH.
ULOW = 1.2
#: Break point of the two-stage uniform, as a distance below UHI. m_lublin99.c has
#: UMED_BATCH = 5 with UHI_BATCH = 7 (a 128-node machine); the program's notes say UMED
#: belongs in [UHI - 3.5, UHI - 1.5].
UMED_BELOW_UHI = 2.0
#: Probability of the first (lower) uniform stage [ULOW, UMED]. m_lublin99.c: UPROB_BATCH.
UPROB = 0.875
#: The machine size the reference parameters were set for (UHI_BATCH = 7 = log2(128)).
REFERENCE_NODES = 128

# Run time: log(run_time in seconds) ~ hyper-gamma(A1, B1, A2, B2, p), gammas given as
# (shape, scale), p = PA * size + PB clipped to [0, 1].
#: Shape of the first (short-running) gamma. m_lublin99.c: A1_BATCH.
A1 = 6.57
#: Scale of the first gamma (mean log run time 5.41, about 4 minutes). B1_BATCH.
B1 = 0.823
#: Shape of the second (long-running) gamma. m_lublin99.c: A2_BATCH.
A2 = 639.1
#: Scale of the second gamma (mean log run time 9.97, about 6 hours). B2_BATCH.
B2 = 0.0156
#: Slope of p against the job's size in processors (negative: bigger jobs run longer).
#: m_lublin99.c: PA_BATCH.
PA = -0.003
#: Intercept of p. m_lublin99.c: PB_BATCH.
PB = 0.6986
#: Largest log run time kept; larger draws are redrawn. exp(12) s is about 45 hours.
#: m_lublin99.c: TOO_MUCH_TIME.
LOG_RUNTIME_MAX = 12.0

# Arrivals.
#: Shape of the gamma of log inter-arrival time (seconds) at rush hours. AARR_BATCH.
AARR = 6.0415
#: Scale of that gamma. m_lublin99.c: BARR_BATCH.
BARR = 0.8531
#: "Arrive-rush-all ratio": multiplies AARR so the gamma stands for all hours of the
#: day rather than rush hours only. m_lublin99.c: ARAR_BATCH.
ARAR = 1.0519
#: Shape of the gamma whose mass per half-hour bucket weights the daily cycle. ANUM_BATCH.
ANUM = 6.1271
#: Scale of that gamma, in buckets (half hours). m_lublin99.c: BNUM_BATCH.
BNUM = 5.2740
#: Largest log inter-arrival time kept; larger draws are redrawn. exp(13) s is about
#: 5 days. m_lublin99.c: TOO_MUCH_ARRIVE_TIME.
LOG_INTERARRIVAL_MAX = 13.0
#: Buckets per day (half hours). m_lublin99.c: BUCKETS.
BUCKETS = 48
#: Seconds in a bucket (1800). m_lublin99.c: SECONDS_IN_BUCKET.
SECONDS_IN_BUCKET = 24 * 3600 // BUCKETS
#: The gamma of the daily cycle is laid over buckets CYCLIC_DAY_START .. CYCLIC_DAY_START
#: + 47 and wrapped onto the day, gamma point i landing in bucket (i - 1) mod 48, so the
#: quietest bucket is 04:30 and the busiest 13:00. m_lublin99.c: CYCLIC_DAY_START.
CYCLIC_DAY_START = 11
#: Bucket of the clock at time 0: midnight (m_lublin99.c: START = 0 hours).
START_BUCKET = 0

#: Citation written into generated traces.
CITATION = (
    "Lublin & Feitelson, The workload on parallel supercomputers: modeling the "
    "characteristics of rigid jobs, JPDC 63(11):1105-1122, 2003"
)
#: Where the reference implementation of the model is published.
REFERENCE_URL = "https://www.cs.huji.ac.il/labs/parallel/workload/m_lublin99/m_lublin99.c"


def _gamma_cdf(x: float, shape: float, scale: float) -> float:
    """CDF of gamma(shape, scale) at ``x``: the regularised lower incomplete gamma.

    Uses the power series P(a, z) = z^a e^-z / Gamma(a) * sum_n z^n / (a (a+1) ... (a+n))
    (Numerical Recipes, "incomplete gamma function", series form), which converges for
    every z > 0 and is exact to rounding for the small arguments used here.
    """
    z = x / scale
    if z <= 0.0:
        return 0.0
    term = 1.0 / shape
    total = term
    denominator = shape
    for _ in range(10_000):
        denominator += 1.0
        term *= z / denominator
        total += term
        if term < total * 1e-17:
            break
    return min(1.0, total * math.exp(-z + shape * math.log(z) - math.lgamma(shape)))


def _daily_cycle_weights() -> tuple[float, ...]:
    """The relative arrival intensity of each half-hour bucket of the day, mean 1.

    Bucket ``k`` covers ``[k * 1800, (k + 1) * 1800)`` seconds after midnight. Its weight
    is the mass of gamma(ANUM, BNUM) on ``[i - 0.5, i + 0.5]`` for the gamma point ``i``
    (in ``CYCLIC_DAY_START .. CYCLIC_DAY_START + 47``) with ``(i - 1) mod 48 == k``.
    """
    weights = [0.0] * BUCKETS
    for point in range(CYCLIC_DAY_START, CYCLIC_DAY_START + BUCKETS):
        mass = _gamma_cdf(point + 0.5, ANUM, BNUM) - _gamma_cdf(point - 0.5, ANUM, BNUM)
        weights[(point - 1) % BUCKETS] = mass
    mean = sum(weights) / BUCKETS
    return tuple(weight / mean for weight in weights)


#: Arrival weight of each half-hour bucket of the day (index 0 = 00:00-00:30), mean 1.
#: The expected share of arrivals in bucket k is DAILY_CYCLE_WEIGHTS[k] / 48.
DAILY_CYCLE_WEIGHTS: tuple[float, ...] = _daily_cycle_weights()


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


class _ArrivalClock:
    """The model's arrival process: gamma inter-arrival points paid out over the daily cycle.

    ``points`` is how far, in points, the clock is into the current bucket (a bucket of
    weight w costs w points to cross); ``fraction`` is the same position as a fraction of
    the bucket. ``now`` is seconds since time 0 (midnight).
    """

    __slots__ = ("bucket", "fraction", "now", "points", "rng", "shape")

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.shape = AARR * ARAR
        self.bucket = START_BUCKET
        self.points = 0.0
        self.fraction = 0.0
        self.now = 0.0

    def advance(self) -> float:
        """Move the clock to the next arrival and return it (seconds, float)."""
        gammavariate = self.rng.gammavariate
        log_gap = gammavariate(self.shape, BARR)
        while log_gap > LOG_INTERARRIVAL_MAX:
            log_gap = gammavariate(self.shape, BARR)
        points = self.points + math.exp(log_gap) / SECONDS_IN_BUCKET
        bucket = self.bucket
        weights = DAILY_CYCLE_WEIGHTS
        elapsed = 0.0
        while points > weights[bucket]:
            points -= weights[bucket]
            bucket = (bucket + 1) % BUCKETS
            elapsed += SECONDS_IN_BUCKET
        fraction = points / weights[bucket]
        elapsed += SECONDS_IN_BUCKET * (fraction - self.fraction)
        self.points = points
        self.fraction = fraction
        self.bucket = bucket
        self.now += elapsed
        return self.now


def _job_size(rng: random.Random, ulow: float, umed: float, uhi: float, max_pow2: int) -> int:
    """Draw a job size in processors (see the module docstring, "Size")."""
    u = rng.random()
    if u <= SERIAL_PROB:
        return 1
    # Two-stage uniform on log2(size).
    if rng.random() <= UPROB:
        low, high = ulow, umed
    else:
        low, high = umed, uhi
    log_size = low + rng.random() * (high - low)
    if u <= SERIAL_PROB + POW2_PROB:
        return 1 << min(int(log_size + 0.5), max_pow2)
    return int(2.0**log_size + 0.5)


def _run_time(rng: random.Random, size: int) -> int:
    """Draw a run time in whole seconds (>= 1) for a job of ``size`` processors."""
    p = min(1.0, max(0.0, PA * size + PB))
    gammavariate = rng.gammavariate
    while True:
        # Pick the gamma first (afresh on every retry, as the reference does).
        log_time = gammavariate(A1, B1) if rng.random() <= p else gammavariate(A2, B2)
        if log_time <= LOG_RUNTIME_MAX:
            return max(1, int(math.exp(log_time)))


def generate_lublin(n_jobs: int = 2000, nodes: int = 128, seed: int = 1) -> SwfTrace:
    """Generate a synthetic batch workload from the Lublin-Feitelson model.

    The model is that of U. Lublin and D. G. Feitelson, "The workload on parallel
    supercomputers: modeling the characteristics of rigid jobs", JPDC 63(11):1105-1122,
    2003, with the batch-job parameters of its reference program ``m_lublin99.c`` (the
    module docstring lists them and the few deliberate differences). Sizes follow the
    model's serial / power-of-two / two-stage-uniform-on-log2 mixture with its upper
    bound at ``log2(nodes)``; run times a hyper-gamma on their logarithm whose mixing
    probability falls linearly with the size; arrivals gamma-distributed log
    inter-arrival times spread over the model's daily cycle (busiest around 13:00,
    quietest around 04:30), time 0 being midnight.

    The same arguments give the same trace, record for record, in every process.

    Args:
        n_jobs: number of jobs to generate (>= 1).
        nodes: processors in the machine (>= 1); no job asks for more. The model's
            parameters are those of the reference for ``nodes == 128``.
        seed: seed of the ``random.Random`` that drives every draw (>= 0).

    Returns:
        An ``SwfTrace`` of ``n_jobs`` records numbered 1..n_jobs in submit order. All
        times are seconds: ``submit_time`` from midnight of day 0, non-decreasing;
        ``run_time`` >= 1 (at most exp(12), about 45 hours). ``allocated_procs`` =
        ``requested_procs`` = the job's size; ``status`` 1; ``queue_number`` 1 (batch);
        ``requested_time`` and every other field the model does not produce are -1.
        The header has ``MaxNodes`` = ``MaxProcs`` = ``nodes``, ``UnixStartTime`` 0,
        and ``Note`` / ``Information`` lines naming the model and the seed.

    Raises:
        ValueError: ``n_jobs``, ``nodes`` or ``seed`` is not an int (bools included), or
            ``n_jobs`` < 1, ``nodes`` < 1 or ``seed`` < 0; the message names the
            argument.
    """
    n_jobs = _check_int("n_jobs", n_jobs, 1)
    nodes = _check_int("nodes", nodes, 1)
    seed = _check_int("seed", seed, 0)

    rng = random.Random(seed)
    uhi = math.log2(nodes)
    ulow = min(ULOW, uhi)
    umed = min(uhi, max(ulow, uhi - UMED_BELOW_UHI))
    max_pow2 = nodes.bit_length() - 1  # log2 of the largest power of two <= nodes

    clock = _ArrivalClock(rng)
    records: list[SwfRecord] = []
    for job_number in range(1, n_jobs + 1):
        submit = int(clock.advance())
        size = min(nodes, _job_size(rng, ulow, umed, uhi, max_pow2))
        run_time = _run_time(rng, size)
        records.append(
            SwfRecord(
                job_number=job_number,
                submit_time=submit,
                wait_time=-1,
                run_time=run_time,
                allocated_procs=size,
                avg_cpu_time=-1.0,
                used_memory_kb=-1.0,
                requested_procs=size,
                requested_time=-1,
                requested_memory_kb=-1.0,
                status=1,
                user_id=-1,
                group_id=-1,
                executable=-1,
                queue_number=1,
                partition_number=-1,
                preceding_job=-1,
                think_time=-1,
            )
        )

    source = f"lublin-feitelson-2003(n_jobs={n_jobs}, nodes={nodes}, seed={seed})"
    header_lines = [
        ("Version", "2.2"),
        ("Computer", f"synthetic machine of {nodes} processors"),
        ("Acknowledge", "Uri Lublin and Dror G. Feitelson, Hebrew University"),
        ("Information", f"Lublin-Feitelson 2003 model, batch jobs, seed {seed}: {REFERENCE_URL}"),
        ("UnixStartTime", "0"),
        ("MaxJobs", str(n_jobs)),
        ("MaxRecords", str(n_jobs)),
        ("MaxNodes", str(nodes)),
        ("MaxProcs", str(nodes)),
        ("MaxRuntime", str(int(math.exp(LOG_RUNTIME_MAX)))),
        ("MaxQueues", "1"),
        ("Queue", "1 batch"),
        ("Note", f"Synthetic workload: {source}"),
        ("Note", f"Model: {CITATION}; batch-job parameters of m_lublin99.c"),
        ("Note", f"Seed: {seed} (Python random.Random); time 0 is midnight"),
    ]
    values: dict[str, str] = {}
    repeated: dict[str, list[str]] = {}
    for key, value in header_lines:
        values.setdefault(key, value)
        repeated.setdefault(key, []).append(value)
    return SwfTrace(SwfHeader(values, repeated), tuple(records), source)
