"""Dedup: store reads a node's seen-set saves on feed polls, and items/s with and without it.

Each of --crawlers crawlers has --entries entries stored already; then --polls polls offer each
crawler --entries entries, a --known share of them stored already and the rest new, through
the node's own path (a subscriber writing to the store through the node's sink). The same
polls run twice in one run, on crawlers of their own: without a seen-set (the baseline: the
store is asked about every id) and with one (trusted from the start, as on a node that has held
its crawlers past the settle time; its load from the store is timed apart). Ids count as
"asked" when the store had to read whether they were stored, "saved" when the filter vouched
they were not.

A filter never saves the read of a known id (a "maybe" must be asked, or an item could be
lost), so the saving is the new share: small on a poll of mostly known entries (the first
after a restart), most of it in the steady state, where an RSS source delivers only entries
new to the feed (--known 0.02).

    .venv/bin/python -m bench.dedup [--store sqlite|cassandra] [--crawlers N] [--known 0.98]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

from bench import machine
from bench.export import store_url
from blackwidow.core.store import Store, open_store
from sources.model import Item, SubscriberSpec
from spawn.output.sink import NodeSink
from spawn.pool.change_counter import ChangeCounter
from spawn.pool.seen_set import SeenSet
from spawn.pool.subscriber import Subscriber

TEXT = "A paragraph of feed text about crawling, routing and storage. " * 5


def entry(crawler_id: int, n: int) -> Item:
    """A feed entry as a data source hands it over (no crawler yet), its id a URL."""
    now = datetime.now(UTC)
    return Item(
        id=f"https://news.example/{crawler_id}/story/{n}",
        source="rss",
        url=f"https://news.example/{crawler_id}/story/{n}",
        title=f"Story {n} about distributed crawling",
        text=TEXT,
        author="editor@news.example",
        published_at=now,
        fetched_at=now,
    )


def subscriber(sink: NodeSink, crawler_id: int, seen: bool) -> Subscriber:
    spec = SubscriberSpec(crawler_id, 1, "rss", {"feeds": []})
    filter_ = SeenSet(lambda: sink.stored_ids(crawler_id), 0.0) if seen else None
    return Subscriber(
        spec, sink, 0.0, ChangeCounter(), on_failing=lambda _: None, seen=filter_, buffer=10**6
    )


def polls(crawler_id: int, entries: int, known: float, count: int) -> list[list[Item]]:
    """Each poll: `known` of `entries` from the ones stored before, the rest never seen."""
    old = round(entries * known)
    return [
        [entry(crawler_id, n) for n in range(old)]
        + [entry(crawler_id, entries + p * entries + n) for n in range(entries - old)]
        for p in range(count)
    ]


def timed(run: Callable[[], None]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def measure(store: Store, first_id: int, args: argparse.Namespace, seen: bool) -> dict:
    """Fill, then poll; what the store was asked and how fast the polls went."""
    ids = range(first_id, first_id + args.crawlers)
    for crawler_id in ids:
        store.add([entry(crawler_id, n).for_crawler(crawler_id) for n in range(args.entries)])
    sink = NodeSink(store)
    subscribers = [subscriber(sink, crawler_id, seen) for crawler_id in ids]
    for taken in subscribers:
        taken.load_count()
    loading = timed(lambda: [s.seen.unseen([]) for s in subscribers if s.seen is not None])
    work = [
        (s, polls(s.spec.crawler_id, args.entries, args.known, args.polls)) for s in subscribers
    ]

    def run() -> None:
        for p in range(args.polls):
            for taken, offered in work:
                taken.offer(offered[p])

    seconds = timed(run)
    offered = args.crawlers * args.polls * args.entries
    saved = sum(s.seen.vouched for s in subscribers if s.seen is not None)
    return {
        "offered": offered,
        "asked": offered - saved,
        "saved": saved,
        "rate": offered / seconds,
        "loading": loading,
    }


def report(kind: str, name: str, got: dict, baseline: dict) -> None:
    print(
        f"{kind:9} {name:13} asked {got['asked']:>9,}  saved {got['saved']:>9,}"
        f"  {got['rate']:9,.0f} items/s  ratio {got['rate'] / baseline['rate']:5.2f}x"
        f"  (filters loaded in {got['loading']:.2f}s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["sqlite", "cassandra"], default="sqlite")
    parser.add_argument("--crawlers", type=int, default=2000)
    parser.add_argument("--entries", type=int, default=50, help="entries per feed poll")
    parser.add_argument("--polls", type=int, default=3)
    parser.add_argument("--known", type=float, default=0.98, help="share of entries stored")
    parser.add_argument("--cassandra", default="127.0.0.1:19042")
    args = parser.parse_args()
    print(machine.described())
    print(
        f"{args.crawlers:,} crawlers x {args.polls} polls x {args.entries} entries,"
        f" {args.known:.0%} stored already"
    )
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-dedup-")))
        store = open_store(stack.enter_context(store_url(args.store, args.cassandra, work)))
        stack.callback(store.close)
        baseline = measure(store, 1, args, seen=False)
        seen = measure(store, 1 + args.crawlers, args, seen=True)
    report(args.store, "no seen-set", baseline, baseline)
    report(args.store, "seen-set", seen, baseline)


if __name__ == "__main__":
    main()
