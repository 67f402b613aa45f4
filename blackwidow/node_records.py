"""Nodes as the hub records them: registration, leaving, removal, listing and the count
autoscalers read."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from blackwidow.alerts import events
from blackwidow.alerts.events import Emitter
from blackwidow.core.domain_errors import Conflict, NotFound
from blackwidow.core.node_protocol import Shard
from blackwidow.models import LIVE_NODE_STATES, MAX_INTEGER, Crawler, MonitorLock, Node, utcnow
from blackwidow.monitor.leader import lock_name

_NODE_FIELDS = ("id", "url", "state", "generation", "capacity", "subscribers", "data_sources")
_NODE_FIELDS += ("cpu_percent", "memory_bytes", "last_polled_at")
DEFAULT_CAPACITY = 100.0  # what a node is assumed to hold when none has ever said
LEFT_KEPT_FOR = 600.0  # seconds a node that left stays listed as `left` before it is deleted


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


def count(
    session: Session, weighted: bool = False, headroom: float = 0.0, floor: int = 1
) -> dict[str, int]:
    """Active nodes, and how many the enabled crawlers' distinct data sources call for (see
    desired). A leaving node is not counted: it is going."""
    live = list(session.scalars(select(Node.capacity).where(Node.state.in_(LIVE_NODE_STATES))))
    data_sources = (
        session.scalar(
            select(func.count(func.distinct(Crawler.uuid))).where(Crawler.enabled.is_(True))
        )
        or 0
    )
    known = session.scalar(select(Node.capacity).order_by(Node.registered_at.desc()).limit(1))
    wanted = desired(data_sources, live, known, weighted, headroom, floor)
    return {"active": len(live), "desired": wanted}


def desired(
    data_sources: int,
    capacities: list[int],
    known: int | None,
    weighted: bool,
    headroom: float,
    floor: int = 1,
) -> int:
    """Nodes enough for `data_sources`, never fewer than `floor` (BLACKWIDOW_MIN_NODES: a
    spare for redundancy): by the live nodes' average capacity, or under weighted routing by
    capacity itself (nodes_needed). Pure.

    It reads only the crawlers and the capacity nodes declared, never their load, so it holds
    still while they do. With no node live, the capacity the latest node registered with
    (`known`) stands in: the answer stays what it was before the last node left.
    """
    fallback = float(known) if known is not None else DEFAULT_CAPACITY
    if weighted:
        return max(floor, nodes_needed(data_sources, capacities, headroom, fallback))
    average = sum(capacities) / len(capacities) if capacities else fallback
    return max(floor, 1, math.ceil(data_sources / average))


def _locked(session: Session, node_id: int) -> Node:
    """The node's row, locked for this transaction. No id passes MAX_INTEGER, and PostgreSQL
    refuses to compare one that does: not asked."""
    node = session.get(Node, node_id, with_for_update=True) if node_id <= MAX_INTEGER else None
    if node is None:
        raise NotFound(f"node {node_id}: not found")
    return node


def leave(session: Session, node_id: int, generation: int) -> Node:
    """A node stopping gracefully says so: it is `leaving`. The monitor routes nothing more
    to it and moves its crawlers off it at its next pass, the way any crawler moves (removed
    there first, so leases stay exact); once the node stopped and its polls fail, it has
    `left` (blackwidow.monitor.liveness). Saying it again changes nothing."""
    node = _locked(session, node_id)
    if node.state in ("leaving", "left"):
        return node
    if node.generation != generation or node.state == "dead":
        raise Conflict(
            f"generation: node {node_id} is in generation {node.generation} ({node.state}),"
            f" not {generation}",
            "generation",
        )
    node.state = "leaving"
    session.flush()
    return node


def remove(session: Session, node_id: int) -> None:
    """An admin forgets a dead (or left) node; a live one is refused: it would only register
    again, and stopping it makes it leave by itself."""
    node = _locked(session, node_id)
    if node.state not in ("dead", "left"):
        raise Conflict(
            f"node {node_id} is {node.state}: only a dead node can be removed (stop it, and it"
            " leaves by itself)",
            "state",
        )
    session.delete(node)
    session.flush()


def forget_left(session: Session, left_before: datetime) -> int:
    """Delete the nodes that left, last polled before `left_before`; how many went."""
    result = session.execute(
        delete(Node).where(Node.state == "left", Node.last_polled_at < left_before)
    )
    return int(result.rowcount or 0)


def nodes_needed(
    data_sources: int,
    capacities: list[int],
    headroom: float,
    average: float = DEFAULT_CAPACITY,
) -> int:
    """Nodes enough for `data_sources` plus `headroom` (a fraction) of capacity, under
    weighted routing, where a node at its capacity takes nothing new. Pure.

    The largest live nodes count first, so the answer is the fewest of them that hold it
    all; if every live node together is short, as many more as the shortfall needs at their
    average capacity (or `average`, when none is live). Never less than 1.
    """
    needed = math.ceil(data_sources * (1 + headroom))
    held = 0
    for used, capacity in enumerate(sorted(capacities, reverse=True), start=1):
        held += capacity
        if held >= needed:
            return used
    if capacities:
        average = sum(capacities) / len(capacities)
    return max(1, len(capacities) + math.ceil((needed - held) / average))
