"""The Cassandra store's item reads: pages and streams of a crawler's items, day partition by
day partition, and pages of a conversation, all on the driver's paging state (never skipping
rows to reach a page).

A page's position is the partition it stopped in and the driver's paging state there,
base64; each request asks the server for exactly the rows it still needs (fetch_size), so a
driver page ends where the page ends and the paging state says where to go on.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Collection, Iterator, Sequence
from datetime import UTC, date, datetime, time
from typing import Any

from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import BoundStatement, PreparedStatement, SimpleStatement

from blackwidow.core.store.cassandra.rows import BUCKETS, DAY, day_of, item_from_row
from blackwidow.core.store.cassandra.statements import ITEM, Statements
from blackwidow.core.store.windows import STREAM_BATCH, BadPosition, ItemPage, Window, checked
from sources.model import Item

DAYS_IN_FLIGHT = 32  # crawlers whose days a search asks for at once
_EARLIEST = datetime.min.replace(tzinfo=UTC)  # an open side of a published_at window
_LATEST = datetime.max.replace(tzinfo=UTC)


def page(
    session: Session, st: Statements, crawler_id: int, limit: int, window: Window, after: Any
) -> ItemPage:
    """Days newest first from the position's day; within each, the rows still needed."""
    start_day, state = _day_position(after)
    found: list[Item] = []
    for day in _days(session, st, crawler_id, window, start_day):
        if state is not None and day != start_day:
            state = None  # the position's day is gone (expired): its state means nothing here
        if len(found) == limit:
            return ItemPage(found, [day.isoformat(), None])
        while True:
            statement, values = _day_query(st, crawler_id, day, window)
            result = _execute(session, statement, values, limit - len(found), state)
            found += [item_from_row(row, row.conversation_id) for row in result.current_rows]
            state = result.paging_state
            if state is None:
                break
            if len(found) == limit:
                return ItemPage(found, [day.isoformat(), _encoded(state)])
    return ItemPage(found)


def stream(session: Session, st: Statements, crawler_id: int, window: Window) -> Iterator[Item]:
    """Day by day; the driver fetches the next STREAM_BATCH rows as the last are consumed."""
    for day in _days(session, st, crawler_id, window, None):
        statement, values = _day_query(st, crawler_id, day, window)
        bound = BoundStatement(statement, fetch_size=STREAM_BATCH).bind(values)
        for row in session.execute(bound):
            yield item_from_row(row, row.conversation_id)


def conversation_page(
    session: Session,
    st: Statements,
    conversation_id: str,
    crawler_ids: Collection[int],
    limit: int,
    after: Any,
) -> ItemPage:
    """One partition, oldest first, the caller's crawlers kept client-side while paging.

    `crawler_id` is the second clustering column, so the server could only filter on it with
    ALLOW FILTERING and IN, which Cassandra refuses there; a conversation is small, and
    asking each time for just the rows still needed keeps the page boundary on a paging state.
    """
    wanted = set(crawler_ids)
    state = _decoded(checked(after, ((str, type(None)),))[0]) if after is not None else None
    found: list[Item] = []
    while wanted:
        result = _execute(session, st.conversation, (conversation_id,), limit - len(found), state)
        rows = (row for row in result.current_rows if row.crawler_id in wanted)
        found += [item_from_row(row, conversation_id) for row in rows]
        state = result.paging_state
        if state is None:
            break
        if len(found) == limit:
            return ItemPage(found, [_encoded(state)])
    return ItemPage(found)


def search(
    session: Session,
    st: Statements,
    ks: str,
    words: Sequence[str],
    crawler_ids: Collection[int],
    limit: int,
    window: Window,
    after: Any,
) -> ItemPage:
    """Newest day first, crawler by crawler within a day (in id order), newest first within
    each: one single-partition query per crawler and day, its words matched by the SAI index
    on `words`. The position is the partition a page stopped in and the paging state there."""
    start = _search_position(after)
    found: list[Item] = []
    query = _search_query(ks, len(words), window)
    for day, crawler_id in _partitions(session, st, crawler_ids, window, start):
        state = start[2] if start is not None and (day, crawler_id) == start[:2] else None
        while True:
            if len(found) == limit:
                return ItemPage(found, [day.isoformat(), crawler_id, _encoded_or_none(state)])
            values = (crawler_id, day, *_day_bounds(day, window), *words, *_published(window))
            statement = SimpleStatement(query, fetch_size=limit - len(found))
            result = session.execute(statement, values, paging_state=state)
            found += [item_from_row(row, row.conversation_id) for row in result.current_rows]
            state = result.paging_state
            if state is None:
                break
    return ItemPage(found)


def _partitions(
    session: Session,
    st: Statements,
    crawler_ids: Collection[int],
    window: Window,
    start: tuple[date, int, bytes | None] | None,
) -> list[tuple[date, int]]:
    """The (day, crawler) partitions of these crawlers in the window, newest day first and
    crawlers in id order, from the position's on."""
    asked = sorted(set(crawler_ids))
    span = _day_range(window, start[0] if start is not None else None)
    answers = execute_concurrent_with_args(  # the crawlers' days, DAYS_IN_FLIGHT at a time
        session, st.days_between, [(c, *span) for c in asked], concurrency=DAYS_IN_FLIGHT
    )
    partitions = sorted(
        (
            (row.day.date(), crawler_id)
            for crawler_id, (_, rows) in zip(asked, answers, strict=True)
            for row in rows
        ),
        key=lambda partition: (-partition[0].toordinal(), partition[1]),
    )
    if start is None:
        return partitions
    return [(d, c) for d, c in partitions if d < start[0] or (d == start[0] and c >= start[1])]


def _search_query(ks: str, word_count: int, window: Window) -> str:
    """One partition, cut to the window on fetched_at by clustering bounds, every word matched
    by the index; a bounded published_at window is filtered within the one partition."""
    query = (
        f"SELECT crawler_id, item_id, fetched_at, conversation_id, {ITEM}"
        f" FROM {ks}.items_by_crawler WHERE crawler_id = %s AND day = %s"
        " AND fetched_at >= %s AND fetched_at < %s" + " AND words CONTAINS %s" * word_count
    )
    if window.by == "published_at" and window.bounded:
        query += " AND published_at >= %s AND published_at < %s ALLOW FILTERING"
    return query


def _day_bounds(day: date, window: Window) -> tuple[datetime, datetime]:
    """The day, cut to a fetched_at window."""
    low = datetime.combine(day, time(), UTC)
    high = low + DAY
    if window.by == "fetched_at":
        low = max(low, window.since) if window.since else low
        high = min(high, window.until) if window.until else high
    return low, high


def _published(window: Window) -> tuple[datetime, ...]:
    if window.by == "published_at" and window.bounded:
        return (window.since or _EARLIEST, window.until or _LATEST)
    return ()


def _search_position(after: Any) -> tuple[date, int, bytes | None] | None:
    if after is None:
        return None
    day, crawler_id, state = checked(after, (str, int, (str, type(None))))
    try:
        return date.fromisoformat(day), crawler_id, _decoded(state)
    except ValueError:
        raise BadPosition("not a position this store gave") from None


def _encoded_or_none(state: bytes | None) -> str | None:
    return None if state is None else _encoded(state)


def _days(
    session: Session, st: Statements, crawler_id: int, window: Window, last: date | None
) -> list[date]:
    """The crawler's days, newest first: for a fetched_at window only the days it touches
    (a published_at window may find items on any day), and none after `last`."""
    rows = session.execute(st.days_between, (crawler_id, *_day_range(window, last)))
    return [row.day.date() for row in rows]


def _day_range(window: Window, last: date | None) -> tuple[date, date]:
    low, high = date.min, date.max
    if window.by == "fetched_at":
        low = day_of(window.since) if window.since else low
        high = day_of(window.until) if window.until else high
    return low, min(high, last) if last else high


def _day_query(
    st: Statements, crawler_id: int, day: date, window: Window
) -> tuple[PreparedStatement, tuple[Any, ...]]:
    """The day's partition, cut to the window by clustering bounds on fetched_at; a bounded
    published_at window is filtered by the server within the one partition (ALLOW FILTERING
    on a fully named partition scans that partition only). Filtered server-side, the rows
    of a page are counted after filtering, so fetch_size and paging state work unchanged."""
    start = datetime.combine(day, time(), UTC)
    low, high = start, start + DAY
    if window.by == "fetched_at":
        low = max(low, window.since) if window.since else low
        high = min(high, window.until) if window.until else high
    if window.by == "fetched_at" or not window.bounded:
        return st.day_window, (crawler_id, day, low, high)
    published = (window.since or _EARLIEST, window.until or _LATEST)
    return st.day_window_published, (crawler_id, day, low, high, *published)


def _execute(
    session: Session,
    statement: PreparedStatement,
    values: tuple[Any, ...],
    rows: int,
    state: bytes | None,
) -> Any:
    """One driver page of at most `rows` rows from `state`; read `current_rows` only, since
    iterating the result would fetch further pages."""
    bound = BoundStatement(statement, fetch_size=rows).bind(values)
    return session.execute(bound, paging_state=state)


def _day_position(after: Any) -> tuple[date | None, bytes | None]:
    if after is None:
        return None, None
    day, state = checked(after, (str, (str, type(None))))
    try:
        return date.fromisoformat(day), _decoded(state)
    except ValueError:
        raise BadPosition("not a position this store gave") from None


def _encoded(state: bytes) -> str:
    return base64.urlsafe_b64encode(state).decode()


def _decoded(state: str | None) -> bytes | None:
    if state is None:
        return None
    try:
        return base64.urlsafe_b64decode(state.encode())
    except (binascii.Error, ValueError):
        raise BadPosition("not a position this store gave") from None


def stored_ids(session: Session, st: Statements, crawler_id: int) -> Iterator[str]:
    """A crawler's id rows, one bucket partition after another, STREAM_BATCH rows a page."""
    for bucket in range(BUCKETS):
        bound = st.bucket_ids.bind((crawler_id, bucket))
        bound.fetch_size = STREAM_BATCH
        yield from (row.item_id for row in session.execute(bound))
