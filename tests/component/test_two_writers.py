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
from spawn.pool.subscriber import Subscriber


def entries(crawler_id: int, numbers: range) -> list[Item]:
    at = datetime.now(UTC)
    return [
        Item(f"entry/{n}", "rss", None, None, None, None, None, at, crawler_id=crawler_id)
        for n in numbers
    ]


def node(store: Any, crawler_id: int) -> Subscriber:
    spec = SubscriberSpec(crawler_id, 1, "rss", {"feeds": []})
    return Subscriber(spec, NodeSink(store), 0.0, ChangeCounter(), on_failing=lambda _: None)


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
            store = open_store(request.getfixturevalue("cassandra_store_url"))
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
