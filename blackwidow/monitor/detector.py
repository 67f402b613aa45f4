"""Failure detection: the phi-accrual detector (seed 000; as in Cassandra and Akka). Pure.

Instead of a fixed silence rule, each node's poll answers are a heartbeat: the detector keeps
a window of their inter-arrival times and, at any moment, gives ``phi``: how unlikely the
current silence is under that history (phi 1 = a 10% chance the node is merely slow, phi 8 =
one in 10^8). A node that always answers at a steady rhythm is judged quickly; one with a
jittery history gets more patience. Time is passed in as float seconds; nothing here reads a
clock, so unit tests script heartbeat times.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable


class Verdict(StrEnum):
    ALIVE = "alive"
    SUSPECT = "suspect"  # shown to support staff; the node keeps its crawlers
    DEAD = "dead"  # its crawlers are reassigned


@runtime_checkable
class FailureDetector(Protocol):
    """What the monitor needs to decide that a node's subscribers must be reassigned."""

    def heartbeat(self, node_id: int, at: float, asked_at: float | None = None) -> None:
        """Record a successful poll answer from the node at time ``at``, to the poll sent at
        ``asked_at`` when known."""

    def missed(self, node_id: int, asked_at: float) -> None:
        """Record that the poll sent to the node at ``asked_at`` went unanswered."""

    def verdict(self, node_id: int, now: float) -> Verdict:
        """Whether the node is alive, suspect or dead at ``now``."""

    def phi(self, node_id: int, now: float) -> float:
        """How suspicious the node's silence is at ``now`` (shown to operators as a metric)."""

    def forget(self, node_id: int) -> None:
        """Drop the node's history (it left, or was declared dead and removed)."""


@dataclass(frozen=True)
class PhiSettings:
    suspect_phi: float = 3.0
    dead_phi: float = 8.0  # Cassandra's phi_convict_threshold and Akka's default
    min_std: float = 0.2  # seconds; a perfectly steady history must not make phi explode
    acceptable_pause: float = 3.0  # seconds of extra silence tolerated (GC, a slow cycle)
    window: int = 100  # inter-arrival times kept per node
    # expected seconds between heartbeats (the poll interval): before any are seen, and the
    # most that the wait before a late poll was sent counts of an interval
    first_interval: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.suspect_phi <= self.dead_phi:
            raise ValueError("need 0 < suspect_phi <= dead_phi")
        if self.min_std <= 0 or self.acceptable_pause < 0 or self.first_interval <= 0:
            raise ValueError("min_std and first_interval must be positive, the pause not negative")
        if self.window < 2:
            raise ValueError("window must keep at least 2 intervals")


class _History:
    def __init__(self, last: float, settings: PhiSettings) -> None:
        self.last = last
        self.intervals: deque[float] = deque(maxlen=settings.window)
        # seed as Akka does: the expected interval, give or take a quarter of it
        spread = settings.first_interval / 4
        self.intervals.extend([settings.first_interval - spread, settings.first_interval + spread])
        self.missed_at: float | None = None  # when the first poll unanswered since `last` went


class PhiAccrualDetector:
    """Phi from a normal distribution fitted to each node's recent inter-arrival times.

    Silence is counted from the latest of ``started_at`` (a freshly started hub gives every
    node the benefit of the doubt, even one whose last answer predates the restart), the
    node's latest heartbeat, and the first time it was asked about, so a node never heard
    from is not condemned on sight.

    The hub polls, so a node can only answer when asked: what the hub did not ask is not the
    node's silence. An interval counts from the previous answer, or from one expected
    interval before its poll went out when the hub sent it later than that; so does silence,
    from the first poll the node left unanswered. A hub that stalls (a long pause, polls
    waiting on a busy database) neither teaches the detector to wait longer for its nodes nor
    condemns them for the time it did not ask.
    """

    def __init__(self, settings: PhiSettings, started_at: float) -> None:
        self._settings = settings
        self._started_at = started_at
        self._nodes: dict[int, _History] = {}

    def heartbeat(self, node_id: int, at: float, asked_at: float | None = None) -> None:
        history = self._nodes.get(node_id)
        if history is None:
            self._nodes[node_id] = _History(at, self._settings)
        elif at > history.last:  # a late-delivered older answer cannot make a node look staler
            asked = None if asked_at is None else min(at, asked_at)
            history.intervals.append(at - self._since(history.last, asked))
            history.last = at
            history.missed_at = None

    def missed(self, node_id: int, asked_at: float) -> None:
        """A poll sent at ``asked_at`` went unanswered: the node's silence counts from the
        first such poll since its last answer (less one expected interval)."""
        history = self._nodes.setdefault(node_id, _History(asked_at, self._settings))
        if history.missed_at is None and asked_at > history.last:
            history.missed_at = asked_at

    def _since(self, last: float, asked_at: float | None) -> float:
        """Where silence after an answer at `last` starts counting, the hub having asked
        (first) at `asked_at`."""
        if asked_at is None:
            return last
        return max(last, asked_at - self._settings.first_interval)

    def phi(self, node_id: int, now: float) -> float:
        history = self._nodes.setdefault(node_id, _History(now, self._settings))
        since = self._since(history.last, history.missed_at)
        elapsed = now - max(since, self._started_at)
        mean = statistics.fmean(history.intervals) + self._settings.acceptable_pause
        std = max(statistics.pstdev(history.intervals), self._settings.min_std)
        later = 0.5 * math.erfc((elapsed - mean) / (std * math.sqrt(2)))  # P(a beat still comes)
        # 0.0 - log10, not -log10: a beat certain to come (later == 1.0) is phi 0.0, not -0.0
        return 0.0 - math.log10(later) if later > 0 else math.inf

    def verdict(self, node_id: int, now: float) -> Verdict:
        phi = self.phi(node_id, now)
        if phi >= self._settings.dead_phi:
            return Verdict.DEAD
        return Verdict.SUSPECT if phi >= self._settings.suspect_phi else Verdict.ALIVE

    def forget(self, node_id: int) -> None:
        """The node starts afresh: from its next heartbeat or the next question about it."""
        self._nodes.pop(node_id, None)
