"""Housekeeping of the hub's SQL: rows that no longer matter, each kind gone in one DELETE.

Run by shard 0's leader on its poll thread, at most once per PRUNE_INTERVAL.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, delete, or_
from sqlalchemy.orm import Session

from blackwidow.models import Node

PRUNE_INTERVAL = 60.0  # seconds between housekeeping passes


def forget_dead_nodes(session: Session, silent_since: datetime) -> int:
    """Delete nodes dead and silent since before `silent_since`; how many went.

    The hub stopped probing them long before (twice `detach_after`), so they have detached;
    one that comes back registers as a new node. Their assignments go with them.
    """
    table = Node.__table__
    result = session.execute(
        delete(table).where(
            table.c.state == "dead",
            or_(
                table.c.last_polled_at < silent_since,
                and_(table.c.last_polled_at.is_(None), table.c.registered_at < silent_since),
            ),
        )
    )
    return result.rowcount
