"""A monitor shard leader's figures: cycle times, polls, pushes and removals with their
failures, hard reloads, lease grants, and each node's phi.

The leader keeps them in memory (both its threads add to them, under a lock held for an
addition) and writes them with every cycle to its lock's row in SQL, so any hub process,
whichever gunicorn worker a scrape reaches, serves the same figures, and a new leader counts
on from where its predecessor's last cycle left them. The hub's /metrics shows them
(blackwidow.metrics.monitor_figures); the monitor knows nothing of Prometheus.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Mapping
from typing import Any

CYCLE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# counter -> its results; each counts nodes (polls) or crawlers (pushes, removals)
RESULTS = {
    "polls": ("ok", "failed"),
    "pushes": ("ok", "rejected", "failed"),
    "removals": ("ok", "failed"),
}
PLAIN = ("hard_reloads", "lease_grants")
MAX_PHI = 1000.0  # a node silent past any threshold; JSON holds no infinity


class MonitorFigures:
    def __init__(self, saved: Mapping[str, Any] | None = None) -> None:
        """Figures starting from `saved` (a predecessor's `to_json()`), or from zero."""
        saved = saved or {}
        self._lock = threading.Lock()
        counts = saved.get("counts") or {}
        self._counts = {name: int(counts.get(name, 0)) for name in counter_names()}
        buckets = saved.get("cycle_buckets") or []
        self._buckets = [int(n) for n in buckets] if len(buckets) == len(CYCLE_BUCKETS) + 1 else []
        self._buckets = self._buckets or [0] * (len(CYCLE_BUCKETS) + 1)  # the last one: +Inf
        self._cycle_sum = float(saved.get("cycle_sum", 0.0))
        self._phi: dict[str, float] = {
            str(n): float(v) for n, v in (saved.get("phi") or {}).items()
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

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                "counts": dict(self._counts),
                "cycle_buckets": list(self._buckets),
                "cycle_sum": self._cycle_sum,
                "phi": dict(self._phi),
            }


def counter_names() -> list[str]:
    """Every counter, as `count` names it: `polls.ok`, `pushes.failed`, `hard_reloads`..."""
    return [f"{name}.{result}" for name, results in RESULTS.items() for result in results] + list(
        PLAIN
    )
