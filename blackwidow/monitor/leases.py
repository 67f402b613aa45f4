"""Quota leases in SQL: the ledger side of blackwidow.monitor.quota's plans.

Grants are written to the ledger before they are pushed and shrinks only once a node has
confirmed them, so the ledger never says less than a node may store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from blackwidow.models import Crawler, User
from blackwidow.monitor.quota import LeaseView, exhausted, plan_leases

MIN_GRANT = 10


def _limits(session: Session) -> dict[int, int]:
    rows = session.execute(select(User.id, User.item_limit).where(User.item_limit.is_not(None)))
    return dict(rows.all())


def _by_user(crawlers: Iterable[Crawler], limits: dict[int, int]) -> dict[int, list[Crawler]]:
    grouped: dict[int, list[Crawler]] = {}
    for crawler in crawlers:
        if crawler.user_id in limits:
            grouped.setdefault(crawler.user_id, []).append(crawler)
    return grouped


def exhausted_users(session: Session, crawlers: Sequence[Crawler]) -> set[int]:
    """Users whose crawlers have together stored their whole item budget."""
    limits = _limits(session)
    return {
        user_id
        for user_id, owned in _by_user(crawlers, limits).items()
        if exhausted(limits[user_id], (c.items_collected for c in owned))
    }


def plan(
    session: Session, crawlers: Sequence[Crawler], running: set[int], horizon: float
) -> dict[int, int]:
    """The lease to push for each crawler of a user with a budget; grants enter the ledger now."""
    limits = _limits(session)
    pushed: dict[int, int] = {}
    for user_id, owned in _by_user(crawlers, limits).items():
        views = [
            LeaseView(c.id, c.items_collected, c.lease, c.rate, c.item_limit, c.id in running)
            for c in owned
        ]
        changes = plan_leases(limits[user_id], views, horizon, MIN_GRANT)
        for crawler in owned:
            target = changes.get(crawler.id, crawler.lease)
            if target > crawler.lease:
                crawler.lease = target
            pushed[crawler.id] = target
    return pushed


def confirm(crawler: Crawler, status: dict[str, Any]) -> None:
    """A node acknowledged a push: the lease it reports is now the one in force."""
    if status.get("lease") is not None:
        crawler.lease = int(status["lease"])


def release(crawler: Crawler) -> None:
    """A crawler that runs nowhere holds no budget beyond what it stored."""
    crawler.lease = crawler.items_collected
