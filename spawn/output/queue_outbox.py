"""The outbox: a bounded, retrying, durable spool between the store and the item queue.

A stored item must never lose its queue entry, silently or by a crash, so nothing here drops
items: every entry is written to the node's spool file before the store is asked, kept until
Redis acknowledged it (XADD returned), and a failed push is counted and retried with backoff,
in order. `has_room` is the node's backpressure signal: while it is False the node stops
taking items from its sources. A queue outage is one line, and one when it takes entries again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from blackwidow.core.outages import Outage
from blackwidow.core.queue.base import ItemQueue, QueueError, require_crawler_ids
from sources.backoff import Backoff
from sources.model import Item
from spawn.output.spool import Spool, SpooledEntry

log = logging.getLogger(__name__)

BATCH = 500  # waiting entries sent per round trip while catching up
PUSH_RETRY = Backoff(first=0.2, cap=10.0)  # seconds between pushes to a queue that fails


@dataclass(frozen=True)
class Staged:
    """Entries written before a store write: the store's answer decides which are kept."""

    seqs: list[int]
    items: list[Item]
    ttl: int | None = None


class QueueOutbox:
    """Pushes at once on the caller's thread while all is well; once a push fails, later
    entries wait behind the failed ones and a background thread retries them, oldest first.

    Only one push is in flight at a time, so each caller's items reach the queue in order.
    Opened on a spool a killed process left behind, it pushes what that process had stored
    (`start`), and keeps what it spooled before its store answered for `replay_interrupted`.
    """

    def __init__(self, queue: ItemQueue, spool: Spool, capacity: int) -> None:
        self._queue = queue
        self._spool = spool
        self._capacity = capacity
        self._lock = threading.Lock()
        self._entries, self._waiting = spool.counts()  # waiting: stored, not being pushed
        self._interrupted = _runs_by_ttl(spool.unsettled())
        self._replaying = threading.Lock()
        self._pushing = False
        self._failures_in_a_row = 0
        self._pushed = 0
        self._failed_pushes = 0
        self._last_error: str | None = None
        self._outage = Outage(log, "queue")
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def stage(self, items: Sequence[Item], ttl: int | None) -> Staged:
        """Spool entries for items about to be stored, before the store is asked."""
        require_crawler_ids(items)
        with self._lock:
            seqs = self._spool.add(items, ttl, stored=False)
            self._entries += len(seqs)
        return Staged(seqs, list(items), ttl)

    def settle(self, staged: Staged, new: Sequence[Item]) -> None:
        """The store answered: keep the entries of the items it took as new, queue them."""
        unclaimed = {(item.crawler_id, item.id) for item in new}
        kept: list[tuple[int, Item]] = []
        dropped: list[int] = []
        for seq, item in zip(staged.seqs, staged.items, strict=True):
            if (item.crawler_id, item.id) in unclaimed:
                unclaimed.discard((item.crawler_id, item.id))
                kept.append((seq, item))
            else:
                dropped.append(seq)
        with self._lock:
            self._spool.settle([seq for seq, _ in kept], dropped)
            self._entries -= len(dropped)
            direct = self._claim(len(kept))
        if direct:
            self._push([SpooledEntry(seq, item, None) for seq, item in kept], waiting=False)

    def discard(self, staged: Staged) -> None:
        """The store write failed: its items are not stored, so their entries go."""
        with self._lock:
            self._spool.remove(staged.seqs)
            self._entries -= len(staged.seqs)

    def put(self, items: Sequence[Item]) -> None:
        """Queue items already stored: push now when nothing waits ahead of them, else spool
        them behind what does. Kept even past capacity; callers check `has_room` first."""
        require_crawler_ids(items)
        with self._lock:
            seqs = self._spool.add(items, None, stored=True)
            self._entries += len(seqs)
            direct = self._claim(len(seqs))
        if direct:
            self._push([SpooledEntry(*pair, None) for pair in zip(seqs, items, strict=True)], False)

    def replay_interrupted(self, write: Callable[[Sequence[Item], int | None], object]) -> None:
        """Finish the store writes a killed process left unanswered, then queue those items.

        Whether each item was new to that write is lost with the process, so all are queued:
        a consumer may see an item twice (it dedupes on crawler_id and id), never miss one.
        `write` raising (the store is down) leaves them for a later call.
        """
        with self._replaying:
            while self._interrupted:
                staged = self._interrupted[0]
                write(staged.items, staged.ttl)
                self.settle(staged, staged.items)
                self._interrupted.pop(0)

    def has_room(self) -> bool:
        with self._lock:
            return self._entries < self._capacity

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "pushed": self._pushed,
                "pending": self._waiting,
                "failed_pushes": self._failed_pushes,
                "last_error": self._last_error,
            }

    def start(self) -> None:
        """Start retrying waiting entries in the background, those of a past process first."""
        self._thread = threading.Thread(target=self._run, name="queue-outbox", daemon=True)
        self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        """Stop the background thread, make one last attempt to push what waits, and close
        the spool (what is left in it waits for the next process on this spool)."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self._flush()
        self._spool.close()

    def _claim(self, count: int) -> bool:
        """With the lock held, for `count` entries just stored: True when the caller pushes
        them now; else they wait behind the entries already waiting or in flight."""
        if not count:
            return False
        if self._pushing or self._waiting:
            self._waiting += count
            self._wake.set()
            return False
        self._pushing = True
        return True

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                delay = PUSH_RETRY.delay(self._failures_in_a_row)
            if self._stopping.wait(delay):
                return
            if not self._flush():
                self._wake.set()  # go round again, after the next, longer delay

    def _flush(self) -> bool:
        """Push waiting entries, a batch per round trip, until none are left or a push fails.

        Returns False only on failure; while another push is in flight it leaves the waiting
        entries to that push's owner, who wakes this thread when done.
        """
        while True:
            with self._lock:
                if self._pushing or not self._waiting:
                    return True
                self._pushing = True
                batch = self._spool.head(BATCH)
            if not self._push(batch, waiting=True):
                return False

    def _push(self, batch: list[SpooledEntry], waiting: bool) -> bool:
        """One push; a `waiting` batch was counted as waiting, a direct one was not."""
        try:
            self._queue.push([entry.item for entry in batch])
        except QueueError as error:
            self._outage.failed(error)
            with self._lock:
                self._pushing = False
                self._failures_in_a_row += 1
                self._failed_pushes += 1
                self._last_error = str(error)
                if not waiting:
                    self._waiting += len(batch)
            self._wake.set()
            return False
        self._outage.answered()
        self._spool.remove([entry.seq for entry in batch])  # Redis has them: XADD returned
        with self._lock:
            self._pushing = False
            self._failures_in_a_row = 0
            self._pushed += len(batch)
            self._entries -= len(batch)
            if waiting:
                self._waiting -= len(batch)
            if self._waiting:
                self._wake.set()
        return True


def _runs_by_ttl(entries: list[SpooledEntry]) -> list[Staged]:
    """Consecutive entries of one retention, as the store writes them: one ttl per call."""
    runs = []
    for ttl, run in groupby(entries, key=lambda entry: entry.ttl):
        group = list(run)
        runs.append(Staged([e.seq for e in group], [e.item for e in group], ttl))
    return runs
