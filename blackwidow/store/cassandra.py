"""Cassandra store: the distributed back end for real volume (BLACKWIDOW_STORE=cassandra://...).

Writes are pipelined: rows are grouped into single-partition unlogged batches (one mutation
each on the replicas, never a cross-partition batch) and sent with a bounded number in flight.
Every statement is an idempotent upsert, safe for the driver to retry; an item is new when its
id is absent from items_by_id, which is written after the item's rows, so a write cut off
half-way is completed by the retry instead of being counted as done. The same reads of
items_by_id find the conversations of the batch's parents, so replies join their thread's root
(blackwidow.store.threads) at no extra round trip.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import uuid
import zlib
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

from cassandra import OperationTimedOut, ProtocolVersion, RequestExecutionException
from cassandra.cluster import (
    EXEC_PROFILE_DEFAULT,
    Cluster,
    ExecutionProfile,
    NoHostAvailable,
    Session,
)
from cassandra.concurrent import execute_concurrent
from cassandra.connection import ConnectionException
from cassandra.policies import (
    DCAwareRoundRobinPolicy,
    ExponentialReconnectionPolicy,
    TokenAwarePolicy,
)
from cassandra.query import BatchStatement, BatchType, PreparedStatement, Statement

from blackwidow.store import cassandra_schema, threads
from blackwidow.store.base import StoreUnavailable
from blackwidow.store.cassandra_config import CassandraConfig
from sources.model import Item

BUCKETS = 16  # items_by_id partitions per crawler
ROWS_PER_BATCH = 64  # rows in one single-partition batch
IDS_PER_READ = 100  # ids in one `item_id IN ?` read, conversations in one `conversation_id IN ?`
IN_FLIGHT = 32  # requests outstanding at once from one store
REQUEST_TIMEOUT = 5.0  # seconds; an outage fails fast and the caller retries
DAY = timedelta(days=1)

_UNAVAILABLE = (
    NoHostAvailable,
    OperationTimedOut,
    RequestExecutionException,
    ConnectionException,
    OSError,
)
_ITEM = "source, url, title, text, author, published_at, in_reply_to, html"  # in both tables
_ITEM_MARKS = ", ".join("?" for _ in _ITEM.split(","))
_Key = TypeVar("_Key")
_T = TypeVar("_T")
_Result = TypeVar("_Result")
Work = list[tuple[Statement, Any]]


@dataclass(frozen=True)
class _Statements:
    insert_item: PreparedStatement
    insert_day: PreparedStatement
    insert_id: PreparedStatement
    insert_conversation: PreparedStatement
    set_total: PreparedStatement
    set_id_conversation: PreparedStatement
    delete_thread_row: PreparedStatement
    stored_ids: PreparedStatement
    thread_rows: PreparedStatement
    totals: PreparedStatement
    days: PreparedStatement
    day_items: PreparedStatement
    conversation: PreparedStatement

    @classmethod
    def prepare(cls, session: Session, ks: str) -> _Statements:
        texts = {
            "insert_item": f"INSERT INTO {ks}.items_by_crawler (crawler_id, day, fetched_at,"
            f" item_id, {_ITEM}, conversation_id) VALUES (?, ?, ?, ?, {_ITEM_MARKS}, ?)"
            " USING TTL ?",
            "insert_day": f"INSERT INTO {ks}.crawler_days (crawler_id, day) VALUES (?, ?)"
            " USING TTL ?",
            "insert_id": f"INSERT INTO {ks}.items_by_id (crawler_id, bucket, item_id, fetched_at,"
            " conversation_id) VALUES (?, ?, ?, ?, ?)",
            "insert_conversation": f"INSERT INTO {ks}.items_by_conversation (conversation_id,"
            f" sort_at, crawler_id, fetched_at, item_id, {_ITEM})"
            f" VALUES (?, ?, ?, ?, ?, {_ITEM_MARKS}) USING TTL ?",
            "set_total": f"UPDATE {ks}.crawler_totals SET stored = ?"
            " WHERE crawler_id = ? AND writer = ?",
            "set_id_conversation": f"UPDATE {ks}.items_by_id SET conversation_id = ?"
            " WHERE crawler_id = ? AND bucket = ? AND item_id = ?",
            "delete_thread_row": f"DELETE FROM {ks}.items_by_conversation"
            " WHERE conversation_id = ? AND sort_at = ? AND crawler_id = ? AND item_id = ?",
            "stored_ids": f"SELECT item_id, conversation_id FROM {ks}.items_by_id"
            " WHERE crawler_id = ? AND bucket = ? AND item_id IN ?",
            "thread_rows": f"SELECT conversation_id, sort_at, crawler_id, item_id, fetched_at,"
            f" {_ITEM}, TTL(source) AS remaining FROM {ks}.items_by_conversation"
            " WHERE conversation_id IN ?",
            "totals": f"SELECT stored FROM {ks}.crawler_totals WHERE crawler_id = ?",
            "days": f"SELECT day FROM {ks}.crawler_days WHERE crawler_id = ?",
            "day_items": f"SELECT crawler_id, item_id, fetched_at, conversation_id, {_ITEM}"
            f" FROM {ks}.items_by_crawler WHERE crawler_id = ? AND day = ? LIMIT ?",
            "conversation": f"SELECT crawler_id, item_id, fetched_at, {_ITEM}"
            f" FROM {ks}.items_by_conversation WHERE conversation_id = ?",
        }
        prepared = {name: session.prepare(text) for name, text in texts.items()}
        for statement in prepared.values():
            statement.is_idempotent = True  # plain upserts and reads: a retry repeats, not adds
        return cls(**prepared)


def make_cluster(config: CassandraConfig) -> Cluster:
    """A driver cluster that fails fast when Cassandra is down and reconnects within seconds."""
    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy()),
        consistency_level=config.consistency,
        request_timeout=REQUEST_TIMEOUT,
    )
    return Cluster(
        list(config.hosts),
        port=config.port,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        reconnection_policy=ExponentialReconnectionPolicy(0.5, 10.0),
        connect_timeout=config.connect_timeout,
        protocol_version=ProtocolVersion.V4,
    )


def upgrade_schema(config: CassandraConfig) -> list[int]:
    """Create or upgrade the keyspace's schema; the versions applied now."""
    cluster = make_cluster(config)
    try:
        return cassandra_schema.upgrade(cluster.connect(), config)
    except _UNAVAILABLE as error:
        raise StoreUnavailable(f"cassandra: {type(error).__name__}: {error}") from error
    finally:
        cluster.shutdown()


class CassandraStore:
    """A Store on a Cassandra keyspace that `blackwidow db upgrade` has created.

    It connects on first use, so a node starts while Cassandra is down and every call until
    it answers raises StoreUnavailable. Each instance is one writer in crawler_totals.
    """

    def __init__(self, config: CassandraConfig) -> None:
        self._config = config
        self._writer = uuid.uuid4()
        self._lock = threading.Lock()
        self._cluster: Cluster | None = None
        self._session: Session | None = None
        self._statements: _Statements | None = None
        self._totals: dict[int, int] = defaultdict(int)
        self._crawler_locks: dict[int, threading.Lock] = defaultdict(threading.Lock)

    def _connected(self) -> tuple[Session, _Statements]:
        with self._lock:
            if self._session is None or self._statements is None:
                cluster = make_cluster(self._config)
                try:
                    session = cluster.connect()
                    self._check_schema(session)
                    self._statements = _Statements.prepare(session, self._config.keyspace)
                except BaseException:
                    cluster.shutdown()
                    raise
                self._cluster, self._session = cluster, session
            return self._session, self._statements

    def _check_schema(self, session: Session) -> None:
        applied = cassandra_schema.applied_version(session, self._config.keyspace)
        if applied < cassandra_schema.LATEST:
            raise StoreUnavailable(
                f"cassandra: keyspace {self._config.keyspace} is at schema version {applied}"
                f" of {cassandra_schema.LATEST}; run `blackwidow db upgrade`"
            )

    def _call(self, action: Callable[[Session, _Statements], _Result]) -> _Result:
        """Run an action on the session; a Cassandra that does not answer is StoreUnavailable."""
        try:
            return action(*self._connected())
        except _UNAVAILABLE as error:
            raise StoreUnavailable(f"cassandra: {type(error).__name__}: {error}") from error

    def add(self, items: Sequence[Item], ttl: int | None = None) -> list[Item]:
        if any(item.crawler_id is None for item in items):
            raise ValueError("every item needs a crawler_id before it is stored")
        unique = list({(item.crawler_id, item.id): item for item in reversed(items)}.values())
        unique.reverse()  # the first copy of a repeated item wins, in the order given
        if not unique:
            return []
        with contextlib.ExitStack() as held:
            for crawler_id in sorted({_crawler(item) for item in unique}):
                held.enter_context(self._crawler_lock(crawler_id))
            return self._call(lambda session, st: self._add(session, st, unique, ttl or 0))

    def _crawler_lock(self, crawler_id: int) -> threading.Lock:
        """Check-then-write is atomic per crawler within this process; across nodes, a crawler
        runs on one node at a time (the hub's routing), so no two writers race on its ids."""
        with self._lock:
            return self._crawler_locks[crawler_id]

    def _add(self, session: Session, st: _Statements, items: list[Item], ttl: int) -> list[Item]:
        wanted = {threads.key(item) for item in items} | threads.parent_keys(items)
        stored = self._stored(session, st, wanted)
        pairs = zip(items, threads.rooted(items, stored), strict=True)
        added = [(given, item) for given, item in pairs if threads.key(given) not in stored]
        if not added:
            return []
        new = [item for _, item in added]
        self._run(session, self._item_rows(st, new, ttl))
        self._move(session, st, threads.re_roots(added))
        self._run(session, self._id_rows(st, new))  # the commit mark: written last
        touched = {_crawler(item) for item in new}
        with self._lock:
            for item in new:
                self._totals[_crawler(item)] += 1
            totals = [(self._totals[crawler], crawler, self._writer) for crawler in touched]
        self._run(session, [(st.set_total, row) for row in totals])
        return new

    def _stored(
        self, session: Session, st: _Statements, keys: Collection[threads.Key]
    ) -> dict[threads.Key, str | None]:
        """Which of these items are stored, each with its conversation: one read per bucket."""
        groups: dict[tuple[int, int], list[str]] = defaultdict(list)
        for crawler, item_id in sorted(keys):
            groups[(crawler, _bucket(item_id))].append(item_id)
        reads: Work = [
            (st.stored_ids, (crawler, bucket, chunk))
            for (crawler, bucket), item_ids in groups.items()
            for chunk in _chunks(item_ids, IDS_PER_READ)
        ]
        found = {}
        for (_, (crawler, _, _)), rows in zip(reads, self._run(session, reads), strict=True):
            found.update(((crawler, row.item_id), row.conversation_id) for row in rows)
        return found

    def _item_rows(self, st: _Statements, items: list[Item], ttl: int) -> Work:
        """Rows of items_by_crawler, crawler_days and items_by_conversation, by partition."""
        day_ttl = ttl + int(DAY.total_seconds()) if ttl else 0  # outlives the day's items
        days = {(_crawler(item), _day(item.fetched_at)) for item in items}
        return [
            *_crawler_rows(st, items, ttl),
            *((st.insert_day, (crawler, day, day_ttl)) for crawler, day in days),
            *_thread_rows(st, items, ttl),
        ]

    def _move(self, session: Session, st: _Statements, moves: dict[threads.Key, str]) -> None:
        """Fold each conversation a new reply names into the reply's root (threads.re_roots).

        Rows are copied to the root, with the time they have left, before they are deleted
        where they were, and all before the reply's commit mark: a move cut short is finished
        by the retry. The conversations are read with `IN`, a hundred a request.
        """
        if not moves:
            return
        names = sorted({conversation for _, conversation in moves})
        reads: Work = [(st.thread_rows, (chunk,)) for chunk in _chunks(names, IDS_PER_READ)]
        rows = [
            row
            for result in self._run(session, reads)
            for row in result
            if (row.crawler_id, row.conversation_id) in moves
        ]
        self._run(session, _copies(st, rows, moves))
        keys = [(row.conversation_id, row.sort_at, row.crawler_id, row.item_id) for row in rows]
        self._run(session, [(st.delete_thread_row, key) for key in keys])

    def _id_rows(self, st: _Statements, items: list[Item]) -> Work:
        """Ids outlive retention: an item is never stored twice, as SQLite's rows do."""
        groups = _grouped(items, lambda item: (_crawler(item), _bucket(item.id)))
        return _batches(
            st.insert_id,
            groups,
            lambda key, item: (*key, item.id, item.fetched_at, item.conversation_id),
        )

    def _run(self, session: Session, work: Work) -> list[Any]:
        """Send statements with at most IN_FLIGHT outstanding; the first failure raises."""
        results = execute_concurrent(
            session, work, concurrency=IN_FLIGHT, raise_on_first_error=True
        )
        return [result for _, result in results]

    def items(self, crawler_id: int, limit: int) -> list[Item]:
        return self._call(lambda session, st: self._newest(session, st, crawler_id, limit))

    def _newest(self, session: Session, st: _Statements, crawler_id: int, limit: int) -> list[Item]:
        found: list[Item] = []
        for row in session.execute(st.days, (crawler_id,)):
            if len(found) >= limit:
                break
            rows = session.execute(st.day_items, (crawler_id, row.day, limit - len(found)))
            found += [_item_from_row(r, r.conversation_id) for r in rows]
        return found

    def conversation(
        self, conversation_id: str, crawler_ids: Collection[int], limit: int
    ) -> list[Item]:
        wanted = set(crawler_ids)

        def read(session: Session, st: _Statements) -> list[Item]:
            rows = session.execute(st.conversation, (conversation_id,))
            mine = (row for row in rows if row.crawler_id in wanted)
            return [_item_from_row(row, conversation_id) for row in itertools.islice(mine, limit)]

        return self._call(read)

    def count(self, crawler_id: int) -> int:
        return self._call(
            lambda session, st: sum(row.stored for row in session.execute(st.totals, (crawler_id,)))
        )

    def ping(self) -> bool:
        """True when Cassandra answers a query now; health endpoints report False, never raise."""
        try:
            self._call(lambda session, _: session.execute("SELECT key FROM system.local"))
        except StoreUnavailable:
            return False
        return True

    def close(self) -> None:
        with self._lock:
            if self._cluster is not None:
                self._cluster.shutdown()
            self._cluster = self._session = self._statements = None


def _crawler(item: Item) -> int:
    assert item.crawler_id is not None  # checked on the way in
    return item.crawler_id


def _bucket(item_id: str) -> int:
    """Stable across processes (crc32, never hash()): every node finds an id in one place."""
    return zlib.crc32(item_id.encode()) % BUCKETS


def _day(moment: datetime) -> date:
    return moment.astimezone(UTC).date() if moment.tzinfo else moment.date()


def _grouped(items: Iterable[_T], key: Callable[[_T], _Key]) -> dict[_Key, list[_T]]:
    groups: dict[_Key, list[_T]] = defaultdict(list)
    for item in items:
        groups[key(item)].append(item)
    return groups


def _chunks(items: list[_T], size: int) -> Iterator[list[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _batches(
    statement: PreparedStatement,
    groups: dict[_Key, list[Item]],
    values: Callable[[_Key, Item], tuple[Any, ...]],
) -> Work:
    """One unlogged batch per partition chunk: a single mutation on the replicas."""
    work: Work = []
    for key, members in groups.items():
        for chunk in _chunks(members, ROWS_PER_BATCH):
            batch = BatchStatement(batch_type=BatchType.UNLOGGED)
            batch.is_idempotent = True
            for item in chunk:
                batch.add(statement, values(key, item))
            work.append((batch, None))
    return work


def _crawler_rows(st: _Statements, items: list[Item], ttl: int) -> Work:
    """items_by_crawler rows, one batch per (crawler, day) partition chunk."""
    by_day = _grouped(items, lambda item: (_crawler(item), _day(item.fetched_at)))
    return _batches(
        st.insert_item,
        by_day,
        lambda key, item: (*key, *_key_values(item), item.conversation_id, ttl),
    )


def _thread_rows(st: _Statements, items: list[Item], ttl: int) -> Work:
    """items_by_conversation rows of the items that are in a conversation."""
    by_thread = _grouped([i for i in items if i.conversation_id], lambda i: i.conversation_id)
    return _batches(st.insert_conversation, by_thread, lambda _, item: _thread_values(item, ttl))


def _copies(st: _Statements, rows: list[Any], moves: dict[threads.Key, str]) -> Work:
    """Rows of folded conversations written again under their roots, for the time they have
    left, and their ids told the root (a later reply to one of them joins it there)."""
    work: Work = []
    for remaining, group in _grouped(rows, lambda row: row.remaining or 0).items():
        items = [_item_from_row(row, moves[row.crawler_id, row.conversation_id]) for row in group]
        work += _crawler_rows(st, items, remaining) + _thread_rows(st, items, remaining)
        work += _batches(
            st.set_id_conversation,
            _grouped(items, lambda item: (_crawler(item), _bucket(item.id))),
            lambda key, item: (item.conversation_id, *key, item.id),
        )
    return work


def _key_values(item: Item) -> tuple[Any, ...]:
    """fetched_at and id, then the columns of _ITEM in their order."""
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


def _utc(moment: datetime | None) -> datetime | None:
    """The driver returns naive UTC datetimes."""
    return None if moment is None else moment.replace(tzinfo=UTC)


def _item_from_row(row: Any, conversation_id: str | None) -> Item:
    fetched_at = _utc(row.fetched_at)
    assert fetched_at is not None
    return Item(
        id=row.item_id,
        source=row.source,
        url=row.url,
        title=row.title,
        text=row.text,
        author=row.author,
        published_at=_utc(row.published_at),
        fetched_at=fetched_at,
        conversation_id=conversation_id,
        in_reply_to=row.in_reply_to,
        crawler_id=row.crawler_id,
        html=row.html,
    )
