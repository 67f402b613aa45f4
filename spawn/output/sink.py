"""The node's item sink: the store, with the queue's entries spooled around each write.

Subscribers see one `add`; this is where a store or queue outage becomes an error they hold
items for (and, once their buffer is full, backpressure on the data sources). The writes of
subscribers delivering at once reach the store together (spawn.output.group_commit). A store
outage is one line for the node however many subscribers retry through it, and one when it
answers again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

from blackwidow.core.outages import Outage
from blackwidow.core.store import Store, StoreUnavailable, Write
from sources.model import Item
from spawn.metrics import NodeMetrics
from spawn.output.group_commit import GroupCommit
from spawn.output.queue_outbox import QueueOutbox

_T = TypeVar("_T")

PROBE_EVERY = 1.0  # seconds between asks of a store whose last call failed, when none retries

log = logging.getLogger(__name__)


class QueueBacklogFull(Exception):
    """The queue has not taken earlier items yet; new ones wait rather than pile up."""


class NodeSink:
    def __init__(
        self,
        store: Store,
        outbox: QueueOutbox | None = None,
        metrics: NodeMetrics | None = None,
        outbox_due: bool = False,
    ) -> None:
        self._store = store
        self._commits = GroupCommit(store.add_many)
        self._outbox = outbox
        # a queue is configured, its outbox not open yet (`attach`): nothing is stored meanwhile
        self._outbox_due = outbox_due
        self._metrics = metrics
        self._store_error: str | None = None
        self._outage = Outage(log, "store")
        self._probe_at = 0.0  # when `probe` may ask the store next

    def add(
        self,
        items: Sequence[Item],
        ttl: int | None = None,
        id_ttl: int | None = None,
        unseen: Collection[tuple[int, str]] = (),
    ) -> list[Item]:
        """Store items and queue the new ones; refuses up front while the queue is backed up.

        With a queue, the entries are spooled before the store is asked and settled after it
        answers, so no item is stored without its entry on disk, whenever the node dies.
        """
        if self._outbox is None:
            if self._outbox_due:
                raise QueueBacklogFull("queue: the outbox opens once the node knows its cluster")
            return self._write(items, ttl, id_ttl, unseen)
        if not self._outbox.has_room():
            pending = self._outbox.stats()["pending"]
            raise QueueBacklogFull(f"queue: {pending} stored items wait for the queue")
        self.replay_interrupted()
        staged = self._outbox.stage(items, ttl)
        try:
            new = self._write(items, ttl, id_ttl, unseen)
        except BaseException:
            self._outbox.discard(staged)
            raise
        self._outbox.settle(staged, new)
        return new

    def attach(self, outbox: QueueOutbox) -> None:
        """Put the queue's outbox in front of the store: opened once the node knows its
        cluster, whose spool it is on (spawn.output.opening)."""
        self._outbox = outbox

    def replay_interrupted(self) -> None:
        """Finish the writes a killed node process spooled but never saw answered (at start,
        and before each add until the store answers): StoreUnavailable while it is down."""
        if self._outbox is not None:
            self._outbox.replay_interrupted(self._write)

    def _write(
        self,
        items: Sequence[Item],
        ttl: int | None,
        id_ttl: int | None = None,
        unseen: Collection[tuple[int, str]] = (),
    ) -> list[Item]:
        """One store write, carried with those of other callers writing now, timed (its wait
        included) and counted for the node's figures. A replayed write (`replay_interrupted`)
        reads every id, as no seen-set vouches for it."""
        started = time.monotonic()
        new = self._tracked(lambda: self._commits.add(Write(items, ttl, id_ttl, unseen)))
        if self._metrics is not None:
            self._metrics.stored(new, time.monotonic() - started)
        return new

    def count(self, crawler_id: int) -> int:
        return self._tracked(lambda: self._store.count(crawler_id))

    def recount(self, crawler_id: int) -> int:
        """The store's count read again after a write went in: a second opinion on the
        count, so its failure says nothing of whether writes go in and leaves `health` as
        the write left it (nothing would retry it to clear a degraded node)."""
        return self._store.count(crawler_id)

    @property
    def count_settles_after(self) -> float:
        return self._store.count_settles_after

    def count_unsettled(self, crawler_id: int) -> bool:
        return self._store.count_unsettled(crawler_id)

    def stored_ids(self, crawler_id: int) -> list[str]:
        """The crawler's stored ids, for its seen-set (read whole: a filter is built of them)."""
        return self._tracked(lambda: list(self._store.stored_ids(crawler_id)))

    def _tracked(self, call: Callable[[], _T]) -> _T:
        """Run a store call, remembering whether the store answered (for `health`)."""
        try:
            result = call()
        except StoreUnavailable as error:
            self._store_error = str(error)
            self._outage.failed(error)
            raise
        self._store_error = None
        self._outage.answered()
        return result

    def probe(self) -> None:
        """While the last store call failed and nothing retries one (the subscribers that
        wrote are gone), ask the store whether it answers, at most once every PROBE_EVERY:
        health would otherwise say `degraded` until the next crawler's first write."""
        now = time.monotonic()
        if self._store_error is None or now < self._probe_at:
            return
        self._probe_at = now + PROBE_EVERY
        if self._store.ping():
            self._store_error = None
            self._outage.answered()

    def health(self) -> dict[str, Any]:
        """The store as the last write saw it, and the queue's backlog (None without a queue)."""
        return {
            "store": {"ok": self._store_error is None, "error": self._store_error},
            "queue": self._outbox.stats() if self._outbox is not None else None,
        }
