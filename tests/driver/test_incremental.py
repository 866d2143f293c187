"""Incremental rounds on real traces: a simulation decides the same, decision for
decision, with incremental rounds and with the full loop, under the policies that
reserve (where a parked job may be a reservation's holder, or a cached twin's)."""

from __future__ import annotations

import pytest
from xce_driver.live.record_stream import LineBatch
from xce_driver.simulate import run_simulation
from xce_driver.workloads.mapping import map_trace
from xce_driver.workloads.swf import read_swf
from xce_schemas import BackfillPolicy

from tests.driver.conftest import shared_trace


@pytest.mark.parametrize("backfill", [BackfillPolicy.EASY, BackfillPolicy.HYBRID])
@pytest.mark.parametrize(
    "trace", ["SDSC-SP2-1998-4.2-cln.swf.gz", "KTH-SP2-1996-2.1-cln.swf.gz", "lublin_256.swf"]
)
def test_incremental_and_full_simulations_decide_the_same_on_real_traces(
    trace: str, backfill: BackfillPolicy
) -> None:
    workload = map_trace(read_swf(shared_trace(trace)), max_jobs=1500)
    streams = []
    for incremental in (True, False):
        recording = LineBatch()
        run_simulation(
            workload,
            source=trace,
            backfill=backfill,
            reservation_depth=3 if backfill is BackfillPolicy.HYBRID else None,
            incremental=incremental,
            recording=recording,
        )
        streams.append([line for kind, line in recording.take() if kind == "DECISION"])
    assert len(streams[0]) > 3000 and streams[0] == streams[1]
