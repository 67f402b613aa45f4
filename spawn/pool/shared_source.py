"""A data source as the pool shares it among subscribers, and the sink it delivers through.

The pool (spawn.pool.source_pool) keeps one SharedSource per source key; the data source gets a
PoolSink, which fans its items and errors out to the subscribers, keeps the counts a
provider bills by, and writes each delivered batch's counts to the pool's run ledger.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sources.model import DataSource, Item
from sources.observer import SourceObserver
from spawn.pool.change_counter import ChangeCounter
from spawn.pool.run_counts import RunCounts, RunLedger
from spawn.pool.subscriber import Subscriber


class Fanout(Protocol):
    """What a PoolSink needs of its pool."""

    changes_of: ChangeCounter
    ledger: RunLedger
    observer: SourceObserver

    def members(self, shared: SharedSource, to: Collection[int] | None) -> list[Subscriber]: ...


@dataclass
class SharedSource:
    """One data source and what the pool knows of it: its subscribers, deliveries, trouble."""

    source: DataSource
    source_type: str
    crawler_ids: set[int] = field(default_factory=set)
    # What a provider bills: each item once per user it reached, however many of the user's
    # crawlers share the source. `run` names this source's life, for the hub's accounting.
    run: str = field(default_factory=lambda: uuid.uuid4().hex)
    credential: dict[str, Any] | None = field(default=None, repr=False)  # pushed, if any
    delivered: Counter[int] = field(default_factory=Counter)
    error: str | None = None  # the source's own trouble, shown on every subscriber
    failing: bool = False  # the source gets nothing at all
    crawler_errors: dict[int, str] = field(default_factory=dict)  # one subscriber's trouble
    stamp: int = 0  # the number of its latest change (spawn.pool.change_counter)

    def error_for(self, crawler_id: int) -> str | None:
        return self.error or self.crawler_errors.get(crawler_id)


class PoolSink:
    """A data source's sink: fans its items and errors out to its subscribers."""

    def __init__(self, pool: Fanout, key: str, shared: SharedSource) -> None:
        self._pool = pool
        self._key = key
        self._shared = shared

    def deliver(self, items: Sequence[Item], to: Collection[int] | None = None) -> None:
        members = self._pool.members(self._shared, to)
        for user_id in {subscriber.spec.user_id for subscriber in members}:
            self._shared.delivered[user_id] += len(items)
        self._pool.changes_of.mark(self._shared)
        self._pool.observer.delivered(self._shared.source_type, len(items))
        for subscriber in members:
            subscriber.offer(items)
        if members:  # the batch's counts, in one write, once every member has counted it
            counts = [source_counts(self._key, self._shared)]
            counts += [subscriber_counts(self._key, subscriber) for subscriber in members]
            self._pool.ledger.record(counts)

    def report_error(
        self, message: str | None, to: Collection[int] | None = None, failing: bool = False
    ) -> None:
        shared = self._shared
        if to is None and (shared.error, shared.failing) != (message, failing):
            shared.error, shared.failing = message, failing
            self._pool.changes_of.mark(shared)
        for crawler_id in to or ():
            if message is None:
                shared.crawler_errors.pop(crawler_id, None)
            else:
                shared.crawler_errors[crawler_id] = message
        for subscriber in self._pool.members(shared, to):
            subscriber.source_trouble(shared.error_for(subscriber.spec.crawler_id), shared.failing)


def described(key: str, shared: SharedSource) -> dict[str, Any]:
    """A data source as a poll and a node's health show it."""
    return {
        "key": key,
        "source": shared.source_type,
        "subscribers": len(shared.crawler_ids),
        "error": shared.error,
        "run": shared.run,
        "delivered": {str(user): n for user, n in shared.delivered.items()},
    }


def source_counts(key: str, shared: SharedSource) -> RunCounts:
    """A data source's counts as its departed entry would report them."""
    return RunCounts("source", key, shared.run, described(key, shared))


def subscriber_counts(key: str, subscriber: Subscriber) -> RunCounts:
    """A subscriber's counts as its departed entry would report them."""
    final = {
        "crawler_id": subscriber.spec.crawler_id,
        "run": subscriber.run,
        "delivered": subscriber.delivered,
    }
    return RunCounts("subscriber", key, subscriber.run, final)
