"""What only the SQLite store does: upgrading an existing file in place when it is opened."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from blackwidow.core.store import open_store
from blackwidow.core.store.sqlite import MIGRATIONS
from sources.model import Item

T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)
LATER = datetime(2024, 5, 1, 13, tzinfo=UTC)


def old_file(path: Path, version: int) -> None:
    """A file as a store of that schema version left it, with one item in it."""
    with sqlite3.connect(path) as db:
        for statements in MIGRATIONS[:version]:
            for statement in statements:
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {version}")
        db.execute(
            "INSERT INTO items (crawler_id, item_id, source, text, fetched_at)"
            " VALUES (1, 'old', 'rss', 'plain', ?)",
            (T0.isoformat(),),
        )
    db.close()


def test_a_file_without_the_html_column_is_upgraded_and_keeps_its_items(tmp_path: Path) -> None:
    path = tmp_path / "items.db"
    old_file(path, version=2)

    store = open_store(f"sqlite:///{path}")
    try:
        [old] = store.items(1, 10)
        assert (old.id, old.text, old.html) == ("old", "plain", None)
        new = Item("new", "rss", None, None, "t", None, None, LATER, crawler_id=1, html="<b>t</b>")
        assert store.add([new, old]) == [new]
        assert [item.html for item in store.items(1, 10)] == ["<b>t</b>", None]
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
    db.close()
