"""What a crawler should run as: its facts for the state machine and the spec pushed. Pure.

A crawler whose user's budget is spent is not runnable, and becomes so again on the first
cycle after the budget is raised: nothing about it is sticky. Nor is one whose crawl window
is closed, until the window opens (blackwidow.monitor.memory.window_timers wakes the cycle then).
"""

from __future__ import annotations

from typing import Any

from blackwidow.monitor.memory.crawlers import Tracked
from blackwidow.monitor.states import CrawlerFacts
from sources import timetable
from sources.model import SubscriberSpec


def facts(crawler: Tracked, user_exhausted: bool, running: bool, now: float) -> CrawlerFacts:
    """`now`: epoch seconds, against which the crawler's window (if any) is open or closed."""
    return CrawlerFacts(
        enabled=crawler.enabled,
        failed=crawler.state == "failed",
        item_limit=crawler.item_limit,
        items_collected=crawler.items_collected,
        user_exhausted=user_exhausted,
        running=running,
        failing=crawler.failing,
        closed=not timetable.window_open(crawler.schedule, now),
    )


def spec(crawler: Tracked, lease: int | None, secret: dict[str, Any] | None) -> SubscriberSpec:
    """The spec pushed for a crawler; `secret` is the user's stored credential its query names
    (None: the node uses its own credential of that name)."""
    return SubscriberSpec(
        crawler_id=crawler.id,
        user_id=crawler.user_id,
        source=crawler.source,
        query=crawler.query,
        item_limit=crawler.item_limit,
        lease=lease,
        retention_days=crawler.retention_days,
        credential=secret,
        priority=crawler.priority,
        recollect_after=crawler.recollect_after,
        schedule=crawler.schedule,
    )
