"""A node's own state: its pool, whether it is registered, and when the hub last polled it.

Timers read `time.monotonic()`; nothing here survives a restart, by design (nodes are
stateless: the hub pushes everything again).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from blackwidow.node_protocol import Cursor, Shard
from sources.pool import DataSourcePool
from spawn.report import ChangeLog

log = logging.getLogger(__name__)


class Node:
    def __init__(
        self,
        pool: DataSourcePool,
        clock: Callable[[], float],
        health: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        self.pool = pool
        self.clock = clock
        self.health = health  # what the node's sink says of its store and queue
        self.node_id: int | None = None
        self.generation: int | None = None  # the hub's fencing number for this registration
        self.last_polled_at = clock()
        self._lock = threading.Lock()
        self.registered = threading.Event()
        self._reports: dict[Shard, ChangeLog] = {}  # one change log per polling shard
        self._report_lock = threading.Lock()
        self._epochs: dict[Shard, int] = {}  # the newest leader epoch heard, per shard

    def mark_registered(self, node_id: int, generation: int) -> None:
        with self._lock:
            self.node_id = node_id
            self.generation = generation
            self._epochs.clear()  # a new registration may be with a hub of another database
            self.last_polled_at = self.clock()  # detach_after counts from registration
        self.registered.set()
        log.info("node registered node=%s generation=%s", node_id, generation)

    def polled(self, assigned: Iterable[int]) -> None:
        """A poll from the hub: the node is attached, and these subscribers are still wanted."""
        now = self.clock()
        with self._lock:
            self.last_polled_at = now
        self.pool.confirm(assigned, now)

    def answer_poll(
        self, shard: Shard, since: Cursor | None, assigned: Iterable[int] | None = None
    ) -> dict[str, Any]:
        """A poll from one monitor shard: what changed in its subscribers and data sources
        since `since`. The poll confirms every subscriber of the shard (the hub wants what it
        does not remove, and a shard whose leader stops polling leaves orphans behind), or
        only those `assigned` when the hub names them."""
        with self._report_lock:
            log = self._reports.setdefault(shard, ChangeLog())
            statuses = self.pool.statuses(shard.owns)
            sources = self.pool.data_sources(shard.owns)
            current = {("s", s["crawler_id"]): s for s in statuses}
            current.update({("d", d["key"]): d for d in sources})
            answer = log.report(current, since)
        confirmed = [s["crawler_id"] for s in statuses] if assigned is None else assigned
        self.polled(confirmed)
        return {
            "cursor": str(answer.cursor),
            "full": answer.full,
            "subscribers": [v for v in answer.changed if "crawler_id" in v],
            "data_sources": [v for v in answer.changed if "crawler_id" not in v],
            "removed": [key[1] for key in answer.removed if key[0] == "s"],
            "removed_data_sources": [key[1] for key in answer.removed if key[0] == "d"],
            "totals": {"subscribers": len(statuses), "data_sources": len(sources)},
        }

    def admit_epoch(self, shard: Shard, epoch: int) -> bool:
        """Whether a call from a leader of this epoch may act: a leader that lost its lock
        (an older epoch than one heard already) is refused."""
        with self._lock:
            newest = self._epochs.get(shard, epoch)
            if epoch < newest:
                return False
            self._epochs[shard] = epoch
            return True

    def silent_for(self) -> float:
        with self._lock:
            return self.clock() - self.last_polled_at

    def detach(self, reason: str) -> None:
        """Drop every subscriber, then register again: the hub is gone, or wrote us off."""
        log.warning("node detached node=%s reason=%s", self.node_id, reason)
        with self._lock:
            self.generation = None
        self.registered.clear()
        self.pool.clear()
