"""SQLite store: the embedded default, one file shared by the hub and the nodes on one machine.

It versions its own schema (PRAGMA user_version) and upgrades it on open; Alembic is for the
hub's SQL only. Retention is an `expires_at` per row that reads respect; an item's id answers
"stored already?" until its `id_expires_at` for stored_ids (time segments, sources.segments),
though the row's key keeps refusing it: an id of a passed segment is never offered again.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from blackwidow.core.store import threads
from blackwidow.core.store.base import StoreUnavailable, Write
from blackwidow.core.store.windows import (
    EVERYTHING,
    STREAM_BATCH,
    ItemPage,
    Window,
    checked,
    in_batches,
    searchable,
)
from sources.model import Item, utc_text

BUSY_TIMEOUT = 10.0  # seconds a writer waits for another process's lock before failing
_WORDS_FIELDS = ("title", "text", "author")  # what an item is found by, title first (bm25)
_WORDS_COLUMNS = tuple(f"{field}_words" for field in _WORDS_FIELDS)  # each one's `searchable`
_SEARCHABLE = "searchable"  # windows.searchable, as a function of the store's connection


def _words_index() -> tuple[str, ...]:
    """An external-content FTS5 table on the words columns of `items`, kept by triggers in
    each write's own transaction, and built for the items stored already. Its tokenizer is
    `ascii`, which cuts at spaces and ASCII punctuation only and folds nothing but ASCII:
    the columns hold words windows.folded made, which it then takes as they are."""
    listed = ", ".join(_WORDS_COLUMNS)
    new = ", ".join(f"new.{column}" for column in _WORDS_COLUMNS)
    old = ", ".join(f"old.{column}" for column in _WORDS_COLUMNS)
    add = f"INSERT INTO items_words (rowid, {listed}) VALUES (new.rowid, {new});"
    remove = (
        f"INSERT INTO items_words (items_words, rowid, {listed})"
        f" VALUES ('delete', old.rowid, {old});"
    )
    return (
        f"CREATE VIRTUAL TABLE items_words USING fts5({listed},"
        f" content='items', content_rowid='rowid', tokenize='ascii')",
        f"CREATE TRIGGER items_words_added AFTER INSERT ON items BEGIN {add} END",
        f"CREATE TRIGGER items_words_removed AFTER DELETE ON items BEGIN {remove} END",
        f"CREATE TRIGGER items_words_changed AFTER UPDATE OF {listed} ON items BEGIN"
        f" {remove} {add} END",
        "INSERT INTO items_words (items_words) VALUES ('rebuild')",
    )


# Schema versions in order; a file at version n gets the statements of n+1 onwards.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
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
    ),
    (
        "ALTER TABLE items ADD COLUMN expires_at TEXT",
        "CREATE INDEX items_conversation ON items (conversation_id)"
        " WHERE conversation_id IS NOT NULL",
    ),
    ("ALTER TABLE items ADD COLUMN html TEXT",),
    ("ALTER TABLE items ADD COLUMN id_expires_at TEXT",),
    (  # the words of each item, kept by triggers in the insert's own transaction; backfilled
        "CREATE VIRTUAL TABLE items_words USING fts5(title, text, author,"
        " content='items', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')",
        "CREATE TRIGGER items_words_added AFTER INSERT ON items BEGIN"
        " INSERT INTO items_words (rowid, title, text, author)"
        " VALUES (new.rowid, new.title, new.text, new.author); END",
        "CREATE TRIGGER items_words_removed AFTER DELETE ON items BEGIN"
        " INSERT INTO items_words (items_words, rowid, title, text, author)"
        " VALUES ('delete', old.rowid, old.title, old.text, old.author); END",
        "CREATE TRIGGER items_words_changed AFTER UPDATE OF title, text, author ON items BEGIN"
        " INSERT INTO items_words (items_words, rowid, title, text, author)"
        " VALUES ('delete', old.rowid, old.title, old.text, old.author);"
        " INSERT INTO items_words (rowid, title, text, author)"
        " VALUES (new.rowid, new.title, new.text, new.author); END",
        "INSERT INTO items_words (items_words) VALUES ('rebuild')",
    ),
    (  # an index of the words windows.folded cuts, in every script and form, not FTS5's own
        "DROP TRIGGER items_words_added",
        "DROP TRIGGER items_words_removed",
        "DROP TRIGGER items_words_changed",
        "DROP TABLE items_words",
        *(f"ALTER TABLE items ADD COLUMN {column} TEXT" for column in _WORDS_COLUMNS),
        "UPDATE items SET"
        + ",".join(f" {field}_words = {_SEARCHABLE}({field})" for field in _WORDS_FIELDS),
        *_words_index(),
    ),
)

_COLUMNS = (
    "crawler_id, item_id, source, url, title, text, author,"
    " published_at, fetched_at, conversation_id, in_reply_to, html"
)
_INSERTED = f"{_COLUMNS}, expires_at, id_expires_at, {', '.join(_WORDS_COLUMNS)}"
_INSERT = (
    f"INSERT OR IGNORE INTO items ({_INSERTED})"
    f" VALUES ({', '.join('?' for _ in _INSERTED.split(','))})"
)
_SELECT_IDS = (  # on the primary key, in id order: a keyset page
    "SELECT item_id FROM items WHERE crawler_id = ? AND item_id > ?"
    " AND (id_expires_at IS NULL OR id_expires_at > ?) ORDER BY item_id LIMIT ?"
)
_SELECT_CONVERSATIONS = (  # expired rows too: a reply joins its thread whenever it arrives
    "SELECT item_id, conversation_id FROM items"
    " WHERE crawler_id = ? AND item_id IN (SELECT value FROM json_each(?))"
)
_MOVE = "UPDATE items SET conversation_id = ? WHERE crawler_id = ? AND conversation_id = ?"
_LIVE = "(expires_at IS NULL OR expires_at > ?)"
_TIME_COLUMNS = {"fetched_at": "fetched_at", "published_at": "published_at"}  # never user text
_SELECT_CRAWLER = f"SELECT {_COLUMNS} FROM items WHERE crawler_id = ? AND {_LIVE}"
_NEWEST_FIRST = " ORDER BY fetched_at DESC, item_id DESC LIMIT ?"  # on items_newest
_BEFORE = "(fetched_at, item_id) < (?, ?)"  # keyset: after the last row of the page before
_SELECT_CONVERSATION = (
    f"SELECT {_COLUMNS} FROM items WHERE conversation_id = ? AND crawler_id IN (SELECT value"
    f" FROM json_each(?)) AND {_LIVE}"
)
_SEARCH = (  # bm25: lower is more relevant; a word in the title counts twice
    f"SELECT {', '.join('items.' + c.strip() for c in _COLUMNS.split(','))},"
    " bm25(items_words, 2.0, 1.0, 1.0) AS score, items.rowid FROM items_words"
    " JOIN items ON items.rowid = items_words.rowid WHERE items_words MATCH ?"
    f" AND items.crawler_id IN (SELECT value FROM json_each(?)) AND {_LIVE}"
)
_RANKED = " ORDER BY score, items.rowid LIMIT ?"
_THREAD_KEY = "(coalesce(published_at, fetched_at), crawler_id, item_id)"
_OLDEST_FIRST = " ORDER BY coalesce(published_at, fetched_at), crawler_id, item_id LIMIT ?"


class SqliteStore:
    """A Store in one SQLite file that several processes may open at once.

    WAL lets the hub read while a node writes, and the busy timeout makes concurrent
    writers queue instead of failing. One connection serves all threads behind a lock.
    """

    reads_before_write = False  # INSERT OR IGNORE: "stored already?" is the insert's key lookup
    count_settles_after = 0.0  # one writer at a time: a row counted is a row stored

    def __init__(self, path: str) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)  # a first run's data directory
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT, check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # durable enough under WAL, far fewer fsyncs
        self._db.create_function(_SEARCHABLE, 1, searchable, deterministic=True)  # re-indexing
        self._upgrade()

    def _upgrade(self) -> None:
        """Apply the missing schema versions, each in a transaction that also bumps the version."""
        with self._transaction():
            (version,) = self._db.execute("PRAGMA user_version").fetchone()
            for number, statements in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in statements:
                    self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {number}")

    def _transaction(self) -> _WriteTransaction:
        return _WriteTransaction(self._db)

    def add(
        self,
        items: Sequence[Item],
        ttl: int | None = None,
        id_ttl: int | None = None,
        unseen: Collection[threads.Key] = (),
    ) -> list[Item]:
        """Insert unseen items in one transaction; the first write of an item wins.

        Keeping the first copy keeps `fetched_at` stable, so re-delivery never reorders.
        `unseen` changes nothing here: "stored already?" is the insert's own key lookup, in
        the same statement, so there is no read to save.
        Replies join their thread's root first (blackwidow.core.store.threads): parents are read in
        one query per crawler, and replies stored before a new item came move to its root.
        """
        return self.add_many([Write(items, ttl, id_ttl, unseen)])[0]

    def add_many(self, writes: Sequence[Write]) -> list[list[Item]]:
        """The writes one after another as `add` makes each, in one transaction: one commit
        and one wait for the file's lock for them all."""
        if any(item.crawler_id is None for write in writes for item in write.items):
            raise ValueError("every item needs a crawler_id before it is stored")
        if not any(write.items for write in writes):
            return [[] for _ in writes]
        with self._lock, self._transaction():
            return [self._insert(write) for write in writes]

    def _insert(self, write: Write) -> list[Item]:
        """One write's inserts and moves, inside the caller's transaction."""
        items = write.items
        stored = self._conversations(threads.parent_keys(items))
        added = [
            (given, item)
            for given, item in zip(items, threads.rooted(items, stored), strict=True)
            if self._db.execute(_INSERT, _to_row(item, write.ttl, write.id_ttl)).rowcount
        ]
        moves = threads.re_roots(added).items()
        self._db.executemany(_MOVE, [(root, *conversation) for conversation, root in moves])
        return [item for _, item in added]

    def _conversations(self, keys: Iterable[threads.Key]) -> dict[threads.Key, str | None]:
        """The conversation of each of these items that is stored."""
        ids: dict[int, list[str]] = defaultdict(list)
        for crawler_id, item_id in keys:
            ids[crawler_id].append(item_id)
        return {
            (crawler_id, item_id): conversation_id
            for crawler_id, some in ids.items()
            for item_id, conversation_id in self._db.execute(
                _SELECT_CONVERSATIONS, (crawler_id, json.dumps(some))
            )
        }

    def items(self, crawler_id: int, limit: int) -> list[Item]:
        return self.page(crawler_id, limit).items

    def page(
        self, crawler_id: int, limit: int, window: Window = EVERYTHING, after: Any = None
    ) -> ItemPage:
        """A keyset page on items_newest: the position is the last row's (fetched_at, id), and
        one row past the page is read to tell whether there is a next one."""
        clauses, parameters = _window_clauses(window)
        if after is not None:
            clauses.append(_BEFORE)
            parameters += checked(after, (str, str))
        query = _SELECT_CRAWLER + "".join(f" AND {c}" for c in clauses) + _NEWEST_FIRST
        rows = self._select(query, (crawler_id, _now_text(), *parameters, limit + 1))
        return _page(rows, limit, lambda last: [utc_text(last.fetched_at), last.id])

    def stream(self, crawler_id: int, window: Window = EVERYTHING) -> Iterator[Item]:
        """Keyset pages of STREAM_BATCH, the lock held for each page's query only, so writers
        and other readers go on between them."""
        return in_batches(lambda after: self.page(crawler_id, STREAM_BATCH, window, after))

    def conversation(
        self, conversation_id: str, crawler_ids: Collection[int], limit: int
    ) -> list[Item]:
        return self.conversation_page(conversation_id, crawler_ids, limit).items

    def conversation_page(
        self, conversation_id: str, crawler_ids: Collection[int], limit: int, after: Any = None
    ) -> ItemPage:
        ids = "[" + ",".join(str(int(c)) for c in crawler_ids) + "]"
        query, parameters = _SELECT_CONVERSATION, [conversation_id, ids, _now_text()]
        if after is not None:
            query += f" AND {_THREAD_KEY} > (?, ?, ?)"
            parameters += checked(after, (str, int, str))
        rows = self._select(query + _OLDEST_FIRST, (*parameters, limit + 1))
        return _page(rows, limit, _thread_position)

    def _select(self, query: str, parameters: tuple[Any, ...]) -> list[Item]:
        try:
            with self._lock:
                rows = self._db.execute(query, parameters).fetchall()
        except sqlite3.OperationalError as error:  # a lock held past the busy timeout
            raise StoreUnavailable(f"sqlite: {error}") from error
        return [_from_row(row) for row in rows]

    def search(
        self,
        words: Sequence[str],
        crawler_ids: Collection[int],
        limit: int,
        window: Window = EVERYTHING,
        after: Any = None,
    ) -> ItemPage:
        """Most relevant first (FTS5's bm25), then oldest stored: a keyset page on (score,
        rowid). Scores are computed as each page is read, so items stored between pages may
        move one across a page boundary."""
        match = " ".join(f'"{word}"' for word in words)  # quoted: every word, no operators
        ids = "[" + ",".join(str(int(c)) for c in crawler_ids) + "]"
        clauses, parameters = _window_clauses(window)
        query = _SEARCH + "".join(f" AND {c}" for c in clauses)
        if after is not None:
            query += " AND (score, items.rowid) > (?, ?)"
            parameters += checked(after, ((float, int), int))
        try:
            with self._lock:
                rows = self._db.execute(
                    query + _RANKED, (match, ids, _now_text(), *parameters, limit + 1)
                ).fetchall()
        except sqlite3.OperationalError as error:
            raise StoreUnavailable(f"sqlite: {error}") from error
        found = [_from_row(row[:-2]) for row in rows[:limit]]
        return ItemPage(found, list(rows[limit - 1][-2:]) if len(rows) > limit else None)

    def stored_ids(self, crawler_id: int) -> Iterator[str]:
        """Keyset pages of STREAM_BATCH ids on the primary key, the lock held per page."""
        after, now = "", _now_text()
        while True:
            with self._lock:
                rows = self._db.execute(
                    _SELECT_IDS, (crawler_id, after, now, STREAM_BATCH)
                ).fetchall()
            yield from (item_id for (item_id,) in rows)
            if len(rows) < STREAM_BATCH:
                return
            after = rows[-1][0]

    def count(self, crawler_id: int) -> int:
        with self._lock:
            (found,) = self._db.execute(
                "SELECT COUNT(*) FROM items WHERE crawler_id = ?", (crawler_id,)
            ).fetchone()
        return found

    def count_unsettled(self, crawler_id: int) -> bool:
        return False  # a row counted is a row stored

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


class _WriteTransaction:
    """BEGIN IMMEDIATE takes the write lock up front, so two writers never deadlock upgrading."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise StoreUnavailable(f"sqlite: {error}") from error

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._db.execute("ROLLBACK" if kind else "COMMIT")


def _to_row(item: Item, ttl: int | None, id_ttl: int | None) -> tuple[Any, ...]:
    """Retention and id expiry count from the write, as Cassandra's TTL does; the words
    columns are what the index reads (_words_index)."""
    now = datetime.now(UTC)
    expires = utc_text(now + timedelta(seconds=ttl)) if ttl else None
    id_expires = utc_text(now + timedelta(seconds=id_ttl)) if id_ttl else None
    return (
        item.crawler_id,
        item.id,
        item.source,
        item.url,
        item.title,
        item.text,
        item.author,
        utc_text(item.published_at) if item.published_at is not None else None,
        utc_text(item.fetched_at),
        item.conversation_id,
        item.in_reply_to,
        item.html,
        expires,
        id_expires,
        *(searchable(getattr(item, field)) for field in _WORDS_FIELDS),
    )


def _from_row(row: tuple[Any, ...]) -> Item:
    crawler_id, item_id, source, url, title, text, author, published, fetched, *rest = row
    conversation_id, in_reply_to, html = rest
    return Item(
        id=item_id,
        source=source,
        url=url,
        title=title,
        text=text,
        author=author,
        published_at=datetime.fromisoformat(published) if published is not None else None,
        fetched_at=datetime.fromisoformat(fetched),
        conversation_id=conversation_id,
        in_reply_to=in_reply_to,
        crawler_id=crawler_id,
        html=html,
    )


def _window_clauses(window: Window) -> tuple[list[str], list[Any]]:
    """The window as SQL on its column; text order is time order (utc_text is fixed-width)."""
    column = _TIME_COLUMNS[window.by]
    bounds = ((window.since, f"{column} >= ?"), (window.until, f"{column} < ?"))
    given = [(moment, clause) for moment, clause in bounds if moment is not None]
    return [clause for _, clause in given], [utc_text(moment) for moment, _ in given]


def _page(rows: list[Item], limit: int, position: Callable[[Item], list[Any]]) -> ItemPage:
    """The first `limit` rows, and the last one's position when a row more was found."""
    if len(rows) <= limit:
        return ItemPage(rows)
    return ItemPage(rows[:limit], position(rows[limit - 1]))


def _thread_position(item: Item) -> list[Any]:
    return [utc_text(item.published_at or item.fetched_at), item.crawler_id, item.id]


def _now_text() -> str:
    return utc_text(datetime.now(UTC))
