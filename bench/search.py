"""Search latency: a fixed set of queries over a million items, in each store that searches.

Items of CRAWLERS crawlers, their titles and texts drawn (seeded) from a vocabulary whose word
frequencies fall off as in prose (Zipf), are written through Store.add, the bulk path, in
batches of BATCH. Then each query of QUERIES asks for the first page (PAGE items) of one
user's crawlers (a tenth of them), REPEATS times; the median and p99 are printed against the
same run's baseline: the first page of one crawler's own item list (Store.page).

    .venv/bin/python -m bench.search [--items N] [--stores sqlite,cassandra]
        [--cassandra HOST:PORT] [--keep PATH]

`--keep PATH` writes the SQLite store there and reuses it when it is there already (a
million items take minutes to write). Cassandra (the one answering at --cassandra, default
127.0.0.1:19042, or one started from the cached jars) is asked first with an empty keyspace:
a server that cannot search says why, and nothing is loaded into it. Its keyspace is dropped
afterwards.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench import machine
from bench.ingest import local_cassandra
from blackwidow.core.store import SearchUnsupported, Store, open_store, upgrade_store
from blackwidow.core.store.cassandra.config import parse
from blackwidow.core.store.cassandra.store import make_cluster
from blackwidow.core.store.windows import words
from sources.model import Item

CRAWLERS = 100
BATCH = 1000
PAGE = 50  # the API's default page
REPEATS = 30
VOCABULARY = 20_000
SEED = 7
PROGRESS_BATCHES = 100  # a line on stderr every this many batches written
WRITE_COST_ITEMS = 50_000  # items written with and without the index
# from the most frequent words of the vocabulary to the rarest, alone and together
QUERIES = ("w0", "w3", "w40", "w400", "w4000", "w19000", "w0 w3", "w40 w400", "w3 w19000")


def cumulative_weights() -> list[float]:
    """Zipf: the word of rank r is drawn in proportion to 1/r."""
    return list(itertools.accumulate(1 / (rank + 1) for rank in range(VOCABULARY)))


def make_items(count: int, start: int, crawlers: int = CRAWLERS) -> Iterator[list[Item]]:
    """Batches of items, crawler after crawler round the `crawlers`, fetched a second apart."""
    draw = random.Random(SEED + start)
    names, weights = [f"w{n}" for n in range(VOCABULARY)], cumulative_weights()
    at = datetime(2025, 1, 1, tzinfo=UTC)
    for first in range(start, start + count, BATCH):
        batch = []
        for n in range(first, min(first + BATCH, start + count)):
            title = " ".join(draw.choices(names, cum_weights=weights, k=8))
            text = " ".join(draw.choices(names, cum_weights=weights, k=60))
            batch.append(
                Item(
                    f"item-{n}",
                    "rss",
                    f"https://news.example/{n}",
                    title,
                    text,
                    "editor",
                    at,
                    at + timedelta(seconds=n),
                    crawler_id=1 + n % crawlers,
                )
            )
        yield batch


def load(store: Store, count: int) -> float:
    """Write `count` items, BATCH at a time; items a second apart; the rate in items/s."""
    started = time.perf_counter()
    for number, batch in enumerate(make_items(count, 0), start=1):
        store.add(batch)
        if number % PROGRESS_BATCHES == 0:
            print(f"  {number * BATCH:,} items written", file=sys.stderr, flush=True)
    return count / (time.perf_counter() - started)


def write_cost(count: int) -> None:
    """What keeping the index costs a write: `count` items into a new store, and into one whose
    indexing trigger was dropped, the batches made beforehand."""
    batches = list(make_items(count, 0))
    rates = {}
    with tempfile.TemporaryDirectory(prefix="bench-search-") as work:
        for indexed in (True, False):
            path = Path(work) / f"items-{indexed}.db"
            store = open_store(f"sqlite:///{path}")
            if not indexed:
                with sqlite3.connect(path) as db:
                    db.execute("DROP TRIGGER items_words_added")
                db.close()
            started = time.perf_counter()
            for batch in batches:
                store.add(batch)
            rates[indexed] = count / (time.perf_counter() - started)
            store.close()
    print(
        f"sqlite: writes {rates[True]:,.0f} items/s indexed, {rates[False]:,.0f} items/s"
        f" without the index ({rates[False] / rates[True]:.2f}x), {count:,} items"
    )


def timed(read: Callable[[], object]) -> list[float]:
    """Seconds of REPEATS reads, after one untimed (a warm cache, as a busy hub's is)."""
    read()
    spent = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        read()
        spent.append(time.perf_counter() - started)
    return spent


def summary(spent: list[float]) -> tuple[float, float]:
    """Median and p99 in milliseconds."""
    ordered = sorted(spent)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1000, p99 * 1000


def measure(name: str, store: Store, count: int) -> None:
    users_crawlers = list(range(1, CRAWLERS + 1, 10))  # one user's: a tenth of the crawlers
    base_median, base_p99 = summary(timed(lambda: store.page(users_crawlers[0], PAGE)))
    print(
        f"{name}: {count:,} items; baseline (a crawler's first page of {PAGE}):"
        f" median {base_median:.2f} ms, p99 {base_p99:.2f} ms"
    )
    every: list[float] = []
    for query in QUERIES:
        found = store.search(words(query), users_crawlers, PAGE)
        spent = timed(lambda q=query: store.search(words(q), users_crawlers, PAGE))
        every += spent
        median, p99 = summary(spent)
        print(
            f"  {query!r:14} {len(found.items):3} found  median {median:8.2f} ms"
            f"  p99 {p99:8.2f} ms  ({median / base_median:6.1f}x baseline)"
        )
    median, p99 = summary(every)
    print(
        f"  all queries    median {median:8.2f} ms  p99 {p99:8.2f} ms"
        f"  ({median / base_median:.1f}x / {p99 / base_p99:.1f}x the baseline's)"
    )


def sqlite(count: int, keep: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-search-") as work:
        path = keep or Path(work) / "items.db"
        fresh = not path.exists()
        store = open_store(f"sqlite:///{path}")
        try:
            if fresh:
                print(f"sqlite: loaded {count:,} items at {load(store, count):,.0f} items/s")
            measure("sqlite", store, store.count(1) * CRAWLERS)
        finally:
            store.close()


def cassandra(contact: str, count: int) -> None:
    with local_cassandra(contact) as answering:
        keyspace = f"bench_{uuid.uuid4().hex[:8]}"
        url = f"cassandra://{answering}/{keyspace}?consistency=ONE&search=on"
        upgrade_store(url)
        store = open_store(url)
        try:
            store.search(("probe",), [1], 1)
            print(f"cassandra: loaded {count:,} items at {load(store, count):,.0f} items/s")
            measure("cassandra", store, count)
        except SearchUnsupported as error:
            print(f"cassandra: not measured: {error}")
        finally:
            store.close()
            drop(url, keyspace)


def drop(url: str, keyspace: str) -> None:
    cluster = make_cluster(parse(url.removeprefix("cassandra://")))
    try:
        cluster.connect().execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)
    finally:
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--cassandra", default="127.0.0.1:19042")
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--stores", default="sqlite,cassandra", help="comma-separated")
    args = parser.parse_args()
    stores = set(args.stores.split(","))
    print(machine.described())
    if "sqlite" in stores:
        write_cost(min(args.items, WRITE_COST_ITEMS))
        sqlite(args.items, args.keep)
    if "cassandra" in stores:
        cassandra(args.cassandra, args.items)


if __name__ == "__main__":
    main()
