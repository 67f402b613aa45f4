"""Word blocks, the Cassandra store's index of items' words: what a block's rows hold, and
what a search reads back from them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from blackwidow.core.store.cassandra import word_blocks
from blackwidow.core.store.cassandra.rows import BLOCK_ITEMS, ROWS_PER_BATCH, even_chunks
from sources.model import Item

T0 = datetime(2024, 5, 1, 12, 0, 0, 123_456, tzinfo=UTC)


def item(item_id: str, seconds: int, title: str, text: str = "") -> Item:
    moment = T0 + timedelta(seconds=seconds)
    return Item(item_id, "rss", None, title, text, "Ann", None, moment, crawler_id=1)


def test_a_block_lists_its_keys_newest_first_and_where_each_word_is() -> None:
    items = [item("a", 0, "Quick fox"), item("b", 2, "Lazy dog"), item("c", 1, "fox, DOG")]
    at, block_id, rows = word_blocks.block(items)
    keys = word_blocks.keys(rows[word_blocks.KEYS_BUCKET])
    assert [item_id for _, item_id in keys] == ["b", "c", "a"]
    assert at == keys[0][0] == word_blocks.to_millis(T0 + timedelta(seconds=2))
    assert keys[0][0].microsecond == 123_000  # as Cassandra keeps it: milliseconds
    held = {w: word_blocks.positions(rows[word_blocks.bucket_of(w)], w) for w in ("fox", "dog")}
    assert held == {"fox": {1, 2}, "dog": {0, 1}}
    assert word_blocks.positions(rows[word_blocks.bucket_of("fo")], "fo") == set()  # no prefix
    assert len(rows) <= word_blocks.BUCKETS + 1
    assert word_blocks.block(reversed(items))[1] == block_id  # its id is its keys'


def test_a_block_of_other_items_has_another_id() -> None:
    items = [item("a", 0, "fox"), item("b", 1, "fox")]
    assert word_blocks.block(items)[1] != word_blocks.block(items[:1])[1]


@pytest.mark.parametrize(
    ("count", "sizes"),
    [(1, [1]), (47, [47]), (48, [24, 24]), (50, [25, 25]), (95, [32, 32, 31])],
)
def test_a_write_is_cut_into_even_blocks_that_fit_a_batch(count: int, sizes: list[int]) -> None:
    assert BLOCK_ITEMS + word_blocks.BUCKETS + 1 == ROWS_PER_BATCH
    assert [len(chunk) for chunk in even_chunks(list(range(count)), BLOCK_ITEMS)] == sizes
