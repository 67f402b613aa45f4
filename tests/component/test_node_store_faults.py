"""A node whose Cassandra runs its writes and never answers (the CQL fault proxy drops the
reply and keeps the connection: OperationTimedOut): each item is still stored once, a thread's
move included, the node's polls are answered meanwhile, and its timers keep time."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from blackwidow.core.store import StoreUnavailable
from blackwidow.demo.feed_server import FeedServer
from blackwidow.node_client import NodeClient, NodeTarget
from sources.fetch.fetcher import GuardedFetcher
from sources.model import Item, SubscriberSpec
from sources.registry import opener
from sources.source_type import SourceContext
from spawn import watchdog
from spawn.app import create_node_app
from spawn.node import NodeState
from spawn.output.sink import NodeSink
from spawn.pool.change_counter import ChangeCounter
from spawn.pool.seen_set import SeenSet
from spawn.pool.source_pool import DataSourcePool
from spawn.pool.subscriber import Subscriber
from tests.component.conftest import SECRET
from tests.component.test_cassandra_faults import (  # noqa: F401
    CONFIRM,
    ID_ROWS,
    T0,
    batch,
    listed,
    proxy,
    quiet_writer,
    through,
)
from tests.servers.cql_proxy import CqlProxy
from tests.support import FakeClock, served, wait_until

pytestmark = pytest.mark.services("cassandra_service")

MOVED = "SET conversation_id"  # a folded conversation's id rows told their root
DROPPED = "DELETE FROM"  # a folded conversation's old rows
COUNT_READ = "SELECT writer, stored, began"  # a crawler's totals, read for its count
HUNG = 40  # seconds a write waits for an answer that will not come: longer than tests wait
POLL_CALLS = 20  # a poll's calls made while a subscriber waits for its write
FEED_INTERVAL = 0.1
DETACH_AFTER = 30.0


def thread_items(crawler_id: int) -> tuple[list[Item], list[Item]]:
    """A post `q`, and a reply `z` to `p` that comes before `p` (so it sits in conversation
    `p`); then `p`, a reply to `q`, whose write folds conversation `p` into `q`, with a batch
    of new items beside it."""

    def entry(item_id: str, parent: str | None, conversation: str | None) -> Item:
        return Item(item_id, "rss", None, None, None, None, None, T0, conversation, parent)

    first = [entry("q", None, "q"), entry("z", "p", "p")]
    return first, [entry("p", "q", "q"), *batch(crawler_id)]  # the subscriber claims them


def node_subscriber(store: Any, crawler_id: int, sink: NodeSink | None = None) -> Subscriber:
    """A subscriber as a node runs it on Cassandra, its seen-set trusted from the first write."""
    sink = sink or NodeSink(store)
    seen = SeenSet(lambda: sink.stored_ids(crawler_id), settle_after=0)
    spec = SubscriberSpec(crawler_id, 1, "rss", {"feeds": []})
    return Subscriber(spec, sink, 0.0, ChangeCounter(), on_failing=lambda _: None, seen=seen)


def stored_all(subscriber: Subscriber) -> bool:
    """Retry the held items when due, as the node's timer does; True once none are held."""
    subscriber.retry()
    return subscriber.held == 0 and not subscriber.failing


@pytest.mark.parametrize("lost", [ID_ROWS, CONFIRM, MOVED, DROPPED])
def test_a_node_stores_each_item_once_whichever_write_of_its_times_out(
    quiet_writer: Any,  # noqa: F811
    proxy: CqlProxy,  # noqa: F811
    crawler_ids: tuple[int, ...],
    lost: str,
) -> None:
    """The seen-set vouches the batch's ids new, so the write skips their reads; its answer is
    dropped after the statement ran. The retry asks the store about every id and finishes the
    write: every item listed once, in its thread's root, counted once, collected once."""
    one = crawler_ids[0]
    first, second = thread_items(one)
    subscriber = node_subscriber(quiet_writer, one)
    subscriber.offer(first)
    assert subscriber.items_collected == len(first) and subscriber.seen is not None

    proxy.lose_reply(lost, hang_up=False)
    subscriber.offer(second)
    assert subscriber.failing and "OperationTimedOut" in (subscriber.last_error or "")
    assert subscriber.seen.vouched >= len(second)  # the timed-out write read none of them
    wait_until(lambda: stored_all(subscriber), what="the held items to be stored")

    everything = first + second
    assert proxy.lost == 1
    assert subscriber.items_collected == quiet_writer.count(one) == len(everything)
    assert listed(quiet_writer, one) == sorted((item.id, T0) for item in everything)
    thread = quiet_writer.conversation("q", [one], 10)
    assert sorted(item.id for item in thread) == ["p", "q", "z"]


def test_a_count_read_that_times_out_after_a_write_leaves_the_node_healthy(
    quiet_writer: Any,  # noqa: F811
    proxy: CqlProxy,  # noqa: F811
    crawler_ids: tuple[int, ...],
) -> None:
    """The store's count read after a write went in (a replica silent meanwhile) gets no
    answer: the items are stored and counted, and the node's health still says `ok`, as
    nothing would retry that read to clear it once the store answers again."""
    one = crawler_ids[0]
    first, second = thread_items(one)
    sink = NodeSink(quiet_writer)
    subscriber = node_subscriber(quiet_writer, one, sink)
    subscriber.offer(first)
    proxy.lose_reply(COUNT_READ, hang_up=False)
    subscriber.offer(second)
    assert proxy.lost == 1
    assert not subscriber.failing and subscriber.held == 0
    assert subscriber.items_collected == quiet_writer.count(one) == len(first) + len(second)
    assert sink.health()["store"] == {"ok": True, "error": None}


def test_a_store_failure_no_write_retries_clears_once_the_store_answers(
    quiet_writer: Any,  # noqa: F811
    proxy: CqlProxy,  # noqa: F811
    crawler_ids: tuple[int, ...],
) -> None:
    """A write failed for a subscriber removed since: nothing retries it, and the node's
    health would say `degraded` until another crawler wrote; the node's probe (on its write
    timer, while no write waits) asks the store and clears it once it answers."""
    sink = NodeSink(quiet_writer)
    proxy.lose_reply(ID_ROWS, hang_up=False)
    with pytest.raises(StoreUnavailable):
        sink.add(batch(crawler_ids[0]))
    assert not sink.health()["store"]["ok"]
    sink.probe()
    assert sink.health()["store"] == {"ok": True, "error": None}


@pytest.mark.parametrize("change", ["pushed", "removed"])
def test_a_node_answers_polls_while_a_changed_subscriber_waits_for_its_write(
    proxy: CqlProxy,  # noqa: F811
    slow_pool: tuple[DataSourcePool, Any],
    feeds: FeedServer,
    crawler_ids: tuple[int, ...],
    change: str,
) -> None:
    """A spec pushed, or a removal, for a subscriber whose write waits for an answer that will
    not come never holds up the pool: a poll's calls are answered meanwhile, so the hub does
    not take a live node whose store is slow to answer for a dead one, and the push itself
    answers (Subscriber.update), so the hub does not take an applied push for a failed one."""
    one = crawler_ids[0]
    pool, _ = slow_pool
    spec = feed_spec(one, feeds)
    proxy.lose_reply(ID_ROWS, hang_up=False)
    pool.put(spec, 0.0)
    wait_until(lambda: proxy.lost, what="a write to wait for an answer that will not come")
    if change == "pushed":
        pushed = answers(lambda: pool.put(dataclasses.replace(spec, item_limit=100), 1.0))
    else:
        threading.Thread(target=pool.delete, args=(one,), daemon=True).start()

    answered = threading.Event()
    threading.Thread(target=_poll_calls, args=(pool, one, answered), daemon=True).start()
    wait_until(answered.is_set, timeout=HUNG / 4, what="the poll's calls to be answered")
    if change == "pushed":
        wait_until(pushed.is_set, timeout=HUNG / 4, what="the push's answer")


def test_a_push_answers_while_a_joining_subscribers_first_write_waits_for_its_answer(
    proxy: CqlProxy,  # noqa: F811
    slow_pool: tuple[DataSourcePool, Any],
    feeds: FeedServer,
    crawler_ids: tuple[int, ...],
) -> None:
    """A crawler joining a running data source gets the items that source already had off
    the push (spawn.pool.joins): the push answers though that write gets no answer, where
    the hub would take a push that outlasts its wait for one that failed."""
    one, two = crawler_ids[:2]
    pool, store = slow_pool
    source_running(pool, store, one, feeds)
    proxy.lose_reply(ID_ROWS, hang_up=False)
    answered = answers(lambda: pool.put(feed_spec(two, feeds), 1.0))
    wait_until(answered.is_set, timeout=HUNG / 4, what="the push's answer")
    wait_until(lambda: proxy.lost, timeout=HUNG / 4, what="the joining write to hang")


def test_a_removal_during_a_write_tells_the_hub_the_count_is_not_known(
    proxy: CqlProxy,  # noqa: F811
    slow_pool: tuple[DataSourcePool, Any],
    feeds: FeedServer,
    crawler_ids: tuple[int, ...],
) -> None:
    """A crawler removed while its write waits for an answer (its first, of the items of
    the data source it joined): the node's answer names it removed without a count, which
    the hub takes as unsure (its lease held until it would have lapsed,
    blackwidow.monitor.execute), never as a count to release the lease down to while that
    write may still land."""
    one, two = crawler_ids[:2]
    pool, store = slow_pool
    node = NodeState(pool, clock=time.monotonic)
    node.mark_registered(7, 3)
    source_running(pool, store, one, feeds)
    proxy.lose_reply(ID_ROWS, hang_up=False)
    pool.put(feed_spec(two, feeds), 1.0)
    wait_until(lambda: proxy.lost, what="a write to wait for an answer that will not come")
    with served(create_node_app(node, SECRET), "node") as url:
        client = NodeClient(SECRET, timeout=5.0)
        counts, uncounted = client.remove_many(NodeTarget(7, url, 3), [two])
    assert counts == {} and uncounted == {two}


@pytest.fixture
def slow_pool(
    proxy: CqlProxy,  # noqa: F811
    cassandra_service: Any,
    cassandra_store_url: str,
) -> Iterator[tuple[DataSourcePool, Any]]:
    """A node's pool, and its store through the proxy, whose writes wait HUNG for an answer
    the proxy drops; those still waiting fail at the end."""
    store = through(proxy, cassandra_service, cassandra_store_url, f"&request_timeout={HUNG}")
    pool = feed_pool(store)
    yield pool, store
    proxy.close()
    pool.clear()
    store.close()


def source_running(pool: DataSourcePool, store: Any, crawler_id: int, feeds: FeedServer) -> None:
    """The crawler's data source started and its first items stored."""
    pool.put(feed_spec(crawler_id, feeds), 0.0)
    wait_until(lambda: store.count(crawler_id) == 5, what="the data source's first items stored")


def answers(call: Callable[[], object]) -> threading.Event:
    """`call` made on a thread of its own: set once it has returned."""
    returned = threading.Event()

    def run() -> None:
        call()
        returned.set()

    threading.Thread(target=run, daemon=True).start()
    return returned


def feed_pool(store: Any) -> DataSourcePool:
    """A node's pool of RSS sources on the sample feeds, writing to `store`."""
    fetcher = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}), deadline=5.0)
    return DataSourcePool(opener(SourceContext(fetcher, FEED_INTERVAL)), NodeSink(store))


def feed_spec(crawler_id: int, feeds: FeedServer) -> SubscriberSpec:
    """A crawler of one static sample feed: its items come in one delivery."""
    return SubscriberSpec(crawler_id, 1, "rss", {"feeds": [f"{feeds.url}/feeds/news.xml?items=5"]})


def _poll_calls(pool: DataSourcePool, crawler_id: int, answered: threading.Event) -> None:
    """What a poll asks of the pool, spread over a second: the push or removal begun just
    before is inside the pool by then."""
    for _ in range(POLL_CALLS):
        pool.statuses()
        pool.confirm([crawler_id], 2.0)
        pool.counts()
        answered.wait(1 / POLL_CALLS)
    answered.set()


def test_a_node_keeps_its_timers_while_a_write_retry_waits_for_its_answer(
    proxy: CqlProxy,  # noqa: F811
    cassandra_service: Any,
    cassandra_store_url: str,
    feeds: FeedServer,
    crawler_ids: tuple[int, ...],
) -> None:
    """A failed write's retry that waits for an answer never holds up the node's timers: a
    node the hub stopped polling detaches on time (cost safety), whatever its store does."""
    store = through(proxy, cassandra_service, cassandra_store_url, f"&request_timeout={HUNG}")
    pool = feed_pool(store)
    clock = FakeClock(1000.0)
    node = NodeState(pool, clock)
    node.mark_registered(7, 3)
    stop = threading.Event()
    try:
        proxy.lose_reply(ID_ROWS)  # the first write fails at once: the subscriber retries
        proxy.lose_reply(ID_ROWS, times=HUNG, hang_up=False)  # and its retries wait
        pool.put(feed_spec(crawler_ids[0], feeds), clock())
        timers = (node, HUNG * 10, DETACH_AFTER, stop)
        threading.Thread(target=watchdog.run, args=timers, daemon=True).start()
        wait_until(lambda: proxy.lost >= 2, what="a retry to wait for its answer")

        clock.now += DETACH_AFTER + 1  # the hub has not polled for longer than detach_after
        wait_until(lambda: not node.registered.is_set(), timeout=HUNG / 4, what="a detach")
        assert pool.statuses() == []
    finally:
        stop.set()
        proxy.close()
        pool.clear()
        store.close()
