"""Export speed and memory: a crawler's items.jsonl and items.csv downloaded from a real hub.

One crawler holds N items, another N/10 (the same-run baseline). Each export of each is
downloaded over HTTP from a hub process started for that download alone, while the hub's
resident memory is sampled (/proc/<pid>/status VmRSS, every 20 ms). It prints items/s and
the peak RSS of each download, and the ratio of N to N/10: a peak that does not grow with N
shows the export streams in constant memory.

    .venv/bin/python -m bench.export [--items N] [--store sqlite|cassandra] [--cassandra H:P]

The items are written by the store's own `add`, in batches of BATCH, from this process
(SQLite: one transaction a batch; Cassandra: pipelined single-partition batches), fetched
over DAYS days so Cassandra reads many day partitions. Cassandra: the one answering at
--cassandra (default 127.0.0.1:19042, the suite's), else one started from the jars `make
services` cached; a keyspace of its own, dropped at the end. Only 127.0.0.1; the hub is
stopped at the end, on Ctrl-C or on error too.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests

from bench import machine
from bench.hub_processes import REPO, Processes, raise_on_sigterm, start_hub
from bench.ingest import local_cassandra
from blackwidow.core.store import open_store, upgrade_store
from blackwidow.core.store.cassandra.config import parse
from blackwidow.core.store.cassandra.store import make_cluster
from sources.model import Item

BATCH = 5000
DAYS = 30
ADMIN = "bench-admin-token-0123456789"
TEXT = 'A paragraph of feed text, with a comma and a "quote", about crawling. ' * 4


def items(crawler_id: int, count: int) -> Iterator[Item]:
    """Feed-entry-shaped items, newest now, spread evenly over DAYS days before."""
    now = datetime.now(UTC)
    step = timedelta(days=DAYS) / max(count, 1)
    for n in range(count):
        yield Item(
            id=f"https://news.example/{crawler_id}/{n}",
            source="rss",
            url=f"https://news.example/story/{n}",
            title=f"Story {n}: distributed crawling, ünïcödé",
            text=TEXT,
            author="editor@news.example",
            published_at=now - n * step,
            fetched_at=now - n * step,
            crawler_id=crawler_id,
        )


def fill(store_url: str, crawler_id: int, count: int) -> float:
    """Seconds to write `count` items through Store.add, BATCH at a time."""
    store = open_store(store_url)
    started = time.perf_counter()
    try:
        generated = items(crawler_id, count)
        while batch := list(itertools.islice(generated, BATCH)):
            store.add(batch)
    finally:
        store.close()
    return time.perf_counter() - started


class PeakRss:
    """The highest VmRSS of a process while in the `with` block, polled every 20 ms."""

    def __init__(self, pid: int) -> None:
        self._status = Path(f"/proc/{pid}/status")
        self._stop = threading.Event()
        self.peak_kib = 0

    def _rss(self) -> int:
        for line in self._status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def _poll(self) -> None:
        while not self._stop.wait(0.02):
            self.peak_kib = max(self.peak_kib, self._rss())

    def __enter__(self) -> PeakRss:
        self.peak_kib = self._rss()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Download:
    rate: float  # items/s
    megabytes: float
    peak_mib: float


def download(url: str, token: str, pid: int, count: int) -> Download:
    """Stream one export to nowhere, checking it holds a line per item (and a header)."""
    lines = size = 0
    headers = {"Authorization": f"Bearer {token}"}
    with PeakRss(pid) as rss:
        started = time.perf_counter()
        with requests.get(url, headers=headers, stream=True, timeout=60) as answer:
            answer.raise_for_status()
            for chunk in answer.iter_content(chunk_size=1 << 16):
                size += len(chunk)
                lines += chunk.count(b"\n")
        seconds = time.perf_counter() - started
    expected = count + (1 if url.endswith(".csv") else 0)
    if lines != expected:
        raise SystemExit(f"{url}: {lines} lines, expected {expected}")
    return Download(count / seconds, size / 1e6, rss.peak_kib / 1024)


def crawler(hub_url: str, token: str, name: str) -> int:
    body = {"name": name, "source": "rss", "query": {"feeds": ["https://news.example/f"]}}
    answer = requests.post(
        f"{hub_url}/api/v1/crawlers", json=body, headers={"Authorization": f"Bearer {token}"}
    )
    answer.raise_for_status()
    return answer.json()["id"]


@contextmanager
def store_url(kind: str, contact: str, work: Path) -> Iterator[str]:
    """An upgraded, empty store of the kind asked for; a Cassandra keyspace is dropped after."""
    if kind == "sqlite":
        url = f"sqlite:///{work / 'items.db'}"
        upgrade_store(url)
        yield url
        return
    with local_cassandra(contact) as answering:
        keyspace = f"bench_export_{uuid.uuid4().hex[:8]}"
        url = f"cassandra://{answering}/{keyspace}?consistency=ONE"
        upgrade_store(url)
        try:
            yield url
        finally:
            cluster = make_cluster(parse(url.removeprefix("cassandra://")))
            try:
                cluster.connect().execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
            finally:
                cluster.shutdown()


def fresh_hub_download(
    env: dict[str, str], work: Path, n: int, path: str, token: str, count: int
) -> Download:
    """One download from a hub process started for it alone, so its peak is its own."""
    processes = Processes()
    try:
        hub = start_hub(processes, REPO, env, work, n)
        return download(f"{hub.url}{path}", token, hub.process.pid, count)
    finally:
        processes.stop_all()


def setup(env: dict[str, str], work: Path) -> tuple[str, dict[str, int]]:
    """A user's token and their two crawlers' ids, from a hub started for it."""
    processes = Processes()
    try:
        hub = start_hub(processes, REPO, env, work, 0)
        admin = {"Authorization": f"Bearer {ADMIN}"}
        made = requests.post(f"{hub.url}/api/v1/users", json={"name": "bench"}, headers=admin)
        made.raise_for_status()
        token = made.json()["token"]
        return token, {name: crawler(hub.url, token, name) for name in ("baseline", "measured")}
    finally:
        processes.stop_all()


def run(kind: str, count: int, contact: str) -> None:
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-export-")))
        url = stack.enter_context(store_url(kind, contact, work))
        env = {
            "BLACKWIDOW_DATABASE_URL": f"sqlite:///{work / 'hub.db'}",
            "BLACKWIDOW_STORE": url,
            "BLACKWIDOW_ADMIN_TOKEN": ADMIN,
            "BLACKWIDOW_CLUSTER_SECRET": "bench-cluster-secret-0123456789",
        }
        token, ids = setup(env, work)
        sizes = {"baseline": count // 10, "measured": count}
        for name, size in sizes.items():
            seconds = fill(url, ids[name], size)
            print(f"{kind}: filled {size:,} items in {seconds:.1f}s ({size / seconds:,.0f}/s)")
        runs = itertools.count(1)
        for extension in ("jsonl", "csv"):
            got = {}
            for name, size in sizes.items():
                path = f"/api/v1/crawlers/{ids[name]}/items.{extension}"
                got[name] = d = fresh_hub_download(env, work, next(runs), path, token, size)
                print(
                    f"{kind:9} {extension:5} {name:8} {size:>9,} items  {d.rate:9,.0f} items/s"
                    f"  {d.megabytes:8.1f} MB  hub peak RSS {d.peak_mib:7.1f} MiB"
                )
            small, big = got["baseline"], got["measured"]
            print(
                f"{kind:9} {extension:5} ratio N to N/10: peak RSS"
                f" {big.peak_mib / small.peak_mib:.2f}x, items/s {big.rate / small.rate:.2f}x"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--store", choices=["sqlite", "cassandra"], default="sqlite")
    parser.add_argument("--cassandra", default="127.0.0.1:19042")
    args = parser.parse_args()
    raise_on_sigterm()
    print(machine.described())
    run(args.store, args.items, args.cassandra)


if __name__ == "__main__":
    main()
