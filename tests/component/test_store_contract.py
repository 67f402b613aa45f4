"""The Store contract: one suite that every back end must pass, run against real stores.

Cassandra cases run against the real Cassandra the services plugin starts, in a keyspace made
by `blackwidow db upgrade`'s code path; each test writes under crawler ids of its own.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from blackwidow.core.store import Store, Write, open_store
from blackwidow.core.store.windows import BadPosition, ItemPage, Window
from sources.model import Item
from tests.support import wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)  # stores keep milliseconds


def _sqlite_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'items.db'}"  # tmp_path is absolute: four slashes


def _cassandra_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return request.getfixturevalue("cassandra_store_url")


# Each back end makes the URL of an upgraded store; adding one is one line here.
BACKENDS = [
    pytest.param(_sqlite_url, id="sqlite"),
    pytest.param(_cassandra_url, id="cassandra", marks=pytest.mark.services("cassandra_service")),
]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    make_url: Callable[[pytest.FixtureRequest, Path], str] = request.param
    return make_url(request, tmp_path)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


def make_item(
    item_id: str,
    crawler_id: int | None,
    seconds: float = 0,
    conversation: str | None = None,
    published: datetime | None = T0,
) -> Item:
    return Item(
        id=item_id,
        source="rss",
        url=f"https://example.org/{item_id}",
        title=f"title {item_id}",
        text="text",
        author="ann",
        published_at=published,
        fetched_at=T0 + timedelta(seconds=seconds),
        conversation_id=conversation,
        crawler_id=crawler_id,
    )


def ids(items: list[Item]) -> list[str]:
    return [item.id for item in items]


def test_add_returns_the_items_that_are_new(store: Store, crawler_ids: tuple[int, ...]) -> None:
    one = crawler_ids[0]
    assert ids(store.add([make_item("a", one), make_item("b", one)])) == ["a", "b"]
    assert ids(store.add([make_item("b", one), make_item("c", one)])) == ["c"]
    assert store.add([]) == []


def test_the_same_item_is_stored_once(store: Store, crawler_ids: tuple[int, ...]) -> None:
    one = crawler_ids[0]
    assert ids(store.add([make_item("a", one), make_item("a", one, seconds=5)])) == ["a"]
    assert store.add([make_item("a", one, seconds=9)]) == []
    assert store.count(one) == 1
    assert [(item.id, item.fetched_at) for item in store.items(one, 10)] == [("a", T0)]


def test_items_come_newest_first_then_by_id_and_honour_limit(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one = crawler_ids[0]
    store.add([make_item("old", one, seconds=0), make_item("new", one, seconds=20)])
    store.add([make_item("tie-a", one, seconds=10), make_item("tie-b", one, seconds=10)])
    assert ids(store.items(one, 10)) == ["new", "tie-b", "tie-a", "old"]
    assert ids(store.items(one, 2)) == ["new", "tie-b"]


def test_items_of_many_days_come_newest_first(store: Store, crawler_ids: tuple[int, ...]) -> None:
    one = crawler_ids[0]
    days = [make_item(f"day-{n}", one, seconds=n * 86400) for n in range(5)]
    store.add(days)
    assert ids(store.items(one, 3)) == ["day-4", "day-3", "day-2"]
    assert ids(store.items(one, 10)) == [f"day-{n}" for n in reversed(range(5))]


def test_items_and_count_are_per_crawler(store: Store, crawler_ids: tuple[int, ...]) -> None:
    one, two, three = crawler_ids
    store.add([make_item("a", one), make_item("b", one)])
    store.add([make_item("a", two)])
    assert ids(store.items(two, 10)) == ["a"]
    assert {item.crawler_id for item in store.items(one, 10)} == {one}
    assert (store.count(one), store.count(two), store.count(three)) == (2, 1, 0)
    assert store.items(three, 10) == []


def test_every_field_round_trips_with_utc_datetimes(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one = crawler_ids[0]
    plus_two = timezone(timedelta(hours=2))
    full = Item(
        id="full",
        source="twitter",
        url="https://example.org/full",
        title="Tïtle ✓",
        text="body\nwith lines",
        author="bob",
        published_at=datetime(2024, 5, 1, 9, 30, 0, 654000, tzinfo=plus_two),
        fetched_at=T0,
        conversation_id="conv-1",
        in_reply_to="parent-1",
        crawler_id=one,
        html='<p>body<br>with <a href="https://example.org/">lines</a></p>',
    )
    bare = Item("bare", "rss", None, None, None, None, None, T0 - timedelta(1), crawler_id=one)
    store.add([full, bare])
    assert store.items(one, 10) == [full, bare]
    assert store.conversation("conv-1", [one], 10) == [full]
    stored = store.items(one, 10)[0]
    assert stored.published_at is not None
    for moment in (stored.published_at, stored.fetched_at):
        assert moment.utcoffset() == timedelta(0)
    assert stored.published_at.microsecond == 654000


def test_an_item_without_crawler_is_refused(store: Store, crawler_ids: tuple[int, ...]) -> None:
    one = crawler_ids[0]
    with pytest.raises(ValueError, match="crawler_id"):
        store.add([make_item("a", one), make_item("b", None)])
    assert store.count(one) == 0


def test_two_threads_writing_at_once_lose_nothing(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one = crawler_ids[0]
    start = threading.Barrier(2, timeout=10)

    def write(tag: str) -> int:
        start.wait()
        wanted = [f"{tag}-{n}" for n in range(100)] + [f"shared-{n}" for n in range(100)]
        return sum(len(store.add([make_item(item_id, one)])) for item_id in wanted)

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(write, tag) for tag in ("t1", "t2")]
        added = [future.result(timeout=60) for future in futures]
    assert sum(added) == store.count(one) == 300


WRITER = """
import sys
from datetime import UTC, datetime
from blackwidow.core.store import open_store
from sources.model import Item

store = open_store(sys.argv[1])
crawler_id = int(sys.argv[3])
store.count(crawler_id)  # connected before saying ready
print("ready", flush=True)
sys.stdin.readline()
for n in range(100):
    now = datetime.now(UTC)
    item = Item(f"{sys.argv[2]}-{n}", "rss", None, None, None, None, None, now)
    store.add([item.for_crawler(crawler_id)])
store.close()
"""


def start_writer(store_url: str, tag: str, crawler_id: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, store_url, tag, str(crawler_id)],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_two_processes_writing_one_store_lose_nothing(
    store: Store, store_url: str, crawler_ids: tuple[int, ...]
) -> None:
    one = crawler_ids[0]
    with contextlib.ExitStack() as stack:
        writers = [stack.enter_context(start_writer(store_url, tag, one)) for tag in ("p1", "p2")]
        for writer in writers:
            stack.callback(writer.kill)  # runs before each Popen exit reaps and closes pipes
        for writer in writers:  # both have the store open before either writes
            assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        for writer in writers:  # release both before waiting for either
            assert writer.stdin is not None
            writer.stdin.write("go\n")
            writer.stdin.close()
        assert [writer.wait(timeout=60) for writer in writers] == [0, 0]
    assert store.count(one) == 200


def test_a_conversation_reads_oldest_first_across_the_given_crawlers_only(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one, two, three = crawler_ids
    thread, other = f"thread-{one}", f"other-{one}"
    later = T0 + timedelta(hours=1)
    store.add([make_item("reply", one, conversation=thread, published=later)])
    store.add([make_item("root", two, conversation=thread)])
    store.add([make_item("no-date", two, 60, conversation=thread, published=None)])
    store.add([make_item("else", one, conversation=other), make_item("hidden", three, 0, thread)])

    assert ids(store.conversation(thread, [one, two], 10)) == ["root", "no-date", "reply"]
    assert ids(store.conversation(thread, [one, two], 2)) == ["root", "no-date"]
    assert ids(store.conversation(thread, [one], 10)) == ["reply"]
    assert store.conversation(thread, [], 10) == []
    assert store.conversation(f"unknown-{one}", [one, two, three], 10) == []
    reply = store.conversation(thread, [one], 1)[0]
    assert (reply.conversation_id, reply.crawler_id, reply.published_at) == (thread, one, later)


def thread(crawler_id: int) -> list[Item]:
    """A post with comments, a reply and a reply to the reply, as an RSS parser gives them: a
    reply names its parent (thr:in-reply-to) as its conversation, knowing no more."""
    root, reply, deep = (f"{crawler_id}-{name}" for name in ("root", "reply", "deep"))
    return [
        make_item(root, crawler_id, conversation=root),
        replace(make_item(reply, crawler_id, 1, root, T0 + timedelta(minutes=1)), in_reply_to=root),
        replace(
            make_item(deep, crawler_id, 2, reply, T0 + timedelta(minutes=2)), in_reply_to=reply
        ),
    ]


def conversations(store: Store, crawler_id: int) -> dict[str, str | None]:
    return {item.id: item.conversation_id for item in store.items(crawler_id, 10)}


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0)], ids=str)
def test_a_thread_in_one_batch_joins_its_root(
    store: Store, crawler_ids: tuple[int, ...], order: tuple[int, ...]
) -> None:
    one = crawler_ids[0]
    items = thread(one)
    added = store.add([items[n] for n in order])
    root = items[0].id
    assert {item.conversation_id for item in added} == {root}
    assert ids(store.conversation(root, [one], 10)) == ids(items)
    assert conversations(store, one) == dict.fromkeys(ids(items), root)


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0), (2, 0, 1)], ids=str)
def test_a_thread_across_batches_joins_its_root_whatever_comes_first(
    store: Store, crawler_ids: tuple[int, ...], order: tuple[int, ...]
) -> None:
    """A reply stored before its parent moves to the root when the parent comes."""
    one = crawler_ids[0]
    items = thread(one)
    for n in order:
        assert len(store.add([items[n]])) == 1
    root, reply, deep = ids(items)
    assert ids(store.conversation(root, [one], 10)) == [root, reply, deep]
    assert store.conversation(reply, [one], 10) == store.conversation(deep, [one], 10) == []
    assert conversations(store, one) == dict.fromkeys(ids(items), root)

    assert store.add(list(reversed(items))) == []  # re-delivered: nothing new, nothing moves
    assert store.count(one) == 3
    assert ids(store.conversation(root, [one], 10)) == [root, reply, deep]


def test_a_reply_joins_only_its_own_crawlers_thread(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one, two, _ = crawler_ids
    root, reply, deep = thread(one)
    store.add([root, reply])
    [alone] = store.add([deep.for_crawler(two)])
    assert alone.conversation_id == reply.id


def test_a_conversation_the_source_named_is_kept(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    """X names a reply's root itself; only a conversation equal to in_reply_to is resolved."""
    one = crawler_ids[0]
    parent = make_item(f"{one}-1", one, conversation=f"{one}-elsewhere")
    reply = replace(make_item(f"{one}-2", one, 1, f"{one}-0"), in_reply_to=parent.id)
    store.add([parent])
    assert store.add([reply]) == [reply]
    assert conversations(store, one)[reply.id] == f"{one}-0"


def test_retention_hides_expired_items_but_keeps_them_counted(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one, two, _ = crawler_ids
    thread = f"thread-{one}"
    store.add([make_item("brief", one, conversation=thread)], ttl=1)
    store.add([make_item("kept", two, conversation=thread)])

    wait_until(lambda: store.items(one, 10) == [], timeout=15, what="the item to expire")
    assert store.page(one, 10) == ItemPage([]) and list(store.stream(one)) == []
    assert store.page(one, 10, Window(since=T0 - timedelta(1))).items == []
    assert store.conversation(thread, [one, two], 10) == store.items(two, 1)
    assert store.conversation_page(thread, [one, two], 1).items == store.items(two, 1)
    assert (store.count(one), store.count(two)) == (1, 1)
    assert store.add([make_item("brief", one)]) == []  # still known: never stored twice


def batch_of_writes(one: int, two: int) -> list[Write]:
    """Writes of two crawlers handed in together, as a node's subscribers do: an item stored
    before, an item in two writes and twice in one, a thread whose replies come before the
    post, a write of nothing, and a crawler whose items and ids are kept one second."""
    root, reply, deep = thread(one)
    return [
        Write([make_item("old", one), make_item("x", one), deep]),
        Write([make_item("x", one, seconds=5), make_item("y", one), reply], id_ttl=3600),
        Write([make_item("brief", two), make_item("x", two)], ttl=1, id_ttl=1),
        Write([]),
        Write([make_item("z", one), make_item("z", one, seconds=3), root, make_item("y", one)]),
    ]


def answered(items: list[Item], crawler_id: int) -> list[tuple[str, str | None, datetime]]:
    """What a write's answer says, with the crawler's id taken out of item and thread names."""
    name = str(crawler_id)
    return [
        (
            item.id.replace(name, "C"),
            (item.conversation_id or "").replace(name, "C"),
            item.fetched_at,
        )
        for item in items
    ]


def test_writes_in_one_batch_are_answered_as_one_after_another(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one, two, _ = crawler_ids
    alone, other = (uuid.uuid4().int % 2**40 * 10 + n for n in (4, 5))  # written one by one
    for crawler in (one, alone):
        store.add([make_item("old", crawler)])

    batched = store.add_many(batch_of_writes(one, two))
    one_by_one = [
        store.add(write.items, write.ttl, write.id_ttl) for write in batch_of_writes(alone, other)
    ]

    assert [answered(added, one) for added in batched[:2] + batched[3:]] == [
        answered(added, alone) for added in one_by_one[:2] + one_by_one[3:]
    ]
    assert answered(batched[2], two) == answered(one_by_one[2], other)
    assert [ids(added) for added in batched] == [
        ["x", f"{one}-deep"],
        ["y", f"{one}-reply"],
        ["brief", "x"],
        [],
        ["z", f"{one}-root"],
    ]
    assert (
        (store.count(one), store.count(two)) == (store.count(alone), store.count(other)) == (7, 2)
    )
    assert conversations(store, one) == {
        key.replace(str(alone), str(one)): value and value.replace(str(alone), str(one))
        for key, value in conversations(store, alone).items()
    }
    assert conversations(store, one)[f"{one}-deep"] == f"{one}-root"
    wait_until(lambda: store.items(two, 10) == [], timeout=15, what="the brief items to expire")
    assert list(store.stored_ids(two)) == []
    assert sorted(store.stored_ids(one)) == sorted(conversations(store, one))


def test_a_batch_with_an_item_without_crawler_stores_nothing(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one, two, _ = crawler_ids
    with pytest.raises(ValueError, match="crawler_id"):
        store.add_many([Write([make_item("a", one)]), Write([make_item("b", None)])])
    assert store.count(one) == 0
    assert store.add_many([Write([]), Write([])]) == [[], []]
    assert store.add_many([Write([make_item("a", two)])]) == [[make_item("a", two)]]


def walk(read: Callable[[Any], ItemPage]) -> list[list[str]]:
    """The ids of every page from the first to the one without a next, each position passed
    through JSON as a cursor carries it."""
    pages, after = [], None
    while True:
        page = read(after)
        pages.append(ids(page.items))
        if page.next is None:
            return pages
        after = json.loads(json.dumps(page.next))
        assert len(pages) < 100, "pages never end"


def spread(crawler_id: int) -> list[Item]:
    """Four items on each of four days, two of them at one instant (ties go by id), published
    in the reverse order of their fetch, every fourth unpublished."""
    hours = [0, 6, 6, 23]
    return [
        make_item(
            f"d{day}-{n}",
            crawler_id,
            day * 86400 + hour * 3600,
            published=None if n == 3 else T0 - timedelta(days=day, hours=hour),
        )
        for day in range(4)
        for n, hour in enumerate(hours)
    ]


def newest_first(items: list[Item]) -> list[str]:
    return ids(sorted(items, key=lambda item: (item.fetched_at, item.id), reverse=True))


@pytest.mark.parametrize("limit", [1, 3, 4, 5, 16, 17])
def test_pages_cover_every_item_once_across_days(
    store: Store, crawler_ids: tuple[int, ...], limit: int
) -> None:
    one, two, _ = crawler_ids
    items = spread(one)
    store.add(items)
    store.add(spread(two))
    pages = walk(lambda after: store.page(one, limit, after=after))
    assert [item for page in pages for item in page] == newest_first(items)
    assert all(len(page) == limit for page in pages[:-1]) and len(pages[-1]) <= limit
    assert ids(store.items(one, limit)) == pages[0]


WINDOWS = {  # (since, until) in hours after T0: inclusive, exclusive
    "one instant": (30, 31),
    "a day and a bit": (6, 24 + 7),
    "open start": (None, 30),
    "open end": (48 + 6, None),
    "nothing": (100, 100),
}


@pytest.mark.parametrize("by", ["fetched_at", "published_at"])
@pytest.mark.parametrize("bounds", WINDOWS.values(), ids=list(WINDOWS))
def test_pages_and_streams_keep_to_a_window(
    store: Store, crawler_ids: tuple[int, ...], by: Any, bounds: tuple[int | None, int | None]
) -> None:
    """Bounds on published_at mirror those on fetched_at (published runs backwards here)."""
    one = crawler_ids[0]
    items = spread(one)
    store.add(items)
    since, until = (None if h is None else T0 + timedelta(hours=h) for h in bounds)
    if (
        by == "published_at"
    ):  # the same span mirrored: [T0 - (until - T0) + 1ms, T0 - (since - T0) + 1ms)
        tick = timedelta(milliseconds=1)
        since, until = (None if t is None else T0 - (t - T0) + tick for t in (until, since))
    window = Window(since, until, by)

    def inside(item: Item) -> bool:
        moment = getattr(item, by)
        return (
            moment is not None
            and (since is None or moment >= since)
            and (until is None or moment < until)
        )

    expected = newest_first([item for item in items if inside(item)])
    assert [i for page in walk(lambda a: store.page(one, 2, window, a)) for i in page] == expected
    assert ids(list(store.stream(one, window))) == expected


def test_a_window_on_published_at_leaves_out_unpublished_items_only_when_bounded(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one = crawler_ids[0]
    store.add(spread(one))
    everything = ids(store.page(one, 100).items)
    assert ids(store.page(one, 100, Window(by="published_at")).items) == everything
    bounded = Window(since=T0 - timedelta(days=30), by="published_at")
    assert ids(store.page(one, 100, bounded).items) == [i for i in everything if "-3" not in i]


def test_a_stream_reads_every_item_in_order_past_its_batches(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one = crawler_ids[0]
    items = [make_item(f"s{n:04}", one, n * 100) for n in range(2100)]  # three days, 3 batches
    for start in range(0, len(items), 500):
        store.add(items[start : start + 500])
    assert ids(list(store.stream(one))) == newest_first(items)


def test_conversation_pages_cover_the_callers_items_once(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one, two, three = crawler_ids
    thread = f"thread-{one}"
    store.add(
        [
            make_item(f"{n:02}", (one, two, three)[n % 3], n, thread, T0 + timedelta(minutes=n))
            for n in range(12)
        ]
    )
    expected = [f"{n:02}" for n in range(12) if n % 3 != 2]
    for limit in (1, 3, 8, 20):
        pages = walk(
            lambda after, limit=limit: store.conversation_page(thread, [one, two], limit, after)
        )
        assert [item for page in pages for item in page] == expected
    assert store.conversation_page(thread, [], 5) == ItemPage([])


@pytest.mark.parametrize("position", ["x", [1, 2], ["a"], ["2024-05-01", 5], [None, None, None]])
def test_a_position_the_store_did_not_give_is_refused(
    store: Store, crawler_ids: tuple[int, ...], position: Any
) -> None:
    one = crawler_ids[0]
    store.add([make_item("a", one)])
    with pytest.raises(BadPosition):
        store.page(one, 10, after=position)
    with pytest.raises(BadPosition):
        store.conversation_page("c", [one], 10, position)


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
    ["cassandra://host1/", "postgresql://db/items", "sqlite://", "sqlite:///", "x"],
)
def test_open_store_refuses_other_urls_naming_the_setting(url: str) -> None:
    with pytest.raises(ValueError, match=r"BLACKWIDOW_STORE.*sqlite:///"):
        open_store(url)
