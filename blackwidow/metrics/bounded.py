"""A read a scrape waits for only so long: the last good answer is kept, with when it was read,
so `/metrics` answers from what this process knows while the database or store does not.

At most one read of each kind is in flight: a scrape that finds one still running (its
predecessor gave up waiting) waits on that one instead of starting another, so a database that
hangs holds one thread per kind, for as long as the engine's own bounds let it
(blackwidow.db.make_engine), never one per scrape.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reading(Generic[T]):
    answered: bool  # the latest read ended, without an error, before the scrape stopped waiting
    value: T | None  # the last good read's result (None before the first)
    read_at: float | None  # when that read started (time.monotonic()); its value is as of then


class BoundedRead(Generic[T]):
    def __init__(
        self,
        name: str,
        read: Callable[[], T],
        expected: Callable[[BaseException], bool] = lambda error: False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`read` raises when the dependency does not answer; errors `expected` for an outage
        are quiet (the figures say it), any other is logged with its traceback."""
        self._name = name
        self._read = read
        self._expected = expected
        self._clock = clock
        self._lock = threading.Lock()
        self._running: threading.Event | None = None  # set when the read in flight ends
        self._answered = False
        self._value: T | None = None
        self._read_at: float | None = None

    def start(self) -> None:
        """Start a read unless one is in flight."""
        with self._lock:
            if self._running is not None:
                return
            self._running = threading.Event()
            started_at = self._clock()
        threading.Thread(
            target=self._run, args=(started_at,), name=f"metrics-{self._name}", daemon=True
        ).start()

    def settle(self, deadline: float) -> Reading[T]:
        """What is known once the read in flight ended, or at `deadline` (monotonic) if not."""
        with self._lock:
            running = self._running
        ended = running is None or running.wait(max(0.0, deadline - self._clock()))
        with self._lock:
            return Reading(ended and self._answered, self._value, self._read_at)

    def _run(self, started_at: float) -> None:
        answered = False
        try:
            value = self._read()
            answered = True
        except Exception as error:
            if self._expected(error):
                log.debug("metrics read failed read=%s error=%s", self._name, type(error).__name__)
            else:
                log.exception("metrics read failed read=%s", self._name)
        with self._lock:
            self._answered = answered
            if answered:
                self._value, self._read_at = value, started_at
            running, self._running = self._running, None
        if running is not None:
            running.set()
