"""Stopped runs' final deliveries, kept for the polls until the hub has applied them.

A data source's or a subscriber's deliveries since the last poll the hub applied would
otherwise be lost when it stops (removed, or the node detaching after it lost the hub): what
a provider billed must still reach the user's figure, and what a crawler was handed its own,
once the hub polls again. Both are counted at the same delivery and kept at the same stop, so
the two figures agree. Entries are numbered by the pool's change counter, and forgotten once
a poll's cursor is past them; the runs forgotten are collected for the pool to tell its
run ledger (spawn.pool.run_counts), outside its lock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spawn.pool.change_counter import ChangeCounter
from spawn.pool.run_counts import RunCounts
from spawn.pool.shared_source import SharedSource, described, subscriber_counts
from spawn.pool.subscriber import Subscriber

KEPT_DEPARTED = 10_000  # stopped runs of each kind whose final counts wait for a poll


@dataclass
class Departed:
    key: str  # its source key, for the monitor shard that owns it
    described: dict[str, Any]  # as a poll described it, with its final counts
    stamp: int = 0


class DepartedRuns:
    """Not thread-safe: the pool calls it under its lock."""

    def __init__(self, forgotten: list[str]) -> None:
        self._by_run: dict[str, Departed] = {}
        self._forgotten = forgotten  # runs dropped since the pool last looked

    def keep(self, key: str, run: str, described: dict[str, Any], counter: ChangeCounter) -> None:
        departed = self._by_run[run] = Departed(key, described)
        counter.mark(departed)
        while len(self._by_run) > KEPT_DEPARTED:
            oldest = next(iter(self._by_run))
            del self._by_run[oldest]
            self._forgotten.append(oldest)

    def __len__(self) -> int:
        return len(self._by_run)

    def renumber(self, counter: ChangeCounter) -> None:
        """The pool started a new change stream: every entry is news to every poller."""
        for departed in self._by_run.values():
            counter.mark(departed)

    def after(self, applied: int | None, owned: Callable[[str], bool]) -> list[dict[str, Any]]:
        """What a poller that owns these keys has not applied yet (None: it applied nothing
        of this stream). What it did apply is forgotten."""
        mine = [(run, d) for run, d in self._by_run.items() if owned(d.key)]
        if applied is not None:
            for run, departed in mine:
                if departed.stamp <= applied:
                    del self._by_run[run]
                    self._forgotten.append(run)
        return [d.described for _run, d in mine if applied is None or d.stamp > applied]


class Departures:
    """The pool's stopped data sources and subscribers, each kind kept apart (pool lock held)."""

    def __init__(self) -> None:
        self._forgotten: list[str] = []
        self._sources = DepartedRuns(self._forgotten)
        self._subscribers = DepartedRuns(self._forgotten)

    def source(self, key: str, shared: SharedSource, counter: ChangeCounter) -> None:
        """A data source stopped: keep its final deliveries, if it had any."""
        if shared.delivered:
            self._sources.keep(key, shared.run, described(key, shared), counter)

    def subscriber(self, key: str, subscriber: Subscriber, counter: ChangeCounter) -> None:
        """A subscriber stopped: keep its final deliveries, if it had any."""
        if subscriber.delivered:
            final = subscriber_counts(key, subscriber).final
            self._subscribers.keep(key, subscriber.run, final, counter)

    def restore(self, counts: RunCounts, counter: ChangeCounter) -> None:
        """A run a killed predecessor left in the ledger, reported as stopped."""
        runs = self._sources if counts.kind == "source" else self._subscribers
        runs.keep(counts.key, counts.run, counts.final, counter)

    def waiting(self) -> int:
        """Stopped runs whose final counts no poll has applied yet."""
        return len(self._sources) + len(self._subscribers)

    def forgotten(self) -> list[str]:
        """The runs dropped since the last call, applied or pushed out by the bound."""
        runs = self._forgotten[:]
        self._forgotten.clear()
        return runs

    def renumber(self, counter: ChangeCounter) -> None:
        self._sources.renumber(counter)
        self._subscribers.renumber(counter)

    def after(
        self, applied: int | None, owned: Callable[[str], bool]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(data sources, subscribers) a poller has not applied yet; see DepartedRuns.after."""
        return self._sources.after(applied, owned), self._subscribers.after(applied, owned)
