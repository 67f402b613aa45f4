"""The node's run ledger on a real SQLite file, and a pool on real RSS sources writing to
it: a successor at the same address reports the runs its predecessor left until applied."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from blackwidow.core.store.sqlite import SqliteStore
from blackwidow.demo.feed_server import FeedServer
from sources.fetch.fetcher import GuardedFetcher
from sources.source_type import SourceContext
from spawn.output.node_file import NodeFileInUse
from spawn.output.run_ledger import SqliteLedger, ledger_path
from spawn.pool.run_counts import RunCounts
from spawn.pool.source_pool import DataSourcePool
from tests.component.test_pool import (
    FEED_INTERVAL,
    LOOPBACK,
    OpenedSources,
    collecting,
    feed,
    spec,
)
from tests.support import FakeClock


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(str(tmp_path / "items.db"))
    yield opened
    opened.close()


@pytest.fixture
def sources() -> OpenedSources:
    return OpenedSources(SourceContext(GuardedFetcher(LOOPBACK, deadline=5.0), FEED_INTERVAL))


CLUSTER = "6f1e4c8a-2b7d-4e1f-9a3c-5d8b7e6f4a21"


def subscriber_counts(run: str, delivered: int) -> RunCounts:
    return RunCounts("subscriber", "k", run, {"crawler_id": 7, "run": run, "delivered": delivered})


def test_runs_recorded_before_the_replay_window_are_dropped_not_replayed(tmp_path: Path) -> None:
    """The hub may have pruned an old run's row: replaying it would count it twice."""
    clock = FakeClock(1_000.0)
    ledger = SqliteLedger(
        ledger_path(str(tmp_path), "127.0.0.1", 8002, pid=11, cluster=CLUSTER), clock=clock
    )
    ledger.record([subscriber_counts("old", 3)])
    clock.now += 100.0
    ledger.record([subscriber_counts("recent", 5)])
    assert [c.run for c in ledger.left(since=1_050.0)] == ["recent"]
    assert [c.run for c in ledger.left(since=0.0)] == ["recent"]  # the old one is gone
    ledger.close()


def test_the_ledger_keeps_each_run_s_latest_counts_until_forgotten(tmp_path: Path) -> None:
    path = ledger_path(str(tmp_path), "127.0.0.1", 8001, pid=10, cluster=CLUSTER)
    ledger = SqliteLedger(path)
    source = RunCounts("source", "k", "s1", {"key": "k", "run": "s1", "delivered": {"3": 4}})
    ledger.record([source, subscriber_counts("r1", 4), subscriber_counts("r2", 1)])
    ledger.record([subscriber_counts("r1", 9)])  # a later batch overwrites the run's row
    ledger.forget(["r2", "unknown"])
    assert sorted(ledger.left(since=0.0), key=lambda c: c.run) == [
        subscriber_counts("r1", 9),
        source,
    ]

    del ledger  # killed: never closed
    gc.collect()
    again = SqliteLedger(path)
    assert {c.run for c in again.left(since=0.0)} == {"r1", "s1"}
    again.forget(["r1", "s1"])
    again.close()
    assert not path.exists()  # an empty ledger leaves nothing behind


def test_one_ledger_file_per_node_address_and_one_process_per_file(tmp_path: Path) -> None:
    first = ledger_path(str(tmp_path), "127.0.0.1", 8001, pid=10, cluster=CLUSTER)
    assert first == ledger_path(
        str(tmp_path), "127.0.0.1", 8001, pid=11, cluster=CLUSTER
    )  # a restart finds it
    assert first != ledger_path(str(tmp_path), "127.0.0.1", 8002, pid=10, cluster=CLUSTER)
    other = "0b6a1d2e-3f4c-4a5b-8c7d-9e0f1a2b3c4d"
    assert first != ledger_path(str(tmp_path), "127.0.0.1", 8001, pid=10, cluster=other)
    assert first.name == f"ledger-127.0.0.1-8001@{CLUSTER}.db"

    held = SqliteLedger(first)
    with pytest.raises(NodeFileInUse):
        SqliteLedger(first)
    held.record([subscriber_counts("r1", 1)])
    held.close()
    assert first.exists()  # a run left to report
    SqliteLedger(first).close()


def test_a_successor_reports_the_runs_its_predecessor_left_until_a_poll_applies_them(
    sources: OpenedSources, store: SqliteStore, feeds: FeedServer, tmp_path: Path
) -> None:
    path = tmp_path / "ledger.db"
    predecessor = SqliteLedger(path)
    pool = DataSourcePool(sources, store, ledger=predecessor)
    pool.put(spec(1, [feed(feeds, "alpha")]), now=0.0)
    collecting(pool, 1)
    heard = pool.changes("", 0)
    source_run, subscriber_run = heard.data_sources[0]["run"], heard.subscribers[0]["run"]
    assert {c.run: c.kind for c in predecessor.left(since=0.0)} == {
        source_run: "source",
        subscriber_run: "subscriber",
    }
    pool.clear()  # its sources stop; the process dies before any poll applied them
    predecessor.close()

    ledger = SqliteLedger(path)
    successor = DataSourcePool(sources, store, ledger=ledger)
    successor.restore_departed(ledger.left(since=0.0))
    first = successor.changes("", 0)  # a poll of the predecessor's stream: everything
    assert [(d["run"], d["delivered"]) for d in first.departed_data_sources] == [
        (source_run, {"1": 10})
    ]
    assert first.departed_subscribers == [{"crawler_id": 1, "run": subscriber_run, "delivered": 10}]
    lost = successor.changes("", 0)  # that answer was lost: it comes again
    assert lost.departed_subscribers == first.departed_subscribers
    assert len(ledger.left(since=0.0)) == 2

    applied = successor.changes(first.stream, first.number)
    assert applied.departed_data_sources == applied.departed_subscribers == []
    assert ledger.left(since=0.0) == []  # applied: nothing for a later successor to replay
    ledger.close()
    assert not path.exists()
