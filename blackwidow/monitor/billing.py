"""Delivered accounting (what billed sources charge for): per crawler, and per user as billed.

A node reports, for each subscriber, its `run` (new each time the node creates the
subscriber) and `delivered`, the items the provider delivered in that run so far. The hub
keeps the highest count heard per run and adds only the growth to the crawler's
`items_delivered`, so repeated polls, a hub restart, and two nodes reporting one crawler
during a move (two runs) never count an item twice.

Data sources report the same way per user (`run`, `delivered: {user id: n}`): an item that
reached three of a user's crawlers over one connection is billed, and counted, once, in the
user's billed total per source type.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, NamedTuple

from sqlalchemy import case, select
from sqlalchemy.orm import Session

from blackwidow.db import insert_for
from blackwidow.models import (
    MAX_INTEGER,
    BilledTotal,
    Crawler,
    SourceRun,
    SubscriberRun,
    User,
    utcnow,
)
from blackwidow.monitor.memory.crawlers import chunks

log = logging.getLogger(__name__)

RUN_LENGTH = 32  # a uuid4 in hex: the width of subscriber_runs.run


class Origin(NamedTuple):
    """The node and node generation a report came from: a run can report again only while
    its node keeps that generation (blackwidow.monitor.pruning)."""

    node_id: int
    generation: int


def reported(status: dict[str, Any]) -> tuple[str, int] | None:
    """The (run, delivered) a subscriber status reports, or None when it reports no usable
    pair (a node that does not count deliveries, or a value SQL could not store)."""
    run, delivered = status.get("run"), status.get("delivered")
    if not isinstance(run, str) or not 0 < len(run) <= RUN_LENGTH:
        return None
    if not isinstance(delivered, int) or isinstance(delivered, bool):
        return None
    if not 0 <= delivered <= MAX_INTEGER:
        return None
    return run, delivered


def known_runs(session: Session, statuses: Iterable[dict[str, Any]]) -> dict[str, SubscriberRun]:
    """The runs these statuses name that the hub has heard of before, in one query."""
    runs = {pair[0] for status in statuses if (pair := reported(status)) is not None}
    if not runs:
        return {}
    rows = session.scalars(select(SubscriberRun).where(SubscriberRun.run.in_(runs)))
    return {row.run: row for row in rows}


def vanished(
    session: Session, statuses: Iterable[dict[str, Any]], runs: dict[str, SubscriberRun]
) -> set[int]:
    """The crawlers, named by statuses of runs new to the hub (`runs` from known_runs), that
    SQL no longer holds: deleted while the monitor's memory, and their node, still held them.
    A deleted crawler's runs went with it, so each of its statuses names a new run; there is
    nothing left to count them against. One query over the new runs' crawlers."""
    named = {
        crawler_id
        for status in statuses
        if isinstance(crawler_id := status.get("crawler_id"), int)
        and (pair := reported(status)) is not None
        and pair[0] not in runs
    }
    existing: set[int] = set()
    for chunk in chunks(named):
        existing.update(session.scalars(select(Crawler.id).where(Crawler.id.in_(chunk))))
    return named - existing


def record(
    session: Session,
    runs: dict[str, SubscriberRun],
    crawler: Crawler,
    status: dict[str, Any],
    origin: Origin | None = None,
) -> None:
    """Add what is new in this status to the crawler's total; `runs` (from known_runs) gains
    any run heard for the first time, marked with the `origin` that reported it."""
    pair = reported(status)
    if pair is None:
        return
    run, delivered = pair
    row = runs.get(run)
    if row is None:
        row = runs[run] = SubscriberRun(run=run, crawler_id=crawler.id, delivered=0)
        if origin is not None:
            row.node_id, row.generation = origin
        session.add(row)
    elif row.crawler_id != crawler.id:
        log.warning("run of another crawler run=%s crawler=%s", run, crawler.id)
        return
    growth = delivered - row.delivered
    if growth > 0:
        row.delivered, row.heard_at = delivered, utcnow()
        crawler.items_delivered = min(MAX_INTEGER, crawler.items_delivered + growth)


def _count(value: Any) -> int | None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_INTEGER:
        return None
    return value


def record_sources(
    session: Session, data_sources: Iterable[tuple[Origin | None, dict[str, Any]]]
) -> None:
    """Keep the highest count each data-source run reported for each user, marked with the
    origin that first reported it, and add its growth to the user's billed total."""
    reports: dict[tuple[str, int], tuple[str, int, Origin | None]] = {}
    for origin, entry in data_sources:
        run, source, by_user = entry.get("run"), entry.get("source"), entry.get("delivered")
        if not isinstance(run, str) or not 0 < len(run) <= RUN_LENGTH:
            continue
        if not isinstance(source, str) or not isinstance(by_user, dict):
            continue
        for user, delivered in by_user.items():
            if str(user).isdigit() and (count := _count(delivered)) is not None:
                reports[(run, int(user))] = (source[:40], count, origin)
    if not reports:
        return
    runs = {run for run, _user in reports}
    users = set(session.scalars(select(User.id).where(User.id.in_({u for _r, u in reports}))))
    known = {
        (row.run, row.user_id): row
        for row in session.scalars(select(SourceRun).where(SourceRun.run.in_(runs)))
    }
    growth: dict[tuple[int, str], int] = {}
    for (run, user_id), (source, delivered, origin) in reports.items():
        row = known.get((run, user_id))
        if row is None and user_id in users:
            row = SourceRun(run=run, user_id=user_id, source=source, delivered=0)
            if origin is not None:
                row.node_id, row.generation = origin
            session.add(row)
        if row is not None and delivered > row.delivered:
            key = (user_id, row.source)
            growth[key] = growth.get(key, 0) + delivered - row.delivered
            row.delivered, row.heard_at = delivered, utcnow()
    _bill(session, growth)


def _bill(session: Session, growth: dict[tuple[int, str], int]) -> None:
    """Add (user, source) -> items to the users' billed totals, as one atomic upsert: leaders
    of several shards bill one user's totals at once, and a total read here and written back
    would lose the other leader's growth. Rows go in key order, so two leaders lock them in
    the same order and never deadlock."""
    if not growth:
        return
    rows = [
        {"user_id": user_id, "source": source, "delivered": items}
        for (user_id, source), items in sorted(growth.items())
    ]
    insert = insert_for(session)(BilledTotal).values(rows)
    total = BilledTotal.delivered + insert.excluded.delivered
    session.execute(
        insert.on_conflict_do_update(
            index_elements=[BilledTotal.user_id, BilledTotal.source],
            set_={"delivered": case((total > MAX_INTEGER, MAX_INTEGER), else_=total)},
        )
    )
