"""A subscriber: one crawler running on a node, taking items from its shared data source.

It filters by its own keywords and stores at most up to its ceiling — the lower of the
crawler's item limit and the user-budget lease — so limits hold exactly, item by item. A
ceiling counts only while the hub's polls renew it (spawn.pool.renewals): a node cut off from
the hub holds its items instead of storing under a limit or budget the hub may have handed to
another node with the crawler.

With time segments (sources.segments), each item it takes is the version of the segment it is
taken in; with a seen-set (spawn.pool.seen_set), the ids it knows are new skip the store's read.

When the store (or the queue behind it) does not answer, it keeps what it was given in a
bounded buffer and retries with backoff; once the buffer is full, `offer` blocks, so the data
source stops taking items (backpressure) and nothing it handed over is dropped.

Its count is the store's, read after each write, not a tally of its own writes: another node
writing the crawler at once (a move's overlap, a node cut off from the hub) adds items it did
not count, or counts one it counted too. Where the store's count is not its tally, it asks
again once the store has mended such an overlap (blackwidow.core.store.cassandra.overlaps),
until the count stands still; a lone writer's count is read once a write.

Each change to its status is numbered by the pool's change counter (spawn.pool.change_counter), so a
poll of the node reports only the subscribers that changed since the last one.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from sources.backoff import Backoff
from sources.filters import keyword_matcher, matches
from sources.model import Item, SubscriberSpec
from sources.segments import id_ttl, versioned
from spawn.pool.change_counter import ChangeCounter
from spawn.pool.seen_set import SeenSet

log = logging.getLogger(__name__)

BUFFER_ITEMS = 5000  # items held per subscriber while the store is down or the lease is spent
DAY_SECONDS = 86400
STORE_RETRY = Backoff(first=0.2, cap=10.0)  # seconds between writes to a store that fails
# seconds a removal waits for a write in progress to end, for its count: within the hub's
# wait for the removal's answer (at least 1 s, blackwidow.monitor.loop)
FINAL_WAIT = 0.75
# seconds past the store's count_settles_after that a second count follows a write whose
# count was not the node's tally: another node's write in flight then has landed
RECOUNT_MARGIN = 2.0


class ItemSink(Protocol):
    """The part of the node's sink a subscriber needs (spawn.output.sink.NodeSink)."""

    def add(
        self,
        items: Sequence[Item],
        ttl: int | None = None,
        id_ttl: int | None = None,
        unseen: Collection[tuple[int, str]] = (),
    ) -> list[Item]: ...

    def stored_ids(self, crawler_id: int) -> Iterable[str]: ...

    def count(self, crawler_id: int) -> int: ...

    def recount(self, crawler_id: int) -> int: ...

    @property
    def count_settles_after(self) -> float: ...

    def count_unsettled(self, crawler_id: int) -> bool: ...


class Subscriber:
    def __init__(
        self,
        spec: SubscriberSpec,
        sink: ItemSink,
        confirmed_at: float,
        changes: ChangeCounter,
        on_failing: Callable[[Subscriber], None],
        buffer: int = BUFFER_ITEMS,
        clock: Callable[[], float] = time.monotonic,
        lease_in_force: Callable[[], bool] = lambda: True,
        now_at: Callable[[], datetime] = lambda: datetime.now(UTC),
        seen: SeenSet | None = None,
    ) -> None:
        self._cond = threading.Condition()
        self._sink = sink
        self._buffer = buffer
        self._clock = clock
        self._now_at = now_at  # wall clock: which time segment an item is collected in
        self.seen = seen  # None: every id is asked of the store
        self._changes = changes
        self._on_failing = on_failing  # told when a write must wait, so retries need no scan
        self._lease_in_force = lease_in_force
        self.stamp = 0
        self._held: deque[Item] = deque()
        self._closed = False
        self._failing = False
        self._failures = 0
        self._retry_at = 0.0
        self._recount_at: float | None = None  # when to ask the store's count again
        self.run = uuid.uuid4().hex  # this subscriber's life on this node, for billing counts
        self.delivered = 0  # items the provider delivered to it in this run, before any filter
        self.items_collected: int | None = None  # None until the store has told us
        self.dropped = 0
        self.last_error: str | None = None
        self._source_error: str | None = None
        self._source_failing = False
        self.confirmed_at = confirmed_at
        self.want(spec)
        self._apply(spec)

    def load_count(self) -> None:
        """Ask the store how many items the crawler has (once). A store query: the pool calls
        it outside its own lock and off the push's request (spawn.pool.joins), so a slow store
        holds up neither every other subscriber nor the hub's push."""
        with self._cond:
            if self.items_collected is None and self._load_count():
                self._changed()

    def _take_wanted(self) -> None:
        """The spec noted by `want` in place, if it is not yet (lock held)."""
        if self.wanted is not self.spec:
            self._apply(self.wanted)

    def _apply(self, spec: SubscriberSpec) -> None:
        self.spec = spec
        self.digest = spec.digest()
        self._pattern = keyword_matcher(spec.query.get("keywords", ()))
        days = spec.retention_days
        self._ttl = days * DAY_SECONDS if days else None
        self._id_ttl = id_ttl(spec.recollect_after)
        self._changed()

    def _changed(self) -> None:
        """Number a change to the status; called after the change is made."""
        self._changes.mark(self)

    def source_trouble(self, error: str | None, failing: bool) -> None:
        """The data source's trouble as it concerns this subscriber (the pool tells it): its
        error, and whether the source gets nothing at all."""
        if (error, failing) != (self._source_error, self._source_failing):
            self._source_error, self._source_failing = error, failing
            self._changed()

    def want(self, spec: SubscriberSpec) -> None:
        """Note the spec to run next; `update` applies the latest one noted. Never waits: the
        pool notes it under its own lock, which a store write must not hold up."""
        self.wanted, self.wanted_digest = spec, spec.digest()

    def update(self) -> None:
        """Take the latest wanted spec in place (the count, the held items and the source
        stay) now, unless a store write holds the subscriber: never waits and never writes,
        so a push answers in its own time. The node's write timer (`retry`) puts it in place
        after such a write, and stores the held items a bigger lease makes room for."""
        if not self._cond.acquire(blocking=False):
            self._on_failing(self)
            return
        try:
            self._take_wanted()
            if self._held:
                self._on_failing(self)
        finally:
            self._cond.release()

    def offer(self, items: Sequence[Item], block: bool = True) -> bool:
        """Take items from the data source: keep the matching ones, store what fits.

        Blocks while the store is failing and the buffer is full; returns once the items
        are held (or the subscriber is closed). Without `block`, returns False at once,
        taking nothing, where it would block.
        """
        wanted = [i.for_crawler(self.spec.crawler_id) for i in items if matches(self._pattern, i)]
        length = self.spec.recollect_after
        if length is not None and wanted:
            now_at = self._now_at()
            wanted = [versioned(item, length, now_at) for item in wanted]
        with self._cond:
            if not block and self._full():
                return False
            self.delivered += len(items)
            self._changed()
            if not wanted:
                return True
            while self._full():
                self._cond.wait(timeout=max(0.01, self._retry_at - self._clock()))
                self._retry_due()
            if self._closed:
                return True
            self._held.extend(wanted)
            self._retry_due()
            self._drop_beyond_buffer()
            return True

    def _full(self) -> bool:
        """A failing store and a full buffer: what is offered must wait (lock held)."""
        return self._failing and len(self._held) >= self._buffer and not self._closed

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def failing(self) -> bool:
        """Whether a store write failed and waits for its retry (read without the lock)."""
        return self._failing

    @property
    def waiting(self) -> bool:
        """Whether something waits for the timer: held items' retry (a failed write, or a
        lease the hub has not renewed in time), or a second count (read without the lock)."""
        held = self._failing or (bool(self._held) and self._lease_lapsed())
        return held or self._recount_at is not None or self.wanted is not self.spec

    def retry(self) -> None:
        """Put a pushed spec in place that a write held up, then retry a failed write once its
        backoff has passed, or store held items once the lease is renewed or grown (the node
        calls this on a timer)."""
        with self._cond:
            self._take_wanted()
            if self._failing or self._held:
                self._retry_due()
            if self._recount_at is not None and self._clock() >= self._recount_at:
                self._recount_on_timer()

    def close(self) -> None:
        """The subscriber is gone: release a source blocked in `offer`. Never waits for a
        store write in progress (the pool closes subscribers under its lock): that write
        notifies the waiting sources itself when it ends, and they see the subscriber closed."""
        self._closed = True
        if self._cond.acquire(blocking=False):
            try:
                self._cond.notify_all()
            finally:
                self._cond.release()

    def _retry_due(self) -> None:
        if not self._failing or self._clock() >= self._retry_at:
            self._store_held()

    def _load_count(self) -> bool:
        if self.items_collected is None:
            try:
                self.items_collected = self._sink.count(self.spec.crawler_id)
            except Exception as error:  # the store is down: hold items until it answers
                self._failed(error)
                return False
        return True

    def _recount(self) -> None:
        """Take the store's count in place of the tally after a write (lock held). Where they
        differ, or the store has yet to mend two writers' overlap, another node writes the
        crawler too: ask again on the timer."""
        if self._count_may_move(self.items_collected) and self._recount_at is None:
            self._count_later()

    def _recount_on_timer(self) -> None:
        """The count again once the store can have mended what two writers wrote at once; on
        until it is mended and stands still."""
        before = self.items_collected
        if not self._count_may_move(before):
            self._recount_at = None
            return
        self._count_later()
        if self.items_collected != before:
            self._changed()

    def _count_may_move(self, expected: int | None) -> bool:
        """Read the store's count: whether it may move yet, being unread, not `expected`, or
        holding an overlap the store will mend."""
        read = self._read_count()
        return read != expected or self._sink.count_unsettled(self.spec.crawler_id)

    def _count_later(self) -> None:
        self._recount_at = self._clock() + self._sink.count_settles_after + RECOUNT_MARGIN
        self._on_failing(self)

    def _read_count(self) -> int | None:
        """The store's count, now the subscriber's; None when the store did not answer (the
        tally stands: counted as written)."""
        try:
            self.items_collected = self._sink.recount(self.spec.crawler_id)
        except Exception as error:
            log.debug("count after a write failed crawler=%s error=%s", self.spec.crawler_id, error)
            return None
        return self.items_collected

    def final_count(self) -> int | None:
        """The count once a write in progress has ended (the store's, read after that write),
        for a removal's answer, with no store call of its own: a removal of many crawlers
        answers within the hub's wait. None when that write holds on past FINAL_WAIT."""
        if not self._cond.acquire(timeout=FINAL_WAIT):
            log.info("removed during a write crawler=%s count=unknown", self.spec.crawler_id)
            return None
        try:
            return self.items_collected
        finally:
            self._cond.release()

    def _lease_lapsed(self) -> bool:
        """A bounded crawler stores only while the hub renews the node's leases: the hub runs
        it elsewhere once they would have lapsed. An unbounded one stores on: ids make a second
        node's copies of its items the same items."""
        return self.spec.ceiling is not None and not self._lease_in_force()

    def _room(self) -> int | None:
        ceiling = self.spec.ceiling
        if ceiling is None or self.items_collected is None:
            return None
        if self._lease_lapsed():  # checked before every write: the hub may re-grant it soon
            return 0
        return max(0, ceiling - self.items_collected)

    def _store_held(self) -> None:
        """Store held items up to the ceiling; keep the rest while a bigger lease may come.

        Items beyond the crawler's own limit are dropped: they can never be stored.
        """
        if not self._load_count():
            return
        assert self.items_collected is not None
        wrote = False
        while self._held:
            room = self._room()
            if room == 0:
                break
            batch = list(itertools.islice(self._held, room))
            try:
                stored = self._write(batch)
            except Exception as error:  # the store is down: keep the items, say so, retry later
                self._failed(error)
                return
            self._recovered()
            self.items_collected += len(stored)
            wrote = True
            for _ in batch:
                self._held.popleft()
        if wrote:
            self._recount()
        if self.state == "limit_reached":
            self._held.clear()
        elif self._held and self._lease_lapsed():
            self._on_failing(self)  # stored once a poll renews the lease, without new items
        self._changed()
        self._cond.notify_all()

    def _write(self, batch: list[Item]) -> list[Item]:
        """One store write; with a seen-set, the ids it vouches are new skip the store's read.
        Every id of the batch goes into the filter, even when the write fails part way: an id
        in it only makes its next write ask the store, which is always safe."""
        if self.seen is None:
            return self._sink.add(batch, self._ttl, self._id_ttl)
        ids = [item.id for item in batch]
        crawler_id = self.spec.crawler_id
        unseen = {(crawler_id, item_id) for item_id in self.seen.unseen(ids)}
        try:
            return self._sink.add(batch, self._ttl, self._id_ttl, unseen)
        finally:
            self.seen.stored(ids)

    def _drop_beyond_buffer(self) -> None:
        """A crawler waiting for a bigger lease keeps only its newest items (the store is fine)."""
        excess = len(self._held) - self._buffer
        if excess > 0 and not self._failing:
            for _ in range(excess):
                self._held.popleft()
            self.dropped += excess
            self._changed()

    def _failed(self, error: Exception) -> None:
        if not self._failing:  # the node's one line for the outage is its sink's
            log.debug("store write failed crawler=%s error=%s", self.spec.crawler_id, error)
        self._failing = True
        self._failures += 1
        self._retry_at = self._clock() + STORE_RETRY.delay(self._failures)
        self.last_error = f"store: {error}"
        self._changed()
        self._on_failing(self)
        self._cond.notify_all()  # a source waiting in `offer` looks again: closed meanwhile?

    def _recovered(self) -> None:
        if self._failing:
            log.debug("store writes resumed crawler=%s", self.spec.crawler_id)
        self._failing = False
        self._failures = 0
        self.last_error = None

    @property
    def state(self) -> str:
        limit = self.spec.item_limit
        count = self.items_collected
        if limit is not None and count is not None and count >= limit:
            return "limit_reached"
        return "waiting" if count is None or self._room() == 0 else "running"

    @property
    def held(self) -> int:
        """Items waiting to be stored (read without the lock, like `status`)."""
        return len(self._held)

    @property
    def lease(self) -> int | None:
        """The lease in force: a lease lowered below what is stored already counts as the count."""
        lease = self.spec.lease
        return None if lease is None else max(lease, self.items_collected or 0)

    def status(self) -> dict[str, Any]:
        """A lock-free snapshot: a poll must answer even while a slow write holds the lock."""
        return {
            "crawler_id": self.spec.crawler_id,
            "digest": self.digest,
            "run": self.run,
            "delivered": self.delivered,
            "state": self.state,
            "items_collected": self.items_collected,
            "lease": self.lease,
            "held": self.held,
            "dropped": self.dropped,
            "last_error": self.last_error or self._source_error,
            "failing": self._source_failing,
        }


class WaitingSubscribers:
    """The subscribers whose held items wait for a retry (a failed store write, or a lease
    the hub has not renewed), so that retries cost those, not every subscriber."""

    def __init__(self) -> None:
        self._subscribers: set[Subscriber] = set()
        self._lock = threading.Lock()  # taken inside a subscriber's, never around one

    def add(self, subscriber: Subscriber) -> None:
        with self._lock:
            self._subscribers.add(subscriber)

    def discard(self, subscriber: Subscriber) -> None:
        with self._lock:
            self._subscribers.discard(subscriber)

    def clear(self) -> None:
        with self._lock:
            self._subscribers.clear()

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._subscribers)

    def retry(self) -> None:
        """Give each its due retry; those no longer waiting leave the set."""
        with self._lock:
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            subscriber.retry()
            with self._lock:
                if not subscriber.waiting:  # it marks itself waiting before it asks back in
                    self._subscribers.discard(subscriber)
