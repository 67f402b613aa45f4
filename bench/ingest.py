"""Ingest throughput: items per second from one process into the local stores.

For each store the pipelined path (Store.add, batches of BATCH items) is timed against a naive
loop that writes one item per synchronous round trip, in the same run, and the ratio printed.
Both first write WARMUP items untimed, so a fresh Cassandra's JIT is warm for either.

    .venv/bin/python -m bench.ingest [--items N] [--cassandra HOST:PORT]

Cassandra: uses the one answering at --cassandra (default 127.0.0.1:19042), or starts a
single node from the jars `make services` cached and stops it afterwards.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from bench import machine
from blackwidow.store import open_store, upgrade_store
from blackwidow.store.cassandra import make_cluster
from blackwidow.store.cassandra_config import parse
from sources.model import Item, utc_text
from tests.services.cassandra import Cassandra
from tests.services.server import port_answers

BATCH = 1000
WARMUP = 10_000


def make_items(count: int, crawler_id: int) -> list[Item]:
    """Items shaped like feed entries: a URL, a title, a paragraph of text."""
    now = datetime.now(UTC)
    text = "A paragraph of feed text about crawling, routing and storage. " * 5
    return [
        Item(
            id=f"https://news.example/{uuid.uuid4().hex}",
            source="rss",
            url=f"https://news.example/story/{n}",
            title=f"Story {n} about distributed crawling",
            text=text,
            author="editor@news.example",
            published_at=now,
            fetched_at=now,
            crawler_id=crawler_id,
        )
        for n in range(count)
    ]


def rate(count: int, run: Callable[[], None]) -> float:
    started = time.perf_counter()
    run()
    return count / (time.perf_counter() - started)


def pipelined(url: str, items: list[Item]) -> float:
    store = open_store(url)
    store.count(items[0].crawler_id or 0)  # connect and prepare outside the timing

    def run() -> None:
        for start in range(0, len(items), BATCH):
            store.add(items[start : start + BATCH])

    try:
        return rate(len(items), run)
    finally:
        store.close()


def naive_cassandra(url: str, items: list[Item]) -> float:
    """One synchronous INSERT per item into the newest-first table: the least a writer does."""
    config = parse(url.removeprefix("cassandra://"))
    cluster = make_cluster(config)
    session = cluster.connect()
    insert = session.prepare(
        f"INSERT INTO {config.keyspace}.items_by_crawler (crawler_id, day, fetched_at, item_id,"
        " source, url, title, text, author, published_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )

    def run() -> None:
        for i in items:
            day = i.fetched_at.date()
            values = (i.crawler_id, day, i.fetched_at, i.id, i.source, i.url, i.title, i.text)
            session.execute(insert, (*values, i.author, i.published_at))

    try:
        return rate(len(items), run)
    finally:
        cluster.shutdown()


def naive_sqlite(path: Path, items: list[Item]) -> float:
    """One INSERT and one commit per item: what a writer without batching does."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")

    def run() -> None:
        for i in items:
            db.execute(
                "INSERT OR IGNORE INTO items (crawler_id, item_id, source, url, title, text,"
                " author, published_at, fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    i.crawler_id,
                    i.id,
                    i.source,
                    i.url,
                    i.title,
                    i.text,
                    i.author,
                    utc_text(i.published_at or i.fetched_at),
                    utc_text(i.fetched_at),
                ),
            )

    try:
        return rate(len(items), run)
    finally:
        db.close()


@contextmanager
def local_cassandra(contact: str) -> Iterator[str]:
    host, _, port = contact.rpartition(":")
    if port_answers(host, int(port)):
        yield contact
        return
    with tempfile.TemporaryDirectory(prefix="bench-cassandra-") as run_dir:
        server = Cassandra(Path(run_dir), int(port), storage_port=int(port) - 2000, quick_jit=False)
        server.start()
        try:
            server.wait_ready(server.ready_timeout)
            yield contact
        finally:
            server.stop()


def report(store: str, count: int, fast: float, slow: float) -> None:
    print(
        f"{store:9} pipelined {fast:9,.0f} items/s   naive {slow:8,.0f} items/s"
        f"   ratio {fast / slow:5.1f}x   ({count:,} items)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--naive-items", type=int, default=5_000)
    parser.add_argument("--cassandra", default="127.0.0.1:19042")
    args = parser.parse_args()
    print(machine.described())

    with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as work:
        url = f"sqlite:///{Path(work) / 'items.db'}"
        upgrade_store(url)
        fast = pipelined(url, make_items(args.items, 1))
        slow = naive_sqlite(Path(work) / "items.db", make_items(args.naive_items, 2))
        report("sqlite", args.items, fast, slow)

    with local_cassandra(args.cassandra) as contact:
        url = f"cassandra://{contact}/bench_{uuid.uuid4().hex[:8]}?consistency=ONE"
        upgrade_store(url)
        pipelined(url, make_items(WARMUP, 3))
        naive_cassandra(url, make_items(WARMUP // 10, 4))
        slow = naive_cassandra(url, make_items(args.naive_items, 2))
        fast = pipelined(url, make_items(args.items, 1))
        report("cassandra", args.items, fast, slow)


if __name__ == "__main__":
    main()
