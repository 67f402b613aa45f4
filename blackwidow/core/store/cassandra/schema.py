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
- items_by_crawler.words (version 4): the words of each item, for search, matched by a
  storage-attached index (SAI, Cassandra 5.0) on the set's values. Written, and indexed, only
  with the store's `search=on` option (the index costs most of the write rate): the upgrade
  that first sees it fills in the words of the items stored before, then creates the index. A
  server without SAI keeps the column and refuses searches (the index is asked for again at
  every upgrade).
- version 5 folds the words as blackwidow.core.store.windows.folded does (NFKC, case folded,
  accents removed in every script), which new items get from their writer: its backfill cuts
  the words of the items stored before again, where the keyspace has the words' index.
- bucket_totals: items stored per crawler as one absolute total per id bucket and writer
  process, in the id rows' partition so a total and the confirms it counts are one mutation;
  every write can be repeated safely (no counters). crawler_totals holds the totals written
  before version 3, still added in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from cassandra import InvalidRequest
from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent
from cassandra.protocol import ConfigurationException, SyntaxException
from cassandra.query import SimpleStatement

from blackwidow.core.store.cassandra.config import CassandraConfig
from blackwidow.core.store.cassandra.rows import item_words

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


def refold_words(session: Session, ks: str) -> None:
    """Cut the stored items' words again, as windows.folded now folds them, where a search
    reads them: with the words' index. Without it there is nothing to redo now, and the
    upgrade that creates it fills every item's words first (_index_words)."""
    if has_words_index(session, ks):
        fill_words(session, ks)


WORDS_VERSION = 4  # the schema version that gives items_by_crawler its words column

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
        WORDS_VERSION,
        "items carry their words, for search",
        ("ALTER TABLE {ks}.items_by_crawler ADD IF NOT EXISTS words set<text>",),
    ),
    SchemaVersion(
        5,
        "items' words folded alike in every script and Unicode form, for search",
        (),
        backfill=refold_words,
    ),
)
LATEST = VERSIONS[-1].number
WORDS_INDEX = "items_by_crawler_words"
_CREATE_WORDS_INDEX = (
    "CREATE CUSTOM INDEX IF NOT EXISTS {index} ON {ks}.items_by_crawler (VALUES(words))"
    " USING 'StorageAttachedIndex'"
)
BACKFILL_PAGE = 1000  # rows read at a time while the words of stored items are filled in
BACKFILL_CONCURRENCY = 32  # updates in flight meanwhile


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
    has_words = WORDS_VERSION in done.union(applied)
    if config.search and has_words and not has_words_index(session, ks):
        _index_words(session, ks)
    return applied


def _record(session: Session, ks: str, version: SchemaVersion, at: datetime | None) -> None:
    """A version is applied once recorded, and the store opens; its `applied_at` stays empty
    while its backfill runs, so that one cut short (a timeout, a killed upgrade) is run again
    by the next upgrade. Writers go on meanwhile."""
    session.execute(
        f"INSERT INTO {ks}.schema_versions (version, description, applied_at) VALUES (%s, %s, %s)",
        (version.number, version.description, at),
    )


def _index_words(session: Session, ks: str) -> None:
    """Fill in the words of the items stored without them, then create the words' SAI index,
    or say why the server would not: searches are refused then (CassandraStore.search), and
    everything else works."""
    fill_words(session, ks)
    try:
        session.execute(_CREATE_WORDS_INDEX.format(index=WORDS_INDEX, ks=ks), timeout=60)
    except (InvalidRequest, ConfigurationException, SyntaxException) as refusal:
        log.warning("search index refused keyspace=%s reason=%s", ks, refusal)


def has_words_index(session: Session, ks: str) -> bool:
    rows = session.execute(
        "SELECT index_name FROM system_schema.indexes WHERE keyspace_name = %s"
        " AND table_name = 'items_by_crawler'",
        (ks,),
    )
    return WORDS_INDEX in {row.index_name for row in rows}


def fill_words(session: Session, ks: str) -> None:
    """Give every stored item its words, for the time its row has left (a longer-lived words
    cell would keep an expired row listed): a read of the whole table, BACKFILL_PAGE rows at
    a time, once, before the index is created."""
    read = SimpleStatement(
        "SELECT crawler_id, day, fetched_at, item_id, title, text, author,"
        f" TTL(source) AS remaining FROM {ks}.items_by_crawler",
        fetch_size=BACKFILL_PAGE,
    )
    update = session.prepare(
        f"UPDATE {ks}.items_by_crawler USING TTL ? SET words = ?"
        " WHERE crawler_id = ? AND day = ? AND fetched_at = ? AND item_id = ?"
    )
    rows = session.execute(read)
    while True:
        work = [
            (
                update,
                (
                    row.remaining or 0,
                    item_words(row),
                    row.crawler_id,
                    row.day,
                    row.fetched_at,
                    row.item_id,
                ),
            )
            for row in rows.current_rows
        ]
        execute_concurrent(session, work, concurrency=BACKFILL_CONCURRENCY)
        if not rows.has_more_pages:
            return
        rows.fetch_next_page()


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
