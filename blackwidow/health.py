"""The hub's health detail for support staff: nodes, crawlers by state, monitor and store."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from blackwidow.models import Crawler, MonitorLock, Node
from blackwidow.store import Store


def _counts_by(session: Session, column: Any) -> dict[str, int]:
    return dict(session.execute(select(column, func.count()).group_by(column)).all())


def detail(session: Session, store: Store, now: datetime) -> dict[str, Any]:
    lock = session.get(MonitorLock, "monitor")
    leading = bool(lock and lock.holder and lock.expires_at and lock.expires_at > now)
    store_ok = store.ping()
    return {
        "status": "ok" if leading and store_ok else "degraded",
        "nodes": _counts_by(session, Node.state),
        "crawlers": _counts_by(session, Crawler.state),
        "monitor": {
            "leader": leading,
            "holder": lock.holder if leading and lock else None,  # host:pid:id of the leader
            "last_cycle_at": lock.last_cycle_at.isoformat()
            if lock and lock.last_cycle_at
            else None,
            "last_cycle_seconds": lock.last_cycle_seconds if lock else None,
        },
        "store": {"ok": store_ok},
    }
