"""The charts of items per minute (a crawler's, the cluster's throughput): counts and bar
geometry, pure, for a small inline SVG the template draws (no script, no image to fetch)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

WIDTH, HEIGHT = 900, 140  # the SVG's own units; CSS scales it to the page
AXIS = 18  # room under the bars for the minute labels


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    count: int
    label: str  # the minute it counts, HH:MM UTC


@dataclass(frozen=True)
class Chart:
    bars: list[Bar]
    peak: int
    total: int
    width: int = WIDTH
    height: int = HEIGHT
    baseline: float = HEIGHT - AXIS

    @property
    def tick_every(self) -> int:
        """Every bar's minute is labelled on a short chart, every fifth on a long one."""
        return 1 if len(self.bars) <= 12 else 5


def per_minute(times: Iterable[datetime], now: datetime, minutes: int) -> list[int]:
    """Items fetched in each of the last `minutes` whole minutes, oldest first; the last is
    the minute running now."""
    current = now.replace(second=0, microsecond=0)
    counts = [0] * minutes
    for moment in times:
        back = int((current - moment.replace(second=0, microsecond=0)).total_seconds() // 60)
        if 0 <= back < minutes:
            counts[minutes - 1 - back] += 1
    return counts


def chart(counts: list[int], now: datetime) -> Chart:
    """Bars scaled to the busiest minute; a minute with nothing keeps a one-unit sliver so
    the time axis reads."""
    peak = max(counts, default=0)
    room = HEIGHT - AXIS - 4
    slot = WIDTH / max(1, len(counts))
    first = now.replace(second=0, microsecond=0) - timedelta(minutes=len(counts) - 1)
    bars = []
    for n, count in enumerate(counts):
        height = max(1.0, room * count / peak) if peak else 1.0
        minute = first + timedelta(minutes=n)
        bars.append(
            Bar(
                x=round(n * slot + 1, 1),
                y=round(HEIGHT - AXIS - height, 1),
                width=round(slot - 2, 1),
                height=round(height, 1),
                count=count,
                label=minute.strftime("%H:%M"),
            )
        )
    return Chart(bars=bars, peak=peak, total=sum(counts))
