"""The collector settings of a batch run (``xce_driver.batch_gc``) hold only while it
runs: a simulation, or one that fails, leaves the process's settings as they were."""

from __future__ import annotations

import gc

import pytest
from xce_driver.batch_gc import batch_gc
from xce_driver.simulate import run_simulation
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.mapping import map_trace


def test_the_settings_hold_inside_and_are_restored_after() -> None:
    before = gc.get_threshold()
    with batch_gc():
        assert gc.get_threshold() == (20_000, 20, 20)
        assert gc.get_freeze_count() > 0  # what was alive is left out of collection
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_an_error_inside_restores_the_settings() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), batch_gc():
        raise RuntimeError("a run that fails")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_simulation_leaves_the_collector_as_it_found_it() -> None:
    before = gc.get_threshold()
    workload = map_trace(generate_lublin(n_jobs=50, nodes=16, seed=3), hosts=16)
    result = run_simulation(workload, source="lublin")
    assert result.report.jobs_finished == 50
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
