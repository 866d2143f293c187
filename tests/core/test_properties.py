"""Properties over random event sequences: resources are conserved (invariant 6),
every pending job gets at most one DISPATCH or PEND a session (a PEND only when its
reason changed) and preempts at most once, only suspended jobs are resumed, and
decisions are deterministic."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.random_events import operation, run


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, max_size=60))
def test_resources_are_conserved_after_any_event_sequence(ops: list[tuple[Any, ...]]) -> None:
    run(ops, check=True)


@settings(max_examples=50, deadline=None)
@given(st.lists(operation, max_size=60))
def test_same_events_give_the_same_decisions(ops: list[tuple[Any, ...]]) -> None:
    assert run(ops, check=False) == run(ops, check=False)
