"""Quota leases over the monitor's memory: the ledger side of blackwidow.monitor.quota's plans.

Grants enter the ledger (and SQL) before they are pushed, and shrinks only once a node has
confirmed them, so the ledger never says less than a node may store.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from blackwidow.monitor.quota import LeaseView, exhausted, plan_leases
from blackwidow.monitor.tracked import Tracked

MIN_GRANT = 10


def exhausted_users(
    limits: Mapping[int, int], by_user: Mapping[int, Iterable[Tracked]]
) -> set[int]:
    """Users whose crawlers have together stored their whole item budget."""
    return {
        user_id
        for user_id, limit in limits.items()
        if exhausted(limit, (c.items_collected for c in by_user.get(user_id, ())))
    }


def plan(
    limit: int, owned: Collection[Tracked], running: Collection[int], horizon: float
) -> dict[int, int]:
    """The lease to push for each of one user's crawlers; grants raise the ledger now."""
    views = [
        LeaseView(c.id, c.items_collected, c.lease, c.rate, c.item_limit, c.id in running)
        for c in owned
    ]
    changes = plan_leases(limit, views, horizon, MIN_GRANT)
    pushed: dict[int, int] = {}
    for crawler in owned:
        target = changes.get(crawler.id, crawler.lease)
        if target > crawler.lease:
            crawler.lease = target
        pushed[crawler.id] = target
    return pushed


def confirm(crawler: Tracked, status: dict[str, Any]) -> None:
    """A node acknowledged a push: the lease it reports is now the one in force."""
    if status.get("lease") is not None:
        crawler.lease = int(status["lease"])


def release(crawler: Tracked) -> None:
    """A crawler that runs nowhere holds no budget beyond what it stored."""
    crawler.lease = crawler.items_collected
