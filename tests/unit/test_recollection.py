"""Subscribers' next segment starts come due in order, once, and again when retried."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from spawn.pool.recollection import SegmentTimers

AT = datetime(2026, 11, 25, 14, 30, tzinfo=UTC)


def test_a_segment_start_comes_due_once_in_order_of_time() -> None:
    timers = SegmentTimers()
    timers.plan(1, 3600, AT)  # hourly: the next segment starts at 15:00
    timers.plan(2, 1800, AT)  # half-hourly: at 15:00 as well
    timers.plan(3, 7200, AT)  # two-hourly, epoch-aligned: at 16:00

    assert timers.due(AT + timedelta(minutes=29)) == []
    assert sorted(timers.due(AT + timedelta(minutes=30))) == [(1, 3600), (2, 1800)]
    assert timers.due(AT + timedelta(minutes=30)) == []  # taken off
    assert timers.due(AT + timedelta(hours=2)) == [(3, 7200)]
    assert len(timers) == 0


def test_a_retried_start_comes_due_at_the_next_look() -> None:
    timers = SegmentTimers()
    timers.retry(1, 3600, AT)

    assert timers.due(AT) == [(1, 3600)]
