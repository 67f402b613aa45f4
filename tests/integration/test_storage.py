"""The item store and queue for real: hub, nodes and feed server processes writing to a real
Cassandra and a real Redis, and a node riding out a Cassandra that goes away and comes back."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
import redis
import requests

from blackwidow.core.queue import item_from_entry
from blackwidow.core.queue.entries import stream_key
from tests.integration.conftest import Cluster, post_numbers
from tests.servers.tcp_relay import TcpRelay
from tests.summary import MEASUREMENTS
from tests.support import wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]


def db_upgrade(store_url: str, workdir: Path) -> str:
    """`blackwidow db upgrade` as an operator runs it: the hub's SQL and the store's CQL."""
    env = {"BLACKWIDOW_DATABASE_URL": f"sqlite:///{workdir / 'hub.db'}"}
    done = subprocess.run(
        [sys.executable, "-m", "blackwidow", "db", "upgrade", "--store", store_url],
        cwd=REPO_ROOT,
        env={**env, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def fresh_keyspace_url(contact_points: str) -> str:
    return f"cassandra://{contact_points}/it_{uuid.uuid4().hex[:12]}?consistency=ONE"


def test_items_reach_cassandra_and_the_redis_stream(
    cluster: Callable[..., Cluster], cassandra_service: Any, redis_url: str, tmp_path: Path
) -> None:
    store_url = fresh_keyspace_url(cassandra_service.contact_points)
    assert "applied versions [1, 2, 3, 4, 5, 6, 7]" in db_upgrade(store_url, tmp_path)
    assert "already current" in db_upgrade(store_url, tmp_path)
    # a database of this test's own: the last of Redis' 16 (xdist workers take 1, 2, ...)
    queue_url = redis_url.rsplit("/", 1)[0] + "/15"
    streams = redis.Redis.from_url(queue_url)
    streams.flushdb()
    running = cluster(2, BLACKWIDOW_STORE=store_url, BLACKWIDOW_REDIS_URL=queue_url)
    token = running.user()
    feeds = {name: running.feed(name, items=12) for name in ("tech", "world")}
    crawlers = [
        running.crawler(token, [feeds["tech"]]),
        running.crawler(token, [feeds["tech"]], keywords=["python"]),
        running.crawler(token, [feeds["world"]], item_limit=5),
    ]
    expected = {crawlers[0]["id"]: 12, crawlers[1]["id"]: 2, crawlers[2]["id"]: 5}

    for crawler_id, count in expected.items():
        wait_until(lambda c=crawler_id, n=count: len(running.items(token, c)) == n, what="items")
    for crawler_id, count in expected.items():
        stored = running.items(token, crawler_id)
        entries = streams.xrange(stream_key(crawler_id))
        queued = [item_from_entry(fields) for _, fields in entries]
        assert sorted(post_numbers(stored)) == sorted(int(i.id.rsplit("/", 1)[1]) for i in queued)
        assert len(set(post_numbers(stored))) == count  # each item stored once

    root = f"{running.feeds.url}/posts/tech/11"
    thread = running.call("GET", f"/api/v1/conversations/{root}", token).json()["items"]
    first = [(i["id"], i["in_reply_to"]) for i in thread if i["crawler_id"] == crawlers[0]["id"]]
    assert first == [(root, None), (f"{running.feeds.url}/posts/tech/12", root)]
    health = running.call("GET", "/api/v1/health").json()
    assert health["store"] == {"ok": True}
    node_health = [running.node_health(node) for node in running.nodes]
    assert all(h["store"]["ok"] and h["queue"]["failed_pushes"] == 0 for h in node_health)
    assert sum(h["queue"]["pushed"] for h in node_health) == sum(expected.values())


@pytest.mark.slow
def test_a_node_rides_out_cassandra_stopping_and_starting(
    cluster: Callable[..., Cluster], cassandra_service: Any, tmp_path: Path
) -> None:
    """Down at node start, then up, then down mid-run, then up: nothing acknowledged is lost.

    The hub and the node reach Cassandra through a relay that closes every connection and
    refuses new ones, as a stopped server does to its clients (a real server killed and
    restarted is the cluster tier's). A buffer of 6 items per subscriber makes backpressure
    visible: while Cassandra is down the node holds at most one delivery beyond it and stops
    polling the feed.
    """
    with TcpRelay(cassandra_service.port, cassandra_service.host) as cassandra:
        store_url = fresh_keyspace_url(f"{cassandra.host}:{cassandra.port}")
        db_upgrade(store_url, tmp_path)
        cassandra.close()  # down before the node starts

        running = cluster(1, BLACKWIDOW_STORE=store_url, BLACKWIDOW_NODE_BUFFER="6")
        token = running.user()
        crawler = running.crawler(token, [running.feed("live", items=3, every=2)])
        node = running.nodes[0]

        def subscriber() -> dict[str, Any]:
            return running.get(token, crawler["id"])

        wait_until(lambda: (subscriber()["last_error"] or "").startswith("store:"), what="error")
        wait_until(lambda: running.node_health(node)["status"] == "degraded", what="degraded")
        not_ready = requests.get(f"{node.url}/readyz", timeout=5)
        assert not_ready.status_code == 503
        [reason] = not_ready.json()["reasons"]
        assert reason.startswith("store: cassandra: ")
        held = wait_until(lambda: _held_at_least(running, node, 6), what="a full buffer")
        assert held <= 6 + 3  # the buffer plus at most one delivery: the source waits

        cassandra.accept()
        wait_until(lambda: len(running.items(token, crawler["id"])) >= 8, timeout=60, what="flow")
        assert running.node_health(node)["status"] == "ok"
        assert requests.get(f"{node.url}/readyz", timeout=5).status_code == 200

        before_outage = len(running.items(token, crawler["id"]))
        cassandra.close()  # down mid-run
        assert running.call("GET", f"/api/v1/crawlers/{crawler['id']}/items", token).json() == {
            "error": {"code": "store_unavailable", "message": ANY, "field": None}
        }
        wait_until(lambda: running.node_health(node)["status"] == "degraded", what="degraded")
        wait_until(lambda: _held_at_least(running, node, 6), what="a full buffer again")
        cassandra.accept()

        wait_until(lambda: _held(running, node) == 0, timeout=60, what="the buffer to drain")
        path = f"/api/v1/crawlers/{crawler['id']}/items?limit=1000"
        answer = wait_until(  # the hub's own driver may reconnect later than the node's
            lambda: (r := running.call("GET", path, token)).status_code == 200 and r.json(),
            timeout=60,
            what="the hub reading the store again",
        )
        stored = post_numbers(answer["items"])
        assert len(stored) == len(set(stored)) > before_outage  # none twice
        assert sorted(stored) == list(range(1, max(stored) + 1))  # none lost: no gaps
        MEASUREMENTS.append(f"cassandra outages: {len(stored)} items stored, 0 lost, 0 duplicated")


def _held(running: Cluster, node: Any) -> int:
    return running.node_health(node)["held"]


def _held_at_least(running: Cluster, node: Any, count: int) -> int:
    held = _held(running, node)
    return held if held >= count else 0
