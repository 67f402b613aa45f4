"""Time segments (seed 004): an item collected in one segment may be collected again in a
later one, stored as a new version beside the first.

Pure. Segments are fixed windows of a crawler's `recollect_after` seconds aligned on the Unix
epoch, so every node, and a node after a restart, puts an instant in the same segment without
agreeing on anything. A version is stored under the id `<item id>@<segment start>`: the
store's (crawler, id) key then keeps one copy per segment with no change to any store, and
the id rows that answer "stored already?" need only live for two segments (`id_ttl`): an id
of a segment that has passed is never written again.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta

from sources.model import Item

MIN_RECOLLECT_AFTER = 3600  # seconds: an hour at least, or a feed's every poll is a version
MAX_RECOLLECT_AFTER = 315_360_000  # ten years: id rows live two segments, Cassandra's TTL 20
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_VERSION = re.compile(r"@(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)\Z")


def segment_start(at: datetime, length: int) -> datetime:
    """The start of the segment of `length` seconds that holds the instant `at`."""
    elapsed = int((at - _EPOCH).total_seconds())
    return _EPOCH + timedelta(seconds=elapsed - elapsed % length)


def version_text(start: datetime) -> str:
    """A segment start as ids carry it: to the second, in UTC, with a Z."""
    return start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def versioned(item: Item, length: int, now_at: datetime) -> Item:
    """The item as collected in the segment of `now_at`: its id names the segment, and an
    item a data source fetched in an earlier segment (kept from its feed's last document)
    counts as fetched now, so the new version sorts with what this segment collected."""
    start = segment_start(now_at, length)
    fetched_at = item.fetched_at if item.fetched_at >= start else now_at
    return dataclasses.replace(item, id=f"{item.id}@{version_text(start)}", fetched_at=fetched_at)


def version_of(stored_id: str) -> datetime | None:
    """The segment start a stored id names; None for an id stored without segments."""
    found = _VERSION.search(stored_id)
    if found is None:
        return None
    return datetime.strptime(found.group(1), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def id_ttl(length: int | None) -> int | None:
    """How long an id row must answer "stored already?": its own segment and the next, the
    one in which a node with a late clock or a held item may still offer it."""
    return None if length is None else 2 * length
