"""When a node's quota leases are in force: only while the hub's polls keep renewing them.

A node cut off from the hub must stop storing under its leases before the hub hands that
budget to another node. Each monitor shard's poll renews the leases of the subscribers it
owns, counting from the node's own answer the hub says it received (blackwidow.core.node_protocol
.Renewal): durations on this node's clock only. The rule is pure (`in_force`); `Renewals`
keeps the latest renewal per shard.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Hashable
from typing import Protocol


class Owner(Hashable, Protocol):
    """A monitor shard as the node sees it: which source keys its polls speak for."""

    def owns(self, source_key: str) -> bool: ...


def in_force(renewed_at: float | None, lease_after: float, now: float) -> bool:
    """Whether a lease renewed at `renewed_at` may still be stored under at `now`."""
    return renewed_at is not None and now - renewed_at < lease_after


class Renewals:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._latest: dict[Owner, tuple[float, float]] = {}  # shard -> (renewed at, lease_after)
        self.incarnation = uuid.uuid4().hex[:12]  # a token of another process renews nothing

    def token(self) -> str:
        """What a poll answer carries, for the hub to echo in its next poll."""
        return f"{self.incarnation}@{self._clock()!r}"

    def renew(self, owner: Owner, token: str, lease_after: float) -> None:
        """The hub received the answer that gave out `token`: leases count from then."""
        incarnation, _, at = token.partition("@")
        try:
            answered_at = float(at)
        except ValueError:
            return
        if incarnation != self.incarnation or not answered_at <= self._clock():
            return
        with self._lock:
            previous = self._latest.get(owner)
            if previous is None or answered_at >= previous[0]:
                self._latest[owner] = (answered_at, lease_after)

    def in_force(self, source_key: str) -> bool:
        """Whether a lease of a subscriber under this source key may be stored under now."""
        now = self._clock()
        with self._lock:
            latest = [entry for owner, entry in self._latest.items() if owner.owns(source_key)]
        return any(in_force(at, lease_after, now) for at, lease_after in latest)

    def clear(self) -> None:
        """A detached node holds no lease until the hub polls it again."""
        with self._lock:
            self._latest.clear()
