"""Change numbers for a pool's subscribers and data sources, so that a poll costs what changed.

Every change to what the hub's poll reports (a subscriber's count, state or error; a data
source's subscribers, error or deliveries) takes the next number from one counter, stamped on
the thing that changed once the change is made; a removal is kept with its number. A poll
takes a number too, and answers with what carries a higher one than its cursor's; its own
number is the next cursor. Numbering and stamping happen under one lock, so a change stamped
below a poll's number is always visible to that poll. Removals are kept up to a bound; a
cursor older than the oldest one kept gets everything instead.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

KEPT_REMOVALS = 100_000


class Stamped(Protocol):
    stamp: int  # the number of its latest change


@dataclass(frozen=True)
class Removal:
    number: int
    crawler_id: int | None  # None: a data source went
    source_key: str


class ChangeCounter:
    def __init__(self, kept_removals: int = KEPT_REMOVALS) -> None:
        self.stream = uuid.uuid4().hex[:16]  # names this counter: numbers of another mean nothing
        self._last = 0
        self._kept = kept_removals
        self._removals: deque[Removal] = deque()
        self._lock = threading.Lock()
        self.floor = 0  # removals numbered at or below it are forgotten

    def mark(self, changed: Stamped) -> None:
        """Number a change; call it after the change is made."""
        with self._lock:
            self._last += 1
            changed.stamp = self._last

    def number(self) -> int:
        """A number above every change marked so far: a poll's cursor."""
        with self._lock:
            self._last += 1
            return self._last

    def removed(self, source_key: str, crawler_id: int | None = None) -> None:
        with self._lock:
            self._last += 1
            self._removals.append(Removal(self._last, crawler_id, source_key))
            while len(self._removals) > self._kept:
                self.floor = self._removals.popleft().number

    def removals_after(self, since: int, now: int) -> list[Removal] | None:
        """The removals after `since`; None when some of them are forgotten, or `since` is
        not a number this counter gave before `now`."""
        with self._lock:
            if not self.floor <= since < now:
                return None
            newer = itertools.takewhile(lambda r: r.number > since, reversed(self._removals))
            return [r for r in newer if r.number < now]


@dataclass
class Changes:
    """A poll's answer from the pool: what changed after its cursor, or everything (`full`)."""

    stream: str  # the change counter's name, and
    number: int  # its number: the next poll's cursor
    full: bool
    subscribers: list[dict[str, Any]]
    data_sources: list[dict[str, Any]]
    removed: list[int]
    removed_data_sources: list[str]
    departed_data_sources: list[dict[str, Any]] = field(default_factory=list)  # final counts
    departed_subscribers: list[dict[str, Any]] = field(default_factory=list)  # ... of each


def gone_after(
    removals: Iterable[Removal] | None,
    owned: Callable[[str], bool],
    holder: Callable[[int], str | None],
    sources: Collection[str],
) -> tuple[list[int], list[str]]:
    """(crawler ids, source keys) a poll owning these keys hears removed: those not back
    since. A crawler whose query changed is removed from one key and held under another (its
    `holder`), which must be one the poll owns for the removal to be void."""
    gone = [r for r in removals or () if owned(r.source_key)]
    removed = {
        r.crawler_id: None
        for r in gone
        if r.crawler_id is not None
        and not ((key := holder(r.crawler_id)) is not None and owned(key))
    }
    removed_sources = {
        r.source_key: None for r in gone if r.crawler_id is None and r.source_key not in sources
    }
    return list(removed), list(removed_sources)
