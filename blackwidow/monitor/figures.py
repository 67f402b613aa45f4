"""A monitor shard leader's figures: cycle times, polls, pushes and removals with their
failures, hard reloads, lease grants, each node's phi, and how long each node's polls took.

The leader keeps them in memory (both its threads add to them, under a lock held for an
addition) and writes them with every cycle to its lock's row in SQL, so any hub process,
whichever gunicorn worker a scrape reaches, serves the same figures, and a new leader counts
on from where its predecessor's last cycle left them. The hub's /metrics shows them
(blackwidow.metrics.monitor_figures); the monitor knows nothing of Prometheus.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Collection, Mapping
from typing import Any

CYCLE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# counter -> its results; each counts nodes (polls) or crawlers (pushes, removals)
RESULTS = {
    "polls": ("ok", "failed"),
    "pushes": ("ok", "rejected", "failed"),
    "removals": ("ok", "failed"),
}
PLAIN = ("hard_reloads", "lease_grants")
POLL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
MAX_PHI = 1000.0  # a node silent past any threshold; JSON holds no infinity


class MonitorFigures:
    def __init__(self, saved: Mapping[str, Any] | None = None) -> None:
        """Figures starting from `saved` (a predecessor's `to_json()`), or from zero."""
        saved = saved or {}
        self._lock = threading.Lock()
        counts = saved.get("counts") or {}
        self._counts = {name: int(counts.get(name, 0)) for name in counter_names()}
        self._buckets = _buckets(saved.get("cycle_buckets"), CYCLE_BUCKETS)
        self._cycle_sum = float(saved.get("cycle_sum", 0.0))
        self._phi: dict[str, float] = {
            str(n): float(v) for n, v in (saved.get("phi") or {}).items()
        }
        self._poll_buckets = _buckets(saved.get("poll_buckets"), POLL_BUCKETS)
        self._poll_sum = float(saved.get("poll_sum", 0.0))
        # node -> [answered polls, seconds they took]: a mean per node, the histogram for all
        self._node_polls: dict[str, list[float]] = {
            str(n): [int(v[0]), float(v[1])] for n, v in (saved.get("node_polls") or {}).items()
        }

    def count(self, name: str, amount: int = 1) -> None:
        """Add to a counter: `polls.ok`, `pushes.failed`, `hard_reloads`..."""
        if amount:
            with self._lock:
                self._counts[name] += amount

    def cycle(self, seconds: float) -> None:
        with self._lock:
            self._buckets[bisect.bisect_left(CYCLE_BUCKETS, seconds)] += 1
            self._cycle_sum += seconds

    def judged(self, phi: Mapping[int, float]) -> None:
        """Each live node's phi as of the latest poll (shard 0's leader alone judges)."""
        shown = {str(node): min(value, MAX_PHI) for node, value in phi.items()}
        with self._lock:
            self._phi = shown

    def polled(self, answered: Mapping[int, float], asked: Collection[int]) -> None:
        """How long each node that `answered` a poll took (seconds). A node not `asked` this
        round (deleted, or dead and not probed this time) is forgotten, so a deleted node's
        figures do not stay in the lock's row; one heard again starts from zero (a counter
        reset, as Prometheus reads one)."""
        with self._lock:
            kept = {str(node) for node in asked}
            self._node_polls = {n: v for n, v in self._node_polls.items() if n in kept}
            for node, seconds in answered.items():
                seconds = max(0.0, seconds)
                self._poll_buckets[bisect.bisect_left(POLL_BUCKETS, seconds)] += 1
                self._poll_sum += seconds
                count, total = self._node_polls.get(str(node), (0, 0.0))
                self._node_polls[str(node)] = [count + 1, total + seconds]

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                "counts": dict(self._counts),
                "cycle_buckets": list(self._buckets),
                "cycle_sum": self._cycle_sum,
                "phi": dict(self._phi),
                "poll_buckets": list(self._poll_buckets),
                "poll_sum": self._poll_sum,
                "node_polls": {n: list(v) for n, v in self._node_polls.items()},
            }


def _buckets(saved: Any, bounds: tuple[float, ...]) -> list[int]:
    """A histogram's counts per bucket (the last one: +Inf), from `saved` when it has the
    same buckets, else from zero."""
    if isinstance(saved, list) and len(saved) == len(bounds) + 1:
        return [int(n) for n in saved]
    return [0] * (len(bounds) + 1)


def counter_names() -> list[str]:
    """Every counter, as `count` names it: `polls.ok`, `pushes.failed`, `hard_reloads`..."""
    return [f"{name}.{result}" for name, results in RESULTS.items() for result in results] + list(
        PLAIN
    )
