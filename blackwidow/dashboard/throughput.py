"""The cluster page's throughput: items stored per minute across the caller's crawlers (the
admin's: the whole cluster's), summed from the crawlers' rate samples, the counts the monitor
heard and every crawler's `rate` is read from (blackwidow.monitor.rates), so the chart and the
rates agree. The hub keeps those samples for BLACKWIDOW_RATE_WINDOW: that is how far back the
chart reaches, and its title says so."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from blackwidow.auth import Caller
from blackwidow.crawlers import visible
from blackwidow.models import Crawler
from blackwidow.monitor.rates import Sample, count_at, samples_of


def minutes_of(window: float) -> int:
    """The whole minutes a chart over `window` seconds shows, the running one last."""
    return max(1, math.ceil(window / 60))


def per_minute(crawlers: Iterable[Sequence[Sample]], now: float, minutes: int) -> list[int]:
    """Items stored in each of the last `minutes` minutes (whole minutes, the last the one
    running, as the crawler page's chart counts), oldest first, summed over the crawlers. A
    rise the hub heard between two samples is spread evenly over its [since, at]; before a
    crawler's first sample nothing is counted. Pure."""
    current = now - now % 60
    edges = [current - 60 * (minutes - 1 - n) for n in range(minutes)] + [now]
    totals = [0.0] * minutes
    for samples in crawlers:
        if not samples:
            continue
        counts = [count_at(samples, edge) for edge in edges]
        for n in range(minutes):
            totals[n] += max(0.0, counts[n + 1] - counts[n])
    return [round(total) for total in totals]


def samples(
    session: Session, caller: Caller, now: datetime, window: float
) -> list[tuple[Sample, ...]]:
    """The rate samples of the caller's crawlers the monitor wrote within the window (it
    writes a crawler's row whenever its count rises): one column of the rows that moved."""
    since = now - timedelta(seconds=window + 60)
    query = select(Crawler.rate_samples).where(visible(caller), Crawler.updated_at >= since)
    return [samples_of(stored) for stored in session.scalars(query)]
