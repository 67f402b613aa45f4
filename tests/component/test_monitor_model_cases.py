"""Histories the model-based test of the monitor (test_monitor_model.py) found failing, each
replayed on the same real cluster and checked against the same invariants."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from blackwidow.core.node_protocol import shard_of
from blackwidow.demo.feed_server import FeedServer
from tests.component.conftest import ADMIN, bearer
from tests.component.model_cluster import Cluster
from tests.component.model_invariants import check
from tests.component.test_monitor_model import MonitorModel, Where

PLAIN = {"feed": "one", "item_limit": None, "schedule": None, "enabled": True}


@pytest.fixture
def where(sqlite_template: Path, tmp_path: Path, feeds: FeedServer) -> Where:
    return Where(sqlite_template, tmp_path, feeds.url)


def test_a_crawler_created_before_any_node_runs_once_one_registers(where: Where) -> None:
    """Issue 28, A: while no node was live the crawler was dropped from placement, and
    nothing routed it when a node came."""
    state = MonitorModel(where)
    state.start(routing="modulo", shards=1, nodes=[], budgets=(None, None), user=0, crawlers=[])
    state.create(user=0, drawn=PLAIN)
    state.settle()
    state.start_node(capacity=1)
    state.teardown()  # settles, checks the invariants, closes


def test_a_budgeted_crawler_that_stored_all_its_feed_holds_a_steady_lease(where: Where) -> None:
    """Budget 4, one crawler whose feed has 3 items: once it stored them its lease went
    4, 3, 4, 3... one cycle after another, a push and a ledger write each time, never quiet."""
    state = MonitorModel(where)
    state.start(routing="modulo", shards=1, nodes=[1], budgets=(4, None), user=0, crawlers=[])
    state.create(user=0, drawn=PLAIN)
    state.teardown()


@pytest.fixture
def cluster(sqlite_template: Path, tmp_path: Path) -> Iterator[Cluster]:
    world = Cluster(sqlite_template, tmp_path / "history", "modulo", shards=2)
    yield world
    world.close()


def test_a_shard_s_new_leader_leaves_other_shards_assignments_alone(
    cluster: Cluster, feeds: FeedServer
) -> None:
    """Each shard's new leader read every assignment and, not owning the crawler of one,
    took it for deleted and removed its row: SQL said it ran nowhere while its node ran it."""
    made = cluster.api.post("/api/v1/users", json={"name": "ana"}, headers=bearer(ADMIN))
    token = made.json["token"]
    owners: set[int] = set()
    for n in range(40):  # crawlers until each of the two shards owns one
        query = {"feeds": [f"{feeds.url}/feeds/f{n}.xml?items=3"]}
        body = {"name": f"c{n}", "source": "rss", "query": query}
        crawler = cluster.api.post("/api/v1/crawlers", json=body, headers=bearer(token)).json
        owners.add(shard_of(crawler["uuid"], 2))
        if owners == {0, 1}:
            break
    cluster.start_node(capacity=4)

    cluster.settle()

    check(cluster)
