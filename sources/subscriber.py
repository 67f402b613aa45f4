"""A subscriber: one crawler running on a node, taking items from its shared data source.

It filters by its own keywords and stores at most up to its ceiling — the lower of the
crawler's item limit and the user-budget lease — so limits hold exactly, item by item.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from sources.filters import keyword_matcher, matches
from sources.model import Item, SubscriberSpec

log = logging.getLogger(__name__)

MAX_HELD_ITEMS = 5000


class ItemSink(Protocol):
    """The part of a store a subscriber needs (blackwidow.store.Store fits)."""

    def add(self, items: Sequence[Item]) -> int: ...

    def count(self, crawler_id: int) -> int: ...


class Subscriber:
    def __init__(self, spec: SubscriberSpec, sink: ItemSink, confirmed_at: float) -> None:
        self._lock = threading.Lock()
        self._sink = sink
        self._held: deque[Item] = deque(maxlen=MAX_HELD_ITEMS)
        self.items_collected = sink.count(spec.crawler_id)
        self.last_error: str | None = None
        self.source_error: str | None = None
        self.confirmed_at = confirmed_at
        self._apply(spec)

    def _apply(self, spec: SubscriberSpec) -> None:
        self.spec = spec
        self.digest = spec.digest()
        self._pattern = keyword_matcher(spec.query.get("keywords", ()))

    def update(self, spec: SubscriberSpec) -> None:
        """Take a changed spec in place: the count, the held items and the source stay."""
        with self._lock:
            self._apply(spec)
            self._store_held()

    def offer(self, items: Sequence[Item]) -> None:
        """Consider items from the data source: keep the matching ones, store what fits."""
        wanted = [i.for_crawler(self.spec.crawler_id) for i in items if matches(self._pattern, i)]
        if not wanted:
            return
        with self._lock:
            self._held.extend(wanted)
            self._store_held()

    def _room(self) -> int | None:
        ceiling = self.spec.ceiling
        return None if ceiling is None else max(0, ceiling - self.items_collected)

    def _store_held(self) -> None:
        """Store held items up to the ceiling; keep the rest while a bigger lease may come.

        Items beyond the crawler's own limit are dropped: they can never be stored.
        """
        while self._held:
            room = self._room()
            if room == 0:
                break
            batch = list(itertools.islice(self._held, room))
            try:
                self.items_collected += self._sink.add(batch)
            except Exception as error:  # the store is down: keep the items, say so, retry later
                self.last_error = f"store: {error}"
                log.warning("store write failed crawler=%s error=%s", self.spec.crawler_id, error)
                return
            self.last_error = None
            for _ in batch:
                self._held.popleft()
        if self.state == "limit_reached":
            self._held.clear()

    @property
    def state(self) -> str:
        limit = self.spec.item_limit
        if limit is not None and self.items_collected >= limit:
            return "limit_reached"
        return "waiting" if self._room() == 0 else "running"

    @property
    def lease(self) -> int | None:
        """The lease in force: a lease lowered below what is stored already counts as the count."""
        lease = self.spec.lease
        return None if lease is None else max(lease, self.items_collected)

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {
                "crawler_id": self.spec.crawler_id,
                "digest": self.digest,
                "state": self.state,
                "items_collected": self.items_collected,
                "lease": self.lease,
                "held": len(self._held),
                "last_error": self.last_error or self.source_error,
            }
