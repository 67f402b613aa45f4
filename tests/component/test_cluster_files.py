"""A node's files belong to one cluster, on real SQLite files and a real store, with Redis down
so the outbox keeps its entries: a node at the same address joining the same cluster replays
them and restores its ledger; joining another cluster, or holding files that name no cluster,
it sets them aside (renamed, never deleted) with one warning each, and replays nothing."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from blackwidow.core.settings import Settings
from spawn.metrics import NodeMetrics
from spawn.output.node_file import NodeFile, lock
from spawn.output.opening import Output, open_output
from spawn.output.other_clusters import set_aside
from spawn.output.run_ledger import SqliteLedger
from spawn.pool.run_counts import RunCounts
from tests.component.test_queue import closed_port, make_item

A = "6f1e4c8a-2b7d-4e1f-9a3c-5d8b7e6f4a21"
B = "0b6a1d2e-3f4c-4a5b-8c7d-9e0f1a2b3c4d"
PORT = 8001
CRAWLER = 1  # the first crawler of every fresh hub: the same id in either cluster


def node_output(tmp_path: Path, port: int = PORT) -> Output:
    """A node's output at 127.0.0.1:`port` with its files in tmp_path/node-files, on a queue
    that is down."""
    settings = Settings(
        store_url=f"sqlite:///{tmp_path / 'items.db'}",
        redis_url=f"redis://127.0.0.1:{closed_port()}/0",
        outbox_dir=str(tmp_path / "node-files"),
    )
    return open_output(settings, "127.0.0.1", port, NodeMetrics())


def a_run(delivered: int) -> RunCounts:
    final = {"crawler_id": CRAWLER, "run": "r1", "delivered": delivered}
    return RunCounts("subscriber", "k", "r1", final)


def leave_files(tmp_path: Path, cluster: str) -> None:
    """A node of `cluster` that stored 3 items Redis never took and delivered a run no poll
    applied; stopped with Redis down, it leaves both files."""
    output = node_output(tmp_path)
    ledger = output.join(cluster)
    assert ledger is not None and output.outbox is not None
    ledger.record([a_run(3)])
    output.sink.add([make_item(n, CRAWLER) for n in range(3)])
    assert output.outbox_stats()["pending"] == 3
    output.close()


def files(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "node-files").iterdir() if p.suffix != ".lock")


def set_aside_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "spawn.output.other_clusters"]


def test_joining_the_same_cluster_restores_the_ledger_and_replays_the_spool(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    leave_files(tmp_path, A)
    assert files(tmp_path) == [f"ledger-127.0.0.1-{PORT}@{A}.db", f"outbox-127.0.0.1-{PORT}@{A}.db"]

    successor = node_output(tmp_path)
    caplog.set_level(logging.WARNING)
    ledger = successor.join(A)
    assert ledger is not None and ledger.left(since=0.0) == [a_run(3)]
    assert successor.outbox_stats()["pending"] == 3
    assert set_aside_lines(caplog) == []
    successor.close()


def test_joining_another_cluster_sets_the_files_aside_and_replays_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    leave_files(tmp_path, A)

    successor = node_output(tmp_path)
    caplog.set_level(logging.WARNING)
    ledger = successor.join(B)
    assert ledger is not None and ledger.left(since=0.0) == []
    assert successor.outbox_stats()["pending"] == 0
    lines = set_aside_lines(caplog)
    assert len(lines) == 2  # one per file
    for kind, line in zip(("outbox", "ledger"), lines, strict=True):  # as join opens them
        path = tmp_path / "node-files" / f"{kind}-127.0.0.1-{PORT}@{A}.db"
        assert line.startswith("node file of another cluster set aside")
        assert f"path={path} file_cluster={A} cluster={B}" in line
    successor.close()  # B's files were empty: nothing of B is left
    assert files(tmp_path) == [
        f"ledger-127.0.0.1-{PORT}@{A}.db.other-cluster",
        f"outbox-127.0.0.1-{PORT}@{A}.db.other-cluster",
    ]
    assert rows(tmp_path, f"ledger-127.0.0.1-{PORT}@{A}.db.other-cluster", "runs") == 1
    assert rows(tmp_path, f"outbox-127.0.0.1-{PORT}@{A}.db.other-cluster", "entries") == 3


def rows(tmp_path: Path, name: str, table: str) -> int:
    """Rows in a set-aside file: kept whole, write-ahead log and all."""
    with sqlite3.connect(tmp_path / "node-files" / name) as db:
        return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def test_files_that_name_no_cluster_are_set_aside_as_of_an_unknown_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Written before files named their cluster: whose they are cannot be told."""
    unscoped = tmp_path / "node-files" / f"ledger-127.0.0.1-{PORT}.db"
    before = SqliteLedger(unscoped)
    before.record([a_run(5)])
    del before  # killed: never closed, its last commits in the write-ahead log

    output = node_output(tmp_path)
    caplog.set_level(logging.WARNING)
    ledger = output.join(B)
    assert ledger is not None and ledger.left(since=0.0) == []
    (line,) = set_aside_lines(caplog)
    assert f"path={unscoped} file_cluster=unknown cluster={B}" in line
    output.close()
    assert rows(tmp_path, f"{unscoped.name}.other-cluster", "runs") == 1


def test_a_file_set_aside_twice_keeps_both_and_one_in_use_stays(tmp_path: Path) -> None:
    directory = tmp_path / "node-files"
    ours = directory / f"ledger-127.0.0.1-{PORT}@{B}.db"
    for _ in range(2):
        NodeFile(directory / f"ledger-127.0.0.1-{PORT}@{A}.db", "CREATE TABLE t (x)").close(False)
        set_aside(ours)
    assert files(tmp_path) == [
        f"ledger-127.0.0.1-{PORT}@{A}.db.other-cluster",
        f"ledger-127.0.0.1-{PORT}@{A}.db.other-cluster-2",
    ]

    other_port = directory / f"ledger-127.0.0.1-{PORT}0@{A}.db"  # another address: not ours
    held = directory / f"ledger-127.0.0.1-{PORT}.db"
    NodeFile(other_port, "CREATE TABLE t (x)").close(False)
    holder = lock(held)
    held.touch()
    assert set_aside(ours) == []  # a live process holds the one; the other is not at this address
    holder.close()
    assert held.exists() and other_port.exists()
