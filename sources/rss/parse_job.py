"""A feed's parse run in one of the node's worker processes (sources.fetch.workers).

What crosses to the worker is the document and the ids the feed had last time; what comes
back is the entries' ids in document order and only the items not known before. The worker
never extracts a known entry again (parse_feed's `known`), and the node keeps its own copy
of each known item, so an item is the same object, with the same fetched_at, whichever
process parsed the document it came back in.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import NamedTuple

from sources.fetch.workers import WorkerLost, WorkerProcesses
from sources.model import Item
from sources.rss.parse import FeedError, ParsedFeed, parse_feed
from sources.url_keys import UrlKeys


class _WorkerParse(NamedTuple):
    ids: list[str]  # every entry's id, in the document's order
    new: list[Item]  # the items of the ids not known before
    ttl: float | None
    title: str | None


def parse_elsewhere(
    workers: WorkerProcesses,
    body: bytes,
    feed_url: str,
    fetched_at: datetime,
    headers: Mapping[str, str],
    known: Mapping[str, Item],
    keys: UrlKeys,
) -> ParsedFeed:
    """parse_feed's answer, computed in a worker process. A worker that dies under the parse
    (hostile input found a crash) makes it this feed's FeedError, like any unreadable feed."""
    try:
        parsed = workers.run(
            _parse_in_worker, body, feed_url, fetched_at, dict(headers), list(known), keys
        )
    except WorkerLost as error:
        raise FeedError(f"parser failed ({error})") from error
    new = {item.id: item for item in parsed.new}
    items = [known.get(item_id) or new[item_id] for item_id in parsed.ids]
    return ParsedFeed(items, parsed.ttl, parsed.title)


def _parse_in_worker(
    body: bytes,
    feed_url: str,
    fetched_at: datetime,
    headers: dict[str, str],
    known_ids: Collection[str],
    keys: UrlKeys,
) -> _WorkerParse:
    """The worker's side: known entries stand in as placeholders, which parse_feed returns as
    they are, so only the new items are extracted and sent back."""
    placeholders = {item_id: _placeholder(item_id, fetched_at) for item_id in known_ids}
    parsed = parse_feed(body, feed_url, fetched_at, headers, placeholders, keys)
    new = [item for item in parsed.items if placeholders.get(item.id) is not item]
    return _WorkerParse([item.id for item in parsed.items], new, parsed.ttl, parsed.title)


def _placeholder(item_id: str, fetched_at: datetime) -> Item:
    return Item(item_id, "rss", None, None, None, None, None, fetched_at)
