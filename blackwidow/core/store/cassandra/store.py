"""Cassandra store: the distributed back end for real volume (BLACKWIDOW_STORE=cassandra://...).

Writes are pipelined: a partition's rows go in one unlogged batch (one mutation on its
replicas), several partitions' few rows share a batch when they have the same first replica,
and batches are sent with a bounded number in flight. Every statement is an idempotent upsert,
safe for the driver to retry; `add_many` makes many callers' writes in the same rounds.
An item's id row is written first, pending, then its rows, then a confirm that carries the
writer's total in the same mutation: an item is new when its id is absent or still pending, or
is the writer's own for a call whose answer was lost (`id_write_memory`), so a write cut off
anywhere is completed by the retry, counted once, and a re-delivery keeps the first fetch
time. The same reads of items_by_id find the conversations of the batch's parents, so replies
join their thread's root (blackwidow.core.store.threads) at no extra round trip."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Sequence
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
from cassandra.query import BoundStatement

from blackwidow.core.store import threads
from blackwidow.core.store.base import SearchUnsupported, StoreUnavailable, Write
from blackwidow.core.store.cassandra import reads as cassandra_reads
from blackwidow.core.store.cassandra import schema as cassandra_schema
from blackwidow.core.store.cassandra import writes as cassandra_writes
from blackwidow.core.store.cassandra.config import CassandraConfig
from blackwidow.core.store.cassandra.counts import Counts
from blackwidow.core.store.cassandra.id_write_memory import Bucket, IdRow, IdWriteMemory
from blackwidow.core.store.cassandra.rows import (
    DAY,
    Work,
    batches,
    bucket_of_item,
    chunks,
    copies,
    crawler_of,
    crawler_rows,
    day_of,
    grouped,
    id_bucket,
    packed,
    thread_rows,
    unfinished,
    unset_none,
    utc,
)
from blackwidow.core.store.cassandra.statements import Statements
from blackwidow.core.store.cassandra.writes import Ttls
from blackwidow.core.store.windows import EVERYTHING, ItemPage, Window
from sources.model import Item

IDS_PER_READ = 100  # ids in one `item_id IN ?` read, conversations in one `conversation_id IN ?`
IN_FLIGHT = 32  # requests outstanding at once from one store

_UNAVAILABLE = (
    NoHostAvailable,
    OperationTimedOut,
    RequestExecutionException,
    ConnectionException,
    OSError,
)
_Result = TypeVar("_Result")


def make_cluster(config: CassandraConfig) -> Cluster:
    """A driver cluster that fails fast when Cassandra is down, reconnects within seconds, and
    takes a silent host (its packets lost, nothing refused) out of its plans before a request
    to it times out: an idle connection is asked every fifth of `request_timeout`, and one
    that answers nothing for half of it is closed, its host marked down and the requests on
    it sent to the next host (every statement is idempotent: Statements.prepare, rows.packed).
    So a silent replica costs the requests sent to it at most about one `request_timeout`,
    not the fault's length, and it comes back on a new connection once it answers (the old
    one's TCP would first wait out its retransmission backoff)."""
    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy()),
        consistency_level=config.consistency,
        request_timeout=config.request_timeout,
    )
    return Cluster(
        list(config.hosts),
        port=config.port,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        reconnection_policy=ExponentialReconnectionPolicy(0.5, 10.0),
        connect_timeout=config.connect_timeout,
        protocol_version=ProtocolVersion.V4,
        # found silent within 2 intervals and a timeout: 0.9 of request_timeout at most
        idle_heartbeat_interval=config.request_timeout / 5,
        idle_heartbeat_timeout=config.request_timeout / 2,
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
    it answers raises StoreUnavailable. Each instance is one writer in bucket_totals, with a
    memory of its own id writes (blackwidow.core.store.cassandra.id_write_memory).
    """

    reads_before_write = True  # items_by_id says which items are new: a read per write

    def __init__(self, config: CassandraConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._cluster: Cluster | None = None
        self._session: Session | None = None
        self._statements: Statements | None = None
        self._id_writes = IdWriteMemory(uuid.uuid4(), lambda key: (key[0], id_bucket(key[1])))
        self._crawler_locks: dict[int, threading.Lock] = defaultdict(threading.Lock)
        settles_after = 2 * config.request_timeout  # a write sent has landed by then
        self._counts = Counts(self._id_writes.writer, settles_after, self._crawler_lock, self._run)
        self.count_settles_after = settles_after
        self._words_indexed = False  # known once seen: the blocks are not emptied under a hub

    def _connected(self) -> tuple[Session, Statements]:
        with self._lock:
            if self._session is None or self._statements is None:
                cluster = make_cluster(self._config)
                try:
                    session = cluster.connect()
                    self._check_schema(session)
                    self._statements = Statements.prepare(
                        session, self._config.keyspace, self._config.search
                    )
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

    def _call(self, action: Callable[[Session, Statements], _Result]) -> _Result:
        """Run an action on the session; a Cassandra that does not answer is StoreUnavailable."""
        try:
            return action(*self._connected())
        except _UNAVAILABLE as error:
            raise StoreUnavailable(f"cassandra: {type(error).__name__}: {error}") from error

    def add(
        self,
        items: Sequence[Item],
        ttl: int | None = None,
        id_ttl: int | None = None,
        unseen: Collection[threads.Key] = (),
    ) -> list[Item]:
        return self.add_many([Write(items, ttl, id_ttl, unseen)])[0]

    def add_many(self, writes: Sequence[Write]) -> list[list[Item]]:
        """All the writes in one round of requests (cassandra_writes decides, write by write,
        what each takes as new), holding the lock of every crawler they write."""
        if any(item.crawler_id is None for write in writes for item in write.items):
            raise ValueError("every item needs a crawler_id before it is stored")
        if not any(write.items for write in writes):
            return [[] for _ in writes]
        crawlers = {crawler_of(item) for write in writes for item in write.items}
        self._counts.writing(writes)
        with contextlib.ExitStack() as held:
            for crawler_id in sorted(crawlers):
                held.enter_context(self._crawler_lock(crawler_id))
            return self._call(lambda session, st: self._add(session, st, writes))

    def _crawler_lock(self, crawler_id: int) -> threading.Lock:
        """Check-then-write is atomic per crawler within this process; across nodes, a crawler
        runs on one node at a time (the hub's routing) but for the overlap of a move, the one
        race left to two writers (docs/stores.md, "Exact under lost replies and crashes")."""
        with self._lock:
            return self._crawler_locks[crawler_id]

    def _add(self, session: Session, st: Statements, writes: Sequence[Write]) -> list[list[Item]]:
        keys = [threads.key(item) for write in writes for item in write.items]
        unacked = self._id_writes.unacked({crawler for crawler, _ in keys})
        asked = {  # the keys some write does not vouch for
            threads.key(item)
            for write in writes
            for item in write.items
            if threads.key(item) not in write.unseen
        }
        parents = threads.parent_keys(item for write in writes for item in write.items)
        found = self._stored(session, st, {*asked, *parents, *unacked})
        decided = cassandra_writes.decide(writes, found, self._id_writes.new_keys(keys, found))
        if decided.new:
            self._id_writes.begin(threads.key(item) for item, _ in decided.new)
            undone = [(i, t) for i, t in decided.new if unfinished(found.get(threads.key(i)))]
            first = {threads.key(item) for item, _ in decided.new} - found.keys()
            self._run(session, self._pending_rows(st, undone, first))  # first
            self._run(session, self._item_rows(st, decided.new, first))
            self._move(session, st, decided.moves)
            self._confirm(session, st, decided.new)
        self._id_writes.answered(keys)
        return decided.answers

    def _stored(
        self, session: Session, st: Statements, keys: Collection[threads.Key]
    ) -> dict[threads.Key, IdRow]:
        """The id rows of these items that exist, pending or not: a crawler's few ids (up to
        IDS_PER_READ) in one read of all their buckets, more in one read per bucket."""
        by_crawler = grouped(sorted(keys), lambda key: key[0])
        reads: Work = []
        for crawler, some in by_crawler.items():
            item_ids = [item_id for _, item_id in some]
            if len(item_ids) <= IDS_PER_READ:
                buckets = sorted({id_bucket(item_id) for item_id in item_ids})
                reads.append((st.stored_ids_of_buckets, (crawler, buckets, item_ids)))
                continue
            for bucket, members in grouped(item_ids, id_bucket).items():
                reads += [
                    (st.stored_ids, (crawler, bucket, chunk))
                    for chunk in chunks(members, IDS_PER_READ)
                ]
        found = {}
        for (_, (crawler, *_)), rows in zip(reads, self._run(session, reads), strict=True):
            found.update(
                (
                    (crawler, row.item_id),
                    IdRow(row.conversation_id, utc(row.fetched_at), row.writer, bool(row.pending)),
                )
                for row in rows
            )
        return found

    def _item_rows(
        self, st: Statements, new: list[tuple[Item, Ttls]], first: Collection[threads.Key]
    ) -> Work:
        """Rows of items_by_crawler, crawler_days and items_by_conversation, by partition,
        each with its write's retention; an item with no id row found is written the `first`
        time (cassandra_rows.unset_none)."""
        work: Work = []
        groups = grouped(new, lambda pair: (pair[1].ttl, threads.key(pair[0]) in first))
        for (ttl, written_first), pairs in groups.items():
            items = [item for item, _ in pairs]
            day_ttl = ttl + int(DAY.total_seconds()) if ttl else 0  # outlives the day's items
            days = {(crawler_of(item), day_of(item.fetched_at)) for item in items}
            work += crawler_rows(st, items, ttl, written_first)
            work += [(st.insert_day, (crawler, day, day_ttl)) for crawler, day in days]
            work += thread_rows(st, items, ttl, written_first)
        return work

    def _move(
        self, session: Session, st: Statements, moves: dict[threads.Key, tuple[str, Ttls]]
    ) -> None:
        """Fold each conversation a new reply names into the reply's root (threads.re_roots).

        Rows are copied to the root, with the time they have left, before they are deleted
        where they were, and all before the reply's commit mark: a move cut short is finished
        by the retry. The conversations are read with `IN`, a hundred a request.
        """
        if not moves:
            return
        names = sorted({conversation for _, conversation in moves})
        reads: Work = [(st.thread_rows, (chunk,)) for chunk in chunks(names, IDS_PER_READ)]
        rows = [
            row
            for result in self._run(session, reads)
            for row in result
            if (row.crawler_id, row.conversation_id) in moves
        ]
        roots = {conversation: root for conversation, (root, _) in moves.items()}
        work: Work = []
        for ttls, group in grouped(
            rows, lambda r: moves[r.crawler_id, r.conversation_id][1]
        ).items():
            work += copies(st, group, roots, ttls.id_ttl)
        self._run(session, work)
        keys = [(row.conversation_id, row.sort_at, row.crawler_id, row.item_id) for row in rows]
        self._run(session, [(st.delete_thread_row, key) for key in keys])

    def _pending_rows(
        self, st: Statements, new: list[tuple[Item, Ttls]], first: Collection[threads.Key]
    ) -> Work:
        """Id rows marked pending, written before the items' rows: a re-delivery after a crash
        finds the first fetch's time and writes the same rows again instead of new ones.
        Ids outlive retention: an item is never stored twice, as SQLite's rows do; with time
        segments they live `id_ttl` (sources.segments.id_ttl), past which no one asks."""
        writer = self._id_writes.writer

        def values(bucket: Bucket, pair: tuple[Item, Ttls]) -> tuple[Any, ...]:
            item, ttls = pair
            row = (*bucket, item.id, item.fetched_at, item.conversation_id, writer, ttls.id_ttl)
            return unset_none(row) if threads.key(item) in first else row

        by_bucket = grouped(new, lambda pair: bucket_of_item(pair[0]))
        return batches(st.insert_pending_id, by_bucket, values, st.place)

    def _confirm(self, session: Session, st: Statements, new: list[tuple[Item, Ttls]]) -> None:
        """The commit mark, written last: per bucket, its ids confirmed with this writer's
        total there, one mutation, carrying the confirms not yet acknowledged (IdWriteMemory);
        buckets on one replica share a batch. The buckets whose batch was acknowledged are
        recorded even when another fails. A carried confirm takes the id lifetime of the
        bucket's new items."""
        writer = self._id_writes.writer
        id_ttls = {item.id: ttls.id_ttl for item, ttls in new}
        parts: list[tuple[list[BoundStatement], tuple[Bucket, list[str]]]] = []
        for bucket, pairs in grouped(new, lambda pair: bucket_of_item(pair[0])).items():
            item_ids, total = self._id_writes.confirm(bucket, [item.id for item, _ in pairs])
            rows = [
                st.confirm_id.bind((id_ttls.get(i, pairs[0][1].id_ttl), writer, *bucket, i))
                for i in item_ids
            ]
            began = self._counts.began(bucket[0])
            rows.append(st.set_bucket_total.bind((total, began, *bucket, writer)))
            parts.append((rows, (bucket, item_ids)))
        batched = packed(parts, st.place)
        results = execute_concurrent(
            session, [(batch, None) for batch, _ in batched], IN_FLIGHT, False
        )
        for (_, carried), (ok, _) in zip(batched, results, strict=True):
            for bucket, item_ids in carried if ok else ():
                self._id_writes.acked(bucket, item_ids)
        errors = [result for ok, result in results if not ok]
        if errors:
            raise errors[0]

    def _run(self, session: Session, work: Work) -> list[Any]:
        """Send statements with at most IN_FLIGHT outstanding; the first failure raises."""
        results = execute_concurrent(
            session, work, concurrency=IN_FLIGHT, raise_on_first_error=True
        )
        return [result for _, result in results]

    def items(self, crawler_id: int, limit: int) -> list[Item]:
        return self.page(crawler_id, limit).items

    def page(
        self, crawler_id: int, limit: int, window: Window = EVERYTHING, after: Any = None
    ) -> ItemPage:
        return self._call(
            lambda session, st: cassandra_reads.page(session, st, crawler_id, limit, window, after)
        )

    def stream(self, crawler_id: int, window: Window = EVERYTHING) -> Iterator[Item]:
        try:
            yield from cassandra_reads.stream(*self._connected(), crawler_id, window)
        except _UNAVAILABLE as error:
            raise StoreUnavailable(f"cassandra: {type(error).__name__}: {error}") from error

    def conversation(
        self, conversation_id: str, crawler_ids: Collection[int], limit: int
    ) -> list[Item]:
        return self.conversation_page(conversation_id, crawler_ids, limit).items

    def conversation_page(
        self, conversation_id: str, crawler_ids: Collection[int], limit: int, after: Any = None
    ) -> ItemPage:
        return self._call(
            lambda session, st: cassandra_reads.conversation_page(
                session, st, conversation_id, crawler_ids, limit, after
            )
        )

    def search(
        self,
        words: Sequence[str],
        crawler_ids: Collection[int],
        limit: int,
        window: Window = EVERYTHING,
        after: Any = None,
    ) -> ItemPage:
        """On the word blocks (cassandra.word_blocks), newest day first; refused until the
        blocks hold every item (`blackwidow db upgrade` with search=on): no ranking, and
        never a scan of every item."""

        def found(session: Session, st: Statements) -> ItemPage:
            self._check_words_index(session)
            return cassandra_reads.search(session, st, words, crawler_ids, limit, window, after)

        return self._call(found)

    def _check_words_index(self, session: Session) -> None:
        if self._words_indexed:
            return
        if not self._config.search:
            raise SearchUnsupported(
                "search is off for this store: add search=on to BLACKWIDOW_STORE on the hub"
                " and the nodes, restart the nodes, then run `blackwidow db upgrade`, which"
                " indexes the items stored so far"
            )
        if not cassandra_schema.words_filled(session, self._config.keyspace):
            raise SearchUnsupported(
                f"cassandra: keyspace {self._config.keyspace} has no index of the words of the"
                " items stored before search was on, and a scan of every item is not offered;"
                " run `blackwidow db upgrade` with search=on, which indexes them"
            )
        self._words_indexed = True

    def stored_ids(self, crawler_id: int) -> Iterator[str]:
        """Every id row of the crawler, pending ones too, bucket by bucket on the driver's
        paging: an id row whose TTL has passed is gone."""
        try:
            yield from cassandra_reads.stored_ids(*self._connected(), crawler_id)
        except _UNAVAILABLE as error:
            raise StoreUnavailable(f"cassandra: {type(error).__name__}: {error}") from error

    def count(self, crawler_id: int) -> int:
        return self._call(lambda session, st: self._counts.count(session, st, crawler_id))

    def count_unsettled(self, crawler_id: int) -> bool:
        return self._counts.unsettled(crawler_id)

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
