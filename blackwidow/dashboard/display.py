"""How the dashboard writes times, rates and alert details: short, in UTC, the same on every
page, worded as the CLI words them (blackwidow.wording: ages, `1,500,000`, rates)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from blackwidow import wording
from blackwidow.api.crawlers import shown_rate
from blackwidow.models import Crawler, utcnow


def _instant(value: datetime | str | None) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def ago(value: datetime | str | None, now: datetime | None = None) -> str:
    """`4 s ago`, `3 min ago`, `2 h ago`; `never` for no time at all."""
    instant = _instant(value)
    if instant is None:
        return "never"
    return wording.age(((now or utcnow()) - instant).total_seconds())


def moment(value: datetime | str | None) -> str:
    """`2026-05-01 12:03:04 UTC`, or a dash."""
    instant = _instant(value)
    if instant is None:
        return "\u2013"
    return instant.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def per_minute(crawler: Crawler) -> str:
    """`12.3/min over 5 min`: the crawler's rate as the API gives it (items per second over
    its window) written per minute, naming the window, as `blackwidow crawlers` does. True in
    every state: a crawler that stores nothing falls to `0/min` a window after its last item."""
    rate = shown_rate(crawler, time.time())
    return wording.rate_over(rate.per_second, rate.window)


_ENVELOPE = ("id", "type", "at")  # every alert body has these; the table shows them apart


def alert_details(body: str) -> str:
    """An alert event's own fields as `node_id=2 url=http://...`, in the body's order."""
    fields = json.loads(body)
    return " ".join(f"{name}={value}" for name, value in fields.items() if name not in _ENVELOPE)
