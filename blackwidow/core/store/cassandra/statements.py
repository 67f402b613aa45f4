"""The Cassandra store's prepared CQL, one statement per write or read path, all idempotent."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from cassandra.cluster import Session
from cassandra.metadata import Metadata
from cassandra.query import BoundStatement, PreparedStatement

ITEM = "source, url, title, text, author, published_at, in_reply_to, html"  # in both tables
_ITEM_MARKS = ", ".join("?" for _ in ITEM.split(","))

_DAY_WINDOW = (  # one (crawler, day) partition, cut by clustering bounds on fetched_at
    f"SELECT crawler_id, item_id, fetched_at, conversation_id, {ITEM}"
    " FROM {ks}.items_by_crawler WHERE crawler_id = ? AND day = ?"
    " AND fetched_at >= ? AND fetched_at < ?"
)


@dataclass(frozen=True)
class Statements:
    insert_item: PreparedStatement
    insert_day: PreparedStatement
    insert_pending_id: PreparedStatement
    confirm_id: PreparedStatement
    set_bucket_total: PreparedStatement
    insert_conversation: PreparedStatement
    set_id_conversation: PreparedStatement
    delete_thread_row: PreparedStatement
    stored_ids: PreparedStatement
    stored_ids_of_buckets: PreparedStatement
    bucket_ids: PreparedStatement
    thread_rows: PreparedStatement
    totals: PreparedStatement
    bucket_totals: PreparedStatement
    bucket_id_count: PreparedStatement
    bucket_pending_count: PreparedStatement
    days_between: PreparedStatement
    day_window: PreparedStatement
    day_window_published: PreparedStatement
    conversation: PreparedStatement
    insert_block: PreparedStatement
    block_words: PreparedStatement
    block_keys: PreparedStatement
    items_at: PreparedStatement
    words: bool  # items are written with their words, for search (the store's `search` option)
    place: Callable[[BoundStatement], Hashable]  # the replica a row's batch is sent to

    @classmethod
    def prepare(cls, session: Session, ks: str, words: bool) -> Statements:
        prepared = {name: session.prepare(text) for name, text in _texts(ks).items()}
        for statement in prepared.values():
            statement.is_idempotent = True  # plain upserts and reads: a retry repeats, not adds
        return cls(**prepared, words=words, place=_first_replica(session.cluster.metadata))


def _first_replica(metadata: Metadata) -> Callable[[BoundStatement], Hashable]:
    """Where a row's partition lives: its first replica, the host token-aware routing sends
    a batch to (None where the driver knows no ring, when every batch is alike)."""

    def place(row: BoundStatement) -> Hashable:
        if row.routing_key is None:
            return None
        replicas = metadata.get_replicas(row.keyspace, row.routing_key)
        return replicas[0].host_id if replicas else None

    return place


def _texts(ks: str) -> dict[str, str]:
    return {
        "insert_item": f"INSERT INTO {ks}.items_by_crawler (crawler_id, day, fetched_at,"
        f" item_id, {ITEM}, conversation_id) VALUES (?, ?, ?, ?, {_ITEM_MARKS}, ?)"
        " USING TTL ?",
        "insert_day": f"INSERT INTO {ks}.crawler_days (crawler_id, day) VALUES (?, ?) USING TTL ?",
        "insert_pending_id": f"INSERT INTO {ks}.items_by_id (crawler_id, bucket, item_id,"
        " fetched_at, conversation_id, writer, pending) VALUES (?, ?, ?, ?, ?, ?, true)"
        " USING TTL ?",
        "confirm_id": f"UPDATE {ks}.items_by_id USING TTL ? SET pending = false, writer = ?"
        " WHERE crawler_id = ? AND bucket = ? AND item_id = ?",
        "set_bucket_total": f"UPDATE {ks}.bucket_totals SET stored = ?, began = ?"
        " WHERE crawler_id = ? AND bucket = ? AND writer = ?",
        "insert_conversation": f"INSERT INTO {ks}.items_by_conversation (conversation_id,"
        f" sort_at, crawler_id, fetched_at, item_id, {ITEM})"
        f" VALUES (?, ?, ?, ?, ?, {_ITEM_MARKS}) USING TTL ?",
        "set_id_conversation": f"UPDATE {ks}.items_by_id USING TTL ? SET conversation_id = ?"
        " WHERE crawler_id = ? AND bucket = ? AND item_id = ?",
        "delete_thread_row": f"DELETE FROM {ks}.items_by_conversation"
        " WHERE conversation_id = ? AND sort_at = ? AND crawler_id = ? AND item_id = ?",
        "stored_ids": f"SELECT item_id, conversation_id, fetched_at, writer, pending"
        f" FROM {ks}.items_by_id WHERE crawler_id = ? AND bucket = ? AND item_id IN ?",
        "stored_ids_of_buckets": f"SELECT item_id, conversation_id, fetched_at, writer,"
        f" pending FROM {ks}.items_by_id WHERE crawler_id = ? AND bucket IN ? AND item_id IN ?",
        "bucket_ids": f"SELECT item_id FROM {ks}.items_by_id WHERE crawler_id = ? AND bucket = ?",
        "thread_rows": f"SELECT conversation_id, sort_at, crawler_id, item_id, fetched_at,"
        f" {ITEM}, TTL(source) AS remaining FROM {ks}.items_by_conversation"
        " WHERE conversation_id IN ?",
        "totals": f"SELECT stored FROM {ks}.crawler_totals WHERE crawler_id = ?",
        "bucket_totals": f"SELECT writer, stored, began, WRITETIME(stored) AS written"
        f" FROM {ks}.bucket_totals WHERE crawler_id = ? AND bucket IN ?",
        "bucket_id_count": f"SELECT COUNT(*) AS found FROM {ks}.items_by_id"
        " WHERE crawler_id = ? AND bucket = ?",
        "bucket_pending_count": f"SELECT COUNT(*) AS found FROM {ks}.items_by_id"
        " WHERE crawler_id = ? AND bucket = ? AND pending = true ALLOW FILTERING",
        "days_between": f"SELECT day FROM {ks}.crawler_days"
        " WHERE crawler_id = ? AND day >= ? AND day <= ?",
        "day_window": _DAY_WINDOW.format(ks=ks),
        "day_window_published": _DAY_WINDOW.format(ks=ks)
        + " AND published_at >= ? AND published_at < ? ALLOW FILTERING",
        "conversation": f"SELECT crawler_id, item_id, fetched_at, {ITEM}"
        f" FROM {ks}.items_by_conversation WHERE conversation_id = ?",
        "insert_block": f"INSERT INTO {ks}.word_blocks (crawler_id, day, bucket, block_at,"
        " block_id, postings) VALUES (?, ?, ?, ?, ?, ?) USING TTL ?",
        "block_words": f"SELECT block_at, block_id, postings FROM {ks}.word_blocks"
        " WHERE crawler_id = ? AND day = ? AND bucket = ? AND block_at >= ?",
        "block_keys": f"SELECT block_at, block_id, postings FROM {ks}.word_blocks"
        " WHERE crawler_id = ? AND day = ? AND bucket = ? AND (block_at, block_id) IN ?",
        "items_at": f"SELECT crawler_id, item_id, fetched_at, conversation_id, {ITEM}"
        f" FROM {ks}.items_by_crawler WHERE crawler_id = ? AND day = ?"
        " AND (fetched_at, item_id) IN ?",
    }
