"""The Store contract: one suite that every back end must pass, run against real stores."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from blackwidow.store import Store, open_store
from sources.model import Item

REPO_ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def _sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'items.db'}"  # tmp_path is absolute: four slashes


# Each back end makes the URL of a fresh, empty store; adding one is one line here.
BACKENDS = [pytest.param(_sqlite_url, id="sqlite")]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return request.param(tmp_path)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


def make_item(item_id: str, crawler_id: int | None = 1, seconds: float = 0) -> Item:
    return Item(
        id=item_id,
        source="rss",
        url=f"https://example.org/{item_id}",
        title=f"title {item_id}",
        text="text",
        author="ann",
        published_at=T0,
        fetched_at=T0 + timedelta(seconds=seconds),
        crawler_id=crawler_id,
    )


def test_add_returns_the_number_of_new_items(store: Store) -> None:
    assert store.add([make_item("a"), make_item("b")]) == 2
    assert store.add([make_item("b"), make_item("c")]) == 1
    assert store.add([]) == 0


def test_the_same_item_is_stored_once(store: Store) -> None:
    assert store.add([make_item("a"), make_item("a")]) == 1
    assert store.add([make_item("a")]) == 0
    assert store.count(1) == 1
    assert [item.id for item in store.items(1, 10)] == ["a"]


def test_items_come_newest_first_then_by_id_and_honour_limit(store: Store) -> None:
    store.add([make_item("old", seconds=0), make_item("new", seconds=20)])
    store.add([make_item("tie-a", seconds=10), make_item("tie-b", seconds=10)])
    assert [item.id for item in store.items(1, 10)] == ["new", "tie-b", "tie-a", "old"]
    assert [item.id for item in store.items(1, 2)] == ["new", "tie-b"]


def test_items_and_count_are_per_crawler(store: Store) -> None:
    store.add([make_item("a", crawler_id=1), make_item("b", crawler_id=1)])
    store.add([make_item("a", crawler_id=2)])
    assert [item.id for item in store.items(2, 10)] == ["a"]
    assert {item.crawler_id for item in store.items(1, 10)} == {1}
    assert (store.count(1), store.count(2), store.count(3)) == (2, 1, 0)
    assert store.items(3, 10) == []


def test_every_field_round_trips_with_utc_datetimes(store: Store) -> None:
    plus_two = timezone(timedelta(hours=2))
    full = Item(
        id="full",
        source="twitter",
        url="https://example.org/full",
        title="Tïtle ✓",
        text="body\nwith lines",
        author="bob",
        published_at=datetime(2024, 5, 1, 9, 30, 0, 654321, tzinfo=plus_two),
        fetched_at=T0,
        conversation_id="conv-1",
        in_reply_to="parent-1",
        crawler_id=7,
    )
    bare = Item("bare", "rss", None, None, None, None, None, T0 - timedelta(1), crawler_id=7)
    store.add([full, bare])
    assert store.items(7, 10) == [full, bare]
    stored = store.items(7, 10)[0]
    assert stored.published_at is not None
    for moment in (stored.published_at, stored.fetched_at):
        assert moment.utcoffset() == timedelta(0)
    assert stored.published_at.microsecond == 654321


def test_an_item_without_crawler_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="crawler_id"):
        store.add([make_item("a"), make_item("b", crawler_id=None)])
    assert store.count(1) == 0


def test_two_threads_writing_at_once_lose_nothing(store: Store) -> None:
    start = threading.Barrier(2, timeout=10)

    def write(tag: str) -> int:
        start.wait()
        ids = [f"{tag}-{n}" for n in range(100)] + [f"shared-{n}" for n in range(100)]
        return sum(store.add([make_item(item_id)]) for item_id in ids)

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(write, tag) for tag in ("t1", "t2")]
        added = [future.result(timeout=30) for future in futures]
    assert sum(added) == store.count(1) == 300


WRITER = """
import sys
from datetime import UTC, datetime
from blackwidow.store import open_store
from sources.model import Item

store = open_store(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
for n in range(int(sys.argv[3])):
    now = datetime.now(UTC)
    store.add([Item(f"{sys.argv[2]}-{n}", "rss", None, None, None, None, None, now, crawler_id=1)])
store.close()
"""


def start_writer(store_url: str, tag: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, store_url, tag, "100"],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_two_processes_writing_one_store_lose_nothing(store: Store, store_url: str) -> None:
    with contextlib.ExitStack() as stack:
        writers = [stack.enter_context(start_writer(store_url, tag)) for tag in ("p1", "p2")]
        for writer in writers:
            stack.callback(writer.kill)  # runs before each Popen exit reaps and closes pipes
        for writer in writers:  # both have the store open before either writes
            assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        for writer in writers:  # release both before waiting for either
            assert writer.stdin is not None
            writer.stdin.write("go\n")
            writer.stdin.close()
        assert [writer.wait(timeout=30) for writer in writers] == [0, 0]
    assert store.count(1) == 200


def test_ping_answers(store: Store) -> None:
    assert store.ping() is True


def test_open_store_takes_relative_and_absolute_sqlite_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    open_store("sqlite:///relative.db").close()
    open_store(f"sqlite:///{tmp_path / 'absolute.db'}").close()
    assert (tmp_path / "relative.db").exists() and (tmp_path / "absolute.db").exists()


@pytest.mark.parametrize(
    "url",
    ["cassandra://host1,host2/keyspace", "postgresql://db/items", "sqlite://", "sqlite:///", "x"],
)
def test_open_store_refuses_other_urls_naming_the_setting(url: str) -> None:
    with pytest.raises(ValueError, match=r"BLACKWIDOW_STORE.*sqlite:///"):
        open_store(url)
