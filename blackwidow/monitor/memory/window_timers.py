"""The monitor's timer heap of crawl windows: when each windowed crawler's window next opens
or closes, earliest first. Pure: time (epoch seconds) is passed in.

A cycle pops only the boundaries that have come, so windows cost a cycle what changed, not
what exists. The heap is rebuilt from the crawlers read when leading starts, and each
crawler change re-plans that crawler (docs/architecture.md "How a crawler runs", step 3).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sources import timetable

Schedule = Mapping[str, Any] | None


class WindowTimers:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int]] = []
        self._at: dict[int, float] = {}  # crawler id -> its boundary; older heap items are stale

    def __len__(self) -> int:
        return len(self._at)

    def plan(self, crawler_id: int, schedule: Schedule, now: float) -> None:
        """Set the crawler's next boundary after `now`; one without a window is forgotten."""
        at = timetable.window_change_at(schedule, now)
        if at is None:
            self._at.pop(crawler_id, None)
            return
        self._at[crawler_id] = at
        heapq.heappush(self._heap, (at, crawler_id))
        if len(self._heap) > 2 * len(self._at) + 64:  # mostly stale: keep memory to the live
            self._heap = [(at, c) for c, at in self._at.items()]
            heapq.heapify(self._heap)

    def rebuild(self, schedules: Iterable[tuple[int, Schedule]], now: float) -> None:
        """Start again from (crawler id, schedule) pairs: every crawler the shard holds."""
        self._at = {}
        for crawler_id, schedule in schedules:
            at = timetable.window_change_at(schedule, now)
            if at is not None:
                self._at[crawler_id] = at
        self._heap = [(at, c) for c, at in self._at.items()]
        heapq.heapify(self._heap)

    def due(self, now: float, schedule_of: Callable[[int], Schedule]) -> list[int]:
        """The crawlers whose boundary has come: their window opened or closed, so the
        monitor looks at them again. Each is planned again past `now` from its schedule as
        `schedule_of` gives it now (None: the crawler is gone, or has no window any more)."""
        came: list[int] = []
        while self._heap and self._heap[0][0] <= now:
            at, crawler_id = heapq.heappop(self._heap)
            if self._at.get(crawler_id) == at:
                del self._at[crawler_id]
                came.append(crawler_id)
        for crawler_id in came:
            self.plan(crawler_id, schedule_of(crawler_id), now)
        return came

    def next_at(self) -> float | None:
        """The earliest boundary planned; None when no crawler has a window."""
        while self._heap and self._at.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None
