"""The free profile (``xce_core.backfill.profile.FreeProfile``): free slots over time,
checked against a brute-force reading of the same steps on random profiles."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from xce_core.alloc.outcome import FOREVER
from xce_core.backfill.profile import FreeProfile

NOW = 100

gives = st.lists(
    st.tuples(st.integers(0, 400), st.integers(0, 5)), max_size=12
)  # (expected end, slots): an end before now counts as now
takes = st.lists(
    st.tuples(st.integers(0, 400), st.integers(1, 200), st.integers(1, 4)), max_size=8
)  # (start, length, slots) held


def free_at(
    free_now: int, given: list[tuple[int, int]], held: list[tuple[int, int, int]], at: int
) -> int:
    """Slots free at instant ``at`` (≥ now), by definition."""
    back = sum(slots for end, slots in given if max(end, NOW) <= at)
    taken = sum(slots for start, end, slots in held if max(start, NOW) <= at < end)
    return free_now + back - taken


def build(
    free_now: int, given: list[tuple[int, int]], held: list[tuple[int, int, int]]
) -> FreeProfile:
    profile = FreeProfile(NOW, free_now, given)
    for start, end, slots in held:
        profile.take(start, end, slots)
    return profile


@settings(max_examples=300, deadline=None)
@given(
    free_now=st.integers(0, 6),
    given=gives,
    raw=takes,
    slots=st.integers(1, 8),
    length=st.integers(1, 150),
)
def test_earliest_is_the_first_instant_whose_window_has_the_slots(
    free_now: int,
    given: list[tuple[int, int]],
    raw: list[tuple[int, int, int]],
    slots: int,
    length: int,
) -> None:
    held = [(start, start + span, n) for start, span, n in raw]
    profile = build(free_now, given, held)
    # The instants where room may appear: now and every step.
    instants = sorted(
        {
            NOW,
            *(max(e, NOW) for e, _ in given),
            *(max(s, NOW) for s, _, _ in held),
            *(e for _, e, _ in held if e > NOW),
        }
    )
    points = sorted(set(instants))

    def fits(at: int) -> bool:
        return (
            all(free_at(free_now, given, held, t) >= slots for t in points if at <= t < at + length)
            and free_at(free_now, given, held, at) >= slots
        )

    expected = next((at for at in points if fits(at)), None)
    assert profile.earliest(slots, length) == expected
    # least() over any window agrees with the definition
    for at in points:
        window = [t for t in points if at <= t < at + length]
        assert profile.least(at, at + length) == min(
            free_at(free_now, given, held, t) for t in window
        )


def test_give_undoes_take_and_a_window_without_end_holds_for_ever() -> None:
    profile = FreeProfile(NOW, 4, [(150, 2)])
    before = (list(profile.times), list(profile.free))
    profile.take(120, 180, 3)
    assert profile.least(NOW, FOREVER) == 1
    profile.give(120, 180, 3)
    assert (profile.free[0], profile.least(NOW, FOREVER)) == (before[1][0], 4)
    profile.take(200, FOREVER, 6)
    assert profile.earliest(1, FOREVER) is None  # nothing is free for ever: 6 - 6
    assert profile.earliest(1, 50) == NOW
