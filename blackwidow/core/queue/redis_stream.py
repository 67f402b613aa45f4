"""Redis Streams queue: one capped stream per crawler, `blackwidow:items:<crawler_id>`.

Consumers read it with consumer groups (XREADGROUP) and decode entries with
`blackwidow.core.queue.entries.item_from_entry`. An entry may arrive twice (at least once),
so they dedupe on (crawler_id, id).
"""

from __future__ import annotations

from collections.abc import Sequence

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from blackwidow.core.queue.base import QueueError, require_crawler_ids
from blackwidow.core.queue.entries import entry_fields, stream_key
from sources.model import Item

SOCKET_TIMEOUT = 2.0  # seconds to connect, and to wait for a reply: an outage fails fast
RECONNECTS = 1  # one immediate retry on a fresh connection, for a pooled socket gone stale
_ERROR_CHARS = 300  # a pipeline error quotes its command, which may hold a whole item


class RedisStreamQueue:
    """An ItemQueue on Redis Streams, trimmed with `XADD ... MAXLEN ~ maxlen` per crawler.

    Retrying is the caller's job (the outbox backs off); redis-py's own retries are cut to
    one reconnect so a push against a dead server fails within seconds.
    """

    def __init__(self, url: str, maxlen: int) -> None:
        self._maxlen = maxlen
        self._redis = redis.Redis.from_url(
            url,
            socket_timeout=SOCKET_TIMEOUT,
            socket_connect_timeout=SOCKET_TIMEOUT,
            retry=Retry(NoBackoff(), RECONNECTS),
        )
        self._password = self._redis.get_connection_kwargs().get("password")

    def push(self, items: Sequence[Item]) -> None:
        """XADD every item in one non-transactional pipeline: one round trip, in order."""
        require_crawler_ids(items)
        if not items:
            return
        with self._redis.pipeline(transaction=False) as pipeline:
            for item in items:
                pipeline.xadd(
                    stream_key(item.crawler_id),
                    entry_fields(item),
                    maxlen=self._maxlen,
                    approximate=True,
                )
            try:
                pipeline.execute()
            except redis.RedisError as error:
                raise QueueError(self._describe(error)) from error

    def ping(self) -> bool:
        """True when Redis answers; health endpoints report False, never raise."""
        try:
            return bool(self._redis.ping())
        except redis.RedisError:
            return False

    def close(self) -> None:
        self._redis.close()

    def _describe(self, error: redis.RedisError) -> str:
        """A short message for logs and stats, with the password blanked should it appear."""
        message = f"redis push failed: {type(error).__name__}: {error}"
        if self._password:
            message = message.replace(self._password, "***")
        if len(message) > _ERROR_CHARS:
            message = message[: _ERROR_CHARS - 1] + "…"
        return message
