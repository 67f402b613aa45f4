"""Nodes as the hub records them: registration, listing and the count autoscalers read."""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from blackwidow.alerts import events
from blackwidow.alerts.events import Emitter
from blackwidow.core.node_protocol import Shard
from blackwidow.models import LIVE_NODE_STATES, Crawler, MonitorLock, Node, utcnow
from blackwidow.monitor.leader import lock_name

_NODE_FIELDS = ("id", "url", "state", "generation", "capacity", "subscribers", "data_sources")
_NODE_FIELDS += ("cpu_percent", "memory_bytes", "last_polled_at")
DEFAULT_CAPACITY = 100.0  # what a node is assumed to hold when none is live to say


def register(session: Session, url: str, capacity: int, alerts: Emitter) -> Node:
    """Record a node as active in a new generation; a known URL keeps its id.

    Keeping the id keeps routing stable: a restarted node gets its crawlers back. The new
    generation fences off whatever answered at that URL before: hub calls still carrying
    the old one are refused by the node. A node that was declared dead is back (node.back).
    """
    node = session.scalar(select(Node).where(Node.url == url))
    if node is None:
        node = Node(url=url)
        session.add(node)
    elif node.state == "dead":
        alerts.emit(session, [events.node_back(node.id, url)])
    node.capacity = capacity
    node.state = "active"
    node.generation = (node.generation or 0) + 1
    node.registered_at = utcnow()
    session.flush()
    return node


def listing(session: Session, after: int | None = None, limit: int | None = None) -> list[Node]:
    """Nodes in id order, from past `after` (a keyset page), `limit` at most."""
    query = select(Node).order_by(Node.id).limit(limit)
    if after is not None:
        query = query.where(Node.id > after)
    return list(session.scalars(query))


def report(
    session: Session, shards: int, after: int | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """Nodes with their phi: what `GET /api/v1/nodes` answers, a page at a time, and the
    dashboard shows. Their counts are kept on their rows, updated by each poll: a page costs
    its rows and the one row of the leader's figures, whatever the cluster's size."""
    phi = judged_phi(session, shards)
    return [
        {**{name: getattr(node, name) for name in _NODE_FIELDS}, "phi": phi.get(node.id)}
        for node in listing(session, after, limit)
    ]


def judged_phi(session: Session, shards: int) -> dict[int, float]:
    """Each live node's phi as shard 0's leader last judged it (only it judges nodes), from
    the figures it saves with its lock every cycle (blackwidow.monitor.figures)."""
    saved = session.scalar(
        select(MonitorLock.figures).where(MonitorLock.name == lock_name(Shard(0, shards)))
    )
    judged = ((saved or {}).get("phi") or {}).items()
    return {int(node): float(value) for node, value in judged}


def count(session: Session, weighted: bool = False, headroom: float = 0.0) -> dict[str, int]:
    """Active nodes, and how many the enabled crawlers' distinct data sources call for: by
    the live nodes' average capacity, or under weighted routing by capacity itself (see
    capacity_needed)."""
    live = list(session.scalars(select(Node.capacity).where(Node.state.in_(LIVE_NODE_STATES))))
    data_sources = (
        session.scalar(
            select(func.count(func.distinct(Crawler.uuid))).where(Crawler.enabled.is_(True))
        )
        or 0
    )
    if weighted:
        return {"active": len(live), "desired": nodes_needed(data_sources, live, headroom)}
    average = sum(live) / len(live) if live else DEFAULT_CAPACITY
    return {"active": len(live), "desired": max(1, math.ceil(data_sources / average))}


def nodes_needed(data_sources: int, capacities: list[int], headroom: float) -> int:
    """Nodes enough for `data_sources` plus `headroom` (a fraction) of capacity, under
    weighted routing, where a node at its capacity takes nothing new. Pure.

    The largest live nodes count first, so the answer is the fewest of them that hold it
    all; if every live node together is short, as many more as the shortfall needs at their
    average capacity. Never less than 1.
    """
    needed = math.ceil(data_sources * (1 + headroom))
    held = 0
    for used, capacity in enumerate(sorted(capacities, reverse=True), start=1):
        held += capacity
        if held >= needed:
            return used
    average = sum(capacities) / len(capacities) if capacities else DEFAULT_CAPACITY
    return max(1, len(capacities) + math.ceil((needed - held) / average))
