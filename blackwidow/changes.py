"""Crawler changes: every write that changes what a crawler runs with records it here.

The monitor reads these rows instead of every crawler each cycle (docs/architecture.md "How a
crawler runs", step 3). A writer
records the change in its own transaction, so the monitor never sees a change before it is
committed, and never misses one that is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from blackwidow.models import Crawler, CrawlerChange

_INSERT = insert(CrawlerChange.__table__)  # built once: every crawler write runs it


def record(
    session: Session, crawlers: Iterable[Crawler], former_keys: Mapping[int, str] | None = None
) -> None:
    """Note that these crawlers changed (created, edited, deleted, or their user's budget or
    credential did). Call it before a deleted crawler's row goes: its source key is read here.

    `former_keys` (crawler id -> the source key it had before this transaction changed it)
    tells the monitor shard that owned the old key as well as the one owning the new key.
    """
    changed = list(crawlers)
    if not changed:
        return
    session.flush()  # a crawler created in this transaction needs its id
    rows = [{"crawler_id": c.id, "source_key": c.uuid} for c in changed]
    rows += [
        {"crawler_id": c.id, "source_key": former_keys[c.id]}
        for c in changed
        if former_keys and former_keys.get(c.id, c.uuid) != c.uuid
    ]
    session.connection().execute(_INSERT, rows)  # Core: no ORM objects


def record_user(session: Session, user_id: int) -> None:
    """Note that every crawler of a user changed (their budget did), in one statement."""
    session.flush()
    owned = select(Crawler.id, Crawler.uuid).where(Crawler.user_id == user_id)
    columns = [CrawlerChange.crawler_id, CrawlerChange.source_key]
    session.execute(insert(CrawlerChange).from_select(columns, owned))


def pending(session: Session) -> list[tuple[int, int, str]]:
    """(change id, crawler id, source key) of every change not yet taken, oldest first."""
    query = select(CrawlerChange.id, CrawlerChange.crawler_id, CrawlerChange.source_key)
    return [tuple(row) for row in session.execute(query.order_by(CrawlerChange.id))]


def taken(session: Session, change_ids: Iterable[int]) -> None:
    """Forget the changes the monitor has applied: exactly those it read."""
    ids = list(change_ids)
    for start in range(0, len(ids), 500):
        session.execute(delete(CrawlerChange).where(CrawlerChange.id.in_(ids[start : start + 500])))
