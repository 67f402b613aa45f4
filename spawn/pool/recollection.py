"""When a subscriber's next time segment begins (sources.segments): a timer heap. Pure.

A data source delivers an item once while it stays in its feed or listing, so an item that
is still there when a crawler's segment passes would never be collected again. At each
segment start the pool offers the subscriber its data source's current items once more; they
are versioned into the new segment and stored as new versions. The heap holds one boundary
per subscriber with segments, so a check costs the boundaries that have come, not every
subscriber.
"""

from __future__ import annotations

import heapq
from datetime import datetime, timedelta

from sources.segments import segment_start


class SegmentTimers:
    """Subscribers' next segment starts, earliest first; a stale entry (the subscriber gone,
    or its segment length changed) is dropped by the caller when it comes due."""

    def __init__(self) -> None:
        self._heap: list[tuple[datetime, int, int]] = []  # (starts at, crawler id, length)

    def plan(self, crawler_id: int, length: int, now_at: datetime) -> None:
        """Wake for the start of the segment after the one holding `now_at`."""
        starts_at = segment_start(now_at, length) + timedelta(seconds=length)
        heapq.heappush(self._heap, (starts_at, crawler_id, length))

    def retry(self, crawler_id: int, length: int, now_at: datetime) -> None:
        """Wake again at the next look: the offer could not be taken yet."""
        heapq.heappush(self._heap, (now_at, crawler_id, length))

    def due(self, now_at: datetime) -> list[tuple[int, int]]:
        """(crawler id, length) of every segment that has begun by `now_at`, taken off."""
        begun = []
        while self._heap and self._heap[0][0] <= now_at:
            _, crawler_id, length = heapq.heappop(self._heap)
            begun.append((crawler_id, length))
        return begun

    def __len__(self) -> int:
        return len(self._heap)
