"""The run ledger's cost per delivered batch, against the same deliveries without it.

A real DataSourcePool with one data source shared by three subscribers takes batches through
its PoolSink, as a fetched feed would hand them over; each batch writes one ledger
transaction (the source's row and each subscriber's). Measured in one run, on one machine:
µs per batch with no ledger (the baseline) and with the node's SQLite ledger, for a store
that keeps nothing (the output path alone, the ledger's worst ratio) and for the SQLite
store (what a node on the embedded defaults pays per batch anyway).

    .venv/bin/python -m bench.run_ledger [--batches N] [--items N]

The ledger alone (one record of four rows) is timed too, without a pool.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.ingest import make_items
from bench.simulated_nodes import IdleSource, NullSink
from blackwidow.core.store.sqlite import SqliteStore
from sources.model import Item, SourceSink, SubscriberSpec
from spawn.output.run_ledger import SqliteLedger
from spawn.pool.run_counts import NO_LEDGER, RunCounts, RunLedger
from spawn.pool.source_pool import DataSourcePool
from spawn.pool.subscriber import ItemSink

SUBSCRIBERS = 3


class Captured(IdleSource):
    """An idle source that keeps the sink the pool gives it, so the bench can deliver."""

    sink: SourceSink

    def start(self, sink: object) -> None:
        self.sink = sink  # type: ignore[assignment]


def per_batch(store: ItemSink, ledger: RunLedger, batches: Sequence[list[Item]]) -> float:
    """µs per delivered batch through a pool on this store and ledger."""
    opened: list[Captured] = []

    def open_source(key: str, spec: SubscriberSpec) -> Captured:
        opened.append(Captured(key))
        return opened[-1]

    pool = DataSourcePool(open_source, store, ledger=ledger)
    for crawler_id in range(1, SUBSCRIBERS + 1):
        spec = SubscriberSpec(crawler_id, 1, "rss", {"feeds": ["https://news.example/feed"]})
        pool.put(spec, now=0.0)
    sink = opened[0].sink
    started = time.perf_counter()
    for batch in batches:
        sink.deliver(batch)
    elapsed = time.perf_counter() - started
    pool.clear()
    return elapsed / len(batches) * 1e6


def per_record(directory: Path, records: int) -> float:
    """µs per ledger transaction alone: a data source's row and three subscribers' rows."""
    ledger = SqliteLedger(directory / "ledger-alone.db")
    described = {"key": "k", "source": "rss", "subscribers": SUBSCRIBERS, "error": None}
    started = time.perf_counter()
    for n in range(records):
        counts = [RunCounts("source", "k", "s", {**described, "run": "s", "delivered": {"1": n}})]
        counts += [
            RunCounts("subscriber", "k", f"r{c}", {"crawler_id": c, "run": f"r{c}", "delivered": n})
            for c in range(SUBSCRIBERS)
        ]
        ledger.record(counts)
    elapsed = time.perf_counter() - started
    ledger.close()
    return elapsed / records * 1e6


def measure(name: str, store: ItemSink, directory: Path, batches: int, items: int) -> None:
    with_ledger = SqliteLedger(directory / f"ledger-{name}.db")
    runs = [[make_items(items, crawler_id=0) for _ in range(batches)] for _ in range(2)]
    per_batch(store, NO_LEDGER, runs[0][: batches // 10])  # warm-up: imports, caches, pages
    baseline = per_batch(store, NO_LEDGER, runs[0])
    ledgered = per_batch(store, with_ledger, runs[1])
    with_ledger.close()
    print(
        f"{name} store: {baseline:8.1f} µs/batch without the ledger, {ledgered:8.1f} with it "
        f"(+{ledgered - baseline:.1f} µs, x{ledgered / baseline:.2f}); "
        f"+{(ledgered - baseline) / items:.2f} µs per item"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=500)
    parser.add_argument("--items", type=int, default=20, help="items per delivered batch")
    args = parser.parse_args()
    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{args.batches} batches of {args.items} items, {SUBSCRIBERS} subscribers on one source"
    )
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        alone = per_record(directory, args.batches)
        print(f"ledger alone: {alone:.1f} µs per record ({1 + SUBSCRIBERS} rows, one transaction)")
        measure("null", NullSink(), directory, args.batches, args.items)
        store = SqliteStore(str(directory / "items.db"))
        measure("sqlite", store, directory, args.batches, args.items)
        store.close()


if __name__ == "__main__":
    main()
