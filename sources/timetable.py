"""A crawler's schedule as instants: its next tick, its crawl window, and the next poll of a
data source its subscribers share. Pure; every instant is epoch seconds (UTC), passed in.

Three forms (docs/sources.md "Schedules"): `{"every": s}` ticks every `s` seconds; `{"cron": expr,
"timezone": name}` ticks at each cron time, read on the wall clock of `timezone` (UTC when
absent), so "0 9 * * *" in Europe/Paris is 09:00 in Paris summer and winter alike; and
`{"cron": expr, "for": s}` is a window, open from each cron time for `s` seconds, in which
the crawler runs (its polls then follow the node's interval). Cron has five fields, or six
with seconds last (croniter's order). Across a DST change croniter moves a time the spring
skips to the first valid instant after it, and runs a time the autumn repeats in both of
its occurrences.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter

FIELDS = ("every", "cron", "timezone", "for")
MAX_SECONDS = 366 * 24 * 3600  # a year: longer is surely a mistake in the unit
_CHECKED_AT = 1_767_225_600.0  # 2026-01-01T00:00:00Z: a cron must come before and after it


class ScheduleError(ValueError):
    """A schedule that cannot be used; `field` names the part at fault (`schedule.cron`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def check(schedule: Any) -> dict[str, Any] | None:
    """The schedule as stored and pushed (None: none), or a ScheduleError naming the field."""
    if schedule is None:
        return None
    if not isinstance(schedule, dict):
        raise ScheduleError("schedule", "must be an object")
    for name in sorted(schedule):
        if name not in FIELDS:
            raise ScheduleError(f"schedule.{name}", f"unknown field, expected {', '.join(FIELDS)}")
    if "every" in schedule and "cron" in schedule:
        raise ScheduleError("schedule", "give either every or cron, not both")
    if "every" in schedule:
        for name in ("timezone", "for"):
            if name in schedule:
                raise ScheduleError(f"schedule.{name}", "only a cron schedule takes it")
        return {"every": _seconds(schedule, "every")}
    if "cron" not in schedule:
        raise ScheduleError("schedule", "needs every or cron")
    checked: dict[str, Any] = {"cron": _cron(schedule["cron"])}
    if "timezone" in schedule:
        checked["timezone"] = _timezone(schedule["timezone"])
    if "for" in schedule:
        checked["for"] = _seconds(schedule, "for")
    return checked


def _seconds(schedule: Mapping[str, Any], name: str) -> int | float:
    value = schedule[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScheduleError(f"schedule.{name}", "must be a number of seconds")
    if not 1 <= value <= MAX_SECONDS:
        raise ScheduleError(f"schedule.{name}", f"must be from 1 to {MAX_SECONDS} seconds")
    return value


def _cron(expression: Any) -> str:
    if not isinstance(expression, str) or len(expression.split()) not in (5, 6):
        raise ScheduleError("schedule.cron", "must be a cron expression of 5 or 6 fields")
    text = " ".join(expression.split())
    if not croniter.is_valid(text):
        raise ScheduleError("schedule.cron", f"not a valid cron expression: {text!r}")
    try:  # "0 0 30 2 *" parses, but a crawler on it would wait for ever
        croniter(text, _CHECKED_AT).get_next(float)
        croniter(text, _CHECKED_AT).get_prev(float)  # a window looks back for its opening
    except CroniterError:
        raise ScheduleError("schedule.cron", f"never comes: {text!r}") from None
    return text


def _timezone(name: Any) -> str:
    try:
        if not isinstance(name, str) or not name or "\x00" in name:
            raise ValueError(name)
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError("schedule.timezone", "not a known IANA timezone") from None
    return name


def _cron_after(schedule: Mapping[str, Any], at: float) -> float:
    """The first cron time strictly after `at`."""
    zone = ZoneInfo(schedule.get("timezone", "UTC"))
    return croniter(schedule["cron"], datetime.fromtimestamp(at, zone)).get_next(float)


def _around(schedule: Mapping[str, Any], at: float) -> tuple[float, float]:
    """The latest cron time at or before `at`, and the first after it."""
    return _cron_around(schedule["cron"], schedule.get("timezone", "UTC"), at)


@functools.lru_cache(maxsize=4096)
def _cron_around(cron: str, timezone: str, at: float) -> tuple[float, float]:
    """Cached: a monitor pass asks this at one instant for every crawler of a schedule, and
    croniter takes most of a millisecond a time."""
    ticks = croniter(cron, datetime.fromtimestamp(at, ZoneInfo(timezone)))
    before = ticks.get_prev(float)
    following = ticks.get_next(float)
    if following > at:
        return before, following
    return following, ticks.get_next(float)


def next_tick(schedule: Mapping[str, Any], after: float) -> float | None:
    """When an every or cron schedule next ticks after `after` (an every schedule counts from
    it); None for a window, whose polls follow the node's interval while it is open."""
    if "for" in schedule:
        return None
    if "every" in schedule:
        return after + schedule["every"]
    return _cron_after(schedule, after)


def window_open(schedule: Mapping[str, Any] | None, at: float) -> bool:
    """Whether a crawler may run at `at`: always, unless its window is closed then."""
    if not schedule or "for" not in schedule:
        return True
    return at < _around(schedule, at)[0] + schedule["for"]


def window_change_at(schedule: Mapping[str, Any] | None, at: float) -> float | None:
    """When the window next closes (if open at `at`) or opens (if closed); None: no window.
    At a close the window may stay open, when the next opening came first: ask again then."""
    if not schedule or "for" not in schedule:
        return None
    opened_at, next_at = _around(schedule, at)
    return opened_at + schedule["for"] if at < opened_at + schedule["for"] else next_at


def next_start_at(schedule: Mapping[str, Any] | None, at: float) -> float | None:
    """When the window opens next, or opened, if it is open at `at`; None: no window."""
    if not schedule or "for" not in schedule:
        return None
    opened_at, next_at = _around(schedule, at)
    return opened_at if at < opened_at + schedule["for"] else next_at


def next_poll_at(
    schedules: Iterable[Mapping[str, Any] | None], after: float, interval: float
) -> float:
    """When a data source polled at `after` polls next: the earliest tick among its
    subscribers' schedules; one without a tick (no schedule, or a window) asks for the node's
    `interval`. Polled sources ask it through their Subscribers' schedules (below)."""
    ticks = [next_tick(s, after) if s else None for s in schedules]
    return min((after + interval if t is None else t for t in ticks), default=after + interval)


class SubscriberSchedules:
    """The schedules of the subscribers sharing one data source: when the source polls next.

    Attach and detach run on the node's HTTP threads while the source polls on its own; a
    poll reads one copy of the schedules.
    """

    def __init__(self, interval: float) -> None:
        self._interval = interval  # the node's, for subscribers without a schedule
        self._schedules: dict[int, Mapping[str, Any] | None] = {}  # crawler id -> schedule

    def attach(self, crawler_id: int, schedule: Mapping[str, Any] | None) -> bool:
        """Whether the source must plan again: a schedule it did not have."""
        if crawler_id in self._schedules and self._schedules[crawler_id] == schedule:
            return False
        self._schedules[crawler_id] = schedule
        return True

    def detach(self, crawler_id: int) -> bool:
        """Whether the source must plan again: the tick it asked for may have been the earliest."""
        return self._schedules.pop(crawler_id, False) is not False

    def next_poll_at(self, after: float) -> float:
        """When the source polled at `after` (epoch seconds) polls next."""
        return next_poll_at(list(self._schedules.values()), after, self._interval)
