"""Claiming ids by compare-and-set: what exactness across two writers of one crawler would cost.

Times, in one run and on one keyspace, the id writes the Cassandra store makes (unlogged
single-partition batches of 64, 32 in flight) against the same rows written as Paxos batches
(`IF NOT EXISTS`, one conditional batch per partition chunk: the cheapest exact claim), and
the store's whole `add` for scale; then estimates `add` with its confirms made conditional.

    .venv/bin/python -m bench.id_claims [--items N] [--cassandra HOST:PORT]
"""

from __future__ import annotations

import argparse
import os
import platform
import uuid

from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent
from cassandra.query import BatchStatement, BatchType, PreparedStatement

from bench.ingest import BATCH, WARMUP, local_cassandra, make_items, pipelined, rate
from blackwidow.core.store import upgrade_store
from blackwidow.core.store.cassandra.config import parse
from blackwidow.core.store.cassandra.rows import BUCKETS, ROWS_PER_BATCH
from blackwidow.core.store.cassandra.store import IN_FLIGHT, make_cluster

ROW = "(crawler_id, bucket, item_id, writer, pending) VALUES (?, ?, ?, ?, false)"


def id_batches(insert: PreparedStatement, crawler_id: int, count: int) -> list[BatchStatement]:
    """`count` new ids spread over the crawler's buckets, one batch per partition chunk
    (conditional ones logged, which Cassandra runs unlogged within one partition)."""
    kind = BatchType.LOGGED if "IF NOT EXISTS" in insert.query_string else BatchType.UNLOGGED
    writer = uuid.uuid4()
    batches = []
    for bucket in range(BUCKETS):
        item_ids = [f"{bucket}-{n}" for n in range(count // BUCKETS)]
        for start in range(0, len(item_ids), ROWS_PER_BATCH):
            batch = BatchStatement(batch_type=kind)
            for item_id in item_ids[start : start + ROWS_PER_BATCH]:
                batch.add(insert, (crawler_id, bucket, item_id, writer))
            batches.append(batch)
    return batches


def claims(session: Session, insert: PreparedStatement, crawler_id: int, count: int) -> float:
    batches = id_batches(insert, crawler_id, count)

    def run() -> None:
        execute_concurrent(session, [(batch, None) for batch in batches], concurrency=IN_FLIGHT)

    return rate(count, run)


def crawler() -> int:
    return uuid.uuid4().int % 2**40


def measured(url: str, count: int) -> tuple[float, float]:
    """Items/s of plain and of conditional id batches, each on crawlers of its own."""
    config = parse(url.removeprefix("cassandra://"))
    cluster = make_cluster(config)
    session = cluster.connect()
    table = f"INSERT INTO {config.keyspace}.items_by_id {ROW}"
    plain = session.prepare(table)
    paxos = session.prepare(table + " IF NOT EXISTS")
    try:
        claims(session, plain, crawler(), WARMUP)
        claims(session, paxos, crawler(), WARMUP // 10)
        return claims(session, plain, crawler(), count), claims(session, paxos, crawler(), count)
    finally:
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--cassandra", default="127.0.0.1:19042")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores")
    with local_cassandra(args.cassandra) as contact:
        url = f"cassandra://{contact}/bench_{uuid.uuid4().hex[:8]}?consistency=ONE"
        upgrade_store(url)
        pipelined(url, make_items(WARMUP, 3))
        add = pipelined(url, make_items(args.items, 1))
        plain, paxos = measured(url, args.items)
    with_paxos = 1 / (1 / add - 1 / plain + 1 / paxos)
    print(f"id batches   plain {plain:9,.0f} items/s   IF NOT EXISTS {paxos:8,.0f} items/s")
    print(
        f"store.add    now   {add:9,.0f} items/s   with claims   {with_paxos:8,.0f} items/s (est.)"
    )
    print(f"({args.items:,} items, batches of {BATCH})")


if __name__ == "__main__":
    main()
