"""What the scenarios measured, shown after the run: failover and recovery times, fault
counts, the cluster tier's totals.

Each test process keeps its own; under pytest-xdist each worker hands them to the controller,
which shows them all.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

MEASUREMENTS: list[str] = []  # the integration tier's figures, e.g. failover time
FAULT_TOTALS: Counter[str] = Counter()  # summed over the fault-injection scenarios
CLUSTER_TOTALS: list[str] = []  # the cluster tier: every scenario's totals line

_KEY = "blackwidow_summary"


def hand_over(workeroutput: dict[str, Any]) -> None:
    """A worker's figures, into what it sends the controller at its end."""
    workeroutput[_KEY] = {
        "measurements": MEASUREMENTS,
        "faults": dict(FAULT_TOTALS),
        "cluster": CLUSTER_TOTALS,
    }


def take_over(workeroutput: dict[str, Any]) -> None:
    """A worker's figures, added to the controller's."""
    figures = workeroutput.get(_KEY, {})
    MEASUREMENTS.extend(figures.get("measurements", []))
    FAULT_TOTALS.update(figures.get("faults", {}))
    CLUSTER_TOTALS.extend(figures.get("cluster", []))


def write(terminalreporter: Any) -> None:
    if MEASUREMENTS:
        terminalreporter.section("measurements")
        for line in MEASUREMENTS:
            terminalreporter.write_line(line)
    if FAULT_TOTALS:
        terminalreporter.write_line(
            "fault injection, all scenarios: "
            + ", ".join(f"{name} {count}" for name, count in FAULT_TOTALS.items())
        )
    if CLUSTER_TOTALS:
        terminalreporter.section("cluster totals")
        for line in CLUSTER_TOTALS:
            terminalreporter.write_line(line)
