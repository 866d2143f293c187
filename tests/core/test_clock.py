"""The virtual clock: two bases and a rational speed (Req 10 AC 3)."""

from __future__ import annotations

from fractions import Fraction

import pytest
import xce_core.clock as clock_module
from xce_core.clock import Clock


class FakeMonotonic:
    """Stands in for the system's monotonic clock, which tests cannot steer."""

    def __init__(self) -> None:
        self.ns = 1_000

    def __call__(self) -> int:
        return self.ns


@pytest.fixture
def wall(monkeypatch: pytest.MonkeyPatch) -> FakeMonotonic:
    fake = FakeMonotonic()
    monkeypatch.setattr(clock_module.time, "monotonic_ns", fake)
    return fake


def test_discrete_clock_is_frozen_between_events_and_never_goes_back(wall: FakeMonotonic) -> None:
    clock = Clock()
    clock.observe(50)
    wall.ns += 10**12
    assert clock.now() == 50
    clock.observe(20)
    assert clock.now() == 50
    clock.observe(70)
    assert clock.now() == 70


@pytest.mark.parametrize(
    ("speed", "elapsed", "expected"),
    [(1, 500, 10_500), (4, 500, 12_000), (Fraction(1, 4), 500, 10_125)],
    ids=["real time", "four times real time", "a quarter of real time"],
)
def test_running_clock_follows_the_formula(
    wall: FakeMonotonic, speed: Fraction | int, elapsed: int, expected: int
) -> None:
    clock = Clock(virtual_base=10_000, speed=speed)
    wall.ns += elapsed
    assert clock.now() == expected
    clock.observe(99_999_999)  # a running clock is the driver's to move
    assert clock.now() == expected


def test_realtime_clock_reads_epoch_time() -> None:
    clock = Clock.realtime()
    assert clock.speed == 1 and clock.now() > 1_600_000_000 * 10**9


def test_negative_anchor_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        Clock(virtual_base=-1)
    with pytest.raises(ValueError, match="must not be negative"):
        Clock(speed=-2)
