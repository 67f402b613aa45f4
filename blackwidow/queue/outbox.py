"""The outbox: a bounded, retrying buffer between items newly stored and the item queue.

A stored item must never lose its queue entry silently, so nothing here drops items: a failed
push is counted and retried with backoff, in order. `has_room` is the node's backpressure
signal: while it is False the node stops taking items from its sources.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any

from blackwidow.queue.base import ItemQueue, QueueError, require_crawler_ids
from sources.backoff import doubling_delay
from sources.model import Item

BATCH = 500  # pending items sent per round trip while catching up


class Outbox:
    """Pushes at once on the caller's thread while all is well; once a push fails, later items
    wait behind the failed ones and a background thread retries them, oldest first.

    Only one push is in flight at a time, so items reach the queue in the order `put` took them.
    """

    def __init__(self, queue: ItemQueue, capacity: int) -> None:
        self._queue = queue
        self._capacity = capacity
        self._lock = threading.Lock()
        self._pending: deque[Item] = deque()
        self._pushing = False
        self._failures_in_a_row = 0
        self._pushed = 0
        self._failed_pushes = 0
        self._last_error: str | None = None
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def put(self, items: Sequence[Item]) -> None:
        """Push items now when nothing waits ahead of them, else queue them behind what does.

        Items are kept even past capacity; the caller checks `has_room` before taking more.
        """
        require_crawler_ids(items)
        if not items:
            return
        with self._lock:
            if self._pushing or self._pending:
                self._pending.extend(items)
                self._wake.set()
                return
            self._pushing = True
        self._push(list(items), queued=False)

    def has_room(self) -> bool:
        with self._lock:
            return len(self._pending) < self._capacity

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "pushed": self._pushed,
                "pending": len(self._pending),
                "failed_pushes": self._failed_pushes,
                "last_error": self._last_error,
            }

    def start(self) -> None:
        """Start retrying pending items in the background."""
        self._thread = threading.Thread(target=self._run, name="queue-outbox", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the background thread, then make one last attempt to flush what is pending."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self._flush()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                delay = doubling_delay(self._failures_in_a_row)
            if self._stopping.wait(delay):
                return
            if not self._flush():
                self._wake.set()  # go round again, after the next, longer delay

    def _flush(self) -> bool:
        """Push pending items, a batch per round trip, until none are left or a push fails.

        Returns False only on failure; while another push is in flight it leaves the pending
        items to that push's owner, who wakes this thread when done.
        """
        while True:
            with self._lock:
                if self._pushing or not self._pending:
                    return True
                self._pushing = True
                batch = list(itertools.islice(self._pending, BATCH))
            if not self._push(batch, queued=True):
                return False

    def _push(self, batch: list[Item], queued: bool) -> bool:
        """One push; `queued` batches are the head of the pending list, removed once sent."""
        try:
            self._queue.push(batch)
        except QueueError as error:
            with self._lock:
                self._pushing = False
                self._failures_in_a_row += 1
                self._failed_pushes += 1
                self._last_error = str(error)
                if not queued:
                    self._pending.extendleft(reversed(batch))
            self._wake.set()
            return False
        with self._lock:
            self._pushing = False
            self._failures_in_a_row = 0
            self._pushed += len(batch)
            if queued:
                for _ in batch:
                    self._pending.popleft()
            if self._pending:
                self._wake.set()
        return True
