"""A node's own state: its pool, whether it is registered, and when the hub last polled it.

Timers read `time.monotonic()`; nothing here survives a restart, by design (nodes are
stateless: the hub pushes everything again).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from sources.pool import DataSourcePool

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

    def mark_registered(self, node_id: int, generation: int) -> None:
        with self._lock:
            self.node_id = node_id
            self.generation = generation
            self.last_polled_at = self.clock()  # detach_after counts from registration
        self.registered.set()
        log.info("node registered node=%s generation=%s", node_id, generation)

    def polled(self, assigned: Iterable[int]) -> None:
        """A poll from the hub: the node is attached, and these subscribers are still wanted."""
        now = self.clock()
        with self._lock:
            self.last_polled_at = now
        self.pool.confirm(assigned, now)

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
