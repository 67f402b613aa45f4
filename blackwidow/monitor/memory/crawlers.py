"""The monitor's memory of its shard's crawlers: read once when it starts leading, then kept
current from crawler changes and node reports, so no cycle reads every crawler.

Reads and writes SQL in bulk (one statement per batch of ids, one executemany per kind of
update), on SQLite and PostgreSQL alike. Decides nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.orm import Session

from blackwidow.core.node_protocol import Shard
from blackwidow.models import Assignment, Crawler, User, utcnow
from blackwidow.monitor.quota import LeaseView, ShardBudget, waits_for_budget
from blackwidow.monitor.rates import Sample, samples_of
from blackwidow.monitor.states import RUNNABLE_STATES
from sources.model import SubscriberSpec

CHUNK = 500  # ids per IN list: within every back end's limit on bound parameters


@dataclass(slots=True, eq=False)
class Tracked:
    """A crawler as the monitor holds it: its configuration and what nodes said of it."""

    id: int
    uuid: str
    user_id: int
    source: str
    query: dict[str, Any]
    item_limit: int | None
    retention_days: int | None
    enabled: bool
    priority: str
    state: str
    items_collected: int
    items_delivered: int
    lease: int
    rate: float
    last_error: str | None
    recollect_after: int | None = None
    schedule: dict[str, Any] | None = None  # when it polls, or the window it runs in
    spec: SubscriberSpec | None = None  # what to push, while it is runnable
    failing: bool = False  # what its node last said: its data source gets nothing
    digest: str | None = None
    # a node the hub lost may store under its lease until then (the hub's clock), so it runs
    # nowhere else before; its count is unsure, so its lease is kept, until a node reports it
    lost_until: float | None = None
    rate_samples: tuple[Sample, ...] = ()  # what its shown rate is read from (monitor.rates)


_COLUMNS = (
    Crawler.id,
    Crawler.uuid,
    Crawler.user_id,
    Crawler.source,
    Crawler.query,
    Crawler.item_limit,
    Crawler.retention_days,
    Crawler.enabled,
    Crawler.priority,
    Crawler.state,
    Crawler.items_collected,
    Crawler.items_delivered,
    Crawler.lease,
    Crawler.rate,
    Crawler.last_error,
    Crawler.recollect_after,
    Crawler.schedule,
)
_LOADED = (*_COLUMNS, Crawler.rate_samples)


def chunks(ids: Iterable[int]) -> Iterable[list[int]]:
    ordered = sorted(ids)
    for start in range(0, len(ordered), CHUNK):
        yield ordered[start : start + CHUNK]


def load(session: Session, shard: Shard, ids: Collection[int] | None = None) -> dict[int, Tracked]:
    """The shard's crawlers (all, or those of `ids` that still exist), by id."""
    queries = (
        [select(*_LOADED)]
        if ids is None
        else [select(*_LOADED).where(Crawler.id.in_(chunk)) for chunk in chunks(ids)]
    )
    found = {}
    for query in queries:
        for row in session.execute(query):
            if shard.owns(row.uuid):
                *columns, samples = row
                found[row.id] = Tracked(*columns, rate_samples=samples_of(samples))
    return found


def user_limits(session: Session, user_ids: Collection[int] | None = None) -> dict[int, int]:
    """user id -> item limit, for users that have one (all users, or those of `user_ids`)."""
    query = select(User.id, User.item_limit).where(User.item_limit.is_not(None))
    if user_ids is None:
        return dict(session.execute(query).all())
    limits: dict[int, int] = {}
    for chunk in chunks(user_ids):
        limits.update(session.execute(query.where(User.id.in_(chunk))).all())
    return limits


def elsewhere(session: Session, limits: Mapping[int, int], shard: Shard) -> dict[int, ShardBudget]:
    """user id -> the user's budget with what other shards' crawlers hold, stored and wait
    for, with the users' rows locked until the transaction ends: a shard leader that grants
    from the rest of a budget must not race another doing the same."""
    others: dict[int, list[Any]] = {user_id: [] for user_id in limits}
    for chunk in chunks(set(limits)):
        session.execute(update(User).where(User.id.in_(chunk)).values(item_limit=User.item_limit))
        rows = session.execute(
            select(
                Crawler.user_id,
                Crawler.uuid,
                Crawler.lease,
                Crawler.items_collected,
                Crawler.item_limit,
                Crawler.state,
            ).where(Crawler.user_id.in_(chunk))
        )
        for row in rows:
            if not shard.owns(row.uuid):
                others[row.user_id].append(row)
    return {
        user_id: ShardBudget(
            limit,
            held_elsewhere=sum(max(row.lease, row.items_collected) for row in others[user_id]),
            stored_elsewhere=sum(row.items_collected for row in others[user_id]),
            starved_elsewhere=sum(_waits(row) for row in others[user_id]),
        )
        for user_id, limit in limits.items()
    }


def _waits(row: Any) -> bool:
    running = row.state in RUNNABLE_STATES
    view = LeaseView(0, row.items_collected, row.lease, 0.0, row.item_limit, running)
    return waits_for_budget(view)


# by id, in SQL alone: a crawler deleted since the memory read it updates nothing, where the
# ORM's bulk update would fail the whole transaction for the row it did not find
_write = update(Crawler.__table__).where(Crawler.__table__.c.id == bindparam("b_id"))


def write(session: Session, rows: Mapping[int, Mapping[str, Any]]) -> None:
    """Bulk-update crawlers: crawler id -> {column: value}; one executemany per column set.
    A crawler deleted meanwhile is skipped: its deletion reaches the memory with the next
    take of crawler changes."""
    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    now = utcnow()  # once, rather than the column's onupdate once per row
    for crawler_id, values in rows.items():
        row = {"b_id": crawler_id, "updated_at": now, **values}
        by_columns.setdefault(tuple(sorted(values)), []).append(row)
    for batch in by_columns.values():
        session.execute(_write, batch)


def save_assignments(
    session: Session, placed: Mapping[int, tuple[int, str]], unplaced: Collection[int]
) -> None:
    """Record where crawlers now run (crawler id -> (node, digest)) and that some run nowhere."""
    gone = set(unplaced) | set(placed)
    for chunk in chunks(gone):
        session.execute(delete(Assignment).where(Assignment.crawler_id.in_(chunk)))
    now = utcnow()
    rows = [
        {"crawler_id": c, "node_id": node, "digest": digest, "pushed_at": now}
        for c, (node, digest) in placed.items()
    ]
    if rows:  # Core, not the ORM's bulk insert: a placement writes 100,000 at once
        session.connection().execute(insert(Assignment.__table__), rows)


def recorded_assignments(session: Session, shard: Shard) -> dict[int, int]:
    """crawler id -> node id as recorded, for the shard's crawlers: read once, when a leader
    starts. Another shard's crawler would look deleted here, and lose its row."""
    rows = session.execute(
        select(Assignment.crawler_id, Assignment.node_id, Crawler.uuid).join(
            Crawler, Crawler.id == Assignment.crawler_id
        )
    )
    return {row.crawler_id: row.node_id for row in rows if shard.owns(row.uuid)}
