"""Queue definitions: run windows, strict booleans and limits (Req 6 AC 7, readiness)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from xce_schemas import QueueSpec, ResourceDef, in_window, parse_window

DAY = 24 * 3600
SUNDAY = 3 * DAY  # 1970-01-04


@pytest.mark.parametrize(
    "window, parsed",
    [
        ("8:00-18:30", (480, 1110, 1440)),
        ("8-18", (480, 1080, 1440)),
        ("20:00-8:00", (1200, 480, 1440)),
        ("5:19:00-1:8:30", (5 * 1440 + 1140, 1440 + 510, 7 * 1440)),
    ],
)
def test_windows_parse_to_minutes_of_the_day_or_week(
    window: str, parsed: tuple[int, int, int]
) -> None:
    assert parse_window(window) == parsed


@pytest.mark.parametrize(
    "window, message",
    [
        ("25:00-1:00", "25:00 is not a time of day"),
        ("8:60-9", "8:60 is not a time of day"),
        ("8:00-8:00", "it is empty"),
        ("1:2:3:4-5", "is not [day:]hh[:mm]"),
        ("-", "expected START-END"),
        ("7:8:00-9:00", "day 7 is not 0-6"),
        ("1:8:00-9:00", "give a day on both ends or on neither"),
        ("\uff18:00-9:00", "is not [day:]hh[:mm]"),  # a full-width digit
        ("8:00-18:00\n", "is not [day:]hh[:mm]"),  # "$" of re.match let it through
    ],
)
def test_bad_windows_are_refused_by_name(window: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_window(window)
    with pytest.raises(ValidationError, match="run_windows"):
        QueueSpec(name="q", run_windows=(window,))


def test_a_night_window_wraps_past_midnight_and_a_weekly_one_past_sunday() -> None:
    night = parse_window("20:00-8:00")
    assert in_window(night, SUNDAY + 21 * 3600) and in_window(night, SUNDAY + 7 * 3600)
    assert not in_window(night, SUNDAY + 8 * 3600)
    weekend = parse_window("5:19:00-1:8:30")  # Friday 19:00 to Monday 08:30
    assert in_window(weekend, SUNDAY + 12 * 3600)  # Sunday noon
    assert not in_window(weekend, SUNDAY + 3 * DAY)  # Wednesday


@pytest.mark.parametrize("value", ["no", "yes", 0, 1, "off", None])
def test_queue_and_resource_flags_must_be_booleans(value: object) -> None:
    with pytest.raises(ValidationError, match="valid boolean"):
        QueueSpec.model_validate({"name": "q", "active": value})
    with pytest.raises(ValidationError, match="valid boolean"):
        QueueSpec.model_validate({"name": "q", "preemptible": value})
    with pytest.raises(ValidationError, match="valid boolean"):
        ResourceDef.model_validate({"name": "lic", "shared": value})


@pytest.mark.parametrize("field", ["max_running", "user_slot_limit"])
def test_a_slot_limit_is_at_least_one(field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        QueueSpec.model_validate({"name": "q", field: 0})
    assert getattr(QueueSpec.model_validate({"name": "q", field: 1}), field) == 1


def test_a_queue_is_listed_once_among_the_queues_it_preempts() -> None:
    with pytest.raises(ValidationError, match="queue 'low' is listed twice"):
        QueueSpec(name="q", preemptible_queues=("low", "low"))
