"""Schedules as instants: checks, ticks across DST changes, windows, a shared source's next
poll; time passed in as local wall times and compared as UTC."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from sources.timetable import (
    ScheduleError,
    SubscriberSchedules,
    check,
    next_poll_at,
    next_start_at,
    next_tick,
    window_change_at,
    window_open,
)

PARIS, NEW_YORK, UTC = ZoneInfo("Europe/Paris"), ZoneInfo("America/New_York"), ZoneInfo("UTC")


def at(text: str, zone: ZoneInfo = UTC, fold: int = 0) -> float:
    """Epoch seconds of a local wall time; `fold=1`: the second of a repeated autumn hour."""
    return datetime.fromisoformat(text).replace(tzinfo=zone, fold=fold).timestamp()


def utc(seconds: float | None) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat()[:19]


@pytest.mark.parametrize(
    ("schedule", "after", "expected"),
    [
        ({"every": 90}, at("2026-03-29T00:59:00"), "2026-03-29T01:00:30"),
        ({"cron": "*/15 * * * *"}, at("2026-01-01T10:07:00"), "2026-01-01T10:15:00"),
        ({"cron": "*/15 * * * *"}, at("2026-01-01T10:15:00"), "2026-01-01T10:30:00"),
        ({"cron": "* * * * * */20"}, at("2026-01-01T10:00:05"), "2026-01-01T10:00:20"),
        # Paris, winter (UTC+1) and summer (UTC+2): 09:00 local either way
        (
            {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
            at("2026-01-10T00:00:00"),
            "2026-01-10T08:00:00",
        ),
        (
            {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
            at("2026-07-10T00:00:00"),
            "2026-07-10T07:00:00",
        ),
        # spring forward, Paris 2026-03-29: 02:00 -> 03:00; 02:30 is skipped, runs at 03:00
        (
            {"cron": "30 2 * * *", "timezone": "Europe/Paris"},
            at("2026-03-29T01:00", PARIS),
            "2026-03-29T01:00:00",
        ),
        (
            {"cron": "0 * * * *", "timezone": "Europe/Paris"},
            at("2026-03-29T01:30", PARIS),
            "2026-03-29T01:00:00",
        ),  # hourly: 02:00 does not exist, 03:00 CEST is next
        # fall back, Paris 2026-10-25: 03:00 -> 02:00; 02:30 happens twice and runs twice
        (
            {"cron": "30 2 * * *", "timezone": "Europe/Paris"},
            at("2026-10-25T01:00", PARIS),
            "2026-10-25T00:30:00",
        ),
        (
            {"cron": "30 2 * * *", "timezone": "Europe/Paris"},
            at("2026-10-25T02:30", PARIS),
            "2026-10-25T01:30:00",
        ),
        (
            {"cron": "30 2 * * *", "timezone": "Europe/Paris"},
            at("2026-10-25T02:30", PARIS, 1),
            "2026-10-26T01:30:00",
        ),
        # New York, 2026-03-08 spring forward and 2026-11-01 fall back: 08:00 local
        (
            {"cron": "0 8 * * *", "timezone": "America/New_York"},
            at("2026-03-07T09:00", NEW_YORK),
            "2026-03-08T12:00:00",
        ),
        (
            {"cron": "0 8 * * *", "timezone": "America/New_York"},
            at("2026-10-31T09:00", NEW_YORK),
            "2026-11-01T13:00:00",
        ),
        ({"cron": "0 9 * * 1-5", "for": 3600}, at("2026-01-01T10:00:00"), None),
    ],
)
def test_next_tick(schedule: dict, after: float, expected: str | None) -> None:
    assert utc(next_tick(check(schedule), after)) == expected


WORKDAY = {"cron": "0 9 * * 1-5", "for": 8 * 3600, "timezone": "Europe/Paris"}
NIGHT = {"cron": "0 1 * * *", "for": 3 * 3600, "timezone": "Europe/Paris"}  # 01:00 to 04:00


@pytest.mark.parametrize(
    ("schedule", "now", "is_open", "change", "start"),
    [
        # Friday 2026-01-09 in Paris (UTC+1)
        (
            WORKDAY,
            at("2026-01-09T08:59", PARIS),
            False,
            "2026-01-09T08:00:00",
            "2026-01-09T08:00:00",
        ),
        (
            WORKDAY,
            at("2026-01-09T09:00", PARIS),
            True,
            "2026-01-09T16:00:00",
            "2026-01-09T08:00:00",
        ),
        (
            WORKDAY,
            at("2026-01-09T16:59", PARIS),
            True,
            "2026-01-09T16:00:00",
            "2026-01-09T08:00:00",
        ),
        (
            WORKDAY,
            at("2026-01-09T17:00", PARIS),
            False,
            "2026-01-12T08:00:00",
            "2026-01-12T08:00:00",
        ),  # the weekend: Monday
        # a window spanning spring forward: opens 01:00 CET, lasts 3 real hours, to 05:00 CEST
        (NIGHT, at("2026-03-29T03:30", PARIS), True, "2026-03-29T03:00:00", "2026-03-29T00:00:00"),
        (NIGHT, at("2026-03-29T04:30", PARIS), True, "2026-03-29T03:00:00", "2026-03-29T00:00:00"),
        (NIGHT, at("2026-03-29T05:00", PARIS), False, "2026-03-29T23:00:00", "2026-03-29T23:00:00"),
        # spanning fall back: opens 01:00 CEST, closes three real hours on, at 03:00 CET
        (
            NIGHT,
            at("2026-10-25T02:30", PARIS, 1),
            True,
            "2026-10-25T02:00:00",
            "2026-10-24T23:00:00",
        ),
        (NIGHT, at("2026-10-25T03:00", PARIS), False, "2026-10-26T00:00:00", "2026-10-26T00:00:00"),
        ({"every": 60}, at("2026-01-09T03:00"), True, None, None),
    ],
)
def test_window(
    schedule: dict, now: float, is_open: bool, change: str | None, start: str | None
) -> None:
    assert window_open(schedule, now) is is_open
    assert utc(window_change_at(schedule, now)) == change
    assert utc(next_start_at(schedule, now)) == start


def test_no_schedule_is_always_open() -> None:
    assert window_open(None, 0.0)
    assert window_change_at(None, 0.0) is None


@pytest.mark.parametrize(
    ("schedules", "expected"),
    [
        ([], 1300.0),  # no subscriber said anything: the node's interval
        ([None], 1300.0),
        ([{"every": 30}], 1030.0),
        ([{"every": 30}, {"every": 10}], 1010.0),  # the earliest subscriber tick
        ([{"every": 3600}, None], 1300.0),  # one without schedule keeps the interval
        ([{"every": 3600}, WORKDAY], 1300.0),  # a window polls at the interval while open
        ([{"cron": "* * * * * */20"}, {"every": 600}], 1020.0),
    ],
)
def test_next_poll_of_a_shared_source(schedules: list, expected: float) -> None:
    assert next_poll_at(schedules, 1000.0, 300.0) == expected


@pytest.mark.parametrize(
    ("schedule", "field"),
    [
        ([], "schedule"),
        ({}, "schedule"),
        ({"every": 60, "cron": "* * * * *"}, "schedule"),
        ({"every": 0}, "schedule.every"),
        ({"every": "60"}, "schedule.every"),
        ({"every": True}, "schedule.every"),
        ({"every": 60, "timezone": "UTC"}, "schedule.timezone"),
        ({"every": 60, "for": 10}, "schedule.for"),
        ({"cron": "* * * *"}, "schedule.cron"),
        ({"cron": "61 * * * *"}, "schedule.cron"),
        ({"cron": "* * * * * * *"}, "schedule.cron"),
        ({"cron": "0 0 30 2 *"}, "schedule.cron"),  # February 30th never comes
        ({"cron": 5}, "schedule.cron"),
        ({"cron": "* * * * *", "timezone": "Mars/Olympus"}, "schedule.timezone"),
        ({"cron": "* * * * *", "timezone": "../etc/passwd"}, "schedule.timezone"),
        ({"cron": "* * * * *", "for": -5}, "schedule.for"),
        ({"cron": "* * * * *", "hours": 5}, "schedule.hours"),
    ],
)
def test_check_names_the_field(schedule: object, field: str) -> None:
    with pytest.raises(ScheduleError) as raised:
        check(schedule)
    assert raised.value.field == field


def test_check_keeps_a_valid_schedule() -> None:
    assert check({"cron": " */15  * * * * ", "timezone": "Europe/Paris"}) == {
        "cron": "*/15 * * * *",
        "timezone": "Europe/Paris",
    }
    assert check({"every": 2.5}) == {"every": 2.5}
    assert check(None) is None


def test_a_shared_source_plans_again_only_when_its_subscribers_schedules_change() -> None:
    schedules = SubscriberSchedules(interval=60)

    assert schedules.attach(1, None) is True
    assert schedules.attach(1, None) is False  # pushed again, unchanged
    assert schedules.attach(2, {"every": 10}) is True
    assert schedules.next_poll_at(1000.0) == 1010.0  # the earliest tick wins
    assert schedules.detach(2) is True and schedules.next_poll_at(1000.0) == 1060.0
    assert schedules.detach(2) is False  # gone already
    assert schedules.detach(1) is True  # its interval may have been the earliest
    assert schedules.next_poll_at(1000.0) == 1060.0  # no subscriber: the node's interval
