"""A user's usage: items stored against their budget and items delivered (billed), per source
and per crawler. Reads what the monitor last recorded; decides nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from blackwidow.models import Crawler, User


def summary(user: User, owned: Sequence[Crawler]) -> dict[str, Any]:
    stored = sum(c.items_collected for c in owned)
    by_source: dict[str, dict[str, int]] = {}
    for crawler in owned:
        totals = by_source.setdefault(
            crawler.source, {"crawlers": 0, "items_stored": 0, "items_delivered": 0}
        )
        totals["crawlers"] += 1
        totals["items_stored"] += crawler.items_collected
        totals["items_delivered"] += crawler.items_delivered
    return {
        "user_id": user.id,
        "item_limit": user.item_limit,
        "items_stored": stored,
        "items_delivered": sum(c.items_delivered for c in owned),
        "remaining": None if user.item_limit is None else max(0, user.item_limit - stored),
        "by_source": by_source,
        "crawlers": list(owned),  # the response schema picks the fields it shows
    }
