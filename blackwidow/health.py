"""The hub's health detail for support staff: nodes, crawlers by state, monitor and store.

`status` is `ok` when every shard has a leader, the store answers and no node is suspect or
dead; else `degraded`, and `reasons` says why, one line each."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from blackwidow.core.node_protocol import Shard
from blackwidow.core.queue import ItemQueue
from blackwidow.core.store import Store
from blackwidow.models import Crawler, MonitorLock, Node
from blackwidow.monitor.leader import lock_name

UNHEALTHY_NODES = ("dead", "suspect")  # node states that make the cluster degraded


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


def _reasons(shards: list[dict[str, Any]], store_ok: bool, nodes: dict[str, int]) -> list[str]:
    """Why the cluster is degraded; empty when it is not. The queue is left out (see detail)."""
    found = [f"monitor: no leader for shard {s['shard']}" for s in shards if not s["leader"]]
    if not store_ok:
        found.append("store: does not answer")
    found += [f"nodes: {nodes[state]} {state}" for state in UNHEALTHY_NODES if nodes.get(state)]
    return found


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
    nodes = _counts_by(session, Node.state)
    reasons = _reasons(per_shard, store_ok, nodes)
    return {
        "status": "degraded" if reasons else "ok",
        "reasons": reasons,
        "nodes": nodes,
        "crawlers": _counts_by(session, Crawler.state),
        "monitor": monitor,
        "store": {"ok": store_ok},
        "queue": {"configured": queue is not None, "ok": None if queue is None else queue.ping()},
    }
