"""Group commit: the store writes of concurrent callers gathered into one `Store.add_many`.

A node's fetcher threads each deliver to their subscribers, and each subscriber's write would
be a store call of its own (on SQLite a transaction, and a wait for the file's lock). Here a
caller hands its write in and waits; a caller that finds no call in flight makes one for every
write waiting (at most MAX_WRITES), hands each caller its own answer, or the call's exception,
and makes the next while more wait. No thread of its own: the callers take turns at it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence

from blackwidow.core.store import Write
from sources.model import Item

MAX_WRITES = 64  # writes in one store call at most


class _Waiting:
    """One caller's write and, once the call that carried it returns, its answer."""

    def __init__(self, write: Write) -> None:
        self.write = write
        self.done = threading.Event()
        self.answer: list[Item] = []
        self.error: BaseException | None = None

    def result(self) -> list[Item]:
        self.done.wait()
        if self.error is not None:
            raise self.error
        return self.answer


class GroupCommit:
    """Writes through `add_many`, several callers' at a time; thread-safe."""

    def __init__(
        self,
        add_many: Callable[[Sequence[Write]], list[list[Item]]],
        max_writes: int = MAX_WRITES,
    ) -> None:
        self._add_many = add_many
        self._max_writes = max_writes
        self._lock = threading.Lock()
        self._queue: deque[_Waiting] = deque()
        self._writing = False

    def add(self, write: Write) -> list[Item]:
        """The items of `write` the store took as new, exactly as `Store.add` answers; raises
        what the store call that carried it raised."""
        waiting = _Waiting(write)
        with self._lock:
            self._queue.append(waiting)
            writer = not self._writing
            self._writing = True
        if writer:
            self._write_while_queued()
        return waiting.result()

    @property
    def waiting(self) -> int:
        """Writes handed in and not yet carried by a store call."""
        with self._lock:
            return len(self._queue)

    def _write_while_queued(self) -> None:
        """Store call after store call until no write waits; then the next caller writes."""
        while True:
            with self._lock:
                if not self._queue:
                    self._writing = False
                    return
                count = min(len(self._queue), self._max_writes)
                carried = [self._queue.popleft() for _ in range(count)]
            self._carry(carried)

    def _carry(self, carried: list[_Waiting]) -> None:
        """One store call; every caller of a call that raised gets its exception and holds
        its items, as it would have writing alone."""
        try:
            answers = self._add_many([waiting.write for waiting in carried])
            if len(answers) != len(carried):
                raise RuntimeError(f"store answered {len(answers)} of {len(carried)} writes")
        except BaseException as error:
            for waiting in carried:
                waiting.error = error
                waiting.done.set()
            return
        for waiting, answer in zip(carried, answers, strict=True):
            waiting.answer = answer
            waiting.done.set()
