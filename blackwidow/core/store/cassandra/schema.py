"""The Cassandra store's versioned CQL schema, applied by `blackwidow db upgrade`.

Each version is a list of statements that are safe to run twice (IF NOT EXISTS, for tables
and for the columns later versions add: Cassandra 4.1 or newer), recorded in `schema_versions`
once applied. There is one table per read path:

- items_by_crawler: a crawler's items newest first, one partition per crawler per UTC day,
  so no partition grows without bound; crawler_days lists the days that have items.
- items_by_id: which items a crawler has ever stored, for idempotent writes, and the
  conversation each is in, for its replies to join: 16 buckets per crawler, kept past
  retention so an expired item is not collected again. Since version 3 each row names the
  writer that confirmed it and is `pending` until its item's rows are written.
- items_by_conversation: the items of one conversation, oldest first.
- items_by_crawler.words (version 4, searched until version 6): the words of each item,
  matched by a storage-attached index (SAI, Cassandra 5.0) on the set's values, written only
  with `search=on`. No longer written: version 6 replaces both.
- version 5 folded the words as blackwidow.core.store.windows.folded does (NFKC, case folded,
  accents removed in every script); version 6 cuts them again anyway, so it now does nothing.
- word_blocks (version 6): the words of the items, for search, in blocks of a batch's items
  in the items' own (crawler, day) partitions (blackwidow.core.store.cassandra.word_blocks),
  written with the items, only with `search=on`: with the SAI index an item cost the server
  4-6x its CPU without search, with the blocks about 1.1x (bench/search_write_tax.py). Its
  backfill fills the blocks of every item stored before, where the keyspace was searched (it
  has the SAI index), then drops that index, which nothing reads any more; search_filled
  records that a keyspace's blocks hold every item, which the first upgrade with `search=on`
  makes so.
- bucket_totals: items stored per crawler as one absolute total per id bucket and writer
  process, in the id rows' partition so a total and the confirms it counts are one mutation;
  every write can be repeated safely (no counters). crawler_totals holds the totals written
  before version 3, still added in. Since version 7 a total names when its writer began
  writing the crawler, so two writers whose totals may hold one item twice are seen and
  recounted (blackwidow.core.store.cassandra.overlaps).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent
from cassandra.query import BatchStatement, BatchType, SimpleStatement

from blackwidow.core.store.cassandra.config import CassandraConfig
from blackwidow.core.store.cassandra.rows import BLOCK_ITEMS, block_rows, even_chunks, grouped

log = logging.getLogger(__name__)

_ITEM_COLUMNS = """
    source text, url text, title text, text text, author text,
    published_at timestamp, in_reply_to text
"""


@dataclass(frozen=True)
class SchemaVersion:
    number: int
    description: str
    statements: tuple[str, ...]
    # run after the statements, until it has finished once: rows the version changes
    backfill: Callable[[Session, str], None] | None = None


def reindex_words(session: Session, ks: str) -> None:
    """Where the keyspace was searched (it has the words' SAI index), fill the word blocks of
    every item stored before, then drop the index: nothing reads it now, and every write and
    compaction would still pay for it."""
    if has_words_index(session, ks):
        fill_words(session, ks)
        session.execute(f"DROP INDEX IF EXISTS {ks}.{WORDS_INDEX}", timeout=60)


BLOCKS_VERSION = 6  # the schema version that gives the keyspace its word blocks

VERSIONS: tuple[SchemaVersion, ...] = (
    SchemaVersion(
        1,
        "items by crawler and day, by id, by conversation; per-writer totals",
        (
            f"""CREATE TABLE IF NOT EXISTS {{ks}}.items_by_crawler (
                crawler_id bigint, day date, fetched_at timestamp, item_id text, {_ITEM_COLUMNS},
                conversation_id text,
                PRIMARY KEY ((crawler_id, day), fetched_at, item_id)
            ) WITH CLUSTERING ORDER BY (fetched_at DESC, item_id DESC)""",
            """CREATE TABLE IF NOT EXISTS {ks}.crawler_days (
                crawler_id bigint, day date, PRIMARY KEY ((crawler_id), day)
            ) WITH CLUSTERING ORDER BY (day DESC)""",
            """CREATE TABLE IF NOT EXISTS {ks}.items_by_id (
                crawler_id bigint, bucket int, item_id text, fetched_at timestamp,
                PRIMARY KEY ((crawler_id, bucket), item_id)
            )""",
            f"""CREATE TABLE IF NOT EXISTS {{ks}}.items_by_conversation (
                conversation_id text, sort_at timestamp, crawler_id bigint, item_id text,
                fetched_at timestamp, {_ITEM_COLUMNS},
                PRIMARY KEY ((conversation_id), sort_at, crawler_id, item_id)
            )""",
            """CREATE TABLE IF NOT EXISTS {ks}.crawler_totals (
                crawler_id bigint, writer uuid, stored bigint, PRIMARY KEY ((crawler_id), writer)
            )""",
        ),
    ),
    SchemaVersion(
        2,
        "items keep their html; ids know their conversation, for replies to join its root",
        (
            "ALTER TABLE {ks}.items_by_crawler ADD IF NOT EXISTS html text",
            "ALTER TABLE {ks}.items_by_conversation ADD IF NOT EXISTS html text",
            "ALTER TABLE {ks}.items_by_id ADD IF NOT EXISTS conversation_id text",
        ),
    ),
    SchemaVersion(
        3,
        "ids name their writer and stay pending until their items are written; totals per bucket",
        (
            "ALTER TABLE {ks}.items_by_id ADD IF NOT EXISTS writer uuid",
            "ALTER TABLE {ks}.items_by_id ADD IF NOT EXISTS pending boolean",
            """CREATE TABLE IF NOT EXISTS {ks}.bucket_totals (
                crawler_id bigint, bucket int, writer uuid, stored bigint,
                PRIMARY KEY ((crawler_id, bucket), writer)
            )""",
        ),
    ),
    SchemaVersion(
        4,
        "items carry their words, for search",
        ("ALTER TABLE {ks}.items_by_crawler ADD IF NOT EXISTS words set<text>",),
    ),
    SchemaVersion(
        5,
        "items' words folded alike in every script and Unicode form, for search",
        (),  # its backfill cut the words again for the SAI index, which version 6 replaces
    ),
    SchemaVersion(
        BLOCKS_VERSION,
        "items' words in word blocks beside the items, for search, instead of an SAI index",
        (
            """CREATE TABLE IF NOT EXISTS {ks}.word_blocks (
                crawler_id bigint, day date, bucket int, block_at timestamp, block_id text,
                postings text, PRIMARY KEY ((crawler_id, day), bucket, block_at, block_id)
            ) WITH CLUSTERING ORDER BY (bucket ASC, block_at DESC, block_id DESC)""",
            "CREATE TABLE IF NOT EXISTS {ks}.search_filled"
            " (one int PRIMARY KEY, filled_at timestamp)",
        ),
        backfill=reindex_words,
    ),
    SchemaVersion(
        7,
        "each writer's total names when it began writing the crawler, so overlaps are seen",
        ("ALTER TABLE {ks}.bucket_totals ADD IF NOT EXISTS began timestamp",),
    ),
)
LATEST = VERSIONS[-1].number
WORDS_INDEX = "items_by_crawler_words"  # the SAI index of versions 4 and 5
BACKFILL_PAGE = 1000  # rows read at a time while the words of stored items are filled in
BACKFILL_CONCURRENCY = 32  # blocks in flight meanwhile


def applied_version(session: Session, keyspace: str) -> int:
    """The highest schema version applied to the keyspace, its backfill perhaps still running
    (the store works meanwhile); 0 when there is none yet."""
    tables = session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,)
    )
    if "schema_versions" not in {row.table_name for row in tables}:
        return 0
    rows = session.execute(f"SELECT version FROM {keyspace}.schema_versions")
    return max((row.version for row in rows), default=0)


def upgrade(session: Session, config: CassandraConfig) -> list[int]:
    """Create or update the keyspace, then apply missing versions; return the ones applied."""
    ks = config.keyspace
    _ensure_keyspace(session, config)
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {ks}.schema_versions"
        " (version int PRIMARY KEY, description text, applied_at timestamp)"
    )
    recorded = session.execute(f"SELECT version, applied_at FROM {ks}.schema_versions")
    done = {row.version for row in recorded if row.applied_at is not None}
    applied = []
    for version in VERSIONS:
        if version.number in done:
            continue
        for statement in version.statements:
            session.execute(statement.format(ks=ks))
        _record(session, ks, version, None if version.backfill else datetime.now(UTC))
        if version.backfill is not None:
            version.backfill(session, ks)
            _record(session, ks, version, datetime.now(UTC))
        applied.append(version.number)
    has_blocks = BLOCKS_VERSION in done.union(applied)
    if config.search and has_blocks and not words_filled(session, ks):
        fill_words(session, ks)
    return applied


def _record(session: Session, ks: str, version: SchemaVersion, at: datetime | None) -> None:
    """A version is applied once recorded, and the store opens; its `applied_at` stays empty
    while its backfill runs, so that one cut short (a timeout, a killed upgrade) is run again
    by the next upgrade. Writers go on meanwhile."""
    session.execute(
        f"INSERT INTO {ks}.schema_versions (version, description, applied_at) VALUES (%s, %s, %s)",
        (version.number, version.description, at),
    )


def has_words_index(session: Session, ks: str) -> bool:
    rows = session.execute(
        "SELECT index_name FROM system_schema.indexes WHERE keyspace_name = %s"
        " AND table_name = 'items_by_crawler'",
        (ks,),
    )
    return WORDS_INDEX in {row.index_name for row in rows}


def words_filled(session: Session, ks: str) -> bool:
    """Whether the word blocks hold every item stored before search was on: searches are
    refused until they do (CassandraStore.search)."""
    row = session.execute(f"SELECT filled_at FROM {ks}.search_filled WHERE one = 1").one()
    return row is not None and row.filled_at is not None


def fill_words(session: Session, ks: str) -> None:
    """Give every stored item its words in word blocks, each block for the longest time its
    items have left (a search reads the items by key, and skips one that has expired): a
    read of the whole table, BACKFILL_PAGE rows at a time, once; then record it done."""
    read = SimpleStatement(
        "SELECT crawler_id, day, fetched_at, item_id, title, text, author,"
        f" TTL(source) AS remaining FROM {ks}.items_by_crawler",
        fetch_size=BACKFILL_PAGE,
    )
    insert = session.prepare(
        f"INSERT INTO {ks}.word_blocks (crawler_id, day, bucket, block_at, block_id, postings)"
        " VALUES (?, ?, ?, ?, ?, ?) USING TTL ?"
    )
    rows = session.execute(read)
    while True:
        work = []
        for partition, members in grouped(rows.current_rows, _partition).items():
            for chunk in even_chunks(members, BLOCK_ITEMS):
                ttl = 0 if any(not r.remaining for r in chunk) else max(r.remaining for r in chunk)
                batch = BatchStatement(batch_type=BatchType.UNLOGGED)
                for row in block_rows(insert, partition, chunk, ttl):
                    batch.add(row)
                work.append((batch, None))
        execute_concurrent(
            session, work, concurrency=BACKFILL_CONCURRENCY, raise_on_first_error=True
        )
        if not rows.has_more_pages:
            break
        rows.fetch_next_page()
    session.execute(
        f"INSERT INTO {ks}.search_filled (one, filled_at) VALUES (1, %s)", (datetime.now(UTC),)
    )


def _partition(row: Any) -> tuple[int, Any]:
    return row.crawler_id, row.day


def _ensure_keyspace(session: Session, config: CassandraConfig) -> None:
    """Create the keyspace, or alter its replication when the configured one differs."""
    row = session.execute(
        "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s",
        (config.keyspace,),
    ).one()
    replication = config.replication_cql()
    if row is None:
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {config.keyspace} WITH replication = {replication}"
        )
    elif dict(row.replication) != config.replication_map():
        session.execute(f"ALTER KEYSPACE {config.keyspace} WITH replication = {replication}")
