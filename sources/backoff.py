"""The one backoff policy: how long to wait after n failures in a row. Pure: the random draw
is passed in.

Every retry waits by it, each with its own first delay, cap and jitter: a subscriber's store
writes, the outbox's queue pushes, a node's registration, a stream's reconnects and rules, a
polled feed's next poll, a webhook's redelivery, a contended API request. During an outage
each costs its server a trickle of attempts, not a storm.
"""

from __future__ import annotations

from dataclasses import dataclass

_MAX_DOUBLINGS = 64  # far past any cap; keeps 2 ** n a float however long an outage lasts


@dataclass(frozen=True)
class Backoff:
    """`first` seconds after one failure, doubling (or, `linear`, growing by `first`) with
    each further one up to `cap`; `jitter` is the share of that a random draw may take off
    (0.5: anywhere from half to whole), so clients that failed together retry apart."""

    first: float
    cap: float
    jitter: float = 0.0
    linear: bool = False

    def delay(self, failures: int, draw: float = 1.0) -> float:
        """Seconds to wait after `failures` failures in a row: none after none. `draw` is a
        random number in [0, 1]; 1 keeps the whole delay, 0 takes off all that `jitter` may."""
        if failures <= 0:
            return 0.0
        growth = failures if self.linear else 2.0 ** min(failures - 1, _MAX_DOUBLINGS)
        return min(self.cap, self.first * growth) * (1.0 - self.jitter * (1.0 - draw))
