"""Crawler records: create, read, change and delete a user's crawlers, scoped to the caller."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from marshmallow import ValidationError
from sqlalchemy import Select, insert, select
from sqlalchemy.orm import Session

from blackwidow import changes, crawler_names, name_rule
from blackwidow.auth import Caller
from blackwidow.core.domain_errors import DomainError, Forbidden, Invalid, NotFound
from blackwidow.crawler_keys import key_for
from blackwidow.models import MAX_INTEGER, Assignment, Crawler, Node
from blackwidow.node_client import NodeClient, NodeTarget, NodeUnreachable
from sources import timetable
from sources.model import DEFAULT_PRIORITY
from sources.registry import SOURCE_TYPES

_EDITABLE = (
    *("name", "item_limit", "retention_days", "recollect_after", "enabled", "priority"),
    "schedule",
)
# what a create writes; the columns' defaults fill the rest (rate, lease, timestamps)
_WRITTEN = (
    *("uuid", "user_id", "name", "source", "query", "item_limit", "retention_days"),
    *("recollect_after", "enabled", "priority", "schedule", "state"),
    *("items_collected", "items_delivered", "last_error"),
)
# built once: a create runs it for every crawler made, and building it costs more than that
_INSERT = insert(Crawler.__table__).returning(Crawler.__table__.c.id, sort_by_parameter_order=True)
# one instance per source type, built once: a marshmallow schema keeps no state between loads,
# and building one copies every declared field
_QUERY_SCHEMAS = {name: kind.query_schema() for name, kind in SOURCE_TYPES.items()}


def validated_query(source: str, query: dict[str, Any]) -> dict[str, Any]:
    """The query checked against its source type's schema; errors name e.g. `query.feeds.0`."""
    if source not in SOURCE_TYPES:
        known = ", ".join(sorted(SOURCE_TYPES))
        raise Invalid(f"source: unknown source, expected one of {known}", "source")
    try:
        return _QUERY_SCHEMAS[source].load(query)
    except ValidationError as error:
        raise Invalid.from_messages(error.messages, "query") from None


def validated_schedule(schedule: Any) -> dict[str, Any] | None:
    """The schedule checked by sources.timetable; errors name e.g. `schedule.cron`."""
    try:
        return timetable.check(schedule)
    except timetable.ScheduleError as error:
        raise Invalid(f"{error.field}: {error}", error.field) from None


def create(session: Session, caller: Caller, data: dict[str, Any]) -> Crawler:
    """One crawler of the caller's; a name they already use is a Conflict naming `name`."""
    crawler = new(session, owner(caller), data)
    crawler_names.check(session, crawler.user_id, [crawler.name])
    _add(session, [crawler])
    return crawler


def create_batch(session: Session, caller: Caller, entries: list[dict[str, Any]]) -> list[Crawler]:
    """Many crawlers in one transaction, in order: all of them, or none if any entry is wrong
    (the error names it, e.g. `crawlers.3.query.feeds.0`, or `crawlers.3.name` for a name
    the user's crawlers or an earlier entry hold)."""
    user_id = owner(caller)
    made = [_entry(session, user_id, n, data) for n, data in enumerate(entries)]
    crawler_names.check(session, user_id, [crawler.name for crawler in made], batch=True)
    _add(session, made)
    return made


def owner(caller: Caller) -> int:
    """The user whose crawler a create makes: the caller; the admin owns none."""
    if caller.user_id is None:
        raise Forbidden("crawlers belong to users: use a user token")
    return caller.user_id


def new(session: Session, user_id: int, data: dict[str, Any]) -> Crawler:
    """A user's crawler from one validated create body, not yet added to the session."""
    query = validated_query(data["source"], data["query"])
    schedule = validated_schedule(data.get("schedule"))
    enabled = data.get("enabled", True)
    return Crawler(
        user_id=user_id,
        name=checked_name(data["name"]),
        source=data["source"],
        query=query,
        uuid=key_for(session, user_id, data["source"], query),
        item_limit=data.get("item_limit"),
        retention_days=data.get("retention_days"),
        recollect_after=data.get("recollect_after"),
        enabled=enabled,
        priority=data.get("priority", DEFAULT_PRIORITY),
        schedule=schedule,
        state="pending" if enabled else "disabled",
        items_collected=0,
        items_delivered=0,
        rate=0.0,  # not written: the column's default, set here for the create's answer
        last_error=None,
    )


def checked_name(name: str) -> str:
    """The name as stored (blackwidow.name_rule); the schema checks it too, but an import's
    names come from a file."""
    try:
        return name_rule.checked(name)
    except name_rule.NameRefused as refused:
        raise Invalid(f"name: {refused}", "name") from None


def _entry(session: Session, user_id: int, n: int, data: dict[str, Any]) -> Crawler:
    try:
        return new(session, user_id, data)
    except DomainError as error:
        raise error.within(f"crawlers.{n}") from None


def _add(session: Session, made: list[Crawler]) -> None:
    """Insert the crawlers in one Core statement, their ids coming back in order, and their
    crawler changes in another. A create only writes rows, so it skips the ORM's unit of
    work: the crawlers stay outside the session, answered from what was written."""
    rows = [{name: getattr(crawler, name) for name in _WRITTEN} for crawler in made]
    with crawler_names.guarded(made[0].name):  # another request may take a name in between
        ids = session.connection().scalars(_INSERT, rows).all()
    for crawler, crawler_id in zip(made, ids, strict=True):
        crawler.id = crawler_id
    changes.record(session, made)


def visible(caller: Caller) -> Any:
    """The WHERE clause of the crawlers a caller may see: all for the admin, else their own."""
    return True if caller.is_admin else Crawler.user_id == caller.user_id


def listing(session: Session, caller: Caller, **filters: Any) -> list[Crawler]:
    """The caller's crawlers (the admin's: all) in id order, narrowed as `_chosen` says."""
    return list(session.scalars(_chosen(select(Crawler), caller, **filters)))


def listing_with_nodes(
    session: Session, caller: Caller, **filters: Any
) -> list[tuple[Crawler, int | None]]:
    """Each crawler `listing` gives, with the node it is assigned to, in the same query (only
    the listed crawlers' assignments are read): what the REST list and the dashboard show."""
    joined = select(Crawler, Assignment.node_id).outerjoin(
        Assignment, Assignment.crawler_id == Crawler.id
    )
    return [
        (crawler, node_id)
        for crawler, node_id in session.execute(_chosen(joined, caller, **filters))
    ]


def _chosen(
    query: Select[Any],
    caller: Caller,
    state: str | None = None,
    source: str | None = None,
    source_key: str | None = None,
    name: str | None = None,
    after: int | None = None,
    limit: int | None = None,
) -> Select[Any]:
    """A query of crawlers narrowed to those the caller may see, by state, source type,
    source key or a part of the name (in any case; SQLite folds ASCII letters only), in id
    order from past `after` (a keyset page, whose index is the primary key), `limit` at most."""
    query = query.where(visible(caller)).order_by(Crawler.id)
    for column, wanted in (
        (Crawler.state, state),
        (Crawler.source, source),
        (Crawler.uuid, source_key),
    ):
        if wanted is not None:
            query = query.where(column == wanted)
    if name is not None:
        query = query.where(Crawler.name.icontains(name, autoescape=True))
    if after is not None:
        query = query.where(Crawler.id > after)
    return query if limit is None else query.limit(limit)


def of_user(session: Session, user_id: int) -> list[Crawler]:
    owned = select(Crawler).where(Crawler.user_id == user_id).order_by(Crawler.id)
    return list(session.scalars(owned))


def get(session: Session, caller: Caller, crawler_id: int) -> Crawler:
    """One crawler; another user's crawler is reported as missing, not forbidden.

    No id passes MAX_INTEGER, and PostgreSQL refuses to compare one that does: not asked.
    """
    crawler = None
    if crawler_id <= MAX_INTEGER:
        crawler = session.scalar(select(Crawler).where(Crawler.id == crawler_id, visible(caller)))
    if crawler is None:
        raise NotFound(f"no crawler {crawler_id}", "id")
    return crawler


def update(session: Session, crawler: Crawler, edits: dict[str, Any]) -> Crawler:
    """Apply a PATCH; the monitor notices the change and updates the subscriber in place."""
    if not edits:
        return crawler
    former_key = crawler.uuid
    if "schedule" in edits:
        edits = {**edits, "schedule": validated_schedule(edits["schedule"])}
    if "query" in edits:
        crawler.query = validated_query(crawler.source, edits["query"])
        crawler.uuid = key_for(session, crawler.user_id, crawler.source, crawler.query)
    if "name" in edits:
        edits = {**edits, "name": checked_name(edits["name"])}
    renamed = "name" in edits and edits["name"] != crawler.name
    if renamed:
        crawler_names.check(session, crawler.user_id, [edits["name"]], crawler.id)
    for name in _EDITABLE:
        if name in edits:
            setattr(crawler, name, edits[name])
    reconsider(crawler)
    if renamed:  # written now: a race for the name is this call's Conflict, not the commit's
        with crawler_names.guarded(edits["name"]):
            session.flush()
    changes.record(session, [crawler], {crawler.id: former_key})
    return crawler


def edit(session: Session, caller: Caller, crawler_id: int, edits: dict[str, Any]) -> Crawler:
    """PATCH /crawlers/<id> and the dashboard's forms alike: the caller's crawler (another
    user's is missing), changed by edits a CrawlerUpdate schema has validated."""
    return update(session, get(session, caller, crawler_id), edits)


def remove(session: Session, crawler: Crawler) -> None:
    """Delete a crawler; the monitor removes its subscriber from its node."""
    changes.record(session, [crawler])
    session.delete(crawler)


def reconsider(crawler: Crawler) -> Crawler:
    """After a change to the crawler or what it runs with, it gets another chance."""
    if not crawler.enabled:
        crawler.state = "disabled"
    elif crawler.state in ("disabled", "limit_reached", "failed"):
        crawler.state = "pending"  # re-enabled, or its limit raised: the monitor assigns it again
        crawler.last_error = None
    return crawler


def next_start(crawler: Crawler, now: float) -> datetime | None:
    """When a crawler waiting for its window (state `scheduled`) starts: the window's next
    opening, or the current one's, when the monitor has not started it yet."""
    if crawler.state != "scheduled":
        return None
    start = timetable.next_start_at(crawler.schedule, now)
    return None if start is None else datetime.fromtimestamp(start, UTC)


def node_of(session: Session, crawler_id: int) -> int | None:
    return session.scalar(select(Assignment.node_id).where(Assignment.crawler_id == crawler_id))


def running_node(session: Session, crawler_id: int) -> NodeTarget | None:
    """The live node a crawler is assigned to, as the hub addresses it; None when none."""
    row = session.execute(
        select(Node.id, Node.url, Node.generation)
        .join(Assignment, Assignment.node_id == Node.id)
        .where(Assignment.crawler_id == crawler_id, Node.state != "dead")
    ).first()
    return None if row is None else NodeTarget(row.id, row.url, row.generation)


def running_nodes(session: Session, crawler_ids: Sequence[int]) -> dict[int, NodeTarget]:
    """crawler id -> the live node it is assigned to, for those of `crawler_ids` that have one."""
    rows = session.execute(
        select(Assignment.crawler_id, Node.id, Node.url, Node.generation)
        .join(Node, Assignment.node_id == Node.id)
        .where(Assignment.crawler_id.in_(crawler_ids), Node.state != "dead")
    )
    return {row.crawler_id: NodeTarget(row.id, row.url, row.generation) for row in rows}


def feed_titles(
    client: NodeClient, running: Mapping[int, NodeTarget], within: float
) -> dict[str, str]:
    """Feed URL -> the feed's own title, as the nodes running these crawlers last read it.
    One call per crawler, for `within` seconds at most (an export of many crawlers is not held
    up by them); a feed not asked for, or whose node does not answer, stays untitled. No
    transaction should be open: it waits on the nodes."""
    titles: dict[str, str] = {}
    deadline = time.monotonic() + within
    for crawler_id, node in running.items():
        if time.monotonic() >= deadline:
            break
        for feed in feed_health(client, node, crawler_id)["feeds"] or ():
            if feed.get("title"):
                titles[feed["url"]] = feed["title"]
    return titles


def feed_health(client: NodeClient, node: NodeTarget | None, crawler_id: int) -> dict[str, Any]:
    """Each feed's health as the node running the crawler tells it now (no transaction should
    be open: it waits on the node); `feeds` is None when no node runs it or answers."""
    if node is None:
        return {"node_id": None, "feeds": None}
    try:
        detail = client.subscriber(node, crawler_id)
    except NodeUnreachable:
        detail = None
    return {"node_id": node.id, "feeds": detail.get("feeds") if detail else None}
