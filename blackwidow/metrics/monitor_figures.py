"""The monitor shards' saved figures (blackwidow.monitor.figures) as Prometheus families:
counters, cycle and poll times summed over the shards, each node's phi and poll times."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    SummaryMetricFamily,
)
from prometheus_client.registry import Metric

from blackwidow.monitor.figures import (
    CYCLE_BUCKETS,
    POLL_BUCKETS,
    RESULTS,
    MonitorFigures,
    counter_names,
)


def families(saved: Iterable[Mapping[str, Any]], nodes: Iterable[int]) -> Iterator[Metric]:
    """The shards' saved figures as Prometheus families: counters and cycle times summed over
    the shards, phi and poll times for the `nodes` that still exist (a deleted node's series
    go with it)."""
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
    yield _histogram(
        "blackwidow_monitor_cycle_seconds",
        "Time a monitor cycle (poll and reconcile) took",
        CYCLE_BUCKETS,
        [s["cycle_buckets"] for s in shards],
        sum(s["cycle_sum"] for s in shards),
    )
    yield _histogram(
        "blackwidow_monitor_poll_seconds",
        "Time a node took to answer a poll, over every node",
        POLL_BUCKETS,
        [s["poll_buckets"] for s in shards],
        sum(s["poll_sum"] for s in shards),
    )
    existing = sorted(nodes)
    yield _phi(shards, existing)
    yield _node_polls(shards, existing)


def _phi(shards: list[dict[str, Any]], nodes: list[int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(
        "blackwidow_node_phi", "Failure detector's phi per node", labels=["node"]
    )
    judged = {node: value for s in shards for node, value in s["phi"].items()}
    for node in nodes:
        if str(node) in judged:
            family.add_metric([str(node)], float(judged[str(node)]))
    return family


def _node_polls(shards: list[dict[str, Any]], nodes: list[int]) -> SummaryMetricFamily:
    """Every shard's leader polls every node: a node's polls are summed over the shards."""
    family = SummaryMetricFamily(
        "blackwidow_node_poll_seconds", "Time the node took to answer a poll", labels=["node"]
    )
    for node in nodes:
        answered = [s["node_polls"][str(node)] for s in shards if str(node) in s["node_polls"]]
        if answered:
            family.add_metric(
                [str(node)], sum(count for count, _ in answered), sum(t for _, t in answered)
            )
    return family


def _histogram(
    name: str,
    documentation: str,
    bounds: tuple[float, ...],
    counts: list[list[int]],
    total: float,
) -> HistogramMetricFamily:
    """A histogram of the shards' bucket `counts` (each shard's: one per bound, then +Inf)."""
    per_bucket = [sum(shard[i] for shard in counts) for i in range(len(bounds) + 1)]
    cumulative, running = [], 0
    for bound, count in zip([*map(str, bounds), "+Inf"], per_bucket, strict=True):
        running += count
        cumulative.append((bound, running))
    return HistogramMetricFamily(name, documentation, buckets=cumulative, sum_value=total)
