"""The Cassandra store stays exact when replies are lost and writers die: a real Cassandra
behind the CQL fault proxy, which lets a statement run and loses its answer, hanging up the
connection (the driver says NoHostAvailable) or leaving it open (OperationTimedOut).

A writer that "dies" is a store closed after its failed write, never retried; "another
writer" is a second store instance, as a second node is. The node around the store goes
through the same faults in test_node_store_faults.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cassandra.query import ValueSequence

from blackwidow.core.store import StoreUnavailable, Write, open_store
from blackwidow.core.store.cassandra import config as cassandra_config
from blackwidow.core.store.cassandra.overlaps import RECOUNTED
from blackwidow.core.store.cassandra.rows import BUCKETS
from blackwidow.core.store.cassandra.store import CassandraStore, make_cluster
from sources.model import Item
from tests.servers.cql_proxy import CqlProxy
from tests.support import wait_until

pytestmark = pytest.mark.services("cassandra_service")

T0 = datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)
COUNT = 40  # items per write: more than one id bucket
ITEM_ROWS = "items_by_crawler ("  # the items' own rows
ID_ROWS = "items_by_id (crawler_id"  # the id rows written before them (pending)
CONFIRM = "SET pending = false"  # the commit mark: ids confirmed, with the writer's total
TOTAL = "_totals SET stored"  # the writer's total
ROUNDS = 10  # concurrent writes of one batch by two writers, at most
ANSWER_WAIT = 2  # seconds a quiet store waits for an answer: a dropped one costs this


@pytest.fixture
def proxy(cassandra_service: Any) -> Iterator[CqlProxy]:
    with CqlProxy(cassandra_service.port, cassandra_service.host) as running:
        yield running


def through(proxy: CqlProxy, cassandra_service: Any, url: str, options: str = "") -> CassandraStore:
    """A store that reaches Cassandra through the proxy, connected before a test sets a fault:
    a first connect that times out on a busy machine (its schema queries wait request_timeout
    too) would fail the write before the fault it tests is ever reached."""
    url = url.replace(cassandra_service.contact_points, proxy.contact_points)
    store = open_store(url + options)
    assert isinstance(store, CassandraStore)
    wait_until(store.ping, timeout=60, what="a store connected through the proxy")
    return store


@pytest.fixture
def writer(proxy: CqlProxy, cassandra_service: Any, cassandra_store_url: str) -> Iterator[Any]:
    store = through(proxy, cassandra_service, cassandra_store_url)
    yield store
    store.close()


@pytest.fixture
def quiet_writer(
    proxy: CqlProxy, cassandra_service: Any, cassandra_store_url: str
) -> Iterator[Any]:
    """A writer that waits ANSWER_WAIT for an answer, for replies dropped without a hang-up."""
    options = f"&request_timeout={ANSWER_WAIT}"
    store = through(proxy, cassandra_service, cassandra_store_url, options)
    yield store
    store.close()


@pytest.fixture
def other(cassandra_store_url: str) -> Iterator[Any]:
    """Another writer, straight to Cassandra: a second node."""
    store = open_store(cassandra_store_url)
    yield store
    store.close()


def batch(crawler_id: int, seconds: float = 0) -> list[Item]:
    at = T0 + timedelta(seconds=seconds)
    return [
        Item(f"item-{n}", "rss", None, None, None, None, None, at, crawler_id=crawler_id)
        for n in range(COUNT)
    ]


def ids(items: list[Item]) -> list[str]:
    return sorted(item.id for item in items)


def retried(store: Any, items: list[Item]) -> list[Item]:
    """Add until the store answers, as a node retries a failed write (the driver reconnects)."""

    def attempt() -> tuple[list[Item]] | None:
        try:
            return (store.add(items),)
        except StoreUnavailable:
            return None

    return wait_until(attempt, timeout=30, what="the store to answer")[0]


def fails(store: Any, items: list[Item], proxy: CqlProxy, error: str | None = None) -> None:
    with pytest.raises(StoreUnavailable, match=error):
        store.add(items)
    assert proxy.rules_left() == 0 and proxy.lost == 1


def listed(store: Any, crawler_id: int) -> list[tuple[str, datetime]]:
    return sorted((item.id, item.fetched_at) for item in store.items(crawler_id, 10 * COUNT))


@pytest.mark.parametrize("lost", [ITEM_ROWS, ID_ROWS, CONFIRM, TOTAL])
def test_a_retry_after_a_lost_reply_reports_the_items_new_exactly_once(
    writer: Any, proxy: CqlProxy, crawler_ids: tuple[int, ...], lost: str
) -> None:
    one = crawler_ids[0]
    items = batch(one)
    proxy.lose_reply(lost)
    fails(writer, items, proxy)

    assert ids(retried(writer, items)) == ids(items)
    assert writer.count(one) == COUNT
    assert listed(writer, one) == [(item_id, T0) for item_id in ids(items)]
    assert writer.add(items) == []  # answered now: a re-delivery is not new
    assert writer.count(one) == COUNT


@pytest.mark.parametrize("lost", [ID_ROWS, ITEM_ROWS, CONFIRM])
def test_a_retried_write_of_many_crawlers_reports_each_item_new_exactly_once(
    writer: Any, proxy: CqlProxy, crawler_ids: tuple[int, ...], lost: str
) -> None:
    """Many crawlers' writes in one call: their few rows each share batches (several
    partitions a request), one of which loses its reply."""
    crawlers = [crawler_ids[0] * 100 + n for n in range(24)]
    writes = [Write(batch(crawler)[:4]) for crawler in crawlers]
    proxy.lose_reply(lost)
    with pytest.raises(StoreUnavailable):
        writer.add_many(writes)
    assert proxy.rules_left() == 0 and proxy.lost == 1

    def attempt() -> tuple[list[list[Item]]] | None:
        try:
            return (writer.add_many(writes),)
        except StoreUnavailable:
            return None

    [answers] = wait_until(attempt, timeout=30, what="the store to answer")
    assert [ids(answer) for answer in answers] == [ids(write.items) for write in writes]
    assert [writer.count(crawler) for crawler in crawlers] == [4] * len(crawlers)
    assert writer.add_many(writes) == [[] for _ in writes]
    assert [len(listed(writer, crawler)) for crawler in crawlers] == [4] * len(crawlers)


@pytest.mark.parametrize("lost", [ID_ROWS, ITEM_ROWS, CONFIRM])
def test_a_retry_after_a_timed_out_write_reports_the_items_new_exactly_once(
    quiet_writer: Any, proxy: CqlProxy, crawler_ids: tuple[int, ...], lost: str
) -> None:
    """The answer is dropped and the connection stays: the driver times out, as when packets
    are lost, while the statements sent beside it are answered and the write ran in part."""
    one = crawler_ids[0]
    items = batch(one)
    proxy.lose_reply(lost, hang_up=False)
    fails(quiet_writer, items, proxy, "OperationTimedOut")

    assert ids(retried(quiet_writer, items)) == ids(items)
    assert quiet_writer.count(one) == COUNT
    assert listed(quiet_writer, one) == [(item_id, T0) for item_id in ids(items)]
    assert quiet_writer.add(items) == []


def test_items_whose_confirm_went_unanswered_are_new_to_one_writer_only(
    writer: Any, other: Any, proxy: CqlProxy, crawler_ids: tuple[int, ...]
) -> None:
    """The confirms that landed are the first writer's, and its retry reports those items new;
    any bucket whose confirm never ran is pending, and the other writer finishes it. Either
    way each item is reported new once, counted once, and listed once at its first fetch."""
    one = crawler_ids[0]
    proxy.lose_reply(CONFIRM)
    fails(writer, batch(one), proxy)

    theirs = other.add(batch(one, seconds=60))
    ours = retried(writer, batch(one))
    assert ids(theirs + ours) == ids(batch(one))
    assert writer.count(one) == COUNT
    assert listed(writer, one) == [(item_id, T0) for item_id in ids(batch(one))]


def test_a_writer_whose_items_another_finished_counts_none_of_them_on_retry(
    writer: Any, other: Any, proxy: CqlProxy, crawler_ids: tuple[int, ...]
) -> None:
    one = crawler_ids[0]
    proxy.lose_reply(ITEM_ROWS)
    fails(writer, batch(one), proxy)

    assert ids(other.add(batch(one, seconds=60))) == ids(batch(one))
    assert retried(writer, batch(one)) == []
    assert writer.count(one) == COUNT
    assert listed(writer, one) == [(item_id, T0) for item_id in ids(batch(one))]


def test_a_writer_dying_after_its_ids_leaves_them_counted(
    writer: Any, other: Any, proxy: CqlProxy, crawler_ids: tuple[int, ...]
) -> None:
    """Its total is written with the ids it counts, so the ids that landed are counted; the
    other writer counts only the ones left pending."""
    one = crawler_ids[0]
    proxy.lose_reply(CONFIRM)
    fails(writer, batch(one), proxy)
    writer.close()

    theirs = other.add(batch(one, seconds=60))
    assert len(theirs) < COUNT  # the confirm whose answer was lost did run
    assert other.count(one) == COUNT
    assert listed(other, one) == [(item_id, T0) for item_id in ids(batch(one))]


def test_a_redelivery_after_a_writer_died_before_its_ids_is_listed_once(
    writer: Any, other: Any, proxy: CqlProxy, crawler_ids: tuple[int, ...]
) -> None:
    """The item keeps its first fetch time, so its rows are written again, not added."""
    one = crawler_ids[0]
    proxy.lose_reply(ITEM_ROWS)
    fails(writer, batch(one), proxy)
    writer.close()

    again = other.add(batch(one, seconds=60))
    assert [(item.id, item.fetched_at) for item in again] == [(i.id, T0) for i in batch(one)]
    assert other.count(one) == COUNT
    assert listed(other, one) == [(item_id, T0) for item_id in ids(batch(one))]


@pytest.fixture
def writers(cassandra_store_url: str) -> Iterator[tuple[Any, Any]]:
    """Two writers, as two nodes are, that count a writer quiet after two short timeouts."""
    url = f"{cassandra_store_url}&request_timeout=1"
    one, two = open_store(url), open_store(url)
    yield one, two
    one.close()
    two.close()


def totals_written(url: str, crawler_id: int) -> tuple[int, int | None]:
    """The sum of every writer's total, as the store adds them up without a recount, and
    when the recount's own total was last written (None: never)."""
    config = cassandra_config.parse(url.removeprefix("cassandra://"))
    cluster = make_cluster(config)
    try:
        rows = cluster.connect(config.keyspace).execute(
            "SELECT writer, stored, WRITETIME(stored) AS written FROM bucket_totals"
            " WHERE crawler_id = %s AND bucket IN %s",
            (crawler_id, ValueSequence(range(BUCKETS))),
        )
        rows = list(rows)
        recounted = [row.written for row in rows if row.writer == RECOUNTED]
        return sum(row.stored for row in rows), (recounted[0] if recounted else None)
    finally:
        cluster.shutdown()


def test_two_writers_counting_one_item_at_once_end_with_the_count_of_distinct_items(
    writers: tuple[Any, Any], cassandra_store_url: str, crawler_ids: tuple[int, ...]
) -> None:
    """Both read each id before the other's confirm lands and both count it; once they are
    quiet, the next count is the number of distinct items stored, whoever asks."""
    one = crawler_ids[0]
    at_once = threading.Barrier(2)

    def write(store: Any, items: list[Item]) -> None:
        at_once.wait(timeout=10)
        store.add(items)

    for seconds in range(ROUNDS):  # until a round has both count an item, a few at most
        items = [replace(item, id=f"{item.id}-{seconds}") for item in batch(one, seconds)]
        racing = [threading.Thread(target=write, args=(s, items)) for s in writers]
        for thread in racing:
            thread.start()
        for thread in racing:
            thread.join(timeout=30)
        distinct = COUNT * (seconds + 1)
        if totals_written(cassandra_store_url, one)[0] > distinct:
            break
    else:
        pytest.fail(f"no round of {ROUNDS} had both writers count one item")
    assert len(set(writers[0].stored_ids(one))) == distinct
    if writers[0].count(one) > distinct:  # not mended yet: the writer says a count will mend it
        assert writers[0].count_unsettled(one)

    wait_until(lambda: writers[0].count(one) == distinct, what="the count of distinct items")
    assert not writers[0].count_unsettled(one)
    total, recounted = totals_written(cassandra_store_url, one)
    assert total == distinct and recounted is not None
    assert writers[1].count(one) == writers[0].count(one) == distinct
    assert totals_written(cassandra_store_url, one) == (distinct, recounted)  # mended once
