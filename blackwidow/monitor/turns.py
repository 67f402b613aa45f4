"""Turns at SQL's write lock in a monitor process: the lock keeper's renewals go ahead of the
monitor's bulk records, which are cut into short transactions.

SQLite lets one transaction write at a time, and hands the lock to whichever waiter retries
first, not to the one that has waited longest: a renewal behind one long record (a placement
of 100,000 crawlers wrote for seconds) or behind bulk transactions run back to back could
wait past its lock's lifetime, and the shard lapsed. So a bulk record is written a part at
a time, each part its own fenced transaction, and before each part its writer waits while a
renewal is waiting or under way. Nothing here reads a clock but the bounded wait.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session, sessionmaker

PART = 2_000  # crawlers per transaction of a bulk record: a short hold of the write lock
LONGEST_WAIT = 10.0  # seconds a part waits for renewals at most: a wedged keeper stops nothing


class Turns:
    """Renewals under way in this process, which a bulk writer lets go first."""

    def __init__(self) -> None:
        self._renewals = 0
        self._changed = threading.Condition()

    @contextmanager
    def renewal(self) -> Iterator[None]:
        """Around the keeper's renewal transaction, from before it asks for the lock."""
        with self._changed:
            self._renewals += 1
        try:
            yield
        finally:
            with self._changed:
                self._renewals -= 1
                self._changed.notify_all()

    def wait_for_renewals(self, timeout: float = LONGEST_WAIT) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._renewals == 0, timeout)


def in_parts(ids: Iterable[int], size: int = PART) -> list[list[int]]:
    """The ids, ascending, in parts of at most `size`; one empty part when there are none."""
    ordered = sorted(ids)
    return [ordered[n : n + size] for n in range(0, len(ordered), size)] or [[]]


def record_in_turns(
    sessions: sessionmaker[Session],
    turns: Turns,
    parts: Iterable[Callable[[Session], None]],
    fence: Callable[[Session], None],
) -> None:
    """Each part in a transaction of its own, fenced last, after any renewal waiting."""
    for part in parts:
        turns.wait_for_renewals()
        with sessions.begin() as session:
            part(session)
            fence(session)
