"""The hub's health detail for support staff: nodes, crawlers by state, monitor and store.

`status` is `degraded` while work is affected, and `reasons` says why, one line each: a shard
without a leader, a store that does not answer, crawlers waiting with no node to take them, a
suspect node still holding crawlers. A dead node whose crawlers run elsewhere, and a node that
left, are reported in `nodes` but are no reason: the death was handled."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from blackwidow.core.node_protocol import Shard
from blackwidow.core.queue import ItemQueue
from blackwidow.core.store import Store
from blackwidow.models import Assignment, Crawler, MonitorLock, Node
from blackwidow.monitor.leader import lock_name

# seconds a new crawler may wait for its first placement before it counts as waiting
PENDING_GRACE = 30.0


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


def degraded_reasons(
    shards: list[dict[str, Any]], store_ok: bool, waiting: int, suspect_holding: int
) -> list[str]:
    """Why the cluster is degraded; empty when it is not. The queue is left out (see detail).
    Pure."""
    found = [f"monitor: no leader for shard {s['shard']}" for s in shards if not s["leader"]]
    if not store_ok:
        found.append("store: does not answer")
    if waiting:
        found.append(f"crawlers: {waiting} pending, waiting for a node to take them")
    if suspect_holding:
        found.append(f"nodes: {suspect_holding} suspect, still holding crawlers")
    return found


def _affected(session: Session, now: datetime) -> tuple[int, int]:
    """(crawlers waiting past their first placement's grace, suspect nodes holding crawlers)."""
    waiting = session.scalar(
        select(func.count())
        .select_from(Crawler)
        .where(
            Crawler.state == "pending",
            Crawler.created_at < now - timedelta(seconds=PENDING_GRACE),
        )
    )
    holding = session.scalar(
        select(func.count(func.distinct(Assignment.node_id)))
        .join(Node, Node.id == Assignment.node_id)
        .where(Node.state == "suspect")
    )
    return int(waiting or 0), int(holding or 0)


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
    reasons = degraded_reasons(per_shard, store_ok, *_affected(session, now))
    return {
        "status": "degraded" if reasons else "ok",
        "reasons": reasons,
        "nodes": nodes,
        "crawlers": _counts_by(session, Crawler.state),
        "monitor": monitor,
        "store": {"ok": store_ok},
        "queue": {"configured": queue is not None, "ok": None if queue is None else queue.ping()},
    }
