"""Alert events: what happened, as the JSON body every webhook receives. Pure.

A body is `{"id", "type", "at", ...details}`. The id is made once, when the event is seen,
and travels in every retry, so receivers can drop what they already have. An event about a
user (`user_id` set) also goes to that user's webhooks; every event goes to the cluster's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.orm import Session

from blackwidow.models import utcnow

BUDGET_WARNING_SHARE = 0.9  # budget.warning when a user's stored items reach this share


@dataclass(frozen=True)
class Event:
    type: str
    details: dict[str, Any]
    user_id: int | None = None  # whose webhooks get it besides the cluster's
    at: datetime = field(default_factory=utcnow)
    id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def body(self) -> str:
        return json.dumps(
            {"id": self.id, "type": self.type, "at": self.at.isoformat(), **self.details},
            separators=(",", ":"),
        )


class Emitter(Protocol):
    """Where the monitor and the API put events: in the same transaction as what they saw."""

    def emit(self, session: Session, events: Iterable[Event]) -> None: ...


def node_dead(node_id: int, url: str) -> Event:
    return Event("node.dead", {"node_id": node_id, "url": url})


def node_left(node_id: int, url: str, crawlers_held: int) -> Event:
    """A node that said it was leaving stopped: a scale-in, not a death. `crawlers_held`:
    those it had not handed on yet (0 when it left cleanly), which move as a dead node's."""
    details = {"node_id": node_id, "url": url, "crawlers_held": crawlers_held}
    return Event("node.left", details)


def node_back(node_id: int, url: str) -> Event:
    return Event("node.back", {"node_id": node_id, "url": url})


def node_holding(node_id: int, url: str, held: int, threshold: int) -> Event:
    return Event(
        "node.holding", {"node_id": node_id, "url": url, "held": held, "threshold": threshold}
    )


def crawler_failed(crawler_id: int, user_id: int, error: str | None) -> Event:
    details = {"crawler_id": crawler_id, "user_id": user_id, "error": error}
    return Event("crawler.failed", details, user_id)


def source_failing(
    source_key: str, source: str, user_id: int, crawler_ids: list[int], failing_for: float
) -> Event:
    """One per data source and user: the crawlers of that user that share the failing source."""
    details = {
        "source_key": source_key,
        "source": source,
        "user_id": user_id,
        "crawler_ids": sorted(crawler_ids),
        "failing_for": round(failing_for, 1),
    }
    return Event("source.failing", details, user_id)


def budget_crossings(user_id: int, item_limit: int, before: int, after: int) -> list[Event]:
    """budget.warning and budget.exhausted for each threshold the user's stored items passed
    going from `before` to `after`: each fires on the way up only, once per crossing."""
    details = {"user_id": user_id, "item_limit": item_limit, "items_stored": after}
    thresholds = (
        ("budget.warning", BUDGET_WARNING_SHARE * item_limit),
        ("budget.exhausted", item_limit),
    )
    return [Event(kind, details, user_id) for kind, level in thresholds if before < level <= after]
