"""A polled data source's entries on the node's fetch scheduler: added on start, weighed by the
priorities of the subscribers sharing them, timed by their schedules, withdrawn on stop.

A source shared by several subscribers polls at the earliest tick among their schedules
(sources.timetable); when one comes or goes with a schedule, the source re-plans its waiting
entries and they move on the scheduler.

Without a node scheduler (a source run on its own, in a test or a script) it runs a scheduler
of one fetcher for the source alone.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from sources import timetable
from sources.fetch.scheduler import FetchScheduler, Job
from sources.model import DEFAULT_PRIORITY, PRIORITIES, SubscriberSpec

# A source's way to re-plan its waiting entries when its subscribers' schedules change:
# (key, new due time) for each entry that moves.
Replan = Callable[[], Iterable[tuple[Hashable, float]]]


class ScheduledEntries:
    """The entries of one data source, each a key with its host and its job."""

    def __init__(
        self,
        scheduler: FetchScheduler | None,
        name: str,
        interval: float,
        replan: Replan,
        clock: Callable[[], float] = time.monotonic,
        epoch_offset: float | None = None,
    ) -> None:
        self._scheduler = scheduler  # the node's; None: one of the source's own, once started
        self._name = name  # names the threads of a scheduler of its own
        # the source's clock plus this is epoch seconds, what schedules tick in; fixed, so a
        # tick planned on one clock comes due on the other at the same instant
        self._epoch_offset = time.time() - clock() if epoch_offset is None else epoch_offset
        self._running: FetchScheduler | None = None  # where the entries are, once started
        self._keys: list[Hashable] = []
        self._weights: dict[int, int] = {}  # crawler id -> weight of its priority
        self._schedules = timetable.SubscriberSchedules(interval)
        self._replan = replan

    @property
    def stopped(self) -> bool:
        """Not started, or stopped: nothing fetched now may be delivered."""
        return self._running is None

    @property
    def withdrawn(self) -> bool:
        """Not (or no longer) on the node's scheduler, which a source is given to run on: what
        it fetches now is delivered to no one. A source run by hand, without one, delivers."""
        return self._scheduler is not None and self._running is None

    def start(self, entries: Mapping[Hashable, tuple[str, Job]]) -> None:
        """Schedule every entry (key -> host, job), due now; a second start is a no-op."""
        if self._running is not None:
            return
        scheduler = self._scheduler
        if scheduler is None:
            scheduler = FetchScheduler(fetchers=1, name=self._name)
            scheduler.start()
        self._running = scheduler
        self._keys = list(entries)
        for key, (host, job) in entries.items():
            scheduler.add(key, host, self._weight(), job)

    def stop(self) -> None:
        """Withdraw the entries: none starts again; one in flight ends by its own deadline."""
        scheduler, self._running = self._running, None
        if scheduler is None:
            return
        scheduler.remove(self._keys)
        if scheduler is not self._scheduler:
            scheduler.stop()

    def attach(self, spec: SubscriberSpec) -> None:
        """The entries take the highest priority among the subscribers sharing them, and poll
        at the earliest tick among their schedules."""
        self._weights[spec.crawler_id] = PRIORITIES.get(spec.priority, 0)
        self._reweigh()
        if self._schedules.attach(spec.crawler_id, spec.schedule):
            self._replanned()

    def detach(self, crawler_id: int) -> None:
        self._weights.pop(crawler_id, None)
        self._reweigh()
        if self._schedules.detach(crawler_id):
            self._replanned()

    def wait(self, now: float) -> float:
        """Seconds from a poll at `now` (the source's clock) to its next tick: the earliest
        among its subscribers' schedules, the node's interval for those without one."""
        polled_at = now + self._epoch_offset
        return self._schedules.next_poll_at(polled_at) - polled_at

    def cpu_bound(self) -> AbstractContextManager[Any]:
        """Hold this around parsing (see sources.fetch.scheduler)."""
        running = self._running
        return running.cpu_bound() if running is not None else contextlib.nullcontext()

    def _weight(self) -> int:
        return max(self._weights.values(), default=PRIORITIES[DEFAULT_PRIORITY])

    def _replanned(self) -> None:
        moved = list(self._replan())  # re-planned even when not running: poll_due reads it
        if self._running is not None:
            self._running.reschedule(moved)

    def _reweigh(self) -> None:
        if self._running is not None:
            self._running.reweigh(self._keys, self._weight())
