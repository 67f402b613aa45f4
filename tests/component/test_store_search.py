"""Searching items' words in every store: SQLite's full-text index and Cassandra's word blocks,
each built for the items stored before it, and each finding a word in any script, case and
Unicode normal form."""

from __future__ import annotations

import sqlite3
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cassandra.cluster import Session
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from blackwidow.core.store import Store, open_store, upgrade_store
from blackwidow.core.store.base import SearchUnsupported
from blackwidow.core.store.cassandra.config import parse
from blackwidow.core.store.cassandra.schema import WORDS_INDEX, fill_words, has_words_index
from blackwidow.core.store.cassandra.store import make_cluster
from blackwidow.core.store.sqlite import MIGRATIONS
from blackwidow.core.store.windows import Window, words
from sources.model import Item
from tests.component.test_sqlite_store import old_file
from tests.support import wait_until

T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)
BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("cassandra", id="cassandra", marks=pytest.mark.services("cassandra_service")),
]


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


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'items.db'}"
    else:
        url = request.getfixturevalue("cassandra_store_url")
    opened = open_store(url)
    yield opened
    opened.close()


def found(store: Store, query: str, crawler_ids: list[int], **window: Any) -> list[str]:
    return [i.id for i in store.search(words(query), crawler_ids, 100, Window(**window)).items]


def test_an_item_is_found_by_every_word_it_holds_in_any_case_and_field(
    store: Store, crawler_ids: tuple[int, int, int]
) -> None:
    one, two, _ = crawler_ids
    store.add(
        [
            item("fox", one, "The Quick Fox", "jumps over the dog, naïvely"),
            item("dog", one, "A lazy dog", "sleeps"),
            item("other", two, "The quick fox", "of another crawler"),
        ]
    )
    assert found(store, "QUICK fox", [one]) == ["fox"]
    assert found(store, "fox, jumps!", [one]) == ["fox"]
    assert found(store, "NAIVELY", [one]) == ["fox"]
    assert sorted(found(store, "dog", [one])) == ["dog", "fox"]
    assert sorted(found(store, "author", [one])) == ["dog", "fox"]
    assert found(store, "fox sleeps", [one]) == []
    assert sorted(found(store, "fox", [one, two])) == ["fox", "other"]
    assert found(store, "fox", []) == []


def test_a_search_keeps_to_the_window(store: Store, crawler_ids: tuple[int, int, int]) -> None:
    one = crawler_ids[0]
    store.add([item(str(hour), one, "news", hours=hour * 10) for hour in range(5)])  # 2 days
    since, until = T0 + timedelta(hours=10), T0 + timedelta(hours=30)
    assert sorted(found(store, "news", [one], since=since, until=until)) == ["1", "2"]


def test_pages_follow_one_another_to_the_last_without_repeating(
    store: Store, crawler_ids: tuple[int, int, int]
) -> None:
    one, two, _ = crawler_ids
    store.add(
        [item(f"{n:02}", (one, two)[n % 2], f"news {'big ' * (n % 3)}", hours=n) for n in range(25)]
    )
    seen, after = [], None
    while True:
        page = store.search(("big",), [one, two], 4, after=after)
        assert len(page.items) <= 4
        seen += [i.id for i in page.items]
        if page.next is None:
            break
        after = page.next
    expected = [f"{n:02}" for n in range(25) if n % 3]
    assert sorted(seen) == expected and len(seen) == len(expected)
    assert found(store, "big", [one, two])[: len(seen)] == seen


def test_sqlite_ranks_a_word_in_the_title_first(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'items.db'}")
    try:
        store.add([item("text", 1, "a cat", "a dog"), item("title", 1, "a dog", "a cat")])
        assert found(store, "dog", [1]) == ["title", "text"]
    finally:
        store.close()


@pytest.mark.services("cassandra_service")
def test_cassandra_lists_what_it_finds_newest_day_first_then_by_crawler(
    cassandra_store_url: str, crawler_ids: tuple[int, int, int]
) -> None:
    one, two, _ = crawler_ids
    store = open_store(cassandra_store_url)
    try:
        store.add([item(f"{c}-{h}", c, "news", hours=h) for c in (two, one) for h in (0, 1, 30)])
        expected = [f"{one}-30", f"{two}-30", f"{one}-1", f"{one}-0", f"{two}-1", f"{two}-0"]
        assert found(store, "news", [one, two]) == expected
    finally:
        store.close()


def test_an_older_sqlite_file_gets_its_items_indexed_when_opened(tmp_path: Path) -> None:
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


@contextmanager
def store_and_session(url: str) -> Iterator[tuple[Store, Session]]:
    """The store a URL names, and a driver session of its own in its keyspace, connected
    first (connecting may take seconds), for rows set as an older schema left them."""
    config = parse(url.removeprefix("cassandra://"))
    cluster = make_cluster(config)
    store = open_store(url)
    try:
        yield store, cluster.connect(config.keyspace)
    finally:
        cluster.shutdown()
        store.close()


@pytest.mark.services("cassandra_service")
def test_cassandra_items_stored_before_their_words_get_them_for_the_time_they_have_left(
    cassandra_store_url: str, crawler_ids: tuple[int, int, int]
) -> None:
    one = crawler_ids[0]
    with store_and_session(cassandra_store_url) as (store, session):
        store.add([item("kept", one, "plain")])
        # long enough to outlast the steps to the fill on a busy machine
        store.add([item("expiring", one, "plain", hours=1)], ttl=10)
        session.execute(  # as a keyspace searched before left them: without their words
            "DELETE FROM word_blocks WHERE crawler_id = %s AND day = %s", (one, T0.date())
        )
        assert found(store, "plain", [one]) == []
        fill_words(session, session.keyspace)
        assert sorted(found(store, "plain", [one])) == ["expiring", "kept"]
        wait_until(  # its block outlives it, but an item is found only while it is stored
            lambda: found(store, "plain", [one]) == ["kept"],
            timeout=30,
            what="the expiring item gone from what a search finds",
        )


@pytest.mark.services("cassandra_service")
def test_a_cassandra_store_without_search_on_writes_no_words_and_refuses_to_search(
    cassandra_store_url: str, crawler_ids: tuple[int, int, int]
) -> None:
    """The words' index costs most of Cassandra's write rate (bench/README.md#search), so it
    is the `search=on` option's: without it, items are written without their words, and a
    search is refused saying how to turn it on."""
    one = crawler_ids[0]
    without = cassandra_store_url.replace("&search=on", "")
    config = parse(without.removeprefix("cassandra://"))
    store = open_store(without)
    cluster = make_cluster(config)
    try:
        store.add([item("plain-one", one, "plain")])
        blocks = cluster.connect(config.keyspace).execute(
            "SELECT block_id FROM word_blocks WHERE crawler_id = %s AND day = %s",
            (one, T0.date()),
        )
        assert list(blocks) == []
        with pytest.raises(SearchUnsupported, match=r"search is off.*search=on"):
            found(store, "plain", [one])
    finally:
        cluster.shutdown()
        store.close()


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def fresh_crawler() -> int:
    """A crawler id of one example's own: examples share a store, and a keyspace."""
    return uuid.uuid4().int % 2**40 * 10 + 4


FORMS = ("NFC", "NFD", "NFKC", "NFKD")
CASES: tuple[Callable[[str], str], ...] = (str.upper, str.lower, str.casefold, str.title)
FULL_WIDTH = "".join(chr(ord(c) + 0xFEE0) for c in "Full")  # NFKC: Full
ACCENTED = ("Ελλάδα", "Ζεύς", "Ωκεανός", "ёлка", nfd("Kraków"), nfd("naïve"), nfd("Ñandú"))
ANY_WORD = st.one_of(
    st.sampled_from((*ACCENTED, "Straße", "STRASSE", FULL_WIDTH, "ﬁne")),
    st.text(st.characters(categories=("L", "M", "N")), min_size=1, max_size=8),
)
SEARCHED = settings(
    max_examples=30,  # a Cassandra example costs a few round trips
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # a crawler per example
)


@SEARCHED
@given(
    held=st.lists(ANY_WORD, min_size=1, max_size=5),
    absent=ANY_WORD,
    stored_in=st.sampled_from(FORMS),
    typed_in=st.sampled_from(FORMS),
    case=st.sampled_from(CASES),
    pick=st.integers(min_value=0, max_value=4),
)
@example(["Ελλάδα", "Ζεύς"], "Ωκεανός", "NFC", "NFC", str.title, 0)
@example(["Ελλάδα", "Ζεύς"], "Ελλάς", "NFC", "NFC", str.lower, 1)
@example(["Ωκεανός", "ёлка"], "елки", "NFC", "NFD", str.upper, 0)
@example(["ёлка"], "ель", "NFD", "NFC", str.upper, 0)
@example(["Kraków", "naïve", "Ñandú"], "Warszawa", "NFC", "NFD", str.lower, 0)
@example(["Kraków", "naïve", "Ñandú"], "naif", "NFD", "NFD", str.casefold, 1)
@example(["Kraków", "naïve", "Ñandú"], "Nandus", "NFC", "NFD", str.title, 2)
@example(["Straße"], "Strasser", "NFC", "NFC", str.upper, 0)  # typed STRASSE
@example(["STRASSE"], "Strand", "NFC", "NFC", str.lower, 0)  # typed strasse, finds ß too
@example([FULL_WIDTH, "ﬁne"], "fin", "NFC", "NFKC", str.lower, 0)  # typed full
@example([FULL_WIDTH, "ﬁne"], "fun", "NFKC", "NFC", str.upper, 0)  # stored Full, typed wide
@example([FULL_WIDTH, "ﬁne"], "finer", "NFC", "NFKD", str.lower, 1)  # typed fine
def test_a_word_an_item_holds_finds_it_in_any_case_and_normal_form(
    store: Store,
    held: list[str],
    absent: str,
    stored_in: str,
    typed_in: str,
    case: Callable[[str], str],
    pick: int,
) -> None:
    """Stored in one normal form and typed in another, in capitals or not, a word is the same
    word; one the item does not hold finds nothing."""
    typed = unicodedata.normalize(typed_in, case(held[pick % len(held)]))
    crawler = fresh_crawler()
    title, text = (
        unicodedata.normalize(stored_in, " ".join(part)) for part in (held[:1], held[1:])
    )
    store.add([item("held", crawler, title, text)])
    if words(typed):  # not a word of marks alone, which no search asks for
        assert found(store, typed, [crawler]) == ["held"]
    holds = set(words(f"{title} {text} Ann Author"))
    if words(absent) and not holds.issuperset(words(absent)):
        assert found(store, absent, [crawler]) == []


def test_an_sqlite_file_of_the_version_before_gets_its_words_folded_when_opened(
    tmp_path: Path,
) -> None:
    """Version 5 indexed what FTS5's own tokenizer cut, which leaves accents on Greek and
    Cyrillic letters and splits decomposed words; the version after re-indexes once."""
    path = tmp_path / "items.db"
    old_file(path, version=len(MIGRATIONS) - 1)
    with sqlite3.connect(path) as db:  # the triggers of version 5 index it as it was
        db.execute(
            "INSERT INTO items (crawler_id, item_id, source, title, text, fetched_at)"
            " VALUES (1, 'greek', 'rss', 'Ελλάδα', ?, ?)",
            (nfd("ёлка Kraków"), T0.isoformat()),
        )
    db.close()
    store = open_store(f"sqlite:///{path}")
    try:
        for query in ("Ελλάδα", "ελλαδα", "ЁЛКА", "Kraków", nfd("Kraków")):
            assert found(store, query, [1]) == ["greek"], query
        assert found(store, "plain", [1]) == ["old"]
        store.add([item("new", 1, "Ζεύς")])
        assert found(store, "ζευς", [1]) == ["new"]
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
        db.execute("INSERT INTO items_words (items_words) VALUES ('integrity-check')")
    db.close()


@pytest.mark.services("cassandra_service")
def test_a_cassandra_keyspace_searched_by_its_sai_index_gets_word_blocks_from_db_upgrade(
    cassandra_store_url: str, crawler_ids: tuple[int, int, int]
) -> None:
    """Version 6 fills the word blocks of the items stored before it where the keyspace was
    searched (it has version 5's SAI index), folded as a query is, then drops the index."""
    one = crawler_ids[0]
    with store_and_session(cassandra_store_url) as (store, session):
        store.add([item("greek", one, "Ελλάδα", nfd("Kraków"))])
        session.execute(  # as version 5 left it: words in the row, an SAI index, no blocks
            "DELETE FROM word_blocks WHERE crawler_id = %s AND day = %s", (one, T0.date())
        )
        session.execute(
            f"CREATE CUSTOM INDEX IF NOT EXISTS {WORDS_INDEX} ON items_by_crawler"
            " (VALUES(words)) USING 'StorageAttachedIndex'",
            timeout=60,
        )
        session.execute("DELETE FROM schema_versions WHERE version = 6")
        assert found(store, "Kraków", [one]) == []
        assert upgrade_store(cassandra_store_url).endswith("applied versions [6]")
        assert found(store, "Kraków", [one]) == ["greek"]
        assert found(store, nfd("KRAKÓW"), [one]) == ["greek"]
        assert not has_words_index(session, session.keyspace)
        recorded = session.execute("SELECT applied_at FROM schema_versions WHERE version = 6")
        assert recorded.one().applied_at is not None
