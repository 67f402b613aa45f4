"""The hub's `/metrics` on the real app and database: the named families with their types,
figures that move after real work (a node serving a local feed, monitor cycles, API calls),
a deleted node's series gone, each shard's leader and last cycle, the webhook outbox, and
scrapes restricted by token and network."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from blackwidow.app import create_app
from blackwidow.core.node_protocol import Shard
from blackwidow.core.store.sqlite import SqliteStore
from blackwidow.models import Node as NodeRow
from blackwidow.models import WebhookDelivery, utcnow
from blackwidow.monitor import leader
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
    "blackwidow_monitor_poll_seconds": "histogram",
    "blackwidow_monitor_polls": "counter",
    "blackwidow_monitor_pushes": "counter",
    "blackwidow_monitor_removals": "counter",
    "blackwidow_monitor_hard_reloads": "counter",
    "blackwidow_monitor_lease_grants": "counter",
    "blackwidow_nodes": "gauge",
    "blackwidow_crawlers": "gauge",
    "blackwidow_node_phi": "gauge",
    "blackwidow_node_last_poll_age_seconds": "gauge",
    "blackwidow_node_poll_seconds": "summary",
    "blackwidow_shard_leader": "gauge",
    "blackwidow_shard_last_cycle_age_seconds": "gauge",
    "blackwidow_shard_epoch": "gauge",
    "blackwidow_database_up": "gauge",
    "blackwidow_store_up": "gauge",
    "blackwidow_sql_figures_age_seconds": "gauge",
    "blackwidow_webhook_deliveries_pending": "gauge",
    "blackwidow_webhook_deliveries_retrying": "gauge",
    "blackwidow_webhook_oldest_pending_age_seconds": "gauge",
    "blackwidow_webhook_deliveries_failed_last_hour": "gauge",
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
    assert value(families, "blackwidow_database_up") == 1
    assert value(families, "blackwidow_store_up") == 1
    # no monitor runs here: the one shard has no leader and has never finished a cycle
    assert value(families, "blackwidow_shard_leader", shard="0/1") == 0
    assert value(families, "blackwidow_shard_last_cycle_age_seconds", shard="0/1") == math.inf


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
                    and "blackwidow_crawlers" in f  # a scrape outran a slow first read
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
        stopped = scrape(client)
    assert value(families, "blackwidow_shard_leader", shard="0/1") == 1
    assert value(families, "blackwidow_shard_epoch", shard="0/1") >= 1
    assert value(families, "blackwidow_shard_last_cycle_age_seconds", shard="0/1") < math.inf
    assert value(stopped, "blackwidow_shard_leader", shard="0/1") == 0  # handed back
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
    assert labels_of(families, "blackwidow_node_poll_seconds", "node") == node_ids
    (node_id,) = node_ids
    polls = value(families, "blackwidow_node_poll_seconds", "_count", node=node_id)
    assert polls >= 1 and value(families, "blackwidow_node_poll_seconds", "_sum", node=node_id) > 0
    assert value(families, "blackwidow_monitor_poll_seconds", "_count") >= polls
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
    families = wait_until(  # a scrape that outran its read shows the last one's figures
        lambda: (f := scrape(client)) and not f["blackwidow_node_phi"].samples and f,
        what="the deleted node's series gone",
    )
    assert not families["blackwidow_node_last_poll_age_seconds"].samples
    assert not families["blackwidow_node_poll_seconds"].samples
    assert value(families, "blackwidow_monitor_cycle_seconds", "_count") >= 2  # still counted


def test_each_shard_says_whether_it_has_a_leader_and_how_old_its_last_cycle_is(
    database_url, tmp_path
):
    """Shard 0's monitor was killed two minutes ago (its lease ran out, no cycle since), shard
    1's leads: Prometheus tells them apart, whatever the nodes' rows still say."""
    app = create_app(hub_settings(database_url, tmp_path, monitor_shards=2))
    now = utcnow()
    sessions = app.extensions["blackwidow"].sessions
    with sessions.begin() as session:
        for index, (at, ttl) in enumerate([(now - timedelta(seconds=120), 10.0), (now, 60.0)]):
            name = leader.lock_name(Shard(index, 2))
            assert leader.try_lead(session, f"hub-{index}", at, ttl, name) is not None
            leader.record_cycle(session, f"hub-{index}", at, 0.1, name)
    try:
        families = scrape(app.test_client())
    finally:
        with sessions() as session:
            session.get_bind().dispose()
    assert value(families, "blackwidow_shard_leader", shard="0/2") == 0
    assert value(families, "blackwidow_shard_leader", shard="1/2") == 1
    assert value(families, "blackwidow_shard_last_cycle_age_seconds", shard="0/2") >= 120
    assert value(families, "blackwidow_shard_last_cycle_age_seconds", shard="1/2") < 120
    assert value(families, "blackwidow_shard_epoch", shard="1/2") == 1


def test_the_webhook_outbox_shows_its_backlog_and_its_failures(client, sessions):
    now = utcnow()
    hour_ago = now - timedelta(hours=1, minutes=1)
    rows = [  # (status, last_status, created_at, finished_at)
        ("pending", None, now - timedelta(seconds=600), None),  # the oldest waiting
        ("pending", 500, now - timedelta(seconds=60), None),  # its last attempt failed
        ("delivered", 200, hour_ago, now),
        ("failed", 500, now - timedelta(hours=1), now - timedelta(minutes=5)),
        ("failed", None, hour_ago, hour_ago),  # given up over an hour ago
    ]
    with sessions.begin() as session:
        for index, (status, last_status, created_at, finished_at) in enumerate(rows):
            session.add(
                WebhookDelivery(
                    event_id=f"event-{index}",
                    event_type="node.dead",
                    body="{}",
                    status=status,
                    last_status=last_status,
                    next_attempt_at=now,
                    created_at=created_at,
                    finished_at=finished_at,
                )
            )
    families = scrape(client)
    assert value(families, "blackwidow_webhook_deliveries_pending") == 2
    assert value(families, "blackwidow_webhook_deliveries_retrying") == 1
    assert value(families, "blackwidow_webhook_oldest_pending_age_seconds") >= 600
    assert value(families, "blackwidow_webhook_deliveries_failed_last_hour") == 1


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
