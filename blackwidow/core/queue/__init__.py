"""The optional queue of newly stored items: `open_queue` turns BLACKWIDOW_REDIS_URL into one.

The Redis client is imported only when a URL names a queue.
"""

from __future__ import annotations

from blackwidow.core.queue.base import ItemQueue, QueueError
from blackwidow.core.queue.entries import entry_fields, item_from_entry, stream_key

__all__ = [
    "ItemQueue",
    "QueueError",
    "entry_fields",
    "item_from_entry",
    "open_queue",
    "stream_key",
]

_ACCEPTED = "redis://[[user]:password@]host:port/db, rediss://... (TLS) or unix:///path?db=N"


def open_queue(url: str | None, maxlen: int) -> ItemQueue | None:
    """The queue a URL names, or None when there is none; a bad URL raises ValueError naming
    BLACKWIDOW_REDIS_URL without echoing it, since it may carry a password.

    Opening does not connect: a node starts while Redis is down, and its outbox holds the
    items until Redis is back.
    """
    if url is None:
        return None
    from blackwidow.core.queue.redis_stream import RedisStreamQueue

    try:
        return RedisStreamQueue(url, maxlen)
    except ValueError:
        raise ValueError(f"BLACKWIDOW_REDIS_URL: not a Redis URL; use {_ACCEPTED}") from None
