"""The demo's status lines: each crawler's state and node as the hub has them, beside the
count and the newest of its items as the store holds them.

Both of the last two come from the items read through the API, tallied as they arrive, so
the count is never lower than the newest item shown implies. (The crawler's own
`items_collected` is the count the node reported at the hub's last poll: read beside an item
stored since, it can say 0 next to it.)"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from blackwidow.client.arrivals import Arrivals, fetched_at
from blackwidow.client.hub_client import HubClient


@dataclass
class Tally:
    """What the store holds of one crawler: how many items, and the newest."""

    arrivals: Arrivals
    count: int = 0
    latest: dict[str, Any] | None = field(default=None)

    def update(self) -> None:
        fresh = self.arrivals.read()
        self.count += len(fresh)
        candidates = [*fresh, *([self.latest] if self.latest else [])]
        self.latest = max(candidates, key=_newest) if candidates else None


def _newest(item: dict[str, Any]) -> tuple[Any, str]:
    """Fetched last, and of one fetch the one published last (a feed's items come together)."""
    return fetched_at(item), item.get("published_at") or ""


class Status:
    """The user's crawlers, a line each, with a tally per crawler kept between reads."""

    def __init__(self, hub: HubClient) -> None:
        self.hub = hub
        self.tallies: dict[int, Tally] = {}

    def lines(self) -> list[str]:
        lines = []
        for crawler in self.hub.every("/api/v1/crawlers"):
            tally = self.tallies.setdefault(crawler["id"], Tally(Arrivals(self.hub, crawler["id"])))
            tally.update()
            lines.append(line(crawler, tally.count, tally.latest))
        return lines

    def wait_for_items(self, timeout: float, clock: Callable[[], float] = time.monotonic) -> None:
        """Until every crawler has items stored (or the timeout): the first lines printed then
        show the crawlers at work, not the moment before their first fetch."""
        deadline = clock() + timeout
        while clock() < deadline:
            self.lines()
            if self.tallies and all(tally.count for tally in self.tallies.values()):
                return
            time.sleep(0.2)


def line(crawler: dict[str, Any], count: int, latest: dict[str, Any] | None) -> str:
    title = latest["title"] if latest else "-"
    return (
        f"  {crawler['name']:<18} {crawler['state']:<13} node={crawler['node_id'] or '-':<3}"
        f" items={count:<5} latest: {title}"
    )
