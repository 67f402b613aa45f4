"""Thread roots: what Store.add costs for replies with root lookups, against without, same run.

Timed runs per store, BATCH items per Store.add, each on a crawler of its own:

- plain: items in no conversation, for scale;
- replies, no roots: each item answers a parent stored earlier, with the root lookup and the
  move of early replies switched off (the store as it was before threads joined their root):
  the baseline;
- replies: the same with roots: parents looked up, conversations the replies name checked;
- late parents: each item is the parent of a reply stored earlier, so that reply moves (the
  worst case: every item moves one row into a root of its own).

    .venv/bin/python -m bench.threads [--items N] [--cassandra HOST:PORT]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

from bench import machine
from bench.ingest import BATCH, local_cassandra, make_items
from blackwidow.core.store import Store, open_store, threads, upgrade_store
from blackwidow.core.store.cassandra.config import parse
from blackwidow.core.store.cassandra.store import make_cluster
from sources.model import Item

WARMUP = 5_000


def replies_to(parents: list[Item]) -> list[Item]:
    """One RSS reply per parent: it names the parent as its conversation, as the parser does."""
    return [
        dataclasses.replace(
            parent, id=f"{parent.id}#reply", conversation_id=parent.id, in_reply_to=parent.id
        )
        for parent in parents
    ]


def threaded(count: int, crawler_id: int) -> list[Item]:
    """Items that are replies to posts never stored: each may gain replies of its own."""
    return [
        dataclasses.replace(item, conversation_id=f"{item.id}-post", in_reply_to=f"{item.id}-post")
        for item in make_items(count, crawler_id)
    ]


def add_all(store: Store, items: list[Item]) -> float:
    """Seconds to store the items in batches; every one must be new."""
    started = time.perf_counter()
    stored = sum(len(store.add(items[at : at + BATCH])) for at in range(0, len(items), BATCH))
    elapsed = time.perf_counter() - started
    assert stored == len(items), (stored, len(items))
    return elapsed


@contextlib.contextmanager
def no_roots() -> Iterator[None]:
    """The stores with nothing to look up and nothing to move."""
    with (
        mock.patch.object(threads, "parent_keys", lambda items: set()),
        mock.patch.object(threads, "re_roots", lambda stored: {}),
    ):
        yield


def replies_after_parents(store: Store, count: int, crawler_id: int) -> float:
    parents = threaded(count, crawler_id)
    add_all(store, parents)
    return add_all(store, replies_to(parents))


def late_parents(store: Store, count: int, crawler_id: int) -> float:
    parents = threaded(count, crawler_id)
    add_all(store, replies_to(parents))
    spent = add_all(store, parents)
    moved = store.conversation(parents[0].conversation_id or "", [crawler_id], 10)
    assert [item.id for item in moved] == [parents[0].id, f"{parents[0].id}#reply"]
    return spent


def measure(url: str, count: int) -> dict[str, float]:
    """Items per second for each kind of batch."""
    store = open_store(url)
    try:
        add_all(store, make_items(WARMUP, 9))
        replies_after_parents(store, WARMUP, 8)  # warms the conversation table's path too
        with no_roots():
            without = replies_after_parents(store, count, 2)
        seconds = {
            "plain": add_all(store, make_items(count, 1)),
            "replies, no roots": without,
            "replies": replies_after_parents(store, count, 3),
            "late parents": late_parents(store, count, 4),
        }
    finally:
        store.close()
    return {name: count / spent for name, spent in seconds.items()}


def report(name: str, rates: dict[str, float]) -> None:
    base = rates["replies, no roots"]
    shown = "   ".join(
        f"{kind} {rate:8,.0f}/s ({rate / base:4.2f}x)" for kind, rate in rates.items()
    )
    print(f"{name:9} {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--cassandra", default="127.0.0.1:19042")
    args = parser.parse_args()
    print(f"{machine.described()}; {args.items:,} items of each kind, {BATCH} a batch")
    with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as work:
        report("sqlite", measure(f"sqlite:///{Path(work) / 'items.db'}", args.items))
    with local_cassandra(args.cassandra) as contact:
        keyspace = f"bench_{uuid.uuid4().hex[:8]}"
        url = f"cassandra://{contact}/{keyspace}?consistency=ONE"
        upgrade_store(url)
        try:
            report("cassandra", measure(url, args.items))
        finally:
            drop_keyspace(url, keyspace)


def drop_keyspace(url: str, keyspace: str) -> None:
    """A Cassandra the benchmark did not start may be shared: leave nothing behind in it."""
    cluster = make_cluster(parse(url.removeprefix("cassandra://")))
    try:
        cluster.connect().execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    main()
