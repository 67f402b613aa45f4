"""The monitor's timer heap of crawl windows: boundaries pop when due, once, re-planned or
forgotten as crawlers change; time passed in."""

from __future__ import annotations

from blackwidow.monitor.memory.window_timers import WindowTimers

# opens at every minute's second 0, 20 and 40, for 8 seconds
WINDOW = {"cron": "* * * * * */20", "for": 8}
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z, a window opens
SCHEDULES = {1: WINDOW}


def test_boundaries_pop_when_due_and_only_then() -> None:
    timers = WindowTimers()
    timers.rebuild([(1, WINDOW), (2, None), (3, {"every": 60})], T0 + 1)
    assert len(timers) == 1  # only a window has boundaries
    assert timers.next_at() == T0 + 8
    assert timers.due(T0 + 7.9, SCHEDULES.get) == []
    assert timers.due(T0 + 8, SCHEDULES.get) == [1]  # closed: next, the opening at 20
    assert timers.due(T0 + 8, SCHEDULES.get) == []  # popped once
    assert timers.next_at() == T0 + 20
    assert timers.due(T0 + 25, {}.get) == [1]  # it was deleted meanwhile: forgotten
    assert timers.next_at() is None


def test_a_changed_crawler_is_re_planned_and_a_removed_one_forgotten() -> None:
    timers = WindowTimers()
    timers.plan(1, WINDOW, T0 + 10)  # closed: next opening at 20
    timers.plan(2, WINDOW, T0 + 1)  # open: closes at 8
    timers.plan(1, {"cron": "* * * * * */20", "for": 15}, T0 + 10)  # open now: closes at 15
    timers.plan(2, None, T0 + 2)  # its window was taken away
    assert timers.due(T0 + 14, {}.get) == []
    assert timers.due(T0 + 30, {}.get) == [1]  # the stale boundary at 20 does not pop it twice
    assert len(timers) == 0


def test_many_re_plans_keep_the_heap_to_the_live_boundaries() -> None:
    timers = WindowTimers()
    for step in range(1000):
        timers.plan(7, WINDOW, T0 + step * 0.001)
    assert len(timers._heap) <= 2 * len(timers) + 65
    assert timers.due(T0 + 8, {}.get) == [7]
