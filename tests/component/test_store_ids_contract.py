"""The Store contract for what dedup needs of every back end: a crawler's stored ids streamed
for a node's seen-set, versions of one item side by side, ids that expire after two time
segments, and the writes whose ids the caller vouches are new. Run against every store, as
test_store_contract is (its fixtures)."""

from __future__ import annotations

from datetime import UTC, datetime

from blackwidow.core.store import Store
from sources.segments import versioned
from tests.component.test_store_contract import ids, make_item, store, store_url  # noqa: F401
from tests.support import wait_until

WEEK = 7 * 86400


def test_stored_ids_streams_every_id_of_the_crawler_past_a_batch(
    store: Store,  # noqa: F811
    crawler_ids: tuple[int, ...],
) -> None:
    one, two, _ = crawler_ids
    written = [f"id-{n:05}" for n in range(1203)]  # past STREAM_BATCH and every id bucket
    for start in range(0, len(written), 400):
        store.add([make_item(item_id, one) for item_id in written[start : start + 400]])
    store.add([make_item("other", two)])
    assert sorted(store.stored_ids(one)) == written
    assert list(store.stored_ids(two)) == ["other"]
    assert list(store.stored_ids(crawler_ids[2])) == []


def test_versions_of_one_item_are_stored_side_by_side(
    store: Store,  # noqa: F811
    crawler_ids: tuple[int, ...],
) -> None:
    one = crawler_ids[0]
    first_week = datetime(2026, 11, 20, tzinfo=UTC)
    next_week = datetime(2026, 11, 27, tzinfo=UTC)
    first = versioned(make_item("guid", one), WEEK, first_week)
    again = versioned(make_item("guid", one), WEEK, first_week.replace(day=25))
    later = versioned(make_item("guid", one), WEEK, next_week)
    assert ids(store.add([first], id_ttl=2 * WEEK)) == ["guid@2026-11-19T00:00:00Z"]
    assert store.add([again], id_ttl=2 * WEEK) == []  # the same segment: the same version
    assert ids(store.add([later], id_ttl=2 * WEEK)) == ["guid@2026-11-26T00:00:00Z"]
    assert store.count(one) == 2
    assert sorted(ids(store.items(one, 10))) == [first.id, later.id]


def test_ids_expire_from_stored_ids_but_items_stay_and_count(
    store: Store,  # noqa: F811
    crawler_ids: tuple[int, ...],
) -> None:
    one = crawler_ids[0]
    store.add([make_item("brief@2026-11-19T00:00:00Z", one)], id_ttl=1)
    store.add([make_item("kept", one)])
    wait_until(lambda: list(store.stored_ids(one)) == ["kept"], timeout=15, what="id expiry")
    assert sorted(ids(store.items(one, 10))) == ["brief@2026-11-19T00:00:00Z", "kept"]
    assert store.count(one) == 2


def test_ids_vouched_new_are_stored_once_and_a_known_id_is_still_refused(
    store: Store,  # noqa: F811
    crawler_ids: tuple[int, ...],
) -> None:
    one = crawler_ids[0]
    batch = [make_item("a", one), make_item("b", one)]
    assert ids(store.add(batch, unseen={(one, "a"), (one, "b")})) == ["a", "b"]
    assert store.add(batch) == []  # asked: both are known
    assert ids(store.add([make_item("a", one), make_item("c", one)], unseen={(one, "c")})) == ["c"]
    assert store.count(one) == 3
    assert sorted(ids(store.items(one, 10))) == ["a", "b", "c"]
