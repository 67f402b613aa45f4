"""A node's Prometheus figures: counters its data sources and sink move as they work, gauges
read from the pool and the queue outbox when scraped, and the process's own (its build, CPU,
memory, GC: blackwidow.core.metrics.process).

`blackwidow_node_info{node="<id>"} 1` names the node as the hub's figures do
(`blackwidow_node_phi{node="<id>"}`), once it has registered: a query joins the node's
figures to it on the scrape target's labels, as Prometheus' info metrics are used
(`blackwidow_items_stored_total * on(instance) group_left(node) blackwidow_node_info`).
The id is not a label of every figure, nor the scraper's to set: the hub gives it at
registration, unknown to a scrape config beforehand, and a node back at another URL or
after its row was removed gets another, which would start every one of its series anew.

The node is the observer sources report to (sources.observer): every label value is known
in advance (fetch outcomes, source types), so each figure's child is bound once here and a
fetch or a store write costs one increment, with no label lookup and no lock of ours.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from blackwidow.core.metrics.process import describe_process
from sources.model import Item
from sources.observer import FETCH_OUTCOMES
from sources.registry import SOURCE_TYPES
from spawn.pool.source_pool import DataSourcePool

FETCH_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0)
WRITE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


class NodeMetrics:
    """The node's figures in their own registry, which its `/metrics` serves."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        describe_process(self.registry, answers_alone=True)
        fetches = Counter(
            "blackwidow_fetches", "Guarded fetches by outcome", ["outcome"], registry=self.registry
        )
        self._fetches = {outcome: fetches.labels(outcome) for outcome in FETCH_OUTCOMES}
        self._fetch_seconds = Histogram(
            "blackwidow_fetch_duration_seconds",
            "Time a guarded fetch took, redirects and body included",
            buckets=FETCH_BUCKETS,
            registry=self.registry,
        )
        self._fetched_bytes = Counter(
            "blackwidow_fetched_bytes", "Body bytes of complete fetches", registry=self.registry
        )
        self._delivered = self._by_source("items_delivered", "Items data sources delivered")
        self._stored = self._by_source("items_stored", "Items the store took as new")
        self._write_seconds = Histogram(
            "blackwidow_store_write_duration_seconds",
            "Time one store write (a subscriber's batch) took",
            buckets=WRITE_BUCKETS,
            registry=self.registry,
        )
        self._connects = self._by_source("stream_connects", "Provider stream connections made")
        self._losses = self._by_source(
            "stream_reconnects", "Provider stream failures, each followed by a reconnect"
        )

    def _by_source(self, name: str, documentation: str) -> dict[str, Any]:
        counter = Counter(f"blackwidow_{name}", documentation, ["source"], registry=self.registry)
        return {source: counter.labels(source) for source in SOURCE_TYPES}

    def watch(self, pool: DataSourcePool, outbox_stats: Callable[[], dict] | None) -> None:
        """Serve the pool's and the outbox's state with the counters."""
        self.registry.register(_NodeState(pool, outbox_stats))

    def identify(self, node_id: Callable[[], int | None]) -> None:
        """Serve `blackwidow_node_info` with the id the hub gave the node, when it has one."""
        self.registry.register(_NodeInfo(node_id))

    # -- sources.observer.SourceObserver ----------------------------------------------------

    def fetched(self, outcome: str, seconds: float, size: int) -> None:
        self._fetches[outcome].inc()
        self._fetch_seconds.observe(seconds)
        if size:
            self._fetched_bytes.inc(size)

    def delivered(self, source: str, items: int) -> None:
        self._delivered[source].inc(items)

    def stream_connected(self, source: str) -> None:
        self._connects[source].inc()

    def stream_lost(self, source: str) -> None:
        self._losses[source].inc()

    # -- the sink ---------------------------------------------------------------------------

    def stored(self, new: Sequence[Item], seconds: float) -> None:
        """A store write answered in `seconds`, taking `new` as new items."""
        self._write_seconds.observe(seconds)
        for source, count in Tally(item.source for item in new).items():
            self._stored[source].inc(count)


class _NodeState(Collector):
    """Gauges of what the node holds now, read at scrape time from the pool and outbox."""

    def __init__(self, pool: DataSourcePool, outbox_stats: Callable[[], dict] | None) -> None:
        self._pool = pool
        self._outbox_stats = outbox_stats

    def collect(self) -> Iterator[Metric]:
        by_type = Tally(source["source"] for source in self._pool.data_sources())
        sources = GaugeMetricFamily(
            "blackwidow_data_sources", "Data sources running on the node", labels=["source"]
        )
        for source in SOURCE_TYPES:
            sources.add_metric([source], by_type.get(source, 0))
        yield sources
        statuses = self._pool.statuses()
        yield GaugeMetricFamily(
            "blackwidow_subscribers", "Subscribers on the node", value=len(statuses)
        )
        yield GaugeMetricFamily(
            "blackwidow_items_held",
            "Items subscribers hold while the store or queue is down, or a lease is spent or"
            " lapsed",
            value=sum(status["held"] for status in statuses),
        )
        stats = self._outbox_stats() if self._outbox_stats else {"pending": 0, "failed_pushes": 0}
        yield GaugeMetricFamily(
            "blackwidow_queue_outbox_entries",
            "Stored items' queue entries waiting in the outbox for Redis",
            value=stats["pending"],
        )
        yield CounterMetricFamily(
            "blackwidow_queue_failed_pushes",
            "Pushes to the queue that failed (each is retried)",
            value=stats["failed_pushes"],
        )


class _NodeInfo(Collector):
    def __init__(self, node_id: Callable[[], int | None]) -> None:
        self._node_id = node_id

    def collect(self) -> Iterator[Metric]:
        info = InfoMetricFamily(
            "blackwidow_node", "The node's id at the hub, as the hub's per-node figures label it"
        )
        node_id = self._node_id()
        if node_id is not None:  # not registered yet: no id to name
            info.add_metric([], {"node": str(node_id)})
        yield info
