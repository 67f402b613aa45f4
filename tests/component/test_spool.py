"""The outbox's spool on a real redis-server and a real SQLite store: entries of stored items
outlive a node process that dies while Redis is down, and reach the stream once, in order."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from blackwidow.core.queue.redis_stream import RedisStreamQueue
from blackwidow.core.store.sqlite import SqliteStore
from spawn.output.queue_outbox import QueueOutbox
from spawn.output.sink import NodeSink, QueueBacklogFull
from spawn.output.spool import Spool, SpoolInUse, spool_path
from tests.component.test_queue import closed_port, make_item, streamed

CRAWLER = 9101  # streams of this module's own
CLUSTER = "6f1e4c8a-2b7d-4e1f-9a3c-5d8b7e6f4a21"


@pytest.fixture
def client(redis_url: str):
    with redis.Redis.from_url(redis_url) as opened:
        opened.delete(*(f"blackwidow:items:{CRAWLER + n}" for n in range(3)))
        yield opened


def down_queue() -> RedisStreamQueue:
    return RedisStreamQueue(f"redis://127.0.0.1:{closed_port()}/0", maxlen=1000)


def life(path: Path, work: Callable[[QueueOutbox], None], capacity: int = 100) -> None:
    """One node process on the spool at `path` while Redis is down, killed after `work`:
    its outbox is dropped, never stopped (no last push), and its file let go."""
    work(QueueOutbox(down_queue(), Spool(path), capacity))
    gc.collect()


def test_a_killed_node_s_entries_reach_redis_from_its_spool(redis_url, client, tmp_path):
    path = tmp_path / "outbox.db"
    batches = [[make_item(n, CRAWLER) for n in range(start, start + 4)] for start in (0, 4, 8)]

    def spool_while_down(outbox: QueueOutbox) -> None:
        for batch in batches:
            outbox.put(batch)
        assert outbox.stats()["pending"] == 12

    life(path, spool_while_down)

    queue = RedisStreamQueue(redis_url, maxlen=1000)
    again = QueueOutbox(queue, Spool(path), capacity=100)
    assert again.stats()["pending"] == 12
    again.stop()  # no background thread: the last attempt pushes the whole backlog

    assert streamed(client, CRAWLER) == [item for batch in batches for item in batch]
    assert not path.exists()  # an empty spool leaves nothing behind
    third = QueueOutbox(queue, Spool(path), capacity=100)
    third.stop()
    assert len(streamed(client, CRAWLER)) == 12  # nothing replayed twice
    queue.close()


def test_an_item_stored_but_not_settled_is_queued_after_a_restart(redis_url, client, tmp_path):
    """The window: the store took items, then the process died before the spool heard."""
    store = SqliteStore(str(tmp_path / "items.db"))
    path = tmp_path / "outbox.db"
    stored_first = [make_item(n, CRAWLER + 1) for n in range(3)]
    never_stored = [make_item(n, CRAWLER + 2) for n in range(2)]

    def die_mid_write(outbox: QueueOutbox) -> None:
        outbox.stage(stored_first, ttl=3600)
        assert store.add(stored_first, ttl=3600) == stored_first
        outbox.stage(never_stored, ttl=None)  # died before even the store was asked

    life(path, die_mid_write)

    queue = RedisStreamQueue(redis_url, maxlen=1000)
    sink = NodeSink(store, QueueOutbox(queue, Spool(path), capacity=100))
    sink.replay_interrupted()
    sink.replay_interrupted()  # done once only

    assert streamed(client, CRAWLER + 1) == stored_first
    assert streamed(client, CRAWLER + 2) == never_stored
    assert store.count(CRAWLER + 2) == 2  # the write the process never finished
    assert sink.health()["queue"]["pending"] == 0
    queue.close()
    store.close()


def test_the_sink_spools_before_storing_and_keeps_only_new_items(redis_url, client, tmp_path):
    store = SqliteStore(str(tmp_path / "items.db"))
    queue = RedisStreamQueue(redis_url, maxlen=1000)
    outbox = QueueOutbox(queue, Spool(tmp_path / "outbox.db"), capacity=100)
    sink = NodeSink(store, outbox)
    first = [make_item(n, CRAWLER) for n in range(3)]

    assert sink.add(first) == first
    assert sink.add([*first, make_item(3, CRAWLER)]) == [make_item(3, CRAWLER)]

    assert [item.id for item in streamed(client, CRAWLER)] == [f"item-{n}" for n in range(4)]
    assert outbox.has_room() and outbox.stats()["pending"] == 0
    outbox.stop()
    queue.close()
    store.close()


def test_the_bound_holds_on_the_spool_across_a_restart(tmp_path):
    store = SqliteStore(str(tmp_path / "items.db"))
    path = tmp_path / "outbox.db"

    def fill(outbox: QueueOutbox) -> None:
        sink = NodeSink(store, outbox)
        sink.add([make_item(n, CRAWLER) for n in range(5)])
        with pytest.raises(QueueBacklogFull):
            sink.add([make_item(5, CRAWLER)])

    life(path, fill, capacity=5)

    restarted = NodeSink(store, QueueOutbox(down_queue(), Spool(path), capacity=5))
    with pytest.raises(QueueBacklogFull):
        restarted.add([make_item(5, CRAWLER)])
    assert store.count(CRAWLER) == 5
    store.close()


def test_one_spool_file_per_node_address_and_one_process_per_file(tmp_path):
    first = spool_path(str(tmp_path), "127.0.0.1", 8001, pid=10, cluster=CLUSTER)
    assert first == spool_path(
        str(tmp_path), "127.0.0.1", 8001, pid=11, cluster=CLUSTER
    )  # a restart finds it
    assert first != spool_path(str(tmp_path), "127.0.0.1", 8002, pid=10, cluster=CLUSTER)
    assert first != spool_path(str(tmp_path), "10.0.0.5", 8001, pid=10, cluster=CLUSTER)
    assert (
        spool_path(str(tmp_path), "::1", 0, pid=10, cluster=CLUSTER).name
        == f"outbox-_1-pid10@{CLUSTER}.db"
    )

    held = Spool(first)
    with pytest.raises(SpoolInUse):
        Spool(first)
    held.close()
    Spool(first).close()
