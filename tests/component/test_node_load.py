"""A node's load: every poll answer carries it, the hub's poll records it, and the nodes API
lists it with the node's capacity; under weighted routing the desired count is capacity's."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.app import create_app
from blackwidow.core import serving
from blackwidow.core.node_protocol import GENERATION_HEADER, SHARD_HEADER
from blackwidow.core.store.sqlite import SqliteStore
from blackwidow.demo.feed_server import FeedServer
from blackwidow.monitor.alerting import PollAlerts
from blackwidow.monitor.detector import PhiAccrualDetector, PhiSettings
from blackwidow.monitor.liveness import Liveness
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.node_client import NodeClient
from sources.fetch.fetcher import GuardedFetcher
from sources.registry import opener
from sources.source_type import SourceContext
from spawn.app import create_node_app
from spawn.load import ProcessLoad
from spawn.node import NodeState
from spawn.pool.source_pool import DataSourcePool
from tests.component.conftest import ADMIN, SECRET, bearer, hub_settings
from tests.component.test_dashboard import sign_in

LOOPBACK = frozenset({"127.0.0.1"})


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeState]:
    store = SqliteStore(str(tmp_path / "node-items.db"))
    fetcher = GuardedFetcher(allow_hosts=LOOPBACK, deadline=5.0)
    pool = DataSourcePool(opener(SourceContext(fetcher, 60.0)), store)
    node = NodeState(pool, time.monotonic, load=ProcessLoad())
    yield node
    pool.clear()
    store.close()


def subscribe(node: NodeState, feeds: FeedServer, names: list[str]) -> None:
    """One crawler per name; equal names share a data source."""
    client = create_node_app(node, SECRET).test_client()
    for crawler_id, name in enumerate(names, start=1):
        body = {
            "crawler_id": crawler_id,
            "user_id": 1,
            "source": "rss",
            "query": {"feeds": [f"{feeds.url}/feeds/{name}.xml"], "keywords": []},
        }
        headers = {**bearer(SECRET), GENERATION_HEADER: str(node.generation)}
        response = client.put(f"/subscribers/{crawler_id}", json=body, headers=headers)
        assert response.status_code == 200, response.json


def test_every_poll_answer_carries_the_whole_nodes_load(node: NodeState, feeds: FeedServer) -> None:
    node.mark_registered(1, 1)
    subscribe(node, feeds, ["one", "one", "two"])
    client = create_node_app(node, SECRET).test_client()
    headers = {**bearer(SECRET), GENERATION_HEADER: "1"}

    answer = client.get("/subscribers", headers=headers).json
    load = answer["load"]
    assert load["data_sources"] == 2
    assert isinstance(load["cpu_percent"], float) and load["cpu_percent"] >= 0
    assert load["memory_bytes"] > 1_000_000  # a Python process's resident memory

    # a shard sees its own keys' totals, but the node's load is the node's, for any shard
    shards = [
        client.get("/subscribers", headers={**headers, SHARD_HEADER: f"{i}/2"}).json for i in (0, 1)
    ]
    assert sum(s["totals"]["data_sources"] for s in shards) == 2
    assert [s["load"]["data_sources"] for s in shards] == [2, 2]


@pytest.fixture
def served(node: NodeState) -> Iterator[str]:
    """The node on loopback, for the hub's real poll."""
    server, url = serving.bind(create_node_app(node, SECRET), "127.0.0.1", 0)
    thread = threading.Thread(target=server.run, daemon=True)  # type: ignore[attr-defined]
    thread.start()
    yield url
    server.close()  # type: ignore[attr-defined]


def test_the_nodes_api_lists_capacity_and_the_load_the_latest_poll_reported(
    client: FlaskClient, sessions, node: NodeState, served: str, feeds: FeedServer
) -> None:
    registered = client.post(
        "/api/v1/nodes", json={"url": served, "capacity": 3}, headers=bearer(SECRET)
    ).json
    node.mark_registered(registered["id"], registered["generation"])
    subscribe(node, feeds, ["one", "two"])
    before = client.get("/api/v1/nodes", headers=bearer(ADMIN)).json[0]
    assert (before["capacity"], before["cpu_percent"], before["memory_bytes"]) == (3, None, None)

    liveness = Liveness(
        sessions,
        NodeClient(SECRET, timeout=5.0),
        PhiAccrualDetector(PhiSettings(), started_at=time.monotonic()),
        ShardMemory(),
        clock=time.monotonic,
        probe_dead_for=60.0,
        watch=PollAlerts(AlertOutbox(cluster_hook=False), 60.0, 100),
    )
    liveness.poll_once()

    listed = client.get("/api/v1/nodes", headers=bearer(ADMIN)).json[0]
    assert (listed["capacity"], listed["data_sources"], listed["subscribers"]) == (3, 2, 2)
    assert listed["cpu_percent"] >= 0 and listed["memory_bytes"] > 1_000_000
    sign_in(client, ADMIN)
    page = client.get("/").get_data(as_text=True)  # the cluster page's node table
    assert "2 / 3" in page and f"{listed['memory_bytes'] / 1048576:.0f} MiB" in page


@pytest.fixture
def weighted(database_url: str, tmp_path: Path) -> Iterator[FlaskClient]:
    """A hub routing by weight, keeping half the data sources' count spare, with no floor
    above one node."""
    settings = hub_settings(
        database_url, tmp_path, routing="weighted", capacity_headroom=0.5, min_nodes=1
    )
    app = create_app(settings)
    yield app.test_client()
    with app.extensions["blackwidow"].sessions() as session:
        session.get_bind().dispose()  # close pooled connections before the database is dropped


def add_crawlers(client: FlaskClient, user: dict[str, Any], feeds: range) -> None:
    for i in feeds:
        body = {"name": f"c{i}", "source": "rss", "query": {"feeds": [f"https://f{i}.example/"]}}
        response = client.post("/api/v1/crawlers", json=body, headers=bearer(user["token"]))
        assert response.status_code == 201, response.json


def test_desired_counts_capacity_under_weighted_routing(weighted: FlaskClient, serve_node) -> None:
    client = weighted
    for capacity in (2, 6):
        body = {"url": serve_node(), "capacity": capacity}
        assert client.post("/api/v1/nodes", json=body, headers=bearer(SECRET)).status_code == 201
    user = client.post("/api/v1/users", json={"name": "ana"}, headers=bearer(ADMIN)).json

    add_crawlers(client, user, range(4))  # 4 data sources, 6 with headroom: the large node
    assert client.get("/api/v1/nodes/count").json == {"active": 2, "desired": 1}
    add_crawlers(client, user, range(4, 6))  # 6, 9 with headroom: both (8), one more (of 4)
    assert client.get("/api/v1/nodes/count").json == {"active": 2, "desired": 3}
