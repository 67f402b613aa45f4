"""Two nodes writing one crawler at once (a move's overlap, a node cut off from the hub): what
each reports is the store's count of distinct items, not its own tally, in SQLite and in
Cassandra. Each "node" is a subscriber on a store instance of its own, as a node process is."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from blackwidow.core.store import open_store
from blackwidow.core.store.sqlite import SqliteStore
from sources.model import Item, SubscriberSpec
from spawn.output.sink import NodeSink
from spawn.pool.change_counter import ChangeCounter
from spawn.pool.subscriber import RECOUNT_MARGIN, Subscriber
from tests.support import FakeClock, wait_until


def entries(crawler_id: int, numbers: range) -> list[Item]:
    at = datetime.now(UTC)
    return [
        Item(f"entry/{n}", "rss", None, None, None, None, None, at, crawler_id=crawler_id)
        for n in numbers
    ]


def node(store: Any, crawler_id: int, clock: FakeClock | None = None) -> Subscriber:
    spec = SubscriberSpec(crawler_id, 1, "rss", {"feeds": []})
    sink, changes = NodeSink(store), ChangeCounter()
    return Subscriber(spec, sink, 0.0, changes, lambda _: None, clock=clock or FakeClock())


@pytest.fixture(
    params=["sqlite", pytest.param("cassandra", marks=pytest.mark.services("cassandra_service"))]
)
def two_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """Opens store instances on one store, as each node process does."""
    opened: list[Any] = []

    def one() -> Any:
        if request.param == "sqlite":
            store = SqliteStore(str(tmp_path / "items.db"))
        else:
            # a writer is quiet after two short timeouts: an overlap is mended within seconds
            url = request.getfixturevalue("cassandra_store_url")
            store = open_store(f"{url}&request_timeout=1")
        opened.append(store)
        return store

    yield one
    for store in opened:
        store.close()


def test_a_node_reports_what_another_stored_meanwhile(
    two_stores: Callable[[], Any], crawler_ids: tuple[int, ...]
) -> None:
    crawler = crawler_ids[0]
    store = two_stores()
    first, second = node(store, crawler), node(two_stores(), crawler)
    first.offer(entries(crawler, range(0, 10)))
    second.load_count()
    assert second.items_collected == 10

    first.offer(entries(crawler, range(10, 15)))  # the old node's last write, after the move
    second.offer(entries(crawler, range(5, 20)))  # the same feed, read again by the new one

    assert second.items_collected == 20
    assert second.final_count() == 20
    assert len(set(store.stored_ids(crawler))) == 20


def test_a_node_that_sees_another_writer_counts_again_on_its_timer(
    two_stores: Callable[[], Any], crawler_ids: tuple[int, ...]
) -> None:
    """A count read after a write that is not the node's tally means another node writes the
    crawler too: the node asks the store again once an overlap would be mended, and on while
    the count moves (the other's later write) or the store has yet to mend the two writers'
    overlap (Cassandra, once the other has been quiet for count_settles_after), then stops. A
    lone writer never asks twice."""
    crawler, clock = crawler_ids[0], FakeClock()
    store = two_stores()
    first, second = node(store, crawler), node(two_stores(), crawler, clock)
    second.offer(entries(crawler, range(0, 10)))
    assert second.items_collected == 10 and not second.waiting  # alone so far
    first.offer(entries(crawler, range(5, 15)))
    second.offer(entries(crawler, range(15, 20)))
    assert second.items_collected == 20 and second.waiting  # 15 of its own, 5 of the other's
    # its count read was its tally: it asks again only where the store has an overlap to mend
    assert first.waiting == store.count_unsettled(crawler)

    first.offer(entries(crawler, range(20, 25)))  # lands after the second's last write
    later = store.count_settles_after + RECOUNT_MARGIN
    clock.now += later
    second.retry()
    assert second.items_collected == 25 and second.waiting  # it moved: once more, later

    def settled() -> bool:
        clock.now += later
        second.retry()
        return not second.waiting

    wait_until(settled, what="the count to stand still and the overlap to be mended")
    assert second.items_collected == 25
