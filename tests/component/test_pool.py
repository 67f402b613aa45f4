"""DataSourcePool and Subscriber on a real SQLite store, with real RSS sources on sample feeds."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from blackwidow.core.node_protocol import Shard
from blackwidow.core.store.sqlite import SqliteStore
from blackwidow.demo.feed_server import FeedServer
from sources.fetch.fetcher import GuardedFetcher
from sources.keys import source_key
from sources.model import DataSource, Item, SubscriberSpec
from sources.registry import opener
from sources.source_type import SourceContext
from spawn.pool.renewals import Renewals
from spawn.pool.source_pool import DataSourcePool
from tests.support import FakeClock, wait_until

FEED_INTERVAL = 0.1
LOOPBACK = frozenset({"127.0.0.1"})


class OpenedSources:
    """The real opener, recording every data source it opens (a spy, not a fake)."""

    def __init__(self, context: SourceContext) -> None:
        self._open = opener(context)
        self.opened: list[DataSource] = []

    def __call__(self, key: str, spec: SubscriberSpec) -> DataSource:
        source = self._open(key, spec)
        self.opened.append(source)
        return source


@pytest.fixture
def store(tmp_path) -> Iterator[SqliteStore]:
    opened = SqliteStore(str(tmp_path / "items.db"))
    yield opened
    opened.close()


@pytest.fixture
def sources() -> OpenedSources:
    fetcher = GuardedFetcher(allow_hosts=LOOPBACK, deadline=5.0)
    return OpenedSources(SourceContext(fetcher, FEED_INTERVAL))


@pytest.fixture
def pool(sources: OpenedSources, store: SqliteStore) -> Iterator[DataSourcePool]:
    running = DataSourcePool(sources, store)
    yield running
    running.clear()


def feed(server: FeedServer, name: str, items: int = 10) -> str:
    return f"{server.url}/feeds/{name}.xml?items={items}"


def spec(
    crawler_id: int,
    feeds: list[str],
    keywords: list[str] | None = None,
    item_limit: int | None = None,
    lease: int | None = None,
) -> SubscriberSpec:
    return SubscriberSpec(
        crawler_id=crawler_id,
        user_id=1,
        source="rss",
        query={"feeds": feeds, "keywords": keywords or []},
        item_limit=item_limit,
        lease=lease,
    )


def key_of(subscriber: SubscriberSpec) -> str:
    return source_key(subscriber.source, subscriber.query)


def status(pool: DataSourcePool, crawler_id: int) -> dict[str, Any]:
    return next(s for s in pool.statuses() if s["crawler_id"] == crawler_id)


def counts(pool: DataSourcePool) -> dict[str, int]:
    return {d["key"]: d["subscribers"] for d in pool.data_sources()}


def source_threads(key: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"rss-source-{key}" and t.is_alive()]


def test_equal_feed_lists_share_one_data_source_until_the_last_subscriber_leaves(
    pool: DataSourcePool, sources: OpenedSources, feeds: FeedServer
) -> None:
    a, b = feed(feeds, "alpha"), feed(feeds, "beta")
    first = spec(1, [a, b])
    second = spec(2, [b.replace("http://", "HTTP://") + "#latest", a])  # same feeds, respelled
    third = spec(3, [feed(feeds, "gamma")])

    pool.put(first, now=0.0)
    pool.put(second, now=0.0)
    assert counts(pool) == {key_of(first): 2}
    assert key_of(second) == key_of(first)

    pool.put(third, now=0.0)
    assert counts(pool) == {key_of(first): 2, key_of(third): 1}
    assert len(sources.opened) == 2

    assert pool.delete(1) is True
    assert counts(pool) == {key_of(first): 1, key_of(third): 1}
    assert source_threads(key_of(first))

    assert pool.delete(2) is True
    assert counts(pool) == {key_of(third): 1}
    assert source_threads(key_of(first)) == []  # stopped, not just forgotten

    assert pool.delete(2) is False
    assert pool.delete(999) is False
    assert counts(pool) == {key_of(third): 1}


def test_keywords_filter_per_subscriber_on_a_shared_source(
    pool: DataSourcePool, store: SqliteStore, feeds: FeedServer
) -> None:
    url = feed(feeds, "news", items=20)  # entries 1, 9 and 17 are about python
    pool.put(spec(1, [url], keywords=["python"]), now=0.0)
    pool.put(spec(2, [url]), now=0.0)

    wait_until(lambda: store.count(2) == 20 and store.count(1) == 3, what="both subscribers")

    titles = [item.title or "" for item in store.items(1, 100)]
    assert len(titles) == 3
    assert all("python" in title.lower() for title in titles)
    assert status(pool, 1)["items_collected"] == 3
    assert status(pool, 2)["items_collected"] == 20
    assert counts(pool) == {key_of(spec(1, [url])): 2}


def test_item_limit_is_exact(pool: DataSourcePool, store: SqliteStore, feeds: FeedServer) -> None:
    pool.put(spec(1, [feed(feeds, "news", items=20)], item_limit=5), now=0.0)

    wait_until(lambda: status(pool, 1)["state"] == "limit_reached", what="limit_reached")

    assert store.count(1) == 5
    current = status(pool, 1)
    assert current["items_collected"] == 5
    assert current["held"] == 0  # items beyond the crawler's own limit can never be stored


def test_a_lease_holds_items_and_a_bigger_lease_stores_them_without_a_refetch(
    pool: DataSourcePool, store: SqliteStore, feeds: FeedServer
) -> None:
    url = feed(feeds, "news", items=20)
    pool.put(spec(1, [url], lease=3), now=0.0)

    wait_until(lambda: store.count(1) == 3 and status(pool, 1)["held"] > 0, what="held items")
    current = status(pool, 1)
    assert current["state"] == "waiting"
    assert current["items_collected"] == 3
    assert current["held"] == 17

    feeds.stop()  # nothing more can be fetched: what gets stored next was held
    raised = pool.put(spec(1, [url], lease=8), now=1.0)

    assert raised["lease"] == 8  # in place at once; what it makes room for is stored off the push

    def stored_on_the_timer() -> bool:
        pool.retry_writes()  # as the node's write timer does
        return status(pool, 1)["items_collected"] == 8

    wait_until(stored_on_the_timer, what="held items stored")
    current = status(pool, 1)
    assert current["state"] == "waiting"
    assert current["held"] == 12
    assert store.count(1) == 8

    lowered = pool.put(spec(1, [url], lease=2), now=2.0)
    assert lowered["lease"] == lowered["items_collected"] == 8
    assert lowered["state"] == "waiting"
    assert store.count(1) == 8


def test_a_lease_the_hub_does_not_renew_stores_nothing_and_held_items_wait_for_a_renewal(
    sources: OpenedSources, store: SqliteStore, feeds: FeedServer
) -> None:
    """A crawler with an item limit but no budget is held as a leased one is: the hub runs a
    lost node's bounded crawlers elsewhere once its leases would have lapsed, and two nodes
    storing one would each stop at the limit from their own count."""
    clock = FakeClock(100.0)
    renewals = Renewals(clock)
    pool = DataSourcePool(sources, store, renewals=renewals)
    try:
        url = feed(feeds, "news", items=20)
        pool.put(spec(1, [url], lease=5), now=0.0)
        pool.put(spec(2, [url]), now=0.0)  # unbounded: nothing to renew
        pool.put(spec(3, [url], item_limit=12), now=0.0)
        wait_until(lambda: status(pool, 1)["held"] == 20, what="the leased items held")
        wait_until(lambda: status(pool, 3)["held"] == 20, what="the limited items held")
        wait_until(lambda: store.count(2) == 20, what="the unbounded crawler's items stored")
        assert store.count(1) == store.count(3) == 0
        assert status(pool, 1)["state"] == status(pool, 3)["state"] == "waiting"

        feeds.stop()  # what is stored next was held: a renewal alone stores it
        renewals.renew(Shard(), renewals.token(), 5.0)
        pool.retry_writes()
        assert store.count(1) == 5 and status(pool, 1)["held"] == 15
        assert store.count(3) == 12 and status(pool, 3)["state"] == "limit_reached"

        clock.now += 5.0  # lapsed: a bigger lease is not stored under until renewed
        pool.put(spec(1, [url], lease=8), now=1.0)
        pool.retry_writes()
        assert store.count(1) == 5
        renewals.renew(Shard(), renewals.token(), 5.0)
        pool.retry_writes()
        assert store.count(1) == 8
    finally:
        pool.clear()


def test_the_same_spec_twice_changes_nothing(
    pool: DataSourcePool, sources: OpenedSources, store: SqliteStore, feeds: FeedServer
) -> None:
    subscriber = spec(1, [feed(feeds, "news")])
    pool.put(subscriber, now=0.0)
    wait_until(lambda: status(pool, 1)["items_collected"] == 10, what="first fetch")

    again = pool.put(subscriber, now=1.0)
    once_more = pool.put(subscriber, now=2.0)

    assert again == once_more
    assert again["digest"] == subscriber.digest()
    assert again["items_collected"] == 10
    assert len(sources.opened) == 1
    assert counts(pool) == {key_of(subscriber): 1}
    ids = [item.id for item in store.items(1, 100)]
    assert len(ids) == len(set(ids)) == 10


def test_new_keywords_update_in_place_and_new_feeds_move_to_a_new_source(
    pool: DataSourcePool, sources: OpenedSources, store: SqliteStore, feeds: FeedServer
) -> None:
    news = feed(feeds, "news")
    pool.put(spec(1, [news]), now=0.0)
    wait_until(lambda: status(pool, 1)["items_collected"] == 10, what="first fetch")

    narrowed = spec(1, [news], keywords=["redis"])
    updated = pool.put(narrowed, now=1.0)

    assert updated["digest"] == narrowed.digest()
    assert updated["items_collected"] == 10
    assert len(sources.opened) == 1
    assert counts(pool) == {key_of(narrowed): 1}

    moved = spec(1, [feed(feeds, "sports", items=5)])
    after_move = pool.put(moved, now=2.0)

    assert after_move["digest"] == moved.digest()
    assert after_move["items_collected"] in (None, 10)  # counted off the push: maybe not yet
    assert len(sources.opened) == 2
    assert counts(pool) == {key_of(moved): 1}
    assert source_threads(key_of(narrowed)) == []
    wait_until(lambda: status(pool, 1)["items_collected"] == 15, what="the new feed's items")
    assert store.count(1) == 15


def test_a_late_subscriber_gets_what_the_source_fetched_before_it_came(
    pool: DataSourcePool, sources: OpenedSources, store: SqliteStore, feeds: FeedServer
) -> None:
    url = feed(feeds, "news")
    pool.put(spec(1, [url]), now=0.0)
    wait_until(lambda: store.count(1) == 10, what="first fetch")

    late = pool.put(spec(2, [url]), now=1.0)

    assert late["items_collected"] in (None, 0, 10)  # stored off the push, from the snapshot
    wait_until(lambda: status(pool, 2)["items_collected"] == 10, what="the snapshot stored")
    assert store.count(2) == 10
    assert len(sources.opened) == 1


def test_a_subscriber_counts_what_its_crawler_already_stored(
    pool: DataSourcePool, store: SqliteStore, feeds: FeedServer
) -> None:
    fetched_at = datetime(2024, 1, 1, tzinfo=UTC)
    earlier = [
        Item(
            f"earlier-{n}", "rss", None, f"earlier {n}", None, None, None, fetched_at, crawler_id=7
        )
        for n in range(4)
    ]
    assert len(store.add(earlier)) == 4  # stored on another node before the crawler moved here

    pool.put(spec(7, [feed(feeds, "news", items=20)], item_limit=6), now=0.0)

    wait_until(lambda: status(pool, 7)["state"] == "limit_reached", what="limit_reached")
    assert store.count(7) == 6
    assert status(pool, 7)["items_collected"] == 6
    from_feed = [item for item in store.items(7, 100) if not item.id.startswith("earlier-")]
    assert len(from_feed) == 2


def test_unconfirmed_are_subscribers_the_hub_has_not_confirmed_lately(
    pool: DataSourcePool, feeds: FeedServer
) -> None:
    url = feed(feeds, "news")
    pool.put(spec(1, [url]), now=100.0)
    pool.put(spec(2, [url]), now=105.0)
    key = source_key("rss", {"feeds": [url]})

    assert pool.unconfirmed(before=102.0) == [(1, key)]
    assert pool.unconfirmed(before=100.0) == []

    pool.confirm([1, 999], now=112.0)  # an id the node does not hold is ignored

    assert pool.unconfirmed(before=102.0) == []
    assert pool.unconfirmed(before=106.0) == [(2, key)]
    assert sorted(pool.unconfirmed(before=113.0)) == [(1, key), (2, key)]

    pool.put(spec(2, [url]), now=120.0)  # a push confirms too
    assert pool.unconfirmed(before=113.0) == [(1, key)]


def test_a_crawlers_retention_becomes_its_items_expiry(
    pool: DataSourcePool, store: SqliteStore, feeds: FeedServer, tmp_path
) -> None:
    with_retention = dataclasses.replace(spec(1, [feed(feeds, "news", items=3)]), retention_days=2)
    pool.put(with_retention, now=0.0)
    pool.put(spec(2, [feed(feeds, "world", items=3)]), now=0.0)
    wait_until(lambda: store.count(1) == 3 and store.count(2) == 3, what="items stored")

    with sqlite3.connect(tmp_path / "items.db") as db:
        rows = db.execute("SELECT crawler_id, expires_at FROM items").fetchall()
    expiries = {crawler: expires for crawler, expires in rows}
    assert expiries[2] is None
    left = datetime.fromisoformat(expiries[1]) - datetime.now(UTC)
    assert timedelta(days=1, hours=23) < left <= timedelta(days=2)


def collecting(pool: DataSourcePool, *crawler_ids: int) -> None:
    """Wait until every named subscriber has stored its feed's items (then nothing changes)."""
    wait_until(
        lambda: all((status(pool, c)["items_collected"] or 0) > 0 for c in crawler_ids),
        timeout=10,
    )


def test_changes_after_a_cursor_are_what_changed_and_what_went(
    pool: DataSourcePool, feeds: FeedServer
) -> None:
    a, b = feed(feeds, "alpha"), feed(feeds, "beta")
    for crawler_id, url in ((1, a), (2, a), (3, b)):
        pool.put(spec(crawler_id, [url]), now=0.0)
    collecting(pool, 1, 2, 3)
    first = pool.changes("", 0)
    assert first.full
    assert sorted(s["crawler_id"] for s in first.subscribers) == [1, 2, 3]
    quiet = pool.changes(first.stream, first.number)
    assert (quiet.full, quiet.subscribers, quiet.data_sources, quiet.removed) == (
        False,
        [],
        [],
        [],
    )

    pool.delete(3)
    pool.put(spec(4, [a]), now=0.0)  # takes what the source has at once

    for _ in range(2):  # an answer the hub never applied is given again
        changed = pool.changes(first.stream, first.number)
        assert [s["crawler_id"] for s in changed.subscribers] == [4]
        assert [(d["key"], d["subscribers"]) for d in changed.data_sources] == [
            (key_of(spec(4, [a])), 3)
        ]
        assert (changed.removed, changed.removed_data_sources) == ([3], [key_of(spec(3, [b]))])


def test_a_crawler_moved_to_another_query_is_removed_only_where_its_key_no_longer_passes(
    pool: DataSourcePool, feeds: FeedServer
) -> None:
    a, b = feed(feeds, "alpha"), feed(feeds, "beta")
    pool.put(spec(1, [a]), now=0.0)
    collecting(pool, 1)
    base = pool.changes("", 0)

    pool.put(spec(1, [b]), now=0.0)

    old_key, new_key = key_of(spec(1, [a])), key_of(spec(1, [b]))
    where_it_was = pool.changes(base.stream, base.number, keys=lambda key: key == old_key)
    where_it_is = pool.changes(base.stream, base.number, keys=lambda key: key == new_key)
    assert (where_it_was.subscribers, where_it_was.removed) == ([], [1])
    assert ([s["crawler_id"] for s in where_it_is.subscribers], where_it_is.removed) == ([1], [])


def test_a_cursor_of_another_stream_or_of_a_cleared_pool_gets_everything(
    pool: DataSourcePool, feeds: FeedServer
) -> None:
    pool.put(spec(1, [feed(feeds, "alpha")]), now=0.0)
    base = pool.changes("", 0)

    assert pool.changes("another-stream", base.number).full
    pool.clear()
    pool.put(spec(2, [feed(feeds, "beta")]), now=0.0)
    after_clear = pool.changes(base.stream, base.number)
    assert after_clear.full and [s["crawler_id"] for s in after_clear.subscribers] == [2]


def test_stopped_data_sources_and_subscribers_report_their_final_deliveries_until_applied(
    pool: DataSourcePool, feeds: FeedServer
) -> None:
    a, b = feed(feeds, "alpha"), feed(feeds, "beta")
    pool.put(spec(1, [a]), now=0.0)
    collecting(pool, 1)
    base = pool.changes("", 0)
    run = next(d["run"] for d in base.data_sources)
    assert base.departed_data_sources == []

    subscriber_run = base.subscribers[0]["run"]
    assert base.departed_subscribers == []

    pool.delete(1)  # its last subscriber gone, the source stops
    gone = pool.changes(base.stream, base.number)
    assert [(d["run"], d["delivered"]) for d in gone.departed_data_sources] == [(run, {"1": 10})]
    assert gone.departed_subscribers == [{"crawler_id": 1, "run": subscriber_run, "delivered": 10}]
    again = pool.changes(base.stream, base.number)  # that answer was lost: it comes again
    assert again.departed_data_sources == gone.departed_data_sources
    assert again.departed_subscribers == gone.departed_subscribers
    applied = pool.changes(gone.stream, gone.number)
    assert applied.departed_data_sources == applied.departed_subscribers == []
    forgotten = pool.changes("", 0)
    assert forgotten.departed_data_sources == forgotten.departed_subscribers == []

    pool.put(spec(2, [b]), now=0.0)
    collecting(pool, 2)
    pool.clear()  # a node detaching: what its sources took still reaches the next poll
    cleared = pool.changes(gone.stream, gone.number)
    assert cleared.full and [d["delivered"] for d in cleared.departed_data_sources] == [{"1": 10}]
    assert [(d["crawler_id"], d["delivered"]) for d in cleared.departed_subscribers] == [(2, 10)]


def test_items_still_in_the_feed_are_collected_again_when_a_new_segment_begins(
    sources: OpenedSources, store: SqliteStore, feeds: FeedServer
) -> None:
    clock = WallClock(datetime(2026, 11, 25, 14, 30, tzinfo=UTC))
    pool = DataSourcePool(sources, store, now_at=clock)
    weekly = dataclasses.replace(spec(1, [feed(feeds, "reviews", items=4)]), recollect_after=3600)
    try:
        pool.put(weekly, now=0.0)
        wait_until(lambda: store.count(1) == 4, what="the first segment's versions")
        pool.recollect_due()  # the segment has not passed: nothing is offered again
        clock.at += timedelta(minutes=29)
        pool.recollect_due()
        assert store.count(1) == 4  # the feed, polled again and again, delivers nothing new

        clock.at += timedelta(minutes=1)  # 15:00: the next segment begins
        pool.recollect_due()
        assert store.count(1) == 8
        pool.recollect_due()  # once per segment
        assert store.count(1) == 8
    finally:
        pool.clear()
    ids = sorted(item.id for item in store.items(1, 100))
    assert [i.rsplit("@", 1)[1] for i in ids] == [
        "2026-11-25T14:00:00Z",
        "2026-11-25T15:00:00Z",
    ] * 4
    assert len({i.rsplit("@", 1)[0] for i in ids}) == 4  # the same four entries, twice


class WallClock:
    """A wall clock the test moves by hand."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at
