"""The item queue on a real redis-server: entries round-trip, streams are per crawler and capped,
consumer groups read them, and the outbox rides out an outage without losing or reordering."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import redis

from blackwidow.core.queue import QueueError, item_from_entry, open_queue
from blackwidow.core.queue.entries import stream_key
from blackwidow.core.queue.redis_stream import RedisStreamQueue
from sources.model import Item
from spawn.output.queue_outbox import PUSH_RETRY, QueueOutbox
from spawn.output.spool import Spool
from tests.services.redis import Redis as RedisServer
from tests.support import wait_until

T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
_CRAWLER_IDS = itertools.count(1)


def make_item(number: int, crawler_id: int | None, prefix: str = "item") -> Item:
    return Item(
        id=f"{prefix}-{number}",
        source="rss",
        url=f"https://example.org/{prefix}-{number}",
        title=f"title {number}",
        text="text",
        author="ann",
        published_at=T0,
        fetched_at=T0 + timedelta(seconds=number),
        crawler_id=crawler_id,
    )


def streamed(client: redis.Redis, crawler_id: int) -> list[Item]:
    return [item_from_entry(fields) for _, fields in client.xrange(stream_key(crawler_id))]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SpareRedis(RedisServer):
    """A redis-server of the test's own, to stop and start: an outage on demand. Its append-only
    file keeps the streams across a restart."""

    def command(self) -> list[str]:
        return [*super().command(), "--appendonly", "yes", "--appendfsync", "always"]

    def up(self) -> None:
        self.start()
        self.wait_ready(self.ready_timeout)


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as opened:
        yield opened


@pytest.fixture
def new_crawler(client: redis.Redis) -> Iterator[Callable[[], int]]:
    """Hands out crawler ids no other test here uses, so each test sees only its own streams."""
    made: list[int] = []

    def make() -> int:
        made.append(next(_CRAWLER_IDS))
        client.delete(stream_key(made[-1]))
        return made[-1]

    yield make
    if made:
        client.delete(*(stream_key(crawler_id) for crawler_id in made))


@pytest.fixture
def queue(redis_url: str) -> Iterator[RedisStreamQueue]:
    opened = RedisStreamQueue(redis_url, maxlen=1000)
    yield opened
    opened.close()


@pytest.fixture
def spool(tmp_path: Path) -> Spool:
    """The outbox's file; `QueueOutbox.stop` closes it."""
    return Spool(tmp_path / "outbox.db")


@pytest.fixture
def spare_redis(tmp_path: Path) -> Iterator[SpareRedis]:
    server = SpareRedis(tmp_path, port=closed_port())
    try:
        yield server
    finally:
        server.stop()


def test_items_round_trip_through_the_stream(queue, client, new_crawler):
    crawler_id = new_crawler()
    sparse = Item(
        id="sparse",
        source="rss",
        url=None,
        title=None,
        text="",
        author=None,
        published_at=None,
        fetched_at=T0,
        crawler_id=crawler_id,
    )
    elsewhere = timezone(timedelta(hours=2))
    reply = Item(
        id="reply",
        source="twitter",
        url="https://example.org/r",
        title="café ✓",
        text="line one\nline two",
        author="bo",
        published_at=T0.astimezone(elsewhere),
        fetched_at=T0.astimezone(elsewhere),
        conversation_id="conv-1",
        in_reply_to="item-0",
        crawler_id=crawler_id,
    )
    items = [make_item(0, crawler_id), sparse, reply]

    queue.push(items)

    assert streamed(client, crawler_id) == items
    _, fields = client.xrange(stream_key(crawler_id))[1]
    assert fields == {
        b"id": b"sparse",
        b"source": b"rss",
        b"text": b"",
        b"fetched_at": b"2024-05-01T12:00:00.123456+00:00",
        b"crawler_id": str(crawler_id).encode(),
    }
    _, fields = client.xrange(stream_key(crawler_id))[2]
    assert fields[b"published_at"] == b"2024-05-01T12:00:00.123456+00:00"  # stored in UTC


def test_one_stream_per_crawler(queue, client, new_crawler):
    first, second = new_crawler(), new_crawler()
    items = [make_item(n, first if n % 2 else second) for n in range(6)]

    queue.push(items)

    assert client.exists(stream_key(first), stream_key(second)) == 2
    assert streamed(client, first) == items[1::2]
    assert streamed(client, second) == items[0::2]


def test_the_cap_holds_approximately(redis_url, client, new_crawler):
    crawler_id = new_crawler()
    capped = RedisStreamQueue(redis_url, maxlen=200)
    items = [make_item(n, crawler_id) for n in range(1000)]
    try:
        for start in range(0, 1000, 100):
            capped.push(items[start : start + 100])
            assert client.xlen(stream_key(crawler_id)) < 400
    finally:
        capped.close()

    assert 200 <= client.xlen(stream_key(crawler_id)) < 400
    (_, newest), *_ = client.xrevrange(stream_key(crawler_id), count=1)
    assert item_from_entry(newest) == items[-1]  # trimming drops the oldest


def test_a_consumer_group_reads_entries_once(queue, client, new_crawler):
    crawler_id = new_crawler()
    key = stream_key(crawler_id)
    client.xgroup_create(key, "indexers", id="0", mkstream=True)
    items = [make_item(n, crawler_id) for n in range(3)]
    queue.push(items)

    [(stream, entries)] = client.xreadgroup("indexers", "worker-1", {key: ">"}, count=10)

    assert stream == key.encode()
    assert [item_from_entry(fields) for _, fields in entries] == items
    assert client.xreadgroup("indexers", "worker-2", {key: ">"}, count=10) == []
    assert client.xack(key, "indexers", *(entry_id for entry_id, _ in entries)) == 3
    assert client.xpending(key, "indexers")["pending"] == 0


def test_a_down_redis_fails_fast_without_showing_the_password():
    down = RedisStreamQueue(f"redis://:pw-do-not-log@127.0.0.1:{closed_port()}/0", maxlen=10)
    started = time.monotonic()

    with pytest.raises(QueueError) as caught:
        down.push([make_item(0, 1)])

    assert time.monotonic() - started < 5
    assert "ConnectionError" in str(caught.value)
    assert "pw-do-not-log" not in str(caught.value)
    assert down.ping() is False
    down.close()


def test_items_without_a_crawler_are_refused(queue, spool):
    orphan = make_item(0, None)

    with pytest.raises(ValueError, match="crawler_id"):
        queue.push([orphan])
    with pytest.raises(ValueError, match="crawler_id"):
        QueueOutbox(queue, spool, capacity=10).put([orphan])


def test_open_queue(redis_url):
    assert open_queue(None, maxlen=10) is None

    opened = open_queue(redis_url, maxlen=10)
    assert opened is not None and opened.ping() is True
    opened.close()

    for bad in ("http://:pw-do-not-log@cache:6379/0", "redis://:pw-do-not-log@cache:port/0"):
        with pytest.raises(ValueError) as caught:
            open_queue(bad, maxlen=10)
        assert str(caught.value).startswith("BLACKWIDOW_REDIS_URL: ")
        assert "pw-do-not-log" not in str(caught.value)


def test_retry_delays_double_from_a_fifth_of_a_second_to_ten():
    delays = [PUSH_RETRY.delay(failures) for failures in range(9)]
    assert delays == [0.0, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10.0, 10.0]


def test_the_outbox_pushes_at_once_while_all_is_well(queue, spool, client, new_crawler):
    crawler_id = new_crawler()
    outbox = QueueOutbox(
        queue, spool, capacity=10
    )  # no background thread: the caller's thread pushes
    items = [make_item(n, crawler_id) for n in range(3)]

    outbox.put(items)
    outbox.put([])

    assert outbox.stats() == {"pushed": 3, "pending": 0, "failed_pushes": 0, "last_error": None}
    assert outbox.has_room()
    assert streamed(client, crawler_id) == items


def test_the_outbox_rides_out_an_outage_in_order(spare_redis, spool, caplog):
    caplog.set_level("INFO", logger="spawn.output.queue_outbox")
    spare_redis.up()
    queue = RedisStreamQueue(spare_redis.url, maxlen=1000)
    outbox = QueueOutbox(queue, spool, capacity=20)
    outbox.start()
    batches = [[make_item(n, 7) for n in range(start, start + 5)] for start in range(0, 30, 5)]
    try:
        outbox.put(batches[0])
        assert outbox.stats()["pushed"] == 5

        spare_redis.stop()
        outbox.put(batches[1])
        stats = outbox.stats()
        assert (stats["pushed"], stats["pending"], stats["failed_pushes"]) == (5, 5, 1)
        assert "ConnectionError" in stats["last_error"]
        for batch in batches[2:5]:
            outbox.put(batch)
        assert not outbox.has_room()

        wait_until(lambda: outbox.stats()["failed_pushes"] >= 3, what="background retries")
        outbox.put(batches[5])  # kept even past capacity: the caller checks has_room first
        assert outbox.stats()["pending"] == 25
        assert not outbox.has_room()

        spare_redis.up()
        wait_until(lambda: outbox.stats()["pending"] == 0, what="the backlog to drain")
        assert outbox.has_room()
        assert outbox.stats()["pushed"] == 30
        with redis.Redis.from_url(spare_redis.url) as client:
            assert streamed(client, 7) == [item for batch in batches for item in batch]
    finally:
        outbox.stop()
        queue.close()
    said = [r.getMessage() for r in caplog.records if r.name == "spawn.output.queue_outbox"]
    assert [m.split(" ", 2)[:2] for m in said] == [["queue", "down"], ["queue", "back"]], said


def test_stop_makes_a_last_attempt_to_flush(spare_redis, spool):
    queue = RedisStreamQueue(spare_redis.url, maxlen=1000)  # not started yet: down
    outbox = QueueOutbox(queue, spool, capacity=20)
    items = [make_item(n, 3) for n in range(4)]
    try:
        outbox.put(items[:2])
        outbox.put(items[2:])
        assert outbox.stats()["pending"] == 4

        spare_redis.up()
        outbox.stop()

        assert outbox.stats()["pending"] == 0
        with redis.Redis.from_url(spare_redis.url) as client:
            assert streamed(client, 3) == items
    finally:
        queue.close()


def test_a_put_during_a_push_waits_behind_it_without_blocking(spare_redis, spool):
    spare_redis.up()
    queue = RedisStreamQueue(spare_redis.url, maxlen=1000)
    outbox = QueueOutbox(queue, spool, capacity=20)
    outbox.start()
    first, second = [make_item(n, 5) for n in range(3)], [make_item(n, 5) for n in range(3, 6)]
    with redis.Redis.from_url(spare_redis.url) as client:
        try:
            client.client_pause(10_000, all=False)  # writes wait: the first push stays in flight
            pusher = threading.Thread(target=outbox.put, args=(first,))
            pusher.start()
            wait_until(lambda: client.info("clients")["blocked_clients"] == 1, what="a paused XADD")

            outbox.put(second)  # returns at once, queued behind the push in flight
            assert outbox.stats()["pending"] == 3

            client.client_unpause()
            pusher.join()
            wait_until(lambda: outbox.stats()["pending"] == 0, what="the queued put")
            assert streamed(client, 5) == first + second
        finally:
            client.client_unpause()
            outbox.stop()
            queue.close()


def test_the_outbox_keeps_each_callers_order_across_threads(queue, spool, client, new_crawler):
    crawler_id = new_crawler()
    outbox = QueueOutbox(queue, spool, capacity=1000)
    outbox.start()

    def produce(thread: int) -> None:
        for start in range(0, 100, 4):
            outbox.put([make_item(n, crawler_id, f"t{thread}") for n in range(start, start + 4)])

    producers = [threading.Thread(target=produce, args=(thread,)) for thread in range(4)]
    try:
        for producer in producers:
            producer.start()
        for producer in producers:
            producer.join()
        wait_until(lambda: outbox.stats()["pending"] == 0, what="every put to be pushed")
    finally:
        outbox.stop()

    ids = [item.id for item in streamed(client, crawler_id)]
    assert len(ids) == len(set(ids)) == 400
    for thread in range(4):
        assert [i for i in ids if i.startswith(f"t{thread}-")] == [
            f"t{thread}-{n}" for n in range(100)
        ]
    assert outbox.stats() == {"pushed": 400, "pending": 0, "failed_pushes": 0, "last_error": None}
