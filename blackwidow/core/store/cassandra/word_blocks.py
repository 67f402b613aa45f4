"""Word blocks, the Cassandra store's index of items' words for search: what a block's rows
hold, and reading them back. No I/O.

A block is the items of one write in one (crawler, day) partition (a batch's worth), kept as
a few text rows of `word_blocks`, in that partition: one row of the items' keys, newest first
(bucket KEYS_BUCKET), and the block's words spread over BUCKETS rows by a stable hash of the
word, a line each: the word, a space, and the positions (in the keys) of the items holding it.
So a write adds at most BUCKETS + 1 rows per batch of items rather than a row or an index
entry per word and item (bench/search_write_tax.py), and a search reads, for each word, one
bucket row of every block of a partition.

A block's id is a digest of its keys: a retry that writes the same items writes the same rows,
and one that writes fewer (some found stored) writes another block, never half of one.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import zlib
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from blackwidow.core.store.windows import words

BUCKETS = 16  # rows a block's words are spread over
KEYS_BUCKET = -1  # the row of a block's keys
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Key = tuple[datetime, str]  # an item's clustering key in its partition: fetched_at, item id


def item_words(item: Any) -> set[str]:
    """What search finds an item by (an Item, or a row with its fields): the words of its
    title, text and author, as blackwidow.core.store.windows.words cuts a query."""
    return set(words(" ".join(filter(None, (item.title, item.text, item.author)))))


def bucket_of(word: str) -> int:
    """Stable across processes (crc32, never hash()): writers and readers agree."""
    return zlib.crc32(word.encode()) % BUCKETS


def key_of(item: Any) -> Key:
    """fetched_at as Cassandra keeps it (milliseconds, UTC), and the id: of an Item, or of a
    row of items_by_crawler."""
    return to_millis(item.fetched_at), item.item_id if hasattr(item, "item_id") else item.id


def to_millis(moment: datetime) -> datetime:
    """A moment cut to whole milliseconds, as the driver writes a timestamp; naive is UTC."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).replace(microsecond=aware.microsecond // 1000 * 1000)


def millis(moment: datetime) -> int:
    aware = to_millis(moment)
    return calendar.timegm(aware.utctimetuple()) * 1000 + aware.microsecond // 1000


def from_millis(value: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=value)


def block(items: Iterable[Any]) -> tuple[datetime, str, dict[int, str]]:
    """A block of items (Items, or rows with their fields): the newest item's fetched_at, the
    block's id, and the text of each of its rows by bucket."""
    by_key = {key_of(item): item for item in items}
    keys = sorted(by_key, reverse=True)
    held: dict[str, list[str]] = defaultdict(list)
    for position, key in enumerate(keys):
        mark = str(position)
        for word in item_words(by_key[key]):
            held[word].append(mark)
    lines: dict[int, list[str]] = defaultdict(list)
    for word, positions in held.items():  # the hot loop of a write with search on: inlined
        lines[zlib.crc32(word.encode()) % BUCKETS].append(word + " " + ",".join(positions))
    listed = json.dumps([[millis(at), item_id] for at, item_id in keys], ensure_ascii=False)
    rows = {bucket: "\n".join(text) for bucket, text in lines.items()}
    rows[KEYS_BUCKET] = listed
    return keys[0][0], hashlib.sha1(listed.encode()).hexdigest()[:20], rows


def positions(postings: str, word: str) -> set[int]:
    """The positions of the items holding `word`, from the text of its bucket's row."""
    text = "\n" + postings
    at = text.find(f"\n{word} ")
    if at < 0:
        return set()
    start = at + len(word) + 2
    end = text.find("\n", start)
    return {int(p) for p in text[start : end if end >= 0 else None].split(",")}


def keys(listed: str) -> list[Key]:
    """A block's keys, newest first, from the text of its KEYS_BUCKET row."""
    return [(from_millis(at), item_id) for at, item_id in json.loads(listed)]
