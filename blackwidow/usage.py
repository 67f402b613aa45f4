"""A user's usage: items stored against their budget and items delivered (billed), per source
and per crawler. Reads what the monitor last recorded; decides nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from blackwidow import crawlers
from blackwidow.models import BilledTotal, Crawler, User


def summary(user: User, owned: Sequence[Crawler], billed: Mapping[str, int]) -> dict[str, Any]:
    """`billed` is what providers delivered for the user by source, each item once however
    many of the user's crawlers shared its connection; a crawler's own figure counts what
    reached that crawler."""
    stored = sum(c.items_collected for c in owned)
    by_source: dict[str, dict[str, int]] = {
        source: {"crawlers": 0, "items_stored": 0, "items_delivered": delivered}
        for source, delivered in billed.items()
    }
    for crawler in owned:
        totals = by_source.setdefault(
            crawler.source, {"crawlers": 0, "items_stored": 0, "items_delivered": 0}
        )
        totals["crawlers"] += 1
        totals["items_stored"] += crawler.items_collected
    return {
        "user_id": user.id,
        "item_limit": user.item_limit,
        "items_stored": stored,
        "items_delivered": sum(billed.values()),
        "remaining": None if user.item_limit is None else max(0, user.item_limit - stored),
        "by_source": by_source,
        "crawlers": list(owned),  # the response schema picks the fields it shows
    }


def report(session: Session, user: User) -> dict[str, Any]:
    """`GET /api/v1/users/<id>/usage` and the dashboard's users page: a user's summary."""
    return summary(user, crawlers.of_user(session, user.id), billed(session, user.id))


def billed(session: Session, user_id: int) -> dict[str, int]:
    """Items providers delivered for a user, by source type (see monitor.deliveries)."""
    rows = session.execute(
        select(BilledTotal.source, BilledTotal.delivered).where(BilledTotal.user_id == user_id)
    )
    return {source: int(total) for source, total in rows}
