"""A crawler's items as they are stored, read again and again without reading all of them:
`blackwidow items --follow` prints them, the demo counts them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from blackwidow.client.hub_client import HubClient

PAGE = 1000  # the largest page the hub gives
# each read asks again for the last minute before the newest item known: an item a node
# stored late (its store was down a moment) still comes, and the ids known in that minute
# keep it from coming twice
OVERLAP = timedelta(minutes=1)


class Arrivals:
    """The items of one crawler stored since the last read, oldest first."""

    def __init__(self, hub: HubClient, crawler_id: int, since: str | None = None) -> None:
        self.hub = hub
        self.path = f"/api/v1/crawlers/{crawler_id}/items"
        self.since = since
        self.known: dict[str, datetime] = {}

    def know(self, items: Iterable[dict[str, Any]]) -> None:
        """Items not to give again (read before, some other way)."""
        self.known |= {item["id"]: fetched_at(item) for item in items}

    def read(self) -> list[dict[str, Any]]:
        """Every item stored since the last read (the first: since `since`, or ever) that is
        not known, oldest first; they are known from now on."""
        if self.known:
            start = max(self.known.values()) - OVERLAP
            self.known = {item_id: at for item_id, at in self.known.items() if at >= start}
            self.since = start.isoformat()
        params = {"limit": PAGE, **({"since": self.since} if self.since else {})}
        fresh = [item for item in self.window(params) if item["id"] not in self.known]
        fresh.sort(key=order)
        self.know(fresh)
        return fresh

    def window(self, params: dict[str, Any]) -> Iterable[dict[str, Any]]:
        return self.hub.every(self.path, params, key="items")


def order(item: dict[str, Any]) -> tuple[datetime, str]:
    """The hub's order of items (newest last here): fetch time, then id."""
    return fetched_at(item), item["id"]


def fetched_at(item: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(item["fetched_at"])
