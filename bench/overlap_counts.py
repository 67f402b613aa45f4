"""Exact counts with two writers of one crawler at once: what the recount costs, in one run.

Two store instances (two nodes) write the same items of one crawler at the same moment, batch
by batch, so both take some items as new and both count them. Once both have been quiet for
the store's count_settles_after, the next `count` recounts the crawler's distinct ids and
mends the totals. It times, on one keyspace:

- `count` with nothing to mend: the totals read that each write of a node now adds (the
  baseline, median of 21);
- the recount that mends the overlap: every id row of the crawler counted on the server;
- the writes themselves, for scale: items/s of one writer's `Store.add` while the other
  writes the same items.

Claiming each id by compare-and-set instead, the other way to exact counts, is timed by
`bench.id_claims` (bench/README.md, "Store exactness").

    .venv/bin/python -m bench.overlap_counts [--items N] [--cassandra HOST:PORT]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from typing import TypeVar

from bench.ingest import BATCH, local_cassandra, make_items
from blackwidow.core.store import Store, open_store, upgrade_store
from sources.model import Item

SETTLE_MARGIN = 1.0  # seconds past count_settles_after before the mending count
COUNTS = 21  # count calls timed with nothing to mend
T = TypeVar("T")


def write_at_once(stores: tuple[Store, Store], items: list[Item]) -> float:
    """Both stores write every batch together; the first store's items/s."""
    elapsed: list[float] = []

    def write(store: Store, timed: bool) -> None:
        started = time.perf_counter()
        for start in range(0, len(items), BATCH):
            at_once.wait()
            store.add(items[start : start + BATCH])
        if timed:
            elapsed.append(time.perf_counter() - started)

    at_once = threading.Barrier(2)
    writers = [threading.Thread(target=write, args=(s, n == 0)) for n, s in enumerate(stores)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    return len(items) / elapsed[0]


def timed(call: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    value = call()
    return time.perf_counter() - started, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--cassandra", default="127.0.0.1:19042")
    args = parser.parse_args()
    with local_cassandra(args.cassandra) as contact:
        keyspace = f"bench_overlap_{uuid.uuid4().hex[:8]}"
        url = f"cassandra://{contact}/{keyspace}?consistency=ONE&request_timeout=2"
        upgrade_store(url)
        stores = (open_store(url), open_store(url))
        try:
            crawler = 1
            items = make_items(args.items, crawler)
            written = write_at_once(stores, items)
            overcounted = stores[0].count(crawler)  # one of them writing: nothing mended yet
            time.sleep(stores[0].count_settles_after + SETTLE_MARGIN)
            recount, mended = timed(lambda: stores[0].count(crawler))
            counts = [timed(lambda: stores[0].count(crawler))[0] for _ in range(COUNTS)]
        finally:
            for store in stores:
                store.close()
    baseline = statistics.median(counts)
    print(f"cassandra, one crawler, {args.items:,} items written by two writers at once")
    print(f"  writes, one writer's Store.add   {written:9,.0f} items/s")
    print(f"  counted before the recount       {overcounted:9,} ({overcounted - mended:,} twice)")
    print(f"  counted after, distinct ids      {mended:9,}")
    print(f"  count, nothing to mend (median)  {baseline * 1000:9.2f} ms   1.0x")
    print(
        f"  the recount                      {recount * 1000:9.1f} ms   {recount / baseline:.0f}x"
        f"  ({args.items / recount:,.0f} ids/s)"
    )


if __name__ == "__main__":
    main()
