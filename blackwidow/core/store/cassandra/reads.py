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
from cassandra.query import BoundStatement, PreparedStatement

from blackwidow.core.store.cassandra import word_blocks
from blackwidow.core.store.cassandra.rows import BUCKETS, DAY, chunks, day_of, item_from_row
from blackwidow.core.store.cassandra.statements import Statements
from blackwidow.core.store.windows import STREAM_BATCH, BadPosition, ItemPage, Window, checked
from sources.model import Item

DAYS_IN_FLIGHT = 32  # crawlers whose days a search asks for at once
IDS_IN_READ = 100  # blocks, or items, a search reads by key in one request
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
    words: Sequence[str],
    crawler_ids: Collection[int],
    limit: int,
    window: Window,
    after: Any,
) -> ItemPage:
    """Newest day first, crawler by crawler within a day (in id order), newest first within
    each: in each (crawler, day) partition, the items every word's bucket rows of the word
    blocks place them under (cassandra.word_blocks), read by key. The position is the
    partition a page stopped in and the key of its last item."""
    start = _search_position(after)
    found: list[Item] = []
    if not words:
        return ItemPage(found)
    for day, crawler_id in _partitions(session, st, crawler_ids, window, start):
        below = start[2] if start is not None and (day, crawler_id) == start[:2] else None
        keys = _matching(session, st, crawler_id, day, words, window, below)
        for chunk in chunks(keys, min(limit, IDS_IN_READ)):
            for item in _items_at(session, st, crawler_id, day, chunk, window):
                found.append(item)
                if len(found) == limit:
                    at = word_blocks.millis(item.fetched_at)
                    return ItemPage(found, [day.isoformat(), crawler_id, at, item.id])
    return ItemPage(found)


def _matching(
    session: Session,
    st: Statements,
    crawler_id: int,
    day: date,
    words: Sequence[str],
    window: Window,
    below: word_blocks.Key | None,
) -> list[word_blocks.Key]:
    """The keys of the partition's items that hold every word, in the window and before
    `below`, newest first: per word, its bucket's row of every block that has items in the
    window; then the keys of the blocks where all the words are."""
    low, high = _day_bounds(day, window)
    held: dict[tuple[datetime, str], set[int]] | None = None
    for word in words:
        rows = session.execute(st.block_words, (crawler_id, day, word_blocks.bucket_of(word), low))
        mine = {
            (row.block_at, row.block_id): word_blocks.positions(row.postings, word) for row in rows
        }
        held = mine if held is None else {b: p & mine[b] for b, p in held.items() if b in mine}
        held = {b: p for b, p in held.items() if p}
        if not held:
            return []
    assert held is not None
    matched: set[word_blocks.Key] = set()
    for chunk in chunks(sorted(held), IDS_IN_READ):
        for row in session.execute(
            st.block_keys, (crawler_id, day, word_blocks.KEYS_BUCKET, chunk)
        ):
            listed = word_blocks.keys(row.postings)
            positions = held[row.block_at, row.block_id]
            matched.update(listed[p] for p in positions if p < len(listed))
    low_ms, high_ms = word_blocks.to_millis(low), word_blocks.to_millis(high)
    kept = (k for k in matched if low_ms <= k[0] < high_ms and (below is None or k < below))
    return sorted(kept, reverse=True)


def _items_at(
    session: Session,
    st: Statements,
    crawler_id: int,
    day: date,
    keys: list[word_blocks.Key],
    window: Window,
) -> list[Item]:
    """The items of these keys that are still there (an expired one is gone), in the keys'
    order, kept to a published_at window."""
    rows = session.execute(st.items_at, (crawler_id, day, keys))
    by_key = {word_blocks.key_of(row): item_from_row(row, row.conversation_id) for row in rows}
    items = [by_key[key] for key in keys if key in by_key]
    if window.by != "published_at" or not window.bounded:
        return items
    since, until = window.since or _EARLIEST, window.until or _LATEST
    return [i for i in items if i.published_at is not None and since <= i.published_at < until]


def _partitions(
    session: Session,
    st: Statements,
    crawler_ids: Collection[int],
    window: Window,
    start: tuple[date, int, word_blocks.Key] | None,
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


def _day_bounds(day: date, window: Window) -> tuple[datetime, datetime]:
    """The day, cut to a fetched_at window."""
    low = datetime.combine(day, time(), UTC)
    high = low + DAY
    if window.by == "fetched_at":
        low = max(low, window.since) if window.since else low
        high = min(high, window.until) if window.until else high
    return low, high


def _search_position(after: Any) -> tuple[date, int, word_blocks.Key] | None:
    if after is None:
        return None
    day, crawler_id, at, item_id = checked(after, (str, int, int, str))
    try:
        return date.fromisoformat(day), crawler_id, (word_blocks.from_millis(at), item_id)
    except (ValueError, OverflowError):
        raise BadPosition("not a position this store gave") from None


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
