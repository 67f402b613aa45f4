"""The fetch schedule of a node: which due entry a free fetcher takes next. Pure; time is passed in.

Entries wait on a timer heap until due, then queue by priority class. When more is due than
the fetchers can run, a free fetcher takes the entry with the largest weighted wait,
`weight * (now - due_at)` (aging). Seed 000 ages as `priority * 2**alpha`, alpha being an
entry's wait over the oldest wait; that doubles a priority at most, so a "low" entry (1)
never passes a fresh "high" one (4) and can starve under lasting overload, and it needs
every wait to rank one entry. A weighted wait grows without bound, so every entry is
eventually taken (a low one waiting 4 s ranks with a high one waiting 1 s); within a class
the oldest due goes first, so one FIFO heap per class suffices and a pick compares the
heads of three heaps.

Politeness: at most `host_limit` fetches in flight per host, and starts at one host at
least `host_gap` seconds apart. An entry whose host is busy is parked with its host and
comes back when the host frees up, so a busy host never blocks the others.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field

WAITING, READY, PARKED, RUNNING, GONE = "waiting", "ready", "parked", "running", "gone"


@dataclass(eq=False)
class ScheduledResource:
    """One scheduled resource (a feed, say): where it is fetched from and when it is due."""

    key: Hashable
    host: str
    weight: int
    due_at: float
    state: str = WAITING
    stamp: int = 0  # bumped on every move; heap items with an older stamp are stale


@dataclass
class _Host:
    in_flight: int = 0
    free_at: float = float("-inf")  # no start at this host before this instant
    wake_at: float | None = None  # a timer is set to release parked entries then
    parked: _Classes = field(default_factory=lambda: _Classes())


class _Classes:
    """Entries per weight, each class a heap oldest-due first; `pop_best` ages them."""

    def __init__(self) -> None:
        self._heaps: dict[int, list[tuple[float, int, int, ScheduledResource]]] = {}
        self._seq = itertools.count()

    def push(self, entry: ScheduledResource) -> None:
        item = (entry.due_at, next(self._seq), entry.stamp, entry)
        heapq.heappush(self._heaps.setdefault(entry.weight, []), item)

    def _head(self, weight: int) -> ScheduledResource | None:
        heap = self._heaps[weight]
        while heap and heap[0][3].stamp != heap[0][2]:
            heapq.heappop(heap)
        return heap[0][3] if heap else None

    def pop_best(self, now: float) -> ScheduledResource | None:
        """The entry of largest weighted wait (ties: the heavier class), removed."""
        best: ScheduledResource | None = None
        for weight in sorted(self._heaps, reverse=True):
            head = self._head(weight)
            if head is not None and (
                best is None or weight * (now - head.due_at) > best.weight * (now - best.due_at)
            ):
                best = head
        if best is not None:
            heapq.heappop(self._heaps[best.weight])
        return best

    def __len__(self) -> int:
        return sum(len(heap) for heap in self._heaps.values())


class Schedule:
    """Due times of every entry on a node, the hosts' politeness, and lateness kept as stats."""

    def __init__(self, host_limit: int = 2, host_gap: float = 0.0) -> None:
        self.host_limit = host_limit
        self.host_gap = host_gap
        self._entries: dict[Hashable, ScheduledResource] = {}
        self._hosts: dict[str, _Host] = {}
        self._timers: list[
            tuple[float, int, int, ScheduledResource | str]
        ] = []  # entries, and host names
        self._ready = _Classes()
        self._seq = itertools.count()
        self.in_flight = 0
        self.taken = 0  # fetches started so far
        self.late_max = 0.0  # the longest a due entry waited past its due time, in seconds

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def add(self, key: Hashable, host: str, weight: int, due_at: float) -> None:
        """Schedule a new entry; a key already scheduled is a ValueError."""
        if key in self._entries:
            raise ValueError(f"already scheduled: {key!r}")
        entry = ScheduledResource(key, host, weight, due_at)
        self._entries[key] = entry
        self._wait(entry, due_at)

    def remove(self, key: Hashable) -> None:
        """Forget an entry (idempotent); one in flight is dropped when it is done."""
        entry = self._entries.pop(key, None)
        if entry is not None and entry.state != RUNNING:
            self._move(entry, GONE)
        elif entry is not None:
            entry.state = GONE

    def reschedule(self, key: Hashable, due_at: float) -> None:
        """Move a waiting entry's due time (its sharers' schedules changed); one that is due,
        running or gone already is left alone: it plans its next time when it has run."""
        entry = self._entries.get(key)
        if entry is not None and entry.state == WAITING:
            self._wait(entry, due_at)

    def reweigh(self, key: Hashable, weight: int) -> None:
        """Change an entry's priority weight; a queued one moves to its new class."""
        entry = self._entries.get(key)
        if entry is None or entry.weight == weight:
            return
        entry.weight = weight
        if entry.state == READY:
            self._move(entry, READY)
            self._ready.push(entry)
        elif entry.state == PARKED:
            self._move(entry, PARKED)
            self._hosts[entry.host].parked.push(entry)

    def take(self, now: float) -> ScheduledResource | None:
        """The entry a free fetcher should fetch now, marked running; None when nothing is
        due or every due entry's host is busy."""
        self.advance(now)
        while (entry := self._ready.pop_best(now)) is not None:
            host = self._host(entry.host)
            if host.in_flight < self.host_limit and now >= host.free_at:
                return self._start(entry, host, now)
            self._move(entry, PARKED)
            host.parked.push(entry)
            if host.in_flight < self.host_limit:  # only the gap holds it: wake when it passes
                self._wake_host(entry.host, host)
        return None

    def done(self, entry: ScheduledResource, now: float, due_at: float) -> None:
        """A fetch of `entry` (as `take` gave it) ended at `now`: its host slot frees up, and
        the entry is next due at `due_at`, unless it was removed while it ran."""
        host = self._host(entry.host)
        host.in_flight -= 1
        self.in_flight -= 1
        if entry.state == RUNNING:
            self._wait(entry, due_at)
        self._release(entry.host, host, now)

    def next_event_at(self) -> float | None:
        """When `take` may next find something new without a `done` or `add`: the earliest
        timer, or None when there is none."""
        while self._timers and self._stale(self._timers[0]):
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def ready_count(self) -> int:
        """Due entries waiting for a fetcher (stale heap items included: an upper bound)."""
        return len(self._ready)

    def entries(self) -> Iterator[ScheduledResource]:
        return iter(self._entries.values())

    def _start(self, entry: ScheduledResource, host: _Host, now: float) -> ScheduledResource:
        self._move(entry, RUNNING)
        host.in_flight += 1
        host.free_at = now + self.host_gap
        self.in_flight += 1
        self.taken += 1
        self.late_max = max(self.late_max, now - entry.due_at)
        return entry

    def advance(self, now: float) -> None:
        """Move what is due from the timers: entries to the ready classes, hosts' parked
        entries back to ready once their gap has passed."""
        while self._timers and self._timers[0][0] <= now:
            _, _, stamp, what = heapq.heappop(self._timers)
            if isinstance(what, str):
                host = self._hosts.get(what)
                if host is not None and host.wake_at is not None and host.wake_at <= now:
                    host.wake_at = None
                    self._release(what, host, now)
            elif what.stamp == stamp and what.state == WAITING:
                self._move(what, READY)
                self._ready.push(what)

    def _release(self, name: str, host: _Host, now: float) -> None:
        """Give parked entries of a host back to the ready classes, one per free slot."""
        for _ in range(max(0, self.host_limit - host.in_flight)):
            entry = host.parked.pop_best(now)
            if entry is None:
                break
            self._move(entry, READY)
            self._ready.push(entry)
        idle = host.in_flight == 0 and host.wake_at is None and host.free_at <= now
        if idle and not len(host.parked):
            del self._hosts[name]  # nothing to remember: a host with no work costs nothing

    def _wake_host(self, name: str, host: _Host) -> None:
        if host.wake_at is None:
            host.wake_at = host.free_at
            heapq.heappush(self._timers, (host.free_at, next(self._seq), 0, name))

    def _wait(self, entry: ScheduledResource, due_at: float) -> None:
        self._move(entry, WAITING)
        entry.due_at = due_at
        heapq.heappush(self._timers, (due_at, next(self._seq), entry.stamp, entry))

    def _host(self, name: str) -> _Host:
        host = self._hosts.get(name)
        if host is None:
            host = self._hosts[name] = _Host()
        return host

    @staticmethod
    def _move(entry: ScheduledResource, state: str) -> None:
        entry.state = state
        entry.stamp += 1  # whatever heap held it now holds a stale item

    @staticmethod
    def _stale(item: tuple[float, int, int, ScheduledResource | str]) -> bool:
        what = item[3]
        return not isinstance(what, str) and (what.stamp != item[2] or what.state != WAITING)
