"""SQLite store: the embedded default, one file shared by the hub and the nodes on one machine.

It manages its own schema (created on open); Alembic is for the hub's SQL only.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sources.model import Item

BUSY_TIMEOUT = 10.0  # seconds a writer waits for another process's lock before failing

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS items (
        crawler_id INTEGER NOT NULL,
        item_id TEXT NOT NULL,
        source TEXT NOT NULL,
        url TEXT,
        title TEXT,
        text TEXT,
        author TEXT,
        published_at TEXT,
        fetched_at TEXT NOT NULL,
        conversation_id TEXT,
        in_reply_to TEXT,
        PRIMARY KEY (crawler_id, item_id)
    )
    """,
    "CREATE INDEX IF NOT EXISTS items_newest ON items (crawler_id, fetched_at, item_id)",
)

_COLUMNS = (
    "crawler_id, item_id, source, url, title, text, author,"
    " published_at, fetched_at, conversation_id, in_reply_to"
)
_INSERT = f"INSERT OR IGNORE INTO items ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_SELECT_NEWEST = (
    f"SELECT {_COLUMNS} FROM items WHERE crawler_id = ?"
    " ORDER BY fetched_at DESC, item_id DESC LIMIT ?"
)


class SqliteStore:
    """A Store in one SQLite file that several processes may open at once.

    WAL lets the hub read while a node writes, and the busy timeout makes concurrent
    writers queue instead of failing. One connection serves all threads behind a lock.
    """

    def __init__(self, path: str) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT, check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # durable enough under WAL, far fewer fsyncs
        for statement in _SCHEMA:
            self._db.execute(statement)

    def add(self, items: Sequence[Item]) -> int:
        """Insert unseen items in one transaction; the first write of an item wins.

        Keeping the first copy keeps `fetched_at` stable, so re-delivery never reorders.
        """
        if any(item.crawler_id is None for item in items):
            raise ValueError("every item needs a crawler_id before it is stored")
        rows = [_to_row(item) for item in items]
        if not rows:
            return 0
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")  # take the write lock now: no upgrade deadlock
            try:
                added = self._db.executemany(_INSERT, rows).rowcount
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return added

    def items(self, crawler_id: int, limit: int) -> list[Item]:
        """A crawler's items, newest first (by fetched_at, then id), at most `limit`."""
        with self._lock:
            rows = self._db.execute(_SELECT_NEWEST, (crawler_id, limit)).fetchall()
        return [_from_row(row) for row in rows]

    def count(self, crawler_id: int) -> int:
        with self._lock:
            (found,) = self._db.execute(
                "SELECT COUNT(*) FROM items WHERE crawler_id = ?", (crawler_id,)
            ).fetchone()
        return found

    def ping(self) -> bool:
        """True when a trivial query answers; health endpoints report False, never raise."""
        try:
            with self._lock:
                self._db.execute("SELECT 1").fetchone()
        except sqlite3.Error:
            return False
        return True

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _to_row(item: Item) -> tuple[Any, ...]:
    return (
        item.crawler_id,
        item.id,
        item.source,
        item.url,
        item.title,
        item.text,
        item.author,
        _instant_text(item.published_at) if item.published_at is not None else None,
        _instant_text(item.fetched_at),
        item.conversation_id,
        item.in_reply_to,
    )


def _from_row(row: tuple[Any, ...]) -> Item:
    crawler_id, item_id, source, url, title, text, author, published, fetched, conv, reply = row
    return Item(
        id=item_id,
        source=source,
        url=url,
        title=title,
        text=text,
        author=author,
        published_at=datetime.fromisoformat(published) if published is not None else None,
        fetched_at=datetime.fromisoformat(fetched),
        conversation_id=conv,
        in_reply_to=reply,
        crawler_id=crawler_id,
    )


def _instant_text(moment: datetime) -> str:
    """Fixed-width ISO-8601 in UTC, so text order is time order; naive instants are UTC."""
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.isoformat(timespec="microseconds")
