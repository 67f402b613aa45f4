"""The crawler page's chart: items counted into the right minutes, bars scaled to the peak."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from blackwidow.dashboard.chart import HEIGHT, chart, per_minute

NOW = datetime(2026, 5, 1, 12, 30, 40, tzinfo=UTC)


def test_items_fall_into_their_minute_oldest_first() -> None:
    times = [
        NOW,  # the minute running now: the last
        NOW.replace(second=0),
        NOW - timedelta(minutes=1),
        NOW - timedelta(minutes=2, seconds=1),
        NOW - timedelta(minutes=10),  # older than the window: left out
        NOW + timedelta(minutes=2),  # a clock ahead: left out
    ]
    assert per_minute(times, NOW, 3) == [1, 1, 2]


def test_bars_scale_to_the_busiest_minute_and_empty_minutes_keep_a_sliver() -> None:
    drawn = chart([0, 5, 10], NOW)
    assert drawn.peak == 10 and drawn.total == 15
    heights = [bar.height for bar in drawn.bars]
    assert heights[0] == 1.0 and heights[2] > heights[1] > 1.0
    assert all(bar.y + bar.height <= HEIGHT for bar in drawn.bars)
    assert [bar.label for bar in drawn.bars] == ["12:28", "12:29", "12:30"]


def test_nothing_at_all_draws_flat_bars() -> None:
    drawn = chart([0, 0], NOW)
    assert drawn.peak == 0 and {bar.height for bar in drawn.bars} == {1.0}
