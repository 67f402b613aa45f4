"""How items become the Cassandra store's rows, and rows items again: no I/O.

Rows are grouped by partition into unlogged batches: a partition's rows in one batch are a
single mutation on its replicas, and the few rows of several partitions that live on the same
replica share a batch, one request (`packed`).
"""

from __future__ import annotations

import dataclasses
import zlib
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

from cassandra.query import (
    UNSET_VALUE,
    BatchStatement,
    BatchType,
    BoundStatement,
    PreparedStatement,
    Statement,
)

from blackwidow.core.store import threads
from blackwidow.core.store.cassandra import word_blocks
from blackwidow.core.store.cassandra.id_write_memory import Bucket, IdRow
from blackwidow.core.store.cassandra.statements import Statements
from sources.model import Item

BUCKETS = 16  # items_by_id partitions per crawler
ROWS_PER_BATCH = 64  # rows in one batch, unless one partition's part of a write has more
PARTITIONS_PER_BATCH = 10  # Cassandra warns of unlogged batches over more partitions than this
SPREAD = 16  # requests a round is spread over at least, where it has as many partitions
BLOCK_ITEMS = ROWS_PER_BATCH - word_blocks.BUCKETS - 1  # a word block's items: its batch
DAY = timedelta(days=1)

_Key = TypeVar("_Key")
_T = TypeVar("_T")
Work = list[tuple[Statement, Any]]


def crawler_of(item: Item) -> int:
    assert item.crawler_id is not None  # checked on the way in
    return item.crawler_id


def id_bucket(item_id: str) -> int:
    """Stable across processes (crc32, never hash()): every node finds an id in one place."""
    return zlib.crc32(item_id.encode()) % BUCKETS


def bucket_of_item(item: Item) -> Bucket:
    return crawler_of(item), id_bucket(item.id)


def unfinished(row: IdRow | None) -> bool:
    """No id row yet, or a pending one: the pending row is (re)written with this writer."""
    return row is None or row.pending


def first_fetch(item: Item, row: IdRow | None) -> Item:
    """An item found pending keeps the fetch time of its first write, so its rows land on the
    same keys (a re-delivery's own time would list it twice)."""
    if row is None or row.fetched_at is None or row.fetched_at == item.fetched_at:
        return item
    return dataclasses.replace(item, fetched_at=row.fetched_at)


def day_of(moment: datetime) -> date:
    return moment.astimezone(UTC).date() if moment.tzinfo else moment.date()


def grouped(items: Iterable[_T], key: Callable[[_T], _Key]) -> dict[_Key, list[_T]]:
    groups: dict[_Key, list[_T]] = defaultdict(list)
    for item in items:
        groups[key(item)].append(item)
    return groups


def chunks(items: list[_T], size: int) -> Iterator[list[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def batches(
    statement: PreparedStatement,
    groups: dict[_Key, list[_T]],
    values: Callable[[_Key, _T], tuple[Any, ...]],
    place: Callable[[BoundStatement], Hashable],
) -> Work:
    """Each group one partition: its rows bound, ROWS_PER_BATCH at most together, and
    `packed` into batches by the replica `place` names."""
    parts = [
        ([statement.bind(values(key, member)) for member in chunk], None)
        for key, members in groups.items()
        for chunk in chunks(members, ROWS_PER_BATCH)
    ]
    return [(batch, None) for batch, _ in packed(parts, place)]


def packed(
    parts: list[tuple[list[BoundStatement], _T]], place: Callable[[BoundStatement], Hashable]
) -> list[tuple[BatchStatement, list[_T]]]:
    """Unlogged batches of partitions' parts (each a list of one partition's rows, with a tag),
    each batch's parts all on the replica `place` names for its first row, so a batch is one
    request to a replica of all it holds, and each part one mutation there. A part is never
    split; a batch takes parts while it has room (ROWS_PER_BATCH, PARTITIONS_PER_BATCH), and
    only as many as keep the round in SPREAD requests or more: the server works on several
    requests at once, and a few parts alone are done sooner apart than together.
    Returns each batch with the tags of its parts."""
    done: list[tuple[BatchStatement, list[_T]]] = []
    filling: dict[Hashable, tuple[BatchStatement, list[_T]]] = {}
    most = min(PARTITIONS_PER_BATCH, max(1, len(parts) // SPREAD))
    for rows, tag in parts:
        where = place(rows[0])
        batch, tags = filling.get(where, (None, []))
        if batch is None or len(batch) + len(rows) > ROWS_PER_BATCH or len(tags) == most:
            batch, tags = BatchStatement(batch_type=BatchType.UNLOGGED), []
            batch.is_idempotent = True
            filling[where] = (batch, tags)
            done.append((batch, tags))
        for row in rows:
            batch.add(row)
        tags.append(tag)
    return done


def unset_none(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row's values with None left unset: for a row written the first time, a missing field
    is then no cell at all, rather than a tombstone the server writes and later purges."""
    return tuple(UNSET_VALUE if value is None else value for value in values)


def crawler_rows(st: Statements, items: list[Item], ttl: int, first: bool = False) -> Work:
    """items_by_crawler rows, by (crawler, day) partition; when the store searches, each
    batch's items with their word block (cassandra.word_blocks), in the same partition of
    word_blocks and so the same mutation: an item is never found without being stored, nor
    stored without its words. Rows written the `first` time leave their missing fields
    unset (no tombstone)."""
    by_day = grouped(items, lambda item: (crawler_of(item), day_of(item.fetched_at)))
    shape = unset_none if first else tuple

    def values(key: tuple[int, date], item: Item) -> tuple[Any, ...]:
        return shape((*key, *_key_values(item), item.conversation_id, ttl))

    if not st.words:
        return batches(st.insert_item, by_day, values, st.place)
    parts: list[tuple[list[BoundStatement], None]] = []
    for key, members in by_day.items():
        for chunk in even_chunks(members, BLOCK_ITEMS):
            rows = [st.insert_item.bind(values(key, item)) for item in chunk]
            parts.append((rows + block_rows(st.insert_block, key, chunk, ttl), None))
    return [(batch, None) for batch, _ in packed(parts, st.place)]


def block_rows(
    insert: PreparedStatement, partition: tuple[int, Any], chunk: list[Any], ttl: int
) -> list[BoundStatement]:
    """The rows of the word block of a partition's items (Items, or rows with their fields:
    word_blocks.block), bound to `insert` (crawler_id, day, bucket, block_at, block_id,
    postings, ttl)."""
    at, block_id, texts = word_blocks.block(chunk)
    return [
        insert.bind((*partition, bucket, at, block_id, text, ttl)) for bucket, text in texts.items()
    ]


def even_chunks(items: list[_T], most: int) -> list[list[_T]]:
    """As few chunks as hold `most` each, of sizes that differ by one at most."""
    count = -(-len(items) // most)
    size, extra = divmod(len(items), count)
    cuts = [n * size + min(n, extra) for n in range(count + 1)]
    return [items[cuts[n] : cuts[n + 1]] for n in range(count)]


def thread_rows(st: Statements, items: list[Item], ttl: int, first: bool = False) -> Work:
    """items_by_conversation rows of the items that are in a conversation."""
    by_thread = grouped([i for i in items if i.conversation_id], lambda i: i.conversation_id)
    shape = unset_none if first else tuple
    return batches(
        st.insert_conversation,
        by_thread,
        lambda _, item: shape(_thread_values(item, ttl)),
        st.place,
    )


def copies(st: Statements, rows: list[Any], moves: dict[threads.Key, str], id_ttl: int) -> Work:
    """Rows of folded conversations written again under their roots, for the time they have
    left, and their ids told the root (a later reply to one of them joins it there), the id
    rows living on for `id_ttl` (0: for ever) from then."""
    work: Work = []
    for remaining, group in grouped(rows, lambda row: row.remaining or 0).items():
        items = [item_from_row(row, moves[row.crawler_id, row.conversation_id]) for row in group]
        work += crawler_rows(st, items, remaining) + thread_rows(st, items, remaining)
        work += batches(
            st.set_id_conversation,
            grouped(items, bucket_of_item),
            lambda key, item: (id_ttl, item.conversation_id, *key, item.id),
            st.place,
        )
    return work


def _key_values(item: Item) -> tuple[Any, ...]:
    """fetched_at and id, then the columns of ITEM (cassandra_statements) in their order."""
    return (
        item.fetched_at,
        item.id,
        item.source,
        item.url,
        item.title,
        item.text,
        item.author,
        item.published_at,
        item.in_reply_to,
        item.html,
    )


def _thread_values(item: Item, ttl: int) -> tuple[Any, ...]:
    sort_at = item.published_at or item.fetched_at
    return (item.conversation_id, sort_at, item.crawler_id, *_key_values(item), ttl)


def utc(moment: datetime | None) -> datetime | None:
    """The driver returns naive UTC datetimes."""
    return None if moment is None else moment.replace(tzinfo=UTC)


def item_from_row(row: Any, conversation_id: str | None) -> Item:
    fetched_at = utc(row.fetched_at)
    assert fetched_at is not None
    return Item(
        id=row.item_id,
        source=row.source,
        url=row.url,
        title=row.title,
        text=row.text,
        author=row.author,
        published_at=utc(row.published_at),
        fetched_at=fetched_at,
        conversation_id=conversation_id,
        in_reply_to=row.in_reply_to,
        crawler_id=row.crawler_id,
        html=row.html,
    )
