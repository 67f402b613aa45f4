"""The node's fetch scheduler: one bounded pool of fetcher threads for every polled data source.

Data sources add their periodic fetches (one entry per feed) with a job to run when due; the
schedule (sources.fetch.fetch_order) decides which due entry runs next, fairly and politely. Threads
stay `fetchers` + 1 whatever the number of entries: the fetchers wait on a condition until
there is work, one timer thread sleeps until the next due time or the end of a host's gap
(or an earlier one comes), and nothing wakes in between. Threads rather than asyncio: the
guarded fetcher is blocking requests (its address check hooks the connection), parsing holds
the interpreter either way, and a few dozen threads meet the node's aims (bench/node_feeds.py).

Retries are spread by jitter, so feeds that failed together do not retry together.

Parsing holds the interpreter lock: with every fetcher parsing at once, the node's HTTP
threads (the hub's polls and pushes) would get one slice of the interpreter in dozens. Jobs
therefore parse inside `cpu_bound()`, which lets `cpu_slots` of them do so at a time; the
others wait off the interpreter, and a poll is answered promptly however busy the node is.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from sources.fetch.fetch_order import Schedule, ScheduledResource

log = logging.getLogger(__name__)

FAILED_JOB_AFTER = 60.0  # a job that raised (a bug) is tried again this much later
LATE_WINDOW = 30.0  # seconds over which the recent lateness is kept, for health
_BUCKET = 5.0


@dataclass(frozen=True)
class NextPoll:
    """What a job says when it ends: when its entry is next due (the scheduler's clock), and
    whether that is a retry after a failure (spread by jitter)."""

    due_at: float
    retry: bool = False


Job = Callable[[float], NextPoll]  # called with the scheduler's `now` when the entry is due


def jittered(now: float, due_at: float, jitter: float, draw: float) -> float:
    """A retry's due time pushed later by up to `jitter` of its wait (`draw` in [0, 1)):
    never earlier, so a server's Retry-After still holds."""
    return due_at + max(0.0, due_at - now) * jitter * draw


class FetchScheduler:
    def __init__(
        self,
        fetchers: int = 32,
        host_limit: int = 2,
        host_gap: float = 0.0,
        jitter: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
        draw: Callable[[], float] = random.random,
        name: str = "fetcher",  # threads are named after it
        cpu_slots: int = 1,
    ) -> None:
        self._name = name
        self._fetchers = fetchers
        self._jitter = jitter
        self._clock = clock
        self._draw = draw
        self._schedule = Schedule(host_limit, host_gap)
        self._jobs: dict[Hashable, Job] = {}
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # fetchers wait here for due entries
        self._timer = threading.Condition(self._lock)  # the timer thread waits here
        self._alarm_at = float("inf")  # when the timer thread will wake by itself
        self._stopping = False
        self._threads: list[threading.Thread] = []
        self._cpu = threading.BoundedSemaphore(cpu_slots)
        self._late: deque[tuple[float, float]] = deque()  # (bucket start, longest lateness)
        self.failed_jobs = 0

    def start(self) -> None:
        """Start the fetcher threads and the timer thread (idempotent)."""
        with self._lock:
            if self._threads:
                return
            self._stopping = False
            names = (
                [self._name]
                if self._fetchers == 1
                else [f"{self._name}-{n}" for n in range(self._fetchers)]
            )
            self._threads = [
                threading.Thread(target=self._fetch_loop, name=name, daemon=True) for name in names
            ]
            timer = threading.Thread(target=self._timer_loop, name=f"{self._name}-timer")
            timer.daemon = True
            self._threads.append(timer)
        for thread in self._threads:
            thread.start()

    def stop(self, wait: float = 5.0) -> None:
        """Stop taking entries; fetches in flight end on their own deadline (waited `wait`)."""
        with self._lock:
            self._stopping = True
            threads, self._threads = self._threads, []
            self._work.notify_all()
            self._timer.notify_all()
        deadline = time.monotonic() + wait
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def add(
        self, key: Hashable, host: str, weight: int, job: Job, due_at: float | None = None
    ) -> None:
        """Schedule `job` for `key` at `due_at` (now when None), then whenever it says."""
        with self._lock:
            self._schedule.add(key, host, weight, self._clock() if due_at is None else due_at)
            self._jobs[key] = job
            self._changed()

    def remove(self, keys: Iterable[Hashable]) -> None:
        """Withdraw entries: none of them starts again (one in flight finishes)."""
        with self._lock:
            for key in keys:
                self._schedule.remove(key)
                self._jobs.pop(key, None)

    def reschedule(self, due: Iterable[tuple[Hashable, float]]) -> None:
        """Move waiting entries to new due times: (key, due_at) pairs."""
        with self._lock:
            for key, due_at in due:
                self._schedule.reschedule(key, due_at)
            self._changed()

    def reweigh(self, keys: Iterable[Hashable], weight: int) -> None:
        with self._lock:
            for key in keys:
                self._schedule.reweigh(key, weight)
            self._changed()

    def cpu_bound(self) -> threading.BoundedSemaphore:
        """Hold this (`with scheduler.cpu_bound():`) around a job's CPU-bound work."""
        return self._cpu

    def stats(self) -> dict[str, Any]:
        """For a node's health: size, load, and how late due entries started."""
        with self._lock:
            now = self._clock()
            self._trim_late(now)
            return {
                "entries": len(self._schedule),
                "fetchers": self._fetchers,
                "in_flight": self._schedule.in_flight,
                "due": self._schedule.ready_count(),
                "fetches": self._schedule.taken,
                "late_max": round(self._schedule.late_max, 3),
                "late_recent": round(max((late for _, late in self._late), default=0.0), 3),
                "failed_jobs": self.failed_jobs,
            }

    def _changed(self) -> None:
        """Wake a fetcher for what is due now, and the timer if it must wake earlier. Called
        after every change to the schedule, a take included: an entry that a take sets aside
        for its host's gap sets a timer of its own, which the timer thread must not sleep past."""
        if self._schedule.ready_count():
            self._work.notify()
        next_at = self._schedule.next_event_at()
        if next_at is not None and next_at < self._alarm_at:
            self._timer.notify()

    def _timer_loop(self) -> None:
        """Sleep until the next due time, move what is due to the ready queue, wake fetchers."""
        with self._lock:
            while not self._stopping:
                now = self._clock()
                self._schedule.advance(now)
                ready = self._schedule.ready_count()
                if ready:
                    self._work.notify(ready)
                next_at = self._schedule.next_event_at()
                self._alarm_at = float("inf") if next_at is None else next_at
                self._timer.wait(None if next_at is None else max(0.0, next_at - now))

    def _fetch_loop(self) -> None:
        while True:
            with self._lock:
                entry = self._next_entry()
                if entry is None:
                    return
                job = self._jobs.get(entry.key)
            now = self._clock()
            outcome = self._run(job, now) if job is not None else NextPoll(now)
            with self._lock:
                ended_at = self._clock()
                due_at = outcome.due_at
                if outcome.retry:
                    due_at = jittered(ended_at, due_at, self._jitter, self._draw())
                self._schedule.done(entry, ended_at, due_at)
                self._changed()

    def _next_entry(self) -> ScheduledResource | None:
        """Wait (holding the lock) for an entry to take; None once stopping."""
        while not self._stopping:
            now = self._clock()
            entry = self._schedule.take(now)
            self._changed()  # more may be due for another fetcher, or a host's gap timed
            if entry is not None:
                self._note_late(now, now - entry.due_at)
                return entry
            self._work.wait()
        return None

    def _run(self, job: Job, now: float) -> NextPoll:
        try:
            return job(now)
        except Exception:  # a bug in one source must not stop the fetchers
            log.exception("scheduled job failed")
            self.failed_jobs += 1
            return NextPoll(now + FAILED_JOB_AFTER, retry=True)

    def _note_late(self, now: float, late: float) -> None:
        bucket = now - now % _BUCKET
        if self._late and self._late[-1][0] == bucket:
            self._late[-1] = (bucket, max(self._late[-1][1], late))
        else:
            self._late.append((bucket, late))
        self._trim_late(now)

    def _trim_late(self, now: float) -> None:
        while self._late and self._late[0][0] < now - LATE_WINDOW:
            self._late.popleft()
