"""The monitor shards' saved figures (blackwidow.monitor.figures) as Prometheus families:
counters and cycle times summed over the shards, and each node's phi."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Metric

from blackwidow.monitor.figures import CYCLE_BUCKETS, RESULTS, MonitorFigures, counter_names


def families(saved: Iterable[Mapping[str, Any]], nodes: Iterable[int]) -> Iterator[Metric]:
    """The shards' saved figures as Prometheus families: counters and cycle times summed over
    the shards, phi for the `nodes` that still exist (a deleted node's series goes with it)."""
    shards = [MonitorFigures(figures).to_json() for figures in saved]
    counts = {name: sum(s["counts"][name] for s in shards) for name in counter_names()}
    for name, results in RESULTS.items():
        family = CounterMetricFamily(
            f"blackwidow_monitor_{name}", f"Monitor {name} by result", labels=["result"]
        )
        for result in results:
            family.add_metric([result], counts[f"{name}.{result}"])
        yield family
    yield CounterMetricFamily(
        "blackwidow_monitor_hard_reloads",
        "Times a change of the node set re-routed the crawlers",
        value=counts["hard_reloads"],
    )
    yield CounterMetricFamily(
        "blackwidow_monitor_lease_grants",
        "Quota leases the monitor granted or resized",
        value=counts["lease_grants"],
    )
    yield _cycle_family(shards)
    phi = GaugeMetricFamily(
        "blackwidow_node_phi", "Failure detector's phi per node", labels=["node"]
    )
    judged = {node: value for s in shards for node, value in s["phi"].items()}
    for node in sorted(nodes):
        if str(node) in judged:
            phi.add_metric([str(node)], float(judged[str(node)]))
    yield phi


def _cycle_family(shards: list[dict[str, Any]]) -> HistogramMetricFamily:
    per_bucket = [sum(s["cycle_buckets"][i] for s in shards) for i in range(len(CYCLE_BUCKETS) + 1)]
    cumulative, running = [], 0
    for bound, count in zip([*map(str, CYCLE_BUCKETS), "+Inf"], per_bucket, strict=True):
        running += count
        cumulative.append((bound, running))
    return HistogramMetricFamily(
        "blackwidow_monitor_cycle_seconds",
        "Time a monitor cycle (poll and reconcile) took",
        buckets=cumulative,
        sum_value=sum(s["cycle_sum"] for s in shards),
    )
