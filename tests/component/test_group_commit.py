"""Group commit on a real SQLite store: concurrent writes share store calls, and each caller
still gets exactly its own answer, or its call's error; through a node's sink, with a spool,
every new item keeps its queue entry."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from blackwidow.core.store import Write
from blackwidow.core.store.sqlite import SqliteStore
from sources.model import Item
from spawn.output.group_commit import GroupCommit
from spawn.output.queue_outbox import QueueOutbox
from spawn.output.sink import NodeSink
from spawn.output.spool import Spool
from tests.component.test_spool import down_queue
from tests.support import wait_until

CALLERS = 24
CRAWLERS = 6
T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)


class CountedStore(SqliteStore):
    """The real SQLite store, recording how many writes each transaction carried; its first
    transaction waits until `held` other writes are queued behind it."""

    def __init__(self, path: str, held: int) -> None:
        super().__init__(path)
        self.carried: list[int] = []
        self.commits: GroupCommit | None = None
        self._held = held

    def add_many(self, writes: Sequence[Write]) -> list[list[Item]]:
        self.carried.append(len(writes))
        if len(self.carried) == 1:
            assert self.commits is not None
            commits = self.commits
            wait_until(lambda: commits.waiting == self._held, what="every other write queued")
        return super().add_many(writes)


def item(item_id: str, crawler_id: int | None) -> Item:
    return Item(
        item_id, "rss", None, f"title {item_id}", None, None, None, T0, None, None, crawler_id
    )


def write_of(caller: int) -> Write:
    """Subscribers of a few crawlers: each caller's own items, and items shared with the
    callers of its crawler, which only one of them may get as new."""
    crawler = 8800 + caller % CRAWLERS
    shared = [item(f"shared-{n}", crawler) for n in range(3)]
    return Write([item(f"own-{caller}", crawler), *shared], ttl=None if caller % 2 else 3600)


def catch(add: Callable[[Write], list[Item]], write: Write) -> list[Item] | Exception:
    try:
        return add(write)
    except Exception as error:
        return error


def write_concurrently(
    add: Callable[[Write], list[Item]], writes: list[Write]
) -> list[list[Item] | Exception]:
    """Every write from a thread of its own, all released at once."""
    start = threading.Barrier(len(writes), timeout=10)

    def one(write: Write) -> list[Item] | Exception:
        start.wait()
        return catch(add, write)

    with ThreadPoolExecutor(max_workers=len(writes)) as pool:
        return list(pool.map(one, writes))


def assert_exact(store: SqliteStore, writes: list[Write], answers: list[list[Item]]) -> None:
    """Each stored item was new to exactly one caller that wrote it, as given; counts agree."""
    got = Counter((i.crawler_id, i.id) for answer in answers for i in answer)
    assert set(got.values()) == {1}
    for write, answer in zip(writes, answers, strict=True):
        assert all(new in write.items for new in answer)
    for crawler in {i.crawler_id for w in writes for i in w.items}:
        assert crawler is not None
        stored = {(crawler, i.id) for i in store.items(crawler, 100)}
        assert stored == {key for key in got if key[0] == crawler}
        assert store.count(crawler) == len(stored) == CALLERS // CRAWLERS + 3


def test_concurrent_writes_share_transactions_and_each_gets_its_own_answer(
    tmp_path: Path,
) -> None:
    store = CountedStore(str(tmp_path / "items.db"), held=CALLERS - 1)
    commits = store.commits = GroupCommit(store.add_many, max_writes=8)
    writes = [write_of(caller) for caller in range(CALLERS)]

    answers = write_concurrently(commits.add, writes)

    assert store.carried == [1, 8, 8, 7]  # the first caller's alone, then the queue in eights
    assert all(isinstance(answer, list) for answer in answers)
    assert_exact(store, writes, answers)  # type: ignore[arg-type]
    store.close()


def test_every_caller_of_a_failed_call_gets_its_error_and_nothing_of_it_is_stored(
    tmp_path: Path,
) -> None:
    store = CountedStore(str(tmp_path / "items.db"), held=3)
    commits = store.commits = GroupCommit(store.add_many)
    bad = Write([item("no-crawler", None)])
    writes = [write_of(0), write_of(1), bad, write_of(2)]
    first = threading.Thread(target=commits.add, args=(writes[0],))
    first.start()
    wait_until(lambda: store.carried, what="the first write's call")
    with ThreadPoolExecutor(max_workers=3) as pool:
        later = [pool.submit(catch, commits.add, w) for w in writes[1:]]
    first.join(timeout=30)

    assert store.carried == [1, 3]
    assert all(isinstance(f.result(timeout=30), ValueError) for f in later)
    assert [i.id for i in store.items(8800, 10)] == ["shared-2", "shared-1", "shared-0", "own-0"]
    assert store.items(8801, 10) == store.items(8802, 10) == []
    assert commits.add(writes[1]) == writes[1].items  # the next call is the caller's own
    store.close()


def test_a_node_sink_spools_the_entry_of_every_item_new_to_any_caller(tmp_path: Path) -> None:
    """Many subscribers write through one sink at once while the queue is down: the spool
    ends holding exactly one entry per item some caller got as new."""
    store = SqliteStore(str(tmp_path / "items.db"))
    outbox = QueueOutbox(down_queue(), Spool(tmp_path / "outbox.db"), capacity=1000)
    sink = NodeSink(store, outbox)
    writes = [write_of(caller) for caller in range(CALLERS)]

    answers = write_concurrently(lambda w: sink.add(w.items, w.ttl), writes)

    assert all(isinstance(answer, list) for answer in answers)
    assert_exact(store, writes, answers)  # type: ignore[arg-type]
    new = sum(len(answer) for answer in answers)  # type: ignore[arg-type]
    assert outbox.stats()["pending"] == new == CALLERS + 3 * CRAWLERS
    outbox.stop()
    store.close()
