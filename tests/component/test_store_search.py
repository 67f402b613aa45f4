"""Searching items' words: SQLite's full-text index, and Cassandra's refusal where it has none."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from blackwidow.store import SearchUnsupported, open_store
from blackwidow.store.sqlite import MIGRATIONS, SqliteStore
from blackwidow.store.windows import Window, words
from sources.model import Item
from tests.component.test_sqlite_store import old_file

T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)


def item(item_id: str, crawler_id: int, title: str, text: str = "", hours: int = 0) -> Item:
    return Item(
        item_id,
        "rss",
        None,
        title,
        text,
        "Ann Author",
        None,
        T0 + timedelta(hours=hours),
        crawler_id=crawler_id,
    )


@pytest.fixture
def store(tmp_path: Path) -> Any:
    opened = SqliteStore(str(tmp_path / "items.db"))
    yield opened
    opened.close()


def found(store: SqliteStore, query: str, crawler_ids: list[int], **window: Any) -> list[str]:
    return [i.id for i in store.search(words(query), crawler_ids, 100, Window(**window)).items]


def test_an_item_is_found_by_every_word_it_holds_in_any_case_and_field(store: SqliteStore) -> None:
    store.add(
        [
            item("fox", 1, "The Quick Fox", "jumps over the dog"),
            item("dog", 1, "A lazy dog", "sleeps"),
            item("other", 2, "The quick fox", "of another crawler"),
        ]
    )
    assert found(store, "QUICK fox", [1]) == ["fox"]
    assert found(store, "fox, jumps!", [1]) == ["fox"]
    assert found(store, "dog", [1]) == ["dog", "fox"]  # in the title counts more than in the text
    assert sorted(found(store, "author", [1])) == ["dog", "fox"]
    assert found(store, "fox sleeps", [1]) == []
    assert sorted(found(store, "fox", [1, 2])) == ["fox", "other"]
    assert found(store, "fox", []) == []


def test_a_search_keeps_to_the_window(store: SqliteStore) -> None:
    store.add([item(str(hour), 1, "news", hours=hour) for hour in range(5)])
    since, until = T0 + timedelta(hours=1), T0 + timedelta(hours=3)
    assert sorted(found(store, "news", [1], since=since, until=until)) == ["1", "2"]


def test_pages_follow_one_another_to_the_last_without_repeating(store: SqliteStore) -> None:
    store.add([item(f"{n:02}", 1 + n % 2, f"news {'big ' * (n % 3)}", hours=n) for n in range(25)])
    seen, after = [], None
    while True:
        page = store.search(("big",), [1, 2], 4, after=after)
        seen += [i.id for i in page.items]
        if page.next is None:
            break
        after = page.next
    expected = [f"{n:02}" for n in range(25) if n % 3]
    assert sorted(seen) == expected and len(seen) == len(expected)
    assert found(store, "big", [1, 2])[: len(seen)] == seen


def test_an_older_file_gets_its_items_indexed_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "items.db"
    old_file(path, version=len(MIGRATIONS) - 1)  # one item whose text is "plain"
    store = open_store(f"sqlite:///{path}")
    try:
        assert [i.id for i in store.search(("plain",), [1], 10).items] == ["old"]
        store.add([item("new", 1, "plain too")])
        assert sorted(i.id for i in store.search(("plain",), [1], 10).items) == ["new", "old"]
    finally:
        store.close()
    with sqlite3.connect(path) as db:  # raises when the index and the items disagree
        db.execute("INSERT INTO items_words (items_words) VALUES ('integrity-check')")
    db.close()


@pytest.mark.services("cassandra_service")
def test_cassandra_refuses_a_search_naming_why(cassandra_store_url: str) -> None:
    store = open_store(cassandra_store_url)
    try:
        with pytest.raises(SearchUnsupported, match=r"cassandra 5\.0\.\d+: no text analyzer"):
            store.search(("fox",), [1], 10)
    finally:
        store.close()
