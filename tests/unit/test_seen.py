"""The seen-set's decisions: when it is trusted, what it vouches for, segments and sizing."""

from __future__ import annotations

from spawn.pool.seen_set import MIN_CAPACITY, SeenSet

S1, S2, S3 = "@2026-11-25T13:00:00Z", "@2026-11-25T14:00:00Z", "@2026-11-25T15:00:00Z"


class Store:
    """The ids a store lists, and how often the seen-set read them."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        self.reads = 0

    def read(self) -> list[str]:
        self.reads += 1
        return list(self.ids)


class DownStore(Store):
    """A store whose reads fail once it is down."""

    down = False

    def read(self) -> list[str]:
        if self.down:
            raise ConnectionError("no host available")
        return super().read()


def trusted(ids: list[str]) -> tuple[SeenSet, Store]:
    store = Store(ids)
    seen = SeenSet(store.read, settle_after=0.0, clock=lambda: 0.0)
    return seen, store


def test_nothing_is_vouched_for_before_the_settle_time_and_the_store_is_not_read() -> None:
    now = [0.0]
    store = Store(["a"])
    seen = SeenSet(store.read, settle_after=30.0, clock=lambda: now[0])
    assert seen.unseen(["a", "b"]) == set() and store.reads == 0
    seen.stored(["b"])
    now[0] = 30.0
    assert seen.unseen(["a", "b", "c"]) == {"b", "c"}  # b: the store did not list it yet
    assert (seen.vouched, seen.asked, store.reads) == (2, 3, 1)


def test_ids_stored_after_the_load_are_known() -> None:
    seen, _ = trusted(["a"])
    assert seen.unseen(["a", "b"]) == {"b"}
    seen.stored(["b"])
    assert seen.unseen(["a", "b", "c"]) == {"c"}


def test_each_segment_has_its_filter_and_a_dropped_one_asks_the_store() -> None:
    seen, _ = trusted(["x" + S1])
    assert seen.unseen(["x" + S1, "x" + S2]) == {"x" + S2}
    seen.stored(["x" + S2])
    seen.stored(["x" + S3])  # a third segment: S1's filter goes
    assert seen.unseen(["x" + S1, "y" + S1, "x" + S3, "y" + S3]) == {"y" + S3}


def test_a_full_filter_is_loaded_again_at_twice_the_size() -> None:
    ids = [f"id-{n}" for n in range(MIN_CAPACITY * 3 // 2)]
    seen, store = trusted([])
    seen.unseen(["first"])
    store.ids = ids
    seen.stored(ids[: MIN_CAPACITY // 2])
    seen.stored(ids[: MIN_CAPACITY // 2])  # known ids again: no nearer full
    assert store.reads == 1
    seen.stored(ids)
    assert store.reads == 2
    assert seen.unseen([*ids[:10], "new"]) == {"new"}


def test_a_filter_that_cannot_be_loaded_again_leaves_its_segment_to_the_store() -> None:
    """The write before it stored: it must not fail, and no id of it may be vouched for."""
    ids = [f"id-{n}" for n in range(MIN_CAPACITY * 3 // 2)]
    store = DownStore([])
    seen = SeenSet(store.read, settle_after=0.0, clock=lambda: 0.0)
    seen.unseen(["first"])
    store.down = True
    seen.stored(ids)  # fills the filter past its capacity part way
    assert seen.unseen([*ids, "new"]) == set()
