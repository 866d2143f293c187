"""Tests of the agenda (``xce_driver.cluster.agenda``): what is due when, in which order.

Entries are named by what they append to ``seen``; times are ns. The order is the
contract: time, then priority (lower first), then the order they were scheduled in.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from xce_driver.cluster.agenda import Agenda, EmptyAgenda


def note(seen: list[str], name: str) -> Callable[[], None]:
    """An action that appends ``name`` to ``seen``."""
    return lambda: seen.append(name)


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([(20, 0, "b"), (10, 0, "a")], ["a", "b"]),
        ([(10, 3, "round"), (10, 0, "finish"), (10, 2, "submit")], ["finish", "submit", "round"]),
        ([(10, 1, "first"), (10, 1, "second"), (10, 1, "third")], ["first", "second", "third"]),
        (
            [(10, 1, "late"), (5, 9, "early, low priority"), (10, 0, "urgent")],
            ["early, low priority", "urgent", "late"],
        ),
    ],
    ids=[
        "earlier time first",
        "same time: lower priority number first",
        "same time and priority: scheduled first, stepped first",
        "time before priority",
    ],
)
def test_entries_come_out_by_time_then_priority_then_scheduling_order(
    entries: list[tuple[int, int, str]], expected: list[str]
) -> None:
    agenda, seen = Agenda(), []
    for at, priority, name in entries:
        agenda.schedule(at, note(seen, name), priority)
    agenda.run()
    assert seen == expected
    assert agenda.now == max(at for at, _, _ in entries)


def test_ties_never_compare_actions() -> None:
    """Two entries alike in time and priority whose actions cannot be ordered (a
    comparison would raise TypeError): the counter breaks the tie."""
    agenda, seen = Agenda(), []

    class Opaque:
        def __init__(self, name: str) -> None:
            self.name = name

        def __call__(self) -> None:
            seen.append(self.name)

    agenda.schedule(5, Opaque("a"), 1)
    agenda.schedule(5, Opaque("b"), 1)
    agenda.run()
    assert seen == ["a", "b"]


def test_entry_ids_are_scheduling_order() -> None:
    agenda = Agenda()
    ids = [agenda.schedule(at, lambda: None) for at in (30, 10, 20)]
    assert ids == [0, 1, 2]


def test_peek_gives_the_next_time_and_inf_when_empty() -> None:
    agenda = Agenda(now=100)
    assert agenda.peek() == math.inf
    agenda.schedule(150, lambda: None, 2)
    agenda.schedule(120, lambda: None, 5)
    assert agenda.peek() == 120
    assert agenda.now == 100  # peeking moves nothing
    assert len(agenda) == 2


def test_step_moves_now_to_the_entry_then_runs_it() -> None:
    agenda = Agenda()
    times: list[int] = []
    agenda.schedule(7, lambda: times.append(agenda.now))
    agenda.schedule(9, lambda: times.append(agenda.now))
    agenda.step()
    assert (times, agenda.now, len(agenda)) == ([7], 7, 1)
    agenda.step()
    assert (times, agenda.now, len(agenda)) == ([7, 9], 9, 0)
    with pytest.raises(EmptyAgenda, match="the agenda is empty"):
        agenda.step()


def test_an_entry_scheduled_now_by_an_action_runs_in_the_same_run() -> None:
    agenda, seen = Agenda(), []

    def first() -> None:
        seen.append("first")
        agenda.schedule(agenda.now, note(seen, "scheduled now, priority 0"), 0)

    agenda.schedule(10, first, 1)
    agenda.schedule(10, note(seen, "already there, priority 2"), 2)
    agenda.run()
    # Priority still orders the rest of the instant: the new entry comes before
    # the one of priority 2 that was scheduled before it.
    assert seen == ["first", "scheduled now, priority 0", "already there, priority 2"]


def test_a_cancelled_entry_never_runs_and_does_not_count() -> None:
    agenda, seen = Agenda(), []
    agenda.schedule(10, note(seen, "a"))
    called_off = agenda.schedule(5, note(seen, "called off"))
    agenda.schedule(20, note(seen, "b"))
    agenda.cancel(called_off)
    assert len(agenda) == 2
    assert agenda.peek() == 10  # the cancelled head is passed over
    agenda.run()
    assert (seen, agenda.now, len(agenda)) == (["a", "b"], 20, 0)
    assert not agenda


def test_cancelling_the_only_entry_leaves_nothing_to_step() -> None:
    agenda = Agenda()
    agenda.cancel(agenda.schedule(3, lambda: None))
    assert agenda.peek() == math.inf
    with pytest.raises(EmptyAgenda):
        agenda.step()
    agenda.run()
    assert agenda.now == 0


@pytest.mark.parametrize(
    ("until", "expected_seen", "expected_now", "left"),
    [
        (None, ["at 10", "at 20", "at 30"], 30, 0),
        (20, ["at 10"], 20, 2),
        (21, ["at 10", "at 20"], 21, 1),
        (5, [], 5, 3),
        (0, [], 0, 3),
    ],
    ids=[
        "no bound: until nothing is left, now at the last entry",
        "a bound: what is due before it, not at it; now is the bound",
        "one ns past an entry: it runs",
        "a bound before every entry: nothing runs, now moves",
        "the bound is now: nothing runs",
    ],
)
def test_run_until(
    until: int | None, expected_seen: list[str], expected_now: int, left: int
) -> None:
    agenda, seen = Agenda(), []
    for at in (10, 20, 30):
        agenda.schedule(at, note(seen, f"at {at}"))
    agenda.run(until=until)
    assert (seen, agenda.now, len(agenda)) == (expected_seen, expected_now, left)


def test_run_until_steps_what_an_action_schedules_before_the_bound() -> None:
    agenda, seen = Agenda(), []
    agenda.schedule(10, lambda: agenda.schedule(15, note(seen, "at 15")))
    agenda.schedule(12, note(seen, "at 12"))
    agenda.run(until=16)
    assert (seen, agenda.now) == (["at 12", "at 15"], 16)


def test_time_never_goes_back() -> None:
    agenda = Agenda(now=50)
    with pytest.raises(ValueError, match=r"cannot schedule at 49 ns, before now \(50 ns\)"):
        agenda.schedule(49, lambda: None)
    with pytest.raises(ValueError, match=r"until \(49 ns\) is before now \(50 ns\)"):
        agenda.run(until=49)
    agenda.schedule(50, lambda: None)  # now itself is fine
    assert agenda.peek() == 50
