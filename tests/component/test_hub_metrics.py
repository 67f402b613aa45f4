"""The hub's `/metrics` on the real app and database: the named families with their types,
figures that move after real work (a node serving a local feed, monitor cycles, API calls),
a deleted node's series gone, and scrapes restricted by token and network."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from blackwidow.app import create_app
from blackwidow.core.store.sqlite import SqliteStore
from blackwidow.models import Node as NodeRow
from blackwidow.monitor.loop import MonitorLoop
from sources.fetch.fetcher import GuardedFetcher
from sources.registry import opener
from sources.source_type import SourceContext
from spawn.app import create_node_app
from spawn.node import NodeState
from spawn.pool.source_pool import DataSourcePool
from tests.component.conftest import ADMIN, SECRET, bearer, hub_settings
from tests.servers.hostile_http import HostileServer
from tests.support import served, wait_until

FAMILIES = {
    "blackwidow_monitor_cycle_seconds": "histogram",
    "blackwidow_monitor_polls": "counter",
    "blackwidow_monitor_pushes": "counter",
    "blackwidow_monitor_removals": "counter",
    "blackwidow_monitor_hard_reloads": "counter",
    "blackwidow_monitor_lease_grants": "counter",
    "blackwidow_nodes": "gauge",
    "blackwidow_crawlers": "gauge",
    "blackwidow_node_phi": "gauge",
    "blackwidow_node_last_poll_age_seconds": "gauge",
    "blackwidow_leased_items": "gauge",
    "blackwidow_budget_remaining_items": "gauge",
    "blackwidow_users_budget_exhausted": "gauge",
    "blackwidow_http_request_duration_seconds": "histogram",
    "blackwidow_build_info": "gauge",
    "python_info": "gauge",
    "process_cpu_seconds": "counter",  # one process answers every scrape here (not gunicorn)
    "process_resident_memory_bytes": "gauge",
    "python_gc_collections": "counter",
}


def scrape(client: FlaskClient, **headers: str) -> dict[str, Any]:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.data
    return {f.name: f for f in text_string_to_metric_families(response.get_data(as_text=True))}


def value(families: dict[str, Any], name: str, suffix: str = "", **labels: str) -> float:
    return sum(
        sample.value
        for sample in families[name].samples
        if sample.name == name + suffix
        and all(sample.labels.get(k) == v for k, v in labels.items())
    )


def labels_of(families: dict[str, Any], name: str, label: str) -> set[str]:
    return {sample.labels[label] for sample in families[name].samples}


@pytest.fixture
def node_url(client: FlaskClient, tmp_path) -> Iterator[str]:
    """A real node, served on loopback and registered with the hub."""
    store = SqliteStore(str(tmp_path / "node-items.db"))
    fetcher = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}), deadline=5.0)
    pool = DataSourcePool(opener(SourceContext(fetcher, 0.2)), store)
    node = NodeState(pool, clock=lambda: 0.0)
    with served(create_node_app(node, SECRET), "metrics-node") as url:
        response = client.post(
            "/api/v1/nodes", json={"url": url, "capacity": 10}, headers=bearer(SECRET)
        )
        assert response.status_code in (200, 201), response.json
        node.mark_registered(response.json["id"], response.json["generation"])
        yield url
        pool.clear()
    store.close()


def test_families_exist_with_their_types(client):
    families = scrape(client)
    assert {name: families[name].type for name in FAMILIES} == FAMILIES
    assert labels_of(families, "blackwidow_nodes", "state") == {"active", "suspect", "dead"}
    assert "running" in labels_of(families, "blackwidow_crawlers", "state")


def test_figures_move_after_monitor_cycles_and_a_deleted_node_leaves_no_series(
    hub_app: Flask, client: FlaskClient, sessions, make_user, node_url
):
    user = make_user(item_limit=100)
    with HostileServer() as feeds:
        body = {"name": "c", "source": "rss", "query": {"feeds": [feeds.url("/rss")]}}
        created = client.post("/api/v1/crawlers", json=body, headers=bearer(user["token"]))
        assert created.status_code == 201, created.json
        hub = hub_app.extensions["blackwidow"]
        loop = MonitorLoop(sessions, hub.settings.replace(poll_interval=0.2), hub.alerts)
        loop.start()
        try:
            running = wait_until(
                lambda: (
                    (f := scrape(client))
                    and value(f, "blackwidow_crawlers", state="running") == 1
                    and value(f, "blackwidow_monitor_cycle_seconds", "_count") >= 2
                    and f
                ),
                what="the crawler running and cycles recorded",
            )
            # a pass's figures are saved just after it records the crawler running (and a
            # new leader holds a budgeted crawler for a while first): one more cycle has them
            cycles = value(running, "blackwidow_monitor_cycle_seconds", "_count")
            families = wait_until(
                lambda: (
                    (f := scrape(client))
                    and value(f, "blackwidow_monitor_cycle_seconds", "_count") > cycles
                    and f
                ),
                what="a cycle recorded after the crawler ran",
            )
        finally:
            loop.stop()
    assert value(families, "blackwidow_nodes", state="active") == 1
    assert value(families, "blackwidow_monitor_polls", "_total", result="ok") >= 1
    assert value(families, "blackwidow_monitor_pushes", "_total", result="ok") >= 1
    assert value(families, "blackwidow_monitor_hard_reloads", "_total") >= 1
    assert value(families, "blackwidow_monitor_lease_grants", "_total") >= 1
    assert 0 < value(families, "blackwidow_leased_items") <= 100
    assert value(families, "blackwidow_budget_remaining_items") <= 100
    node_ids = labels_of(families, "blackwidow_node_phi", "node")
    assert len(node_ids) == 1
    assert labels_of(families, "blackwidow_node_last_poll_age_seconds", "node") == node_ids
    route = {"route": "/api/v1/crawlers", "method": "POST", "status": "201"}
    assert value(families, "blackwidow_http_request_duration_seconds", "_count", **route) == 1
    # a node just heard is phi 0.0, never -0.0, in every view: /metrics and the node list
    # (which `nodes ls` and the dashboard's cluster page show)
    shown = [line for line in client.get("/metrics").text.splitlines() if "_phi{" in line]
    assert shown and not any(line.split()[-1].startswith("-") for line in shown)
    listed = client.get("/api/v1/nodes", headers=bearer(ADMIN)).json
    assert all(math.copysign(1.0, node["phi"]) == 1.0 for node in listed if node["phi"] is not None)
    # the node names itself as the hub's per-node figures name it: the two join on `node`
    node_families = text_string_to_metric_families(
        requests.get(f"{node_url}/metrics", timeout=10).text
    )
    node_info = next(f for f in node_families if f.name == "blackwidow_node_info")
    assert {sample.labels["node"] for sample in node_info.samples} == node_ids

    with sessions.begin() as session:
        session.delete(session.get(NodeRow, int(node_ids.pop())))
    families = scrape(client)
    assert not families["blackwidow_node_phi"].samples
    assert not families["blackwidow_node_last_poll_age_seconds"].samples
    assert value(families, "blackwidow_monitor_cycle_seconds", "_count") >= 2  # still counted


@pytest.mark.parametrize(
    ("restriction", "headers", "status", "code"),
    [
        ({"metrics_token": "scrape-token"}, {}, 401, "unauthorized"),
        (
            {"metrics_token": "scrape-token"},
            {"Authorization": f"Bearer {ADMIN}"},
            401,
            "unauthorized",
        ),
        ({"metrics_token": "scrape-token"}, {"Authorization": "Bearer scrape-token"}, 200, None),
        ({"metrics_networks": (ipaddress.ip_network("192.0.2.0/24"),)}, {}, 403, "forbidden"),
        ({"metrics_networks": (ipaddress.ip_network("127.0.0.1/32"),)}, {}, 200, None),
    ],
    ids=["no-token", "admin-token", "token", "outside-networks", "inside-networks"],
)
def test_scrapes_can_be_restricted_by_token_and_network(
    database_url, tmp_path, restriction, headers, status, code
):
    settings = hub_settings(database_url, tmp_path, **restriction)
    app = create_app(settings)
    try:
        response = app.test_client().get(
            "/metrics", headers=headers, environ_base={"REMOTE_ADDR": "127.0.0.1"}
        )
        assert response.status_code == status
        if code is not None:
            assert response.json["error"]["code"] == code
    finally:
        with app.extensions["blackwidow"].sessions() as session:
            session.get_bind().dispose()
