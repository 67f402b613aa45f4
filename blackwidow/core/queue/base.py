"""The ItemQueue protocol: where a node announces the items it newly stored.

A queue delivers at least once: a push retried after a lost reply may add an entry twice, so
consumers dedupe on (crawler_id, id).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sources.model import Item


class QueueError(Exception):
    """The queue did not take a push; the caller keeps the items and retries.

    The message is safe to log: it never carries the queue URL's password.
    """


class ItemQueue(Protocol):
    def push(self, items: Sequence[Item]) -> None:
        """Append items in order, in one round trip; raise QueueError when the queue is down.

        Every item must carry a crawler_id (ValueError otherwise). After a QueueError some
        items may have been added all the same; pushing them again is safe for deduping readers.
        """
        ...

    def ping(self) -> bool:
        """True when the queue answers; used by health endpoints."""
        ...

    def close(self) -> None: ...


def require_crawler_ids(items: Sequence[Item]) -> None:
    """Entries are filed by crawler, so an item without one is a caller's bug: refuse it early,
    before it can wait in a buffer and fail every retry."""
    if any(item.crawler_id is None for item in items):
        raise ValueError("every item needs a crawler_id before it is queued")
