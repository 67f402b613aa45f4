"""A subscriber's seen-set on a real store: reads skipped for new ids once it is trusted, never
before; ids another node wrote before the handover still refused; no item stored twice; and
time segments, where an item collected again in a new segment is a new version."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from blackwidow.core.store import Store, open_store
from sources.model import Item, SubscriberSpec
from spawn.output.sink import NodeSink
from spawn.pool.change_counter import ChangeCounter
from spawn.pool.seen_set import SeenSet
from spawn.pool.subscriber import Subscriber
from tests.component.test_store_contract import make_item, store_url  # noqa: F401

SETTLE = 60.0
HOUR = 3600


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:  # noqa: F811
    opened = open_store(store_url)
    yield opened
    opened.close()


class Clocks:
    """The node's monotonic clock and its wall clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 0.0
        self.now_at = datetime(2026, 11, 25, 14, 10, tzinfo=UTC)

    def tick(self) -> float:
        return self.now


def subscriber(
    store: Store, crawler_id: int, clocks: Clocks, recollect_after: int | None = None
) -> Subscriber:
    sink = NodeSink(store)
    spec = SubscriberSpec(crawler_id, 1, "rss", {"feeds": []}, recollect_after=recollect_after)
    seen = SeenSet(lambda: sink.stored_ids(crawler_id), SETTLE, clock=clocks.tick)
    return Subscriber(
        spec,
        sink,
        confirmed_at=0.0,
        changes=ChangeCounter(),
        on_failing=lambda _: None,
        clock=clocks.tick,
        now_at=lambda: clocks.now_at,
        seen=seen,
    )


def entries(*names: str) -> list[Item]:
    """Entries fetched later than the ones stored before: a second copy would be a second row."""
    return [make_item(name, None, seconds=100) for name in names]


def stored_ids(store: Store, crawler_id: int) -> list[str]:
    return sorted(item.id for item in store.items(crawler_id, 100))


def test_new_ids_skip_the_read_once_trusted_and_nothing_is_stored_twice(
    store: Store,
    store_url: str,  # noqa: F811
    crawler_ids: tuple[int, ...],
) -> None:
    one = crawler_ids[0]
    before = open_store(store_url)  # the node before the handover: a writer of its own
    before.add([make_item("a", one), make_item("b", one)])
    clocks = Clocks()
    taken = subscriber(store, one, clocks)
    assert taken.seen is not None
    taken.offer(entries("a", "c"))
    assert (taken.seen.trusted, taken.seen.vouched, taken.seen.asked) == (False, 0, 2)

    before.add([make_item("d", one)])  # its last write, after the attach
    before.close()
    clocks.now = SETTLE
    taken.offer(entries("b", "d", "e", "f"))  # loaded now: d is known, e and f are not
    assert (taken.seen.trusted, taken.seen.vouched, taken.seen.asked) == (True, 2, 4)
    taken.offer(entries("e", "a", "g"))  # known ids are a "maybe": the store refuses them
    assert (taken.seen.vouched, taken.seen.asked) == (3, 6)
    assert stored_ids(store, one) == ["a", "b", "c", "d", "e", "f", "g"]  # each once
    assert store.count(one) == 7


def test_without_a_seen_set_every_id_is_asked_and_the_result_is_the_same(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one = crawler_ids[0]
    store.add([make_item("a", one)])
    taken = subscriber(store, one, Clocks())
    taken.seen = None
    taken.offer(entries("a", "b"))
    taken.offer(entries("b", "c"))
    assert stored_ids(store, one) == ["a", "b", "c"] and store.count(one) == 3


def test_an_item_is_collected_again_as_a_new_version_in_the_next_segment(
    store: Store, crawler_ids: tuple[int, ...]
) -> None:
    one = crawler_ids[0]
    clocks = Clocks()
    taken = subscriber(store, one, clocks, recollect_after=HOUR)
    clocks.now = SETTLE  # trusted from the first write
    assert taken.seen is not None
    taken.offer(entries("a", "b"))
    clocks.now_at += timedelta(minutes=40)  # 14:50, the same segment
    taken.offer(entries("a", "b"))
    assert stored_ids(store, one) == ["a@2026-11-25T14:00:00Z", "b@2026-11-25T14:00:00Z"]
    clocks.now_at += timedelta(minutes=20)  # 15:10: the next segment
    taken.offer(entries("a", "c"))
    assert stored_ids(store, one) == [
        "a@2026-11-25T14:00:00Z",
        "a@2026-11-25T15:00:00Z",
        "b@2026-11-25T14:00:00Z",
        "c@2026-11-25T15:00:00Z",
    ]
    assert store.count(one) == taken.items_collected == 4
    # the new segment's ids were vouched new; the repeats in the first one were asked
    assert (taken.seen.vouched, taken.seen.asked) == (4, 2)
