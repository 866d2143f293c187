"""Run windows: the times of the week a queue dispatches (LSF ``RUN_WINDOW``).

A window is ``[day:]hour[:minute]-[day:]hour[:minute]``: ``8:00-18:30`` every day,
``20:00-8:00`` every night (it wraps past midnight), ``5:19:00-1:8:30`` from Friday
19:00 to Monday 08:30 (days 0-6, 0 = Sunday). Times are UTC of the virtual clock.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MINUTES_PER_DAY = 24 * 60
MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY

# Used with fullmatch: "$" would let a final "\n" through.
_END = re.compile(r"(?:([0-9]+):)?([0-9]+)(?::([0-9]+))?")


def _parse_end(window: str, text: str, weekly: bool) -> tuple[bool, int]:
    match = _END.fullmatch(text)
    if match is None:
        raise ValueError(f"run window {window!r}: {text!r} is not [day:]hh[:mm]")
    day_text, hour_text, minute_text = match.groups()
    if minute_text is None and day_text is not None:
        # "1:8" is hour:minute, not day:hour: LSF reads two numbers as a time.
        day_text, hour_text, minute_text = None, day_text, hour_text
    day, hour, minute = int(day_text or 0), int(hour_text), int(minute_text or 0)
    if day > 6:
        raise ValueError(f"run window {window!r}: day {day} is not 0-6 (0 = Sunday)")
    if hour > 23 or minute > 59:
        raise ValueError(f"run window {window!r}: {hour}:{minute:02d} is not a time of day")
    offset = hour * 60 + minute
    return day_text is not None, (day * MINUTES_PER_DAY + offset) if weekly else offset


def parse_window(window: str) -> tuple[int, int, int]:
    """A run window as ``(start, end, period)`` in minutes.

    ``period`` is ``MINUTES_PER_DAY`` for a daily window and ``MINUTES_PER_WEEK`` for
    one with days; ``start`` and ``end`` are minutes into the day or week (``end`` <
    ``start`` wraps round the period).

    Raises:
        ValueError: naming the window and what is wrong with it.
    """
    start_text, dash, end_text = window.partition("-")
    if not dash or not start_text or not end_text:
        raise ValueError(f"run window {window!r}: expected START-END")
    weekly = start_text.count(":") == 2 or end_text.count(":") == 2
    start_has_day, start = _parse_end(window, start_text, weekly)
    end_has_day, end = _parse_end(window, end_text, weekly)
    if weekly and not (start_has_day and end_has_day):
        raise ValueError(f"run window {window!r}: give a day on both ends or on neither")
    if start == end:
        raise ValueError(f"run window {window!r}: it is empty (start equals end)")
    return start, end, MINUTES_PER_WEEK if weekly else MINUTES_PER_DAY


def in_window(window: tuple[int, int, int], epoch_s: int) -> bool:
    """Whether ``epoch_s`` (UTC seconds since 1970-01-01, a Thursday) falls inside."""
    start, end, period = window
    minute = epoch_s // 60
    # Minute of the week counted from Sunday 00:00: the epoch is day 4 of its week.
    now = (minute + 4 * MINUTES_PER_DAY) % period
    return start <= now < end if start < end else now >= start or now < end


def next_opening(windows: Sequence[tuple[int, int, int]], epoch_s: int) -> int:
    """The first whole minute after ``epoch_s`` (UTC seconds) at which one of
    ``windows`` (``parse_window`` results) opens, in epoch seconds.

    Raises:
        ValueError: ``windows`` is empty.
    """
    if not windows:
        raise ValueError("no run windows: nothing ever opens")
    minute = epoch_s // 60
    best = None
    for start, _, period in windows:
        now = (minute + 4 * MINUTES_PER_DAY) % period
        ahead = (start - now) % period or period
        opening = (minute + ahead) * 60
        best = opening if best is None else min(best, opening)
    assert best is not None
    return best
