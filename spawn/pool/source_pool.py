"""The pool: a node's map of source key -> data source and crawler id -> subscriber.

A data source starts with its first subscriber and stops with its last, so every crawler
asking for the same thing on a node shares one fetch or one connection. What changed since a
poll's cursor is told by change numbers (spawn.pool.change_counter), so a poll costs what changed. A
stopped data source's final deliveries are reported until a poll acknowledges them, so what
a provider billed is counted even when the hub could not poll in time (a node cut off); each
delivered batch's counts go to a run ledger (spawn.pool.run_counts), so that a killed node's
successor at its address can report them too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable
from datetime import UTC, datetime
from typing import Any

from sources.keys import source_key
from sources.model import DataSource, Item, ReportsFeeds, SubscriberSpec
from sources.observer import UNOBSERVED, SourceObserver
from spawn.pool.change_counter import ChangeCounter, Changes, gone_after
from spawn.pool.departures import Departures
from spawn.pool.joins import Joins
from spawn.pool.recollection import SegmentTimers
from spawn.pool.renewals import Renewals
from spawn.pool.run_counts import NO_LEDGER, RunCounts, RunLedger
from spawn.pool.seen_set import SeenSet
from spawn.pool.shared_source import PoolSink, SharedSource, described
from spawn.pool.subscriber import BUFFER_ITEMS, ItemSink, Subscriber, WaitingSubscribers

log = logging.getLogger(__name__)

OpenSource = Callable[[str, SubscriberSpec], DataSource]
KeyFilter = Callable[[str], bool] | None  # picks data sources by source key


class DataSourcePool:
    def __init__(
        self,
        open_source: OpenSource,
        sink: ItemSink,
        buffer: int = BUFFER_ITEMS,
        renewals: Renewals | None = None,
        ledger: RunLedger = NO_LEDGER,
        observer: SourceObserver = UNOBSERVED,
        seen_after: float | None = None,
        now_at: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        # a subscriber's seen-set is trusted this long after it attaches (spawn.pool.seen_set);
        # None: no seen-set, every id is asked of the store
        self._seen_after = seen_after
        self.observer = observer  # told of every batch its data sources deliver
        self._open_source = open_source
        self.ledger = ledger  # each delivered batch's counts, for a successor to report
        # when leases are in force; None: always (a pool no hub polls, as in a bench)
        self.renewals = renewals
        self._sink = sink
        self._buffer = buffer
        self._lock = threading.RLock()
        self._sources: dict[str, SharedSource] = {}
        self._segments = SegmentTimers()  # subscribers' next segments (recollect_after)
        self._now_at = now_at  # the wall clock time segments follow
        self._subscribers: dict[int, tuple[str, Subscriber]] = {}
        self._waiting = WaitingSubscribers()
        self.changes_of = ChangeCounter()
        self._departed = Departures()  # stopped runs' final counts, for the polls
        self.started = 0  # subscribers created so far; an update in place does not count
        self._joins = Joins()  # new subscribers' first store work, off the push's request

    def put(self, spec: SubscriberSpec, now: float) -> dict[str, Any]:
        """Create or update a subscriber. The same spec twice changes nothing."""
        key = source_key(spec.source, spec.query, spec.credential_owner)
        to_stop: list[DataSource] = []
        updated = False
        with self._lock:
            current = self._subscribers.get(spec.crawler_id)
            if current and current[0] == key:
                subscriber = current[1]
                subscriber.confirmed_at = now
                updated = subscriber.wanted_digest != spec.digest()
                if updated:
                    if spec.recollect_after != subscriber.wanted.recollect_after:
                        self._plan_segment(spec)
                    subscriber.want(spec)  # applied below, outside the lock: it may wait
                    to_stop += self._reopen_for(self._sources[key], key, spec)
                    self._sources[key].source.attach(spec)  # e.g. new terms: new rules
                status = None if updated else subscriber.status()
            else:
                if current:  # a new query means a new data source; the subscriber's count stays
                    to_stop += self._detach(spec.crawler_id)
                subscriber = Subscriber(
                    spec,
                    self._sink,
                    confirmed_at=now,
                    changes=self.changes_of,
                    on_failing=self._waiting.add,
                    buffer=self._buffer,
                    lease_in_force=self._lease_in_force(key),
                    seen=self._seen_set(spec.crawler_id),
                    now_at=self._now_at,
                )
                self.started += 1
                self._plan_segment(spec)
                shared, started = self._attach(key, spec, subscriber, to_stop)
                status = None
        self._stop_all(to_stop)
        if status is not None:
            return status
        if updated:  # outside the lock; never waits for a store write (Subscriber.update)
            subscriber.update()
            return subscriber.status()
        snapshot = None if started else shared.source.snapshot()
        self._joins.submit(lambda: _join(subscriber, snapshot))
        return subscriber.status()

    def _plan_segment(self, spec: SubscriberSpec) -> None:
        if spec.recollect_after is not None:
            self._segments.plan(spec.crawler_id, spec.recollect_after, self._now_at())

    def recollect_due(self) -> None:
        """Offer each subscriber whose next time segment has begun its data source's current
        items again (spawn.pool.recollection), to be collected as the new segment's versions.
        A subscriber whose store is failing with a full buffer is asked again next time."""
        now_at = self._now_at()
        with self._lock:
            due = []
            for crawler_id, length in self._segments.due(now_at):
                entry = self._subscribers.get(crawler_id)
                if entry is not None and entry[1].spec.recollect_after == length:
                    due.append((entry[1], self._sources[entry[0]].source))
        for subscriber, source in due:
            spec = subscriber.spec
            if spec.recollect_after is None:
                continue
            taken = subscriber.offer(source.snapshot(), block=False)
            with self._lock:
                if taken:
                    self._segments.plan(spec.crawler_id, spec.recollect_after, now_at)
                else:
                    self._segments.retry(spec.crawler_id, spec.recollect_after, now_at)

    def _seen_set(self, crawler_id: int) -> SeenSet | None:
        if self._seen_after is None:
            return None
        sink = self._sink
        return SeenSet(lambda: sink.stored_ids(crawler_id), self._seen_after)

    def _lease_in_force(self, key: str) -> Callable[[], bool]:
        renewals = self.renewals
        return (lambda: True) if renewals is None else (lambda: renewals.in_force(key))

    def _attach(
        self, key: str, spec: SubscriberSpec, subscriber: Subscriber, to_stop: list[DataSource]
    ) -> tuple[SharedSource, bool]:
        shared = self._sources.get(key)
        started = shared is None
        if shared is None:
            shared = SharedSource(
                source=self._open_source(key, spec),
                source_type=spec.source,
                credential=spec.credential,
            )
            self._sources[key] = shared
        else:
            to_stop += self._reopen_for(shared, key, spec)
        shared.crawler_ids.add(spec.crawler_id)
        self.changes_of.mark(shared)
        subscriber.source_trouble(shared.error, shared.failing)
        self._subscribers[spec.crawler_id] = (key, subscriber)
        shared.source.attach(spec)
        if started:
            shared.source.start(PoolSink(self, key, shared))
            log.info("data source started key=%s source=%s", key, spec.source)
        return shared, started

    def _reopen_for(self, shared: SharedSource, key: str, spec: SubscriberSpec) -> list[DataSource]:
        """A user who replaced a stored credential (a rotated token) gets a data source that
        connects with the new one; every subscriber of the key moves to it. Returns the old
        source, to stop outside the lock."""
        if spec.credential is None or spec.credential == shared.credential:
            return []
        old = shared.source
        shared.source = self._open_source(key, spec)
        shared.credential = spec.credential
        for crawler_id in shared.crawler_ids:
            if crawler_id != spec.crawler_id:
                shared.source.attach(self._subscribers[crawler_id][1].spec)
        shared.source.start(PoolSink(self, key, shared))
        log.info("data source reopened with a replaced credential key=%s", key)
        return [old]

    def members(self, shared: SharedSource, to: Collection[int] | None) -> list[Subscriber]:
        """The subscribers of a data source, or those of them it names."""
        with self._lock:
            wanted = shared.crawler_ids if to is None else shared.crawler_ids.intersection(to)
            return [self._subscribers[c][1] for c in wanted if c in self._subscribers]

    def delete(self, crawler_id: int) -> bool:
        """Remove a subscriber (idempotent); True when there was one."""
        return self.remove(crawler_id)[0]

    def remove(self, crawler_id: int) -> tuple[bool, int | None]:
        """Remove a subscriber (idempotent): whether there was one, and its final count, the
        store's once its last write ended (None: unknown), for the hub to show. A crawler
        moved is pushed elsewhere only after this, so its next node counts that write."""
        with self._lock:
            entry = self._subscribers.get(crawler_id)
            to_stop = self._detach(crawler_id)
        self._stop_all(to_stop)
        if entry is None:
            return False, None
        return True, entry[1].final_count()

    def _detach(self, crawler_id: int) -> list[DataSource]:
        """Unlink a subscriber; return its data source when it was the last one using it."""
        entry = self._subscribers.pop(crawler_id, None)
        if entry is None:
            return []
        key, subscriber = entry
        subscriber.close()
        self._departed.subscriber(key, subscriber, self.changes_of)
        self._waiting.discard(subscriber)
        self.changes_of.removed(key, crawler_id)
        shared = self._sources[key]
        shared.crawler_ids.discard(crawler_id)
        shared.crawler_errors.pop(crawler_id, None)
        shared.source.detach(crawler_id)
        if shared.crawler_ids:
            self.changes_of.mark(shared)
            return []
        del self._sources[key]
        self.changes_of.removed(key)
        self._departed.source(key, shared, self.changes_of)
        log.info("data source stopped key=%s", key)
        return [shared.source]

    def restore_departed(self, left: Iterable[RunCounts]) -> None:
        """Report the runs a killed predecessor left in the ledger as stopped ones, until a
        poll applies them (the hub adds only what it had not heard of each run)."""
        with self._lock:
            for counts in left:
                self._departed.restore(counts, self.changes_of)

    @staticmethod
    def _stop_all(sources: Iterable[DataSource]) -> None:
        for source in sources:
            source.stop()

    def confirm(self, crawler_ids: Iterable[int], now: float) -> None:
        """The hub says these subscribers are still wanted here (its poll carries the list)."""
        with self._lock:
            for crawler_id in crawler_ids:
                if crawler_id in self._subscribers:
                    self._subscribers[crawler_id][1].confirmed_at = now

    def unconfirmed(self, before: float) -> list[tuple[int, str]]:
        """(crawler id, source key) of the subscribers last confirmed before `before`."""
        with self._lock:
            entries = self._subscribers.items()
            return [(c, key) for c, (key, s) in entries if s.confirmed_at < before]

    def clear(self) -> None:
        """Drop every subscriber and stop every data source (a detached node)."""
        with self._lock:
            to_stop = [shared.source for shared in self._sources.values()]
            self.changes_of = ChangeCounter()  # a new stream: every poller gets everything
            self._departed.renumber(self.changes_of)
            for key, subscriber in self._subscribers.values():
                subscriber.close()
                self._departed.subscriber(key, subscriber, self.changes_of)
            self._subscribers.clear()
            for key, shared in self._sources.items():
                self._departed.source(key, shared, self.changes_of)
            self._sources.clear()
            self._waiting.clear()
        if self.renewals is not None:
            self.renewals.clear()
        self._stop_all(to_stop)

    def retry_writes(self) -> None:
        """Give every subscriber whose store write failed, or whose lease waits for a renewal,
        its due retry. The node calls this five times a second; it costs the waiting
        subscribers, not all of them."""
        self._waiting.retry()

    def writes_waiting(self) -> bool:
        """Whether a subscriber waits for its write's retry (or a lease, a spec, a count)."""
        return bool(self._waiting)

    def detail(self, crawler_id: int) -> dict[str, Any] | None:
        """One subscriber's status, with its feeds' health when its data source has feeds."""
        with self._lock:
            entry = self._subscribers.get(crawler_id)
            if entry is None:
                return None
            source = self._sources[entry[0]].source
        feeds = source.feeds() if isinstance(source, ReportsFeeds) else None
        return {**entry[1].status(), "feeds": feeds}

    def statuses(self) -> list[dict[str, Any]]:
        """Every subscriber's status."""
        with self._lock:
            subscribers = [s for _, s in self._subscribers.values()]
        return [s.status() for s in subscribers]

    def held(self) -> int:
        """Items every subscriber holds, waiting for the store (or for a bigger lease, or for
        a poll to renew a lapsed one)."""
        with self._lock:
            subscribers = [s for _, s in self._subscribers.values()]
        return sum(s.held for s in subscribers)

    def data_sources(self) -> list[dict[str, Any]]:
        """Every data source."""
        with self._lock:
            return [described(key, shared) for key, shared in sorted(self._sources.items())]

    def changes(self, stream: str, since: int, keys: KeyFilter = None) -> Changes:
        """What changed after change `since` of `stream` among the subscribers and data
        sources whose source key passes `keys`: everything for another stream (a first poll,
        or one of a node that since restarted or detached) or for a number too old."""
        owned = keys or _everything
        with self._lock:
            counter = self.changes_of
            number = counter.number()
            removals = counter.removals_after(since, number) if stream == counter.stream else None
            after = since if removals is not None else 0
            subscribers = [
                s for key, s in self._subscribers.values() if s.stamp > after and owned(key)
            ]
            sources = [
                described(key, shared)
                for key, shared in self._sources.items()
                if shared.stamp > after and owned(key)
            ]
            removed, removed_sources = gone_after(removals, owned, self._holder, self._sources)
            applied = since if removals is not None else None
            departed, departed_subscribers = self._departed.after(applied, owned)
            forgotten = self._departed.forgotten()
        if forgotten:
            self.ledger.forget(forgotten)
        statuses = [s.status() for s in subscribers]
        full = removals is None
        return Changes(
            counter.stream,
            number,
            full,
            statuses,
            sources,
            removed,
            removed_sources,
            departed,
            departed_subscribers,
        )

    def _holder(self, crawler_id: int) -> str | None:
        entry = self._subscribers.get(crawler_id)
        return entry and entry[0]

    def departures_waiting(self) -> int:
        """Stopped runs whose final counts wait for a poll to apply them (a leaving node
        stays until none does)."""
        with self._lock:
            return self._departed.waiting()

    def counts(self, keys: KeyFilter = None) -> tuple[int, int]:
        """(subscribers, data sources) whose source key passes `keys`."""
        with self._lock:
            if keys is None:
                return len(self._subscribers), len(self._sources)
            return (
                sum(1 for key, _ in self._subscribers.values() if keys(key)),
                sum(1 for key in self._sources if keys(key)),
            )


def _everything(source_key: str) -> bool:
    return True


def _join(subscriber: Subscriber, snapshot: list[Item] | None) -> None:
    """A new subscriber's count, then what its running data source already had."""
    subscriber.load_count()
    if snapshot is not None and not subscriber.closed:
        subscriber.offer(snapshot)
