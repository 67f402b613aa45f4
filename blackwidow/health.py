"""The hub's health detail for support staff: nodes, crawlers by state, monitor and store."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from blackwidow.models import Crawler, MonitorLock, Node
from blackwidow.monitor.leader import lock_name
from blackwidow.node_protocol import Shard
from blackwidow.queue import ItemQueue
from blackwidow.store import Store


def _counts_by(session: Session, column: Any) -> dict[str, int]:
    return dict(session.execute(select(column, func.count()).group_by(column)).all())


def _shard(lock: MonitorLock | None, now: datetime) -> dict[str, Any]:
    leading = bool(lock and lock.holder and lock.expires_at and lock.expires_at > now)
    return {
        "leader": leading,
        "holder": lock.holder if leading and lock else None,  # host:pid:id of the leader
        "epoch": lock.epoch if lock else None,
        "last_cycle_at": lock.last_cycle_at.isoformat() if lock and lock.last_cycle_at else None,
        "last_cycle_seconds": lock.last_cycle_seconds if lock else None,
    }


def detail(
    session: Session,
    store: Store,
    now: datetime,
    shards: int = 1,
    queue: ItemQueue | None = None,
) -> dict[str, Any]:
    """What `GET /api/v1/health` answers and the dashboard's cluster page shows. The queue
    (Redis) is reported, not judged: the nodes hold items in their outboxes while it is down."""
    names = [lock_name(Shard(index, shards)) for index in range(shards)]
    locks = {
        row.name: row
        for row in session.scalars(select(MonitorLock).where(MonitorLock.name.in_(names)))
    }
    per_shard = [
        {"shard": f"{i}/{shards}", **_shard(locks.get(name), now)} for i, name in enumerate(names)
    ]
    monitor = {**per_shard[0], "leader": all(shard["leader"] for shard in per_shard)}
    monitor.pop("shard")
    if shards > 1:  # the slowest shard's cycle is the cluster's
        monitor["last_cycle_seconds"] = max(
            (s["last_cycle_seconds"] for s in per_shard if s["last_cycle_seconds"] is not None),
            default=None,
        )
        monitor["shards"] = per_shard
    store_ok = store.ping()
    return {
        "status": "ok" if monitor["leader"] and store_ok else "degraded",
        "nodes": _counts_by(session, Node.state),
        "crawlers": _counts_by(session, Crawler.state),
        "monitor": monitor,
        "store": {"ok": store_ok},
        "queue": {"configured": queue is not None, "ok": None if queue is None else queue.ping()},
    }
