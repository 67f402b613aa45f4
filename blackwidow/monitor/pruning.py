"""Housekeeping of the hub's SQL: rows that no longer matter, each kind gone in one DELETE.

Run by shard 0's leader on its poll thread, at most once per PRUNE_INTERVAL.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Table, and_, delete, exists, or_, select
from sqlalchemy.orm import Session

from blackwidow.models import Node, SourceRun, SubscriberRun

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


def forget_finished_runs(session: Session, grown_before: datetime) -> int:
    """Delete the subscriber and data-source runs no node can report again, and whose count
    last grew before `grown_before`; how many went.

    A run's row only keeps the highest count heard, so that growth is added once to the
    total it feeds (a crawler's `items_delivered`, a user's billed total); only runs that can
    still grow must stay. A run reports only while its node keeps the generation it reported
    in: a node declared dead or registering again has dropped every subscriber and data
    source. One generation of margin covers a poll answered just before a bump and recorded
    just after; a deleted node reports nothing. Runs of unknown origin (recorded before
    origins were) stay. A node restarted at its address replays its ledger's recent runs
    (node_protocol.REPLAY_WINDOW), whatever its generation: their rows wait out twice that.
    """
    tables = (SubscriberRun.__table__, SourceRun.__table__)
    return sum(_forget_finished(session, runs, grown_before) for runs in tables)


def _forget_finished(session: Session, runs: Table, grown_before: datetime) -> int:
    nodes = Node.__table__
    can_report = exists(
        select(nodes.c.id).where(
            nodes.c.id == runs.c.node_id, nodes.c.generation < runs.c.generation + 2
        )
    )
    quiet = or_(runs.c.heard_at.is_(None), runs.c.heard_at < grown_before)
    result = session.execute(delete(runs).where(runs.c.node_id.is_not(None), ~can_report, quiet))
    return result.rowcount
