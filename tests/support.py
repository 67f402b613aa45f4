"""Helpers every test tier shares: waiting on a condition with a deadline, and a clock to set."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


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
