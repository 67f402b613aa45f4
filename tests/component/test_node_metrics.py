"""A node's `/metrics` on the real app, pool, fetcher, sink and store: the families exist
with their types, and move when the node fetches a local feed and stores its items."""

from __future__ import annotations

import ipaddress
import platform
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import pytest
import requests
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from blackwidow.core.metrics.exposition import MetricsAccess
from blackwidow.core.store.sqlite import SqliteStore
from sources.fetch.fetcher import GuardedFetcher
from sources.registry import opener
from sources.source_type import SourceContext
from spawn.app import create_node_app
from spawn.metrics import NodeMetrics
from spawn.node import NodeState
from spawn.output.sink import NodeSink
from spawn.pool.source_pool import DataSourcePool
from tests.servers.hostile_http import HostileServer
from tests.support import FakeClock, served, wait_until

SECRET = "cluster-secret-for-node-metrics"
AUTH = {"Authorization": f"Bearer {SECRET}", "X-Blackwidow-Generation": "1"}

FAMILIES = {
    "blackwidow_fetches": "counter",
    "blackwidow_fetch_duration_seconds": "histogram",
    "blackwidow_fetched_bytes": "counter",
    "blackwidow_items_delivered": "counter",
    "blackwidow_items_stored": "counter",
    "blackwidow_store_write_duration_seconds": "histogram",
    "blackwidow_stream_connects": "counter",
    "blackwidow_stream_reconnects": "counter",
    "blackwidow_data_sources": "gauge",
    "blackwidow_subscribers": "gauge",
    "blackwidow_items_held": "gauge",
    "blackwidow_queue_outbox_entries": "gauge",
    "blackwidow_queue_failed_pushes": "counter",
    "blackwidow_build_info": "gauge",
    "blackwidow_node_info": "gauge",
    "python_info": "gauge",
    "process_cpu_seconds": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_open_fds": "gauge",
    "python_gc_collections": "counter",
}


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with HostileServer() as running:
        yield running


@pytest.fixture
def node(tmp_path) -> Iterator[tuple[NodeState, NodeMetrics]]:
    """A node wired as `blackwidow spawn` wires one, on a fast feed interval."""
    metrics = NodeMetrics()
    store = SqliteStore(str(tmp_path / "items.db"))
    fetcher = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}), deadline=5.0, observer=metrics)
    context = SourceContext(fetcher, 0.1, observer=metrics)
    pool = DataSourcePool(opener(context), NodeSink(store, None, metrics), observer=metrics)
    metrics.watch(pool, None)
    node = NodeState(pool, FakeClock(1000.0))
    node.mark_registered(4, 1)
    yield node, metrics
    pool.clear()
    store.close()


def scrape(client: FlaskClient, **headers: str) -> dict[str, Any]:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.data
    assert response.content_type.startswith("text/plain; version=")
    return {f.name: f for f in text_string_to_metric_families(response.get_data(as_text=True))}


def value(families: dict[str, Any], name: str, suffix: str = "", **labels: str) -> float:
    family = families[name]
    return sum(
        sample.value
        for sample in family.samples
        if sample.name == name + suffix
        and all(sample.labels.get(k) == v for k, v in labels.items())
    )


def subscribe(client: FlaskClient, crawler_id: int, feed_url: str) -> None:
    body = {
        "crawler_id": crawler_id,
        "user_id": 1,
        "source": "rss",
        "query": {"feeds": [feed_url], "keywords": []},
    }
    response = client.put(f"/subscribers/{crawler_id}", json=body, headers=AUTH)
    assert response.status_code == 200, response.json


def test_families_exist_with_their_types_and_need_no_cluster_secret(node):
    client = create_node_app(node[0], SECRET, metrics=node[1]).test_client()
    families = scrape(client)
    assert {name: families[name].type for name in FAMILIES} == FAMILIES
    assert value(families, "blackwidow_fetches", "_total", outcome="200") == 0
    assert value(families, "blackwidow_subscribers") == 0


def test_figures_move_when_the_node_fetches_and_stores_a_local_feed(node, server):
    client = create_node_app(node[0], SECRET, metrics=node[1]).test_client()
    subscribe(client, 1, server.url("/rss"))
    subscribe(client, 2, server.url("/missing"))
    entries = len(server.rss.entries)

    def stored() -> dict[str, Any] | None:
        families = scrape(client)
        return families if value(families, "blackwidow_items_stored", "_total") >= entries else None

    families = wait_until(stored, what="the feed's items stored")
    assert value(families, "blackwidow_items_stored", "_total", source="rss") == entries
    assert value(families, "blackwidow_items_delivered", "_total", source="rss") >= entries
    assert value(families, "blackwidow_fetches", "_total", outcome="200") >= 1
    assert value(families, "blackwidow_fetched_bytes", "_total") > 0
    assert value(families, "blackwidow_fetch_duration_seconds", "_count") >= 1
    assert value(families, "blackwidow_store_write_duration_seconds", "_count") >= 1
    assert value(families, "blackwidow_subscribers") == 2
    assert value(families, "blackwidow_data_sources", source="rss") == 2
    families = wait_until(
        lambda: (
            (f := scrape(client))
            and value(f, "blackwidow_fetches", "_total", outcome="http_4xx") >= 1
            and f
        ),
        what="the missing feed's 404 counted",
    )
    outcomes = {s.labels["outcome"] for s in families["blackwidow_fetches"].samples}
    assert {"200", "304", "http_4xx", "timeout"} <= outcomes  # every outcome shown, bounded


@pytest.mark.parametrize(
    ("access", "headers", "status", "code"),
    [
        (MetricsAccess(token="scrape-token"), {}, 401, "unauthorized"),
        (
            MetricsAccess(token="scrape-token"),
            {"Authorization": "Bearer wrong"},
            401,
            "unauthorized",
        ),
        (MetricsAccess(token="scrape-token"), {"Authorization": "Bearer scrape-token"}, 200, None),
        (MetricsAccess(networks=(ipaddress.ip_network("10.0.0.0/8"),)), {}, 403, "forbidden"),
        (MetricsAccess(networks=(ipaddress.ip_network("127.0.0.0/8"),)), {}, 200, None),
    ],
    ids=["no-token", "wrong-token", "token", "outside-networks", "inside-networks"],
)
def test_scrapes_can_be_restricted_by_token_and_network(node, access, headers, status, code):
    client = create_node_app(node[0], SECRET, metrics=node[1], metrics_access=access).test_client()
    response = client.get("/metrics", headers=headers, environ_base={"REMOTE_ADDR": "127.0.0.1"})
    assert response.status_code == status
    if code is not None:
        assert response.json["error"]["code"] == code


def test_the_process_its_build_and_its_id_at_the_hub_are_on_a_real_scrape(node):
    """A node answers every scrape of its own: its CPU, memory and GC are its process's; the
    id the hub gave it is the `node` label the hub's per-node figures use."""
    with served(create_node_app(node[0], SECRET, metrics=node[1]), "metrics-node") as url:
        response = requests.get(f"{url}/metrics", timeout=10)
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    build = {"version": version("blackwidow"), "python": platform.python_version()}
    assert value(families, "blackwidow_build_info", **build) == 1
    assert value(families, "blackwidow_node_info", node="4") == 1
    assert value(families, "process_cpu_seconds", "_total") > 0
    assert value(families, "process_resident_memory_bytes") > 0
    assert value(families, "python_gc_collections", "_total", generation="0") > 0


def test_a_node_not_yet_registered_names_no_id(node):
    unregistered = NodeState(node[0].pool, FakeClock(1000.0))
    families = scrape(create_node_app(unregistered, SECRET).test_client())
    assert not families["blackwidow_node_info"].samples
