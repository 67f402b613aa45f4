"""A node killed with its run ledger and queue spool full, started again at its address for a
fresh hub (a new database: a new cluster) whose crawler has the same id: it replays nothing of
the old cluster into the new one, and sets the old files aside with a warning each. (A restart
for the same hub restoring both is tests/integration/test_ledger.py and test_outbox.py.)"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import redis
import requests

from blackwidow.core.queue.entries import stream_key
from tests.component.test_queue import SpareRedis, closed_port
from tests.integration.conftest import Cluster
from tests.support import wait_until

SET_ASIDE = "node file of another cluster set aside"


def cluster_id(hub: Cluster) -> str:
    """The hub database's identity, read from its SQLite file."""
    with sqlite3.connect(hub.workdir / "hub.db") as db:
        return db.execute("SELECT cluster_id FROM cluster_identity").fetchone()[0]


def ready(url: str) -> bool:
    return requests.get(f"{url}/readyz", timeout=5).status_code == 200


def figures(hub: Cluster, token: str, crawler: dict) -> tuple[int, int]:
    """(billed to the user, delivered to the crawler), as the hub counts them."""
    usage = hub.call("GET", f"/api/v1/users/{crawler['user_id']}/usage", token).json()
    return usage["items_delivered"], hub.get(token, crawler["id"])["items_delivered"]


def test_a_node_started_at_its_address_for_a_new_hub_replays_nothing_of_the_old_one(
    cluster: Callable[..., Cluster], spare_redis: SpareRedis, tmp_path: Path
) -> None:
    old = cluster(0, BLACKWIDOW_REDIS_URL=spare_redis.url)  # Redis down: entries stay spooled
    port = closed_port()
    node = old.add_node(port=port)
    old.wait_for_nodes(1)
    token = old.user()
    crawler = old.crawler(token, [old.feed("tech", items=6)])
    wait_until(lambda: len(old.items(token, crawler["id"])) == 6, what="items stored")
    wait_until(lambda: old.node_health(node)["queue"]["pending"] == 6, what="entries spooled")
    node.kill()  # its runs' counts in the ledger, its entries in the spool
    node_files = Path(old.env["BLACKWIDOW_OUTBOX_DIR"])
    a = cluster_id(old)
    left = {f"{kind}-127.0.0.1-{port}@{a}.db" for kind in ("ledger", "outbox")}
    assert left <= {path.name for path in node_files.iterdir()}

    spare_redis.up()
    env = {"BLACKWIDOW_REDIS_URL": spare_redis.url, "BLACKWIDOW_OUTBOX_DIR": str(node_files)}
    (tmp_path / "new").mkdir()
    new = Cluster(tmp_path / "new", env)
    try:
        new.start_hub()
        b = cluster_id(new)
        assert b != a
        new_token = new.user()
        same_id = new.crawler(new_token, [new.feed("tech", items=6)])
        assert same_id["id"] == crawler["id"]
        moved = new.add_node(port=port)
        wait_until(lambda: ready(moved.url), what="the node registered with the new hub")
        wait_until(lambda: len(new.items(new_token, same_id["id"])) == 6, what="new items")
        wait_until(lambda: min(figures(new, new_token, same_id)) >= 6, what="new deliveries")
        with redis.Redis.from_url(spare_redis.url) as streams:
            wait_until(lambda: streams.xlen(stream_key(same_id["id"])) >= 6, what="new entries")
            assert streams.xlen(stream_key(same_id["id"])) == 6  # the new hub's items alone
        assert figures(new, new_token, same_id) == (6, 6)
        assert new.node_health(moved)["queue"]["pushed"] == 6
        log = moved.log_path.read_text()
    finally:
        new.stop()

    assert f"ledger restored runs=0 cluster={b}" in log
    lines = [line for line in log.splitlines() if SET_ASIDE in line]
    assert len(lines) == 2, lines
    for name, line in zip(sorted(left, reverse=True), lines, strict=True):  # outbox first
        assert f"path={node_files / name} file_cluster={a} cluster={b}" in line
    kept = {path.name for path in node_files.iterdir()}
    assert {f"{name}.other-cluster" for name in left} <= kept  # set aside, never deleted
