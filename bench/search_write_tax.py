"""Search's write tax on Cassandra: the server CPU each stored item costs with each way of
indexing its words, side by side with search off, in one run.

The options (OPTIONS), each in a keyspace of its own made by `blackwidow db upgrade`:

- off: the store with search off, the baseline;
- analyzed: an SAI index with an analyzer on a text column of the words (refused by 5.0);
- set: an SAI index on the values of a set<text> of the folded words, in the item's row
  (the store before schema version 6);
- postings: a words-to-items table partitioned like items_by_crawler (crawler, day), a row
  per word and item, written by one statement per item in the item's batch, so in the same
  mutation as its row;
- per-word: the same rows, a partition per (crawler, day, word) (not run by default: its
  statements cannot share the item's batch, and on a loaded machine they time out);
- blocks: the store with `search=on` since version 6, its word blocks
  (blackwidow.core.store.cassandra.word_blocks).

The options the store no longer has are written by OptionStore: the store's own write (ids,
days, confirms) with its items' rows made as the option makes them.

Each round writes ITEMS new items into each option's keyspace in turn (the order rotating),
BATCH at a time through Store.add (items of CRAWLERS crawlers, their text drawn as
bench.search draws it: Zipf words, about 55 distinct an item), then has the server flush the
keyspace (nodetool over JMX) and waits for its CPU to settle, so an option's flushes and
index building count against it. Per option, the median of ROUNDS rounds: items/s (the writes
alone), the server's CPU per item (the JVM's utime+stime in /proc/<pid>/stat, writes, flush and
settling), the client's, and the ratio of the server's to search off's.

    .venv/bin/python -m bench.search_write_tax [--items N] [--rounds N]
        [--cassandra HOST:PORT] [--jmx PORT] [--options off,set,postings,...]

Uses the Cassandra answering at --cassandra (default 127.0.0.1:19342; flushes only when its
JMX answers at --jmx), or starts one from the cached jars with that JMX port and stops it
afterwards. The keyspaces are dropped at the end.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cassandra.cluster import Session
from cassandra.query import BoundStatement, PreparedStatement

from bench import machine
from bench.hub_processes import cpu_seconds
from bench.ingest import local_cassandra, server_process
from bench.search import drop, make_items
from blackwidow.core.store import Store, StoreUnavailable, upgrade_store
from blackwidow.core.store.cassandra.config import parse
from blackwidow.core.store.cassandra.rows import (
    ROWS_PER_BATCH,
    Work,
    crawler_of,
    day_of,
    grouped,
    packed,
    unset_none,
)
from blackwidow.core.store.cassandra.statements import ITEM, Statements
from blackwidow.core.store.cassandra.store import CassandraStore
from blackwidow.core.store.cassandra.word_blocks import item_words
from sources.model import Item
from tests.services.cassandra import JAVA17_EXPORTS, JAVA17_OPENS, Cassandra, jar_dir

ITEMS = 10_000  # a round's items, per option
WARMUP = 5_000  # written untimed into each keyspace first, the JIT warm for all
ROUNDS = 5
BATCH = 1000
CRAWLERS = 20  # a batch's crawlers: a node's group commit of 20 writes of 50
SETTLED = 0.05  # server CPU seconds per SETTLE_STEP below which it counts as idle
SETTLE_STEP = 0.5
SETTLE_MOST = 30.0  # seconds to wait for it at most
RETRIES = 5  # a write timed out on the loaded server is sent again
DEFAULT_OPTIONS = "off,analyzed,set,postings,blocks"  # per-word: --options, it times out
_ITEM_MARKS = ", ".join("?" for _ in ITEM.split(","))


def insert(extra: str = "") -> str:
    """An item's row of items_by_crawler, with `extra` columns after its own."""
    marks = ", ?" * len([c for c in extra.split(",") if c.strip()])
    return (
        f"INSERT INTO {{ks}}.items_by_crawler (crawler_id, day, fetched_at, item_id, {ITEM},"
        f" conversation_id{extra}) VALUES (?, ?, ?, ?, {_ITEM_MARKS}, ?{marks}) USING TTL ?"
    )


POSTINGS = (
    "UPDATE {ks}.%s USING TTL ? SET held = true WHERE crawler_id = ? AND day = ?"
    " AND word IN ? AND fetched_at = ? AND item_id = ?"
)


@dataclass(frozen=True)
class Option:
    """A way of indexing: the CQL it adds to the keyspace, the item's row, and what else each
    item writes in its batch (statements bound from the item and its row's TTL)."""

    name: str
    label: str
    schema: tuple[str, ...]
    row: str
    words: Callable[[Item], Any] | None = None  # the extra column's value
    index: str | None = None  # a statement binding (ttl, crawler, day, words, fetched_at, id)
    apart: bool = False  # the index statement is a request of its own, not in the batch
    store: str | None = None  # the store's own write, with these URL options, instead


OPTIONS = (
    Option("off", "search off (baseline)", (), insert(), store=""),
    Option(
        "analyzed",
        "SAI with an analyzer, text column",
        (
            "ALTER TABLE {ks}.items_by_crawler ADD IF NOT EXISTS words_text text",
            "CREATE CUSTOM INDEX IF NOT EXISTS words_text ON {ks}.items_by_crawler"
            " (words_text) USING 'StorageAttachedIndex'"
            " WITH OPTIONS = {{'index_analyzer': 'standard'}}",
        ),
        insert(", words_text"),
        lambda item: " ".join(filter(None, (item.title, item.text, item.author))),
    ),
    Option(
        "set",
        "SAI on set<text> of folded words",
        (
            "CREATE CUSTOM INDEX IF NOT EXISTS words ON {ks}.items_by_crawler (VALUES(words))"
            " USING 'StorageAttachedIndex'",
        ),
        insert(", words"),
        item_words,
    ),
    Option(
        "postings",
        "words-to-items, (crawler, day) partitions",
        (
            """CREATE TABLE IF NOT EXISTS {ks}.tax_by_day (
                crawler_id bigint, day date, word text, fetched_at timestamp, item_id text,
                held boolean, PRIMARY KEY ((crawler_id, day), word, fetched_at, item_id)
            ) WITH CLUSTERING ORDER BY (word ASC, fetched_at DESC, item_id DESC)""",
        ),
        insert(),
        index=POSTINGS % "tax_by_day",
    ),
    Option(
        "per-word",
        "words-to-items, (crawler, day, word) partitions",
        (
            """CREATE TABLE IF NOT EXISTS {ks}.tax_by_word (
                crawler_id bigint, day date, word text, fetched_at timestamp, item_id text,
                held boolean, PRIMARY KEY ((crawler_id, day, word), fetched_at, item_id)
            ) WITH CLUSTERING ORDER BY (fetched_at DESC, item_id DESC)""",
        ),
        insert(),
        index=POSTINGS % "tax_by_word",
        apart=True,  # its partitions in one batch pass batch_size_fail_threshold (50 KiB)
    ),
    Option("blocks", "word blocks (the store, search=on)", (), insert(), store="&search=on"),
)


class OptionStore(CassandraStore):
    """The store's own write (ids, days, confirms), its items' rows as an option writes them."""

    def __init__(self, url: str, option: Option) -> None:
        super().__init__(parse(url.removeprefix("cassandra://")))
        self._option = option
        self._prepared: tuple[PreparedStatement, PreparedStatement | None] | None = None

    def _item_rows(self, st: Statements, new: list[Any], first: Any) -> Work:
        rows = self._statements_of(st)
        items = [item for item, _ in new]
        ttl = new[0][1].ttl if new else 0  # the bench's writes are all of one retention
        days = {(crawler_of(item), day_of(item.fetched_at)) for item in items}
        work = self._option_rows(st, rows, items, ttl)
        return work + [(st.insert_day, (crawler, day, 0)) for crawler, day in days]

    def _statements_of(self, st: Statements) -> tuple[PreparedStatement, PreparedStatement | None]:
        if self._prepared is None:
            session, ks = self._session, self._config.keyspace
            assert session is not None
            index = self._option.index
            self._prepared = (
                session.prepare(self._option.row.format(ks=ks)),
                session.prepare(index.format(ks=ks)) if index else None,
            )
        return self._prepared

    def _option_rows(
        self,
        st: Statements,
        rows: tuple[PreparedStatement, PreparedStatement | None],
        items: list[Item],
        ttl: int,
    ) -> Work:
        """By (crawler, day) partition: each item's row, then its index statement; a batch
        holds ROWS_PER_BATCH statements at most, an item's together."""
        row, index = rows
        per_item = 2 if index is not None and not self._option.apart else 1
        per_batch = ROWS_PER_BATCH // per_item
        parts: list[tuple[list[BoundStatement], None]] = []
        alone: Work = []
        for (crawler, day), members in grouped(
            items, lambda i: (crawler_of(i), day_of(i.fetched_at))
        ).items():
            for start in range(0, len(members), per_batch):
                bound = []
                for item in members[start : start + per_batch]:
                    bound.append(row.bind(self._row_values(crawler, day, item, ttl)))
                    if index is not None:
                        held = sorted(item_words(item))
                        posted = index.bind((ttl, crawler, day, held, item.fetched_at, item.id))
                        (alone if self._option.apart else bound).append(posted)
                parts.append((bound, None))
        return [(batch, None) for batch, _ in packed(parts, st.place)] + [(s, None) for s in alone]

    def _row_values(self, crawler: int, day: Any, item: Item, ttl: int) -> tuple[Any, ...]:
        values = (crawler, day, item.fetched_at, item.id, item.source, item.url, item.title)
        values += (item.text, item.author, item.published_at, item.in_reply_to, item.html)
        values += (item.conversation_id,)
        if self._option.words is not None:
            values += (self._option.words(item),)
        return unset_none((*values, ttl))


def nodetool(jmx: int, *args: str) -> bool:
    """Run nodetool from the cached jars against the server's JMX; whether it succeeded."""
    modules = [f"--add-exports={name}=ALL-UNNAMED" for name in JAVA17_EXPORTS]
    modules += [f"--add-opens={name}=ALL-UNNAMED" for name in JAVA17_OPENS]
    command = ["java", "-Xmx128m", *modules, "-cp", f"{jar_dir()}/*"]
    command += ["org.apache.cassandra.tools.NodeTool", "-h", "127.0.0.1", "-p", str(jmx), *args]
    return subprocess.run(command, capture_output=True, check=False).returncode == 0


@dataclass(frozen=True)
class Figure:
    rate: float
    server_us: float
    client_us: float

    def __str__(self) -> str:
        return (
            f"{self.rate:7,.0f} items/s  server {self.server_us:5.0f} µs"
            f"  client {self.client_us:5.0f} µs per item"
        )


def settle(pid: int) -> None:
    """Until the server's CPU falls to SETTLED per SETTLE_STEP (its flushes and compactions
    done), SETTLE_MOST seconds at most."""
    deadline = time.monotonic() + SETTLE_MOST
    last = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(SETTLE_STEP)
        now = cpu_seconds(pid)
        if now - last < SETTLED:
            return
        last = now


def written(store: Store, batch: list[Item]) -> None:
    """A write, retried whole while the loaded server times out (a node does the same)."""
    for _ in range(RETRIES):
        try:
            store.add(batch)
            return
        except StoreUnavailable as error:
            print(f"  retried: {error}", flush=True)
    store.add(batch)


def measured(
    store: Store, batches: list[list[Item]], pid: int, flush: Callable[[], None]
) -> Figure:
    count = sum(len(batch) for batch in batches)
    server, client = cpu_seconds(pid), time.process_time()
    started = time.perf_counter()
    for batch in batches:
        written(store, batch)
    rate = count / (time.perf_counter() - started)
    client_us = (time.process_time() - client) / count * 1e6
    flush()
    settle(pid)
    return Figure(rate, (cpu_seconds(pid) - server) / count * 1e6, client_us)


def opened(contact: str, option: Option) -> tuple[str, Store] | None:
    """The option's keyspace, made and given its schema, and a store writing it; None (and
    why, printed) where the server refuses the option's schema."""
    keyspace = f"tax_{option.name.replace('-', '_')}_{uuid.uuid4().hex[:6]}"
    url = f"cassandra://{contact}/{keyspace}?consistency=ONE{option.store or ''}"
    upgrade_store(url)
    store = (
        CassandraStore(parse(url[12:])) if option.store is not None else OptionStore(url, option)
    )
    store.count(0)  # connect and prepare outside the timing
    session: Session = store._session  # type: ignore[assignment]
    try:
        for statement in option.schema:
            session.execute(statement.format(ks=keyspace), timeout=60)
    except Exception as refusal:
        print(f"  {option.name}: refused: {type(refusal).__name__}: {refusal}")
        store.close()
        drop(url, keyspace)
        return None
    return url, store


def run(contact: str, jmx: int, names: list[str], items: int, rounds: int) -> None:
    pid = server_process(int(contact.rpartition(":")[2]))
    assert pid is not None, "the server's process is not visible here"
    flushes = nodetool(jmx, "version")
    print(f"server pid {pid.pid}; flush after each load: {'yes' if flushes else 'no (no JMX)'}")
    chosen = [option for option in OPTIONS if option.name in names]
    stores = {o.name: s for o in chosen if (s := opened(contact, o)) is not None}
    figures: dict[str, list[Figure]] = {name: [] for name in stores}
    try:
        next_item = 0
        warm = list(make_items(WARMUP, next_item, CRAWLERS))
        for _url, store in stores.values():
            for batch in warm:
                written(store, batch)
        next_item += WARMUP
        for turn in range(rounds):
            batches = list(make_items(items, next_item, CRAWLERS))
            next_item += items
            order = list(stores)
            order = order[turn % len(order) :] + order[: turn % len(order)]
            for name in order:
                url, store = stores[name]
                keyspace = url.rpartition("/")[2].partition("?")[0]
                flush = (
                    (lambda k=keyspace: nodetool(jmx, "flush", k)) if flushes else (lambda: None)
                )
                figures[name].append(measured(store, batches, pid.pid, flush))
                print(f"  round {turn + 1} {name:9} {figures[name][-1]}", flush=True)
    finally:
        for url, store in stores.values():
            store.close()
            drop(url, url.rpartition("/")[2].partition("?")[0])
    report(figures, items, rounds)


def report(figures: dict[str, list[Figure]], items: int, rounds: int) -> None:
    labels = {option.name: option.label for option in OPTIONS}
    median = {
        name: Figure(
            *(statistics.median(getattr(f, k) for f in runs) for k in Figure.__annotations__)
        )
        for name, runs in figures.items()
    }
    base = median.get("off")
    print(
        f"medians of {rounds} rounds of {items:,} items each, {BATCH} a write, {CRAWLERS} crawlers"
    )
    print(
        f"  {'option':42} {'items/s':>8} {'server µs':>10} {'client µs':>10} {'server vs off':>13}"
    )
    for name, figure in median.items():
        ratio = f"{figure.server_us / base.server_us:12.2f}x" if base else ""
        print(
            f"  {labels[name]:42} {figure.rate:8,.0f} {figure.server_us:10.0f}"
            f" {figure.client_us:10.0f} {ratio}"
        )
    if base:
        pairs = {
            name: statistics.median(
                f.server_us / b.server_us for f, b in zip(runs, figures["off"], strict=True)
            )
            for name, runs in figures.items()
        }
        print(
            "  server vs off, round by round (median): "
            + ", ".join(f"{n} {r:.2f}x" for n, r in pairs.items())
        )


class JmxCassandra(Cassandra):
    """The cached jars' Cassandra with a local JMX port, for nodetool flush."""

    def __init__(self, run_dir: Path, port: int, jmx: int) -> None:
        super().__init__(run_dir, port, storage_port=port - 2042, quick_jit=False)
        self.jmx = jmx

    def prepare(self) -> None:
        super().prepare()
        with (self.run_dir / "cassandra.yaml").open("a") as config:
            config.write("write_request_timeout: 10000ms\n")  # the machine is shared

    def command(self) -> list[str]:
        command = super().command()
        at = command.index("-cp")
        return [*command[:at], f"-Dcassandra.jmx.local.port={self.jmx}", *command[at:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=ITEMS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--cassandra", default="127.0.0.1:19342")
    parser.add_argument("--jmx", type=int, default=7399)
    parser.add_argument("--options", default=DEFAULT_OPTIONS)
    args = parser.parse_args()
    print(machine.described())
    with local_cassandra(
        args.cassandra, lambda run_dir, port: JmxCassandra(run_dir, port, args.jmx)
    ) as contact:
        run(contact, args.jmx, args.options.split(","), args.items, args.rounds)


if __name__ == "__main__":
    main()
