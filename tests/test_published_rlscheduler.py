"""The published protocol of RLScheduler (Zhang et al., SC20; issue 17): FCFS without
backfilling over its ten windows of 1,024 jobs gives the paper's average bounded
slowdown and utilisation to the printed digit on all three traces
(``benchmarks/published_rlscheduler.py`` prints every cell and says why the others
differ). The match pins the window draws, the job parsing and the metrics."""

from __future__ import annotations

import pytest
from xce_schemas import BackfillPolicy

from benchmarks.published_rlscheduler import (
    PROTOCOL,
    TRACES,
    published,
    read_rl_trace,
    run_cell,
    window_starts,
)
from tests.driver.conftest import shared_trace


def test_the_window_draws_are_the_protocols() -> None:
    # numpy's RandomState(sha512("1")[:8]).randint(1024, 10000 - 1024 - 1), ten times
    assert window_starts(10, 1024, 10_000, 1) == [
        1981,
        2756,
        4299,
        8850,
        3316,
        2714,
        5228,
        7762,
        4022,
        7085,
    ]


@pytest.mark.parametrize("trace", list(TRACES))
def test_fcfs_without_backfilling_gives_the_published_figures(trace: str) -> None:
    file, limit = TRACES[trace]
    rl = read_rl_trace(trace, shared_trace(file), limit)
    windows, size, seed = PROTOCOL
    firsts = window_starts(windows, size, rl.limit, seed)
    bsld, util = run_cell(rl, firsts, size, "builtin_fcfs", BackfillPolicy.STRICT)
    paper_bsld, paper_util = published(trace, "builtin_fcfs", BackfillPolicy.STRICT)
    assert (f"{bsld:.2f}", f"{util:.3f}") == (f"{paper_bsld:.2f}", f"{paper_util:.3f}")
