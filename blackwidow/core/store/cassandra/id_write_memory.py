"""A Cassandra writer's memory of its own id writes: what it counted, what went unanswered.

Pure: the Cassandra store reads items_by_id, asks this which items are new, and writes the
confirms and totals it gives. Two rules make a write exact when replies are lost:

- An id row this writer wrote for a call that raised is its own: the caller's retry gets the
  item reported as new, as the lost answer would have (the row alone cannot tell a retry
  from a re-delivery of an item reported already; this memory can).
- A confirm batch carries every confirm of this writer in that bucket not yet acknowledged,
  with the writer's total there, in one mutation: whichever of its batches lands last, the
  total counts exactly the ids it confirmed, and a writer that dies leaves no id uncounted.
"""

from __future__ import annotations

import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from blackwidow.core.store.threads import Key

Bucket = tuple[int, int]  # (crawler_id, bucket of items_by_id)
UNANSWERED_KEPT = 100_000  # items remembered from calls that raised; the oldest are forgotten


@dataclass(frozen=True)
class IdRow:
    """An items_by_id row as read: the item's conversation and first fetch, who confirmed it,
    and whether its item's rows may still be missing (`pending`)."""

    conversation_id: str | None
    fetched_at: datetime | None
    writer: uuid.UUID | None
    pending: bool


class IdWriteMemory:
    """One store instance's ledger; thread-safe. Calls for one crawler must not overlap (the
    store holds a lock per crawler), calls for different crawlers may."""

    def __init__(
        self,
        writer: uuid.UUID,
        bucket_of: Callable[[Key], Bucket],
        kept: int = UNANSWERED_KEPT,
    ) -> None:
        self.writer = writer
        self._bucket_of = bucket_of
        self._kept = kept
        self._lock = threading.Lock()
        self._totals: dict[Bucket, int] = defaultdict(int)
        self._unacked: dict[Bucket, set[str]] = defaultdict(set)
        self._unanswered: dict[Key, bool] = {}  # the item's key -> counted in _totals yet

    def unacked(self, crawler_ids: Iterable[int]) -> set[Key]:
        """Items whose confirm is unacknowledged, to read back with the next write's ids."""
        wanted = set(crawler_ids)
        with self._lock:
            return {
                (bucket[0], item_id)
                for bucket, item_ids in self._unacked.items()
                if bucket[0] in wanted
                for item_id in item_ids
            }

    def new_keys(self, keys: Iterable[Key], found: Mapping[Key, IdRow]) -> set[Key]:
        """Which of these items are new: no id row, a pending one (nobody finished and counted
        it), or this writer's own row for a call that raised. Rows confirmed by another writer
        take back this writer's claim to them first."""
        with self._lock:
            for key, row in found.items():
                self._settle(key, row)
            return {key for key in keys if self._is_new(key, found.get(key))}

    def _is_new(self, key: Key, row: IdRow | None) -> bool:
        if row is None or row.pending:
            return True
        return row.writer == self.writer and key in self._unanswered

    def _settle(self, key: Key, row: IdRow) -> None:
        if row.pending:
            return
        bucket = self._bucket_of(key)
        if row.writer != self.writer and self._unanswered.pop(key, False):
            self._totals[bucket] -= 1  # another writer confirmed it after ours was lost
        self._drop_unacked(bucket, [key[1]])  # confirmed: by us (it landed) or by the other

    def begin(self, keys: Iterable[Key]) -> None:
        """A call is about to write these items as new: unanswered until `answered`."""
        with self._lock:
            for key in keys:
                self._unanswered.setdefault(key, False)
            while len(self._unanswered) > self._kept:
                del self._unanswered[next(iter(self._unanswered))]

    def confirm(self, bucket: Bucket, item_ids: Iterable[str]) -> tuple[list[str], int]:
        """What one bucket's confirm batch carries: these ids, each counted once however often
        it is retried, with every unacknowledged confirm there; and the total to write."""
        with self._lock:
            for item_id in item_ids:
                key = (bucket[0], item_id)
                if not self._unanswered.get(key, False):
                    self._unanswered[key] = True
                    self._totals[bucket] += 1
                self._unacked[bucket].add(item_id)
            return sorted(self._unacked[bucket]), self._totals[bucket]

    def acked(self, bucket: Bucket, item_ids: Iterable[str]) -> None:
        """Cassandra acknowledged a confirm batch: its ids are confirmed and counted."""
        with self._lock:
            self._drop_unacked(bucket, item_ids)

    def _drop_unacked(self, bucket: Bucket, item_ids: Iterable[str]) -> None:
        waiting = self._unacked.get(bucket)
        if waiting is not None:
            waiting.difference_update(item_ids)
            if not waiting:
                del self._unacked[bucket]

    def answered(self, keys: Iterable[Key]) -> None:
        """A call returned: its caller knows which of these items were new."""
        with self._lock:
            for key in keys:
                self._unanswered.pop(key, None)
