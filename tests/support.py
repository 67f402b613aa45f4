"""Helpers every test tier shares: waiting on a condition with a deadline, and a clock to set."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sources.model import Item


class FakeClock:
    """A clock the test moves by hand: `clock.now += 5`."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def wait_until(condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll `condition` until it returns something truthy, and return that; fail at the deadline
    instead of sleeping and hoping."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


class SinkRecorder:
    """A data source's sink that keeps what the source delivers and reports, in order."""

    def __init__(self) -> None:
        self.batches: list[list[Item]] = []
        self.targets: list[Collection[int] | None] = []  # whom each batch was for
        self.errors: list[str | None] = []
        self.error_targets: list[Collection[int] | None] = []
        self.failing: list[bool] = []
        self.delivered = threading.Event()

    def deliver(self, items: Sequence[Item], to: Collection[int] | None = None) -> None:
        self.batches.append(list(items))
        self.targets.append(to)
        self.delivered.set()

    def report_error(
        self, message: str | None, to: Collection[int] | None = None, failing: bool = False
    ) -> None:
        self.errors.append(message)
        self.error_targets.append(to)
        self.failing.append(failing)


@contextmanager
def served(app: Any, name: str) -> Iterator[str]:
    """An app served by waitress on a loopback port, in a thread of this process: its URL."""
    from blackwidow import serving

    server: Any
    server, url = serving.bind(app, "127.0.0.1", 0)
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    try:
        yield url
    finally:
        server.close()
        thread.join(timeout=5)
