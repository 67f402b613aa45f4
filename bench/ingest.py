"""Ingest throughput: items per second from one process into the local stores.

For each store, two shapes of write, each timed against its baseline in the same run:

- one crawler: the pipelined path (Store.add, batches of BATCH items) against a naive loop
  that writes one item per synchronous round trip;
- many crawlers (a node's subscribers, WRITES writes of PER_WRITE items each): Store.add_many,
  WRITES writes a call, as a node's group commit makes them, against the path before it, one
  Store.add per write, one at a time and from WRITES threads at once; and the node's path,
  WRITES threads writing through a group commit. The paths take turns, ROUNDS each, and each
  one's median is printed.

Cassandra's figures add the CPU each item cost the client and, where the server runs on this
machine, the server, and the requests sent per item. Both first write WARMUP items untimed,
so a fresh Cassandra's JIT is warm for either.

    .venv/bin/python -m bench.ingest [--items N] [--naive-items N] [--crawler-items N]
        [--cassandra HOST:PORT]

Cassandra: uses the one answering at --cassandra (default 127.0.0.1:19042), or starts a
single node from the jars `make services` cached and stops it afterwards.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psutil
from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent
from cassandra.query import BatchStatement

from bench import machine
from blackwidow.core.store import Store, Write, open_store, upgrade_store
from blackwidow.core.store.cassandra.config import parse
from blackwidow.core.store.cassandra.rows import (
    batches,
    bucket_of_item,
    crawler_rows,
    day_of,
    grouped,
)
from blackwidow.core.store.cassandra.statements import Statements
from blackwidow.core.store.cassandra.store import IN_FLIGHT, make_cluster
from sources.model import Item, utc_text
from spawn.output.group_commit import GroupCommit
from tests.services.cassandra import Cassandra
from tests.services.server import port_answers

BATCH = 1000
WARMUP = 10_000
WRITES = 20  # crawlers' writes in one Store.add_many, as a node's group commit gathers them
PER_WRITE = 50  # items in each: a feed's new entries
ROUNDS = 3  # turns each many-crawler path takes, its median reported


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


@dataclass(frozen=True)
class Figure:
    """A run's items/s, with what each item cost: CPU in microseconds (the server's where it
    runs on this machine) and requests sent to the store."""

    rate: float
    client_us: float
    server_us: float | None
    requests: float
    rows: float = 0.0  # statements sent per item, each of a batch counted

    def __str__(self) -> str:
        text = f"{self.rate:7,.0f} items/s  client {self.client_us:4.0f} µs"
        if self.server_us is not None:
            text += f"  server {self.server_us:4.0f} µs"
        if self.requests:  # the Cassandra driver's; SQLite sends none
            text += f"  {self.requests:5.3f} requests  {self.rows:4.2f} rows"
        return text + " per item"


class Meter:
    """Measures runs: this process's CPU, the server process's, and the requests the Cassandra
    driver sends (each goes through Session.execute_async, counted while the meter lives)."""

    def __init__(self, server: psutil.Process | None = None) -> None:
        self._server = server
        self._requests = 0
        self._rows = 0  # statements sent, a batch's each counted: rows written or read
        self._lock = threading.Lock()
        sending = Session.execute_async

        def counted(session: Session, query: object, *args: object, **kwargs: object) -> object:
            rows = len(query._statements_and_parameters) if isinstance(query, BatchStatement) else 1
            with self._lock:
                self._requests += 1
                self._rows += rows
            return sending(session, query, *args, **kwargs)

        Session.execute_async = counted  # type: ignore[method-assign]

    def run(self, count: int, work: Callable[[], None]) -> Figure:
        me = psutil.Process()
        client, server, sent, rows = _cpu(me), self._server_cpu(), self._requests, self._rows
        speed = rate(count, work)
        after = self._server_cpu()
        server_us = None if server is None or after is None else (after - server) / count * 1e6
        client_us = (_cpu(me) - client) / count * 1e6
        return Figure(
            speed,
            client_us,
            server_us,
            (self._requests - sent) / count,
            (self._rows - rows) / count,
        )

    def _server_cpu(self) -> float | None:
        return None if self._server is None else _cpu(self._server)


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def server_process(port: int) -> psutil.Process | None:
    """The process listening on `port` on this machine, if it can be seen."""
    for connection in psutil.net_connections("tcp"):
        if connection.laddr and connection.laddr.port == port and connection.status == "LISTEN":
            return psutil.Process(connection.pid) if connection.pid else None
    return None


def pipelined(store: Store, items: list[Item]) -> None:
    for start in range(0, len(items), BATCH):
        store.add(items[start : start + BATCH])


def crawlers_writes(count: int, first_crawler: int) -> list[list[Write]]:
    """Calls of WRITES writes, each of PER_WRITE items of its own crawler (count items)."""
    crawlers = range(first_crawler, first_crawler + WRITES)
    rounds = count // (WRITES * PER_WRITE)
    items = {crawler: make_items(rounds * PER_WRITE, crawler) for crawler in crawlers}
    return [
        [Write(items[c][n * PER_WRITE : (n + 1) * PER_WRITE]) for c in crawlers]
        for n in range(rounds)
    ]


def one_add_each(store: Store, calls: list[list[Write]]) -> None:
    """The path before group commit: a store call per write."""
    for writes in calls:
        for write in writes:
            store.add(write.items)


def one_add_each_at_once(store: Store, calls: list[list[Write]]) -> None:
    """A store call per write, the writes of each round from threads at once, as a node's
    fetcher threads made them before group commit."""
    with ThreadPoolExecutor(WRITES) as threads:
        for writes in calls:
            list(threads.map(lambda write: store.add(write.items), writes))


def add_many(store: Store, calls: list[list[Write]]) -> None:
    for writes in calls:
        store.add_many(writes)


def group_commit_at_once(store: Store, calls: list[list[Write]]) -> None:
    """The node's path: the writes of each round from threads at once, through one group
    commit (spawn.output.group_commit), which gathers what waits into add_many calls."""
    commits = GroupCommit(store.add_many)
    with ThreadPoolExecutor(WRITES) as threads:
        for writes in calls:
            list(threads.map(commits.add, writes))


def many_crawlers(meter: Meter, store: Store, count: int, first_crawler: int) -> None:
    """Each path over items of crawlers of its own, ROUNDS times in turn (the machine's load
    drifts), each path's median round against the first path's."""
    paths = (
        ("one add per write", one_add_each),
        (f"one add per write, {WRITES} threads", one_add_each_at_once),
        (f"add_many of {WRITES} writes", add_many),
        (f"group commit, {WRITES} threads", group_commit_at_once),
    )
    runs: dict[str, list[Figure]] = {name: [] for name, _ in paths}
    crawler = first_crawler
    for _ in range(ROUNDS):
        for name, path in paths:
            calls = crawlers_writes(count // ROUNDS, crawler)
            crawler += WRITES
            written = sum(len(write.items) for writes in calls for write in writes)
            runs[name].append(meter.run(written, lambda p=path, c=calls: p(store, c)))
    medians = {
        name: sorted(figures, key=lambda f: f.rate)[ROUNDS // 2] for name, figures in runs.items()
    }
    baseline = medians[paths[0][0]].rate
    for name, figure in medians.items():
        print(f"  {name:31} {figure}   {figure.rate / baseline:4.1f}x")


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


@contextmanager
def plain_writer(url: str) -> Iterator[Callable[[list[Item]], None]]:
    """The rows Store.add leaves for new items (items_by_crawler, crawler_days, an id row),
    written as the store writes them (unlogged batches by partition and first replica, IN_FLIGHT
    requests out) with no exactness: no read, no pending round, no confirm, no total. The
    server's and the driver's floor for these rows; a writer of BATCH items a call."""
    config = parse(url.removeprefix("cassandra://"))
    cluster = make_cluster(config)
    session = cluster.connect()
    st = Statements.prepare(session, config.keyspace, words=False)
    id_row = session.prepare(
        f"INSERT INTO {config.keyspace}.items_by_id (crawler_id, bucket, item_id, fetched_at,"
        " writer, pending) VALUES (?, ?, ?, ?, ?, false)"
    )
    writer = uuid.uuid4()

    def write(items: list[Item]) -> None:
        for start in range(0, len(items), BATCH):
            part = items[start : start + BATCH]
            days = {(i.crawler_id, day_of(i.fetched_at)) for i in part}
            work = crawler_rows(st, part, 0, first=True)
            work += [(st.insert_day, (crawler, day, 0)) for crawler, day in days]
            by_bucket = grouped(part, bucket_of_item)
            work += batches(
                id_row, by_bucket, lambda b, i: (*b, i.id, i.fetched_at, writer), st.place
            )
            execute_concurrent(session, work, concurrency=IN_FLIGHT, raise_on_first_error=True)

    try:
        yield write
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


def benchmark_cassandra(run_dir: Path, port: int) -> Cassandra:
    """A Cassandra from the cached jars at full JIT: peak speed counts here, not start-up."""
    return Cassandra(run_dir, port, storage_port=port - 2000, quick_jit=False)


@contextmanager
def local_cassandra(
    contact: str, server_for: Callable[[Path, int], Cassandra] = benchmark_cassandra
) -> Iterator[str]:
    """The Cassandra answering at `contact`, or one `server_for` starts there for the run."""
    host, _, port = contact.rpartition(":")
    if port_answers(host, int(port)):
        yield contact
        return
    with tempfile.TemporaryDirectory(prefix="bench-cassandra-") as run_dir:
        server = server_for(Path(run_dir), int(port))
        server.start()
        try:
            server.wait_ready(server.ready_timeout)
            yield contact
        finally:
            server.stop()


def report(store: str, count: int, fast: Figure, slow: float) -> None:
    print(f"{store} one crawler, {count:,} items in writes of {BATCH}")
    print(f"  {'pipelined Store.add':31} {fast}   {fast.rate / slow:4.1f}x")
    print(f"  {'naive, a round trip per item':31} {slow:7,.0f} items/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--naive-items", type=int, default=5_000)
    parser.add_argument("--crawler-items", type=int, default=10_000)
    parser.add_argument("--cassandra", default="127.0.0.1:19042")
    args = parser.parse_args()
    print(machine.described())
    many = f"{WRITES} crawlers, {args.crawler_items:,} items in writes of {PER_WRITE}"

    with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as work:
        url = f"sqlite:///{Path(work) / 'items.db'}"
        upgrade_store(url)
        store, meter = open_store(url), Meter()
        items = make_items(args.items, 1)
        fast = meter.run(args.items, lambda: pipelined(store, items))
        slow = naive_sqlite(Path(work) / "items.db", make_items(args.naive_items, 2))
        report("sqlite", args.items, fast, slow)
        print(f"sqlite {many}")
        many_crawlers(meter, store, args.crawler_items, 100)
        store.close()

    with local_cassandra(args.cassandra) as contact:
        url = f"cassandra://{contact}/bench_{uuid.uuid4().hex[:8]}?consistency=ONE"
        upgrade_store(url)
        meter = Meter(server_process(int(contact.rpartition(":")[2])))
        store = open_store(url)
        store.count(0)  # connect and prepare outside the timing
        pipelined(store, make_items(WARMUP, 3))
        naive_cassandra(url, make_items(WARMUP // 10, 4))
        slow = naive_cassandra(url, make_items(args.naive_items, 2))
        items = make_items(args.items, 1)
        exact = meter.run(args.items, lambda: pipelined(store, items))
        report("cassandra", args.items, exact, slow)
        with plain_writer(url) as write:
            write(make_items(WARMUP, 5))
            plain_items = make_items(args.items, 6)
            plain = meter.run(args.items, lambda: write(plain_items))
        label = "plain batches, no exactness"
        print(f"  {label:31} {plain}   Store.add makes {exact.rate / plain.rate:.2f} of it")
        print(f"cassandra {many}")
        many_crawlers(meter, store, args.crawler_items, 100)
        store.close()


if __name__ == "__main__":
    main()
