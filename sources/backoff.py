"""Exponential backoff shared by the retry loops: store writes, queue pushes, registration.

During an outage each loop costs the server a trickle of attempts, not a storm.
"""

from __future__ import annotations

FIRST_DELAY = 0.2  # seconds after the first failure
MAX_DELAY = 10.0


def doubling_delay(failures: int, first: float = FIRST_DELAY, cap: float = MAX_DELAY) -> float:
    """Seconds to wait after `failures` failures in a row: none after none, then `first`
    doubling up to `cap`."""
    return 0.0 if failures <= 0 else min(cap, first * 2 ** (failures - 1))
