"""Failure detection: decides from poll answers whether a node is dead. Pure.

The hub asks only through ``FailureDetector``, so a phi-accrual detector
(seed 000) can replace ``DeadAfterDetector`` without touching its callers.
Time is passed in as float seconds; nothing here reads a clock.
"""

from typing import Protocol, runtime_checkable


@runtime_checkable
class FailureDetector(Protocol):
    """What the monitor needs to decide that a node's subscribers must be reassigned."""

    def heartbeat(self, node_id: int, at: float) -> None:
        """Record a successful poll answer from the node at time ``at``."""

    def is_dead(self, node_id: int, now: float) -> bool:
        """Whether the node should be declared dead at ``now``."""

    def forget(self, node_id: int) -> None:
        """Drop the node's history (it left, or was declared dead and removed)."""


class DeadAfterDetector:
    """A node is dead when it has been silent for more than ``dead_after`` seconds.

    Silence is counted from the latest of: ``started_at`` (a freshly started hub
    gives every node the benefit of the doubt, even one whose last heartbeat,
    restored from SQL, predates the restart), the node's latest heartbeat, and
    the first time it was asked about. A node with no history, never seen or
    forgotten, is therefore treated as newly seen by the first ``is_dead`` call
    that names it: it is not declared dead on sight, and if it never answers it
    dies ``dead_after`` seconds later.
    """

    def __init__(self, dead_after: float, started_at: float) -> None:
        if dead_after <= 0:
            raise ValueError(f"dead_after must be positive seconds, got {dead_after!r}")
        self._dead_after = dead_after
        self._started_at = started_at
        self._silent_since: dict[int, float] = {}

    def heartbeat(self, node_id: int, at: float) -> None:
        """Keep the latest answer; a late-delivered older one cannot make a node look staler."""
        self._silent_since[node_id] = max(at, self._silent_since.get(node_id, at))

    def is_dead(self, node_id: int, now: float) -> bool:
        """Dead strictly after ``dead_after`` of silence; a heartbeat afterwards revives it."""
        since = self._silent_since.setdefault(node_id, now)
        return now - max(since, self._started_at) > self._dead_after

    def forget(self, node_id: int) -> None:
        """The node starts afresh: from its next heartbeat or the next ``is_dead`` naming it."""
        self._silent_since.pop(node_id, None)
